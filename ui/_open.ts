/**
 * Opening models for the page (in its worker): local files and folders
 * (as `Blob`s) or a URL (HTTP range reads), read by the library's format
 * readers, and summarized as plain data for the main thread. Nothing here
 * reads tensor data: only headers travel until a tensor is looked at.
 *
 * @module
 */

import {
  type ByteSource,
  defaultRegistry,
  type HttpByteSource,
  httpSource,
  type Model,
  type ModelFile,
  numel,
} from "@modelhost/modelhost";
import { detectBundle, loadBundle } from "@modelhost/modelhost/formats/bundle";
import { isGguf, readGguf } from "@modelhost/modelhost/formats/gguf";
import {
  detectSafetensors,
  readSafetensors,
  readSafetensorsShards,
} from "@modelhost/modelhost/formats/safetensors";
import {
  detectArchitecture,
  GGUF_ARCHITECTURES,
  type HfConfigJson,
  SUPPORTED_MODEL_TYPES,
} from "@modelhost/modelhost/models";
import type {
  ArchSummary,
  DiagramBlock,
  DtypeBytes,
  LocalFile,
  MetadataRow,
  ModelSummary,
  OpenInput,
  TensorRow,
  Transfer,
} from "./_protocol.ts";

/** An opened model and what it was read from. */
export interface Opened {
  /** The model file. */
  file: ModelFile;
  /** `gguf`, `safetensors`, `bundle`, `hf` (a Hugging Face folder) or another plugin's name. */
  format: string;
  /** Display name. */
  name: string;
  /** File name or URL. */
  source: string;
  /** Bytes of the files. */
  size: number;
  /** The parsed JSON files of a Hugging Face folder. */
  json: Record<string, unknown>;
  /** Bytes and reads so far. */
  transfer(): Transfer;
}

/** Longest metadata value shown, in characters. */
const MAX_VALUE_CHARS = 2000;
/** Array items shown of a metadata array. */
const MAX_ARRAY_ITEMS = 16;

/** GGUF headers are read in windows from 64 KiB up (the reader's default starts at 2 MiB). */
const GGUF_READ = { initialRead: 64 * 1024 };

/** Counts the reads and bytes of every source opened for one model. */
class Meter {
  reads = 0;
  bytes = 0;
  readonly http: HttpByteSource[] = [];
  transfer(): Transfer {
    if (this.http.length > 0) {
      return {
        bytes: this.http.reduce((s, h) => s + h.bytesTransferred, 0),
        requests: this.http.reduce((s, h) => s + h.requests, 0),
      };
    }
    return { bytes: this.bytes, requests: this.reads };
  }
  blob(blob: Blob, name: string): ByteSource {
    return {
      name,
      size: blob.size,
      read: async (offset: number, length: number) => {
        if (offset < 0 || length < 0 || offset + length > blob.size) {
          throw new RangeError(
            `Cannot read ${name}: needs ${length} bytes at offset ${offset}, the file has ${
              Math.max(0, blob.size - offset)
            } left (size ${blob.size})`,
          );
        }
        this.reads++;
        this.bytes += length;
        return new Uint8Array(
          await blob.slice(offset, offset + length).arrayBuffer(),
        );
      },
    };
  }
  async url(url: string): Promise<ByteSource> {
    const src = await httpSource(url);
    this.http.push(src);
    return src;
  }
}

function baseName(path: string): string {
  const parts = path.split("/").filter((p) => p !== "");
  return parts[parts.length - 1] ?? path;
}

function dirName(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i + 1);
}

function stem(name: string): string {
  return name.replace(/\.(gguf|safetensors|json|onnx|bundle)$/i, "")
    .replace(/\.(safetensors|bundle)$/i, "");
}

/** Reads one source with whichever reader fits its first bytes. */
async function readAny(
  src: ByteSource,
  resolve: (rel: string) => Promise<ByteSource>,
): Promise<{ file: ModelFile; format: string }> {
  const head = await src.read(0, Math.min(src.size, 64));
  if (isGguf(head)) {
    return { file: await readGguf(src, GGUF_READ), format: "gguf" };
  }
  if (detectBundle(head)) {
    const file = await loadBundle(await src.read(0, src.size));
    return { file, format: "bundle" };
  }
  if (detectSafetensors(head)) {
    return {
      file: await readSafetensors(src, { resolve }),
      format: "safetensors",
    };
  }
  const plugin = defaultRegistry().detect(head);
  if (plugin?.read) {
    return { file: await plugin.read(src), format: plugin.name };
  }
  throw new TypeError(
    `Cannot open ${src.name}: its first bytes are not GGUF, SafeTensors, a bundle or another known format`,
  );
}

