/**
 * Encoders of the lowest-bit types: IQ2_XXS, IQ1_S and IQ1_M (ggml's
 * `quantize_iq2_xxs` / `quantize_iq1_s` / `quantize_iq1_m`, lattice codes
 * searched with an importance matrix) and the ternary TQ1_0 and TQ2_0
 * (`quantize_row_tq1_0_ref` / `quantize_row_tq2_0_ref`), byte-identical to
 * what `llama-quantize` writes. Every float operation is rounded to F32 in
 * C's order, as in `iq_encode_grid.ts`.
 *
 * @module
 */

import { roundAway } from "./_common.ts";
import { f32ToHalfBits } from "./f16.ts";
import {
  checkImatrix,
  type Lattice,
  latticeOf,
  neighbours,
  rowsOf,
} from "./_iq_lattice.ts";
import {
  absMaxOf,
  gridIndex,
  gridSearch,
  groupWeights,
  maxOf,
  oddLevel,
  refineScale,
  searchScale,
  splitSigns,
  sumSquares,
} from "./_iq_search.ts";
import { F_0_1 as TENTH, GROUP_MAX_EPS } from "./_k_search.ts";
import { makeQp } from "./_qp_search.ts";

const fround = Math.fround;
const EPS_IQ1_S = fround(1e-12);
const EPS_IQ1_M = fround(1e-7);
const FLT_MAX = 3.4028234663852886e38;
/** IQ1_S stores its super-block scale stretched by this (ggml's 1.125f). */
const D_STRETCH_IQ1_S = fround(1.125);
/** IQ1_M's (ggml's 1.1125f). */
const D_STRETCH_IQ1_M = fround(1.1125);
/** The three IQ1 levels shifted up or down by `IQ1S_DELTA` (0.125). */
const X_P = Float32Array.of(-1 + 0.125, 0.125, 1 + 0.125);
const X_M = Float32Array.of(-1 - 0.125, -0.125, 1 - 0.125);

/**
 * Encodes IQ2_XXS as ggml's `quantize_iq2_xxs` (what `llama-quantize`
 * writes with an importance matrix, which the type requires).
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 256).
 * @param imatrix One importance weight per column.
 * @returns The super-blocks (66 bytes per 256 values).
 * @throws {RangeError} When the sizes do not fit.
 * @throws {TypeError} Without an importance matrix.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ2_XXS } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeGguf("IQ2_XXS", quantizeIQ2_XXS(x, 256, new Float32Array(256).fill(1)), 256);
 * assert(Math.abs(y[3] - x[3]) < 0.6);
 * ```
 */
export function quantizeIQ2_XXS(
  x: Float32Array,
  nPerRow: number,
  imatrix: Float32Array,
): Uint8Array {
  const nb = rowsOf("IQ2_XXS", x, nPerRow);
  const qwAll = checkImatrix("IQ2_XXS", nPerRow, imatrix);
  const g = latticeOf("IQ2_XXS");
  const out = new Uint8Array(nb * 66);
  const dv = new DataView(out.buffer);
  const kMaxQ = 3;
  const scales = new Float32Array(8);
  const gs = gridSearch(g, 32, kMaxQ);
  const { weight, waux, xval, L } = gs;
  const Lqp = new Uint8Array(32); // uint8_t in ggml: negative codes wrap
  const signs = new Uint8Array(4);
  const q2 = new Uint32Array(16);
  const perRow = nPerRow / 256;
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = 66 * ibl, xo = 256 * ibl, qo = 256 * (ibl % perRow);
    q2.fill(0);
    let maxScale = 0;
    const sigma2 = fround(sumSquares(x, xo, 256) / 256);
    for (let ib = 0; ib < 8; ib++) {
      const xb = xo + 32 * ib;
      groupWeights(x, xb, 32, qwAll, qo + 32 * ib, sigma2, 0, weight, waux);
      for (let k = 0; k < 4; k++) {
        signs[k] = splitSigns(x, xb, 8 * k, weight, xval, true) & 127;
      }
      const max = maxOf(xval, 0, 32);
      if (max < GROUP_MAX_EPS) {
        scales[ib] = 0;
        continue;
      }
      let scale = makeQp(32, kMaxQ + 1, xval, Lqp, weight);
      const effMax = fround(scale * kMaxQ);
      if (effMax <= 0) {
        scales[ib] = 0;
        continue;
      }
      scale = searchScale(gs, effMax, 6, TENTH, scale);
      if (scale > 0) scale = refineScale(gs, scale, false);
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) signs[k] = ~signs[k] & 127;
      }
      for (let k = 0; k < 4; k++) {
        const index = gridIndex("IQ2_XXS", g, L, k);
        q2[2 * ib] = (q2[2 * ib] | (index << (8 * k))) >>> 0;
        q2[2 * ib + 1] |= signs[k] << (7 * k);
      }
      scales[ib] = scale;
      maxScale = Math.max(maxScale, scale);
    }
    if (!maxScale) continue; // d = 0, qs 0
    const d = fround(maxScale / 31);
    dv.setUint16(o, f32ToHalfBits(d), true);
    const id = fround(1 / d);
    for (let ib = 0; ib < 8; ib++) {
      const l = oddLevel(id, scales[ib], 15);
      q2[2 * ib + 1] = (q2[2 * ib + 1] | (l << 28)) >>> 0;
    }
    for (let i = 0; i < 16; i++) dv.setUint32(o + 2 + 4 * i, q2[i], true);
  }
  return out;
}

