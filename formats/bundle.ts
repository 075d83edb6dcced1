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
 * import { assert } from "@std/assert";
 * import { loadBundle, saveBundle } from "./bundle.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const w = tensorFromF32("layers.0.weight", new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
 * const text = await saveBundle([{ id: "tiny", tensors: [w] }], { dtype: "F16" });
 * const file = await loadBundle(text, "tiny");
 * const t = await file.models[0].tensors.load("layers.0.weight");
 * assert(t.dtype === "F16" && t.shape.join() === "2,3");
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
import { quantizeAffine } from "../core/quantize.ts";
import type { ByteSource } from "../core/sources.ts";
import {
  buildNetwork,
  checkNetworkTensors,
  type LayerLookup,
  networkParams,
  type NetworkSpec,
  parseNetwork,
} from "../core/network.ts";
import {
  type FloatTensor,
  floatTensor,
  type QuantParams,
  type Tensor,
  tensorFromF32,
  toFloat32,
} from "../core/tensor.ts";
import { LAYER_PLUGINS } from "../layers/mod.ts";
import { createRegistry } from "../registry.ts";
import {
  base64ByteLength,
  fromBase64,
  fromBase64Into,
  toBase64,
} from "./_base64.ts";
import {
  placeholderIndex,
  PlainString,
  restoreLongStrings,
  splitLongStrings,
  unescapeJsonString,
  writeCanonical,
} from "./_json.ts";
import { type LoomReadOptions, readLoomModel } from "./loom.ts";

/**
 * The `type` string every bundle starts with.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { BUNDLE_TYPE } from "./bundle.ts";
 * assert(BUNDLE_TYPE === "modelhost/bundle");
 * ```
 */
export const BUNDLE_TYPE = "modelhost/bundle";
/**
 * The format version this module writes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { BUNDLE_VERSION } from "./bundle.ts";
 * assert(BUNDLE_VERSION === 1);
 * ```
 */
export const BUNDLE_VERSION = 1;
/**
 * The `producer` written into each model's metadata unless one is given.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { BUNDLE_PRODUCER } from "./bundle.ts";
 * assert(BUNDLE_PRODUCER === "modelhost");
 * ```
 */
export const BUNDLE_PRODUCER = "modelhost";

/** Largest `version` accepted: Loom writes 2 for its multi-precision layout. */
const LOOM_VERSION = 2;

