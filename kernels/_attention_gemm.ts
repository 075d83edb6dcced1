/**
 * Bidirectional attention of packed rows through a native backend's
 * `sgemm` (see `F32GemmBackend.sgemm` in `./fast/backend.ts`): per row and
 * head, the scores `Q_h·K_hᵀ·scale` and the output `softmax(scores)·V_h`
 * are two strided products straight on the projections' column blocks (no
 * gather, no KV cache); the softmax is one WebAssembly call per row over
 * all its heads' scores, split over the kernel threads.
 * The encoders run it when the system BLAS is installed; the WebAssembly
 * attention kernel (`attend`) runs otherwise.
 *
 * @module
 */

import type { F32GemmBackend } from "./fast/backend.ts";
import { engineSoftmaxInPlace } from "./fast/_ops_engine.ts";
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
 * import type { F32GemmBackend } from "./fast/backend.ts";
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
  const longest = Math.max(0, ...lens);
  const scores = new Float32Array(heads * longest * longest);
  const scale = 1 / Math.sqrt(headDim);
  const e = getEngine();
  let t = 0;
  for (const T of lens) {
    const base = t * d;
    for (let h = 0; h < heads; h++) {
      const o = base + h * headDim;
      // scores_h (T × T) = scale · Q_h · K_hᵀ
      sgemm(
        false,
        true,
        T,
        T,
        headDim,
        scale,
        q.subarray(o),
        d,
        k.subarray(o),
        d,
        0,
        scores.subarray(h * T * T),
        T,
      );
    }
    // one softmax over all heads' score rows, split over the kernel threads
    let p: Float32Array = scores.subarray(0, heads * T * T);
    if (e) engineSoftmaxInPlace(e, p, T);
    else p = softmaxRef(p, heads * T, T);
    for (let h = 0; h < heads; h++) {
      const o = base + h * headDim;
      // out_h (T × headDim) = P_h · V_h
      sgemm(
        false,
        false,
        T,
        headDim,
        T,
        1,
        p.subarray(h * T * T),
        T,
        v.subarray(o),
        d,
        0,
        out.subarray(o),
        d,
      );
    }
    t += T;
  }
  return out;
}
