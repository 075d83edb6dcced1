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
import { type Engine, getEngine, PANEL } from "../wasm/_engine.ts";
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
import { runShared, runSplit, state, touchAfter } from "./_dispatch.ts";
import {
  GEMM_MIN_IN,
  GEMM_NR,
  gemmPackedWBytes,
  gemmPackedXBytes,
} from "../wasm/_kernels_gemm.ts";
import {
  activationRule,
  META_ARRAYS,
  READ_MARGIN,
  SEGMENT_BYTES,
} from "../wasm/_kernels_quant.ts";

const XQ = 32; // activation quantization block

function checkShapes(
  x: Float32Array,
  rows: number,
  w: Tensor,
): [number, number] {
  if (w.shape.length !== 2) {
    throw new TypeError(
      `Weight "${w.name}" must be 2-D [out, in], has shape [${
        w.shape.join(", ")
      }]`,
    );
  }
  const [outF, inF] = w.shape;
  if (!Number.isInteger(rows) || rows < 0 || x.length !== rows * inF) {
    throw new TypeError(
      `Cannot apply "${w.name}" [${outF}, ${inF}]: input has ${x.length} values, expected ${rows} × ${inF}`,
    );
  }
  return [outF, inF];
}

function checkBias(name: string, outF: number, bias?: Float32Array): void {
  if (bias && bias.length !== outF) {
    throw new TypeError(
      `Cannot apply "${name}": bias has ${bias.length} values, expected ${outF}`,
    );
  }
}

function checkBytes(w: Tensor, dtype: FastDType, outF: number, inF: number) {
  const need = outF * rowBytes(dtype, inF);
  if (w.bytes.byteLength < need) {
    throw new RangeError(
      `Cannot read weight "${w.name}": ${dtype} [${outF}, ${inF}] needs ${need} bytes, has ${w.bytes.byteLength}`,
    );
  }
}

/**
 * Reference `y = x · Wᵀ + b` for a weight in any {@link FAST_DTYPES} dtype,
 * the scalar twin of {@link fastLinear}. F32/F16/BF16: decodes one weight
 * row at a time and accumulates in F64. Q8_0/Q4_0/Q4_K/Q6_K: quantizes
 * each input row as llama.cpp does (`quantizeActivationsRef`: Q8_0 blocks
 * of 32 or Q8_K blocks of 256) and takes integer dot products per block
 * (`quantizedDotRef`), summing the scaled blocks in F64.
 *
 * @param x Input rows, `rows × in`, row-major.
 * @param rows Number of rows.
 * @param w Weight tensor `[out, in]`.
 * @param bias Optional bias of length `out`.
 * @returns The `rows × out` output.
 * @throws {TypeError} When shapes disagree.
 * @throws {RangeError} When the weight's bytes are short, or `in` is not a
 * whole number of blocks.
 * @throws {UnsupportedDTypeError} When the dtype has no row decoder.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { linearRef } from "./matmul.ts";
 * import { tensorFromF32 } from "../../core/tensor.ts";
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
): Float32Array {
  const [outF, inF] = checkShapes(x, rows, w);
  checkBias(w.name, outF, bias);
  if (w.dtype === "F16" && state.roundF16Activations) x = roundToF16(x);
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
  const wr = new Float32Array(inF);
  for (let o = 0; o < outF; o++) {
    dequantizeRowRef(w.dtype, w.bytes, o, inF, wr);
    for (let r = 0; r < rows; r++) {
      let s = 0;
      const xo = r * inF;
      for (let i = 0; i < inF; i++) s += x[xo + i] * wr[i];
      out[r * outF + o] = bias ? s + bias[o] : s;
    }
  }
  return out;
}

const DENSE_KIND: Partial<Record<FastDType, "f32" | "f16" | "bf16">> = {
  F32: "f32",
  F16: "f16",
  BF16: "bf16",
};

const QUANT_KIND: Partial<
  Record<FastDType, "q8_0" | "q4_0" | "q4_k" | "q6_k">
> = {
  Q8_0: "q8_0",
  Q4_0: "q4_0",
  Q4_K: "q4_k",
  Q6_K: "q6_k",
};

/** Chunk (elements along `in`) of a dense kind's panels. */
const CHUNK = { f32: 4, f16: 8, bf16: 8 } as const;

function padBias(
  e: Engine,
  outF: number,
  cols: number,
  bias?: Float32Array,
): number {
  const n = Math.ceil(outF / cols) * cols;
  const bp = e.scratch("bias", n * 4);
  const f = e.f32;
  f.fill(0, bp >> 2, (bp >> 2) + n);
  if (bias) f.set(bias, bp >> 2);
  return bp;
}

