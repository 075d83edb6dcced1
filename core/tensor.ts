/**
 * Stored tensors (raw bytes in a dtype) and the F32 arrays that forward
 * passes compute on.
 *
 * @module
 */

import {
  byteLengthOf,
  decodeToF32,
  dtypeInfo,
  type DTypeName,
} from "./dtypes.ts";
import { elementCount } from "./errors.ts";

/**
 * Parameters that turn stored integer or low-precision codes into real
 * values: `value = (code - zeroPoint) * scale`.
 *
 * - `scale` a number: one scale for the whole tensor.
 * - `scale` an array and no `blockSize`: one scale per slice along `axis`
 *   (per output channel with the default axis 0).
 * - `blockSize` set: one scale per run of `blockSize` consecutive elements
 *   (used by F4 with block scales).
 */
export interface QuantParams {
  /** One scale, or one per channel / block. */
  scale: number | Float32Array;
  /** Code that maps to 0; a number, one per channel, or absent (0). */
  zeroPoint?: number | Float32Array;
  /** Axis the per-channel arrays run along. @default {0} */
  axis?: number;
  /** Elements per block when scales are per block. */
  blockSize?: number;
}

/** A tensor as stored: raw little-endian bytes in its dtype. */
export interface Tensor {
  /** The tensor's name (a path such as `layers.0.weight`). */
  name: string;
  /** Element type of `bytes`. */
  dtype: DTypeName;
  /** Dimensions, outermost first (row-major). */
  shape: number[];
  /** The stored bytes, a view into the file's buffer where alignment allowed. */
  bytes: Uint8Array;
  /** Affine or block quantization applied on top of the dtype's codes. */
  quant?: QuantParams;
}

/** A dense F32 array with a shape: what layers consume and produce. */
export interface FloatTensor {
  /** Dimensions, outermost first; the last is the feature dimension. */
  shape: number[];
  /** Row-major values; `data.length` equals the product of `shape`. */
  data: Float32Array;
}

/**
 * Creates a {@link FloatTensor}, checking that the data fits the shape.
 *
 * @param data The values.
 * @param shape The dimensions.
 * @returns The tensor.
 * @throws {TypeError} When `data.length` is not the product of `shape`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { floatTensor } from "@modelhost/modelhost/core";
 * const x = floatTensor(new Float32Array(6), [2, 3]);
 * assert(x.shape[1] === 3);
 * ```
 */
export function floatTensor(data: Float32Array, shape: number[]): FloatTensor {
  const n = elementCount(shape, "float tensor");
  if (n !== data.length) {
    throw new TypeError(
      `Cannot shape ${data.length} values as [${
        shape.join(", ")
      }]: that shape holds ${n}`,
    );
  }
  return { data, shape };
}

/**
 * Number of elements of a tensor.
 *
 * @param t A stored or float tensor (anything with a shape).
 * @returns The product of its dimensions.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { numel } from "@modelhost/modelhost/core";
 * assert(numel({ shape: [4, 8] }) === 32);
 * ```
 */
export function numel(t: { shape: readonly number[] }): number {
  return elementCount(t.shape, "tensor");
}

function checkCount(
  name: string,
  what: string,
  arr: Float32Array | number | undefined,
  need: number,
  context: string,
): void {
  if (typeof arr === "object" && arr.length !== need) {
    throw new TypeError(
      `Cannot dequantize tensor "${name}": ${arr.length} ${what}, expected ${need} (${context})`,
    );
  }
}