/**
 * Thrown when a tensor's stored bytes do not hash to the SHA-256 the bundle
 * records for it (a damaged or edited file).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ChecksumError } from "./bundle.ts";
 * const e = new ChecksumError("enc", "layers.0.weight", "ab", "cd");
 * assert(e.tensor === "layers.0.weight" && e.message.includes('"enc"'));
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

/**
 * The defaults of {@link SaveBundleOptions}.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { saveBundleDefaults } from "./bundle.ts";
 * assert(saveBundleDefaults.checksums && !saveBundleDefaults.created);
 * ```
 */
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
  name: string,
  t: Tensor,
  modelId: string,
): TensorStorage | undefined {
  if (rule === undefined) return undefined;
  const choice = typeof rule === "function"
    ? rule(
      {
        name,
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
  let target;
  try {
    target = dtypeInfo(storage.dtype);
  } catch (e) {
    throw rewrap(e, `Cannot store ${where(modelId, name)}`);
  }
  try {
    const values = toFloat32(t);
    const quantized = storage.quantize ?? true;
    if (
      quantized &&
      (target.name === "I8" || target.name === "U8" || target.name === "F4")
    ) {
      return quantizeAffine(name, values, [...t.shape], {
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
      storageFor(options.dtype, name, tensors.get(name)!, m.id),
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
 * import { assert } from "@std/assert";
 * import { saveBundleChunks } from "./bundle.ts";
 * const parts = await saveBundleChunks([{ id: "empty", tensors: [] }]);
 * assert(parts.join("").startsWith('{"type":"modelhost/bundle","version":1,'));
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
 * import { assert } from "@std/assert";
 * import { saveBundle } from "./bundle.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const w = tensorFromF32("w", new Float32Array([0.5, -0.25]), [2]);
 * const a = await saveBundle([{ id: "m", tensors: [w] }], { dtype: "I8" });
 * const b = await saveBundle([{ id: "m", tensors: [w] }], { dtype: "I8" });
 * assert(a === b && a.includes('"dtype":"I8"'));
 * ```
 */
export async function saveBundle(
  models: readonly BundleModelInput[] | ModelFile,
  options: SaveBundleOptions = {},
): Promise<string> {
  // Concatenation, not join: the engine links the pieces instead of copying
  // ~1.33 bytes per weight byte; the copy happens when the text is used.
  let text = "";
  for (const p of await saveBundleChunks(models, options)) text += p;
  return text;
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

function textOf(input: string | Uint8Array): string {
  if (typeof input === "string") {
    return input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
  }
  // The replacing decoder is several times faster than the fatal one; only
  // text that holds U+FFFD (rare, and never in base64) is decoded again
  // strictly to tell a real U+FFFD from a bad byte.
  const text = new TextDecoder().decode(input);
  if (text.indexOf("\uFFFD") >= 0) {
    try {
      new TextDecoder("utf-8", { fatal: true }).decode(input);
    } catch {
      throw new SyntaxError(
        "Cannot read bundle: the bytes are not UTF-8 text, so not JSON",
      );
    }
  }
  return text;
}

/**
 * A parsed bundle whose long strings (tensor data) are still slices of the
 * text: `blobs[i]` is the raw text of placeholder i. Everything but tensor
 * data is restored to plain strings before use.
 */
interface Doc {
  readonly doc: Record<string, unknown>;
  readonly blobs: readonly string[];
}

function parseDocument(text: string): Doc {
  let doc: unknown;
  let blobs: readonly string[] = [];
  try {
    const split = splitLongStrings(text);
    if (split) {
      try {
        doc = JSON.parse(split.skeleton);
        blobs = split.blobs;
      } catch {
        doc = JSON.parse(text); // throws with positions in the caller's text
      }
    } else doc = JSON.parse(text);
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
  const type = restoreLongStrings(doc.type, blobs);
  if (type !== BUNDLE_TYPE) {
    throw new TypeError(
      `Cannot read bundle: "type" is ${shown(type)}, expected "${BUNDLE_TYPE}"`,
    );
  }
  if (
    typeof doc.version !== "number" || !Number.isInteger(doc.version) ||
    doc.version < 1 || doc.version > LOOM_VERSION
  ) {
    throw new TypeError(
      `Cannot read bundle: unknown version ${
        shown(restoreLongStrings(doc.version, blobs))
      } (this reader knows version ${BUNDLE_VERSION}, and ${LOOM_VERSION} for Loom's multi-precision bundles)`,
    );
  }
  if (!Array.isArray(doc.models)) {
    throw new TypeError(
      `Cannot read bundle: "models" must be an array, got ${
        shown(restoreLongStrings(doc.models, blobs))
      }`,
    );
  }
  return { doc, blobs };
}

function modelId(d: Doc, entry: unknown, i: number): string {
  const id = isObject(entry) ? restoreLongStrings(entry.id, d.blobs) : entry;
  if (typeof id !== "string") {
    throw new TypeError(
      `Cannot read bundle: models[${i}] needs a string "id", got ${shown(id)}`,
    );
  }
  return id;
}

/** The ids of every model, checked to be strings and unique. */
function modelIds(d: Doc): string[] {
  const ids = (d.doc.models as unknown[]).map((e, i) => modelId(d, e, i));
  const seen = new Set<string>();
  for (const x of ids) {
    if (seen.has(x)) {
      throw new TypeError(`Cannot read bundle: two models have the id "${x}"`);
    }
    seen.add(x);
  }
  return ids;
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

/** One tensor's data, checked and sized, waiting to be decoded. */
interface Pending {
  readonly name: string;
  readonly dtype: DTypeName;
  readonly shape: number[];
  /** Raw base64 text (a slice of the document). */
  readonly text: string;
  readonly bytes: number;
  readonly what: string;
}

/** Checks a data field against dtype × shape without decoding it. */
function pendingData(
  d: Doc,
  modelId: string,
  name: string,
  dtype: DTypeName,
  shape: number[],
  data: unknown,
  what = "data",
): Pending {
  const i = placeholderIndex(data, d.blobs);
  const text = i >= 0 ? d.blobs[i] : data;
  if (typeof text !== "string") {
    throw new TypeError(
      `Cannot read ${
        where(modelId, name)
      }: "${what}" must be a base64 string, got ${shown(text)}`,
    );
  }
  const count = elementCount(shape, where(modelId, name));
  let need: number;
  try {
    need = byteLengthOf(dtypeInfo(dtype), count);
  } catch (e) {
    throw rewrap(e, `Cannot read ${where(modelId, name)}`);
  }
  // Refuse before allocating: the text bounds how many bytes it holds.
  const estimate = base64ByteLength(text);
  if (estimate < need && !/[\s\\]/.test(text)) {
    throw lengthError(modelId, name, dtype, shape, need, estimate, what);
  }
  return { name, dtype, shape, text, bytes: need, what };
}

function lengthError(
  modelId: string,
  name: string,
  dtype: DTypeName,
  shape: number[],
  need: number,
  have: number,
  what: string,
): RangeError {
  return new RangeError(
    `Cannot read ${where(modelId, name)}: ${dtype} [${
      shape.join(", ")
    }] needs ${need} bytes, "${what}" holds ${have}`,
  );
}

/** Decodes one pending data field into `target` (exactly its length). */
function decodePending(modelId: string, p: Pending, target: Uint8Array): void {
  const bad = (e: unknown) =>
    new SyntaxError(
      `Cannot read ${
        where(modelId, p.name)
      }: "${p.what}" is not valid base64 (${(e as Error).message})`,
    );
  let text = p.text;
  let ok: boolean;
  try {
    ok = fromBase64Into(text, target);
  } catch (e) {
    // JSON escapes are legal in any string, though no writer puts them in
    // base64; undo them and try once more.
    if (text.indexOf("\\") < 0) throw bad(e);
    try {
      text = unescapeJsonString(text);
      ok = fromBase64Into(text, target);
    } catch (e2) {
      throw bad(e2);
    }
  }
  if (!ok) {
    let have: number;
    try {
      have = fromBase64(text).length;
    } catch (e) {
      throw bad(e);
    }
    throw lengthError(
      modelId,
      p.name,
      p.dtype,
      p.shape,
      p.bytes,
      have,
      p.what,
    );
  }
}

/**
 * Decodes pending fields into one shared buffer, as 8-byte aligned views;
 * `done(i, view)` is called as each one is ready.
 */
function decodeAll(
  modelId: string,
  list: Pending[],
  done: (i: number, view: Uint8Array) => void,
): void {
  let total = 0;
  const offsets = list.map((p) => {
    const off = total;
    total += Math.ceil(p.bytes / 8) * 8;
    return off;
  });
  const buffer = new ArrayBuffer(total);
  list.forEach((p, i) => {
    const view = new Uint8Array(buffer, offsets[i], p.bytes);
    decodePending(modelId, p, view);
    done(i, view);
  });
}

function scaleEntry(
  d: Doc,
  modelId: string,
  name: string,
  v: unknown,
  field: string,
): number | Pending {
  if (typeof v === "number") return v;
  if (isObject(v)) {
    const dtype = restoreLongStrings(v.dtype, d.blobs);
    if (dtype !== "F32") {
      throw new TypeError(
        `Cannot read ${
          where(modelId, name)
        }: "${field}" arrays must be F32, got ${shown(dtype)}`,
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
    return pendingData(d, modelId, name, "F32", shape, v.data, field);
  }
  throw new TypeError(
    `Cannot read ${
      where(modelId, name)
    }: "${field}" must be a number or an F32 array entry, got ${
      shown(restoreLongStrings(v, d.blobs))
    }`,
  );
}

/** Quantization fields of an entry, with array scales still pending. */
interface PendingQuant {
  scale: number | Pending;
  zeroPoint?: number | Pending;
  axis?: number;
  blockSize?: number;
}

function lengthOf(x: number | Pending): number | undefined {
  return typeof x === "number" ? undefined : x.shape[0];
}

function readQuant(
  d: Doc,
  modelId: string,
  name: string,
  e: Record<string, unknown>,
  shape: number[],
): PendingQuant | undefined {
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
  const q: PendingQuant = {
    scale: scaleEntry(d, modelId, name, e.scale, "scale"),
  };
  if (e.zero_point !== undefined) {
    q.zeroPoint = scaleEntry(d, modelId, name, e.zero_point, "zero_point");
  }
  const count = shape.reduce((a, b) => a * b, 1);
  const lengths = [lengthOf(q.scale), q.zeroPoint && lengthOf(q.zeroPoint)]
    .filter((x) => x !== undefined) as number[];
  const bs = restoreLongStrings(e.block_size, d.blobs);
  if (bs !== undefined) {
    if (typeof bs !== "number" || !Number.isSafeInteger(bs) || bs < 1) {
      throw new TypeError(
        `Cannot read ${
          where(modelId, name)
        }: "block_size" must be a positive integer, got ${shown(bs)}`,
      );
    }
    q.blockSize = bs;
    const blocks = Math.ceil(count / bs);
    for (const n of lengths) {
      if (n !== blocks) {
        throw new TypeError(
          `Cannot read ${
            where(modelId, name)
          }: ${count} values in blocks of ${bs} need ${blocks} scales, got ${n}`,
        );
      }
    }
  } else if (lengths.length > 0) {
    const axis = restoreLongStrings(e.axis, d.blobs) ?? 0;
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
    for (const n of lengths) {
      if (n !== shape[axis]) {
        throw new TypeError(
          `Cannot read ${where(modelId, name)}: axis ${axis} has ${
            shape[axis]
          } channels, got ${n} scales`,
        );
      }
    }
  }
  return q;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

interface EntryPlan {
  name: string;
  dtype: DTypeName;
  shape: number[];
  data: Pending;
  quant?: PendingQuant;
  sha256?: string;
}

function planEntry(
  d: Doc,
  id: string,
  name: string,
  e: unknown,
): EntryPlan {
  if (!isObject(e)) {
    throw new TypeError(
      `Cannot read ${where(id, name)}: expected an entry object, got ${
        shown(restoreLongStrings(e, d.blobs))
      }`,
    );
  }
  const dt = restoreLongStrings(e.dtype, d.blobs);
  if (typeof dt !== "string") {
    throw new TypeError(
      `Cannot read ${where(id, name)}: "dtype" must be a string, got ${
        shown(dt)
      }`,
    );
  }
  let dtype: DTypeName;
  try {
    dtype = dtypeInfo(dt).name;
  } catch {
    throw new UnsupportedDTypeError(
      dt,
      `${where(id, name)} has a dtype this reader does not know`,
    );
  }
  const shape = readShape(id, name, e.shape);
  const data = pendingData(d, id, name, dtype, shape, e.data);
  const quant = readQuant(d, id, name, e, shape);
  const sha = restoreLongStrings(e.sha256, d.blobs);
  if (sha !== undefined && (typeof sha !== "string" || !SHA256_HEX.test(sha))) {
    throw new TypeError(
      `Cannot read ${
        where(id, name)
      }: "sha256" must be 64 lower-case hex digits, got ${shown(sha)}`,
    );
  }
  return { name, dtype, shape, data, quant, sha256: sha };
}

async function readTensors(
  d: Doc,
  id: string,
  weights: Record<string, unknown>,
  verify: boolean,
): Promise<Tensor[]> {
  const encoding = restoreLongStrings(weights.encoding, d.blobs);
  if (encoding !== "base64") {
    throw new TypeError(
      `Cannot read model "${id}": weights.encoding must be "base64", got ${
        shown(encoding)
      }`,
    );
  }
  if (!isObject(weights.tensors)) {
    throw new TypeError(
      `Cannot read model "${id}": weights.tensors must be an object of tensor entries, got ${
        shown(restoreLongStrings(weights.tensors, d.blobs))
      }`,
    );
  }
  // Check every entry before decoding any, then decode into one buffer.
  const plans = Object.entries(weights.tensors).map(([name, e]) =>
    planEntry(d, id, name, e)
  );
  const pending: Pending[] = [];
  for (const p of plans) {
    pending.push(p.data);
    if (p.quant && typeof p.quant.scale !== "number") {
      pending.push(p.quant.scale);
    }
    if (p.quant?.zeroPoint && typeof p.quant.zeroPoint !== "number") {
      pending.push(p.quant.zeroPoint);
    }
  }
  const decoded = new Map<Pending, Uint8Array>();
  const checks: Promise<void>[] = [];
  const hashOf = new Map<Pending, EntryPlan>();
  if (verify) {
    for (const p of plans) if (p.sha256 !== undefined) hashOf.set(p.data, p);
  }
  // Each hash starts as soon as its tensor is decoded, so it runs (off the
  // main thread, where the platform does that) while the next one decodes.
  decodeAll(id, pending, (i, view) => {
    decoded.set(pending[i], view);
    const plan = hashOf.get(pending[i]);
    if (plan) {
      const expected = plan.sha256!;
      const check = sha256(view).then((actual) => {
        if (actual !== expected) {
          throw new ChecksumError(id, plan.name, expected, actual);
        }
      });
      // Handled here too, so a later decoding error that ends this read
      // early does not leave a rejected check nobody awaits.
      check.catch(() => {});
      checks.push(check);
    }
  });
  const f32 = (x: number | Pending): number | Float32Array => {
    if (typeof x === "number") return x;
    const b = decoded.get(x)!;
    return new Float32Array(b.buffer, b.byteOffset, x.shape[0]);
  };
  const out: Tensor[] = [];
  for (const p of plans) {
    const bytes = decoded.get(p.data)!;
    const t: Tensor = { name: p.name, dtype: p.dtype, shape: p.shape, bytes };
    if (p.quant) {
      const q: QuantParams = { scale: f32(p.quant.scale) };
      if (p.quant.zeroPoint !== undefined) q.zeroPoint = f32(p.quant.zeroPoint);
      if (p.quant.axis !== undefined) q.axis = p.quant.axis;
      if (p.quant.blockSize !== undefined) q.blockSize = p.quant.blockSize;
      t.quant = q;
    }
    out.push(t);
  }
  await Promise.all(checks);
  return out;
}

async function readModel(
  d: Doc,
  entry: Record<string, unknown>,
  id: string,
  version: number,
  options: LoadBundleOptions,
): Promise<Model> {
  const weights = entry.weights;
  if (!isObject(weights)) {
    throw new TypeError(
      `Cannot read model "${id}": "weights" must be an object, got ${
        shown(restoreLongStrings(weights, d.blobs))
      }`,
    );
  }
  if (weights.fmt !== undefined) {
    return readLoomModel(
      restoreLongStrings(entry, d.blobs) as Record<string, unknown>,
      id,
      options.loom,
    );
  }
  if (version !== BUNDLE_VERSION) {
    throw new TypeError(
      `Cannot read model "${id}": unknown version ${version} for modelhost weights (version ${LOOM_VERSION} is only used by Loom's "fmt" weights)`,
    );
  }
  const cfg = restoreLongStrings(entry.cfg, d.blobs);
  if (cfg !== undefined && !isObject(cfg)) {
    throw new TypeError(
      `Cannot read model "${id}": "cfg" must be an object, got ${shown(cfg)}`,
    );
  }
  const metadata = restoreLongStrings(entry.metadata, d.blobs);
  if (metadata !== undefined && !isObject(metadata)) {
    throw new TypeError(
      `Cannot read model "${id}": "metadata" must be an object, got ${
        shown(metadata)
      }`,
    );
  }
  const tensors = await readTensors(d, id, weights, options.verify ?? true);
  const model: Model = {
    id,
    metadata: metadata ?? {},
    tensors: memoryTensorIndex(tensors),
  };
  if (cfg !== undefined) model.config = cfg as NetworkConfig;
  return model;
}

/**
 * Reads a bundle from its text or bytes. Tensors keep their stored dtype
 * (with their scales); `toFloat32` or a network built from them widens to
 * F32. The tensors of one model are views into one buffer. Checksums are
 * verified before this resolves.
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
 * import { assert } from "@std/assert";
 * import { loadBundle, saveBundle } from "./bundle.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const t = (n: string) => tensorFromF32(n, new Float32Array([1, 2]), [2]);
 * const text = await saveBundle([
 *   { id: "encoder", tensors: [t("a")] },
 *   { id: "decoder", tensors: [t("b")] },
 * ]);
 * const both = await loadBundle(text);
 * const dec = await loadBundle(text, "decoder");
 * assert(both.models.length === 2 && dec.models[0].tensors.has("b"));
 * ```
 */
export async function loadBundle(
  input: string | Uint8Array,
  id?: string,
  options: LoadBundleOptions = {},
): Promise<BundleFile> {
  const d = parseDocument(textOf(input));
  const entries = d.doc.models as unknown[];
  const ids = modelIds(d);
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
  const version = d.doc.version as number;
  const models: Model[] = [];
  for (const [e, x] of chosen) {
    models.push(
      await readModel(d, e as Record<string, unknown>, x, version, options),
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
 * import { assert } from "@std/assert";
 * import { bundleModelIds, saveBundle } from "./bundle.ts";
 * const text = await saveBundle([{ id: "a", tensors: [] }, { id: "b", tensors: [] }]);
 * assert(bundleModelIds(text).join() === "a,b");
 * ```
 */
export function bundleModelIds(input: string | Uint8Array): string[] {
  return modelIds(parseDocument(textOf(input)));
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
 * import { assert } from "@std/assert";
 * import { detectBundle } from "./bundle.ts";
 * const head = new TextEncoder().encode('{\n  "type": "modelhost/bundle",\n  "version": 1');
 * assert(detectBundle(head) && !detectBundle(new TextEncoder().encode('{"a": [1]}')));
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
 * import { assert } from "@std/assert";
 * import { bundleBytes, saveBundleChunks } from "./bundle.ts";
 * let n = 0;
 * for await (const c of bundleBytes(await saveBundleChunks([]))) n += c.length;
 * assert(n > 0);
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
 * import { assert } from "@std/assert";
 * import { bundleFormat } from "./bundle.ts";
 * import { createRegistry } from "../registry.ts";
 * const reg = createRegistry().use(bundleFormat);
 * assert(reg.formatForPath("model.bundle.json").name === "bundle");
 * ```
 */
export const bundleFormat: FormatPlugin & {
  /** Every problem of a bundle file, as {@link validateBundle} lists them. */
  validate(src: ByteSource): Promise<string[]>;
} = {
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
  async validate(src: ByteSource): Promise<string[]> {
    return await validateBundle(await src.read(0, src.size));
  },
  options: OPTIONS,
};

// ---------------------------------------------------------------- validation

/** Options of {@link validate}. */
export interface ValidateOptions {
  /**
   * The layer plugins to build the network with.
   * @default {a registry of the built-in layers}
   */
  registry?: LayerLookup;
  /** The input to run, instead of zeros of shape `[1, input_size]`. */
  input?: FloatTensor;
}

/** One thing {@link validate} found wrong. */
export interface ValidationProblem {
  /**
   * `config`: the network config does not parse; `missing` / `extra` /
   * `shape`: tensors against the network's parameters; `dtype`: a tensor
   * that cannot be widened to F32; `weights`: NaN or Inf in a parameter;
   * `forward`: the forward pass threw; `output`: NaN or Inf in the output.
   */
  kind:
    | "config"
    | "missing"
    | "extra"
    | "shape"
    | "dtype"
    | "weights"
    | "forward"
    | "output";
  /** The tensor concerned, when there is one. */
  tensor?: string;
  /** What is wrong, with the numbers. */
  message: string;
}

/** What {@link validate} reports about one model. */
export interface ValidationReport {
  /** The model id. */
  model: string;
  /** True when no problem was found. */
  ok: boolean;
  /** Every problem found, in the order above (config, tensors, weights, forward). */
  problems: ValidationProblem[];
  /** Shape of the forward output, when the forward ran. */
  outputShape?: number[];
}

function countNonFinite(v: Float32Array): { nan: number; inf: number } {
  let nan = 0, inf = 0;
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (x !== x) nan++;
    else if (x === Infinity || x === -Infinity) inf++;
  }
  return { nan, inf };
}

function nonFiniteText(c: { nan: number; inf: number }): string {
  return [c.nan ? `${c.nan} NaN` : "", c.inf ? `${c.inf} Inf` : ""]
    .filter((s) => s).join(" and ");
}

/**
 * Checks that a model's tensors fit its network and that the network runs:
 * compares the tensors with the parameters the config needs (missing, extra,
 * wrong shape), looks for NaN/Inf in the weights, then runs a forward pass
 * on a zero input (missing or unusable tensors replaced by zeros, so one
 * problem does not hide the others) and looks for NaN/Inf in the output.
 * Every problem is listed; nothing throws for a bad model.
 *
 * @param model A loaded model (or anything with `id`, `config`, `tensors`).
 * @param options The layer registry and the input to run.
 * @returns The report.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { validate } from "./bundle.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const report = await validate({
 *   id: "m",
 *   config: { input_size: 2, layers: [{ type: "dense", output_size: 1 }] },
 *   tensors: [tensorFromF32("layers.0.weight", new Float32Array([1, NaN]), [1, 2])],
 * });
 * assert(!report.ok);
 * assert(report.problems.map((p) => p.kind).join() === "missing,weights,output");
 * ```
 */
export async function validate(
  model: BundleModelInput,
  options: ValidateOptions = {},
): Promise<ValidationReport> {
  const reg = options.registry ?? createRegistry().use(LAYER_PLUGINS);
  const problems: ValidationProblem[] = [];
  const report = (outputShape?: number[]): ValidationReport => ({
    model: model.id,
    ok: problems.length === 0,
    problems,
    ...(outputShape ? { outputShape } : {}),
  });
  let tensors: Map<string, Tensor>;
  try {
    tensors = await tensorsOf(model);
  } catch (e) {
    problems.push({ kind: "dtype", message: (e as Error).message });
    return report();
  }
  if (!model.config) {
    problems.push({
      kind: "config",
      message: `model "${model.id}" has no network config to run`,
    });
    return report();
  }
  let spec: NetworkSpec;
  try {
    spec = parseNetwork(reg, model.config);
  } catch (e) {
    problems.push({ kind: "config", message: (e as Error).message });
    return report();
  }
  const params = networkParams(spec);
  const check = checkNetworkTensors(reg, model.config, tensors);
  const unusable = new Set<string>();
  for (const name of check.missing) {
    const s = params.find((p) => p.name === name)!;
    problems.push({
      kind: "missing",
      tensor: name,
      message: `missing tensor "${name}" [${s.shape.join(", ")}]`,
    });
    unusable.add(name);
  }
  for (const name of check.extra) {
    problems.push({
      kind: "extra",
      tensor: name,
      message: `extra tensor "${name}": not a parameter of the network`,
    });
  }
  for (const w of check.wrongShape) {
    problems.push({
      kind: "shape",
      tensor: w.name,
      message: `tensor "${w.name}" has shape [${
        w.actual.join(", ")
      }], the network expects [${w.expected.join(", ")}]`,
    });
    unusable.add(w.name);
  }
  for (const p of params) {
    const t = tensors.get(p.name);
    if (!t || unusable.has(p.name)) continue;
    let values: Float32Array;
    try {
      values = toFloat32(t);
    } catch (e) {
      problems.push({
        kind: "dtype",
        tensor: p.name,
        message: `tensor "${p.name}": ${(e as Error).message}`,
      });
      unusable.add(p.name);
      continue;
    }
    const c = countNonFinite(values);
    if (c.nan || c.inf) {
      problems.push({
        kind: "weights",
        tensor: p.name,
        message: `tensor "${p.name}" holds ${
          nonFiniteText(c)
        } of ${values.length} values`,
      });
    }
  }
  // Run with zeros in place of what is missing or unusable.
  const bound = new Map(tensors);
  for (const p of params) {
    if (!unusable.has(p.name)) continue;
    const n = p.shape.reduce((a, b) => a * b, 1);
    bound.set(p.name, tensorFromF32(p.name, new Float32Array(n), p.shape));
  }
  const input = options.input ??
    floatTensor(new Float32Array(spec.inputSize ?? 1), [
      1,
      spec.inputSize ?? 1,
    ]);
  let y: FloatTensor;
  try {
    y = buildNetwork(reg, model.config, bound).forward(input);
  } catch (e) {
    problems.push({
      kind: "forward",
      message: `the forward pass on input [${input.shape.join(", ")}] failed: ${
        (e as Error).message
      }`,
    });
    return report();
  }
  const c = countNonFinite(y.data);
  if (c.nan || c.inf) {
    problems.push({
      kind: "output",
      message: `the output [${y.shape.join(", ")}] of a ${
        options.input ? "given" : "zero"
      } input holds ${nonFiniteText(c)} of ${y.data.length} values`,
    });
  }
  return report([...y.shape]);
}

/**
 * Every problem of a bundle, as text: the first read error of each model
 * (each model is read on its own, so one bad model does not hide another),
 * then what {@link validate} finds in each model that has a network config.
 *
 * @param input The bundle text or bytes.
 * @param options The layer registry for {@link validate}.
 * @returns The problems, each prefixed with its model id; empty when the
 * bundle is sound.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { saveBundle, validateBundle } from "./bundle.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const text = await saveBundle([{
 *   id: "m",
 *   config: { input_size: 2, layers: [{ type: "dense", output_size: 1, bias: false }] },
 *   tensors: [tensorFromF32("layers.0.weight", new Float32Array([1, 2]), [1, 2])],
 * }]);
 * assert((await validateBundle(text)).length === 0);
 * const broken = text.replace('"shape":[1,2]', '"shape":[2,2]');
 * assert((await validateBundle(broken))[0].startsWith('model "m": '));
 * ```
 */
export async function validateBundle(
  input: string | Uint8Array,
  options: ValidateOptions = {},
): Promise<string[]> {
  let ids: string[];
  try {
    ids = bundleModelIds(input);
  } catch (e) {
    return [(e as Error).message];
  }
  const text = typeof input === "string" ? input : textOf(input);
  const problems: string[] = [];
  for (const id of ids) {
    let model: Model;
    try {
      model = (await loadBundle(text, id)).models[0];
    } catch (e) {
      problems.push(`model "${id}": ${(e as Error).message}`);
      continue;
    }
    if (!model.config) continue;
    const report = await validate(model, options);
    for (const p of report.problems) {
      problems.push(`model "${id}": ${p.message}`);
    }
  }
  return problems;
}
