/**
 * Deterministic, streaming SafeTensors writing: the header is computed from
 * tensor infos alone, then tensors are loaded, converted and emitted one at
 * a time, so a model larger than memory is written with one tensor in
 * memory at a time. Sharded output splits the same plan across files.
 *
 * @module
 */

import {
  byteLengthOf,
  type DTypeInfo,
  dtypeInfo,
  type DTypeName,
  encodeFromF32,
  roundHalfEven,
} from "../../core/dtypes.ts";
import { elementCount, UnsupportedDTypeError } from "../../core/errors.ts";
import type { Model, ModelFile, TensorInfo } from "../../core/model.ts";
import type { WriteOptions } from "../../core/plugin.ts";
import { type QuantParams, type Tensor, toFloat32 } from "../../core/tensor.ts";
import { METADATA_KEY, SAFETENSORS_MAX_HEADER_BYTES } from "./_header.ts";
import { SAFETENSORS_KEYS } from "./read.ts";
import { headerDigest } from "./_digest.ts";

/** Provenance recorded under `modelhost.provenance.*` keys. */
export interface SafetensorsProvenance {
  /** Commit of the code that produced the weights (`modelhost.provenance.git_commit`). @default {undefined} */
  gitCommit?: string;
  /** Hash of the training data (`modelhost.provenance.dataset_sha256`). @default {undefined} */
  datasetSha256?: string;
  /** Seed of the run (`modelhost.provenance.seed`). @default {undefined} */
  seed?: number | string;
  /** When the weights were made, ISO 8601 (`modelhost.provenance.created_at`); never filled in automatically, so output stays deterministic. @default {undefined} */
  createdAt?: string;
  /** More entries, each stored as `modelhost.provenance.<key>`. @default {{}} */
  extra?: Record<string, string>;
}

/** Options of {@link writeSafetensors} and {@link writeSafetensorsShards}. */
export interface SafetensorsWriteOptions extends WriteOptions {
  /**
   * Converts float tensors (and tensors with quantization params) to this
   * dtype while writing: `F32`, `F16`, `BF16`, `F64`, `F8_E4M3`, `F8_E5M2`,
   * `F4` by a plain cast, `I8` by symmetric quantization with one scale per
   * output row (per tensor for rank < 2), the scales stored under
   * `modelhost.quant`. Integer and bool tensors are kept.
   * @default {undefined} (every tensor keeps its stored dtype)
   */
  dtype?: DTypeName;
  /** Extra `__metadata__` entries. @default {{}} */
  metadata?: Record<string, string>;
  /** Provenance entries. @default {undefined} */
  provenance?: SafetensorsProvenance;
  /**
   * Stores the SHA-256 of every tensor's written bytes under
   * `modelhost.sha256` and a digest of every tensor's name, dtype, shape,
   * byte digest and the `modelhost.quant` text under
   * `modelhost.header_sha256`, checked on load and by
   * {@link validateSafetensors}. The hashes go in the header, before the
   * data, so each tensor is loaded twice.
   * @default {false}
   */
  sha256?: boolean;
  /**
   * `__metadata__["format"]`; Hugging Face `transformers` refuses files
   * without one of its known values. `null` leaves the key out unless the
   * model's metadata has it. @default {"pt"}
   */
  format?: string | null;
  /** Largest data size of one shard, in bytes; a larger tensor gets a shard of its own. @default {Infinity} */
  maxShardSize?: number;
  /** Shard names are `<baseName>-00001-of-0000N.safetensors`, the index `<baseName>.safetensors.index.json`. @default {"model"} */
  baseName?: string;
}

/**
 * Defaults of {@link SafetensorsWriteOptions}.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { safetensorsWriteDefaults } from "@modelhost/modelhost/formats/safetensors";
 * assert(safetensorsWriteDefaults.format === "pt");
 * ```
 */
export const safetensorsWriteDefaults = {
  format: "pt",
  sha256: false,
  maxShardSize: Infinity,
  baseName: "model",
} satisfies SafetensorsWriteOptions;