/**
 * ggml's `iq1_find_best_neighbour2`: the neighbour of `u` whose levels,
 * mapped through `xx` and scaled, are closest to the signed values `x`
 * (weighted); writes its levels into `L` and returns its index.
 */
function iq1Neighbour(
  g: Lattice,
  u: number,
  x: Float32Array,
  xo: number,
  weight: Float32Array,
  wo: number,
  scale: number,
  xx: Float32Array,
  L: Int8Array,
  lo: number,
): number {
  let best = FLT_MAX, index = -1;
  for (const j of neighbours(g, u)) {
    let d2 = 0;
    for (let i = 0; i < 8; i++) {
      const q = xx[(g.pos[8 * j + i] - 1) >> 1];
      const diff = fround(fround(scale * q) - x[xo + i]);
      d2 = fround(d2 + fround(fround(weight[wo + i] * diff) * diff));
    }
    if (d2 < best) {
      best = d2;
      index = j;
    }
  }
  if (index < 0) {
    // ggml then scans the whole grid with an indexing slip that reads past
    // the group; only non-finite values get here
    throw new RangeError(
      `IQ1: no grid point fits values at ${xo} (non-finite input?)`,
    );
  }
  for (let i = 0; i < 8; i++) L[lo + i] = (g.pos[8 * index + i] - 1) >> 1;
  return index;
}

/** Sorts `idx` (0..n-1) by `x[xo + i]` ascending, ties in index order (glibc's stable `qsort`). */
function sortIndex(idx: number[], x: Float32Array, xo: number): void {
  for (let j = 0; j < idx.length; j++) idx[j] = j;
  idx.sort((a, b) => {
    const l = x[xo + a], r = x[xo + b];
    return l < r ? -1 : l > r ? 1 : 0;
  });
}

/**
 * The IQ1 levels by rank: 0 below `i1`, 1 below `i2`, 2 for the rest, in
 * the sorted order `idx`; mirrored (`2 − l`) with `flip`.
 */
function rankLevels(
  idx: number[],
  i1: number,
  i2: number,
  flip: boolean,
  L: Int8Array,
): void {
  for (let j = 0; j < idx.length; j++) {
    L[idx[j]] = j < i1 ? 0 : j < i2 ? 1 : 2;
  }
  if (flip) { for (let j = 0; j < idx.length; j++) L[j] = 2 - L[j]; }
}

/**
 * Puts each group of 8 levels in `L` on the IQ1 grid (an off-grid point
 * becomes its best neighbour with group `k`'s level values `xxs[k]`), its
 * entries into `index`; when any group was off the grid, refits the scale
 * to the entries (kept when the fit is not positive).
 *
 * @returns The scale.
 */
