/**
 * Normalization kernels, per row of a `rows × cols` array. `layerNorm` and
 * the `Ref` twins compute their statistics in double precision; `rmsNorm`
 * runs the WebAssembly SIMD kernel of `kernels/fast` (F32 statistics)
 * where it is available and falls back to {@link rmsNormRef}, the one RMSNorm
 * reference (`fastRmsNorm` is tested against it too).
 *
 * @module
 */

import { engineRmsNorm } from "./fast/_ops_engine.ts";
import { getEngine } from "./wasm/_engine.ts";

/**
 * Rows shorter than this run the scalar loop: copying them into kernel
 * memory costs more than the loop. The choice depends on the row length
 * only, so a row gives the same result alone or in a batch.
 */
const FAST_MIN_COLS = 16;

function check(x: Float32Array, rows: number, cols: number, what: string) {
  if (x.length !== rows * cols) {
    throw new RangeError(
      `Cannot apply ${what}: ${x.length} values do not form ${rows} rows × ${cols} columns`,
    );
  }
}

/**
 * Layer normalization: `(x − mean) / √(var + ε) · weight + bias` per row,
 * with the biased variance (as PyTorch's `LayerNorm`).
 *
 * @param x Input, row-major.
 * @param rows Number of rows.
 * @param cols Features per row.
 * @param weight Per-feature scale (length `cols`).
 * @param bias Per-feature shift (length `cols`), or undefined for none.
 * @param epsilon Added to the variance.
 * @returns The normalized rows.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { layerNorm } from "@modelhost/modelhost/kernels";
 * const y = layerNorm(new Float32Array([1, 3]), 1, 2, new Float32Array([1, 1]), undefined, 0);
 * assert(y[0] === -1 && y[1] === 1);
 * ```
 */
export function layerNorm(
  x: Float32Array,
  rows: number,
  cols: number,
  weight: Float32Array,
  bias: Float32Array | undefined,
  epsilon: number,
): Float32Array {
  check(x, rows, cols, "layer norm");
  const out = new Float32Array(x.length);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let mean = 0;
    for (let i = 0; i < cols; i++) mean += x[o + i];
    mean /= cols;
    let v = 0;
    for (let i = 0; i < cols; i++) {
      const d = x[o + i] - mean;
      v += d * d;
    }
    const inv = 1 / Math.sqrt(v / cols + epsilon);
    for (let i = 0; i < cols; i++) {
      const n = (x[o + i] - mean) * inv * weight[i];
      out[o + i] = bias ? n + bias[i] : n;
    }
  }
  return out;
}

/**
 * RMS normalization: `x / √(mean(x²) + ε) · weight` per row (Llama's RMSNorm),
 * on the WebAssembly SIMD kernel (`fastRmsNorm`: F32 sums, relative error
 * about 1e-7) for rows of 16 values or more, else {@link rmsNormRef}.
 *
 * @param x Input, row-major.
 * @param rows Number of rows.
 * @param cols Features per row.
 * @param weight Per-feature scale (length `cols`).
 * @param epsilon Added to the mean square.
 * @returns The normalized rows.
 * @throws {RangeError} When `x` does not hold `rows × cols` values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { rmsNorm } from "@modelhost/modelhost/kernels";
 * const x = new Float32Array(32).fill(2);
 * const y = rmsNorm(x, 1, 32, new Float32Array(32).fill(0.5), 0);
 * assert(Math.abs(y[31] - 0.5) < 1e-6);
 * ```
 */
export function rmsNorm(
  x: Float32Array,
  rows: number,
  cols: number,
  weight: Float32Array,
  epsilon: number,
): Float32Array {
  check(x, rows, cols, "RMS norm");
  const e = cols >= FAST_MIN_COLS && rows > 0 && weight.length === cols
    ? getEngine()
    : null;
  if (e) return engineRmsNorm(e, x, cols, weight, epsilon);
  return rmsNormRef(x, rows, cols, weight, epsilon);
}

/**
 * Reference RMS normalization: `x / √(mean(x²) + ε) · weight` per row, the
 * mean square in double precision (the scalar twin of {@link rmsNorm}).
 *
 * @param x Input, row-major.
 * @param rows Number of rows.
 * @param cols Features per row.
 * @param weight Per-feature scale (length `cols`).
 * @param epsilon Added to the mean square.
 * @returns The normalized rows.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { rmsNormRef } from "@modelhost/modelhost/kernels";
 * const y = rmsNormRef(new Float32Array([3, 4]), 1, 2, new Float32Array([1, 2]), 0);
 * assert(Math.abs(y[1] - 8 / Math.sqrt(12.5)) < 1e-6);
 * ```
 */
export function rmsNormRef(
  x: Float32Array,
  rows: number,
  cols: number,
  weight: Float32Array,
  epsilon: number,
): Float32Array {
  check(x, rows, cols, "RMS norm");
  const out = new Float32Array(x.length);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let ss = 0;
    for (let i = 0; i < cols; i++) ss += x[o + i] * x[o + i];
    const inv = 1 / Math.sqrt(ss / cols + epsilon);
    for (let i = 0; i < cols; i++) out[o + i] = x[o + i] * inv * weight[i];
  }
  return out;
}