function parseJson(bytes: Uint8Array, name: string): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new SyntaxError(`Cannot parse ${name}: ${(e as Error).message}`);
  }
}

/** Largest JSON side file of a folder read whole (config.json, tokenizer.json). */
const MAX_JSON_BYTES = 64 << 20;

async function openFolder(
  files: LocalFile[],
  meter: Meter,
): Promise<Opened> {
  const byPath = new Map(files.map((f) => [f.path, f]));
  const named = (re: RegExp) => files.filter((f) => re.test(baseName(f.path)));
  const top = files[0].path.includes("/") ? files[0].path.split("/")[0] : "";
  const open = (rel: string, from: string) => {
    const path = dirName(from) + rel;
    const f = byPath.get(path);
    if (!f) {
      return Promise.reject(
        new RangeError(`Cannot open ${path}: it is not in the folder`),
      );
    }
    return Promise.resolve(meter.blob(f.blob, path));
  };
  const json: Record<string, unknown> = {};
  for (
    const want of [
      "config.json",
      "tokenizer.json",
      "tokenizer_config.json",
      "generation_config.json",
    ]
  ) {
    const f = named(new RegExp(`^${want.replace(".", "\\.")}$`))[0];
    if (!f) continue;
    if (f.blob.size > MAX_JSON_BYTES) {
      throw new RangeError(
        `Cannot read ${f.path}: ${f.blob.size} bytes is more than the ${MAX_JSON_BYTES}-byte limit for JSON files`,
      );
    }
    const src = meter.blob(f.blob, f.path);
    json[want] = parseJson(await src.read(0, src.size), f.path);
  }
  const size = files.reduce((s, f) => s + f.blob.size, 0);
  const index = named(/\.safetensors\.index\.json$/)[0];
  const shards = named(/\.safetensors$/);
  const gguf = named(/\.gguf$/);
  let file: ModelFile;
  let format: string;
  let source: string;
  if (index) {
    const src = meter.blob(index.blob, index.path);
    file = await readSafetensors(src, {
      resolve: (rel) => open(rel, index.path),
      id: top || "model",
    });
    format = "safetensors";
    source = index.path;
  } else if (shards.length === 1) {
    const f = shards[0];
    file = await readSafetensors(meter.blob(f.blob, f.path), {
      id: top || stem(baseName(f.path)),
    });
    format = "safetensors";
    source = f.path;
  } else if (shards.length > 1) {
    const first = shards[0].path;
    file = await readSafetensorsShards(
      shards.map((f) => f.path),
      (p) => Promise.resolve(meter.blob(byPath.get(p)!.blob, p)),
      { id: top || "model" },
    );
    format = "safetensors";
    source = dirName(first) || first;
  } else if (gguf.length > 0) {
    const f = gguf[0];
    file = await readGguf(meter.blob(f.blob, f.path), GGUF_READ);
    format = "gguf";
    source = f.path;
  } else {
    const candidates = files.filter((f) => !/\.json$/i.test(f.path));
    const f = candidates[0] ?? files[0];
    const r = await readAny(
      meter.blob(f.blob, f.path),
      (rel) => open(rel, f.path),
    );
    file = r.file;
    format = r.format;
    source = f.path;
  }
  if (json["config.json"] && format === "safetensors") format = "hf";
  return {
    file,
    format,
    name: top || stem(baseName(source)),
    source,
    size,
    json,
    transfer: () => meter.transfer(),
  };
}

/**
 * Opens a model from local files (one file, or a folder's files) or a URL.
 *
 * @param input The files or the URL.
 * @returns The opened model.
 * @throws {TypeError} When no reader fits, and the readers' own errors.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * import { serializeSafetensors } from "@modelhost/modelhost/formats/safetensors";
 * import { openInput } from "./_open.ts";
 * const bytes = await serializeSafetensors({ models: [{ id: "m", metadata: {},
 *   tensors: memoryTensorIndex([tensorFromF32("w", new Float32Array(6), [2, 3])]) }] });
 * const opened = await openInput({ kind: "files", files: [{ path: "m.safetensors", blob: new Blob([bytes.slice()]) }] });
 * assert(opened.format === "safetensors" && opened.name === "m");
 * assert(opened.transfer().requests === 3); // first bytes, header length, header: no tensor data
 * ```
 */
