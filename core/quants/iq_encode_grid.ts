/**
 * Encoders of the lattice types IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S,
 * byte-identical to ggml's `quantize_iq2_xs` / `quantize_iq2_s` /
 * `quantize_iq3_xxs` / `quantize_iq3_s` (what `llama-quantize` writes,
 * with or without an importance matrix). Every float operation is rounded
 * to F32 in C's order, as in `iq_encode.ts`.
 *
 * Both search a scale per group of values, round each group to the nearest
 * lattice point and, when that point is not in the type's grid, take the
 * best of its grid neighbours (ggml's lists, `_iq_lattice.ts`).
 *
 * @module
 */

import { nearestInt } from "./_common.ts";
import { f32ToHalfBits } from "./f16.ts";
import {
  bestNeighbour,
  checkImatrix,
  latticeOf,
  rowsOf,
} from "./_iq_lattice.ts";

const fround = Math.fround;
const GROUP_MAX_EPS = fround(1e-15);
const TENTH = fround(0.1);
const FIFTH = fround(0.2);
/** IQ3_S stores its super-block scale stretched by this (ggml's 1.033f). */
const D_STRETCH = fround(1.033);
/** IQ3_XXS's (ggml's 1.0125f). */
const D_STRETCH_XXS = fround(1.0125);
const EPS_IQ3_XXS = fround(1e-8);
/** IQ2_S's `GROUP_MAX_EPS_IQ2_S`. */
const EPS_IQ2_S = fround(1e-8);
/** IQ2_S stores its super-block scale shrunk by this (ggml's 0.9875f). */
const D_SHRINK_IQ2_S = fround(0.9875);
const QUARTER = fround(0.25);

/**
 * Encodes IQ2_XS as ggml's `quantize_iq2_xs` (what `llama-quantize` writes
 * with an importance matrix, which the type requires).
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 256).
 * @param imatrix One importance weight per column.
 * @returns The super-blocks (74 bytes per 256 values).
 * @throws {RangeError} When the sizes do not fit.
 * @throws {TypeError} Without an importance matrix.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ2_XS } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeGguf("IQ2_XS", quantizeIQ2_XS(x, 256, new Float32Array(256).fill(1)), 256);
 * assert(Math.abs(y[3] - x[3]) < 0.5);
 * ```
 */
export function quantizeIQ2_XS(
  x: Float32Array,
  nPerRow: number,
  imatrix: Float32Array,
): Uint8Array {
  return iq2Impl(false, x, nPerRow, imatrix);
}

/**
 * Encodes IQ2_S as ggml's `quantize_iq2_s`, optionally weighted by an
 * importance matrix (`llama-quantize` asks for one for the IQ2 presets).
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 256); defaults to all values.
 * @param imatrix One importance weight per column, or none.
 * @returns The super-blocks (82 bytes per 256 values).
 * @throws {RangeError} When the sizes do not fit.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ2_S } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeGguf("IQ2_S", quantizeIQ2_S(x), 256);
 * assert(Math.abs(y[3] - x[3]) < 0.5);
 * ```
 */
export function quantizeIQ2_S(
  x: Float32Array,
  nPerRow: number = x.length,
  imatrix?: Float32Array,
): Uint8Array {
  return iq2Impl(true, x, nPerRow, imatrix);
}

/**
 * ggml's `quantize_row_iq2_xs_impl` and, with `s`, `quantize_row_iq2_s_impl`
 * (the 1024-entry grid, eight free sign bits, an optional matrix, the grid
 * index split into a low byte and two high bits, the scale stretched by
 * 0.9875).
 */