/** One file of a (possibly sharded) write. */
export interface SafetensorsShard {
  /** File name (`model.safetensors` or `model-00001-of-00003.safetensors`). */
  fileName: string;
  /** Exact size of the file in bytes. */
  byteLength: number;
  /** Tensor names in this file, in data order. */
  tensors: string[];
  /** Produces the file's bytes, header first; each call loads the tensors again. */
  chunks(): AsyncIterable<Uint8Array>;
}

/** The files of a write: one shard, or several plus an index. */
export interface SafetensorsShardPlan {
  /** The files, in order. */
  shards: SafetensorsShard[];
  /** `model.safetensors.index.json` contents; absent for a single file. */
  index?: { fileName: string; bytes: Uint8Array };
}

type Conversion = "none" | "cast" | "i8";

interface Planned {
  name: string;
  info: TensorInfo;
  out: DTypeInfo;
  shape: number[];
  byteLength: number;
  conversion: Conversion;
  /** Quant params stored for this tensor (known after the pre-pass). */
  quant?: QuantParams;
  sha256?: string;
}

const CAST_TARGETS: readonly DTypeName[] = [
  "F32",
  "F16",
  "BF16",
  "F64",
  "F8_E4M3",
  "F8_E5M2",
  "F4",
];

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Element alignment in bytes; data is laid out largest alignment first. */
function alignmentOf(d: DTypeInfo): number {
  return d.blockSize === 1 ? d.blockBytes : 1;
}

function wellFormed(s: string, what: string): void {
  if (!s.isWellFormed()) {
    throw new TypeError(
      `Cannot write ${what} ${
        JSON.stringify(s)
      }: it contains a lone UTF-16 surrogate, which UTF-8 cannot hold`,
    );
  }
}

function singleModel(file: ModelFile): Model {
  if (file.models.length !== 1) {
    throw new TypeError(
      `Cannot write SafeTensors: the file holds ${file.models.length} models, SafeTensors holds exactly one`,
    );
  }
  return file.models[0];
}

function planTensor(
  info: TensorInfo,
  target: DTypeInfo | undefined,
  hasQuant = false,
): Planned {
  const name = info.name;
  wellFormed(name, "tensor name");
  if (name === METADATA_KEY) {
    throw new TypeError(
      `Cannot write tensor "${METADATA_KEY}": the name is reserved for the metadata map`,
    );
  }
  const stored = dtypeInfo(info.dtype);
  const count = elementCount(info.shape, `tensor "${name}"`);
  const convertible = stored.kind === "float" || stored.kind === "quant" ||
    hasQuant;
  let out = stored;
  let conversion: Conversion = "none";
  if (target && convertible && target.name !== stored.name) {
    out = target;
    conversion = target.name === "I8" ? "i8" : "cast";
  }
  if (!out.safetensors) {
    throw new UnsupportedDTypeError(
      out.name,
      `tensor "${name}" cannot be stored in SafeTensors; pass a dtype option (F32, F16, BF16, I8, ...) to convert it`,
    );
  }
  let byteLength: number;
  try {
    byteLength = byteLengthOf(out, count);
  } catch (e) {
    throw new RangeError(
      `Cannot write tensor "${name}": ${(e as Error).message}`,
    );
  }
  return {
    name,
    info,
    out,
    shape: [...info.shape],
    byteLength,
    conversion,
  };
}

/** Symmetric I8 codes with one scale per row (axis 0) or per tensor. */
function quantizeI8(
  values: Float32Array,
  shape: number[],
): { bytes: Uint8Array; quant: QuantParams } {
  const rows = shape.length >= 2 ? shape[0] : 1;
  const inner = rows === 0 ? 0 : values.length / rows;
  const scales = new Float32Array(rows);
  const codes = new Int8Array(values.length);
  for (let r = 0; r < rows; r++) {
    let max = 0;
    const base = r * inner;
    for (let i = 0; i < inner; i++) {
      const a = Math.abs(values[base + i]);
      if (a > max && a !== Infinity) max = a;
    }
    const scale = Math.fround(max === 0 ? 1 : max / 127);
    scales[r] = scale;
    for (let i = 0; i < inner; i++) {
      const x = values[base + i];
      const q = x !== x ? 0 : roundHalfEven(x / scale);
      codes[base + i] = q > 127 ? 127 : q < -127 ? -127 : q;
    }
  }
  return {
    bytes: new Uint8Array(codes.buffer),
    quant: { scale: shape.length >= 2 ? scales : scales[0] ?? 1 },
  };
}

