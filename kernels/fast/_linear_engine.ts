/**
 * The WebAssembly path of `y = x · Wᵀ + b` (see `./matmul.ts` for how it
 * works): weights made resident in kernel memory, dense panels and GEMM
 * for F32/F16/BF16, activation quantization and shared quantized jobs for
 * Q8_0/Q4_0/Q4_K/Q6_K. No fallback here: `kernels/linear.ts` (`linear`,
 * `linearMany`) and `./matmul.ts` (`fastLinear`, ...) run the reference,
 * `linearRef`, where there is no engine.
 *
 * @module
 */

import type { Tensor } from "../../core/tensor.ts";
import { type Engine, PANEL } from "../wasm/_engine.ts";
import {
  checkLinearBias,
  checkLinearShapes,
  checkWeightBytes,
} from "../_linear_checks.ts";
import { type FastDType, roundToF16, rowBytes } from "../quant_ref.ts";
import {
  quantGrabRows,
  quantMmKernel,
  quantReadAhead,
  quantWeightStreams,
  runGemm,
  runShared,
  runSplit,
  state,
  threadSlots,
  touchAfter,
} from "./_dispatch.ts";
import {
  kquantGemmJob,
  useKquantGemm,
  zeroLastPanel,
} from "./_kquant_gemm_job.ts";
import {
  GEMM_MIN_IN,
  GEMM_NR,
  gemmPackedWBytes,
  gemmPackedXBytes,
} from "../wasm/_kernels_gemm.ts";
import {
  activationRule,
  META_ARRAYS,
  PREP_MIN_ROWS,
  SEGMENT_BYTES,
} from "../wasm/_kernels_quant.ts";
import { preparedBytes } from "../wasm/_kernels_quant_prep.ts";
import {
  QG_MR,
  QG_NR,
  quantGemmPackedXBytes,
  quantGemmScratchBytes,
} from "../wasm/_kernels_quant_gemm.ts";
import {
  QI_MR,
  quantIgemmPackedXBytes,
  quantIgemmScratchBytes,
} from "../wasm/_kernels_quant_igemm.ts";
import {
  QH_MR,
  quantHgemmPackedXBytes,
  quantHgemmScratchBytes,
} from "../wasm/_kernels_quant_q8gemm.ts";

const XQ = 32; // activation quantization block

const DENSE_KIND: Partial<Record<FastDType, "f32" | "f16" | "bf16">> = {
  F32: "f32",
  F16: "f16",
  BF16: "bf16",
};

const QUANT_KIND: Partial<
  Record<
    FastDType,
    | "q8_0"
    | "q4_0"
    | "q5_0"
    | "q4_k"
    | "q6_k"
    | "iq4_nl"
    | "mxfp4"
    | "iq4_xs"
    | "iq3_s"
    | "iq2_xs"
  >
> = {
  Q8_0: "q8_0",
  Q4_0: "q4_0",
  Q5_0: "q5_0",
  Q4_K: "q4_k",
  Q6_K: "q6_k",
  IQ4_NL: "iq4_nl",
  MXFP4: "mxfp4",
  IQ4_XS: "iq4_xs",
  IQ3_S: "iq3_s",
  IQ2_XS: "iq2_xs",
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
  // `slice` of a shared memory's view copies element by element (92 µs
  // for a 49152-logit head, against 19 µs for a new array and `set`)
  const out = new Float32Array(n);
  out.set(e.f32.subarray(p >> 2, (p >> 2) + n));
  return out;
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
  return quantizeActsAt(e, kind, copyIn(e, "x", x), rows, inF);
}

/** {@link quantizeActs} of the rows already in kernel memory at `xs`. */
function quantizeActsAt(
  e: Engine,
  kind: string,
  xs: number,
  rows: number,
  inF: number,
): QuantizedX {
  const nb = inF / XQ;
  const q8 = e.scratch("xq8", rows * inF + 64);
  const q16 = e.scratch("xq16", rows * inF * 2 + 64);
  const meta = e.scratch("xmeta", rows * nb * 4 * META_ARRAYS + 64);
  // rows are independent and each keeps its metadata together (4 arrays
  // of nb entries, META_ARRAYS), so a range of rows is the same call with
  // every pointer moved to its first row: the same bytes on any split
  runSplit(
    e,
    activationRule(kind) === "q8_0" ? "quantize_x" : "quantize_xk",
    rows * inF * 8,
    rows,
    (a, b) => [
      xs + a * inF * 4,
      b - a,
      inF,
      q8 + a * inF,
      q16 + a * inF * 2,
      meta + a * nb * 4 * META_ARRAYS,
    ],
  );
  return { q8, q16, meta };
}

