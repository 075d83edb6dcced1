/**
 * Linear algebra kernels: `y = x · Wᵀ + b` with `W` stored `[out, in]`.
 * These are the scalar reference versions (`_ref` twins of the fast
 * kernels); every layer calls {@link linear}, which dispatches to the fastest
 * available implementation.
 *
 * @module
 */

import { type Tensor, toFloat32 } from "../core/tensor.ts";
import { fastLinear, fastLinearMany } from "./fast/matmul.ts";
import { isFastDType } from "./fast/quant_ref.ts";

/**
 * Reference matmul with a transposed right side: `out[r, o] = Σ_i x[r, i] · w[o, i] (+ bias[o])`.
 *
 * @param x Input rows, `rows × inF`, row-major.
 * @param rows Number of input rows.
 * @param inF Input features.
 * @param w Weights `outF × inF`, row-major.
 * @param outF Output features.
 * @param bias Optional bias of length `outF`.
 * @returns The `rows × outF` output.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { matmulTransposedRef } from "./linear.ts";
 * const y = matmulTransposedRef(new Float32Array([1, 2]), 1, 2, new Float32Array([3, 4, 5, 6]), 2);
 * assert(y[0] === 11 && y[1] === 17);
 * ```
 */
export function matmulTransposedRef(
  x: Float32Array,
  rows: number,
  inF: number,
  w: Float32Array,
  outF: number,
  bias?: Float32Array,
): Float32Array {
  if (x.length < rows * inF || w.length < outF * inF) {
    throw new RangeError(
      `Cannot multiply: x has ${x.length} values for ${rows}×${inF}, w has ${w.length} for ${outF}×${inF}`,
    );
  }
  const out = new Float32Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    const xo = r * inF;
    for (let o = 0; o < outF; o++) {
      const wo = o * inF;
      let s = 0;
      for (let i = 0; i < inF; i++) s += x[xo + i] * w[wo + i];
      out[r * outF + o] = bias ? s + bias[o] : s;
    }
  }
  return out;
}

/**
 * `y = x · Wᵀ + b` for a weight tensor in any dtype with a decoder.
 * F32, F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K weights (without affine
 * `quant` parameters) run the fast kernels of `kernels/fast/matmul.ts`,
 * which keep the weight in its stored dtype (copied once into kernel
 * memory on first use; in-place edits are noticed by sampling, see
 * `fastLinear`); other dtypes are widened to F32 and run the reference loop.
 *
 * @param x Input rows, `rows × in`.
 * @param rows Number of rows.
 * @param w Weight tensor of shape `[out, in]`.
 * @param bias Optional bias of length `out`.
 * @returns The `rows × out` output.
 * @throws {TypeError} When `w` is not 2-D or `x` does not hold `rows × in` values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { linear } from "./linear.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const w = tensorFromF32("w", new Float32Array([1, 0, 0, 1]), [2, 2]);
 * const y = linear(new Float32Array([5, 7]), 1, w);
 * assert(y[0] === 5 && y[1] === 7);
 * ```
 */
export function linear(
  x: Float32Array,
  rows: number,
  w: Tensor,
  bias?: Float32Array,
): Float32Array {
  if (w.shape.length !== 2) {
    throw new TypeError(
      `Weight "${w.name}" must be 2-D [out, in], has shape [${
        w.shape.join(", ")
      }]`,
    );
  }
  const [outF, inF] = w.shape;
  if (x.length !== rows * inF) {
    throw new TypeError(
      `Cannot apply "${w.name}" [${outF}, ${inF}]: input has ${x.length} values, expected ${rows} × ${inF}`,
    );
  }
  if (isFastDType(w.dtype) && !w.quant) return fastLinear(x, rows, w, bias);
  const wf = w.dtype === "F32" && !w.quant && w.bytes.byteOffset % 4 === 0
    ? new Float32Array(w.bytes.buffer, w.bytes.byteOffset, outF * inF)
    : toFloat32(w);
  return matmulTransposedRef(x, rows, inF, wf, outF, bias);
}

/**
 * Several `y_i = x · W_iᵀ + b_i` on the same input, as {@link linear} gives
 * them one by one (same values); when every weight has a fast kernel they
 * go through `fastLinearMany`, which quantizes x once for quantized
 * weights of one dtype (a layer's q/k/v, an MLP's gate/up).
 *
 * @param x Input rows, `rows × in`.
 * @param rows Number of rows.
 * @param ws Weight tensors of shape `[out_i, in]`.
 * @param biases Optional biases, `biases[i]` of length `out_i`.
 * @returns One `rows × out_i` output per weight.
 * @throws {TypeError} When a weight is not 2-D or `x` does not hold `rows × in` values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { linearMany } from "./linear.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const a = tensorFromF32("a", new Float32Array([1, 0, 0, 1]), [2, 2]);
 * const b = tensorFromF32("b", new Float32Array([2, 2]), [1, 2]);
 * const [ya, yb] = linearMany(new Float32Array([5, 7]), 1, [a, b]);
 * assert(ya[1] === 7 && yb[0] === 24);
 * ```
 */
export function linearMany(
  x: Float32Array,
  rows: number,
  ws: Tensor[],
  biases: (Float32Array | undefined)[] = [],
): Float32Array[] {
  if (ws.every((w) => isFastDType(w.dtype) && !w.quant)) {
    for (const w of ws) {
      if (w.shape.length !== 2 || x.length !== rows * w.shape[1]) {
        return ws.map((w, i) => linear(x, rows, w, biases[i]));
      }
    }
    return fastLinearMany(x, rows, ws, biases);
  }
  return ws.map((w, i) => linear(x, rows, w, biases[i]));
}
