/**
 * Fast `y = x · Wᵀ + b` for weights stored `[out, in]` in F32, F16, BF16,
 * Q8_0, Q4_0, Q4_K or Q6_K, with scalar `_ref` twins.
 *
 * How the fast path works:
 * - Weights stay in their stored dtype. On first use a weight is copied
 *   once into kernel memory (F32/F16/BF16 repacked into panels of 4 rows,
 *   quantized blocks copied as they are) and reused by later calls;
 *   quantized weights whose bytes already live in kernel memory (see
 *   `allocateKernelBytes`; the Llama loaders put them there) are read in
 *   place, so no second copy exists.
 * - F32/F16/BF16: a register-blocked SIMD microkernel (2 x rows × 4 W rows,
 *   cache-blocked along the input dimension); 16-bit weights are widened in
 *   registers. With `roundF16Activations` F16 weights meet F16-rounded
 *   activations (llama.cpp's rule).
 * - Quantized weights, by llama.cpp's CPU rules: each activation row is
 *   first quantized to int8 codes, in Q8_0 blocks (32 values, scale
 *   `f16(max|x|/127)`) for Q8_0/Q4_0 weights and Q8_K blocks (256 values,
 *   F32 scale) for Q4_K/Q6_K, then dotted against the weight blocks as
 *   stored in exact integer SIMD, one F32 multiply-add of `d_w·d_x·dot`
 *   per block (per super-block for the K-quants). Where the engine's
 *   relaxed dot product reads its 7-bit operand as an unsigned byte
 *   without saturating (probed at start; x86 with AVX-VNNI), Q8_0 uses
 *   two dot instructions per block instead of four, with the same
 *   results. Weights are never widened to F32 in memory. Against the exact product the error is the
 *   activation rounding: per output at most `Σ_i |w_i|·d_i·0.563` for
 *   Q8_0 blocks, `Σ_i |w_i|·d_i/2` for Q8_K (`d_i = max|x|/127` of x_i's
 *   block), plus F32 rounding; against `linearRef` (the same rule) F32
 *   rounding only.
 * - Large calls are split by output rows across the worker threads
 *   configured with `configureKernels`: F32/F16/BF16 in equal parts,
 *   quantized weights in chunks that each thread takes from a shared
 *   atomic counter until none are left (so a thread that wakes late or
 *   runs slow on a busy machine takes fewer), the caller from the bottom,
 *   workers from the top. Quantized dot products touch the weight bytes a
 *   kilobyte ahead of where they read, the stand-in for a prefetch
 *   instruction that WebAssembly lacks. And as decoding runs the same
 *   jobs in the same order every token, each job remembers the one that
 *   followed it: a worker done with its part reads through the top
 *   megabyte of the predicted next job's weights while the caller works
 *   alone (norms, attention), so its first rows of that job come from
 *   cache.
 *
 * @module
 */

import type { Tensor } from "../../core/tensor.ts";
import { getEngine } from "../wasm/_engine.ts";
import { engineFor } from "../wasm/_shards.ts";
import { currentF32GemmBackend, f32GemmBackendFor } from "./backend.ts";
import { checkLinearBias, checkLinearShapes } from "../_linear_checks.ts";
import { linear, linearMany, linearRef } from "../linear.ts";
import { isFastDType } from "../quant_ref.ts";
import { engineMatmulF32 } from "./_linear_engine.ts";

export { linearRef, type LinearRefOptions } from "../linear.ts";

/**
 * Fast `y = x · Wᵀ + b` (see the module docs for how). Falls back to
 * {@link linearRef} where WebAssembly SIMD is unavailable.
 *
 * @param x Input rows, `rows × in`, row-major.
 * @param rows Number of rows (1 for decode).
 * @param w Weight tensor `[out, in]` in one of {@link FAST_DTYPES}, without
 * affine `quant` parameters. The kernel keeps a copy made on first use; a
 * change to the bytes is noticed by sampling (64 spread samples, or all
 * bytes up to 4 KiB) and re-uploads; after an edit that might miss the
 * samples call {@link forgetWeight}.
 * @param bias Optional bias of length `out`.
 * @returns The `rows × out` output, a new array.
 * @throws {TypeError} When shapes disagree or the dtype has no fast kernel.
 * @throws {RangeError} When the weight's bytes are short.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastLinear } from "@modelhost/modelhost/kernels/fast";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const w = tensorFromF32("w", new Float32Array([1, 2, 3, 4, 5, 6]), [3, 2]);
 * const y = fastLinear(new Float32Array([1, 1]), 1, w);
 * assert(y[0] === 3 && y[1] === 7 && y[2] === 11);
 * ```
 */
export function fastLinear(
  x: Float32Array,
  rows: number,
  w: Tensor,
  bias?: Float32Array,
): Float32Array {
  const [outF] = checkLinearShapes(x, rows, w);
  checkLinearBias(w.name, outF, bias);
  if (!isFastDType(w.dtype) || w.quant) {
    throw new TypeError(
      `No fast kernel for weight "${w.name}" of dtype ${w.dtype}${
        w.quant ? " with affine quantization" : ""
      }: supported are F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K`,
    );
  }
  return linear(x, rows, w, bias);
}