export async function openInput(input: OpenInput): Promise<Opened> {
  const meter = new Meter();
  if (input.kind === "url") {
    const url = new URL(input.url, globalThis.location?.href);
    const src = await meter.url(url.href);
    const { file, format } = await readAny(
      src,
      (rel) => meter.url(new URL(rel, url).href),
    );
    return {
      file,
      format,
      name: stem(baseName(decodeURIComponent(url.pathname))),
      source: url.href,
      size: src.size,
      json: {},
      transfer: () => meter.transfer(),
    };
  }
  if (input.files.length === 0) {
    throw new TypeError("Cannot open a model: no file was given");
  }
  if (input.files.length === 1 && !input.files[0].path.includes("/")) {
    const f = input.files[0];
    const src = meter.blob(f.blob, f.path);
    const { file, format } = await readAny(src, () =>
      Promise.reject(
        new TypeError(
          `${f.path} is an index of shards: open its folder instead of the file alone`,
        ),
      ));
    return {
      file,
      format,
      name: stem(f.path),
      source: f.path,
      size: f.blob.size,
      json: {},
      transfer: () => meter.transfer(),
    };
  }
  return await openFolder(input.files, meter);
}

function clip(s: string): string {
  return s.length > MAX_VALUE_CHARS
    ? `${s.slice(0, MAX_VALUE_CHARS)}… (${s.length} characters)`
    : s;
}

function valueText(v: unknown): string {
  if (typeof v === "string") return clip(v);
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v)) {
    const shown = v.slice(0, MAX_ARRAY_ITEMS).map((x) =>
      typeof x === "string" ? JSON.stringify(x) : valueText(x)
    );
    const more = v.length > MAX_ARRAY_ITEMS ? `, … (${v.length} items)` : "";
    return clip(`[${shown.join(", ")}${more}]`);
  }
  if (v instanceof Uint8Array) return `${v.byteLength} bytes`;
  if (v !== null && typeof v === "object") {
    try {
      return clip(
        JSON.stringify(
          v,
          (_k, x) => typeof x === "bigint" ? x.toString() : x,
        ),
      );
    } catch {
      return String(v);
    }
  }
  return String(v);
}

function typeOf(v: unknown): string {
  if (Array.isArray(v)) return `array[${v.length}]`;
  if (v === null) return "null";
  return typeof v;
}

function metadataRows(
  model: Model,
  json: Record<string, unknown>,
): MetadataRow[] {
  const types = (model.metadata["gguf.types"] ?? {}) as Record<string, string>;
  const rows: MetadataRow[] = [];
  for (const [key, v] of Object.entries(model.metadata)) {
    if (key === "gguf.types") continue;
    rows.push({
      key,
      type: typeof types[key] === "string" ? types[key] : typeOf(v),
      value: valueText(v),
    });
  }
  const config = json["config.json"];
  if (config && typeof config === "object") {
    for (const [key, v] of Object.entries(config)) {
      rows.push({
        key: `config.json: ${key}`,
        type: typeOf(v),
        value: valueText(v),
      });
    }
  }
  if (model.config) {
    rows.push({
      key: "network config",
      type: "object",
      value: valueText(model.config),
    });
  }
  return rows;
}

function num(v: unknown): number | undefined {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "bigint") return Number(v);
  return undefined;
}

/** Layer index in a tensor name (`blk.3.`, `layers.3.`, `h.3.`, `block.3.`). */
const LAYER_RE = /(?:^|\.)(?:blk|layers|layer|h|block|blocks)\.(\d+)\./;