function copyIn(e: Engine, name: string, x: Float32Array): number {
  const p = e.scratch(name, x.byteLength + 64);
  e.f32.set(x, p >> 2);
  return p;
}

function copyOut(e: Engine, p: number, n: number): Float32Array {
  return e.f32.slice(p >> 2, (p >> 2) + n);
}

/**
 * F32 on the outer-product GEMM kernels (`kernels/wasm/_kernels_gemm.ts`):
 * W packed once into panels of 8 outputs, x packed per call into panels
 * of 5 rows, threads split the W panels.
 */
function f32Gemm(
  e: Engine,
  key: object,
  wBytes: Uint8Array,
  x: Float32Array,
  rows: number,
  outF: number,
  inF: number,
  bias?: Float32Array,
): Float32Array {
  const panels = Math.ceil(outF / GEMM_NR);
  const res = e.resident(key, "f32-gemm-panels", wBytes, (en) => {
    const size = gemmPackedWBytes(outF, inF);
    const ptr = en.alloc(size);
    en.u8.fill(0, ptr, ptr + size); // padding rows of the last panel stay zero
    // staged through scratch in chunks of whole panels
    const step = GEMM_NR *
      Math.max(1, Math.floor((1 << 22) / (inF * 4 * GEMM_NR)));
    for (let o0 = 0; o0 < outF; o0 += step) {
      const n = Math.min(step, outF - o0);
      const src = en.scratch("wsrc", n * inF * 4);
      en.u8.set(wBytes.subarray(o0 * inF * 4, (o0 + n) * inF * 4), src);
      en.fn.f32_gemm_pack_w(src, ptr + gemmPackedWBytes(o0, inF), n, inF);
    }
    return { ptr, size, owned: true };
  });
  const xs = copyIn(e, "x", x);
  const xBytes = gemmPackedXBytes(rows, inF);
  const xp = e.scratch("xpack", xBytes + 64);
  e.u8.fill(0, xp, xp + xBytes); // rows past the last stay zero
  e.fn.f32_gemm_pack_x(xs, xp, rows, inF);
  const y = e.scratch("y", rows * outF * 4 + 64);
  const bp = padBias(e, outF, GEMM_NR, bias);
  runSplit(e, "f32_gemm", rows * inF * outF, panels, (p0, p1) => [
    xp,
    res.ptr,
    y,
    bp,
    rows,
    inF,
    outF,
    p0,
    p1,
  ]);
  return copyOut(e, y, rows * outF);
}

function denseLinear(
  e: Engine,
  kind: "f32" | "f16" | "bf16",
  key: object,
  wBytes: Uint8Array,
  x: Float32Array,
  rows: number,
  outF: number,
  inF: number,
  bias?: Float32Array,
): Float32Array {
  if (kind === "f32" && inF >= GEMM_MIN_IN) {
    return f32Gemm(e, key, wBytes, x, rows, outF, inF, bias);
  }
  const { rows: R, cols: C } = PANEL;
  const chunk = CHUNK[kind];
  const kn = Math.ceil(inF / chunk);
  const panels = Math.ceil(outF / C);
  const elemBytes = kind === "f32" ? 4 : 2;
  const res = e.resident(key, `${kind}-panels`, wBytes, (en) => {
    const size = panels * kn * C * 16;
    const ptr = en.alloc(size);
    const src = en.scratch("wsrc", outF * inF * elemBytes);
    en.u8.set(wBytes.subarray(0, outF * inF * elemBytes), src);
    en.u8.fill(0, ptr, ptr + size); // padding rows of the last panel stay zero
    en.fn[`${kind}_pack_w`](src, ptr, outF, inF, kn);
    return { ptr, size, owned: true };
  });
  const xs = copyIn(e, "x", x);
  const xp = e.scratch("xpack", Math.ceil(rows / R) * R * kn * chunk * 4 + 64);
  e.fn[`${kind}_pack_x`](xs, xp, rows, inF, kn);
  const y = e.scratch("y", rows * outF * 4 + 64);
  const bp = padBias(e, outF, C, bias);
  runSplit(e, `${kind}_mm`, rows * inF * outF, panels, (p0, p1) => [
    xp,
    res.ptr,
    y,
    bp,
    rows,
    kn,
    outF,
    p0,
    p1,
  ]);
  return copyOut(e, y, rows * outF);
}

/**
 * The kernel-memory address of a quantized weight, read in ggml's block
 * layout: in place when its bytes already live in kernel memory (see
 * `allocateKernelBytes`), else copied there once.
 */
