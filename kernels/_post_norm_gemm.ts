/**
 * A stack of post-norm encoder blocks (BERT, RoBERTa: attention, add +
 * LayerNorm, GELU MLP, add + LayerNorm) with F32 weights on a native
 * backend's `sgemm` (see `F32GemmBackend.sgemm` in `./fast/backend.ts`),
 * every activation kept in kernel memory from the first block to the
 * last: the projections write where the next step reads (q, k and v as
 * column blocks of one `tokens × 3·hidden` array, which attention reads
 * in place through `attendGemmAt`), q|k|v's bias is a prefilled row the
 * product adds to (`β = 1`), the other products' biases ride in the
 * stream they are added to (see `planOf`), and the residual adds,
 * LayerNorms and GELU run in place as kernels split over the threads. No
 * array is allocated per block and nothing is copied between JavaScript
 * and kernel memory but the input and the output.
 *
 * @module
 */

import type { Tensor } from "../core/tensor.ts";
import { attendGemmAt } from "./_attention_gemm.ts";
import { f32GemmBackendFor } from "./fast/backend.ts";
import { f32WeightView } from "./_f32_view.ts";
import { runSplit } from "./fast/_dispatch.ts";
import { getEngine } from "./wasm/_engine.ts";

/** One block's weights, as the encoder holds them (`[out, in]` matrices). */
export interface PostNormBlockWeights {
  /** Separate projections (with `k`, `v`), or `qkv` fused. */
  q?: Tensor;
  /** Key projection. */
  k?: Tensor;
  /** Value projection. */
  v?: Tensor;
  /** Fused `[3·hidden, hidden]` projection. */
  qkv?: Tensor;
  /** Fused bias. */
  bqkv?: Float32Array;
  /** Query bias. */
  bq?: Float32Array;
  /** Key bias. */
  bk?: Float32Array;
  /** Value bias. */
  bv?: Float32Array;
  /** Attention output projection. */
  o: Tensor;
  /** Its bias. */
  bo?: Float32Array;
  /** LayerNorm after attention (weight, bias). */
  attnNorm?: [Float32Array, Float32Array | undefined];
  /** LayerNorm after the MLP (weight, bias). */
  ffnNorm?: [Float32Array, Float32Array | undefined];
  /** MLP up projection `[inner, hidden]`. */
  up: Tensor;
  /** Its bias. */
  bup?: Float32Array;
  /** MLP down projection `[hidden, inner]`. */
  down: Tensor;
  /** Its bias. */
  bdown?: Float32Array;
}

/** Sizes of {@link postNormStackGemm}'s blocks. */
export interface PostNormDims {
  /** Hidden size (a multiple of 4). */
  hidden: number;
  /** Attention heads. */
  heads: number;
  /** MLP inner size (a multiple of 4). */
  inner: number;
  /** LayerNorm epsilon. */
  eps: number;
  /** A LayerNorm (weight, bias) applied to the input first. @default {none} */
  inputNorm?: [Float32Array, Float32Array | undefined];
}

/**
 * The fused `[3·hidden, hidden]` F32 projection of separate q, k, v
 * weights, made on first use and kept while the q tensor lives (one
 * product of three times the width runs faster than three; the weights
 * are then held twice).
 */
const fusedQkv = new WeakMap<Tensor, Float32Array>();

function qkvOf(L: PostNormBlockWeights, d: number): Float32Array | null {
  if (L.qkv) return f32WeightView(L.qkv, 3 * d, d);
  if (!L.q) return null;
  const have = fusedQkv.get(L.q);
  if (have) return have;
  const parts = [
    f32WeightView(L.q, d, d),
    f32WeightView(L.k, d, d),
    f32WeightView(L.v, d, d),
  ];
  if (parts.some((p) => !p)) return null;
  const w = new Float32Array(3 * d * d);
  parts.forEach((p, i) => w.set(p!, i * d * d));
  fusedQkv.set(L.q, w);
  return w;
}

/** One block's weights and biases as {@link postNormStackGemm} runs them. */
interface BlockPlan {
  qkv: Float32Array;
  o: Float32Array;
  up: Float32Array;
  down: Float32Array;
  /** q | k | v bias, less `Wqkv·bo` (the stream carries bo). */
  bqkv: Float32Array;
  /** After attention: weight, bias + bDown. */
  ln1: [Float32Array, Float32Array];
  /** Up bias, less `Wup·bDown`. */
  bup: Float32Array;
  /** After the MLP: weight, bias + the next block's bo. */
  ln2: [Float32Array, Float32Array];
  /** This block's bo (what the stream into it carries). */
  shiftIn: Float32Array;
}

const plans = new WeakMap<readonly PostNormBlockWeights[], BlockPlan[]>();