interface Encoded {
  bytes: Uint8Array;
  quant?: QuantParams;
}

function encode(t: Tensor, p: Planned): Encoded {
  if (p.conversion === "none") return { bytes: t.bytes, quant: t.quant };
  const values = toFloat32(t);
  if (p.conversion === "i8") return quantizeI8(values, p.shape);
  return { bytes: encodeFromF32(p.out, values) };
}

async function loadEncoded(model: Model, p: Planned): Promise<Encoded> {
  return checked(encode(await model.tensors.load(p.name), p), p);
}

function checked(e: Encoded, p: Planned): Encoded {
  if (e.bytes.byteLength !== p.byteLength) {
    throw new RangeError(
      `Cannot write tensor "${p.name}": ${p.out.name} [${
        p.shape.join(", ")
      }] needs ${p.byteLength} bytes, the model gave ${e.bytes.byteLength}`,
    );
  }
  return e;
}

function hex(buf: ArrayBuffer): string {
  return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/**
 * SHA-256 of bytes as 64 lowercase hex digits (Web Crypto).
 *
 * @param bytes The bytes.
 * @returns The hex digest.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { sha256Hex } from "@modelhost/modelhost/formats/safetensors";
 * const digest = await sha256Hex(new TextEncoder().encode("abc"));
 * assert(digest.startsWith("ba7816bf8f01cfea"));
 * ```
 */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const view = bytes.buffer instanceof ArrayBuffer
    ? (bytes as Uint8Array<ArrayBuffer>)
    : bytes.slice();
  return hex(await crypto.subtle.digest("SHA-256", view));
}

/** Whether loading a tensor may reveal quantization params its info does not show. */
function mayCarryQuant(p: Planned): boolean {
  const d = dtypeInfo(p.info.dtype);
  return d.kind === "int" || d.kind === "quant" || d.name.startsWith("F8") ||
    d.name === "F4";
}

function quantJson(q: QuantParams): Record<string, unknown> {
  const list = (v: number | Float32Array): number | number[] =>
    typeof v === "number" ? v : Array.from(v);
  const o: Record<string, unknown> = { scale: list(q.scale) };
  if (q.zeroPoint !== undefined) o.zero_point = list(q.zeroPoint);
  if (q.axis !== undefined) o.axis = q.axis;
  if (q.blockSize !== undefined) o.block_size = q.blockSize;
  return o;
}

function sortedJson(map: Map<string, unknown>): string {
  const keys = [...map.keys()].sort(cmp);
  return JSON.stringify(Object.fromEntries(keys.map((k) => [k, map.get(k)])));
}

/** The `__metadata__` entries common to every shard, before per-tensor keys. */
function baseMetadata(
  model: Model,
  options: SafetensorsWriteOptions,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(model.metadata)) {
    if (
      k === SAFETENSORS_KEYS.quant || k === SAFETENSORS_KEYS.sha256 ||
      k === SAFETENSORS_KEYS.headerSha256
    ) continue;
    if (v === undefined) continue;
    // 64-bit integers (GGUF UINT64/INT64 read as bigint) as decimal text
    out.set(
      k,
      typeof v === "string"
        ? v
        : typeof v === "bigint"
        ? v.toString()
        : JSON.stringify(
          v,
          (_k, x) => typeof x === "bigint" ? x.toString() : x,
        ),
    );
  }
  if (model.config) {
    out.set(SAFETENSORS_KEYS.config, JSON.stringify(model.config));
  }
  const format = options.format === undefined
    ? safetensorsWriteDefaults.format
    : options.format;
  if (format !== null) out.set("format", format);
  const p = options.provenance;
  if (p) {
    const pre = SAFETENSORS_KEYS.provenance;
    if (p.gitCommit !== undefined) out.set(`${pre}git_commit`, p.gitCommit);
    if (p.datasetSha256 !== undefined) {
      out.set(`${pre}dataset_sha256`, p.datasetSha256);
    }
    if (p.seed !== undefined) out.set(`${pre}seed`, String(p.seed));
    if (p.createdAt !== undefined) out.set(`${pre}created_at`, p.createdAt);
    for (const [k, v] of Object.entries(p.extra ?? {})) {
      out.set(`${pre}${k}`, v);
    }
  }
  for (const [k, v] of Object.entries(options.metadata ?? {})) out.set(k, v);
  for (const [k, v] of out) {
    wellFormed(k, "metadata key");
    wellFormed(v, `metadata value of ${JSON.stringify(k)}:`);
  }
  return out;
}

