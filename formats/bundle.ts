/**
 * The modelhost bundle: one JSON document holding one or more models, each
 * with its network config, metadata and base64 tensors in any dtype of the
 * table.
 *
 * ```json
 * {"type":"modelhost/bundle","version":1,"models":[{"cfg":{…},"id":"encoder",
 *  "metadata":{"producer":"modelhost"},"weights":{"encoding":"base64","tensors":{
 *   "layers.0.weight":{"data":"…","dtype":"F32","sha256":"…","shape":[16,8]},
 *   "layers.1.weight":{"data":"…","dtype":"I8","scale":0.0078,"sha256":"…","shape":[4,16]}}}}]}
 * ```
 *
 * - {@link saveBundle} writes the text; {@link loadBundle} reads it back
 *   (and reads bundles written by Loom, see `formats/loom.ts`).
 * - The writer is canonical: `type` and `version` come first (so
 *   {@link detectBundle} can tell a bundle from its first bytes), every other
 *   object has its keys sorted, numbers are printed in ECMAScript's shortest
 *   round-trip form, and nothing depends on the clock unless `created` is
 *   asked for. Saving a loaded bundle gives the same bytes.
 * - Every tensor carries the SHA-256 of its stored bytes; loading checks it
 *   and throws {@link ChecksumError} on a mismatch.
 * - {@link validate} runs a model's network on a zero input and lists what
 *   is wrong with it.
 *
 * File access is in `io/bundle.ts`; this module uses no Deno API.
 *
 * @example
 * ```ts
 * import { loadBundle, saveBundle } from "./bundle.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const w = tensorFromF32("layers.0.weight", new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
 * const text = await saveBundle([{ id: "tiny", tensors: [w] }], { dtype: "F16" });
 * const file = await loadBundle(text, "tiny");
 * const t = await file.models[0].tensors.load("layers.0.weight");
 * console.assert(t.dtype === "F16" && t.shape.join() === "2,3");
 * ```
 *
 * @module
 */

import {
  byteLengthOf,
  dtypeInfo,
  type DTypeName,
  encodeFromF32,
} from "../core/dtypes.ts";
import { elementCount, UnsupportedDTypeError } from "../core/errors.ts";
import {
  memoryTensorIndex,
  type Model,
  type ModelFile,
  type NetworkConfig,
  type TensorIndex,
  type TensorInfo,
} from "../core/model.ts";
import type {
  FormatPlugin,
  OptionSpec,
  ReadOptions,
  WriteOptions,
} from "../core/plugin.ts";
import { quantize } from "../core/quantize.ts";
import type { ByteSource } from "../core/sources.ts";
import { type QuantParams, type Tensor, toFloat32 } from "../core/tensor.ts";
import { base64ByteLength, fromBase64Exact, toBase64 } from "./_base64.ts";
import {
  parseJsonWithLongStrings,
  PlainString,
  writeCanonical,
} from "./_json.ts";
import { type LoomReadOptions, readLoomModel } from "./loom.ts";

/** The `type` string every bundle starts with. */
export const BUNDLE_TYPE = "modelhost/bundle";
/** The format version this module writes. */
export const BUNDLE_VERSION = 1;
/** The `producer` written into each model's metadata unless one is given. */
export const BUNDLE_PRODUCER = "modelhost";

/** Largest `version` accepted: Loom writes 2 for its multi-precision layout. */
const LOOM_VERSION = 2;

/**
 * Thrown when a tensor's stored bytes do not hash to the SHA-256 the bundle
 * records for it (a damaged or edited file).
 *
 * @example
 * ```ts
 * import { ChecksumError } from "./bundle.ts";
 * const e = new ChecksumError("enc", "layers.0.weight", "ab", "cd");
 * console.assert(e.tensor === "layers.0.weight" && e.message.includes('"enc"'));
 * ```
 */
export class ChecksumError extends Error {
  /** Id of the model the tensor belongs to. */
  readonly model: string;
  /** Name of the tensor. */
  readonly tensor: string;
  /** The checksum recorded in the bundle (hex). */
  readonly expected: string;
  /** The checksum of the bytes as read (hex). */
  readonly actual: string;
  /**
   * Creates the error.
   *
   * @param model Model id.
   * @param tensor Tensor name.
   * @param expected Recorded SHA-256, hex.
   * @param actual Computed SHA-256, hex.
   */
  constructor(model: string, tensor: string, expected: string, actual: string) {
    super(
      `Checksum mismatch in tensor "${tensor}" of model "${model}": the bundle records sha256 ${expected}, the data hashes to ${actual}`,
    );
    this.name = "ChecksumError";
    this.model = model;
    this.tensor = tensor;
    this.expected = expected;
    this.actual = actual;
  }
}

