/**
 * The encoders llama-quantize uses when it has an importance matrix
 * (ggml's `quantize_row_q2_K_impl`, `_q3_K_impl`, `_q4_K_impl`, `_q5_K_impl`, `_q6_K_impl`,
 * `_q4_0_impl`, `_q4_1_impl`, `_q5_0_impl`, `_q5_1_impl` with their `quant_weights`, and `make_qkx3_quants`,
 * `make_qp_quants`, `make_qx_quants` with weights), every float operation
 * rounded to F32 as C does. They work row by row: the weights are one per
 * column of a row.
 *
 * @module
 */

import type { DTypeName } from "../dtypes.ts";
import { UnsupportedDTypeError } from "../errors.ts";
import {
  nearestInt,
  pack2,
  packQ3Codes,
  packScalesK4,
  scaleMinK4,
} from "./_common.ts";
import { GROUP_MAX_EPS, makeQxQuants } from "./_k_search.ts";
import { makeQp } from "./_qp_search.ts";
import { f32ToHalfBits, readHalf, writeHalf } from "./f16.ts";
import { quantizeQ8_0 } from "./legacy.ts";
import { quantizeIQ4_NL, quantizeIQ4_XS } from "./iq_encode.ts";
import {
  quantizeIQ2_S,
  quantizeIQ2_XS,
  quantizeIQ3_S,
  quantizeIQ3_XXS,
} from "./iq_encode_grid.ts";
import {
  quantizeIQ1_M,
  quantizeIQ1_S,
  quantizeIQ2_XXS,
  quantizeTQ1_0,
  quantizeTQ2_0,
} from "./iq_encode_low.ts";

const f = Math.fround;

/** `Σ x²` over `x[s..s+n)`, accumulated in F32 in order. */
function sumSquares(x: Float32Array, s: number, n: number): number {
  let sum = 0;
  for (let j = 0; j < n; j++) sum = f(sum + f(x[s + j] * x[s + j]));
  return sum;
}

/**
 * ggml's per-value weights `qw · sqrt(sigma2 + x²)` of `x[s..s+n)` (with
 * `qw[qo..qo+n)`) into `w[0..n)`; returns their F32 sum.
 */
function sigmaWeights(
  x: Float32Array,
  s: number,
  qw: Float32Array,
  qo: number,
  sigma2: number,
  n: number,
  w: Float32Array,
): number {
  let sum = 0;
  for (let l = 0; l < n; l++) {
    const xv = x[s + l];
    w[l] = f(qw[qo + l] * f(Math.sqrt(f(sigma2 + f(xv * xv)))));
    sum = f(sum + w[l]);
  }
  return sum;
}

