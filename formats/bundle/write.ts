/**
 * Writing bundles: the canonical JSON text (`type` and `version` first,
 * sorted keys, shortest round-trip numbers), each tensor converted to its
 * chosen storage and hashed.
 *
 * @module
 */

import { setOwn } from "../../core/_own.ts";
import {
  byteLengthOf,
  dtypeInfo,
  type DTypeName,
  encodeFromF32,
} from "../../core/dtypes.ts";
import { elementCount } from "../../core/errors.ts";
import type {
  ModelFile,
  NetworkConfig,
  TensorIndex,
  TensorInfo,
} from "../../core/model.ts";
import { quantizeAffine } from "../../core/quantize.ts";
import { type QuantParams, type Tensor, toFloat32 } from "../../core/tensor.ts";
import { toBase64 } from "../../core/_base64.ts";
import { PlainString, writeCanonical } from "./_json.ts";
import {
  descriptorDigest,
  rewrap,
  sha256,
  tensorsOf,
  where,
} from "./_common.ts";

/**
 * The `type` string every bundle starts with.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { BUNDLE_TYPE } from "@modelhost/modelhost/formats/bundle";
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
 * import { BUNDLE_VERSION } from "@modelhost/modelhost/formats/bundle";
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
 * import { BUNDLE_PRODUCER } from "@modelhost/modelhost/formats/bundle";
 * assert(BUNDLE_PRODUCER === "modelhost");
 * ```
 */
export const BUNDLE_PRODUCER = "modelhost";

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
 * import { saveBundleDefaults } from "@modelhost/modelhost/formats/bundle";
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
    setOwn(entries, name, entry);
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
  const weights: Record<string, unknown> = {
    encoding: "base64",
    tensors: entries,
  };
  if (options.checksums ?? saveBundleDefaults.checksums) {
    weights.sha256 = await descriptorDigest(entries);
  }
  const out: Record<string, unknown> = { id: m.id, metadata, weights };
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
 * import { saveBundleChunks } from "@modelhost/modelhost/formats/bundle";
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
 * import { saveBundle } from "@modelhost/modelhost/formats/bundle";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
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