function archSummary(
  opened: Opened,
  model: Model,
  tensors: TensorRow[],
): ArchSummary {
  const parameters = tensors.reduce((s, t) => s + t.elements, 0);
  const md = model.metadata;
  const notes: string[] = [];
  const arch = typeof md["general.architecture"] === "string"
    ? md["general.architecture"] as string
    : undefined;
  if (arch) {
    const k = (s: string) => num(md[`${arch}.${s}`]);
    const tokens = md["tokenizer.ggml.tokens"];
    return {
      family: arch,
      layers: k("block_count"),
      heads: k("attention.head_count"),
      kvHeads: k("attention.head_count_kv") ?? k("attention.head_count"),
      hidden: k("embedding_length"),
      ffn: k("feed_forward_length"),
      context: k("context_length"),
      vocab: Array.isArray(tokens) ? tokens.length : k("vocab_size"),
      parameters,
      notes,
    };
  }
  const config = opened.json["config.json"] as HfConfigJson | undefined;
  if (model.config && Array.isArray(model.config.layers)) {
    return {
      family: "network",
      layers: model.config.layers.length,
      parameters,
      notes,
    };
  }
  const det = detectArchitecture(
    tensors.map((t) => ({ name: t.name, shape: t.shape })),
    config as Record<string, unknown> | undefined,
  );
  notes.push(...det.notes.slice(0, 4));
  const c = det.config;
  const cfg = (config ?? {}) as Record<string, unknown>;
  const layerSet = new Set<number>();
  for (const t of tensors) {
    const m = t.name.match(LAYER_RE);
    if (m) layerSet.add(Number(m[1]));
  }
  return {
    family: c?.family ??
      (typeof cfg.model_type === "string" ? cfg.model_type : undefined),
    layers: c?.numLayers ?? num(cfg.num_hidden_layers) ??
      (layerSet.size > 0 ? layerSet.size : undefined),
    heads: c?.numHeads ?? num(cfg.num_attention_heads),
    kvHeads: c?.numKvHeads ?? num(cfg.num_key_value_heads),
    hidden: c?.hiddenSize ?? num(cfg.hidden_size),
    ffn: c?.intermediateSize ?? num(cfg.intermediate_size),
    context: num(cfg.max_position_embeddings) ?? c?.maxPositionEmbeddings,
    vocab: c?.vocabSize ?? num(cfg.vocab_size),
    parameters,
    notes,
  };
}

function shortName(name: string): string {
  const m = name.match(LAYER_RE);
  return m ? name.slice(m.index! + m[0].length) : name;
}

function diagramOf(
  model: Model,
  tensors: TensorRow[],
  arch: ArchSummary,
): DiagramBlock[] {
  if (model.config && Array.isArray(model.config.layers)) {
    return model.config.layers.map((l, i) => {
      const { type, ...rest } = l;
      const params = tensors
        .filter((t) => t.name.startsWith(`layers.${i}.`))
        .reduce((s, t) => s + t.elements, 0);
      return {
        label: `${i}: ${String(type)}`,
        detail: Object.entries(rest)
          .filter(([, v]) => typeof v !== "object")
          .map(([k, v]) => `${k} ${String(v)}`)
          .join(", "),
        parameters: params,
        items: tensors.filter((t) => t.name.startsWith(`layers.${i}.`)).map((
          t,
        ) => t.name),
      };
    });
  }
  const before: TensorRow[] = [];
  const after: TensorRow[] = [];
  const layers = new Map<number, TensorRow[]>();
  for (const t of tensors) {
    const m = t.name.match(LAYER_RE);
    if (m) {
      const i = Number(m[1]);
      if (!layers.has(i)) layers.set(i, []);
      layers.get(i)!.push(t);
    } else if (layers.size === 0) before.push(t);
    else after.push(t);
  }
  // Files list tensors alphabetically at times: put embeddings first, heads last.
  const isEmbed = (n: string) => /embd|embed|wte|wpe|tok_emb/i.test(n);
  const moved = after.filter((t) => isEmbed(t.name));
  const head = [
    ...before.filter((t) => !isEmbed(t.name)),
    ...after.filter((t) => !isEmbed(t.name)),
  ];
  const embeds = [...before.filter((t) => isEmbed(t.name)), ...moved];
  const sum = (ts: TensorRow[]) => ts.reduce((s, t) => s + t.elements, 0);
  const blocks: DiagramBlock[] = [];
  if (embeds.length > 0) {
    blocks.push({
      label: "Embedding",
      detail: embeds.map((t) => `${t.name} [${t.shape.join("×")}]`).join(", "),
      parameters: sum(embeds),
      items: embeds.map((t) => t.name),
    });
  }
  const ids = [...layers.keys()].sort((a, b) => a - b);
  // Consecutive layers with the same tensor suffixes and shapes form one box.
  const signature = (ts: TensorRow[]) =>
    ts.map((t) => `${shortName(t.name)}:${t.dtype}:${t.shape.join("x")}`)
      .sort().join("|");
  let i = 0;
  while (i < ids.length) {
    const sig = signature(layers.get(ids[i])!);
    let j = i + 1;
    while (j < ids.length && signature(layers.get(ids[j])!) === sig) j++;
    const ts = layers.get(ids[i])!;
    const attn = ts.filter((t) =>
      /attn|attention|self_attn/.test(t.name)
    ).length;
    const mlp = ts.filter((t) => /ffn|mlp|feed_forward/.test(t.name)).length;
    blocks.push({
      label: j - i > 1 ? `Blocks ${ids[i]}–${ids[j - 1]}` : `Block ${ids[i]}`,
      detail: [
        attn > 0
          ? `attention (${arch.heads ?? "?"} heads, ${arch.kvHeads ?? "?"} KV)`
          : "",
        mlp > 0 ? `MLP${arch.ffn ? ` ${arch.ffn}` : ""}` : "",
        `${ts.length} tensors each`,
      ].filter((s) => s !== "").join(" · "),
      parameters: sum(ts),
      items: ts.map((t) => shortName(t.name)),
      repeat: j - i,
    });
    i = j;
  }
  if (head.length > 0) {
    blocks.push({
      label: ids.length > 0 ? "Output" : "Tensors",
      detail: head.slice(0, 6).map((t) => `${t.name} [${t.shape.join("×")}]`)
        .join(", ") + (head.length > 6 ? `, … (${head.length})` : ""),
      parameters: sum(head),
      items: head.map((t) => t.name),
    });
  }
  return blocks;
}