function iq1Snap(
  g: Lattice,
  x: Float32Array,
  xb: number,
  weight: Float32Array,
  scale: number,
  xxs: readonly Float32Array[],
  L: Int8Array,
  index: Uint16Array,
): number {
  let allOnGrid = true;
  for (let k = 0; k < index.length; k++) {
    let u = 0;
    for (let j = 0; j < 8; j++) u |= L[8 * k + j] << (2 * j);
    let gi = g.map[u];
    if (gi < 0) {
      allOnGrid = false;
      gi = iq1Neighbour(
        g,
        u,
        x,
        xb + 8 * k,
        weight,
        8 * k,
        scale,
        xxs[k],
        L,
        8 * k,
      );
    }
    index[k] = gi;
  }
  if (allOnGrid) return scale;
  let sumqx = 0, sumq2 = 0;
  for (let k = 0; k < index.length; k++) {
    const xx = xxs[k];
    for (let j = 0; j < 8; j++) {
      const w = weight[8 * k + j];
      const q = xx[(g.pos[8 * index[k] + j] - 1) >> 1];
      sumqx = fround(sumqx + fround(fround(w * q) * x[xb + 8 * k + j]));
      sumq2 = fround(sumq2 + fround(fround(w * q) * q));
    }
  }
  return sumqx > 0 && sumq2 > 0 ? fround(sumqx / sumq2) : scale;
}

/**
 * Encodes IQ1_S as ggml's `quantize_iq1_s` (what `llama-quantize` writes
 * with an importance matrix, which the type requires).
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 256).
 * @param imatrix One importance weight per column.
 * @returns The super-blocks (50 bytes per 256 values).
 * @throws {RangeError} When the sizes do not fit.
 * @throws {TypeError} Without an importance matrix.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ1_S } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeGguf("IQ1_S", quantizeIQ1_S(x, 256, new Float32Array(256).fill(1)), 256);
 * assert(y.length === 256 && Number.isFinite(y[3]));
 * ```
 */
export function quantizeIQ1_S(
  x: Float32Array,
  nPerRow: number,
  imatrix: Float32Array,
): Uint8Array {
  const nb = rowsOf("IQ1_S", x, nPerRow);
  const qwAll = checkImatrix("IQ1_S", nPerRow, imatrix);
  const g = latticeOf("IQ1_S");
  const out = new Uint8Array(nb * 50);
  const dv = new DataView(out.buffer);
  const bs = 32;
  const scales = new Float32Array(8), shifts = new Int8Array(8);
  const weight = new Float32Array(bs);
  const sumx = new Float32Array(bs + 1), sumw = new Float32Array(bs + 1);
  const idx = new Array<number>(bs).fill(0);
  const L = new Int8Array(bs);
  const index = new Uint16Array(4);
  const xxs = [X_P, X_P, X_P, X_P];
  const perRow = nPerRow / 256;
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = 50 * ibl, xo = 256 * ibl, qo = 256 * (ibl % perRow);
    let maxScale = 0;
    const sigma2 = fround(fround(2 * sumSquares(x, xo, 256)) / 256);
    for (let ib = 0; ib < 8; ib++) {
      const xb = xo + bs * ib;
      groupWeights(x, xb, bs, qwAll, qo + bs * ib, sigma2, 0, weight);
      const max = absMaxOf(x, xb, bs);
      scales[ib] = 0;
      shifts[ib] = 1;
      if (max < EPS_IQ1_S) continue;
      sortIndex(idx, x, xb);
      for (let j = 0; j < bs; j++) {
        const i = idx[j];
        sumx[j + 1] = fround(sumx[j] + fround(weight[i] * x[xb + i]));
        sumw[j + 1] = fround(sumw[j] + weight[i]);
      }
      let bestScore = -FLT_MAX, scale = max;
      let besti1 = -1, besti2 = -1, bestShift = 0;
      for (let i1 = 0; i1 <= bs; i1++) {
        for (let i2 = i1; i2 <= bs; i2++) {
          for (const [xs, shift] of [[X_P, 1], [X_M, -1]] as const) {
            const sumqx = fround(
              fround(
                fround(fround(sumx[i1] - sumx[0]) * xs[0]) +
                  fround(fround(sumx[i2] - sumx[i1]) * xs[1]),
              ) + fround(fround(sumx[bs] - sumx[i2]) * xs[2]),
            );
            const sumq2 = fround(
              fround(
                fround(fround(fround(sumw[i1] - sumw[0]) * xs[0]) * xs[0]) +
                  fround(
                    fround(fround(sumw[i2] - sumw[i1]) * xs[1]) * xs[1],
                  ),
              ) + fround(fround(fround(sumw[bs] - sumw[i2]) * xs[2]) * xs[2]),
            );
            if (
              sumq2 > 0 && fround(sumqx * sumqx) > fround(bestScore * sumq2)
            ) {
              scale = fround(sumqx / sumq2);
              bestScore = fround(scale * sumqx);
              besti1 = i1;
              besti2 = i2;
              bestShift = shift;
            }
          }
        }
      }
      if (besti1 < 0 || besti2 < 0 || bestShift === 0) continue;
      rankLevels(idx, besti1, besti2, scale < 0, L);
      if (scale < 0) {
        scale = -scale;
        bestShift = -bestShift;
      }
      xxs.fill(bestShift === 1 ? X_P : X_M);
      scale = iq1Snap(g, x, xb, weight, scale, xxs, L, index);
      let h = 0;
      for (let k = 0; k < bs / 8; k++) {
        out[o + 2 + 4 * ib + k] = index[k] & 255;
        h |= (index[k] >> 8) << (3 * k);
      }
      dv.setUint16(o + 34 + 2 * ib, h, true);
      scales[ib] = scale;
      shifts[ib] = bestShift;
      maxScale = Math.max(maxScale, scale);
    }
    if (!maxScale) continue;
    const d = fround(maxScale / 15);
    dv.setUint16(o, f32ToHalfBits(fround(d * D_STRETCH_IQ1_S)), true);
    const id = fround(1 / d);
    for (let ib = 0; ib < 8; ib++) {
      let l = oddLevel(id, scales[ib], 7);
      if (shifts[ib] === -1) l |= 8;
      const at = o + 34 + 2 * ib;
      dv.setUint16(at, dv.getUint16(at, true) | (l << 12), true);
    }
  }
  return out;
}