const ENCODER = new TextEncoder();

/** Builds one file's 8-byte length + padded header. */
async function headerBytes(
  tensors: Planned[],
  base: Map<string, string>,
): Promise<Uint8Array> {
  const meta = new Map(base);
  const quant = new Map<string, unknown>();
  const hashes = new Map<string, unknown>();
  for (const p of tensors) {
    if (p.quant) quant.set(p.name, quantJson(p.quant));
    if (p.sha256) hashes.set(p.name, p.sha256);
  }
  if (quant.size) meta.set(SAFETENSORS_KEYS.quant, sortedJson(quant));
  if (hashes.size) meta.set(SAFETENSORS_KEYS.sha256, sortedJson(hashes));
  if (hashes.size) {
    meta.set(
      SAFETENSORS_KEYS.headerSha256,
      await headerDigest(
        tensors.map((p) => ({
          name: p.name,
          dtype: p.out.safetensors!,
          shape: p.shape,
          sha256: p.sha256!,
        })),
        meta.get(SAFETENSORS_KEYS.quant),
      ),
    );
  }

  const offsets = new Map<string, [number, number]>();
  let at = 0;
  for (const p of tensors) {
    offsets.set(p.name, [at, at + p.byteLength]);
    at += p.byteLength;
  }
  const parts: string[] = [];
  if (meta.size) {
    const keys = [...meta.keys()].sort(cmp);
    parts.push(
      `"${METADATA_KEY}":{${
        keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(meta.get(k))}`)
          .join(",")
      }}`,
    );
  }
  for (const p of [...tensors].sort((a, b) => cmp(a.name, b.name))) {
    const [b, e] = offsets.get(p.name)!;
    parts.push(
      `${JSON.stringify(p.name)}:{"dtype":"${p.out.safetensors}","shape":[${
        p.shape.join(",")
      }],"data_offsets":[${b},${e}]}`,
    );
  }
  const json = ENCODER.encode(`{${parts.join(",")}}`);
  const n = Math.ceil(json.byteLength / 8) * 8;
  if (n > SAFETENSORS_MAX_HEADER_BYTES) {
    throw new RangeError(
      `Cannot write SafeTensors: the header needs ${n} bytes, more than the ${SAFETENSORS_MAX_HEADER_BYTES}-byte limit readers accept`,
    );
  }
  const out = new Uint8Array(8 + n).fill(0x20, 8 + json.byteLength);
  new DataView(out.buffer).setBigUint64(0, BigInt(n), true);
  out.set(json, 8);
  return out;
}

/** Small chunks are gathered into buffers of this size before they are emitted. */
const COALESCE_BYTES = 1 << 20;

async function* shardChunks(
  model: Model,
  header: Uint8Array,
  tensors: Planned[],
): AsyncGenerator<Uint8Array> {
  let buf = new Uint8Array(COALESCE_BYTES);
  let used = 0;
  const flush = function* (): Generator<Uint8Array> {
    if (used > 0) {
      yield buf.subarray(0, used);
      buf = new Uint8Array(COALESCE_BYTES);
      used = 0;
    }
  };
  const push = function* (bytes: Uint8Array): Generator<Uint8Array> {
    if (bytes.byteLength >= COALESCE_BYTES / 4) {
      yield* flush();
      yield bytes;
      return;
    }
    if (used + bytes.byteLength > COALESCE_BYTES) yield* flush();
    buf.set(bytes, used);
    used += bytes.byteLength;
  };
  yield header; // at once, so the consumer can start writing
  for (const p of tensors) {
    const e = await loadEncoded(model, p);
    if (p.conversion === "none" && !sameQuant(e.quant, p.quant)) {
      throw new TypeError(
        `Cannot write tensor "${p.name}": it loaded with different quantization params than the header records`,
      );
    }
    yield* push(e.bytes);
  }
  yield* flush();
}

function sameQuant(a?: QuantParams, b?: QuantParams): boolean {
  if (!a || !b) return !a && !b;
  return JSON.stringify(quantJson(a)) === JSON.stringify(quantJson(b));
}

function shardName(base: string, i: number, n: number): string {
  const pad = (x: number): string => String(x).padStart(5, "0");
  return `${base}-${pad(i + 1)}-of-${pad(n)}.safetensors`;
}

/**
 * Plans a write: validates names and dtypes, runs the pre-pass that the
 * header needs (I8 scales, SHA-256, quantization params of integer and
 * low-precision tensors), splits tensors into shards, and returns each
 * file's exact size and a producer of its bytes.
 *
 * Data is laid out by descending element size, then by name, so every
 * tensor starts at a multiple of its element size (the data section starts
 * at a multiple of 8); header entries are sorted by name.
 *
 * @param file The model file (exactly one model).
 * @param options Conversion, metadata and sharding options.
 * @returns The files to write.
 * @throws {TypeError} On a reserved or malformed name, or not exactly one model.
 * @throws {UnsupportedDTypeError} When a dtype cannot be stored or converted.
 * @throws {RangeError} When a tensor's bytes do not match its dtype and shape.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { writeSafetensorsShards } from "@modelhost/modelhost/formats/safetensors";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * const tensors = memoryTensorIndex([
 *   tensorFromF32("a", new Float32Array(256), [256]),
 *   tensorFromF32("b", new Float32Array(256), [256]),
 * ]);
 * const plan = await writeSafetensorsShards(
 *   { models: [{ id: "m", metadata: {}, tensors }] },
 *   { maxShardSize: 1024 },
 * );
 * assert(plan.shards.length === 2 && plan.index !== undefined);
 * assert(plan.shards[1].fileName === "model-00002-of-00002.safetensors");
 * ```
 */
