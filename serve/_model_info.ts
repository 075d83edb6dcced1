// What a stored model version is, as listings and the Ollama API show it:
// its format and kind, sizes, provenance recorded by the writer, short
// metadata, and for Llama-family models the facts Ollama reports. Read
// from a model file with the format plugins, or from a Hugging Face
// checkpoint folder.

import { join } from "@std/path";
import { type Modelfile, parseModelfile } from "./_modelfile.ts";
import { parseNetwork } from "../core/network.ts";
import type { Model } from "../core/model.ts";
import type { Registry } from "../registry.ts";
import { openModel } from "../io/open.ts";
import { modelBuildProblem } from "./_buildable.ts";
import { checkTransformerTensors } from "../models/check.ts";
import { readChatTemplateFiles } from "../io/transformer.ts";
import { configFromGguf, GGUF_ARCHITECTURES } from "../models/gguf_config.ts";
import { ENCODER_MODEL_TYPES } from "../models/encoder_config.ts";
import {
  configFromHf,
  type HfConfigJson,
  SUPPORTED_MODEL_TYPES,
  type TransformerConfig,
} from "../models/config.ts";

/** Metadata values longer than this are left out of listings. */
const MAX_LISTED_STRING = 512;
/** At most this many metadata keys in a listing. */
const MAX_LISTED_KEYS = 64;

/** What a stored model is good for. */
export type ModelKind = "network" | "llm" | "encoder" | "tensors" | "invalid";

/** Facts about a Llama-family model, for Ollama's `tags` and `show`. */
export interface LlmInfo {
  /** Architecture (`llama`, `qwen2`). */
  architecture: string;
  /** Context length (positions). */
  contextLength: number;
  /** Hidden size. */
  embeddingLength: number;
  /** Transformer blocks. */
  blockCount: number;
  /** Attention heads. */
  headCount: number;
  /** Key/value heads. */
  headCountKv: number;
  /** Vocabulary size. */
  vocabSize: number;
  /** The checkpoint's Jinja chat template, when it has one. */
  chatTemplate?: string;
  /** Scalar GGUF-style keys (`general.architecture`, `llama.context_length`). */
  modelInfo: Record<string, unknown>;
}

/** One stored version of a model. */
export interface ModelVersion {
  /** Model name. */
  name: string;
  /** Version name. */
  version: string;
  /** Absolute path of the file or folder. */
  path: string;
  /** Path relative to the registry folder. */
  file: string;
  /** Format plugin that reads it, or `huggingface` for a checkpoint folder. */
  format: string;
  /** What it can serve. */
  kind: ModelKind;
  /** Bytes on disk. */
  bytes: number;
  /** Last modification. */
  modified: Date | null;
  /** The models inside (bundles hold several), with their sizes. */
  models: { id: string; inputSize?: number; outputSize?: number }[];
  /** Tensor count. */
  tensors: number;
  /** Weight count. */
  parameters: number;
  /** Stored bytes per dtype. */
  dtypes: Record<string, number>;
  /** Provenance recorded by the writer (bundle `metadata.provenance`, SafeTensors `modelhost.provenance.*`, GGUF `general.*`). */
  provenance: Record<string, unknown>;
  /** Short scalar metadata entries. */
  metadata: Record<string, unknown>;
  /** Llama-family facts, for `kind: "llm"`. */
  llm?: LlmInfo;
  /** Why it cannot be read, for `kind: "invalid"`. */
  error?: string;
  /** The Ollama Modelfile kept beside it (a model made by /api/create). */
  modelfile?: Modelfile;
}

/** Turns metadata values into JSON-safe ones (bigint → number or string). */
export function jsonSafe(v: unknown): unknown {
  if (typeof v === "bigint") {
    return v <= BigInt(Number.MAX_SAFE_INTEGER) &&
        v >= BigInt(Number.MIN_SAFE_INTEGER)
      ? Number(v)
      : v.toString();
  }
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (v && typeof v === "object" && !ArrayBuffer.isView(v)) {
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [k, jsonSafe(x)]),
    );
  }
  return v;
}

function isScalar(v: unknown): boolean {
  return typeof v === "number" || typeof v === "boolean" ||
    typeof v === "bigint" ||
    (typeof v === "string" && v.length <= MAX_LISTED_STRING);
}