/** Where a model came from; every field is optional and free-form. */
export interface Provenance {
  /** The commit of the code that trained or built the model. */
  git_commit?: string;
  /** A hash of the training data (any algorithm; say which in the text, e.g. `sha256:…`). */
  dataset_hash?: string;
  /** The seed the weights were initialized or trained with. */
  seed?: number;
  /** Anything else worth keeping. */
  [field: string]: unknown;
}

/**
 * How to store one tensor. `I8`, `U8` and `F4` are quantized (codes plus
 * scales, see `core/quantize.ts`) unless `quantize` is false; every other
 * dtype is a plain conversion through the dtype table.
 */
export interface TensorStorage {
  /** The stored dtype. */
  dtype: DTypeName;
  /**
   * `I8`/`U8`/`F4`: store codes with scales (true) or plain rounded values
   * (false, for tensors that already hold small integers or F4 values).
   * @default {true}
   */
  quantize?: boolean;
  /** `I8`/`U8`: one scale per tensor or per output channel (axis 0). @default {"tensor"} */
  granularity?: "tensor" | "channel";
  /** `I8`/`U8`: symmetric codes around the middle code. @default {false} */
  symmetric?: boolean;
  /** `F4`: values per scale block. @default {32} */
  blockSize?: number;
}

/** A dtype name, or the full {@link TensorStorage}. */
export type StorageChoice = DTypeName | TensorStorage;

/**
 * Picks the storage of each tensor: one choice for the whole bundle, or a
 * function asked per tensor (returning `undefined` keeps the tensor as it is).
 */
export type StorageRule =
  | StorageChoice
  | ((tensor: TensorInfo, modelId: string) => StorageChoice | undefined);

/** Options of {@link saveBundle}. */
export interface SaveBundleOptions {
  /**
   * The stored dtype: for the whole bundle or per tensor. Tensors already in
   * the chosen dtype are written as they are (bit for bit, with their scales).
   * @default {undefined} (every tensor kept in its own dtype)
   */
  dtype?: StorageRule;
  /**
   * Adds `metadata.created` (ISO 8601): `true` for now, or the time to
   * write. Without it the output depends only on the input.
   * @default {false}
   */
  created?: boolean | string | Date;
  /** The `metadata.producer` of every model. @default {"modelhost"} */
  producer?: string;
  /** Provenance merged into every model's `metadata.provenance`. */
  provenance?: Provenance;
  /**
   * Whether to record the SHA-256 of every tensor.
   * @default {true}
   */
  checksums?: boolean;
}

/** The defaults of {@link SaveBundleOptions}. */
export const saveBundleDefaults = {
  created: false,
  producer: BUNDLE_PRODUCER,
  checksums: true,
} as const satisfies SaveBundleOptions;

/** One model to save: a {@link Model} or anything shaped like one. */
export interface BundleModelInput {
  /** Unique id within the bundle. */
  id: string;
  /** The network config (`cfg`), when the model has one. */
  config?: NetworkConfig;
  /** Free-form metadata; `producer`, `created` and `provenance` are managed by the writer. */
  metadata?: Record<string, unknown>;
  /** The tensors: an index, a map by name, or a list. */
  tensors: TensorIndex | ReadonlyMap<string, Tensor> | Iterable<Tensor>;
}

/** Options of {@link loadBundle}. */
export interface LoadBundleOptions {
  /**
   * Whether to check each tensor's SHA-256 (when the bundle records one).
   * @default {true}
   */
  verify?: boolean;
  /** How to convert bundles written by Loom. */
  loom?: LoomReadOptions;
}

/** A loaded bundle. */
export interface BundleFile extends ModelFile {
  /** Always `"bundle"`. */
  format: "bundle";
  /** The `version` field of the document. */
  version: number;
  /** The models, in file order (only the chosen one when an id was given). */
  models: Model[];
}

// ---------------------------------------------------------------- writing

function isTensorIndex(x: unknown): x is TensorIndex {
  const o = x as TensorIndex;
  return typeof o?.names === "function" && typeof o?.load === "function";
}

async function tensorsOf(
  m: BundleModelInput,
): Promise<Map<string, Tensor>> {
  const out = new Map<string, Tensor>();
  const src = m.tensors;
  if (isTensorIndex(src)) {
    for (const name of src.names()) out.set(name, await src.load(name));
  } else if (src instanceof Map) {
    for (const [name, t] of src as ReadonlyMap<string, Tensor>) {
      out.set(name, t);
    }
  } else {
    for (const t of src as Iterable<Tensor>) {
      if (out.has(t.name)) {
        throw new TypeError(
          `Cannot save model "${m.id}": two tensors are named "${t.name}"`,
        );
      }
      out.set(t.name, t);
    }
  }
  return out;
}

