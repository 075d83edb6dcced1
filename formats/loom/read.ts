/**
 * Loom model entries to modelhost models: the weight blob (`jsonModelB64`
 * or `multiPrecisionB64`) decoded, then converted with its config.
 *
 * @module
 */

import { ownValue } from "../../core/_own.ts";
import { checkJsonDepth } from "../../core/_json_depth.ts";
import { decodeToF32 } from "../../core/dtypes.ts";
import { memoryTensorIndex, type Model } from "../../core/model.ts";
import type { Tensor } from "../../core/tensor.ts";
import { fromBase64 } from "../../core/_base64.ts";
import {
  convert,
  isObject,
  type LoomReadOptions,
  type Obj,
  shown,
  type WeightSource,
} from "./config.ts";

/**
 * The weight layouts Loom writes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { LOOM_WEIGHT_FORMATS } from "@modelhost/modelhost/formats/loom";
 * assert(LOOM_WEIGHT_FORMATS.includes("jsonModelB64"));
 * ```
 */
export const LOOM_WEIGHT_FORMATS: readonly string[] = [
  "jsonModelB64",
  "multiPrecisionB64",
];

function jsonSource(ctx: { model: string }): WeightSource {
  return {
    read(entry, field, count, tensor) {
      const v = entry?.[field];
      if (v === undefined || v === null) return undefined;
      if (!Array.isArray(v)) {
        throw new TypeError(
          `Cannot read Loom tensor "${tensor}" of model "${ctx.model}": "${field}" must be an array of numbers, got ${
            shown(v)
          }`,
        );
      }
      if (v.length === 0) return undefined;
      if (v.length !== count) {
        throw new RangeError(
          `Cannot read Loom tensor "${tensor}" of model "${ctx.model}": "${field}" needs ${count} values, got ${v.length}`,
        );
      }
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) {
        const x = v[i];
        if (typeof x !== "number") {
          throw new TypeError(
            `Cannot read Loom tensor "${tensor}" of model "${ctx.model}": "${field}"[${i}] is ${
              shown(x)
            }, not a number`,
          );
        }
        out[i] = x;
      }
      return out;
    },
  };
}

/** Bytes per element of Loom's multi-precision dtypes (0.5 for the nibble types). */
const LOOM_DTYPE_BYTES: Readonly<Record<string, number>> = {
  float32: 4,
  float64: 8,
  float16: 2,
  bfloat16: 2,
  float8: 1,
  float4: 0.5,
  int4: 0.5,
  int8: 1,
  int16: 2,
  int32: 4,
  int64: 8,
  uint8: 1,
  uint16: 2,
  uint32: 4,
  uint64: 8,
};

/** Loom's own E4M3 decoding (no NaN code; exponent 0 read as a normal). */
function loomFloat8(b: number): number {
  if ((b & 0x7f) === 0) return 0;
  const sign = b & 0x80 ? -1 : 1;
  const e = (b >> 3) & 0x0f;
  const m = b & 0x07;
  return sign * 2 ** (e - 7) * (1 + m / 8);
}

/**
 * Decodes one Loom multi-precision array (little-endian bytes) to F32 with
 * the formulas of Loom's `DecodeSliceWithDType`.
 */
function decodeLoom(
  bytes: Uint8Array,
  dtype: string,
  scale: number,
  count: number,
): Float32Array {
  const out = new Float32Array(count);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const f32 = Math.fround;
  switch (dtype) {
    case "float32":
      for (let i = 0; i < count; i++) out[i] = dv.getFloat32(i * 4, true);
      break;
    case "float64":
      for (let i = 0; i < count; i++) out[i] = dv.getFloat64(i * 8, true);
      break;
    case "float16":
      return decodeToF32("F16", bytes, count);
    case "bfloat16":
      return decodeToF32("BF16", bytes, count);
    case "float8":
      for (let i = 0; i < count; i++) out[i] = loomFloat8(bytes[i]);
      break;
    case "float4": {
      const s = f32(scale);
      for (let i = 0; i < count; i++) {
        const q = i % 2 === 0 ? bytes[i >> 1] >> 4 : bytes[i >> 1] & 0x0f;
        out[i] = f32(f32(q / 7.5) - 1) * s;
      }
      break;
    }
    case "int4": {
      const k = f32(8 / scale);
      for (let i = 0; i < count; i++) {
        const q = i % 2 === 0 ? bytes[i >> 1] >> 4 : bytes[i >> 1] & 0x0f;
        out[i] = (q - 8) * k;
      }
      break;
    }
    case "int8":
      for (let i = 0; i < count; i++) out[i] = dv.getInt8(i) / scale;
      break;
    case "int16":
      for (let i = 0; i < count; i++) out[i] = dv.getInt16(i * 2, true) / scale;
      break;
    case "int32":
      for (let i = 0; i < count; i++) out[i] = dv.getInt32(i * 4, true) / scale;
      break;
    case "int64":
      for (let i = 0; i < count; i++) {
        out[i] = Number(dv.getBigInt64(i * 8, true)) / scale;
      }
      break;
    case "uint8":
      for (let i = 0; i < count; i++) out[i] = bytes[i] / 127.5 - 1;
      break;
    case "uint16":
      for (let i = 0; i < count; i++) {
        out[i] = dv.getUint16(i * 2, true) / 32767.5 - 1;
      }
      break;
    case "uint32":
      for (let i = 0; i < count; i++) {
        out[i] = dv.getUint32(i * 4, true) / 2147483647.5 - 1;
      }
      break;
    case "uint64":
      for (let i = 0; i < count; i++) {
        out[i] = Number(dv.getBigUint64(i * 8, true)) / 9.223372e18 - 1;
      }
      break;
  }
  return out;
}