/**
 * Several `y_i = x · W_iᵀ + b_i` on the same input (a layer's q, k and v
 * projections, or an MLP's gate and up). Quantized weights (Q8_0, Q4_0,
 * Q4_K, Q6_K) of one dtype with a common input size share one
 * quantization of x and run as one job, the threads sharing out the output
 * rows of all of them; other weights run {@link fastLinear} one by one.
 * Each output equals what {@link fastLinear} gives for its weight alone.
 *
 * @param x Input rows, `rows × in`, row-major.
 * @param rows Number of rows.
 * @param ws Weight tensors `[out_i, in]`, as for {@link fastLinear}.
 * @param biases Optional biases, `biases[i]` of length `out_i` (or undefined).
 * @returns One `rows × out_i` output per weight.
 * @throws {TypeError} When shapes disagree or a dtype has no fast kernel.
 * @throws {RangeError} When a weight's bytes are short.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastLinearMany } from "@modelhost/modelhost/kernels/fast";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const a = tensorFromF32("a", new Float32Array([1, 2]), [1, 2]);
 * const b = tensorFromF32("b", new Float32Array([3, 4, 5, 6]), [2, 2]);
 * const [ya, yb] = fastLinearMany(new Float32Array([1, 1]), 1, [a, b]);
 * assert(ya[0] === 3 && yb[0] === 7 && yb[1] === 11);
 * ```
 */
export function fastLinearMany(
  x: Float32Array,
  rows: number,
  ws: Tensor[],
  biases: (Float32Array | undefined)[] = [],
): Float32Array[] {
  if (ws.some((w) => !isFastDType(w.dtype) || w.quant)) {
    return ws.map((w, i) => fastLinear(x, rows, w, biases[i]));
  }
  return linearMany(x, rows, ws, biases);
}

/**
 * Fast F32 `y = x · Wᵀ + b` on plain arrays, the fast twin of
 * `matmulTransposedRef` in `kernels/linear.ts`. `w` is kept resident
 * (keyed by the array object, changes noticed as in {@link fastLinear}).
 *
 * @param x Input rows, `rows × inF`.
 * @param rows Number of rows.
 * @param inF Input features.
 * @param w Weights `outF × inF`, row-major.
 * @param outF Output features.
 * @param bias Optional bias of length `outF`.
 * @returns The `rows × outF` output.
 * @throws {RangeError} When an array is shorter than its sizes say.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastMatmulF32 } from "@modelhost/modelhost/kernels/fast";
 * const y = fastMatmulF32(new Float32Array([1, 2]), 1, 2, new Float32Array([3, 4, 5, 6]), 2);
 * assert(y[0] === 11 && y[1] === 17);
 * ```
 */
export function fastMatmulF32(
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
  const xs = x.length === rows * inF ? x : x.subarray(0, rows * inF);
  const e = getEngine();
  if (!e || rows === 0 || outF === 0 || inF === 0) {
    const t: Tensor = {
      name: "w",
      dtype: "F32",
      shape: [outF, inF],
      bytes: new Uint8Array(w.buffer, w.byteOffset, outF * inF * 4),
    };
    return linearRef(xs, rows, t, bias);
  }
  checkLinearBias("w", outF, bias);
  const native = f32GemmBackendFor(rows, inF, outF);
  if (native) return native.gemm(xs, rows, inF, w, outF, bias);
  return engineMatmulF32(e, w, xs, rows, outF, inF, bias);
}

/**
 * Drops the kernel-memory copy of a weight, so the next call uploads its
 * bytes again (needed only when the bytes were changed in place), and
 * whatever the installed native backend keeps derived from it.
 *
 * @param w The weight tensor (or the F32 array given to {@link fastMatmulF32}).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastLinear, forgetWeight } from "@modelhost/modelhost/kernels/fast";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const data = new Float32Array([1, 0, 0, 1]);
 * const w = tensorFromF32("w", data, [2, 2]);
 * fastLinear(new Float32Array([2, 3]), 1, w);
 * data[0] = 5;
 * forgetWeight(w);
 * assert(fastLinear(new Float32Array([2, 3]), 1, w)[0] === 10);
 * ```
 */
export function forgetWeight(w: Tensor | Float32Array): void {
  const native = currentF32GemmBackend();
  if (native?.forget) {
    if (w instanceof Float32Array) native.forget(w);
    else if (w.dtype === "F32" && w.bytes.byteOffset % 4 === 0) {
      native.forget(
        new Float32Array(
          w.bytes.buffer,
          w.bytes.byteOffset,
          w.bytes.length >> 2,
        ),
      );
    }
  }
  const e = w instanceof Float32Array ? getEngine() : engineFor(w.bytes);
  if (!e) return;
  e.forget(w instanceof Float32Array ? w : w.bytes);
}
