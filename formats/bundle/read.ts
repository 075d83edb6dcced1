/**
 * Reading bundles: the document is parsed with tensor data left as slices
 * of the text, every field is checked, then tensors are decoded (and their
 * SHA-256 verified) into one buffer per model. Loom's entries are converted
 * by `formats/loom/`.
 *
 * @module
 */

import { byteLengthOf, dtypeInfo, type DTypeName } from "../../core/dtypes.ts";
import { elementCount, UnsupportedDTypeError } from "../../core/errors.ts";
import {
  memoryTensorIndex,
  type Model,
  type ModelFile,
  type NetworkConfig,
} from "../../core/model.ts";
import type { QuantParams, Tensor } from "../../core/tensor.ts";
import {
  base64ByteLength,
  fromBase64,
  fromBase64Into,
} from "../../core/_base64.ts";
import {
  checkJsonDepth,
  placeholderIndex,
  restoreLongStrings,
  splitLongStrings,
  unescapeJsonString,
} from "./_json.ts";
import { type LoomReadOptions, readLoomModel } from "../loom/mod.ts";
import { descriptorDigest, rewrap, sha256, textOf, where } from "./_common.ts";
import { setOwn } from "../../core/_own.ts";
import { BUNDLE_TYPE, BUNDLE_VERSION } from "./write.ts";

/** Largest `version` accepted: Loom writes 2 for its multi-precision layout. */
const LOOM_VERSION = 2;

/**
 * Thrown when a tensor's stored bytes do not hash to the SHA-256 the bundle
 * records for it (a damaged or edited file).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ChecksumError } from "@modelhost/modelhost/formats/bundle";
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

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function shown(v: unknown): string {
  if (v === undefined) return "nothing";
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
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
  checkJsonDepth(doc, "bundle");
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

/**
 * With `weights.sha256` recorded (bundles written since it exists), every
 * entry must carry its byte `sha256` and the entries' descriptors must hash
 * to it; without it (older bundles), byte checksums are all there or all
 * absent: a bundle with some removed is refused.
 */
async function checkDescriptors(
  d: Doc,
  id: string,
  weights: Record<string, unknown>,
  plans: EntryPlan[],
): Promise<void> {
  const recorded = restoreLongStrings(weights.sha256, d.blobs);
  const missing = plans.filter((p) => p.sha256 === undefined);
  if (recorded === undefined) {
    if (missing.length > 0 && missing.length < plans.length) {
      throw new TypeError(
        `Cannot verify model "${id}": ${
          plans.length - missing.length
        } of ${plans.length} tensors record a sha256, "${
          missing[0].name
        }" does not (a removed checksum; pass verify: false to read it anyway)`,
      );
    }
    return;
  }
  if (typeof recorded !== "string" || !SHA256_HEX.test(recorded)) {
    throw new TypeError(
      `Cannot read model "${id}": weights.sha256 must be 64 lower-case hex digits, got ${
        shown(recorded)
      }`,
    );
  }
  if (missing.length > 0) {
    throw new TypeError(
      `Cannot verify model "${id}": tensor "${
        missing[0].name
      }" has no sha256 though weights.sha256 is recorded (a removed checksum; pass verify: false to read it anyway)`,
    );
  }
  const entries: Record<string, unknown> = {};
  const tensors = weights.tensors as Record<string, unknown>;
  for (const name of Object.keys(tensors)) {
    const e = tensors[name] as Record<string, unknown>;
    const rest: Record<string, unknown> = {};
    for (const k of Object.keys(e)) {
      if (k !== "data") setOwn(rest, k, structuredClone(e[k]));
    }
    setOwn(entries, name, restoreLongStrings(rest, d.blobs));
  }
  const actual = await descriptorDigest(entries);
  if (actual !== recorded) {
    throw new ChecksumError(
      id,
      "(dtype, shape and quantization fields of all tensors)",
      recorded,
      actual,
    );
  }
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
  // after the byte checks, so a damaged tensor is named before the summary
  if (verify) await checkDescriptors(d, id, weights, plans);
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
 * import { loadBundle, saveBundle } from "@modelhost/modelhost/formats/bundle";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
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
 * import { bundleModelIds, saveBundle } from "@modelhost/modelhost/formats/bundle";
 * const text = await saveBundle([{ id: "a", tensors: [] }, { id: "b", tensors: [] }]);
 * assert(bundleModelIds(text).join() === "a,b");
 * ```
 */
export function bundleModelIds(input: string | Uint8Array): string[] {
  return modelIds(parseDocument(textOf(input)));
}
