/**
 * Linear algebra kernels: `y = x · Wᵀ + b` with `W` stored `[out, in]`.
 * Every layer calls {@link linear} (or {@link linearMany}), which runs the
 * WebAssembly SIMD kernels of `kernels/fast` for the weight dtypes they
 * cover and the scalar reference otherwise. {@link linearRef} is the one
 * reference of the op (on plain F32 arrays: {@link matmulTransposedRef});
 * the fast kernels (`fastLinear`, `fastLinearMany`, `fastMatmulF32`) are
 * tested against it.
 *
 * @module
 */

import { type Tensor, toFloat32 } from "../core/tensor.ts";
import {
  checkLinearBias,
  checkLinearShapes,
  checkWeightBytes,
} from "./_linear_checks.ts";
import { state } from "./fast/_dispatch.ts";
import { engineLinear, engineLinearMany } from "./fast/_linear_engine.ts";
import {
  activationBlocksOf,
  dequantizeRowRef,
  type FastDType,
  isFastDType,
  quantizeActivationsRef,
  quantizedDotRef,
  roundToF16,
  rowBytes,
} from "./quant_ref.ts";
import { commonEngine, engineFor } from "./wasm/_shards.ts";
import { f32GemmBackendFor } from "./fast/backend.ts";
import { linearObserver, setLinearObserver } from "./_linear_observer.ts";

/** Options of {@link linearRef}. */
export interface LinearRefOptions {
  /**
   * Round the activations to F16 before a product with F16 weights, as
   * llama.cpp does (and as the fast kernels do when `configureKernels`
   * sets `roundF16Activations`).
   * @default {the `configureKernels` setting (`roundF16Activations`)}
   */
  roundF16Activations?: boolean;
}

/**
 * Reference `y = x · Wᵀ + b` for a weight in any of the fast kernels'
 * dtypes (`FAST_DTYPES`): the one reference of the op, the scalar twin of
 * {@link linear} and of `fastLinear`. F32/F16/BF16: decodes one weight
 * row at a time and accumulates in F64. Q8_0/Q4_0/Q4_K/Q6_K: quantizes
 * each input row as llama.cpp does (`quantizeActivationsRef`: Q8_0 blocks
 * of 32 or Q8_K blocks of 256) and takes integer dot products per block
 * (`quantizedDotRef`), summing the scaled blocks in F64.
 *
 * @param x Input rows, `rows × in`, row-major.
 * @param rows Number of rows.
 * @param w Weight tensor `[out, in]`.
 * @param bias Optional bias of length `out`.
 * @param options F16 rounding of the activations.
 * @returns The `rows × out` output.
 * @throws {TypeError} When shapes disagree.
 * @throws {RangeError} When the weight's bytes are short, or `in` is not a
 * whole number of blocks.
 * @throws {UnsupportedDTypeError} When the dtype has no row decoder.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { linearRef } from "@modelhost/modelhost/kernels";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const w = tensorFromF32("w", new Float32Array([1, 2, 3, 4]), [2, 2]);
 * const y = linearRef(new Float32Array([1, 1]), 1, w, new Float32Array([0.5, 0]));
 * assert(y[0] === 3.5 && y[1] === 7);
 * ```
 */
export function linearRef(
  x: Float32Array,
  rows: number,
  w: Tensor,
  bias?: Float32Array,
  options: LinearRefOptions = {},
): Float32Array {
  const [outF, inF] = checkLinearShapes(x, rows, w);
  checkLinearBias(w.name, outF, bias);
  const roundF16 = options.roundF16Activations ?? state.roundF16Activations;
  if (w.dtype === "F16" && roundF16) x = roundToF16(x);
  const out = new Float32Array(rows * outF);
  const blocks = activationBlocksOf(w.dtype);
  if (blocks) {
    rowBytes(w.dtype as FastDType, inF); // the block-size check
    const xq = quantizeActivationsRef(x, blocks);
    for (let r = 0; r < rows; r++) {
      for (let o = 0; o < outF; o++) {
        const s = quantizedDotRef(w.dtype, w.bytes, o, inF, xq, r * inF);
        out[r * outF + o] = bias ? s + bias[o] : s;
      }
    }
    return out;
  }
  // F32 rows are read in place when aligned; other dtypes (and short or
  // unaligned F32 bytes, which the decoder reports) decode row by row.
  const inPlace = w.dtype === "F32" && w.bytes.byteOffset % 4 === 0 &&
      w.bytes.byteLength >= outF * inF * 4
    ? new Float32Array(w.bytes.buffer, w.bytes.byteOffset, outF * inF)
    : null;
  let wr: Float32Array = new Float32Array(inF);
  for (let o = 0; o < outF; o++) {
    if (inPlace) wr = inPlace.subarray(o * inF, (o + 1) * inF);
    else dequantizeRowRef(w.dtype, w.bytes, o, inF, wr);
    for (let r = 0; r < rows; r++) {
      let s = 0;
      const xo = r * inF;
      for (let i = 0; i < inF; i++) s += x[xo + i] * wr[i];
      out[r * outF + o] = bias ? s + bias[o] : s;
    }
  }
  return out;
}

