/**
 * A residual connection and the LayerNorm after it in one call,
 * `LayerNorm(a + b)` per row: what every post-norm (BERT-family) block does
 * twice. The WebAssembly SIMD kernel (F32 sums, rows split over the kernel
 * threads) runs where available and the row length is a multiple of 4;
 * otherwise the sum then `layerNorm` of `./norms.ts`, the reference it is
 * tested against.
 *
 * @module
 */

import { engineAddLayerNorm } from "./fast/_ops_engine.ts";
import { layerNorm } from "./norms.ts";
import { getEngine } from "./wasm/_engine.ts";

/**
 * `LayerNorm(a + b)` per row of `cols` values: `(s − mean)/√(var + ε)·weight + bias`
 * with `s = a + b`.
 *
 * @param a Rows, `rows × cols`.
 * @param b Rows added to `a`, same length.
 * @param rows Number of rows.
 * @param cols Values per row.
 * @param weight Per-feature scale, length `cols`.
 * @param bias Optional per-feature shift, length `cols`.
 * @param epsilon Added to the variance.
 * @returns The normalized sums, a new array (`a` and `b` are unchanged).
 * @throws {RangeError} When the sizes disagree.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { addLayerNorm } from "@modelhost/modelhost/kernels";
 * const y = addLayerNorm(new Float32Array([0, 1, 2, 3]), new Float32Array(4).fill(1), 1, 4,
 *   new Float32Array(4).fill(1), undefined, 0);
 * assert(Math.abs(y[0] + Math.sqrt(1.8)) < 1e-5 && Math.abs(y[0] + y[3]) < 1e-6);
 * ```
 */
export function addLayerNorm(
  a: Float32Array,
  b: Float32Array,
  rows: number,
  cols: number,
  weight: Float32Array,
  bias: Float32Array | undefined,
  epsilon: number,
): Float32Array {
  if (
    a.length !== rows * cols || b.length !== a.length ||
    weight.length !== cols || (bias && bias.length !== cols)
  ) {
    throw new RangeError(
      `Cannot apply add + layer norm: ${a.length} and ${b.length} values for ${rows}×${cols}, weight ${weight.length}, bias ${
        bias?.length ?? "none"
      }`,
    );
  }
  const e = cols % 4 === 0 && rows > 0 && cols >= 16 ? getEngine() : null;
  if (e) {
    return engineAddLayerNorm(
      e,
      a,
      b,
      cols,
      weight,
      bias ?? new Float32Array(cols),
      epsilon,
    );
  }
  const s = new Float32Array(a.length);
  for (let i = 0; i < s.length; i++) s[i] = a[i] + b[i];
  return layerNorm(s, rows, cols, weight, bias, epsilon);
}