/** `make_qkx3_quants` with weights, `use_mad = false`; the min goes to `mins[mi]`. */
function makeQkx3(
  n: number,
  nmax: number,
  x: Float32Array,
  s: number,
  w: Float32Array,
  L: Int32Array,
  lo: number,
  mins: Float32Array,
  mi: number,
  Laux: Int32Array,
  rmin: number,
  rdelta: number,
  nstep: number,
): number {
  let min = x[s], max = x[s];
  let sumW = w[0];
  let sumX = f(sumW * x[s]);
  for (let i = 1; i < n; i++) {
    const xi = x[s + i];
    if (xi < min) min = xi;
    if (xi > max) max = xi;
    sumW = f(sumW + w[i]);
    sumX = f(sumX + f(w[i] * xi));
  }
  if (min > 0) min = 0;
  if (max <= min) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    mins[mi] = -min;
    return 0;
  }
  let iscale = f(nmax / f(max - min));
  let scale = f(1 / iscale);
  let bestMad = 0;
  for (let i = 0; i < n; i++) {
    const l = nearestInt(f(iscale * f(x[s + i] - min)));
    L[lo + i] = Math.max(0, Math.min(nmax, l));
    let diff = f(f(f(scale * L[lo + i]) + min) - x[s + i]);
    diff = f(diff * diff);
    bestMad = f(bestMad + f(w[i] * diff));
  }
  if (nstep < 1) {
    mins[mi] = -min;
    return scale;
  }
  for (let is = 0; is <= nstep; is++) {
    iscale = f(f(f(rmin + f(rdelta * is)) + nmax) / f(max - min));
    let sumL = 0, sumL2 = 0, sumXL = 0;
    for (let i = 0; i < n; i++) {
      let l = nearestInt(f(iscale * f(x[s + i] - min)));
      l = Math.max(0, Math.min(nmax, l));
      Laux[i] = l;
      const wi = w[i];
      sumL = f(sumL + f(wi * l));
      sumL2 = f(sumL2 + f(f(wi * l) * l));
      sumXL = f(sumXL + f(f(wi * l) * x[s + i]));
    }
    const D = f(f(sumW * sumL2) - f(sumL * sumL));
    if (D > 0) {
      let thisScale = f(f(f(sumW * sumXL) - f(sumX * sumL)) / D);
      let thisMin = f(f(f(sumL2 * sumX) - f(sumL * sumXL)) / D);
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = f(sumXL / sumL2);
      }
      let mad = 0;
      for (let i = 0; i < n; i++) {
        let diff = f(f(f(thisScale * Laux[i]) + thisMin) - x[s + i]);
        diff = f(diff * diff);
        mad = f(mad + f(w[i] * diff));
      }
      if (mad < bestMad) {
        for (let i = 0; i < n; i++) L[lo + i] = Laux[i];
        bestMad = mad;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  mins[mi] = -min;
  return scale;
}

/** One 256-block of Q4_K (nmax 15) or Q5_K (nmax 31), codes left in `L`. */
function k4Block(
  x: Float32Array,
  s: number,
  qw: Float32Array,
  qo: number,
  out: Uint8Array,
  o: number,
  nmax: number,
  L: Int32Array,
): void {
  const weights = new Float32Array(32), sw = new Float32Array(8);
  const mins = new Float32Array(8), scales = new Float32Array(8);
  const Laux = new Int32Array(32), Ls = new Int32Array(8);
  const Lm = new Int32Array(8), sm = new Int32Array(2);
  const sigma2 = f(f(2 * sumSquares(x, s, 256)) / 256);
  for (let j = 0; j < 8; j++) {
    sw[j] = sigmaWeights(x, s + 32 * j, qw, qo + 32 * j, sigma2, 32, weights);
    scales[j] = makeQkx3(
      32,
      nmax,
      x,
      s + 32 * j,
      weights,
      L,
      32 * j,
      mins,
      j,
      Laux,
      f(-0.9),
      f(0.05),
      36,
    );
  }
  const dBlock = makeQp(8, 63, scales, Ls, sw);
  const mBlock = makeQp(8, 63, mins, Lm, sw);
  for (let j = 0; j < 8; j++) {
    const ls = Math.min(63, Ls[j]) & 255, lm = Math.min(63, Lm[j]) & 255;
    packScalesK4(out, o + 4, j, ls, lm);
  }
  writeHalf(out, o, dBlock);
  writeHalf(out, o + 2, mBlock);
  const dAll = readHalf(out, o), mAll = readHalf(out, o + 2);
  for (let j = 0; j < 8; j++) {
    scaleMinK4(j, out, o + 4, sm);
    const d = f(dAll * sm[0]);
    if (!d) continue;
    const dm = f(mAll * sm[1]);
    for (let ii = 0; ii < 32; ii++) {
      const l = nearestInt(f(f(x[s + 32 * j + ii] + dm) / d));
      L[32 * j + ii] = Math.max(0, Math.min(nmax, l));
    }
  }
}

function q4K(
  x: Float32Array,
  s: number,
  qw: Float32Array,
  out: Uint8Array,
  o: number,
) {
  const L = new Int32Array(256);
  k4Block(x, s, qw, 0, out, o, 15, L);
  for (let j = 0, q = o + 16; j < 256; j += 64, q += 32) {
    for (let l = 0; l < 32; l++) out[q + l] = L[j + l] | (L[j + l + 32] << 4);
  }
}

function q5K(
  x: Float32Array,
  s: number,
  qw: Float32Array,
  out: Uint8Array,
  o: number,
) {
  const L = new Int32Array(256);
  k4Block(x, s, qw, 0, out, o, 31, L);
  const qh = o + 16;
  let ql = o + 48, m1 = 1, m2 = 2;
  for (let n = 0; n < 256; n += 64) {
    for (let j = 0; j < 32; j++) {
      let l1 = L[n + j], l2 = L[n + j + 32];
      if (l1 > 15) l1 -= 16, out[qh + j] |= m1;
      if (l2 > 15) l2 -= 16, out[qh + j] |= m2;
      out[ql + j] = l1 | (l2 << 4);
    }
    m1 <<= 2;
    m2 <<= 2;
    ql += 32;
  }
}

function q6K(
  x: Float32Array,
  s: number,
  qw: Float32Array,
  out: Uint8Array,
  o: number,
) {
  const L = new Int32Array(256), scales = new Float32Array(16);
  let maxScale = 0, maxAbs = 0;
  for (let ib = 0; ib < 16; ib++) {
    const sc = makeQxQuants(16, 32, x, s + 16 * ib, L, 16 * ib, qw, 16 * ib);
    scales[ib] = sc;
    if (Math.abs(sc) > maxAbs) maxAbs = Math.abs(sc), maxScale = sc;
  }
  if (maxAbs < GROUP_MAX_EPS) {
    out.fill(0, o, o + 210);
    return;
  }
  const iscale = f(-128 / maxScale);
  writeHalf(out, o + 208, f(1 / iscale));
  for (let ib = 0; ib < 16; ib++) {
    out[o + 192 + ib] = Math.min(127, nearestInt(f(iscale * scales[ib]))) & 255;
  }
  const dAll = readHalf(out, o + 208);
  for (let j = 0; j < 16; j++) {
    const d = f(dAll * ((out[o + 192 + j] << 24) >> 24));
    if (!d) continue;
    for (let ii = 0; ii < 16; ii++) {
      const l = nearestInt(f(x[s + 16 * j + ii] / d));
      L[16 * j + ii] = Math.max(-32, Math.min(31, l)) + 32;
    }
  }
  for (let j = 0, ql = o, qh = o + 128; j < 256; j += 128, ql += 64, qh += 32) {
    for (let l = 0; l < 32; l++) {
      out[ql + l] = (L[j + l] & 15) | ((L[j + l + 64] & 15) << 4);
      out[ql + l + 32] = (L[j + l + 32] & 15) | ((L[j + l + 96] & 15) << 4);
      out[qh + l] = (L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
        ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6);
    }
  }
}

/** One 256-block of Q2_K with weights (`quantize_row_q2_K_impl`). */
function q2K(
  x: Float32Array,
  s: number,
  qw: Float32Array,
  out: Uint8Array,
  o: number,
) {
  const L = new Int32Array(256), Laux = new Int32Array(16);
  const mins = new Float32Array(16), scales = new Float32Array(16);
  const sw = new Float32Array(16), weight = new Float32Array(16);
  const Ls = new Int32Array(16), Lm = new Int32Array(16);
  const sigma2 = f(sumSquares(x, s, 256) / 256);
  for (let j = 0; j < 16; j++) {
    sw[j] = sigmaWeights(x, s + 16 * j, qw, 16 * j, sigma2, 16, weight);
    scales[j] = makeQkx3(
      16,
      3,
      x,
      s + 16 * j,
      weight,
      L,
      16 * j,
      mins,
      j,
      Laux,
      f(-0.9),
      f(0.05),
      36,
    );
  }
  const dm0 = makeQp(16, 15, scales, Ls, sw);
  const mm0 = makeQp(16, 15, mins, Lm, sw);
  writeHalf(out, o + 80, dm0);
  writeHalf(out, o + 82, mm0);
  const dm = readHalf(out, o + 80), mm = readHalf(out, o + 82);
  for (let j = 0; j < 16; j++) out[o + j] = (Ls[j] | (Lm[j] << 4)) & 255;
  for (let j = 0; j < 16; j++) {
    const d = f(dm * (out[o + j] & 0xf));
    if (!d) continue;
    const m = f(mm * (out[o + j] >> 4));
    for (let ii = 0; ii < 16; ii++) {
      const l = nearestInt(f(f(x[s + 16 * j + ii] + m) / d));
      L[16 * j + ii] = Math.max(0, Math.min(3, l));
    }
  }
  pack2(L, out, o + 16);
}

/** One 256-block of Q3_K with weights (`quantize_row_q3_K_impl`). */
function q3K(
  x: Float32Array,
  s: number,
  qw: Float32Array,
  out: Uint8Array,
  o: number,
) {
  const L = new Int32Array(256), scales = new Float32Array(16);
  const weight = new Float32Array(16), sw = new Float32Array(16);
  const Ls = new Int32Array(16);
  const sigma2 = f(f(2 * sumSquares(x, s, 256)) / 256);
  for (let j = 0; j < 16; j++) {
    sw[j] = sigmaWeights(x, s + 16 * j, qw, 16 * j, sigma2, 16, weight);
    scales[j] = makeQxQuants(16, 4, x, s + 16 * j, L, 16 * j, weight, 0);
  }
  const sc = o + 96;
  out.fill(0, sc, sc + 12);
  const dBlock = makeQxQuants(16, 32, scales, 0, Ls, 0, sw, 0);
  for (let j = 0; j < 16; j++) {
    let l = Ls[j];
    if (j < 8) out[sc + j] = l & 0xf;
    else out[sc + j - 8] |= (l & 0xf) << 4;
    l >>= 4;
    out[sc + 8 + (j % 4)] |= l << (2 * (j >> 2));
  }
  writeHalf(out, o + 108, dBlock);
  const dAll = readHalf(out, o + 108);
  for (let j = 0; j < 16; j++) {
    const lo4 = j < 8 ? out[sc + j] & 0xf : out[sc + j - 8] >> 4;
    const scv = (((lo4 | (((out[sc + 8 + (j % 4)] >> (2 * (j >> 2))) & 3) <<
      4)) << 24) >> 24) - 32;
    const d = f(dAll * scv);
    if (!d) continue;
    for (let ii = 0; ii < 16; ii++) {
      const l = nearestInt(f(x[s + 16 * j + ii] / d));
      L[16 * j + ii] = Math.max(-4, Math.min(3, l)) + 4;
    }
  }
  out.fill(0, o, o + 32);
  packQ3Codes(L, out, o);
}

/**
 * One row of a 32-block legacy type with weights (`quantize_row_q4_0_impl`,
 * `_q4_1_impl`, `_q5_0_impl`, `_q5_1_impl`).
 */
function legacyRow(
  type: "Q4_0" | "Q4_1" | "Q5_0" | "Q5_1",
  x: Float32Array,
  s: number,
  n: number,
  qw: Float32Array,
  out: Uint8Array,
  o: number,
) {
  const sigma2 = f(sumSquares(x, s, n) / n);
  const w = new Float32Array(32), L = new Int32Array(32);
  const Laux = new Int32Array(32), min = new Float32Array(1);
  const bb = BLOCK[type]![1];
  const dv = new DataView(out.buffer, out.byteOffset);
  for (let ib = 0; ib < n / 32; ib++) {
    const xs = s + 32 * ib;
    sigmaWeights(x, xs, qw, 32 * ib, sigma2, 32, w);
    const b = o + bb * ib;
    let q = b + 2;
    if (type === "Q4_0" || type === "Q5_0") {
      const d = makeQxQuants(32, type === "Q4_0" ? 8 : 16, x, xs, L, 0, w, 0);
      dv.setUint16(b, f32ToHalfBits(d), true);
    } else {
      const d = makeQkx3(
        32,
        type === "Q4_1" ? 15 : 31,
        x,
        xs,
        w,
        L,
        0,
        min,
        0,
        Laux,
        f(-0.9),
        f(0.05),
        36,
      );
      dv.setUint16(b, f32ToHalfBits(d), true);
      dv.setUint16(b + 2, f32ToHalfBits(-min[0]), true);
      q += 2;
    }
    if (type === "Q4_0" || type === "Q4_1") {
      for (let j = 0; j < 16; j++) out[q + j] = L[j] | (L[j + 16] << 4);
      continue;
    }
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const a = L[j] & 255, c = L[j + 16] & 255;
      out[q + 4 + j] = (a & 15) | ((c & 15) << 4);
      qh |= ((a & 0x10) >>> 4) << j;
      qh |= ((c & 0x10) >>> 4) << (j + 16);
    }
    dv.setUint32(q, qh >>> 0, true);
  }
}