/**
 * Encodes IQ1_M as ggml's `quantize_iq1_m`, optionally weighted by an
 * importance matrix (`llama-quantize` asks for one for its IQ1_M preset).
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 256); defaults to all values.
 * @param imatrix One importance weight per column, or none.
 * @returns The super-blocks (56 bytes per 256 values).
 * @throws {RangeError} When the sizes do not fit.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ1_M } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeGguf("IQ1_M", quantizeIQ1_M(x), 256);
 * assert(y.length === 256 && Number.isFinite(y[3]));
 * ```
 */
export function quantizeIQ1_M(
  x: Float32Array,
  nPerRow: number = x.length,
  imatrix?: Float32Array,
): Uint8Array {
  const nb = rowsOf("IQ1_M", x, nPerRow);
  const qwAll = imatrix && checkImatrix("IQ1_M", nPerRow, imatrix);
  const g = latticeOf("IQ1_S");
  const out = new Uint8Array(nb * 56);
  const dv = new DataView(out.buffer);
  const bs = 16;
  const masks = [0x00, 0x80, 0x08, 0x88];
  const scales = new Float32Array(16), shifts = new Int8Array(16);
  const weight = new Float32Array(bs);
  const idx = new Array<number>(bs).fill(0);
  const L = new Int8Array(bs);
  const index = new Uint16Array(2);
  const px = [new Float32Array(bs + 1), new Float32Array(bs + 1)];
  const pw = [new Float32Array(bs + 1), new Float32Array(bs + 1)];
  const sumqx = new Float32Array(4), sumq2 = new Float32Array(4);
  const p2 = X_P[2], m2 = X_M[2];
  const cp1 = fround(fround(X_P[0] * X_P[0]) - fround(X_P[1] * X_P[1]));
  const cp2 = fround(fround(X_P[1] * X_P[1]) - fround(X_P[2] * X_P[2]));
  const cm1 = fround(fround(X_M[0] * X_M[0]) - fround(X_M[1] * X_M[1]));
  const cm2 = fround(fround(X_M[1] * X_M[1]) - fround(X_M[2] * X_M[2]));
  const xxs = [X_P, X_P];
  const perRow = nPerRow / 256;
  const xxOf = (k: number, bk: number) =>
    k === 0 ? (bk < 2 ? X_P : X_M) : (bk % 2 === 0 ? X_P : X_M);
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = 56 * ibl, xo = 256 * ibl, qo = 256 * (ibl % perRow);
    let maxScale = 0;
    const sigma2 = fround(fround(2 * sumSquares(x, xo, 256)) / 256);
    for (let ib = 0; ib < 16; ib++) {
      const xb = xo + bs * ib;
      groupWeights(x, xb, bs, qwAll, qo + bs * ib, sigma2, 0, weight);
      const max = absMaxOf(x, xb, bs);
      scales[ib] = 0;
      shifts[ib] = 0;
      if (max < EPS_IQ1_M) continue;
      sortIndex(idx, x, xb);
      for (let j = 0; j < bs; j++) {
        const i = idx[j], h = i < bs / 2 ? 0 : 1;
        px[h][j + 1] = fround(px[h][j] + fround(weight[i] * x[xb + i]));
        px[1 - h][j + 1] = px[1 - h][j];
        pw[h][j + 1] = fround(pw[h][j] + weight[i]);
        pw[1 - h][j + 1] = pw[1 - h][j];
      }
      const txs = [px[0][bs], px[1][bs]], tws = [pw[0][bs], pw[1][bs]];
      let bestScore = -FLT_MAX, scale = max;
      let besti1 = -1, besti2 = -1, bestK = -1;
      const qxP = [0, 0], qxM = [0, 0], q2P = [0, 0], q2M = [0, 0];
      for (let i1 = 0; i1 <= bs; i1++) {
        for (let i2 = i1; i2 <= bs; i2++) {
          for (let h = 0; h < 2; h++) {
            const sx = fround(px[h][i1] + px[h][i2]);
            qxP[h] = fround(fround(txs[h] * p2) - sx);
            qxM[h] = fround(fround(txs[h] * m2) - sx);
            q2P[h] = fround(
              fround(
                fround(fround(tws[h] * p2) * p2) + fround(pw[h][i1] * cp1),
              ) + fround(pw[h][i2] * cp2),
            );
            q2M[h] = fround(
              fround(
                fround(fround(tws[h] * m2) * m2) + fround(pw[h][i1] * cm1),
              ) + fround(pw[h][i2] * cm2),
            );
          }
          sumqx[0] = qxP[0] + qxP[1];
          sumqx[1] = qxP[0] + qxM[1];
          sumqx[2] = qxM[0] + qxP[1];
          sumqx[3] = qxM[0] + qxM[1];
          sumq2[0] = q2P[0] + q2P[1];
          sumq2[1] = q2P[0] + q2M[1];
          sumq2[2] = q2M[0] + q2P[1];
          sumq2[3] = q2M[0] + q2M[1];
          for (let k = 0; k < 4; k++) {
            if (
              sumq2[k] > 0 &&
              fround(sumqx[k] * sumqx[k]) > fround(bestScore * sumq2[k])
            ) {
              scale = fround(sumqx[k] / sumq2[k]);
              bestScore = fround(scale * sumqx[k]);
              besti1 = i1;
              besti2 = i2;
              bestK = k;
            }
          }
        }
      }
      if (besti1 < 0 || besti2 < 0 || bestK < 0) continue;
      rankLevels(idx, besti1, besti2, scale < 0, L);
      if (scale < 0) {
        scale = -scale;
        bestK = 3 - bestK;
      }
      xxs[0] = xxOf(0, bestK);
      xxs[1] = xxOf(1, bestK);
      scale = iq1Snap(g, x, xb, weight, scale, xxs, L, index);
      out[o + 2 * ib] = index[0] & 255;
      out[o + 2 * ib + 1] = index[1] & 255;
      out[o + 32 + ib] = (index[0] >> 8) | ((index[1] >> 8) << 4);
      scales[ib] = scale;
      shifts[ib] = bestK;
      maxScale = Math.max(maxScale, scale);
    }
    if (!maxScale) continue;
    let d = fround(maxScale / 15);
    const id = fround(1 / d);
    let sqx = 0, sq2 = 0;
    const sc = new Uint16Array(4);
    for (let ib = 0; ib < 16; ib++) {
      const l = oddLevel(id, scales[ib], 7);
      sc[ib >> 2] |= l << (3 * (ib % 4));
      out[o + 32 + ib] |= masks[shifts[ib]];
      const xb = xo + bs * ib;
      groupWeights(x, xb, bs, qwAll, qo + bs * ib, sigma2, 0, weight);
      const qh = out[o + 32 + ib];
      for (let k = 0; k < 2; k++) {
        const xx = xxOf(k, shifts[ib]);
        const gi = out[o + 2 * ib + k] + ((qh << (8 - 4 * k)) & 0x700);
        for (let j = 0; j < 8; j++) {
          const w = weight[8 * k + j];
          const q = fround(xx[(g.pos[8 * gi + j] - 1) >> 1] * (2 * l + 1));
          sqx = fround(sqx + fround(fround(w * q) * x[xb + 8 * k + j]));
          sq2 = fround(sq2 + fround(fround(w * q) * q));
        }
      }
    }
    if (sq2 > 0) d = fround(sqx / sq2);
    const s = f32ToHalfBits(fround(d * D_STRETCH_IQ1_M));
    sc[0] |= (s & 0x000f) << 12;
    sc[1] |= (s & 0x00f0) << 8;
    sc[2] |= (s & 0x0f00) << 4;
    sc[3] |= s & 0xf000;
    for (let i = 0; i < 4; i++) dv.setUint16(o + 48 + 2 * i, sc[i], true);
  }
  return out;
}