function residentQuant(
  e: Engine,
  dtype: FastDType,
  w: Tensor,
  outF: number,
  inF: number,
): number {
  const kind = QUANT_KIND[dtype]!;
  const size = outF * rowBytes(dtype, inF);
  const res = e.resident(w.bytes, kind, w.bytes, (en) => {
    if (en.owns(w.bytes)) {
      return { ptr: w.bytes.byteOffset, size: 0, owned: false };
    }
    const ptr = en.alloc(size);
    en.u8.set(w.bytes.subarray(0, size), ptr);
    return { ptr, size, owned: true };
  });
  return res.ptr;
}

/** x quantized for the quantized kernels (int8 codes, i16 codes, metadata). */
interface QuantizedX {
  q8: number;
  q16: number;
  meta: number;
}

/** Quantizes x by the activation rule of `kind` (Q8_0 or Q8_K blocks). */
function quantizeActs(
  e: Engine,
  kind: string,
  x: Float32Array,
  rows: number,
  inF: number,
): QuantizedX {
  const nb = inF / XQ;
  const xs = copyIn(e, "x", x);
  const q8 = e.scratch("xq8", rows * inF + 64);
  const q16 = e.scratch("xq16", rows * inF * 2 + 64);
  const meta = e.scratch("xmeta", rows * nb * 4 * META_ARRAYS + 64);
  e.fn[activationRule(kind) === "q8_0" ? "quantize_x" : "quantize_xk"](
    xs,
    rows,
    inF,
    q8,
    q16,
    meta,
  );
  return { q8, q16, meta };
}

/**
 * Weight streams per chunk of a quantized job: a thread takes the rows of
 * its chunk from this many evenly spaced places in turn, so the core's
 * prefetchers follow several streams of weight bytes at once. SmolLM-135M
 * Q8_0 decode on 2 threads (7 alternating rounds in one process) measured
 * 76 tok/s with 1, 83 with 2, 84 with 3 and 4, 78 with 8.
 */
const WEIGHT_STREAMS = 4;

/**
 * Output rows per grab of a shared quantized job: about 16 grabs per
 * thread (so a late or slow thread costs at most a sixteenth of its
 * share), each of at least 16 KiB of weights (so the atomic grab costs
 * little beside it).
 */
function chunkRows(total: number, parts: number, rowBytes: number): number {
  if (parts === 1) return total;
  const rows = Math.ceil(total / (parts * 16));
  return Math.max(rows, Math.ceil(16384 / rowBytes), 1);
}

/**
 * Quantized weights `ptrs[i]` (`outs[i] × inF`, kind `kind`) on one
 * already quantized x, as one job whose threads share the output rows of
 * all of them.
 */
function quantJob(
  e: Engine,
  kind: string,
  dtype: FastDType,
  ptrs: number[],
  outs: number[],
  xq: QuantizedX,
  rows: number,
  inF: number,
  biases: (Float32Array | undefined)[],
): Float32Array[] {
  const n = ptrs.length;
  const total = outs.reduce((a, b) => a + b, 0);
  const y = e.scratch("y", rows * total * 4 + 64);
  const bp = e.scratch("bias", total * 4 + 64);
  const desc = e.scratch("qdesc", n * SEGMENT_BYTES + 64);
  const counter = e.scratch("counter", 64);
  const f = e.f32;
  f.fill(0, bp >> 2, (bp >> 2) + total);
  const d = new Int32Array(f.buffer, desc, n * 4);
  let off = 0;
  for (let i = 0; i < n; i++) {
    if (biases[i]) f.set(biases[i]!, (bp >> 2) + off);
    d[4 * i] = ptrs[i];
    d[4 * i + 1] = y + rows * off * 4;
    d[4 * i + 2] = bp + off * 4;
    d[4 * i + 3] = outs[i];
    off += outs[i];
  }
  new Int32Array(f.buffer, counter, 1)[0] = 0;
  const rb = rowBytes(dtype, inF);
  const ranges = ptrs.flatMap((p, i) => [p, outs[i] * rb]);
  const fn = kind === "q8_0" && e.u8Dot && state.u8Dot
    ? "q8_0u_mm"
    : `${kind}_mm`;
  runShared(e, fn, rows * inF * total, total, (parts, part) => [
    desc,
    n,
    xq.q8,
    xq.q16,
    xq.meta,
    rows,
    inF,
    counter,
    Math.max(
      state.chunkRows || chunkRows(total, parts, rb),
      Math.ceil(total / 32768),
    ),
    total,
    rb * total >= state.readAheadMinBytes
      ? Math.max(0, f.buffer.byteLength - READ_MARGIN)
      : 0,
    part > 0 ? 1 : 0,
    WEIGHT_STREAMS,
  ], () => touchAfter(e, ptrs[0], ranges));
  off = 0;
  return outs.map((o) => {
    const out = copyOut(e, y + rows * off * 4, rows * o);
    off += o;
    return out;
  });
}

