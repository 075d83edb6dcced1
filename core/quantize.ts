/**
 * Quantization with parameters: F32 values stored as small codes plus the
 * scales (and zero points) that turn the codes back into values, as the
 * `quant` field of a {@link Tensor} describes them
 * (`value = (code - zeroPoint) * scale`).
 *
 * - `I8` / `U8` affine: one scale and zero point per tensor, or one per slice
 *   along axis 0 (per output channel of a `[out, in]` weight); symmetric
 *   (zero point in the middle of the code range, scale from the largest
 *   magnitude) or asymmetric (the range min..max, widened to hold 0).
 * - `F4` E2M1 with one scale per block of consecutive values (32 by default):
 *   the scale maps the block's largest magnitude to ±6, the largest F4 code,
 *   so both ends of the code range are used, 0 stays exactly 0, and no code
 *   is NaN (F4 has none).
 *
 * Scales are F32 numbers, so a writer that stores them as F32 keeps them
 * exactly and reading gives back the same values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { quantizeAffine, toFloat32 } from "@modelhost/modelhost";
 * const w = new Float32Array([0.5, -1, 0.25, 2]);
 * const q = quantizeAffine("w", w, [2, 2], { dtype: "I8", granularity: "channel", symmetric: true });
 * const back = toFloat32(q);
 * assert(Math.abs(back[3] - 2) < 1e-6 && q.bytes.length === 4);
 * ```
 *
 * @module
 */

import { f4e2m1 } from "./_minifloat.ts";
import { roundHalfEven } from "./dtypes.ts";
import { elementCount } from "./errors.ts";
import type { QuantParams, Tensor } from "./tensor.ts";

/** Options of {@link quantizeAffine}. */
export interface QuantizeAffineOptions {
  /** Code type: `I8` or `U8` (affine), or `F4` (E2M1 with block scales). */
  dtype: "I8" | "U8" | "F4";
  /**
   * `I8`/`U8`: one scale for the whole tensor, or one per slice along axis 0
   * (per output channel).
   * @default {"tensor"}
   */
  granularity?: "tensor" | "channel";
  /**
   * `I8`/`U8`: when true the zero point is the middle code (0 for I8, 128 for
   * U8) and the scale is `max|x| / 127`; when false the codes span
   * `min(x, 0)..max(x, 0)` with a zero point that makes 0 exact.
   * @default {false}
   */
  symmetric?: boolean;
  /** `F4`: values per scale block. @default {32} */
  blockSize?: number;
}

/**
 * The defaults of the optional {@link QuantizeAffineOptions} fields.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { quantizeAffineDefaults } from "@modelhost/modelhost";
 * assert(quantizeAffineDefaults.blockSize === 32);
 * ```
 */
export const quantizeAffineDefaults = {
  granularity: "tensor",
  symmetric: false,
  blockSize: 32,
} as const satisfies Omit<QuantizeAffineOptions, "dtype">;

/**
 * Old name of {@link QuantizeAffineOptions}.
 *
 * @deprecated Use {@link QuantizeAffineOptions}; this alias goes in the next
 * release.
 */
export type QuantizeOptions = QuantizeAffineOptions;

/**
 * Old name of {@link quantizeAffineDefaults}.
 *
 * @deprecated Use {@link quantizeAffineDefaults}; this alias goes in the next
 * release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { quantizeDefaults } from "@modelhost/modelhost";
 * assert(quantizeAffineDefaults.symmetric === false);
 * ```
 */
export const quantizeDefaults: typeof quantizeAffineDefaults =
  quantizeAffineDefaults;

/** The largest F4 E2M1 magnitude; block scales map each block's max to it. */
const F4_MAX = 6;

