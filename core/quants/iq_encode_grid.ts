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

import { f32ToHalfBits } from "./f16.ts";
import { checkImatrix, latticeOf, rowsOf } from "./_iq_lattice.ts";
import {
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

const fround = Math.fround;
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
  const eps = s ? EPS_IQ2_S : GROUP_MAX_EPS;
  const kMaxQ = 3;
  const scales = new Float32Array(16);
  const gs = gridSearch(g, 16, kMaxQ);
  const { weight, waux, xval, L, onGrid } = gs;
  const signs = [0, 0];
  const q2 = new Uint16Array(32);
  const perRow = nPerRow / 256;
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = bb * ibl, xo = 256 * ibl, qo = 256 * (ibl % perRow);
    q2.fill(0);
    let maxScale = 0;
    const sumx2 = sumSquares(x, xo, 256);
    const sigma2 = s ? fround(fround(2 * sumx2) / 256) : fround(sumx2 / 256);
    for (let ib = 0; ib < 16; ib++) {
      const xb = xo + 16 * ib;
      groupWeights(
        x,
        xb,
        16,
        qwAll,
        qo + 16 * ib,
        sigma2,
        QUARTER,
        weight,
        waux,
      );
      for (let k = 0; k < 2; k++) {
        const sg = splitSigns(x, xb, 8 * k, weight, xval, !s);
        signs[k] = s ? sg : sg & 127;
      }
      const max = maxOf(xval, 0, 16);
      L.fill(0);
      if (max < eps) {
        scales[ib] = 0;
        continue;
      }
      onGrid.fill(true);
      let scale = searchScale(gs, max, 9, TENTH, fround(max / (2 * kMaxQ - 1)));
      if (onGrid.includes(false) && scale > 0) {
        scale = refineScale(gs, scale, true);
      }
      const signMask = s ? 255 : 127;
      if (scale < 0) {
        scale = -scale;
        signs[0] = ~signs[0] & signMask;
        signs[1] = ~signs[1] & signMask;
      }
      for (let k = 0; k < 2; k++) {
        const index = gridIndex(type, g, L, k);
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
      const l = oddLevel(id, scales[ib], 15);
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
  const gs = gridSearch(g, 32, kMaxQ);
  const { weight, waux, xval, L, onGrid } = gs;
  const signs = new Uint8Array(4);
  const perRow = nPerRow / 256;
  for (let ibl = 0; ibl < nb; ibl++) {
    const o = bb * ibl, xo = 256 * ibl, qo = 256 * (ibl % perRow);
    let maxScale = 0;
    const sigma2 = fround(fround(2 * sumSquares(x, xo, 256)) / 256);
    // ggml moves its qs and signs pointers past written sub-blocks only: an
    // all-zero sub-block leaves its place to the next one (qh and scales
    // stay by sub-block)
    let qsAt = o + 2, signsAt = o + 74;
    for (let ib = 0; ib < 8; ib++) {
      const xb = xo + 32 * ib;
      groupWeights(x, xb, 32, qwAll, qo + 32 * ib, sigma2, 0, weight, waux);
      for (let k = 0; k < 4; k++) {
        const s = splitSigns(x, xb, 8 * k, weight, xval, xxs);
        signs[k] = xxs ? s & 127 : s;
      }
      const max = maxOf(xval, 0, 32);
      L.fill(0);
      if (xxs ? max < EPS_IQ3_XXS : !max) {
        scales[ib] = 0;
        continue;
      }
      onGrid.fill(xxs);
      let scale = searchScale(
        gs,
        max,
        xxs ? 15 : 9,
        FIFTH,
        fround(max / (2 * kMaxQ - 1)),
      );
      if (onGrid.includes(false) && scale > 0) {
        scale = refineScale(gs, scale, xxs);
      }
      if (scale < 0) {
        scale = -scale;
        for (let k = 0; k < 4; k++) signs[k] = ~signs[k] & (xxs ? 127 : 255);
      }
      for (let k = 0; k < 8; k++) {
        const index = gridIndex(type, g, L, k);
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
        const l = oddLevel(id, scales[ib], 15);
        const at = o + 66 + 4 * ib;
        dv.setUint32(at, (dv.getUint32(at, true) | (l << 28)) >>> 0, true);
      }
      continue;
    }
    for (let ib = 0; ib < 8; ib += 2) {
      const l1 = oddLevel(id, scales[ib], 15);
      const l2 = oddLevel(id, scales[ib + 1], 15);
      out[o + 106 + (ib >> 1)] = l1 | (l2 << 4);
    }
  }
  return out;
}