function storageFor(
  rule: StorageRule | undefined,
  t: Tensor,
  modelId: string,
): TensorStorage | undefined {
  if (rule === undefined) return undefined;
  const choice = typeof rule === "function"
    ? rule(
      {
        name: t.name,
        dtype: t.dtype,
        shape: [...t.shape],
        byteLength: t.bytes.byteLength,
      },
      modelId,
    )
    : rule;
  if (choice === undefined) return undefined;
  return typeof choice === "string" ? { dtype: choice } : choice;
}

function where(modelId: string, name: string): string {
  return `tensor "${name}" of model "${modelId}"`;
}

/** Converts a tensor to the chosen storage (or keeps it). */
function convert(
  modelId: string,
  name: string,
  t: Tensor,
  storage: TensorStorage | undefined,
): Tensor {
  if (!storage || storage.dtype === t.dtype) return t;
  const target = dtypeInfo(storage.dtype);
  try {
    const values = toFloat32(t);
    const quantized = storage.quantize ?? true;
    if (
      quantized &&
      (target.name === "I8" || target.name === "U8" || target.name === "F4")
    ) {
      return quantize(name, values, [...t.shape], {
        dtype: target.name,
        granularity: storage.granularity,
        symmetric: storage.symmetric,
        blockSize: storage.blockSize,
      });
    }
    return {
      name,
      dtype: target.name,
      shape: [...t.shape],
      bytes: encodeFromF32(target, values),
    };
  } catch (e) {
    throw rewrap(e, `Cannot store ${where(modelId, name)} as ${target.name}`);
  }
}

/** Re-throws an error of the same class with context in front of its message. */
function rewrap(e: unknown, context: string): Error {
  if (!(e instanceof Error)) return new TypeError(`${context}: ${e}`);
  const msg = `${context}: ${e.message}`;
  if (e instanceof UnsupportedDTypeError) {
    const reason = e.message.replace(`Unsupported dtype ${e.dtype}: `, "");
    return new UnsupportedDTypeError(e.dtype, `${context}: ${reason}`);
  }
  if (e instanceof RangeError) return new RangeError(msg);
  if (e instanceof SyntaxError) return new SyntaxError(msg);
  if (e instanceof TypeError) return new TypeError(msg);
  return e;
}

function checkStoredLength(modelId: string, t: Tensor): number {
  const count = elementCount(t.shape, where(modelId, t.name));
  const need = byteLengthOf(dtypeInfo(t.dtype), count);
  if (t.bytes.byteLength !== need) {
    throw new RangeError(
      `Cannot save ${where(modelId, t.name)}: ${t.dtype} [${
        t.shape.join(", ")
      }] needs ${need} bytes, the tensor has ${t.bytes.byteLength}`,
    );
  }
  return count;
}

function f32Entry(v: Float32Array): Record<string, unknown> {
  const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  return {
    data: new PlainString(toBase64(bytes)),
    dtype: "F32",
    shape: [v.length],
  };
}

function quantEntry(
  modelId: string,
  name: string,
  q: QuantParams,
): Record<string, unknown> {
  const number = (x: number, field: string): number => {
    if (!Number.isFinite(x)) {
      throw new TypeError(
        `Cannot save ${where(modelId, name)}: ${field} ${x} is not finite`,
      );
    }
    return x;
  };
  const out: Record<string, unknown> = {};
  out.scale = typeof q.scale === "number"
    ? number(q.scale, "scale")
    : f32Entry(q.scale);
  if (q.zeroPoint !== undefined) {
    out.zero_point = typeof q.zeroPoint === "number"
      ? number(q.zeroPoint, "zero point")
      : f32Entry(q.zeroPoint);
  }
  if (q.blockSize !== undefined) out.block_size = q.blockSize;
  else if (typeof q.scale !== "number") out.axis = q.axis ?? 0;
  return out;
}

function hex(digest: ArrayBuffer): string {
  const b = new Uint8Array(digest);
  let s = "";
  for (let i = 0; i < b.length; i++) s += b[i].toString(16).padStart(2, "0");
  return s;
}

function sha256(bytes: Uint8Array): Promise<string> {
  return crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)
    .then(hex);
}

function createdValue(c: SaveBundleOptions["created"]): string | undefined {
  if (c === undefined || c === false) return undefined;
  if (c === true) return new Date().toISOString();
  if (c instanceof Date) return c.toISOString();
  return c;
}