/**
 * Quantizes F32 values into a stored tensor with `quant` parameters
 * (affine I8/U8 codes, or F4 codes with block scales). Not to be confused
 * with the GGUF block quantizer `quantizeGguf` of `formats/gguf`, which
 * writes ggml blocks (Q8_0, Q4_K, ...) whose scales live inside the bytes.
 *
 * @param name The tensor's name (used in error messages and kept on the result).
 * @param values The values, row-major; every one must be finite.
 * @param shape The dimensions; their product must equal `values.length`.
 * @param options Code type and granularity.
 * @returns A {@link Tensor} whose `bytes` hold the codes and whose `quant`
 * holds the scales (per tensor: numbers; per channel or block: Float32Arrays).
 * @throws {TypeError} When a value is NaN or infinite, the shape does not
 * fit the values, or an option is invalid.
 * @throws {RangeError} When an F4 tensor has an odd number of elements (two
 * codes share a byte).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { quantizeAffine, toFloat32 } from "@modelhost/modelhost";
 * const w = new Float32Array(64).map((_, i) => Math.sin(i));
 * const q = quantizeAffine("w", w, [2, 32], { dtype: "F4" });
 * assert(q.bytes.length === 32 && (q.quant!.scale as Float32Array).length === 2);
 * assert(Math.abs(toFloat32(q)[5] - w[5]) < 0.1);
 * ```
 */
export function quantizeAffine(
  name: string,
  values: Float32Array,
  shape: number[],
  options: QuantizeAffineOptions,
): Tensor {
  const n = elementCount(shape, `tensor "${name}"`);
  if (n !== values.length) {
    throw new TypeError(
      `Cannot quantize tensor "${name}": shape [${
        shape.join(", ")
      }] holds ${n} values, got ${values.length}`,
    );
  }
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(values[i])) {
      throw new TypeError(
        `Cannot quantize tensor "${name}": value ${
          values[i]
        } at index ${i} is not finite`,
      );
    }
  }
  const { dtype } = options;
  if (dtype === "F4") return quantizeF4(name, values, shape, options);
  if (dtype !== "I8" && dtype !== "U8") {
    throw new TypeError(
      `Cannot quantize tensor "${name}" to ${dtype}: supported code types are I8, U8, F4`,
    );
  }
  return quantizeInt(name, values, shape, dtype, options);
}

/**
 * Old name of {@link quantizeAffine}.
 *
 * @deprecated Use {@link quantizeAffine}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { quantize } from "@modelhost/modelhost";
 * const q = quantize("w", new Float32Array([1, -1]), [2], { dtype: "I8", symmetric: true });
 * assert(q.dtype === "I8" && q.bytes.length === 2);
 * ```
 */
export const quantize: typeof quantizeAffine = quantizeAffine;