function iq2Impl(
  s: boolean,
  x: Float32Array,
  nPerRow: number,
  imatrix: Float32Array | undefined,
): Uint8Array {
  const type = s ? "IQ2_S" : "IQ2_XS";
  const nb = rowsOf(type, x, nPerRow);
  const qwAll = s && !imatrix
    ? undefined
    : checkImatrix(type, nPerRow, imatrix);
  const g = latticeOf(type);
  const bb = s ? 82 : 74;
  const out = new Uint8Array(nb * bb);
  const dv = new DataView(out.buffer);
  const kMaxQ = 3;
  const eps = s ? EPS_IQ2_S : GROUP_MAX_EPS;
  const scales = new Float32Array(16);
  const weight = new Float32Array(16), waux = new Float32Array(16);
  const xval = new Float32Array(16);
  const L = new Int8Array(16), Laux = new Int8Array(16);
  const onGrid = [true, true], onGridAux = [true, true];
  const signs = [0, 0];
  const q2 = new Uint16Array(32);
  const perRow = nPerRow / 256;
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = bb * ibl, xo = 256 * ibl, qo = 256 * (ibl % perRow);
    q2.fill(0);
    let maxScale = 0;
    let sumx2 = 0;
    for (let i = 0; i < 256; i++) {
      sumx2 = fround(sumx2 + fround(x[xo + i] * x[xo + i]));
    }
    const sigma2 = s ? fround(fround(2 * sumx2) / 256) : fround(sumx2 / 256);
    for (let ib = 0; ib < 16; ib++) {
      const xb = xo + 16 * ib;
      for (let i = 0; i < 16; i++) {
        const v = x[xb + i];
        weight[i] = qwAll
          ? fround(
            qwAll[qo + 16 * ib + i] *
              fround(Math.sqrt(fround(sigma2 + fround(v * v)))),
          )
          : fround(fround(QUARTER * sigma2) + fround(v * v));
        waux[i] = fround(Math.sqrt(weight[i]));
      }
      for (let k = 0; k < 2; k++) {
        let nflip = 0, sg = 0;
        for (let i = 0; i < 8; i++) {
          const v = x[xb + 8 * k + i];
          if (v >= 0) xval[8 * k + i] = v;
          else {
            xval[8 * k + i] = -v;
            nflip++;
            sg |= 1 << i;
          }
        }
        if (!s && nflip % 2) {
          let imin = 0;
          let min = fround(
            fround(weight[8 * k] * x[xb + 8 * k]) * x[xb + 8 * k],
          );
          for (let i = 1; i < 8; i++) {
            const v = x[xb + 8 * k + i];
            const ax = fround(fround(weight[8 * k + i] * v) * v);
            if (ax < min) {
              min = ax;
              imin = i;
            }
          }
          xval[8 * k + imin] = -xval[8 * k + imin];
          sg ^= 1 << imin;
        }
        signs[k] = s ? sg : sg & 127;
      }
      let max = xval[0];
      for (let i = 1; i < 16; i++) max = Math.max(max, xval[i]);
      L.fill(0);
      if (max < eps) {
        scales[ib] = 0;
        continue;
      }
      let best = 0;
      let scale = fround(max / (2 * kMaxQ - 1));
      onGrid[0] = onGrid[1] = true;
      for (let is = -9; is <= 9; is++) {
        const id = fround(fround(2 * kMaxQ - 1 + fround(is * TENTH)) / max);
        const thisScale = fround(1 / id);
        for (let k = 0; k < 2; k++) {
          let u = 0;
          for (let i = 0; i < 8; i++) {
            const l = nearestInt(
              fround(0.5 * fround(fround(id * xval[8 * k + i]) - 1)),
            );
            Laux[8 * k + i] = Math.max(0, Math.min(kMaxQ - 1, l));
            u |= Laux[8 * k + i] << (2 * i);
          }
          onGridAux[k] = true;
          if (g.map[u] < 0) {
            onGridAux[k] = false;
            bestNeighbour(g, u, xval, 8 * k, waux, thisScale, Laux);
          }
        }
        let sumqx = 0, sumq2 = 0;
        for (let i = 0; i < 16; i++) {
          const w = weight[i], q = 2 * Laux[i] + 1;
          sumqx = fround(sumqx + fround(fround(w * xval[i]) * q));
          sumq2 = fround(sumq2 + fround(fround(w * q) * q));
        }
        if (
          sumq2 > 0 && fround(sumqx * sumqx) > fround(best * sumq2)
        ) {
          scale = fround(sumqx / sumq2);
          best = fround(scale * sumqx);
          L.set(Laux);
          onGrid[0] = onGridAux[0];
          onGrid[1] = onGridAux[1];
        }
      }
      if ((!onGrid[0] || !onGrid[1]) && scale > 0) {
        const id = fround(1 / scale);
        for (let k = 0; k < 2; k++) {
          if (onGrid[k]) continue;
          let u = 0;
          for (let i = 0; i < 8; i++) {
            let l = nearestInt(
              fround(0.5 * fround(fround(id * xval[8 * k + i]) - 1)),
            );
            l = Math.max(0, Math.min(kMaxQ - 1, l));
            u |= l << (2 * i);
            L[8 * k + i] = l;
          }
          if (g.map[u] < 0) bestNeighbour(g, u, xval, 8 * k, waux, scale, L);
        }
        let sumqx = 0, sumq2 = 0;
        for (let i = 0; i < 16; i++) {
          const w = weight[i], q = 2 * L[i] + 1;
          sumqx = fround(sumqx + fround(fround(w * xval[i]) * q));
          sumq2 = fround(sumq2 + fround(fround(w * q) * q));
        }
        if (sumq2 > 0) scale = fround(sumqx / sumq2);
      }
      const signMask = s ? 255 : 127;
      if (scale < 0) {
        scale = -scale;
        signs[0] = ~signs[0] & signMask;
        signs[1] = ~signs[1] & signMask;
      }
      for (let k = 0; k < 2; k++) {
        let u = 0;
        for (let i = 0; i < 8; i++) u |= L[8 * k + i] << (2 * i);
        const index = g.map[u];
        if (index < 0) {
          throw new RangeError(`${type}: levels ${u} are not on the grid`);
        }
        if (s) {
          const i8 = 2 * ib + k;
          out[o + 2 + i8] = index & 255;
          out[o + 66 + (i8 >> 2)] |= (index >> 8) << (2 * (i8 % 4));
          out[o + 34 + i8] = signs[k];
        } else q2[2 * ib + k] = index | (signs[k] << 9);
      }
      scales[ib] = scale;
      maxScale = Math.max(maxScale, scale);
    }
    if (!maxScale) continue; // d = 0, scales 0 (IQ2_XS: qs 0 too)
    const d = fround(maxScale / 31);
    dv.setUint16(o, f32ToHalfBits(s ? fround(d * D_SHRINK_IQ2_S) : d), true);
    const id = fround(1 / d);
    for (let ib = 0; ib < 16; ib++) {
      let l = nearestInt(fround(0.5 * fround(fround(id * scales[ib]) - 1)));
      l = Math.max(0, Math.min(15, l));
      out[o + (s ? 74 : 66) + (ib >> 1)] |= ib % 2 ? l << 4 : l;
    }
    if (!s) {
      for (let i = 0; i < 32; i++) dv.setUint16(o + 2 + 2 * i, q2[i], true);
    }
  }
  return out;
}

