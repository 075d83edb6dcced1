// Loaded models, kept in memory up to a byte budget and dropped least
// recently used first. A model is loaded once however many requests ask for
// it at the same time, and warmed up (one forward pass) before it serves.

import { buildNetwork, type Network } from "../core/network.ts";
import { loadAllTensors } from "../core/model.ts";
import type { Registry } from "../registry.ts";
import { openModel } from "../io/open.ts";
import { loadTransformer } from "../io/transformer.ts";
import { limitPromptLength } from "./_prompt_limit.ts";
import { registerTokenizerSource } from "./_offload_encode.ts";
import {
  type EncoderModel,
  loadEncoderModel,
  readSentencePipelineDir,
} from "../io/encoder.ts";
import type { SentencePipeline } from "../models/sentence.ts";
import type { BatchEngine } from "../models/batch.ts";
import type { Transformer } from "../models/transformer.ts";
import { Batcher, type BatcherOptions } from "./_batcher.ts";
import { HttpError } from "./_http.ts";
import type { ModelVersion } from "./_model_info.ts";

/** One network of a loaded file, with its batcher. */
export interface LoadedNetwork {
  /** Model id inside the file. */
  id: string;
  /** The network. */
  net: Network;
  /** Feature size of one input row, when the config fixes it. */
  inputSize?: number;
  /** Collects concurrent requests into batches. */
  batcher: Batcher;
}

interface LoadedBase {
  /** Cache key: path, modification time and size. */
  key: string;
  /** The registry entry it was loaded from. */
  entry: ModelVersion;
  /** Bytes of weights held. */
  bytes: number;
  /** Milliseconds spent reading and building. */
  loadMs: number;
  /** Milliseconds of the warm-up pass. */
  warmupMs: number;
  /** Last use (for LRU order and `/api/ps`). */
  lastUsed: number;
}

/** A loaded model file of networks. */
export interface LoadedNetworks extends LoadedBase {
  /** Discriminant. */
  kind: "network";
  /** Its networks by id, in file order. */
  networks: LoadedNetwork[];
}

/** A loaded Llama-family model. */
export interface LoadedLlm extends LoadedBase {
  /** Discriminant. */
  kind: "llm";
  /** The model. */
  model: Transformer;
  /** Its continuous-batching engine, made on first generation. */
  engine?: BatchEngine;
  /** sentence-transformers' pooling of a decoder embedding model's folder. */
  pipeline?: SentencePipeline;
}

/** A loaded encoder (embedding or cross-encoder model). */
export interface LoadedEncoder extends LoadedBase {
  /** Discriminant. */
  kind: "encoder";
  /** The encoder and its sentence pipeline. */
  model: EncoderModel;
}

/** Anything the cache holds. */
export type Loaded = LoadedNetworks | LoadedLlm | LoadedEncoder;

/** Options of {@link ModelCache}. */
export interface ModelCacheOptions {
  /** Byte budget; the most recently used model always stays. */
  maxBytes: number;
  /** Batching of predictions. */
  batching: Omit<BatcherOptions, "onBatch">;
  /** Told about every batch run. */
  onBatch?: (model: string, rows: number, requests: number, ms: number) => void;
  /** Told when a model is loaded or dropped. */
  onEvent?: (event: "load" | "evict", loaded: Loaded) => void;
}

function keyOf(e: ModelVersion): string {
  return `${e.path}|${e.modified?.getTime() ?? 0}|${e.bytes}`;
}

/** Loaded models, least recently used first out. */
export class ModelCache {
  #reg: Registry;
  #opts: ModelCacheOptions;
  #entries = new Map<string, Loaded>();
  #loading = new Map<string, Promise<Loaded>>();
  #closed = false;

  constructor(registry: Registry, options: ModelCacheOptions) {
    this.#reg = registry;
    this.#opts = options;
  }