/**
 * Most x rows for which Q8_0 jobs on the `q8_0s` path run the one-row
 * `q8_0t` kernels once per row instead (the same bits): a batched decode
 * step of SmolLM-135M's shape (AMD EPYC without AVX-VNNI, one thread)
 * measured 2 rows at 2.2–2.4× the CPU time of one on `q8_0s`, 4 rows at
 * 3.7×; the weights are read once per row, which costs less here than the
 * sign handling of `q8_0s`. One thread only: with more, the threads share
 * the memory bandwidth that reading the weights again would spend (not
 * measured).
 */
const Q8T_MAX_ROWS = 3;

/**
 * Quantized weights `ptrs[i]` (`outs[i] × inF`, kind `kind`) on one
 * already quantized x, as one job whose threads share the output rows of
 * all of them; one new `rows × outs[i]` array per weight.
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
  const total = outs.reduce((a, b) => a + b, 0);
  const y = e.scratch("y", rows * total * 4 + 64);
  const ys = outAddresses(y, rows, outs);
  quantJobAt(e, kind, dtype, ptrs, outs, xq, rows, inF, biases, ys);
  return outs.map((o, i) => copyOut(e, ys[i], rows * o));
}

/** Where each weight's `rows × outs[i]` output starts, side by side from `y`. */
function outAddresses(y: number, rows: number, outs: number[]): number[] {
  let off = 0;
  return outs.map((o) => {
    const at = y + rows * off * 4;
    off += o;
    return at;
  });
}

/**
 * {@link quantJob} writing weight i's `rows × outs[i]` output (plus its
 * bias) to kernel memory at `ys[i]`: the kernel, its arguments and the
 * split do not depend on where the outputs go, so the bits are the same.
 */
function quantJobAt(
  e: Engine,
  kind: string,
  dtype: FastDType,
  ptrs: number[],
  outs: number[],
  xq: QuantizedX,
  rows: number,
  inF: number,
  biases: (Float32Array | undefined)[],
  ys: number[],
): void {
  const n = ptrs.length;
  if (
    (kind === "q8_0" || kind === "q4_0") &&
    rows >= Math.max(2, gemmMinRows(e, kind))
  ) {
    quantGemmJob(e, kind, dtype, ptrs, outs, xq, rows, inF, biases, ys);
    return;
  }
  if (useKquantGemm(e, kind, rows, inF)) {
    kquantGemmJob(
      e,
      kind as "q4_k" | "q6_k" | "q5_0",
      rowBytes(dtype, inF),
      ptrs,
      outs,
      xq.q8,
      xq.meta,
      rows,
      inF,
      biases,
      ys,
    );
    return;
  }
  if (
    kind === "q8_0" && rows > 1 && rows <= Q8T_MAX_ROWS && state.threads <= 1 &&
    state.split5 &&
    e.fn.q8_split5 && !(e.u8Dot && state.u8Dot) && e.signDot && state.signDot
  ) {
    // A few rows: the one-row `q8_0t` kernels row by row (see Q8T_MAX_ROWS).
    const nb = inF / XQ;
    for (let r = 0; r < rows; r++) {
      quantJobAt(
        e,
        kind,
        dtype,
        ptrs,
        outs,
        {
          q8: xq.q8 + r * inF,
          q16: xq.q16 + r * inF * 2,
          meta: xq.meta + r * nb * 4 * META_ARRAYS,
        },
        1,
        inF,
        biases,
        ys.map((y, i) => y + r * outs[i] * 4),
      );
    }
    return;
  }
  const total = outs.reduce((a, b) => a + b, 0);
  // Q8_0 / Q4_0 with several x rows: each thread prepares weight rows in
  // its own scratch (see PREP_MIN_ROWS).
  const prepStride = (preparedBytes(inF / 32) + 63) & ~63;
  const prep = (kind === "q8_0" || kind === "q4_0") &&
      rows >= PREP_MIN_ROWS && state.prep
    ? e.scratch("qprep", prepStride * threadSlots(e))
    : 0;
  const bp = e.scratch("bias", total * 4 + 64);
  const desc = e.scratch("qdesc", n * SEGMENT_BYTES + 64);
  const counter = e.scratch("counter", 64);
  let q16 = xq.q16;
  let fn = quantMmKernel(e, kind);
  if (fn === "q8_0s_mm" && rows === 1 && state.split5 && e.fn.q8_split5) {
    // one x row: the q8_0t kernels (kernels/wasm/_kernels_quant_q8t.ts)
    q16 = e.scratch("xq5", inF * 2 + 64);
    e.fn.q8_split5(xq.q8, q16, inF);
    fn = "q8_0t_mm";
  }
  const f = e.f32;
  f.fill(0, bp >> 2, (bp >> 2) + total);
  const d = new Int32Array(f.buffer, desc, n * 4);
  let off = 0;
  for (let i = 0; i < n; i++) {
    if (biases[i]) f.set(biases[i]!, (bp >> 2) + off);
    d[4 * i] = ptrs[i];
    d[4 * i + 1] = ys[i];
    d[4 * i + 2] = bp + off * 4;
    d[4 * i + 3] = outs[i];
    off += outs[i];
  }
  new Int32Array(f.buffer, counter, 1)[0] = 0;
  const rb = rowBytes(dtype, inF);
  const ranges = ptrs.flatMap((p, i) => [p, outs[i] * rb]);
  runShared(e, fn, rows * inF * total, total, (parts, part) => [
    desc,
    n,
    xq.q8,
    q16,
    xq.meta,
    rows,
    inF,
    counter,
    quantGrabRows(total, parts, rb),
    total,
    quantReadAhead(e, rb * total),
    part > 0 ? 1 : 0,
    quantWeightStreams(),
    prep === 0 ? 0 : prep + part * prepStride,
  ], () => touchAfter(e, ptrs[0], ranges));
}