async function modelEntry(
  m: BundleModelInput,
  options: SaveBundleOptions,
): Promise<Record<string, unknown>> {
  const tensors = await tensorsOf(m);
  const names = [...tensors.keys()].sort();
  const entries: Record<string, Record<string, unknown>> = {};
  const pending: Promise<void>[] = [];
  for (const name of names) {
    if (typeof name !== "string" || name === "") {
      throw new TypeError(
        `Cannot save model "${m.id}": tensor names must be non-empty strings`,
      );
    }
    const t = convert(
      m.id,
      name,
      tensors.get(name)!,
      storageFor(options.dtype, tensors.get(name)!, m.id),
    );
    checkStoredLength(m.id, t);
    const entry: Record<string, unknown> = {
      dtype: t.dtype,
      shape: [...t.shape],
    };
    if (t.quant) Object.assign(entry, quantEntry(m.id, name, t.quant));
    // Hash off the main thread (where the platform does) while encoding.
    if (options.checksums ?? saveBundleDefaults.checksums) {
      pending.push(
        sha256(t.bytes).then((h) => {
          entry.sha256 = h;
        }),
      );
    }
    entry.data = new PlainString(toBase64(t.bytes));
    entries[name] = entry;
  }
  await Promise.all(pending);

  const metadata: Record<string, unknown> = { ...(m.metadata ?? {}) };
  metadata.producer = options.producer ?? saveBundleDefaults.producer;
  const created = createdValue(options.created);
  if (created !== undefined) metadata.created = created;
  if (options.provenance) {
    const prev = metadata.provenance;
    metadata.provenance = {
      ...(prev && typeof prev === "object" ? prev : {}),
      ...options.provenance,
    };
  }
  const out: Record<string, unknown> = {
    id: m.id,
    metadata,
    weights: { encoding: "base64", tensors: entries },
  };
  if (m.config !== undefined) out.cfg = m.config;
  return out;
}

function modelsOf(
  models: readonly BundleModelInput[] | ModelFile,
): readonly BundleModelInput[] {
  const list = Array.isArray(models)
    ? models as readonly BundleModelInput[]
    : (models as ModelFile).models;
  const seen = new Set<string>();
  for (const m of list) {
    if (typeof m?.id !== "string" || m.id === "") {
      throw new TypeError(
        `Cannot save bundle: every model needs a non-empty string id, got ${
          JSON.stringify(m?.id)
        }`,
      );
    }
    if (seen.has(m.id)) {
      throw new TypeError(
        `Cannot save bundle: two models have the id "${m.id}"`,
      );
    }
    seen.add(m.id);
  }
  return list;
}

/**
 * Writes a bundle as pieces of text that concatenate to what
 * {@link saveBundle} returns; writers that stream (files, HTTP) use it to
 * avoid building one large string.
 *
 * @param models The models, or a {@link ModelFile}.
 * @param options Storage and metadata options.
 * @returns The pieces, in order.
 * @throws {TypeError} On a missing or repeated id, a config or metadata value
 * JSON cannot hold, or a value the chosen dtype cannot store.
 * @throws {RangeError} When a tensor's bytes do not match its dtype and shape.
 *
 * @example
 * ```ts
 * import { saveBundleChunks } from "./bundle.ts";
 * const parts = await saveBundleChunks([{ id: "empty", tensors: [] }]);
 * console.assert(parts.join("").startsWith('{"type":"modelhost/bundle","version":1,'));
 * ```
 */
export async function saveBundleChunks(
  models: readonly BundleModelInput[] | ModelFile,
  options: SaveBundleOptions = {},
): Promise<string[]> {
  const list = modelsOf(models);
  const out: string[] = [
    `{"type":${
      JSON.stringify(BUNDLE_TYPE)
    },"version":${BUNDLE_VERSION},"models":[`,
  ];
  for (let i = 0; i < list.length; i++) {
    if (i > 0) out.push(",");
    const entry = await modelEntry(list[i], options);
    writeCanonical(entry, out, `models[${i}] ("${list[i].id}")`);
  }
  out.push("]}\n");
  return out;
}

/**
 * Writes models into one bundle text.
 *
 * @param models The models (ids unique), or a {@link ModelFile}.
 * @param options Storage dtype (per bundle or per tensor) and metadata.
 * @returns The bundle JSON text (ends with a newline).
 * @throws {TypeError} On a missing or repeated id, a value JSON cannot hold,
 * or a value the chosen dtype cannot store (NaN in an I8 tensor).
 * @throws {RangeError} When a tensor's bytes do not match its dtype and shape.
 *
 * @example
 * ```ts
 * import { saveBundle } from "./bundle.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const w = tensorFromF32("w", new Float32Array([0.5, -0.25]), [2]);
 * const a = await saveBundle([{ id: "m", tensors: [w] }], { dtype: "I8" });
 * const b = await saveBundle([{ id: "m", tensors: [w] }], { dtype: "I8" });
 * console.assert(a === b && a.includes('"dtype":"I8"'));
 * ```
 */
export async function saveBundle(
  models: readonly BundleModelInput[] | ModelFile,
  options: SaveBundleOptions = {},
): Promise<string> {
  return (await saveBundleChunks(models, options)).join("");
}