/**
 * Encodes IQ3_S as ggml's `quantize_iq3_s` (what `llama-quantize` writes),
 * optionally weighted by an importance matrix.
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 256); defaults to all values.
 * @param imatrix One importance weight per column, or none.
 * @returns The super-blocks (110 bytes per 256 values).
 * @throws {RangeError} When the sizes do not fit.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ3_S } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeGguf("IQ3_S", quantizeIQ3_S(x), 256);
 * assert(Math.abs(y[3] - x[3]) < 0.25);
 * ```
 */
export function quantizeIQ3_S(
  x: Float32Array,
  nPerRow: number = x.length,
  imatrix?: Float32Array,
): Uint8Array {
  return iq3Impl(false, x, nPerRow, imatrix);
}

/**
 * Encodes IQ3_XXS as ggml's `quantize_iq3_xxs` (what `llama-quantize`
 * writes), optionally weighted by an importance matrix.
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 256); defaults to all values.
 * @param imatrix One importance weight per column, or none.
 * @returns The super-blocks (98 bytes per 256 values).
 * @throws {RangeError} When the sizes do not fit.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ3_XXS } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeGguf("IQ3_XXS", quantizeIQ3_XXS(x), 256);
 * assert(Math.abs(y[3] - x[3]) < 0.3);
 * ```
 */
export function quantizeIQ3_XXS(
  x: Float32Array,
  nPerRow: number = x.length,
  imatrix?: Float32Array,
): Uint8Array {
  return iq3Impl(true, x, nPerRow, imatrix);
}

/**
 * ggml's `quantize_row_iq3_s_impl` and, with `xxs`, the 256-entry grid of
 * `quantize_row_iq3_xxs_impl` (signs as 7-bit codes with a parity flip, a
 * wider scale search, on-grid groups kept in the last pass, scale and signs
 * packed in one u32 per sub-block).
 */