function quantLinear(
  e: Engine,
  dtype: FastDType,
  w: Tensor,
  x: Float32Array,
  rows: number,
  outF: number,
  inF: number,
  bias?: Float32Array,
): Float32Array {
  const kind = QUANT_KIND[dtype]!;
  const ptr = residentQuant(e, dtype, w, outF, inF);
  const xq = quantizeActs(e, kind, x, rows, inF);
  return quantJob(e, kind, dtype, [ptr], [outF], xq, rows, inF, [bias])[0];
}

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
 * import { fastLinear } from "./matmul.ts";
 * import { tensorFromF32 } from "../../core/tensor.ts";
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
  const [outF, inF] = checkShapes(x, rows, w);
  checkBias(w.name, outF, bias);
  if (!isFastDType(w.dtype) || w.quant) {
    throw new TypeError(
      `No fast kernel for weight "${w.name}" of dtype ${w.dtype}${
        w.quant ? " with affine quantization" : ""
      }: supported are F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K`,
    );
  }
  const dtype = w.dtype;
  checkBytes(w, dtype, outF, inF);
  const e = getEngine();
  if (!e || rows === 0 || outF === 0 || inF === 0) {
    return linearRef(x, rows, w, bias);
  }
  const dense = DENSE_KIND[dtype];
  if (dtype === "F16" && state.roundF16Activations) x = roundToF16(x);
  if (dense) {
    return denseLinear(e, dense, w.bytes, w.bytes, x, rows, outF, inF, bias);
  }
  return quantLinear(e, dtype, w, x, rows, outF, inF, bias);
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
 * import { fastLinearMany } from "./matmul.ts";
 * import { tensorFromF32 } from "../../core/tensor.ts";
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
  const e = getEngine();
  const inF = ws[0]?.shape[1];
  const dtype = ws[0]?.dtype;
  const kind = dtype === undefined ? undefined : QUANT_KIND[dtype as FastDType];
  const shared = e !== null && ws.length > 1 && rows > 0 && inF > 0 &&
    kind !== undefined &&
    ws.every((w) => {
      if (w.dtype !== dtype || w.quant || w.shape.length !== 2) return false;
      return w.shape[1] === inF && w.shape[0] > 0;
    });
  if (!shared) return ws.map((w, i) => fastLinear(x, rows, w, biases[i]));
  const dt = dtype as FastDType;
  ws.forEach((w, i) => {
    const [outF] = checkShapes(x, rows, w);
    checkBias(w.name, outF, biases[i]);
    checkBytes(w, dt, outF, inF);
  });
  // Every weight resident first, then x quantized once for all of them.
  const ptrs = ws.map((w) => residentQuant(e, dt, w, w.shape[0], inF));
  const xq = quantizeActs(e, kind, x, rows, inF);
  const outs = ws.map((w) => w.shape[0]);
  return quantJob(e, kind, dt, ptrs, outs, xq, rows, inF, biases);
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
 * import { fastMatmulF32 } from "./matmul.ts";
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
  const t: Tensor = {
    name: "w",
    dtype: "F32",
    shape: [outF, inF],
    bytes: new Uint8Array(w.buffer, w.byteOffset, outF * inF * 4),
  };
  const xs = x.length === rows * inF ? x : x.subarray(0, rows * inF);
  const e = getEngine();
  if (!e || rows === 0 || outF === 0 || inF === 0) {
    return linearRef(xs, rows, t, bias);
  }
  checkBias("w", outF, bias);
  return denseLinear(e, "f32", w, t.bytes, xs, rows, outF, inF, bias);
}

/**
 * Drops the kernel-memory copy of a weight, so the next call uploads its
 * bytes again (needed only when the bytes were changed in place).
 *
 * @param w The weight tensor (or the F32 array given to {@link fastMatmulF32}).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastLinear, forgetWeight } from "./matmul.ts";
 * import { tensorFromF32 } from "../../core/tensor.ts";
 * const data = new Float32Array([1, 0, 0, 1]);
 * const w = tensorFromF32("w", data, [2, 2]);
 * fastLinear(new Float32Array([2, 3]), 1, w);
 * data[0] = 5;
 * forgetWeight(w);
 * assert(fastLinear(new Float32Array([2, 3]), 1, w)[0] === 10);
 * ```
 */
export function forgetWeight(w: Tensor | Float32Array): void {
  const e = getEngine();
  if (!e) return;
  e.forget(w instanceof Float32Array ? w : w.bytes);
}