/**
 * Types {@link quantizeWithImatrix} encodes with an importance matrix.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { IMATRIX_QUANTIZE_TYPES } from "./k_encode_imatrix.ts";
 * assert(IMATRIX_QUANTIZE_TYPES.includes("Q4_K"));
 * ```
 */
export const IMATRIX_QUANTIZE_TYPES: readonly DTypeName[] = [
  "Q2_K",
  "Q3_K",
  "Q4_K",
  "Q5_K",
  "Q6_K",
  "Q4_0",
  "Q4_1",
  "Q5_0",
  "Q5_1",
  "Q8_0",
  "IQ4_NL",
  "IQ4_XS",
  "IQ3_S",
  "IQ2_XS",
  "IQ3_XXS",
  "IQ2_XXS",
  "IQ2_S",
  "IQ1_S",
  "IQ1_M",
  "TQ1_0",
  "TQ2_0",
];

/** The IQ encoders that take the matrix (one row at a time). */
const IQ_ROW: Partial<
  Record<
    DTypeName,
    (x: Float32Array, perRow: number, w: Float32Array) => Uint8Array
  >
> = {
  IQ4_NL: quantizeIQ4_NL,
  IQ4_XS: quantizeIQ4_XS,
  IQ3_S: quantizeIQ3_S,
  IQ2_XS: quantizeIQ2_XS,
  IQ3_XXS: quantizeIQ3_XXS,
  IQ2_XXS: quantizeIQ2_XXS,
  IQ2_S: quantizeIQ2_S,
  IQ1_S: quantizeIQ1_S,
  IQ1_M: quantizeIQ1_M,
};