// ---------------------------------------------------------------- reading

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function shown(v: unknown): string {
  if (v === undefined) return "nothing";
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function textOf(input: string | Uint8Array): string {
  if (typeof input === "string") {
    return input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
  }
  try {
    return utf8.decode(input);
  } catch {
    throw new SyntaxError(
      "Cannot read bundle: the bytes are not UTF-8 text, so not JSON",
    );
  }
}

function parseDocument(text: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = parseJsonWithLongStrings(text);
  } catch (e) {
    throw new SyntaxError(
      `Cannot read bundle: not JSON (${(e as Error).message})`,
    );
  }
  if (!isObject(doc)) {
    throw new TypeError(
      `Cannot read bundle: expected a JSON object with "type": "${BUNDLE_TYPE}", got ${
        shown(doc)
      }`,
    );
  }
  if (doc.type !== BUNDLE_TYPE) {
    throw new TypeError(
      `Cannot read bundle: "type" is ${
        shown(doc.type)
      }, expected "${BUNDLE_TYPE}"`,
    );
  }
  if (
    typeof doc.version !== "number" || !Number.isInteger(doc.version) ||
    doc.version < 1 || doc.version > LOOM_VERSION
  ) {
    throw new TypeError(
      `Cannot read bundle: unknown version ${
        shown(doc.version)
      } (this reader knows version ${BUNDLE_VERSION}, and ${LOOM_VERSION} for Loom's multi-precision bundles)`,
    );
  }
  if (!Array.isArray(doc.models)) {
    throw new TypeError(
      `Cannot read bundle: "models" must be an array, got ${shown(doc.models)}`,
    );
  }
  return doc;
}

function modelId(entry: unknown, i: number): string {
  if (!isObject(entry) || typeof entry.id !== "string") {
    throw new TypeError(
      `Cannot read bundle: models[${i}] needs a string "id", got ${
        shown(isObject(entry) ? entry.id : entry)
      }`,
    );
  }
  return entry.id;
}

function readShape(modelId: string, name: string, v: unknown): number[] {
  if (
    !Array.isArray(v) ||
    v.some((d) => typeof d !== "number" || !Number.isSafeInteger(d) || d < 0)
  ) {
    throw new TypeError(
      `Cannot read ${
        where(modelId, name)
      }: "shape" must be an array of non-negative integers, got ${shown(v)}`,
    );
  }
  return v as number[];
}

function decodeData(
  modelId: string,
  name: string,
  dtype: DTypeName,
  shape: number[],
  data: unknown,
  what = "data",
): Uint8Array {
  if (typeof data !== "string") {
    throw new TypeError(
      `Cannot read ${
        where(modelId, name)
      }: "${what}" must be a base64 string, got ${shown(data)}`,
    );
  }
  const count = elementCount(shape, where(modelId, name));
  let need: number;
  try {
    need = byteLengthOf(dtypeInfo(dtype), count);
  } catch (e) {
    throw rewrap(e, `Cannot read ${where(modelId, name)}`);
  }
  const mismatch = (have: number) =>
    new RangeError(
      `Cannot read ${where(modelId, name)}: ${dtype} [${
        shape.join(", ")
      }] needs ${need} bytes, "${what}" holds ${have}`,
    );
  // Refuse before allocating: the text bounds what it can hold.
  const estimate = base64ByteLength(data);
  if (estimate < need && !/\s/.test(data)) throw mismatch(estimate);
  let bytes: Uint8Array | undefined;
  try {
    bytes = fromBase64Exact(data, need);
  } catch (e) {
    throw new SyntaxError(
      `Cannot read ${where(modelId, name)}: "${what}" is not valid base64 (${
        (e as Error).message
      })`,
    );
  }
  if (!bytes) throw mismatch(base64ByteLength(data.replace(/\s+/g, "")));
  return bytes;
}

function readScale(
  modelId: string,
  name: string,
  v: unknown,
  field: string,
): number | Float32Array {
  if (typeof v === "number") return v;
  if (isObject(v)) {
    if (v.dtype !== "F32") {
      throw new TypeError(
        `Cannot read ${
          where(modelId, name)
        }: "${field}" arrays must be F32, got ${shown(v.dtype)}`,
      );
    }
    const shape = readShape(modelId, name, v.shape);
    if (shape.length !== 1) {
      throw new TypeError(
        `Cannot read ${
          where(modelId, name)
        }: "${field}" must be one-dimensional, got shape [${shape.join(", ")}]`,
      );
    }
    const bytes = decodeData(modelId, name, "F32", shape, v.data, field);
    return new Float32Array(bytes.buffer, bytes.byteOffset, shape[0]);
  }
  throw new TypeError(
    `Cannot read ${
      where(modelId, name)
    }: "${field}" must be a number or an F32 array entry, got ${shown(v)}`,
  );
}