function provenanceOf(md: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const p = md.provenance;
  if (p && typeof p === "object" && !Array.isArray(p)) Object.assign(out, p);
  for (const k of ["producer", "created"]) {
    if (isScalar(md[k])) out[k] = md[k];
  }
  for (const [k, v] of Object.entries(md)) {
    if (k.startsWith("modelhost.provenance.")) {
      out[k.slice("modelhost.provenance.".length)] = v;
    } else if (k.startsWith("general.") && isScalar(v)) out[k] = v;
  }
  return jsonSafe(out) as Record<string, unknown>;
}

function metadataOf(md: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const [k, v] of Object.entries(md)) {
    if (n >= MAX_LISTED_KEYS) break;
    if (
      k === "modelhost.config" || k === "gguf.types" ||
      k.startsWith("tokenizer.") || !isScalar(v)
    ) continue;
    out[k] = v;
    n++;
  }
  return jsonSafe(out) as Record<string, unknown>;
}

function tensorStats(models: readonly Model[]) {
  let tensors = 0, parameters = 0;
  const dtypes: Record<string, number> = {};
  for (const m of models) {
    for (const n of m.tensors.names()) {
      const i = m.tensors.info(n);
      tensors++;
      parameters += i.shape.reduce((a, b) => a * b, 1);
      dtypes[i.dtype] = (dtypes[i.dtype] ?? 0) + i.byteLength;
    }
  }
  return { tensors, parameters, dtypes };
}

function llmInfo(
  cfg: TransformerConfig,
  architecture: string,
  parameters: number,
  chatTemplate: string | undefined,
  extra: Record<string, unknown>,
): LlmInfo {
  const a = architecture;
  const modelInfo: Record<string, unknown> = {
    "general.architecture": a,
    "general.parameter_count": parameters,
    [`${a}.context_length`]: cfg.maxPositionEmbeddings,
    [`${a}.embedding_length`]: cfg.hiddenSize,
    [`${a}.block_count`]: cfg.numLayers,
    [`${a}.feed_forward_length`]: cfg.intermediateSize,
    [`${a}.attention.head_count`]: cfg.numHeads,
    [`${a}.attention.head_count_kv`]: cfg.numKvHeads,
    [`${a}.attention.layer_norm_rms_epsilon`]: cfg.rmsNormEps,
    [`${a}.rope.freq_base`]: cfg.ropeTheta,
    [`${a}.vocab_size`]: cfg.vocabSize,
    ...extra,
  };
  return {
    architecture: a,
    contextLength: cfg.maxPositionEmbeddings,
    embeddingLength: cfg.hiddenSize,
    blockCount: cfg.numLayers,
    headCount: cfg.numHeads,
    headCountKv: cfg.numKvHeads,
    vocabSize: cfg.vocabSize,
    ...(chatTemplate ? { chatTemplate } : {}),
    modelInfo: jsonSafe(modelInfo) as Record<string, unknown>,
  };
}