const BLOCK: Partial<Record<DTypeName, [number, number]>> = {
  Q2_K: [256, 84],
  Q3_K: [256, 110],
  Q4_K: [256, 144],
  Q5_K: [256, 176],
  Q6_K: [256, 210],
  Q4_0: [32, 18],
  Q4_1: [32, 20],
  Q5_0: [32, 22],
  Q5_1: [32, 24],
};

/**
 * Encodes rows as llama-quantize does with an importance matrix
 * (`ggml_quantize_chunk` with `quant_weights`): Q4_K, Q5_K, Q6_K, Q4_0,
 * Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, IQ3_S, IQ3_XXS, IQ2_XS, IQ2_XXS, IQ2_S,
 * IQ1_S and IQ1_M with their weighted searches, Q2_K and Q3_K too; Q8_0,
 * TQ1_0 and TQ2_0 ignore the weights.
 *
 * @param type The target type.
 * @param x Values, `rows × perRow`.
 * @param perRow Values per row.
 * @param weights One weight per column (`perRow`), or per column of each
 * expert matrix one after another when `rowsPerMatrix` is given.
 * @param rowsPerMatrix Rows per expert matrix (3-D tensors). @default {all rows}
 * @returns The blocks.
 * @throws {UnsupportedDTypeError} For a type without a weighted encoder here.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { quantizeWithImatrix } from "./k_encode_imatrix.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const out = quantizeWithImatrix("Q4_K", x, 256, new Float32Array(256).fill(1));
 * assert(out.length === 144);
 * ```
 */