/** `lroundf(v * id) + 1`: a value's ternary digit (0, 1, 2). */
const trit = (v: number, id: number) => roundAway(fround(v * id)) + 1;

/** The absolute maximum of a 256-block and its inverse (0 for an all-zero block). */
function ternaryScale(x: Float32Array, xo: number): [number, number] {
  const amax = absMaxOf(x, xo, 256);
  return [amax, amax ? fround(1 / amax) : 0];
}

/**
 * Encodes TQ1_0 as ggml's `quantize_row_tq1_0_ref` (what `llama-quantize`
 * writes; an importance matrix is not used): five ternary digits per byte.
 *
 * @param x The values (whole 256-blocks).
 * @returns The blocks (54 bytes per 256 values).
 * @throws {RangeError} When the length is not whole blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeTQ1_0 } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => (i % 3) - 1);
 * const y = dequantizeGguf("TQ1_0", quantizeTQ1_0(x), 256);
 * assert(y[4] === x[4]);
 * ```
 */
export function quantizeTQ1_0(x: Float32Array): Uint8Array {
  const nb = rowsOf("TQ1_0", x, 256);
  const out = new Uint8Array(nb * 54);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < nb; i++) {
    const o = 54 * i;
    let xo = 256 * i;
    const [d, id] = ternaryScale(x, xo);
    dv.setUint16(o + 52, f32ToHalfBits(d), true);
    const pack = (at: number, m: number, stride: number, n: number) => {
      let q = 0;
      for (let k = 0; k < n; k++) q = q * 3 + trit(x[xo + m + k * stride], id);
      if (n === 4) q *= 3; // the first value to the most significant trit
      out[at] = Math.floor((q * 256 + 242) / 243) & 255;
    };
    for (let m = 0; m < 32; m++) pack(o + m, m, 32, 5);
    xo += 160;
    for (let m = 0; m < 16; m++) pack(o + 32 + m, m, 16, 5);
    xo += 80;
    for (let j = 0; j < 4; j++) pack(o + 48 + j, j, 4, 4);
  }
  return out;
}

