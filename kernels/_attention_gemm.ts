/**
 * Bidirectional attention of packed rows through a native backend's
 * `sgemm` (see `F32GemmBackend.sgemm` in `./fast/backend.ts`): per row and
 * head, the scores `Q_h·K_hᵀ` and the output `softmax(scale·scores)·V_h`
 * are two strided products straight on the projections' column blocks (no
 * gather, no KV cache). The scores live in kernel memory, where the
 * backend writes and reads them; the softmax (scale, max, exp, sum,
 * normalise in one kernel, `attn_softmax_rows`) is one WebAssembly call
 * for all heads of a group of equal-length rows (the whole batch, when
 * its rows are equally long and their scores fit 32 MiB), split over the
 * kernel threads.
 * The encoders run it when the system BLAS is installed; the WebAssembly
 * attention kernel (`attend`) runs otherwise.
 *
 * @module
 */

import { type F32GemmBackend, SGEMM_CALL_FIELDS } from "./fast/backend.ts";
import { runSplit } from "./fast/_dispatch.ts";
import { softmaxRef } from "./softmax.ts";
import { getEngine } from "./wasm/_engine.ts";

/**
 * Attention of each packed row over its own tokens (no mask, no causality):
 * `q`, `k`, `v` hold `Σ lens` token rows of `heads × headDim` values, the
 * rows' tokens end to end.
 *
 * @param blas A backend with `sgemm`.
 * @param q Queries.
 * @param k Keys, same layout.
 * @param v Values, same layout.
 * @param lens Tokens per row.
 * @param heads Heads.
 * @param headDim Values per head.
 * @returns The attention output, laid out as `q`.
 * @throws {TypeError} When the backend has no `sgemm` or the sizes disagree.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { attendRowsGemm } from "./_attention_gemm.ts";
 * import { type F32GemmBackend, SGEMM_CALL_FIELDS } from "./fast/backend.ts";
 * // a scalar sgemm, enough to show the layout
 * const blas = {
 *   name: "scalar", minRows: 1, minWork: 1, gemm: () => new Float32Array(0),
 *   sgemm(ta: boolean, tb: boolean, m: number, n: number, k: number, al: number,
 *     a: Float32Array, lda: number, b: Float32Array, ldb: number, be: number,
 *     c: Float32Array, ldc: number) {
 *     for (let i = 0; i < m; i++) {
 *       for (let j = 0; j < n; j++) {
 *         let s = 0;
 *         for (let p = 0; p < k; p++) {
 *           s += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
 *         }
 *         c[i * ldc + j] = al * s + be * c[i * ldc + j];
 *       }
 *     }
 *   },
 * } satisfies F32GemmBackend;
 * // one row of two tokens, one head of size 1: equal scores, so the mean of v
 * const out = attendRowsGemm(blas, new Float32Array([0, 0]), new Float32Array([1, 2]),
 *   new Float32Array([2, 4]), [2], 1, 1);
 * assert(out[0] === 3 && out[1] === 3);
 * ```
 */
export function attendRowsGemm(
  blas: F32GemmBackend,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  lens: readonly number[],
  heads: number,
  headDim: number,
): Float32Array {
  const sgemm = blas.sgemm?.bind(blas);
  if (!sgemm) throw new TypeError(`${blas.name} has no sgemm`);
  const d = heads * headDim;
  const total = lens.reduce((a, b) => a + b, 0);
  if (
    q.length !== total * d || k.length !== q.length || v.length !== q.length
  ) {
    throw new TypeError(
      `Cannot attend: q, k, v have ${q.length}, ${k.length}, ${v.length} values, expected ${total} tokens × ${d}`,
    );
  }
  const out = new Float32Array(q.length);
  const e = getEngine();
  if (!e) {
    const scale = 1 / Math.sqrt(headDim);
    attendScalarSoftmax(sgemm, q, k, v, out, lens, heads, headDim, scale);
    return out;
  }
  // q, k, v and the output in kernel memory, then the same products there
  const pq = e.scratch("attn_q", q.byteLength * 4 + 64);
  const pk = pq + q.byteLength, pv = pk + q.byteLength, po = pv + q.byteLength;
  const mem = e.f32;
  mem.set(q, pq >> 2);
  mem.set(k, pk >> 2);
  mem.set(v, pv >> 2);
  attendGemmAt(
    blas,
    { q: pq, k: pk, v: pv, ld: d, out: po, ldo: d },
    lens,
    heads,
    headDim,
  );
  out.set(e.f32.subarray(po >> 2, (po >> 2) + q.length));
  return out;
}

/**
 * Where {@link attendGemmAt} finds its operands in kernel memory: byte
 * offsets of the first token's queries, keys, values and output, and the
 * row strides in values (queries, keys and values share one: they may be
 * column blocks of one fused projection, `ld = 3·heads·headDim`).
 */