export function quantizeWithImatrix(
  type: DTypeName,
  x: Float32Array,
  perRow: number,
  weights: Float32Array,
  rowsPerMatrix?: number,
): Uint8Array {
  // ggml's Q8_0, TQ1_0 and TQ2_0 quantizers take no weights
  if (type === "Q8_0") return quantizeQ8_0(x);
  if (type === "TQ1_0") return quantizeTQ1_0(x);
  if (type === "TQ2_0") return quantizeTQ2_0(x);
  const iqRow = IQ_ROW[type];
  if (iqRow) {
    const rows = x.length / perRow, per = rowsPerMatrix ?? rows;
    const parts: Uint8Array[] = [];
    for (let r = 0; r < rows; r++) {
      const m = Math.floor(r / per);
      parts.push(iqRow(
        x.subarray(r * perRow, (r + 1) * perRow),
        perRow,
        weights.subarray(m * perRow, (m + 1) * perRow),
      ));
    }
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
  const b = BLOCK[type];
  if (!b) {
    throw new UnsupportedDTypeError(
      type,
      `modelhost has no importance-matrix encoder for ${type} (it has ${
        IMATRIX_QUANTIZE_TYPES.join(", ")
      })`,
    );
  }
  const [bs, bb] = b;
  const rows = x.length / perRow;
  const rowBytes = (perRow / bs) * bb;
  const out = new Uint8Array(rows * rowBytes);
  const per = rowsPerMatrix ?? rows;
  for (let r = 0; r < rows; r++) {
    const m = Math.floor(r / per);
    const qwRow = weights.subarray(m * perRow, (m + 1) * perRow);
    const s = r * perRow, o = r * rowBytes;
    if (bs === 32) {
      legacyRow(
        type as "Q4_0" | "Q4_1" | "Q5_0" | "Q5_1",
        x,
        s,
        perRow,
        qwRow,
        out,
        o,
      );
      continue;
    }
    for (let i = 0; i < perRow / 256; i++) {
      const qw = qwRow.subarray(256 * i, 256 * i + 256);
      const enc = type === "Q2_K"
        ? q2K
        : type === "Q3_K"
        ? q3K
        : type === "Q4_K"
        ? q4K
        : type === "Q5_K"
        ? q5K
        : q6K;
      enc(x, s + 256 * i, qw, out, o + bb * i);
    }
  }
  return out;
}