function iq3Impl(
  xxs: boolean,
  x: Float32Array,
  nPerRow: number,
  imatrix: Float32Array | undefined,
): Uint8Array {
  const type = xxs ? "IQ3_XXS" : "IQ3_S";
  const nb = rowsOf(type, x, nPerRow);
  const qwAll = imatrix && checkImatrix(type, nPerRow, imatrix);
  const g = latticeOf(xxs ? "IQ3_XXS" : "IQ3_S");
  const bb = xxs ? 98 : 110;
  const out = new Uint8Array(nb * bb);
  const dv = new DataView(out.buffer);
  const kMaxQ = 8;
  const scales = new Float32Array(8);
  const weight = new Float32Array(32), waux = new Float32Array(32);
  const xval = new Float32Array(32);
  const L = new Int8Array(32), Laux = new Int8Array(32);
  const onGrid = new Array<boolean>(8), onGridAux = new Array<boolean>(8);
  const signs = new Uint8Array(4);
  const perRow = nPerRow / 256;
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = bb * ibl, xo = 256 * ibl, qo = 256 * (ibl % perRow);
    let maxScale = 0;
    let sumx2 = 0;
    for (let i = 0; i < 256; i++) {
      sumx2 = fround(sumx2 + fround(x[xo + i] * x[xo + i]));
    }
    const sigma2 = fround(fround(2 * sumx2) / 256);
    // ggml moves its qs and signs pointers past written sub-blocks only: an
    // all-zero sub-block leaves its place to the next one (qh and scales
    // stay by sub-block)
    let qsAt = o + 2, signsAt = o + 74;
    for (let ib = 0; ib < 8; ib++) {
      const xb = xo + 32 * ib;
      for (let i = 0; i < 32; i++) {
        const v = x[xb + i];
        weight[i] = qwAll
          ? fround(
            qwAll[qo + 32 * ib + i] *
              fround(Math.sqrt(fround(sigma2 + fround(v * v)))),
          )
          : fround(v * v);
        waux[i] = fround(Math.sqrt(weight[i]));
      }
      for (let k = 0; k < 4; k++) {
        let s = 0, nflip = 0;
        for (let i = 0; i < 8; i++) {
          const v = x[xb + 8 * k + i];
          if (v >= 0) xval[8 * k + i] = v;
          else {
            xval[8 * k + i] = -v;
            nflip++;
            s |= 1 << i;
          }
        }
        if (xxs && nflip % 2) {
          let imin = 0;
          let min = fround(
            fround(weight[8 * k] * x[xb + 8 * k]) * x[xb + 8 * k],
          );
          for (let i = 1; i < 8; i++) {
            const v = x[xb + 8 * k + i];
            const ax = fround(fround(weight[8 * k + i] * v) * v);
            if (ax < min) {
              min = ax;
              imin = i;
            }
          }
          xval[8 * k + imin] = -xval[8 * k + imin];
          s ^= 1 << imin;
        }
        signs[k] = xxs ? s & 127 : s;
      }
      let max = xval[0];
      for (let i = 1; i < 32; i++) max = Math.max(max, xval[i]);
      L.fill(0);
      if (xxs ? max < EPS_IQ3_XXS : !max) {
        scales[ib] = 0;
        continue;
      }
      let best = 0;
      let scale = fround(max / (2 * kMaxQ - 1));
      onGrid.fill(xxs);
      const isMax = xxs ? 15 : 9;
      for (let is = -isMax; is <= isMax; is++) {
        const id = fround(fround(2 * kMaxQ - 1 + fround(is * FIFTH)) / max);
        const thisScale = fround(1 / id);
        for (let k = 0; k < 8; k++) {
          let u = 0;
          for (let i = 0; i < 4; i++) {
            const l = nearestInt(
              fround(0.5 * fround(fround(id * xval[4 * k + i]) - 1)),
            );
            Laux[4 * k + i] = Math.max(0, Math.min(kMaxQ - 1, l));
            u |= Laux[4 * k + i] << (3 * i);
          }
          onGridAux[k] = true;
          if (g.map[u] < 0) {
            onGridAux[k] = false;
            bestNeighbour(g, u, xval, 4 * k, waux, thisScale, Laux);
          }
        }
        let sumqx = 0, sumq2 = 0;
        for (let i = 0; i < 32; i++) {
          const w = weight[i], q = 2 * Laux[i] + 1;
          sumqx = fround(sumqx + fround(fround(w * xval[i]) * q));
          sumq2 = fround(sumq2 + fround(fround(w * q) * q));
        }
        if (sumq2 > 0 && fround(sumqx * sumqx) > fround(best * sumq2)) {
          scale = fround(sumqx / sumq2);
          best = fround(scale * sumqx);
          L.set(Laux);
          for (let k = 0; k < 8; k++) onGrid[k] = onGridAux[k];
        }
      }
      if (onGrid.includes(false) && scale > 0) {
        const id = fround(1 / scale);
        for (let k = 0; k < 8; k++) {
          if (xxs && onGrid[k]) continue;
          let u = 0;
          for (let i = 0; i < 4; i++) {
            let l = nearestInt(
              fround(0.5 * fround(fround(id * xval[4 * k + i]) - 1)),
            );
            l = Math.max(0, Math.min(kMaxQ - 1, l));
            u |= l << (3 * i);
          }
          let index = g.map[u];
          if (index < 0) {
            index = bestNeighbour(g, u, xval, 4 * k, waux, scale, L);
          }
          for (let i = 0; i < 4; i++) {
            L[4 * k + i] = (g.pos[4 * index + i] - 1) >> 1;
          }
        }
        let sumqx = 0, sumq2 = 0;
        for (let i = 0; i < 32; i++) {
          const w = weight[i], q = 2 * L[i] + 1;
          sumqx = fround(sumqx + fround(fround(w * xval[i]) * q));
          sumq2 = fround(sumq2 + fround(fround(w * q) * q));
        }
        if (sumq2 > 0) scale = fround(sumqx / sumq2);
      }
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) signs[k] = ~signs[k] & (xxs ? 127 : 255);
      }
      for (let k = 0; k < 8; k++) {
        let u = 0;
        for (let i = 0; i < 4; i++) u |= L[4 * k + i] << (3 * i);
        const index = g.map[u];
        if (index < 0) {
          throw new RangeError(`${type}: levels ${u} are not on the grid`);
        }
        if (xxs) out[o + 2 + 8 * ib + k] = index;
        else {
          out[qsAt + k] = index & 255;
          out[o + 66 + ib] |= (index >> 8) << k;
        }
      }
      if (xxs) {
        dv.setUint32(
          o + 66 + 4 * ib,
          signs[0] | (signs[1] << 7) | (signs[2] << 14) | (signs[3] << 21),
          true,
        );
      } else {
        qsAt += 8;
        out.set(signs, signsAt);
        signsAt += 4;
      }
      scales[ib] = scale;
      maxScale = Math.max(maxScale, scale);
    }
    if (!maxScale) {
      // ggml clears IQ3_XXS's qs (the signs too), leaves IQ3_S's as written
      if (xxs) out.fill(0, o, o + bb);
      continue;
    }
    const d = fround(maxScale / 31);
    dv.setUint16(
      o,
      f32ToHalfBits(fround(d * (xxs ? D_STRETCH_XXS : D_STRETCH))),
      true,
    );
    const id = fround(1 / d);
    if (xxs) {
      for (let ib = 0; ib < 8; ib++) {
        const l = Math.max(
          0,
          Math.min(
            15,
            nearestInt(fround(0.5 * fround(fround(id * scales[ib]) - 1))),
          ),
        );
        const at = o + 66 + 4 * ib;
        dv.setUint32(at, (dv.getUint32(at, true) | (l << 28)) >>> 0, true);
      }
      continue;
    }
    for (let ib = 0; ib < 8; ib += 2) {
      const l1 = Math.max(
        0,
        Math.min(
          15,
          nearestInt(fround(0.5 * fround(fround(id * scales[ib]) - 1))),
        ),
      );
      const l2 = Math.max(
        0,
        Math.min(
          15,
          nearestInt(fround(0.5 * fround(fround(id * scales[ib + 1]) - 1))),
        ),
      );
      out[o + 106 + (ib >> 1)] = l1 | (l2 << 4);
    }
  }
  return out;
}