export interface AttentionOperands {
  /** Queries. */
  q: number;
  /** Keys. */
  k: number;
  /** Values. */
  v: number;
  /** Row stride of q, k and v, in values. */
  ld: number;
  /** Output. */
  out: number;
  /** Row stride of the output, in values. */
  ldo: number;
  /**
   * Whether q, k and v are stored channel by channel (the transposed
   * projection: token `t`'s channel `c` at `c·ld + t`, `ld` ≥ the tokens),
   * which the per-head products read faster than token rows (a head's
   * values for a row's tokens are `headDim` runs of contiguous values).
   * @default {false}
   */
  channelMajor?: boolean;
}

/**
 * {@link attendRowsGemm} on operands already in the kernel engine's
 * memory (see {@link AttentionOperands}): per group of equal-length rows,
 * every head's scores `Q_h·K_hᵀ` as one list of products, one split
 * softmax kernel call, then every head's `P_h·V_h` as one list. A backend
 * with `sgemmMany` runs each list on two threads at once; otherwise the
 * products run one by one through `sgemm`. The output's head columns are
 * all written (no prior value needed).
 *
 * @param blas A backend with `sgemm`.
 * @param at Operand offsets and strides.
 * @param lens Tokens per row.
 * @param heads Heads.
 * @param headDim Values per head.
 * @throws {TypeError} When the backend has no `sgemm` or there is no kernel engine.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { attendGemmAt } from "./_attention_gemm.ts";
 * import { getEngine } from "./wasm/_engine.ts";
 * import { type F32GemmBackend, SGEMM_CALL_FIELDS } from "./fast/backend.ts";
 * const e = getEngine();
 * const blas = {
 *   name: "scalar", minRows: 1, minWork: 1, gemm: () => new Float32Array(0),
 *   sgemm(ta: boolean, tb: boolean, m: number, n: number, k: number, al: number,
 *     a: Float32Array, lda: number, b: Float32Array, ldb: number, be: number,
 *     c: Float32Array, ldc: number) {
 *     for (let i = 0; i < m; i++) {
 *       for (let j = 0; j < n; j++) {
 *         let s = 0;
 *         for (let p = 0; p < k; p++) {
 *           s += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
 *         }
 *         c[i * ldc + j] = al * s + be * c[i * ldc + j];
 *       }
 *     }
 *   },
 * } satisfies F32GemmBackend;
 * if (e) {
 *   // one row of two tokens, one head of size 1; q, k, v interleaved (ld 3)
 *   const p = e.scratch("example_qkv", 64);
 *   e.f32.set([0, 1, 2, 0, 2, 4], p >> 2);
 *   attendGemmAt(blas, { q: p, k: p + 4, v: p + 8, ld: 3, out: p + 32, ldo: 1 }, [2], 1, 1);
 *   assert(e.f32[(p >> 2) + 8] === 3 && e.f32[(p >> 2) + 9] === 3);
 * }
 * ```
 */
export function attendGemmAt(
  blas: F32GemmBackend,
  at: AttentionOperands,
  lens: readonly number[],
  heads: number,
  headDim: number,
): void {
  const e = getEngine();
  if (!blas.sgemm || !e) {
    throw new TypeError(
      `Cannot attend in kernel memory: ${
        e ? `${blas.name} has no sgemm` : "no kernel engine"
      }`,
    );
  }
  const scale = 1 / Math.sqrt(headDim);
  const F = SGEMM_CALL_FIELDS;
  // token-major: Q_h·K_hᵀ (A plain, B transposed) and P·V_h (both plain);
  // channel-major: the stored blocks are Q_hᵀ, K_hᵀ, V_hᵀ
  const cm = at.channelMajor ? 1 : 0;
  const offset = (token: number, channel: number) =>
    (cm ? channel * at.ld + token : token * at.ld + channel) * 4;
  // Rows of equal length go together (up to SCORES_BUDGET bytes of
  // scores): sgemm writes their heads' scores straight into kernel
  // memory, one split kernel call normalises them there, and the second
  // product reads them from there; no copies.
  let b = 0, t = 0;
  while (b < lens.length) {
    const T = lens[b];
    const per = heads * T * T;
    const most = Math.max(1, Math.floor(SCORES_BUDGET / (per * 4)));
    let cnt = 1;
    while (b + cnt < lens.length && lens[b + cnt] === T && cnt < most) cnt++;
    const sp = e.scratch("attn_scores", cnt * per * 4 + 64);
    const n = cnt * heads;
    const lp = e.scratch("attn_calls", n * F * 8 + 64);
    const list = new Float64Array(e.memory.buffer, lp, n * F);
    // scores (T × T) = Q_h · K_hᵀ, per row and head
    for (let j = 0; j < cnt; j++) {
      for (let h = 0; h < heads; h++) {
        const i = j * heads + h, o = offset(t + j * T, h * headDim);
        list.set(
          [cm, 1 - cm, T, T, headDim, 1, at.q + o, at.ld, at.k + o, at.ld, 0],
          i * F,
        );
        list[i * F + 11] = sp + i * T * T * 4;
        list[i * F + 12] = T;
      }
    }
    runList(blas, e.memory, lp, n);
    // scale, softmax over the keys, all score rows of the group at once
    runSplit(
      e,
      "attn_softmax_rows",
      cnt * per * 8,
      cnt * heads * T,
      (r0, r1) => [sp + r0 * T * 4, r1 - r0, T, T, scale],
    );
    // out_h (T × headDim) = P_h · V_h
    const list2 = new Float64Array(e.memory.buffer, lp, n * F);
    for (let j = 0; j < cnt; j++) {
      for (let h = 0; h < heads; h++) {
        const i = j * heads + h;
        const ov = offset(t + j * T, h * headDim);
        const oo = ((t + j * T) * at.ldo + h * headDim) * 4;
        list2.set(
          [0, cm, T, headDim, T, 1, sp + i * T * T * 4, T, at.v + ov, at.ld, 0],
          i * F,
        );
        list2[i * F + 11] = at.out + oo;
        list2[i * F + 12] = at.ldo;
      }
    }
    runList(blas, e.memory, lp, n);
    b += cnt;
    t += cnt * T;
  }
}