function chatAbility(opened: Opened, model: Model): string | undefined {
  if (opened.format === "gguf") {
    const arch = model.metadata["general.architecture"];
    if (!GGUF_ARCHITECTURES.includes(String(arch))) {
      return `the page runs ${
        GGUF_ARCHITECTURES.join(", ")
      } GGUF files; this one is ${String(arch)}`;
    }
    if (!("tokenizer.ggml.model" in model.metadata)) {
      return "the file has no tokenizer (tokenizer.ggml.* metadata)";
    }
    return undefined;
  }
  if (opened.format === "hf") {
    const cfg = opened.json["config.json"] as Record<string, unknown>;
    const t = String(cfg.model_type);
    if (!(SUPPORTED_MODEL_TYPES as readonly string[]).includes(t)) {
      return `model_type ${t} is not one of ${
        SUPPORTED_MODEL_TYPES.join(", ")
      }`;
    }
    if (!opened.json["tokenizer.json"]) {
      return "the folder has no tokenizer.json";
    }
    return undefined;
  }
  return "the playground runs Llama-family GGUF files and Hugging Face folders";
}

/**
 * The plain-data summary the page shows of an opened model (its first model).
 *
 * @param opened The opened model.
 * @returns The summary.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * import { serializeSafetensors } from "@modelhost/modelhost/formats/safetensors";
 * import { openInput, summarize } from "./_open.ts";
 * const bytes = await serializeSafetensors({ models: [{ id: "m", metadata: {},
 *   tensors: memoryTensorIndex([tensorFromF32("layers.0.w", new Float32Array(6), [2, 3])]) }] });
 * const s = summarize(await openInput({ kind: "files", files: [{ path: "m.safetensors", blob: new Blob([bytes.slice()]) }] }));
 * assert(s.tensors[0].bytes === 24 && s.dtypes[0].dtype === "F32" && s.arch.parameters === 6);
 * assert(s.metadata.some((m) => m.key === "format" && m.value === "pt"));
 * ```
 */
export function summarize(opened: Opened): ModelSummary {
  const model = opened.file.models[0];
  const tensors: TensorRow[] = model.tensors.names().map((name) => {
    const i = model.tensors.info(name);
    return {
      name,
      dtype: i.dtype,
      shape: [...i.shape],
      elements: numel(i),
      bytes: i.byteLength,
    };
  });
  const byType = new Map<string, DtypeBytes>();
  for (const t of tensors) {
    const d = byType.get(t.dtype) ??
      { dtype: t.dtype, tensors: 0, elements: 0, bytes: 0 };
    d.tensors++;
    d.elements += t.elements;
    d.bytes += t.bytes;
    byType.set(t.dtype, d);
  }
  const arch = archSummary(opened, model, tensors);
  const chatNote = chatAbility(opened, model);
  return {
    name: opened.name,
    format: opened.format,
    source: opened.source,
    size: opened.size,
    models: opened.file.models.map((m) => m.id),
    metadata: metadataRows(model, opened.json),
    arch,
    diagram: diagramOf(model, tensors, arch),
    tensors,
    dtypes: [...byType.values()].sort((a, b) => b.bytes - a.bytes),
    canChat: chatNote === undefined,
    ...(chatNote ? { chatNote } : {}),
  };
}