export async function writeSafetensorsShards(
  file: ModelFile,
  options: SafetensorsWriteOptions = {},
): Promise<SafetensorsShardPlan> {
  const model = singleModel(file);
  const target = options.dtype ? dtypeInfo(options.dtype) : undefined;
  if (target && target.name !== "I8" && !CAST_TARGETS.includes(target.name)) {
    throw new UnsupportedDTypeError(
      target.name,
      `cannot convert weights to it on write; choose one of ${
        [...CAST_TARGETS, "I8"].join(", ")
      }`,
    );
  }
  const maxShard = options.maxShardSize ??
    safetensorsWriteDefaults.maxShardSize;
  if (!(maxShard > 0)) {
    throw new RangeError(
      `Invalid maxShardSize ${maxShard}: expected a positive number of bytes`,
    );
  }
  const baseName = options.baseName ?? safetensorsWriteDefaults.baseName;
  const base = baseMetadata(model, options);

  const planned = model.tensors.names().map((n) =>
    planTensor(model.tensors.info(n), target)
  );
  planned.sort((a, b) => cmp(a.name, b.name));

  // Pre-pass: whatever the header records about tensor contents.
  const needsHash = options.sha256 ?? safetensorsWriteDefaults.sha256;
  for (let i = 0; i < planned.length; i++) {
    let p = planned[i];
    if (!needsHash && p.conversion !== "i8" && !mayCarryQuant(p)) continue;
    const t = await model.tensors.load(p.name);
    if (t.quant && target && p.conversion === "none") {
      // Quantized codes count as weights: dequantize and convert them too.
      p = planned[i] = planTensor(p.info, target, true);
    }
    const e = checked(encode(t, p), p);
    if (e.quant) p.quant = e.quant;
    if (needsHash) p.sha256 = await sha256Hex(e.bytes);
  }

  // Shards in name order, each laid out by alignment then name.
  const groups: Planned[][] = [];
  let size = 0;
  for (const p of planned) {
    if (groups.length === 0 || (size + p.byteLength > maxShard && size > 0)) {
      groups.push([]);
      size = 0;
    }
    groups[groups.length - 1].push(p);
    size += p.byteLength;
  }
  if (groups.length === 0) groups.push([]);

  const shards: SafetensorsShard[] = [];
  for (const [i, g] of groups.entries()) {
    const ordered = [...g].sort((a, b) =>
      alignmentOf(b.out) - alignmentOf(a.out) || cmp(a.name, b.name)
    );
    const header = await headerBytes(ordered, base);
    const data = ordered.reduce((s, p) => s + p.byteLength, 0);
    shards.push({
      fileName: groups.length === 1
        ? `${baseName}.safetensors`
        : shardName(baseName, i, groups.length),
      byteLength: header.byteLength + data,
      tensors: ordered.map((p) => p.name),
      chunks: () => shardChunks(model, header, ordered),
    });
  }
  if (shards.length === 1) return { shards };

  const weightMap: Record<string, string> = {};
  for (const [i, g] of groups.entries()) {
    for (const p of g) weightMap[p.name] = shards[i].fileName;
  }
  const total = planned.reduce((s, p) => s + p.byteLength, 0);
  const sortedMap = Object.fromEntries(
    Object.keys(weightMap).sort(cmp).map((k) => [k, weightMap[k]]),
  );
  const text = JSON.stringify(
    { metadata: { total_size: total }, weight_map: sortedMap },
    null,
    2,
  ) + "\n";
  return {
    shards,
    index: {
      fileName: `${baseName}.safetensors.index.json`,
      bytes: ENCODER.encode(text),
    },
  };
}