/** `b − W·c` in F64 (W `[out, in]`, c of `in` values), rounded to F32. */
function lessProduct(
  b: Float32Array | undefined,
  w: Float32Array,
  c: Float32Array,
  out: number,
): Float32Array {
  const inF = c.length, y = new Float32Array(out);
  for (let o = 0; o < out; o++) {
    let s = b ? b[o] : 0;
    for (let i = 0; i < inF; i++) s -= w[o * inF + i] * c[i];
    y[o] = s;
  }
  return y;
}

function plus(a: Float32Array | undefined, b: Float32Array, n: number) {
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) y[i] = (a ? a[i] : 0) + b[i];
  return y;
}

/**
 * The blocks' F32 weights and the biases rearranged so that no product
 * needs a bias of its own but q|k|v's (made once per blocks array): the
 * stream between steps carries the bias of the product whose output is
 * added to it next. The attention output projection's bias `bo` rides in
 * the block's input `x + bo` (so `LayerNorm(x + bo + ctx·Oᵀ)` needs no
 * bias fill), which q|k|v's bias compensates (`b − Wqkv·bo`); likewise the
 * attention LayerNorm writes `a + bDown` and the up bias becomes
 * `bUp − Wup·bDown`. Exact in real arithmetic; the F32 results move by
 * rounding only.
 */
function planOf(
  blocks: readonly PostNormBlockWeights[],
  d: number,
  I: number,
): BlockPlan[] | null {
  const have = plans.get(blocks);
  if (have) return have;
  const zero = new Float32Array(Math.max(d, I));
  const plan: BlockPlan[] = [];
  for (const [l, L] of blocks.entries()) {
    const qkv = qkvOf(L, d);
    const o = f32WeightView(L.o, d, d);
    const up = f32WeightView(L.up, I, d), down = f32WeightView(L.down, d, I);
    if (!qkv || !o || !up || !down || !L.attnNorm || !L.ffnNorm) return null;
    // one bias row for the three projections (zeros where one has none)
    let bqkv: Float32Array | undefined;
    if (L.bqkv) bqkv = L.bqkv;
    else if (L.bq || L.bk || L.bv) {
      bqkv = new Float32Array(3 * d);
      [L.bq, L.bk, L.bv].forEach((b, i) => b && bqkv!.set(b, i * d));
    }
    const bo = L.bo ?? zero.subarray(0, d);
    const bDown = L.bdown ?? zero.subarray(0, d);
    const nextBo = blocks[l + 1]?.bo ?? zero.subarray(0, d);
    plan.push({
      qkv,
      o,
      up,
      down,
      bqkv: lessProduct(bqkv, qkv, bo, 3 * d),
      ln1: [L.attnNorm[0], plus(L.attnNorm[1], bDown, d)],
      bup: lessProduct(L.bup, up, bDown, I),
      ln2: [L.ffnNorm[0], plus(L.ffnNorm[1], nextBo, d)],
      shiftIn: bo,
    });
  }
  if (plan.length === 0) return null;
  plans.set(blocks, plan);
  return plan;
}

/**
 * Runs the blocks on `x` (the embeddings after their LayerNorm, `Σ lens`
 * token rows of `hidden` values, rows end to end), each row's attention
 * over its own tokens; or returns null where this route does not apply
 * (no installed backend with `sgemm` for this size, no kernel engine, a
 * weight not plain F32, a size not a multiple of 4, a missing LayerNorm):
 * the caller then runs its general steps. GELU is the erf form of
 * `gelu_bias_rows`.
 *
 * @param x Input token rows.
 * @param lens Tokens per row.
 * @param blocks The blocks' weights.
 * @param dims Sizes and epsilon.
 * @returns The last block's output, laid out as `x`, or null.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { postNormStackGemm } from "./_post_norm_gemm.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const w = tensorFromF32("w", new Float32Array(16), [4, 4]);
 * const one = new Float32Array(4).fill(1);
 * const block = { q: w, k: w, v: w, o: w, up: w, down: w };
 * const norm: [Float32Array, undefined] = [one, undefined];
 * const norms = { attnNorm: norm, ffnNorm: norm };
 * const dims = { hidden: 4, heads: 1, inner: 4, eps: 1e-12 };
 * // without an installed native backend it declines
 * assert(postNormStackGemm(new Float32Array(8), [2], [{ ...block, ...norms }], dims) === null);
 * ```
 */