  /** The loaded models, least recently used first. */
  entries(): Loaded[] {
    return [...this.#entries.values()];
  }

  /** Bytes held. */
  get bytes(): number {
    let b = 0;
    for (const e of this.#entries.values()) b += e.bytes;
    return b;
  }

  /**
   * The loaded model for a registry entry, loading and warming it up when
   * absent. `hit` tells whether it was already in memory.
   */
  async get(entry: ModelVersion): Promise<{ loaded: Loaded; hit: boolean }> {
    const key = keyOf(entry);
    const have = this.#entries.get(key);
    if (have) {
      this.#entries.delete(key);
      this.#entries.set(key, have);
      have.lastUsed = Date.now();
      return { loaded: have, hit: true };
    }
    let p = this.#loading.get(key);
    if (!p) {
      p = this.#load(entry, key).finally(() => this.#loading.delete(key));
      this.#loading.set(key, p);
    }
    const loaded = await p;
    return { loaded, hit: false };
  }

  async #load(entry: ModelVersion, key: string): Promise<Loaded> {
    const label = `${entry.name}@${entry.version}`;
    if (entry.kind === "invalid") {
      throw new HttpError(
        500,
        `Model ${label} cannot be read: ${entry.error ?? "unknown error"}`,
      );
    }
    if (entry.kind === "tensors") {
      throw new HttpError(
        400,
        `Model ${label} (${entry.format}) carries no network config and is no Llama-family checkpoint: nothing to run`,
      );
    }
    const t0 = performance.now();
    let loaded: Loaded;
    if (entry.kind === "encoder") {
      const model = await loadEncoderModel(entry.path);
      const t1 = performance.now();
      const cls = model.encoder.tokenizer?.bos ?? 0;
      model.encoder.forward([{ ids: [cls] }]);
      loaded = {
        kind: "encoder",
        key,
        entry,
        model,
        bytes: entry.bytes,
        loadMs: t1 - t0,
        warmupMs: performance.now() - t1,
        lastUsed: Date.now(),
      };
    } else if (entry.kind === "llm") {
      const model = await loadTransformer(entry.path);
      limitPromptLength(model, label);
      registerTokenizerSource(model.tokenizer, entry.path);
      const pipeline = (await Deno.stat(entry.path)).isDirectory
        ? await readSentencePipelineDir(entry.path)
        : undefined;
      const t1 = performance.now();
      const bos = model.tokenizer?.bos ?? model.config.bosTokenId ?? 0;
      model.forward([bos]);
      loaded = {
        kind: "llm",
        ...(pipeline ? { pipeline } : {}),
        key,
        entry,
        model,
        bytes: model.memory().weightBytes,
        loadMs: t1 - t0,
        warmupMs: performance.now() - t1,
        lastUsed: Date.now(),
      };
    } else {
      const opened = await openModel(this.#reg, entry.path);
      const networks: LoadedNetwork[] = [];
      let bytes = 0;
      try {
        for (const m of opened.file.models) {
          if (!m.config) continue;
          const tensors = await loadAllTensors(m.tensors);
          for (const t of tensors.values()) bytes += t.bytes.byteLength;
          const net = buildNetwork(this.#reg, m.config, tensors);
          const onBatch = this.#opts.onBatch;
          networks.push({
            id: m.id,
            net,
            inputSize: net.spec.inputSize,
            batcher: new Batcher((x) => net.forward(x), {
              ...this.#opts.batching,
              onBatch: onBatch
                ? (rows, requests, ms) => onBatch(label, rows, requests, ms)
                : undefined,
            }),
          });
        }
      } finally {
        opened.close();
      }
      const t1 = performance.now();
      for (const n of networks) {
        if (n.inputSize === undefined) continue;
        try {
          n.net.forward({
            data: new Float32Array(n.inputSize),
            shape: [1, n.inputSize],
          });
        } catch {
          /* a network that needs other inputs warms up on first use */
        }
      }
      loaded = {
        kind: "network",
        key,
        entry,
        networks,
        bytes,
        loadMs: t1 - t0,
        warmupMs: performance.now() - t1,
        lastUsed: Date.now(),
      };
    }
    if (this.#closed) {
      this.#drop(loaded);
      throw new HttpError(503, "The server is closing");
    }
    // An older load of the same path (the file changed since) goes first.
    for (const [k, e] of this.#entries) {
      if (e.entry.path === entry.path) {
        this.#entries.delete(k);
        this.#drop(e);
        this.#opts.onEvent?.("evict", e);
      }
    }
    this.#entries.set(key, loaded);
    this.#opts.onEvent?.("load", loaded);
    this.#trim(key);
    return loaded;
  }

  /** Evicts least recently used models until the budget holds (`keep` stays). */
  #trim(keep: string): void {
    for (const [k, e] of this.#entries) {
      if (this.bytes <= this.#opts.maxBytes) break;
      if (k === keep) continue;
      this.#entries.delete(k);
      this.#drop(e);
      this.#opts.onEvent?.("evict", e);
    }
  }

  #drop(e: Loaded): void {
    if (e.kind === "network") { for (const n of e.networks) n.batcher.flush(); }
  }

  /** Drops every loaded version whose file is at `path` (or under it). */
  evictPath(path: string): void {
    for (const [k, e] of this.#entries) {
      if (e.entry.path === path || e.entry.path.startsWith(`${path}/`)) {
        this.#entries.delete(k);
        this.#drop(e);
        this.#opts.onEvent?.("evict", e);
      }
    }
  }

  /** Drops everything and fails waiting predictions. */
  close(): void {
    this.#closed = true;
    for (const e of this.#entries.values()) {
      if (e.kind === "network") {
        for (const n of e.networks) n.batcher.close();
      } else if (e.kind === "llm") e.engine?.close();
    }
    this.#entries.clear();
  }
}