function readQuant(
  modelId: string,
  name: string,
  e: Record<string, unknown>,
  shape: number[],
): QuantParams | undefined {
  if (e.scale === undefined) {
    if (e.zero_point !== undefined || e.block_size !== undefined) {
      throw new TypeError(
        `Cannot read ${
          where(modelId, name)
        }: "zero_point" / "block_size" given without "scale"`,
      );
    }
    return undefined;
  }
  const scale = readScale(modelId, name, e.scale, "scale");
  const zp = e.zero_point === undefined
    ? undefined
    : readScale(modelId, name, e.zero_point, "zero_point");
  const q: QuantParams = { scale };
  if (zp !== undefined) q.zeroPoint = zp;
  const count = shape.reduce((a, b) => a * b, 1);
  const arrays = [scale, zp].filter((x) =>
    x instanceof Float32Array
  ) as Float32Array[];
  if (e.block_size !== undefined) {
    const bs = e.block_size;
    if (typeof bs !== "number" || !Number.isSafeInteger(bs) || bs < 1) {
      throw new TypeError(
        `Cannot read ${
          where(modelId, name)
        }: "block_size" must be a positive integer, got ${shown(bs)}`,
      );
    }
    q.blockSize = bs;
    const blocks = Math.ceil(count / bs);
    for (const a of arrays) {
      if (a.length !== blocks) {
        throw new TypeError(
          `Cannot read ${
            where(modelId, name)
          }: ${count} values in blocks of ${bs} need ${blocks} scales, got ${a.length}`,
        );
      }
    }
  } else if (arrays.length > 0) {
    const axis = e.axis ?? 0;
    if (
      typeof axis !== "number" || !Number.isInteger(axis) || axis < 0 ||
      axis >= shape.length
    ) {
      throw new TypeError(
        `Cannot read ${
          where(modelId, name)
        }: "axis" must be a dimension of shape [${shape.join(", ")}], got ${
          shown(axis)
        }`,
      );
    }
    q.axis = axis;
    for (const a of arrays) {
      if (a.length !== shape[axis]) {
        throw new TypeError(
          `Cannot read ${where(modelId, name)}: axis ${axis} has ${
            shape[axis]
          } channels, got ${a.length} scales`,
        );
      }
    }
  }
  return q;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

function readTensors(
  id: string,
  weights: Record<string, unknown>,
  verify: boolean,
  checks: Promise<void>[],
): Tensor[] {
  if (weights.encoding !== "base64") {
    throw new TypeError(
      `Cannot read model "${id}": weights.encoding must be "base64", got ${
        shown(weights.encoding)
      }`,
    );
  }
  if (!isObject(weights.tensors)) {
    throw new TypeError(
      `Cannot read model "${id}": weights.tensors must be an object of tensor entries, got ${
        shown(weights.tensors)
      }`,
    );
  }
  const out: Tensor[] = [];
  for (const [name, e] of Object.entries(weights.tensors)) {
    if (!isObject(e)) {
      throw new TypeError(
        `Cannot read ${where(id, name)}: expected an entry object, got ${
          shown(e)
        }`,
      );
    }
    if (typeof e.dtype !== "string") {
      throw new TypeError(
        `Cannot read ${where(id, name)}: "dtype" must be a string, got ${
          shown(e.dtype)
        }`,
      );
    }
    let dtype: DTypeName;
    try {
      dtype = dtypeInfo(e.dtype).name;
    } catch {
      throw new UnsupportedDTypeError(
        e.dtype,
        `${where(id, name)} has a dtype this reader does not know`,
      );
    }
    const shape = readShape(id, name, e.shape);
    const bytes = decodeData(id, name, dtype, shape, e.data);
    const quant = readQuant(id, name, e, shape);
    if (e.sha256 !== undefined) {
      if (typeof e.sha256 !== "string" || !SHA256_HEX.test(e.sha256)) {
        throw new TypeError(
          `Cannot read ${
            where(id, name)
          }: "sha256" must be 64 lower-case hex digits, got ${shown(e.sha256)}`,
        );
      }
      const expected = e.sha256;
      if (verify) {
        checks.push(
          sha256(bytes).then((actual) => {
            if (actual !== expected) {
              throw new ChecksumError(id, name, expected, actual);
            }
          }),
        );
      }
    }
    out.push(
      quant ? { name, dtype, shape, bytes, quant } : {
        name,
        dtype,
        shape,
        bytes,
      },
    );
  }
  return out;
}

async function readModel(
  entry: Record<string, unknown>,
  id: string,
  version: number,
  options: LoadBundleOptions,
): Promise<Model> {
  const weights = entry.weights;
  if (!isObject(weights)) {
    throw new TypeError(
      `Cannot read model "${id}": "weights" must be an object, got ${
        shown(weights)
      }`,
    );
  }
  if (weights.fmt !== undefined) {
    return readLoomModel(entry, id, options.loom);
  }
  if (version !== BUNDLE_VERSION) {
    throw new TypeError(
      `Cannot read model "${id}": unknown version ${version} for modelhost weights (version ${LOOM_VERSION} is only used by Loom's "fmt" weights)`,
    );
  }
  if (entry.cfg !== undefined && !isObject(entry.cfg)) {
    throw new TypeError(
      `Cannot read model "${id}": "cfg" must be an object, got ${
        shown(entry.cfg)
      }`,
    );
  }
  if (entry.metadata !== undefined && !isObject(entry.metadata)) {
    throw new TypeError(
      `Cannot read model "${id}": "metadata" must be an object, got ${
        shown(entry.metadata)
      }`,
    );
  }
  const checks: Promise<void>[] = [];
  const tensors = readTensors(id, weights, options.verify ?? true, checks);
  await Promise.all(checks);
  const model: Model = {
    id,
    metadata: (entry.metadata as Record<string, unknown>) ?? {},
    tensors: memoryTensorIndex(tensors),
  };
  if (entry.cfg !== undefined) model.config = entry.cfg as NetworkConfig;
  return model;
}

/**
 * Reads a bundle from its text or bytes. Tensors keep their stored dtype
 * (with their scales); `toFloat32` or a network built from them widens to
 * F32. Checksums are verified before this resolves.
 *
 * @param input The JSON text, or its UTF-8 bytes.
 * @param id When given, only this model is decoded and returned.
 * @param options Checksum verification and Loom conversion options.
 * @returns The bundle with its models.
 * @throws {SyntaxError} When the input is not JSON, or tensor data is not base64.
 * @throws {TypeError} On a wrong `type`, an unknown `version`, or a malformed
 * entry (the message names the model and tensor).
 * @throws {RangeError} When `id` is not in the bundle (the message lists the
 * ids present), or tensor data does not match dtype × shape.
 * @throws {ChecksumError} When a tensor does not match its recorded SHA-256.
 * @throws {UnsupportedDTypeError} On a dtype this reader does not know.
 *
 * @example
 * ```ts
 * import { loadBundle, saveBundle } from "./bundle.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const t = (n: string) => tensorFromF32(n, new Float32Array([1, 2]), [2]);
 * const text = await saveBundle([
 *   { id: "encoder", tensors: [t("a")] },
 *   { id: "decoder", tensors: [t("b")] },
 * ]);
 * const both = await loadBundle(text);
 * const dec = await loadBundle(text, "decoder");
 * console.assert(both.models.length === 2 && dec.models[0].tensors.has("b"));
 * ```
 */
export async function loadBundle(
  input: string | Uint8Array,
  id?: string,
  options: LoadBundleOptions = {},
): Promise<BundleFile> {
  const doc = parseDocument(textOf(input));
  const entries = doc.models as unknown[];
  const ids = entries.map(modelId);
  const seen = new Set<string>();
  for (const x of ids) {
    if (seen.has(x)) {
      throw new TypeError(`Cannot read bundle: two models have the id "${x}"`);
    }
    seen.add(x);
  }
  let chosen = entries.map((e, i) => [e, ids[i]] as const);
  if (id !== undefined) {
    chosen = chosen.filter(([, x]) => x === id);
    if (chosen.length === 0) {
      throw new RangeError(
        `No model "${id}" in the bundle; models present: ${
          ids.map((x) => `"${x}"`).join(", ") || "none"
        }`,
      );
    }
  }
  const version = doc.version as number;
  const models: Model[] = [];
  for (const [e, x] of chosen) {
    models.push(
      await readModel(e as Record<string, unknown>, x, version, options),
    );
  }
  return { format: "bundle", version, models };
}

/**
 * The ids of the models in a bundle, without decoding any tensor.
 *
 * @param input The JSON text or its bytes.
 * @returns The ids, in file order.
 * @throws {SyntaxError} When the input is not JSON.
 * @throws {TypeError} When it is not a bundle.
 *
 * @example
 * ```ts
 * import { bundleModelIds, saveBundle } from "./bundle.ts";
 * const text = await saveBundle([{ id: "a", tensors: [] }, { id: "b", tensors: [] }]);
 * console.assert(bundleModelIds(text).join() === "a,b");
 * ```
 */
export function bundleModelIds(input: string | Uint8Array): string[] {
  const doc = parseDocument(textOf(input));
  return (doc.models as unknown[]).map(modelId);
}

// ---------------------------------------------------------------- plugin

const HEAD_PATTERN =
  /^\uFEFF?\s*\{\s*(?:"[^"\\]*"\s*:\s*(?:"(?:[^"\\]|\\.)*"|-?[0-9.eE+-]+|true|false|null)\s*,\s*)*"type"\s*:\s*"modelhost\/bundle"/;

/**
 * Whether the first bytes of a file look like a bundle: a JSON object whose
 * `type` member, before any nested value, is `"modelhost/bundle"` (how both
 * modelhost and Loom write it).
 *
 * @param head The first bytes of the file (a few hundred are enough).
 * @returns True for a bundle.
 *
 * @example
 * ```ts
 * import { detectBundle } from "./bundle.ts";
 * const head = new TextEncoder().encode('{\n  "type": "modelhost/bundle",\n  "version": 1');
 * console.assert(detectBundle(head) && !detectBundle(new TextEncoder().encode('{"a": [1]}')));
 * ```
 */
export function detectBundle(head: Uint8Array): boolean {
  const text = new TextDecoder().decode(head.subarray(0, 4096));
  return HEAD_PATTERN.test(text);
}

async function* encodeChunks(parts: string[]): AsyncIterable<Uint8Array> {
  const enc = new TextEncoder();
  let small: string[] = [];
  let smallLength = 0;
  for (const p of parts) {
    if (p.length >= 65536) {
      if (small.length) yield enc.encode(small.join(""));
      small = [];
      smallLength = 0;
      yield enc.encode(p);
    } else {
      small.push(p);
      smallLength += p.length;
      if (smallLength >= 65536) {
        yield enc.encode(small.join(""));
        small = [];
        smallLength = 0;
      }
    }
  }
  if (small.length) yield enc.encode(small.join(""));
}

/**
 * Encodes bundle pieces (from {@link saveBundleChunks}) as UTF-8 chunks,
 * small pieces grouped so a writer makes few calls.
 *
 * @param parts The pieces.
 * @returns The chunks, in order.
 *
 * @example
 * ```ts
 * import { bundleBytes, saveBundleChunks } from "./bundle.ts";
 * let n = 0;
 * for await (const c of bundleBytes(await saveBundleChunks([]))) n += c.length;
 * console.assert(n > 0);
 * ```
 */
export function bundleBytes(parts: string[]): AsyncIterable<Uint8Array> {
  return encodeChunks(parts);
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

const STORABLE = [
  "F64",
  "F32",
  "F16",
  "BF16",
  "F8_E4M3",
  "F8_E5M2",
  "F4",
  "I64",
  "I32",
  "I16",
  "I8",
  "U64",
  "U32",
  "U16",
  "U8",
  "BOOL",
] as const;

const OPTIONS: readonly OptionSpec[] = [
  {
    name: "dtype",
    type: "string",
    description:
      "Stored dtype of every tensor (I8/U8 affine with scale and zero point, F4 with block scales); default: keep each tensor's dtype",
    choices: STORABLE,
  },
  {
    name: "created",
    type: "boolean",
    description: "Record the current time as metadata.created",
    default: false,
  },
  {
    name: "id",
    type: "string",
    description: "Read only the model with this id",
  },
  {
    name: "verify",
    type: "boolean",
    description: "Check each tensor's SHA-256 while reading",
    default: true,
  },
];

/**
 * The bundle format plugin (`.bundle.json`, `.json`; detected by its
 * leading `"type": "modelhost/bundle"`).
 *
 * @example
 * ```ts
 * import { bundleFormat } from "./bundle.ts";
 * import { createRegistry } from "../registry.ts";
 * const reg = createRegistry().use(bundleFormat);
 * console.assert(reg.formatForPath("model.bundle.json").name === "bundle");
 * ```
 */
export const bundleFormat: FormatPlugin = {
  kind: "format",
  name: "bundle",
  description:
    "modelhost bundle: JSON with configs, metadata and base64 tensors of several models (reads Loom bundles too)",
  extensions: [".bundle.json", ".json"],
  detect: detectBundle,
  async read(src: ByteSource, options?: ReadOptions): Promise<ModelFile> {
    const bytes = await src.read(0, src.size);
    const file = await loadBundle(bytes, str(options?.id), {
      verify: options?.verify === false ? false : true,
    });
    return file;
  },
  write(file: ModelFile, options?: WriteOptions): AsyncIterable<Uint8Array> {
    const opts: SaveBundleOptions = {};
    if (typeof options?.dtype === "string" && options.dtype !== "") {
      opts.dtype = options.dtype as DTypeName;
    }
    if (options?.created === true) opts.created = true;
    if (typeof options?.producer === "string") opts.producer = options.producer;
    return (async function* () {
      yield* encodeChunks(await saveBundleChunks(file, opts));
    })();
  },
  options: OPTIONS,
};