/**
 * Reference matmul with a transposed right side on plain F32 arrays,
 * `out[r, o] = Σ_i x[r, i] · w[o, i] (+ bias[o])`: {@link linearRef} on an
 * F32 view of `w` (the twin of `fastMatmulF32`).
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
 * import { matmulTransposedRef } from "@modelhost/modelhost/kernels";
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
  const t: Tensor = {
    name: "w",
    dtype: "F32",
    shape: [outF, inF],
    bytes: new Uint8Array(w.buffer, w.byteOffset, outF * inF * 4),
  };
  return linearRef(x.subarray(0, rows * inF), rows, t, bias);
}

/** Sees the input of every {@link linear} / {@link linearMany} call (see {@link observeLinearInputs}). */
export type LinearInputObserver = (
  w: Tensor,
  x: Float32Array,
  rows: number,
) => void;

/**
 * Installs a function that sees the input rows of every {@link linear} and
 * {@link linearMany} call with the weight they meet (what an importance
 * matrix is collected from), or removes it with `undefined`.
 *
 * @param fn The observer, or `undefined`.
 * @returns The observer it replaces.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { linear, observeLinearInputs } from "@modelhost/modelhost/kernels";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const seen: string[] = [];
 * const prev = observeLinearInputs((w, x) => seen.push(`${w.name}:${x.length}`));
 * linear(new Float32Array([5, 7]), 1, tensorFromF32("w", new Float32Array(4), [2, 2]));
 * observeLinearInputs(prev);
 * assert(seen[0] === "w:2");
 * ```
 */
export function observeLinearInputs(
  fn: LinearInputObserver | undefined,
): LinearInputObserver | undefined {
  return setLinearObserver(fn);
}

/**
 * `y = x · Wᵀ + b` for a weight tensor in any dtype with a decoder.
 * F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K and Q6_K weights (without affine
 * `quant` parameters) run the fast kernels of `kernels/fast/` (what
 * `fastLinear` runs), which keep the weight in its stored dtype (copied
 * once into kernel memory on first use; in-place edits are noticed by
 * sampling, see `fastLinear`), or {@link linearRef} where WebAssembly SIMD
 * is missing; so do IQ4_NL, IQ4_XS, MXFP4, IQ3_S and IQ2_XS weights, with
 * llama.cpp's integer dot rules (the scalar form is {@link linearRef});
 * other dtypes are widened to F32 and run the reference.
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
 * import { linear } from "@modelhost/modelhost/kernels";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
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
  linearObserver()?.(w, x, rows);
  if (isFastDType(w.dtype) && !w.quant) {
    checkLinearShapes(x, rows, w);
    checkLinearBias(w.name, outF, bias);
    checkWeightBytes(w, w.dtype, outF, inF);
    const native = w.dtype === "F32" && w.bytes.byteOffset % 4 === 0 &&
      f32GemmBackendFor(rows, inF, outF);
    if (native) {
      const wf = new Float32Array(
        w.bytes.buffer,
        w.bytes.byteOffset,
        outF * inF,
      );
      return native.gemm(x, rows, inF, wf, outF, bias);
    }
    const e = rows > 0 && outF > 0 && inF > 0 ? engineFor(w.bytes) : null;
    return e
      ? engineLinear(e, x, rows, w, outF, inF, bias)
      : linearRef(x, rows, w, bias);
  }
  // IQ4_NL, IQ4_XS, MXFP4, IQ3_S, IQ2_XS: llama.cpp's integer dot rules
  if (activationBlocksOf(w.dtype) && !w.quant) {
    return linearRef(x, rows, w, bias);
  }
  const wf = w.dtype === "F32" && !w.quant && w.bytes.byteOffset % 4 === 0
    ? new Float32Array(w.bytes.buffer, w.bytes.byteOffset, outF * inF)
    : toFloat32(w);
  return matmulTransposedRef(x, rows, inF, wf, outF, bias);
}

/**
 * Several `y_i = x · W_iᵀ + b_i` on the same input, as {@link linear} gives
 * them one by one (same values); quantized weights of one dtype with a
 * common input size (a layer's q/k/v, an MLP's gate/up) run as one job of
 * the fast kernels on one quantization of x (what `fastLinearMany` runs).
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
 * import { linearMany } from "@modelhost/modelhost/kernels";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
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
    // weights in different memories (models past 4 GiB) run one by one
    const e = commonEngine(ws.map((w) => w.bytes));
    const shared = e && engineLinearMany(e, x, rows, ws, biases);
    if (shared) {
      const seen = linearObserver();
      if (seen) { for (const w of ws) seen(w, x, rows); }
      return shared;
    }
  }
  return ws.map((w, i) => linear(x, rows, w, biases[i]));
}