function multiPrecisionSource(
  ctx: { model: string },
  dtype: string,
  scale: number,
): WeightSource {
  return {
    read(entry, field, count, tensor) {
      const v = entry?.[field];
      if (v === undefined || v === null || v === "") return undefined;
      const where = `Loom tensor "${tensor}" of model "${ctx.model}"`;
      if (typeof v !== "string") {
        throw new TypeError(
          `Cannot read ${where}: "${field}" must be a base64 string, got ${
            shown(v)
          }`,
        );
      }
      const dt = typeof entry?.dtype === "string" && entry.dtype !== ""
        ? entry.dtype
        : dtype;
      const size = ownValue(LOOM_DTYPE_BYTES, dt);
      if (size === undefined) {
        throw new TypeError(
          `Cannot read ${where}: unknown Loom dtype ${shown(dt)} (known: ${
            Object.keys(LOOM_DTYPE_BYTES).join(", ")
          })`,
        );
      }
      let bytes: Uint8Array;
      try {
        bytes = fromBase64(v);
      } catch (e) {
        throw new SyntaxError(
          `Cannot read ${where}: "${field}" is not valid base64 (${
            (e as Error).message
          })`,
        );
      }
      const need = Math.ceil(count * size);
      if (bytes.length !== need) {
        throw new RangeError(
          `Cannot read ${where}: ${count} ${dt} values need ${need} bytes, "${field}" holds ${bytes.length}`,
        );
      }
      return decodeLoom(bytes, dt, scale, count);
    },
  };
}

function decodeBlob(model: string, data: unknown): unknown {
  if (typeof data !== "string") {
    throw new TypeError(
      `Cannot read Loom model "${model}": weights.data must be a base64 string, got ${
        shown(data)
      }`,
    );
  }
  let bytes: Uint8Array;
  try {
    bytes = fromBase64(data);
  } catch (e) {
    throw new SyntaxError(
      `Cannot read Loom model "${model}": weights.data is not valid base64 (${
        (e as Error).message
      })`,
    );
  }
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new SyntaxError(
      `Cannot read Loom model "${model}": weights.data does not hold JSON (${
        (e as Error).message
      })`,
    );
  }
  checkJsonDepth(v, `Loom model "${model}"`);
  return v;
}

/**
 * Converts one model entry of a Loom bundle (`{"id", "cfg", "weights":
 * {"fmt", "data"}}`) to a modelhost {@link Model} with F32 tensors named as
 * our layers expect. Called by `loadBundle` for entries whose weights have
 * an `fmt`.
 *
 * @param entry The model entry as parsed JSON.
 * @param id The model id.
 * @param options Conversion options.
 * @returns The model; `metadata.loom` keeps Loom's `fmt`, `dtype`,
 * `batch_size` and `seed`.
 * @throws {TypeError} On an unknown `fmt`, a layer or activation with no
 * equivalent, or a malformed entry (messages name the model and layer).
 * @throws {SyntaxError} When a blob is not base64 or not JSON.
 * @throws {RangeError} When an array's length does not match the config.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readLoomModel } from "@modelhost/modelhost/formats/loom";
 * const blob = { type: "float32", dtype: "", layers: [{ kernel: [1, 2, 3, 4, 5, 6], biases: [0, 1] }] };
 * const data = btoa(JSON.stringify(blob));
 * const m = readLoomModel({
 *   id: "m",
 *   cfg: { grid_rows: 1, grid_cols: 1, layers_per_cell: 1,
 *     layers: [{ type: "dense", activation: "linear", input_height: 3, output_height: 2 }] },
 *   weights: { fmt: "jsonModelB64", data },
 * }, "m");
 * const w = await m.tensors.load("layers.0.weight");
 * // Loom's kernel is [in][out]: row i holds input i's weights to outputs 0 and 1.
 * assert(new Float32Array(w.bytes.buffer).join() === "1,3,5,2,4,6");
 * ```
 */
export function readLoomModel(
  entry: Record<string, unknown>,
  id: string,
  options: LoomReadOptions = {},
): Model {
  const weights = entry.weights as Obj;
  const fmt = weights.fmt;
  const blob = decodeBlob(id, weights.data);
  if (!isObject(blob) || !Array.isArray(blob.layers)) {
    throw new TypeError(
      `Cannot read Loom model "${id}": the weights blob needs a "layers" array`,
    );
  }
  let source: WeightSource;
  const loom: Obj = { fmt };
  if (fmt === "jsonModelB64") {
    source = jsonSource({ model: id });
    if (typeof blob.type === "string" && blob.type) loom.type = blob.type;
  } else if (fmt === "multiPrecisionB64") {
    const dtype = typeof blob.dtype === "string" && blob.dtype
      ? blob.dtype
      : "float32";
    const scale = typeof blob.scale === "number" && blob.scale !== 0
      ? blob.scale
      : 1;
    source = multiPrecisionSource({ model: id }, dtype, scale);
    loom.dtype = dtype;
    loom.scale = scale;
  } else {
    throw new TypeError(
      `Cannot read Loom model "${id}": unknown weights.fmt ${
        shown(fmt)
      } (known: ${LOOM_WEIGHT_FORMATS.join(", ")})`,
    );
  }
  const tensors = new Map<string, Tensor>();
  const config = convert(
    { model: id, weights: source, tensors, options },
    entry.cfg,
    blob.layers,
  );
  const cfg = entry.cfg as Obj;
  for (const f of ["dtype", "batch_size", "seed"]) {
    if (cfg[f] !== undefined && cfg[f] !== "" && cfg[f] !== 0) loom[f] = cfg[f];
  }
  return {
    id,
    config,
    metadata: { converted_from: "loom", loom },
    tensors: memoryTensorIndex(tensors.values()),
  };
}