/**
 * Encodes TQ2_0 as ggml's `quantize_row_tq2_0_ref` (what `llama-quantize`
 * writes; an importance matrix is not used): four ternary digits per byte,
 * two bits each.
 *
 * @param x The values (whole 256-blocks).
 * @returns The blocks (66 bytes per 256 values).
 * @throws {RangeError} When the length is not whole blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeTQ2_0 } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => (i % 3) - 1);
 * const y = dequantizeGguf("TQ2_0", quantizeTQ2_0(x), 256);
 * assert(y[4] === x[4]);
 * ```
 */
export function quantizeTQ2_0(x: Float32Array): Uint8Array {
  const nb = rowsOf("TQ2_0", x, 256);
  const out = new Uint8Array(nb * 66);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < nb; i++) {
    const o = 66 * i, xo = 256 * i;
    const [d, id] = ternaryScale(x, xo);
    dv.setUint16(o + 64, f32ToHalfBits(d), true);
    for (let j = 0; j < 64; j += 32) {
      for (let m = 0; m < 32; m++) {
        let q = 0;
        for (let n = 0; n < 4; n++) {
          q += (trit(x[xo + 4 * j + m + n * 32], id) & 3) << (2 * n);
        }
        out[o + j + m] = q & 255;
      }
    }
  }
  return out;
}