/**
 * Writes one SafeTensors file as a stream of chunks: the header first, then
 * each tensor as it is loaded and converted. Same input, same bytes.
 *
 * @param file The model file (exactly one model).
 * @param options Conversion and metadata options; `maxShardSize` must not
 * split the model (use {@link writeSafetensorsShards} for that).
 * @returns The file's bytes, in order.
 * @throws {TypeError} When `maxShardSize` would need more than one file.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readSafetensors, writeSafetensors } from "@modelhost/modelhost/formats/safetensors";
 * import { memoryTensorIndex, memorySource, tensorFromF32, toFloat32 } from "@modelhost/modelhost/core";
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array([1.5, -2]), [2])]);
 * const chunks: Uint8Array[] = [];
 * for await (const c of writeSafetensors({ models: [{ id: "m", metadata: {}, tensors }] }, { dtype: "F16" })) {
 *   chunks.push(c);
 * }
 * const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
 * chunks.reduce((at, c) => (bytes.set(c, at), at + c.byteLength), 0);
 * const back = await readSafetensors(memorySource(bytes));
 * assert(toFloat32(await back.models[0].tensors.load("w"))[1] === -2);
 * ```
 */
export async function* writeSafetensors(
  file: ModelFile,
  options: SafetensorsWriteOptions = {},
): AsyncGenerator<Uint8Array> {
  const plan = await writeSafetensorsShards(file, options);
  if (plan.shards.length !== 1) {
    throw new TypeError(
      `Cannot write one SafeTensors file: maxShardSize ${options.maxShardSize} splits the model into ${plan.shards.length} shards; use writeSafetensorsShards or saveSafetensors`,
    );
  }
  yield* plan.shards[0].chunks();
}

/**
 * Writes one SafeTensors file into memory.
 *
 * @param file The model file (exactly one model).
 * @param options Conversion and metadata options.
 * @returns The file's bytes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { serializeSafetensors } from "@modelhost/modelhost/formats/safetensors";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array(2), [2])]);
 * const bytes = await serializeSafetensors({ models: [{ id: "m", metadata: {}, tensors }] });
 * const headerLength = new DataView(bytes.buffer).getBigUint64(0, true);
 * assert(headerLength % 8n === 0n && bytes.length === 8 + Number(headerLength) + 8);
 * ```
 */
export async function serializeSafetensors(
  file: ModelFile,
  options: SafetensorsWriteOptions = {},
): Promise<Uint8Array> {
  const plan = await writeSafetensorsShards(file, options);
  if (plan.shards.length !== 1) {
    throw new TypeError(
      `Cannot serialize to one SafeTensors file: maxShardSize ${options.maxShardSize} splits the model into ${plan.shards.length} shards`,
    );
  }
  const out = new Uint8Array(plan.shards[0].byteLength);
  let at = 0;
  for await (const c of plan.shards[0].chunks()) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