function applyQuant(
  name: string,
  values: Float32Array,
  shape: number[],
  q: QuantParams,
): Float32Array {
  const n = values.length;
  const zps = q.zeroPoint;
  if (typeof q.scale === "number") {
    if (typeof zps === "object") {
      throw new TypeError(
        `Cannot dequantize tensor "${name}": one scale but ${zps.length} zero points`,
      );
    }
    const z = zps ?? 0;
    for (let i = 0; i < n; i++) values[i] = (values[i] - z) * q.scale;
    return values;
  }
  const scales = q.scale;
  if (q.blockSize !== undefined) {
    const bs = q.blockSize;
    if (!Number.isSafeInteger(bs) || bs < 1) {
      throw new TypeError(
        `Cannot dequantize tensor "${name}": blockSize must be a positive integer, got ${bs}`,
      );
    }
    const blocks = Math.ceil(n / bs);
    const why = `${n} elements in blocks of ${bs}`;
    checkCount(name, "block scales", scales, blocks, why);
    checkCount(name, "block zero points", zps, blocks, why);
    for (let b = 0; b < blocks; b++) {
      const s = scales[b];
      const z = zps === undefined ? 0 : typeof zps === "number" ? zps : zps[b];
      const end = Math.min(n, (b + 1) * bs);
      for (let i = b * bs; i < end; i++) values[i] = (values[i] - z) * s;
    }
    return values;
  }
  const axis = q.axis ?? 0;
  if (!Number.isInteger(axis) || axis < 0 || axis >= shape.length) {
    throw new TypeError(
      `Cannot dequantize tensor "${name}": per-channel axis ${axis} is outside shape [${
        shape.join(", ")
      }]`,
    );
  }
  const dim = shape[axis];
  let inner = 1;
  for (let i = axis + 1; i < shape.length; i++) inner *= shape[i];
  const why = `axis ${axis} of shape [${shape.join(", ")}]`;
  checkCount(name, "per-channel scales", scales, dim, why);
  checkCount(name, "per-channel zero points", zps, dim, why);
  const outer = dim * inner === 0 ? 0 : n / (dim * inner);
  let i = 0;
  for (let o = 0; o < outer; o++) {
    for (let c = 0; c < dim; c++) {
      const s = scales[c];
      const z = zps === undefined ? 0 : typeof zps === "number" ? zps : zps[c];
      for (let k = 0; k < inner; k++, i++) values[i] = (values[i] - z) * s;
    }
  }
  return values;
}

/**
 * Widens a stored tensor to F32, applying its quantization parameters.
 *
 * @param t The tensor.
 * @returns A new Float32Array with one value per element.
 * @throws {RangeError} When `bytes` is shorter than dtype × shape needs.
 * @throws {UnsupportedDTypeError} When the dtype has no decoder.
 * @throws {TypeError} When the quantization parameters do not fit the shape
 * (count of scales or zero points, axis).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { toFloat32 } from "@modelhost/modelhost/core";
 * const t = {
 *   name: "w", dtype: "I8" as const, shape: [2],
 *   bytes: new Uint8Array([2, 254]), quant: { scale: 0.5 },
 * };
 * const v = toFloat32(t);
 * assert(v[0] === 1 && v[1] === -1);
 * ```
 */
export function toFloat32(t: Tensor): Float32Array {
  const n = elementCount(t.shape, `tensor "${t.name}"`);
  const need = byteLengthOf(dtypeInfo(t.dtype), n);
  if (t.bytes.byteLength < need) {
    throw new RangeError(
      `Cannot read tensor "${t.name}": ${t.dtype} [${
        t.shape.join(", ")
      }] needs ${need} bytes, has ${t.bytes.byteLength}`,
    );
  }
  const values = decodeToF32(t.dtype, t.bytes, n);
  return t.quant ? applyQuant(t.name, values, t.shape, t.quant) : values;
}

/**
 * Wraps F32 values as a stored F32 tensor (no copy when already aligned).
 *
 * @param name Tensor name.
 * @param values The values.
 * @param shape The dimensions; their product must equal `values.length`.
 * @returns A {@link Tensor} with dtype F32.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { tensorFromF32, toFloat32 } from "@modelhost/modelhost/core";
 * const t = tensorFromF32("b", new Float32Array([1, 2]), [2]);
 * assert(toFloat32(t)[1] === 2);
 * ```
 */
export function tensorFromF32(
  name: string,
  values: Float32Array,
  shape: number[],
): Tensor {
  floatTensor(values, shape);
  return {
    name,
    dtype: "F32",
    shape: [...shape],
    bytes: new Uint8Array(values.buffer, values.byteOffset, values.byteLength),
  };
}