/** Least x rows for the GEMM (see `state.gemmMinRows`). */
function gemmMinRows(e: Engine, kind: "q8_0" | "q4_0"): number {
  if (state.gemmMinRows > 0) return state.gemmMinRows;
  const dots = (e.u8Dot && state.u8Dot) || (e.signDot && state.signDot);
  return kind === "q8_0" && dots ? 8 : 4;
}

/** x rows per chunk of a quantized GEMM job (see `quantGemmJob`). */
const GEMM_CHUNK_ROWS = 256;

/**
 * Q8_0 / Q4_0 weights on many x rows as a register-blocked GEMM: Q8_0
 * codes as i16 (`kernels/wasm/_kernels_quant_q8gemm.ts`), Q4_0 as bytes
 * (`_kernels_quant_igemm.ts`, relaxed module), or exact integer block
 * products in F32 (`_kernels_quant_gemm.ts`; `state.intGemm` off); the
 * same bits as `quantJob`'s dot products either way. x codes packed once,
 * each weight's panels of 8 rows split between the threads; weight i's
 * rows written at `ys[i]` (the kernels store only the outputs and rows
 * that exist).
 */
function quantGemmJob(
  e: Engine,
  kind: "q8_0" | "q4_0",
  dtype: FastDType,
  ptrs: number[],
  outs: number[],
  xq: QuantizedX,
  rows: number,
  inF: number,
  biases: (Float32Array | undefined)[],
  ys: number[],
): void {
  // Q4_0 as bytes where the relaxed module has the integer GEMM, else as
  // i16 like Q8_0; the F32 way where neither kernel is there
  const way = !state.intGemm
    ? "f32"
    : kind === "q4_0" && e.fn.q4_0_igemm
    ? "i8"
    : e.fn[`${kind}_hgemm`]
    ? "i16"
    : "f32";
  const ints = way === "i8";
  const packMr = ints ? QI_MR : way === "i16" ? QH_MR : QG_MR;
  const packBytes = ints ? 1 : way === "i16" ? 2 : 4;
  // rows in chunks, so that the packed x (4 bytes per code on the F32
  // way) stays small however long the prompt
  const chunk = Math.min(rows, GEMM_CHUNK_ROWS);
  const xBytes = way === "i8"
    ? quantIgemmPackedXBytes(chunk, inF)
    : way === "i16"
    ? quantHgemmPackedXBytes(chunk, inF)
    : quantGemmPackedXBytes(chunk, inF);
  const xp = e.scratch("qgx", xBytes + 64);
  const rb = rowBytes(dtype, inF);
  const stride =
    ((way === "i8"
      ? quantIgemmScratchBytes(inF)
      : way === "i16"
      ? quantHgemmScratchBytes(inF)
      : quantGemmScratchBytes(inF)) + 63) & ~63;
  const scr = e.scratch("qgscr", stride * threadSlots(e));
  for (let r0 = 0; r0 < rows; r0 += chunk) {
    const n = Math.min(chunk, rows - r0);
    // rows past the last stay zero
    zeroLastPanel(e, xp, n, packMr, packMr * inF * packBytes);
    // panels of MR rows at MR·inF codes of `packBytes` each: a range of
    // panels is the same call with both pointers moved (same bytes)
    runSplit(
      e,
      ints ? "qi_pack_x" : way === "i16" ? "qh_pack_x" : "qg_pack_x",
      n * inF * 4,
      Math.ceil(n / packMr),
      (q0, q1) => [
        xq.q8 + (r0 + q0 * packMr) * inF,
        xp + q0 * packMr * inF * packBytes,
        Math.min(q1 * packMr, n) - q0 * packMr,
        inF,
      ],
    );
    // quantize_x's metadata: 16 bytes per row and block of 32
    const meta = xq.meta + r0 * (inF / 32) * 16;
    ptrs.forEach((w, i) => {
      const outF = outs[i];
      const bp = padBias(e, outF, QG_NR, biases[i]);
      runGemm(
        e,
        ints ? "q4_0_igemm" : way === "i16" ? `${kind}_hgemm` : `${kind}_gemm`,
        n * inF * outF,
        Math.ceil(outF / QG_NR),
        [xp, meta, w, rb, ys[i] + r0 * outF * 4, bp, n, inF, outF],
        scr,
        stride,
      );
    });
  }
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
 * `y = x · Wᵀ + b` on the engine for a weight in one of the fast dtypes
 * (checked by the caller; `rows`, `outF` and `inF` positive). F16 weights
 * meet F16-rounded activations when `configureKernels` asks for it.
 *
 * @param e The engine.
 * @param x Input rows, `rows × inF`.
 * @param rows Number of rows.
 * @param w The weight, `[outF, inF]`, dtype in `FAST_DTYPES`, no `quant`.
 * @param outF Outputs.
 * @param inF Inputs.
 * @param bias Optional bias of length `outF`.
 * @returns The `rows × outF` output, a new array.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { engineLinear } from "./_linear_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const e = getEngine();
 * const w = tensorFromF32("w", new Float32Array([1, 2, 3, 4]), [2, 2]);
 * if (e) assert(engineLinear(e, new Float32Array([1, 1]), 1, w, 2, 2)[1] === 7);
 * ```
 */
export function engineLinear(
  e: Engine,
  x: Float32Array,
  rows: number,
  w: Tensor,
  outF: number,
  inF: number,
  bias?: Float32Array,
): Float32Array {
  const dtype = w.dtype as FastDType;
  const dense = DENSE_KIND[dtype];
  if (dtype === "F16" && state.roundF16Activations) x = roundToF16(x);
  if (dense) {
    return denseLinear(e, dense, w.bytes, w.bytes, x, rows, outF, inF, bias);
  }
  return quantLinear(e, dtype, w, x, rows, outF, inF, bias);
}

/**
 * Several quantized weights of one dtype and input size on one x, as one
 * job (x quantized once, the threads sharing out the output rows of all of
 * them), or `null` when the weights do not qualify (fewer than two, mixed
 * or unquantized dtypes, different input sizes, empty shapes): then the
 * caller runs them one by one.
 *
 * @param e The engine.
 * @param x Input rows, `rows × in`.
 * @param rows Number of rows.
 * @param ws The weights, `[out_i, in]`.
 * @param biases Optional biases, `biases[i]` of length `out_i`.
 * @returns One `rows × out_i` output per weight, or `null`.
 * @throws {TypeError} When shapes disagree.
 * @throws {RangeError} When a weight's bytes are short.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { engineLinearMany } from "./_linear_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const e = getEngine();
 * const w = tensorFromF32("w", new Float32Array(4), [2, 2]);
 * if (e) assert(engineLinearMany(e, new Float32Array(2), 1, [w, w]) === null); // F32: one by one
 * ```
 */
export function engineLinearMany(
  e: Engine,
  x: Float32Array,
  rows: number,
  ws: Tensor[],
  biases: (Float32Array | undefined)[] = [],
): Float32Array[] | null {
  const inF = ws[0]?.shape[1];
  const dtype = ws[0]?.dtype;
  const kind = dtype === undefined ? undefined : QUANT_KIND[dtype as FastDType];
  const shared = ws.length > 1 && rows > 0 && inF > 0 &&
    kind !== undefined &&
    ws.every((w) => {
      if (w.dtype !== dtype || w.quant || w.shape.length !== 2) return false;
      return w.shape[1] === inF && w.shape[0] > 0;
    });
  if (!shared) return null;
  const dt = dtype as FastDType;
  ws.forEach((w, i) => {
    const [outF] = checkLinearShapes(x, rows, w);
    checkLinearBias(w.name, outF, biases[i]);
    checkWeightBytes(w, dt, outF, inF);
  });
  // Every weight resident first, then x quantized once for all of them.
  const ptrs = ws.map((w) => residentQuant(e, dt, w, w.shape[0], inF));
  const xq = quantizeActs(e, kind, x, rows, inF);
  const outs = ws.map((w) => w.shape[0]);
  return quantJob(e, kind, dt, ptrs, outs, xq, rows, inF, biases);
}

/**
 * The quantized weights `ws` (each `[out_i, inF]`, Q8_0, Q4_0, Q5_0, Q4_K
 * or Q6_K, no `quant`) on `rows` x rows already in kernel memory at `x`,
 * weight i's `rows × out_i` output (plus its bias) written to kernel
 * memory at `ys[i]`: what `linearMany` runs for the same weights (one job
 * on one quantization of x when all share a dtype, else one by one), with
 * the same kernels, arguments and splits, so the same bits, without the
 * copies between JavaScript arrays and the engine. The caller checks the
 * shapes, the weights' bytes and the biases' lengths (once, where it
 * builds its plan) and that `x` and `ys` do not overlap the engine's
 * scratch blocks.
 *
 * @param e The engine (holding every weight's bytes or able to copy them in).
 * @param ws The weights.
 * @param biases Their biases (undefined entries: none).
 * @param x Kernel address of the `rows × inF` input.
 * @param rows x rows (at least 1).
 * @param ys Kernel address of each weight's output.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { engineLinearInto } from "./_linear_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * import { quantizeGguf } from "@modelhost/modelhost/formats/gguf";
 * import { linear } from "@modelhost/modelhost/kernels";
 * const e = getEngine();
 * const v = Float32Array.from({ length: 64 }, (_, i) => i / 64 - 0.5);
 * const w = { name: "w", dtype: "Q8_0" as const, shape: [2, 32], bytes: quantizeGguf("Q8_0", v) };
 * const x = Float32Array.from({ length: 96 }, (_, i) => Math.cos(i));
 * if (e) {
 *   const io = e.alloc((96 + 6) * 4);
 *   e.f32.set(x, io >> 2);
 *   engineLinearInto(e, [w], [undefined], io, 3, [io + 96 * 4]);
 *   const want = linear(x, 3, w); // the layer path: the same bits
 *   assert(want.every((y, i) => y === e.f32[(io >> 2) + 96 + i]));
 *   e.free(io);
 * }
 * ```
 */
export function engineLinearInto(
  e: Engine,
  ws: Tensor[],
  biases: (Float32Array | undefined)[],
  x: number,
  rows: number,
  ys: number[],
): void {
  const inF = ws[0].shape[1];
  const dtype = ws[0].dtype as FastDType;
  const sets = ws.length > 1 && ws.every((w) => w.dtype === dtype)
    ? [ws.map((_, i) => i)]
    : ws.map((_, i) => [i]);
  for (const idx of sets) {
    const dt = ws[idx[0]].dtype as FastDType;
    const kind = QUANT_KIND[dt]!;
    // every weight resident first, then x quantized once for all of them
    const ptrs = idx.map((i) =>
      residentQuant(e, dt, ws[i], ws[i].shape[0], inF)
    );
    const xq = quantizeActsAt(e, kind, x, rows, inF);
    quantJobAt(
      e,
      kind,
      dt,
      ptrs,
      idx.map((i) => ws[i].shape[0]),
      xq,
      rows,
      inF,
      idx.map((i) => biases[i]),
      idx.map((i) => ys[i]),
    );
  }
}

/**
 * F32 `y = x · Wᵀ + b` on the engine for a plain array `w`, kept resident
 * keyed by the array object (sizes checked by the caller, all positive).
 *
 * @param e The engine.
 * @param w Weights `outF × inF`.
 * @param x Input rows, `rows × inF`.
 * @param rows Number of rows.
 * @param outF Outputs.
 * @param inF Inputs.
 * @param bias Optional bias of length `outF`.
 * @returns The `rows × outF` output, a new array.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { engineMatmulF32 } from "./_linear_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * const e = getEngine();
 * const y = e && engineMatmulF32(e, new Float32Array([3, 4, 5, 6]), new Float32Array([1, 2]), 1, 2, 2);
 * if (y) assert(y[0] === 11 && y[1] === 17);
 * ```
 */
export function engineMatmulF32(
  e: Engine,
  w: Float32Array,
  x: Float32Array,
  rows: number,
  outF: number,
  inF: number,
  bias?: Float32Array,
): Float32Array {
  const bytes = new Uint8Array(w.buffer, w.byteOffset, outF * inF * 4);
  return denseLinear(e, "f32", w, bytes, x, rows, outF, inF, bias);
}