export function postNormStackGemm(
  x: Float32Array | ((out: Float32Array) => void),
  lens: readonly number[],
  blocks: readonly PostNormBlockWeights[],
  dims: PostNormDims,
): Float32Array | null {
  const { hidden: d, heads, inner: I, eps } = dims;
  const N = lens.reduce((a, b) => a + b, 0);
  if (
    (typeof x !== "function" && x.length !== N * d) || d % 4 !== 0 ||
    I % 4 !== 0 || d % heads !== 0 ||
    N === 0
  ) return null;
  const blas = f32GemmBackendFor(N, d, d);
  const sgemm = blas?.sgemm?.bind(blas);
  const e = sgemm ? getEngine() : null;
  if (!blas || !sgemm || !e) return null;
  const plan = planOf(blocks, d, I);
  if (!plan) return null;
  // kernel memory: pointers first (an allocation may grow the memory)
  const pX = e.scratch("enc_x", N * d * 4 + 64);
  const pQKV = e.scratch("enc_qkv", N * 3 * d * 4 + 64);
  const pCtx = e.scratch("enc_ctx", N * d * 4 + 64);
  const pT = e.scratch("enc_t", N * d * 4 + 64);
  const pH = e.scratch("enc_h", N * I * 4 + 64);
  const perBlock = 4 * d + I;
  const pVec = e.scratch(
    "enc_vectors",
    (blocks.length * perBlock + 2 * d) * 4 + 64,
  );
  let mem = e.f32;
  if (typeof x === "function") {
    x(mem.subarray(pX >> 2, (pX >> 2) + N * d));
  } else mem.set(x, pX >> 2);
  // per block: LayerNorm weights and (shifted) biases, up bias
  plan.forEach((P, l) => {
    const at = (pVec >> 2) + l * perBlock;
    mem.set(P.ln1[0], at);
    mem.set(P.ln1[1], at + d);
    mem.set(P.ln2[0], at + 2 * d);
    mem.set(P.ln2[1], at + 3 * d);
    mem.set(P.bup, at + 4 * d);
  });
  const view = (p: number, n: number) => e.f32.subarray(p >> 2, (p >> 2) + n);
  const addNorm = (w: number, b: number) =>
    runSplit(e, "add_layernorm_rows", N * d * 8, N, (r0, r1) => [
      pT + r0 * d * 4,
      pX + r0 * d * 4,
      w,
      b,
      pX + r0 * d * 4,
      r1 - r0,
      d,
      eps,
    ]);
  // the stream holds x + bo of the next block (see planOf)
  const shift = plan[0].shiftIn;
  if (dims.inputNorm) {
    // LayerNorm(x + x) with 4·eps is LayerNorm(x) (scaling by 2 is exact)
    const at = (pVec >> 2) + blocks.length * perBlock;
    mem = e.f32;
    mem.set(dims.inputNorm[0], at);
    for (let c = 0; c < d; c++) {
      mem[at + d + c] = (dims.inputNorm[1]?.[c] ?? 0) + shift[c];
    }
    runSplit(e, "add_layernorm_rows", N * d * 8, N, (r0, r1) => [
      pX + r0 * d * 4,
      pX + r0 * d * 4,
      at * 4,
      (at + d) * 4,
      pX + r0 * d * 4,
      r1 - r0,
      d,
      4 * eps,
    ]);
  } else {
    mem = e.f32;
    for (let t = 0; t < N; t++) {
      for (let c = 0, o = (pX >> 2) + t * d; c < d; c++) mem[o + c] += shift[c];
    }
  }
  for (const [l, W] of plan.entries()) {
    const vec = pVec + l * perBlock * 4;
    // q | k | v (+ biases) channel by channel: (Wqkv·xᵀ), 3·hidden rows of
    // N tokens, each prefilled with its bias
    mem = e.f32;
    for (let r = 0, o = pQKV >> 2; r < 3 * d; r++, o += N) {
      mem.fill(W.bqkv[r], o, o + N);
    }
    const X = view(pX, N * d);
    sgemm(
      false,
      true,
      3 * d,
      N,
      d,
      1,
      W.qkv,
      d,
      X,
      d,
      1,
      view(pQKV, N * 3 * d),
      N,
    );
    attendGemmAt(
      blas,
      {
        q: pQKV,
        k: pQKV + d * N * 4,
        v: pQKV + 2 * d * N * 4,
        ld: N,
        out: pCtx,
        ldo: d,
        channelMajor: true,
      },
      lens,
      heads,
      d / heads,
    );
    // x = LayerNorm(x + ctx·Oᵀ + bo), bo already in the stream
    sgemm(
      false,
      true,
      N,
      d,
      d,
      1,
      view(pCtx, N * d),
      d,
      W.o,
      d,
      0,
      view(pT, N * d),
      d,
    );
    addNorm(vec, vec + d * 4);
    // x = LayerNorm(x + gelu(x·Upᵀ + bUp)·Downᵀ + bDown)
    sgemm(
      false,
      true,
      N,
      I,
      d,
      1,
      view(pX, N * d),
      d,
      W.up,
      d,
      0,
      view(pH, N * I),
      I,
    );
    runSplit(
      e,
      "gelu_bias_rows",
      N * I * 24,
      N,
      (r0, r1) => [pH + r0 * I * 4, vec + 4 * d * 4, r1 - r0, I],
    );
    // bDown already in the stream
    sgemm(
      false,
      true,
      N,
      d,
      I,
      1,
      view(pH, N * I),
      I,
      W.down,
      I,
      0,
      view(pT, N * d),
      d,
    );
    addNorm(vec + 2 * d * 4, vec + 3 * d * 4);
  }
  return e.f32.slice(pX >> 2, (pX >> 2) + N * d);
}