async function readJsonFile(path: string): Promise<unknown> {
  try {
    return JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** A version found by the folder scan, before it is read. */
export interface Candidate {
  name: string;
  version: string;
  path: string;
  file: string;
  folder: boolean;
  hf: boolean;
  /** A `Modelfile` beside the model (version folders). */
  modelfile?: string;
}

async function readHf(
  reg: Registry,
  c: Candidate,
  base: ModelVersion,
): Promise<ModelVersion> {
  const config = await readJsonFile(join(c.path, "config.json")) as
    | HfConfigJson
    | undefined;
  const tokCfg = await readJsonFile(
    join(c.path, "tokenizer_config.json"),
  ) as { chat_template?: unknown } | undefined;
  const opened = await openModel(reg, c.path);
  try {
    const stats = tensorStats(opened.file.models);
    const md = opened.file.models[0]?.metadata ?? {};
    const modelType = (config as { model_type?: unknown })?.model_type;
    const supported = typeof modelType === "string" &&
      (SUPPORTED_MODEL_TYPES as readonly string[]).includes(modelType);
    const out: ModelVersion = {
      ...base,
      ...stats,
      kind: supported
        ? "llm"
        : (ENCODER_MODEL_TYPES as readonly unknown[]).includes(modelType)
        ? "encoder"
        : "tensors",
      models: [{ id: c.name }],
      provenance: provenanceOf(md),
      metadata: metadataOf(md),
    };
    if (supported) {
      const cfg = configFromHf(config!, join(c.file, "config.json"));
      const m = opened.file.models[0];
      checkTransformerTensors(cfg, m.tensors, c.file);
      const files = await readChatTemplateFiles(c.path);
      const found = files ?? tokCfg?.chat_template;
      const tpl = typeof found === "string"
        ? found
        : Array.isArray(found)
        ? (found.find((t) => t?.name === "default") ?? found[0])?.template
        : undefined;
      out.llm = llmInfo(cfg, cfg.family, stats.parameters, tpl, {});
    }
    return out;
  } finally {
    opened.close();
  }
}

async function readFile(
  reg: Registry,
  c: Candidate,
  base: ModelVersion,
): Promise<ModelVersion> {
  const opened = await openModel(reg, c.path);
  try {
    const models = opened.file.models;
    const stats = tensorStats(models);
    const md = models[0]?.metadata ?? {};
    const out: ModelVersion = {
      ...base,
      ...stats,
      format: opened.format.name,
      kind: "tensors",
      models: [],
      provenance: provenanceOf(md),
      metadata: metadataOf(md),
    };
    for (const m of models) {
      if (m.config) {
        const spec = parseNetwork(reg, m.config);
        out.models.push({
          id: m.id,
          inputSize: spec.inputSize,
          outputSize: spec.outputSize,
        });
        out.kind = "network";
      } else out.models.push({ id: m.id });
    }
    const arch = md["general.architecture"];
    if (
      out.kind === "tensors" &&
      (arch === "bert" || arch === "modern-bert" || arch === "nomic-bert")
    ) {
      out.kind = "encoder";
    }
    if (
      out.kind === "tensors" && typeof arch === "string" &&
      GGUF_ARCHITECTURES.includes(arch)
    ) {
      const names = models[0].tensors.names();
      const cfg = configFromGguf(md, names, {
        name: c.file,
        embeddingRows: models[0].tensors.has("token_embd.weight")
          ? models[0].tensors.info("token_embd.weight").shape[0]
          : undefined,
      });
      const problem = modelBuildProblem(opened.file, c.file);
      if (problem !== undefined) throw new TypeError(problem);
      const extra: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(md)) {
        if (
          (k.startsWith("general.") || k.startsWith(`${arch}.`)) &&
          isScalar(v)
        ) extra[k] = v;
      }
      const tpl = md["tokenizer.chat_template"];
      out.llm = llmInfo(
        cfg,
        arch,
        stats.parameters,
        typeof tpl === "string" ? tpl : undefined,
        extra,
      );
      out.kind = "llm";
    }
    return out;
  } finally {
    opened.close();
  }
}

/**
 * Reads what a stored version is (format, kind, sizes, provenance, short
 * metadata, Llama-family facts); one that cannot be read comes back as
 * `kind: "invalid"` with the reason in `error`.
 */
export async function describeVersion(
  reg: Registry,
  c: Candidate,
  bytes: number,
  modified: Date | null,
): Promise<ModelVersion> {
  const base: ModelVersion = {
    name: c.name,
    version: c.version,
    path: c.path,
    file: c.file,
    format: c.hf ? "huggingface" : "unknown",
    kind: "invalid",
    bytes,
    modified,
    models: [],
    tensors: 0,
    parameters: 0,
    dtypes: {},
    provenance: {},
    metadata: {},
  };
  let out: ModelVersion;
  try {
    out = c.hf ? await readHf(reg, c, base) : await readFile(reg, c, base);
  } catch (e) {
    out = { ...base, error: e instanceof Error ? e.message : String(e) };
  }
  if (c.modelfile) {
    try {
      out.modelfile = parseModelfile(await Deno.readTextFile(c.modelfile));
    } catch (e) {
      out = {
        ...out,
        kind: "invalid",
        error: `its Modelfile cannot be read: ${
          e instanceof Error ? e.message : e
        }`,
      };
    }
  }
  return out;
}