/** Runs an `sgemmMany` list: on the backend's threads, or one call at a time through `sgemm`. */
function runList(
  blas: F32GemmBackend,
  memory: WebAssembly.Memory,
  list: number,
  count: number,
): void {
  if (blas.sgemmMany) {
    blas.sgemmMany(memory, list, count);
    return;
  }
  const F = SGEMM_CALL_FIELDS;
  const l = new Float64Array(memory.buffer, list, count * F);
  const mem = new Float32Array(memory.buffer);
  for (let i = 0; i < count; i++) {
    const [ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc] = l.subarray(
      i * F,
      i * F + F,
    );
    blas.sgemm!(
      ta === 1,
      tb === 1,
      m,
      n,
      k,
      alpha,
      mem.subarray(a >> 2),
      lda,
      mem.subarray(b >> 2),
      ldb,
      beta,
      mem.subarray(c >> 2),
      ldc,
    );
  }
}

/** Bytes of attention scores held in kernel memory at once (rows of equal length grouped up to it). */
const SCORES_BUDGET = 32 << 20;

/** The same products with the scalar softmax, where there is no engine. */
function attendScalarSoftmax(
  sgemm: NonNullable<F32GemmBackend["sgemm"]>,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  out: Float32Array,
  lens: readonly number[],
  heads: number,
  headDim: number,
  scale: number,
): void {
  const d = heads * headDim;
  let t = 0;
  for (const T of lens) {
    const scores = new Float32Array(heads * T * T);
    const base = t * d;
    for (let h = 0; h < heads; h++) {
      const o = base + h * headDim;
      headScores(
        sgemm,
        q,
        k,
        o,
        d,
        T,
        headDim,
        scale,
        scores.subarray(h * T * T),
      );
    }
    const p = softmaxRef(scores, heads * T, T);
    for (let h = 0; h < heads; h++) {
      const o = base + h * headDim;
      headOutput(sgemm, p.subarray(h * T * T), v, out, o, d, T, headDim);
    }
    t += T;
  }
}

/** One head's scores (`T × T`, row stride `T`) = `alpha · Q_h · K_hᵀ`, the head's columns starting at `o` of rows `d` apart. */
function headScores(
  sgemm: NonNullable<F32GemmBackend["sgemm"]>,
  q: Float32Array,
  k: Float32Array,
  o: number,
  d: number,
  T: number,
  headDim: number,
  alpha: number,
  scores: Float32Array,
): void {
  sgemm(
    false,
    true,
    T,
    T,
    headDim,
    alpha,
    q.subarray(o),
    d,
    k.subarray(o),
    d,
    0,
    scores,
    T,
  );
}

/** One head's output (`T × headDim`, at column `o` of `out`'s rows `d` apart) = `P_h · V_h`. */
function headOutput(
  sgemm: NonNullable<F32GemmBackend["sgemm"]>,
  p: Float32Array,
  v: Float32Array,
  out: Float32Array,
  o: number,
  d: number,
  T: number,
  headDim: number,
): void {
  sgemm(
    false,
    false,
    T,
    headDim,
    T,
    1,
    p,
    T,
    v.subarray(o),
    d,
    0,
    out.subarray(o),
    d,
  );
}