function quantizeInt(
  name: string,
  values: Float32Array,
  shape: number[],
  dtype: "I8" | "U8",
  options: QuantizeAffineOptions,
): Tensor {
  const granularity = options.granularity ?? quantizeAffineDefaults.granularity;
  const symmetric = options.symmetric ?? quantizeAffineDefaults.symmetric;
  if (granularity !== "tensor" && granularity !== "channel") {
    throw new TypeError(
      `Cannot quantize tensor "${name}": granularity must be "tensor" or "channel", got "${granularity}"`,
    );
  }
  const n = values.length;
  const channels = granularity === "channel" && shape.length > 0 ? shape[0] : 1;
  const inner = channels === 0 ? 0 : n / channels;
  const [qmin, qmax] = dtype === "I8" ? [-128, 127] : [0, 255];
  const codes = dtype === "I8" ? new Int8Array(n) : new Uint8Array(n);
  const scales = new Float32Array(channels);
  const zeros = new Float32Array(channels);
  for (let c = 0; c < channels; c++) {
    const start = c * inner, end = start + inner;
    let lo = 0, hi = 0;
    for (let i = start; i < end; i++) {
      const x = values[i];
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
    let scale: number, zp: number;
    if (symmetric) {
      zp = (qmin + qmax + 1) / 2; // 0 for I8, 128 for U8
      scale = Math.fround(Math.max(-lo, hi) / 127);
    } else {
      scale = Math.fround((hi - lo) / (qmax - qmin));
    }
    if (!(scale > 0)) scale = 1; // all zeros (or below F32 resolution)
    if (!symmetric) {
      zp = Math.min(qmax, Math.max(qmin, roundHalfEven(qmin - lo / scale)));
    }
    scales[c] = scale;
    zeros[c] = zp!;
    for (let i = start; i < end; i++) {
      const q = roundHalfEven(values[i] / scale) + zp!;
      codes[i] = q < qmin ? qmin : q > qmax ? qmax : q;
    }
  }
  const bytes = new Uint8Array(codes.buffer);
  const omitZero = zeros.every((z) => z === 0);
  let quant: QuantParams;
  if (granularity === "channel" && shape.length > 0) {
    quant = omitZero
      ? { scale: scales, axis: 0 }
      : { scale: scales, zeroPoint: zeros, axis: 0 };
  } else {
    quant = omitZero
      ? { scale: scales[0] }
      : { scale: scales[0], zeroPoint: zeros[0] };
  }
  return { name, dtype, shape: [...shape], bytes, quant };
}

function quantizeF4(
  name: string,
  values: Float32Array,
  shape: number[],
  options: QuantizeAffineOptions,
): Tensor {
  const bs = options.blockSize ?? quantizeAffineDefaults.blockSize;
  if (!Number.isSafeInteger(bs) || bs < 1) {
    throw new TypeError(
      `Cannot quantize tensor "${name}" to F4: blockSize must be a positive integer, got ${bs}`,
    );
  }
  const n = values.length;
  if (n % 2 !== 0) {
    throw new RangeError(
      `Cannot quantize tensor "${name}" to F4: ${n} values, F4 packs two per byte so the count must be even`,
    );
  }
  const blocks = Math.ceil(n / bs);
  const scales = new Float32Array(blocks);
  const scaled = new Float32Array(n);
  for (let b = 0; b < blocks; b++) {
    const start = b * bs, end = Math.min(n, start + bs);
    let amax = 0;
    for (let i = start; i < end; i++) {
      amax = Math.max(amax, Math.abs(values[i]));
    }
    let scale = Math.fround(amax / F4_MAX);
    if (!(scale > 0)) scale = 1; // an all-zero block: codes 0, scale unused
    scales[b] = scale;
    // Values just above 6 after the F32 scale rounding saturate to the code 6.
    for (let i = start; i < end; i++) scaled[i] = values[i] / scale;
  }
  return {
    name,
    dtype: "F4",
    shape: [...shape],
    bytes: f4e2m1.fromF32(scaled),
    quant: { scale: scales, blockSize: bs },
  };
}

/** How far an approximation is from a reference, as {@link errorStats} measures it. */
export interface ErrorStats {
  /** Cosine similarity of the two vectors (1 = same direction). */
  cosine: number;
  /** Largest absolute difference of one element. */
  maxAbsError: number;
  /** Root mean square of the differences. */
  rmsError: number;
}

/**
 * Measures the error of an approximation of a vector: cosine similarity,
 * largest absolute difference, root mean square difference. Sums run in
 * double precision.
 *
 * @param reference The exact values.
 * @param approx The approximation, same length.
 * @returns The three measures.
 * @throws {TypeError} When the lengths differ.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { errorStats } from "@modelhost/modelhost/core";
 * const s = errorStats(new Float32Array([1, 0]), new Float32Array([1, 0.5]));
 * assert(s.maxAbsError === 0.5 && Math.abs(s.cosine - 0.894427) < 1e-6);
 * ```
 */
export function errorStats(
  reference: Float32Array,
  approx: Float32Array,
): ErrorStats {
  if (reference.length !== approx.length) {
    throw new TypeError(
      `Cannot compare ${approx.length} values with a reference of ${reference.length}`,
    );
  }
  let dot = 0, na = 0, nb = 0, sq = 0, maxAbsError = 0;
  for (let i = 0; i < reference.length; i++) {
    const a = reference[i], b = approx[i];
    dot += a * b;
    na += a * a;
    nb += b * b;
    const d = Math.abs(a - b);
    sq += d * d;
    if (d > maxAbsError) maxAbsError = d;
  }
  return {
    cosine: dot / Math.sqrt(na * nb),
    maxAbsError,
    rmsError: Math.sqrt(sq / Math.max(1, reference.length)),
  };
}
