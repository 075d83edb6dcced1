/**
 * The 256-element ggml "K" super-block types: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K
 * and Q8_K. Decoders match ggml's `dequantize_row_*`; encoders match its
 * reference `quantize_row_*_ref` bit for bit (what `llama-quantize` writes
 * without an importance matrix), including the scale searches
 * `make_qx_quants`, `make_q3_quants` and `make_qkx2_quants`, with every
 * float operation rounded to F32 as C does.
 *
 * Block layouts (bytes): Q2_K = scales[16], qs[64], d:f16, dmin:f16 (84);
 * Q3_K = hmask[32], qs[64], scales[12], d:f16 (110); Q4_K = d:f16,
 * dmin:f16, scales[12], qs[128] (144); Q5_K = d:f16, dmin:f16, scales[12],
 * qh[32], qs[128] (176); Q6_K = ql[128], qh[64], scales:i8[16], d:f16 (210);
 * Q8_K = d:f32, qs:i8[256], bsums:i16[16] (292).
 *
 * @module
 */

import {
  checkBlocks,
  checkValues,
  f32ToHalfBits,
  HALF_TO_F32,
  nearestInt,
} from "./_common.ts";

const fround = Math.fround;
/** ggml's `GROUP_MAX_EPS`: groups with a smaller absolute max are all zero. */
const GROUP_MAX_EPS = Math.fround(1e-15);
const F_0_1 = Math.fround(0.1);

function half(src: Uint8Array, o: number): number {
  return HALF_TO_F32[src[o] | (src[o + 1] << 8)];
}

function putHalf(out: Uint8Array, o: number, v: number): void {
  const h = f32ToHalfBits(v);
  out[o] = h & 255;
  out[o + 1] = h >> 8;
}

/** The 6-bit scale and min of sub-block `j` from the 12 packed bytes at `q`. */
function scaleMinK4(j: number, b: Uint8Array, q: number, sm: Int32Array): void {
  if (j < 4) {
    sm[0] = b[q + j] & 63;
    sm[1] = b[q + j + 4] & 63;
  } else {
    sm[0] = (b[q + j + 4] & 0xf) | ((b[q + j - 4] >> 6) << 4);
    sm[1] = (b[q + j + 4] >> 4) | ((b[q + j] >> 6) << 4);
  }
}

// ---------------------------------------------------------------- decoders

/**
 * Decodes Q2_K super-blocks.
 *
 * @param src Stored blocks (84 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ2_K } from "./k_quants.ts";
 * const b = new Uint8Array(84); b[0] = 0x21; b.fill(3, 16, 80); b[81] = 0x3c; b[83] = 0x3c;
 * assert(dequantizeQ2_K(b, 256)[0] === 1); // 1·3 − 2
 * ```
 */
export function dequantizeQ2_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks("Q2_K", src, count, 256, 84);
  const out = new Float32Array(count);
  let y = 0;
  for (let i = 0, o = 0; i < nb; i++, o += 84) {
    const d = half(src, o + 80);
    const min = half(src, o + 82);
    let is = 0;
    for (let n = 0; n < 2; n++) {
      const q = o + 16 + 32 * n;
      for (let shift = 0; shift < 8; shift += 2) {
        for (let half16 = 0; half16 < 32; half16 += 16) {
          const sc = src[o + is++];
          const dl = fround(d * (sc & 0xf));
          const ml = fround(min * (sc >> 4));
          for (let l = 0; l < 16; l++) {
            out[y++] = fround(dl * ((src[q + half16 + l] >> shift) & 3)) - ml;
          }
        }
      }
    }
  }
  return out;
}

/**
 * Decodes Q3_K super-blocks.
 *
 * @param src Stored blocks (110 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ3_K } from "./k_quants.ts";
 * // hmask and the 2-bit codes all ones (q = 3), scale codes 1 (1 − 32 = −31), d = 1.0
 * const b = new Uint8Array(110); b.fill(0xff, 0, 96); b.fill(0x11, 96, 104); b[109] = 0x3c;
 * assert(dequantizeQ3_K(b, 256)[0] === -31 * 3);
 * ```
 */
export function dequantizeQ3_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks("Q3_K", src, count, 256, 110);
  const out = new Float32Array(count);
  const scales = new Int32Array(16);
  let y = 0;
  for (let i = 0, o = 0; i < nb; i++, o += 110) {
    const dAll = half(src, o + 108);
    const sc = o + 96;
    for (let j = 0; j < 16; j++) {
      const lo = j < 8 ? src[sc + j] & 0xf : src[sc + j - 8] >> 4;
      const hi = (src[sc + 8 + (j & 3)] >> (2 * (j >> 2))) & 3;
      scales[j] = (lo | (hi << 4)) - 32;
    }
    let is = 0;
    let m = 1;
    for (let n = 0; n < 2; n++) {
      const q = o + 32 + 32 * n;
      for (let shift = 0; shift < 8; shift += 2) {
        for (let h = 0; h < 32; h += 16) {
          const dl = fround(dAll * scales[is++]);
          for (let l = 0; l < 16; l++) {
            const v = ((src[q + h + l] >> shift) & 3) -
              ((src[o + h + l] & m) ? 0 : 4);
            out[y++] = dl * v;
          }
        }
        m <<= 1;
      }
    }
  }
  return out;
}

/**
 * Decodes Q4_K super-blocks.
 *
 * @param src Stored blocks (144 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ4_K } from "./k_quants.ts";
 * const b = new Uint8Array(144); b[1] = 0x3c; b[4] = 2; b.fill(0x55, 16);
 * assert(dequantizeQ4_K(b, 256)[0] === 10); // d·2·5
 * ```
 */
export function dequantizeQ4_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks("Q4_K", src, count, 256, 144);
  const out = new Float32Array(count);
  const sm = new Int32Array(2);
  let y = 0;
  for (let i = 0, o = 0; i < nb; i++, o += 144) {
    const d = half(src, o);
    const min = half(src, o + 2);
    for (let j = 0, is = 0; j < 4; j++, is += 2) {
      const q = o + 16 + 32 * j;
      scaleMinK4(is, src, o + 4, sm);
      const d1 = fround(d * sm[0]);
      const m1 = fround(min * sm[1]);
      scaleMinK4(is + 1, src, o + 4, sm);
      const d2 = fround(d * sm[0]);
      const m2 = fround(min * sm[1]);
      for (let l = 0; l < 32; l++) {
        out[y++] = fround(d1 * (src[q + l] & 0xf)) - m1;
      }
      for (let l = 0; l < 32; l++) {
        out[y++] = fround(d2 * (src[q + l] >> 4)) - m2;
      }
    }
  }
  return out;
}

/**
 * Decodes Q5_K super-blocks.
 *
 * @param src Stored blocks (176 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ5_K } from "./k_quants.ts";
 * const b = new Uint8Array(176); b[1] = 0x3c; b[4] = 1; b[16] = 1; // high bit of value 0
 * assert(dequantizeQ5_K(b, 256)[0] === 16);
 * ```
 */
export function dequantizeQ5_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks("Q5_K", src, count, 256, 176);
  const out = new Float32Array(count);
  const sm = new Int32Array(2);
  let y = 0;
  for (let i = 0, o = 0; i < nb; i++, o += 176) {
    const d = half(src, o);
    const min = half(src, o + 2);
    const qh = o + 16;
    let u1 = 1;
    let u2 = 2;
    for (let j = 0, is = 0; j < 4; j++, is += 2) {
      const ql = o + 48 + 32 * j;
      scaleMinK4(is, src, o + 4, sm);
      const d1 = fround(d * sm[0]);
      const m1 = fround(min * sm[1]);
      scaleMinK4(is + 1, src, o + 4, sm);
      const d2 = fround(d * sm[0]);
      const m2 = fround(min * sm[1]);
      for (let l = 0; l < 32; l++) {
        out[y++] =
          fround(d1 * ((src[ql + l] & 0xf) + (src[qh + l] & u1 ? 16 : 0))) - m1;
      }
      for (let l = 0; l < 32; l++) {
        out[y++] =
          fround(d2 * ((src[ql + l] >> 4) + (src[qh + l] & u2 ? 16 : 0))) - m2;
      }
      u1 <<= 2;
      u2 <<= 2;
    }
  }
  return out;
}

/**
 * Decodes Q6_K super-blocks.
 *
 * @param src Stored blocks (210 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ6_K } from "./k_quants.ts";
 * const b = new Uint8Array(210); b.fill(2, 192, 208); b[209] = 0x3c;
 * assert(dequantizeQ6_K(b, 256)[0] === -64); // 1·2·(0 − 32)
 * ```
 */
export function dequantizeQ6_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks("Q6_K", src, count, 256, 210);
  const out = new Float32Array(count);
  let y = 0;
  for (let i = 0, o = 0; i < nb; i++, o += 210) {
    const d = half(src, o + 208);
    for (let n = 0; n < 2; n++) {
      const ql = o + 64 * n;
      const qh = o + 128 + 32 * n;
      const sc = o + 192 + 8 * n;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const h = src[qh + l];
        const q1 = ((src[ql + l] & 0xf) | ((h & 3) << 4)) - 32;
        const q2 = ((src[ql + l + 32] & 0xf) | (((h >> 2) & 3) << 4)) - 32;
        const q3 = ((src[ql + l] >> 4) | (((h >> 4) & 3) << 4)) - 32;
        const q4 = ((src[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32;
        out[y + l] = fround(d * ((src[sc + is] << 24) >> 24)) * q1;
        out[y + l + 32] = fround(d * ((src[sc + is + 2] << 24) >> 24)) * q2;
        out[y + l + 64] = fround(d * ((src[sc + is + 4] << 24) >> 24)) * q3;
        out[y + l + 96] = fround(d * ((src[sc + is + 6] << 24) >> 24)) * q4;
      }
      y += 128;
    }
  }
  return out;
}

/**
 * Decodes Q8_K super-blocks (`x = q · d`, `d` an F32).
 *
 * @param src Stored blocks (292 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ8_K } from "./k_quants.ts";
 * const b = new Uint8Array(292); new DataView(b.buffer).setFloat32(0, 0.25, true); b[4] = 0xfc;
 * assert(dequantizeQ8_K(b, 256)[0] === -1);
 * ```
 */
export function dequantizeQ8_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks("Q8_K", src, count, 256, 292);
  const out = new Float32Array(count);
  const view = new DataView(src.buffer, src.byteOffset, src.byteLength);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 292, y += 256) {
    const d = view.getFloat32(o, true);
    for (let j = 0; j < 256; j++) {
      out[y + j] = ((src[o + 4 + j] << 24) >> 24) * d;
    }
  }
  return out;
}

// ------------------------------------------------------ scale searches (ggml)

/**
 * ggml's `make_qx_quants` with `rmse_type = 1` and no importance weights:
 * symmetric codes in `[0, 2·nmax)` at `L[lo..lo+n)` and the scale that
 * minimizes the x²-weighted error over 19 candidate scales.
 */
function makeQxQuants(
  n: number,
  nmax: number,
  x: Float32Array,
  s: number,
  L: Int32Array,
  lo: number,
): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[s + i]);
    if (ax > amax) {
      amax = ax;
      max = x[s + i];
    }
  }
  if (amax < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    return 0;
  }
  let iscale = fround(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[s + i];
    let l = nearestInt(fround(iscale * xi));
    l = Math.max(-nmax, Math.min(nmax - 1, l));
    L[lo + i] = l + nmax;
    const w = fround(xi * xi);
    sumlx = fround(sumlx + fround(fround(w * xi) * l));
    suml2 = fround(suml2 + fround(fround(w * l) * l));
  }
  let scale = suml2 ? fround(sumlx / suml2) : 0;
  let best = fround(scale * sumlx);
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    iscale = fround(-fround(nmax + fround(F_0_1 * is)) / max);
    sumlx = 0;
    suml2 = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[s + i];
      let l = nearestInt(fround(iscale * xi));
      l = Math.max(-nmax, Math.min(nmax - 1, l));
      const w = fround(xi * xi);
      sumlx = fround(sumlx + fround(fround(w * xi) * l));
      suml2 = fround(suml2 + fround(fround(w * l) * l));
    }
    if (suml2 > 0 && fround(sumlx * sumlx) > fround(best * suml2)) {
      for (let i = 0; i < n; i++) {
        const l = nearestInt(fround(iscale * x[s + i]));
        L[lo + i] = nmax + Math.max(-nmax, Math.min(nmax - 1, l));
      }
      scale = fround(sumlx / suml2);
      best = fround(scale * sumlx);
    }
  }
  return scale;
}

/**
 * ggml's `make_q3_quants` with `do_rmse`: symmetric codes in `[0, 2·nmax)`
 * refined one element at a time (up to 5 passes) to minimize the
 * x²-weighted error.
 */
function makeQ3Quants(
  n: number,
  nmax: number,
  x: Float32Array,
  s: number,
  L: Int32Array,
  lo: number,
): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[s + i]);
    if (ax > amax) {
      amax = ax;
      max = x[s + i];
    }
  }
  if (amax < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    return 0;
  }
  const iscale = fround(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[s + i];
    let l = nearestInt(fround(iscale * xi));
    l = Math.max(-nmax, Math.min(nmax - 1, l));
    L[lo + i] = l;
    const w = fround(xi * xi);
    sumlx = fround(sumlx + fround(fround(w * xi) * l));
    suml2 = fround(suml2 + fround(fround(w * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[s + i];
      const li = L[lo + i];
      const w = fround(xi * xi);
      let slx = fround(sumlx - fround(fround(w * xi) * li));
      if (slx > 0) {
        let sl2 = fround(suml2 - fround(fround(w * li) * li));
        let nl = nearestInt(fround(fround(xi * sl2) / slx));
        nl = Math.max(-nmax, Math.min(nmax - 1, nl));
        if (nl !== li) {
          slx = fround(slx + fround(fround(w * xi) * nl));
          sl2 = fround(sl2 + fround(fround(w * nl) * nl));
          if (
            sl2 > 0 &&
            fround(fround(slx * slx) * suml2) >
              fround(fround(sumlx * sumlx) * sl2)
          ) {
            L[lo + i] = nl;
            sumlx = slx;
            suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (!changed) break;
  }
  for (let i = 0; i < n; i++) L[lo + i] += nmax;
  return suml2 > 0 ? fround(sumlx / suml2) : 0;
}

/**
 * ggml's `make_qkx2_quants`: asymmetric codes in `[0, nmax]` with a scale
 * and a (non-positive) min, searched over `nstep + 1` candidate scales by
 * weighted least squares. Returns the scale; the negated min goes to
 * `mins[mi]`.
 */
function makeQkx2Quants(
  n: number,
  nmax: number,
  x: Float32Array,
  s: number,
  weights: Float32Array,
  L: Int32Array,
  lo: number,
  mins: Float32Array,
  mi: number,
  Laux: Int32Array,
  xm: Float32Array,
  rmin: number,
  rdelta: number,
  nstep: number,
  useMad: boolean,
): number {
  let min = x[s];
  let max = x[s];
  let sumW = weights[0];
  let sumX = fround(sumW * x[s]);
  for (let i = 1; i < n; i++) {
    const xi = x[s + i];
    if (xi < min) min = xi;
    if (xi > max) max = xi;
    const w = weights[i];
    sumW = fround(sumW + w);
    sumX = fround(sumX + fround(w * xi));
  }
  if (min > 0) min = 0;
  if (max === min) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    mins[mi] = -min;
    return 0;
  }
  // Note: `min` changes inside the search below and later candidates use the
  // updated value, as in ggml. `xm` caches x - min for the current min.
  for (let i = 0; i < n; i++) xm[i] = x[s + i] - min;
  let iscale = fround(nmax / fround(max - min));
  let scale = fround(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[s + i];
    const l = nearestInt(fround(iscale * xm[i]));
    const li = l < 0 ? 0 : l > nmax ? nmax : l;
    L[lo + i] = li;
    let diff = fround(fround(fround(scale * li) + min) - xi);
    diff = useMad ? Math.abs(diff) : fround(diff * diff);
    bestError = fround(bestError + fround(weights[i] * diff));
  }
  if (nstep < 1) {
    mins[mi] = -min;
    return scale;
  }
  for (let is = 0; is <= nstep; is++) {
    iscale = fround(
      fround(fround(rmin + fround(rdelta * is)) + nmax) / fround(max - min),
    );
    let sumL = 0;
    let sumL2 = 0;
    let sumXL = 0;
    for (let i = 0; i < n; i++) {
      const v = fround(iscale * xm[i]);
      // nearestInt, inlined for the common range.
      let l = v <= 4194303 && v >= -4194303
        ? fround(v + 12582912) - 12582912
        : nearestInt(v);
      l = l < 0 ? 0 : l > nmax ? nmax : l;
      Laux[i] = l;
      const wl = fround(weights[i] * l);
      sumL = fround(sumL + wl);
      sumL2 = fround(sumL2 + fround(wl * l));
      sumXL = fround(sumXL + fround(wl * x[s + i]));
    }
    const D = fround(fround(sumW * sumL2) - fround(sumL * sumL));
    if (D > 0) {
      let thisScale = fround(
        fround(fround(sumW * sumXL) - fround(sumX * sumL)) / D,
      );
      let thisMin = fround(
        fround(fround(sumL2 * sumX) - fround(sumL * sumXL)) / D,
      );
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = fround(sumXL / sumL2);
      }
      let curError = 0;
      if (useMad) {
        for (let i = 0; i < n; i++) {
          const diff = fround(
            fround(fround(thisScale * Laux[i]) + thisMin) - x[s + i],
          );
          curError = fround(curError + fround(weights[i] * Math.abs(diff)));
        }
      } else {
        for (let i = 0; i < n; i++) {
          const diff = fround(
            fround(fround(thisScale * Laux[i]) + thisMin) - x[s + i],
          );
          curError = fround(
            curError + fround(weights[i] * fround(diff * diff)),
          );
        }
      }
      if (curError < bestError) {
        for (let i = 0; i < n; i++) L[lo + i] = Laux[i];
        bestError = curError;
        scale = thisScale;
        if (thisMin !== min) {
          min = thisMin;
          for (let i = 0; i < n; i++) xm[i] = x[s + i] - min;
        }
      }
    }
  }
  mins[mi] = -min;
  return scale;
}

// ---------------------------------------------------------------- encoders

/** Packs four 2-bit codes per byte: bytes `[32·h, 32·h+32)` hold codes `128h + l + 32k` at bits `2k`. */
function pack2(L: Int32Array, out: Uint8Array, q: number): void {
  for (let j = 0; j < 256; j += 128) {
    for (let l = 0; l < 32; l++) {
      out[q + j / 4 + l] = L[j + l] | (L[j + l + 32] << 2) |
        (L[j + l + 64] << 4) | (L[j + l + 96] << 6);
    }
  }
}

/**
 * Encodes Q2_K like ggml's `quantize_row_q2_K_ref`.
 *
 * @param x Values; the length must be a multiple of 256.
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ2_K, quantizeQ2_K } from "./k_quants.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeQ2_K(quantizeQ2_K(x), 256);
 * assert(Math.abs(y[10] - x[10]) < 0.5);
 * ```
 */
export function quantizeQ2_K(x: Float32Array): Uint8Array {
  const nb = checkValues("Q2_K", x, 256);
  const out = new Uint8Array(nb * 84);
  const L = new Int32Array(256);
  const Laux = new Int32Array(16);
  const xm = new Float32Array(16);
  const weights = new Float32Array(16);
  const mins = new Float32Array(16);
  const scales = new Float32Array(16);
  const q4scale = 15;
  for (let i = 0, s = 0, o = 0; i < nb; i++, s += 256, o += 84) {
    let maxScale = 0;
    let maxMin = 0;
    for (let j = 0; j < 16; j++) {
      for (let l = 0; l < 16; l++) weights[l] = Math.abs(x[s + 16 * j + l]);
      scales[j] = makeQkx2Quants(
        16,
        3,
        x,
        s + 16 * j,
        weights,
        L,
        16 * j,
        mins,
        j,
        Laux,
        xm,
        -0.5,
        F_0_1,
        15,
        true,
      );
      if (scales[j] > maxScale) maxScale = scales[j];
      if (mins[j] > maxMin) maxMin = mins[j];
    }
    if (maxScale > 0) {
      const iscale = fround(q4scale / maxScale);
      for (let j = 0; j < 16; j++) {
        out[o + j] = nearestInt(fround(iscale * scales[j])) & 255;
      }
      putHalf(out, o + 80, fround(maxScale / q4scale));
    } else {
      for (let j = 0; j < 16; j++) out[o + j] = 0;
      putHalf(out, o + 80, 0);
    }
    if (maxMin > 0) {
      const iscale = fround(q4scale / maxMin);
      for (let j = 0; j < 16; j++) {
        out[o + j] |= nearestInt(fround(iscale * mins[j])) << 4;
      }
      putHalf(out, o + 82, fround(maxMin / q4scale));
    } else {
      putHalf(out, o + 82, 0);
    }
    const dAll = half(out, o + 80);
    const mAll = half(out, o + 82);
    for (let j = 0; j < 16; j++) {
      const d = fround(dAll * (out[o + j] & 0xf));
      if (!d) continue;
      const dm = fround(mAll * (out[o + j] >> 4));
      for (let ii = 0; ii < 16; ii++) {
        const l = nearestInt(fround(fround(x[s + 16 * j + ii] + dm) / d));
        L[16 * j + ii] = Math.max(0, Math.min(3, l));
      }
    }
    pack2(L, out, o + 16);
  }
  return out;
}

/**
 * Encodes Q3_K like ggml's `quantize_row_q3_K_ref`.
 *
 * @param x Values; the length must be a multiple of 256.
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ3_K, quantizeQ3_K } from "./k_quants.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeQ3_K(quantizeQ3_K(x), 256);
 * assert(Math.abs(y[10] - x[10]) < 0.3);
 * ```
 */
export function quantizeQ3_K(x: Float32Array): Uint8Array {
  const nb = checkValues("Q3_K", x, 256);
  const out = new Uint8Array(nb * 110);
  const L = new Int32Array(256);
  const scales = new Float32Array(16);
  for (let i = 0, s = 0, o = 0; i < nb; i++, s += 256, o += 110) {
    let maxScale = 0;
    let amax = 0;
    for (let j = 0; j < 16; j++) {
      scales[j] = makeQ3Quants(16, 4, x, s + 16 * j, L, 16 * j);
      const a = Math.abs(scales[j]);
      if (a > amax) {
        amax = a;
        maxScale = scales[j];
      }
    }
    const sc = o + 96;
    if (maxScale) {
      const iscale = fround(-32 / maxScale);
      for (let j = 0; j < 16; j++) {
        // int8_t in C: the code wraps to 8 bits before the clamp.
        let l = (nearestInt(fround(iscale * scales[j])) << 24) >> 24;
        l = Math.max(-32, Math.min(31, l)) + 32;
        if (j < 8) out[sc + j] = l & 0xf;
        else out[sc + j - 8] |= (l & 0xf) << 4;
        l >>= 4;
        out[sc + 8 + (j % 4)] |= l << (2 * (j >> 2));
      }
      putHalf(out, o + 108, fround(1 / iscale));
    } else {
      putHalf(out, o + 108, 0);
    }
    const dAll = half(out, o + 108);
    for (let j = 0; j < 16; j++) {
      const lo4 = j < 8 ? out[sc + j] & 0xf : out[sc + j - 8] >> 4;
      const scj =
        (lo4 | (((out[sc + 8 + (j % 4)] >> (2 * (j >> 2))) & 3) << 4)) -
        32;
      const d = fround(dAll * scj);
      if (!d) continue;
      for (let ii = 0; ii < 16; ii++) {
        const l = nearestInt(fround(x[s + 16 * j + ii] / d));
        L[16 * j + ii] = Math.max(-4, Math.min(3, l)) + 4;
      }
    }
    let m = 0;
    let hm = 1;
    for (let j = 0; j < 256; j++) {
      if (L[j] > 3) {
        out[o + m] |= hm;
        L[j] -= 4;
      }
      if (++m === 32) {
        m = 0;
        hm <<= 1;
      }
    }
    pack2(L, out, o + 32);
  }
  return out;
}

/** Packs eight 6-bit scales and mins into the 12 bytes at `sc` (the K4 layout). */
function packScalesK4(
  out: Uint8Array,
  sc: number,
  j: number,
  ls: number,
  lm: number,
): void {
  if (j < 4) {
    out[sc + j] = ls;
    out[sc + j + 4] = lm;
  } else {
    out[sc + j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
    out[sc + j - 4] |= (ls >> 4) << 6;
    out[sc + j] |= (lm >> 4) << 6;
  }
}

/** The shared part of Q4_K and Q5_K: scales, mins, d, dmin, and the codes in `L`. */
function quantizeK4Scales(
  x: Float32Array,
  s: number,
  out: Uint8Array,
  o: number,
  nmax: number,
  rmin: number,
  rdelta: number,
  nstep: number,
  t: {
    L: Int32Array;
    Laux: Int32Array;
    weights: Float32Array;
    mins: Float32Array;
    scales: Float32Array;
    sm: Int32Array;
    xm: Float32Array;
  },
): void {
  const { L, Laux, weights, mins, scales, sm, xm } = t;
  let maxScale = 0;
  let maxMin = 0;
  for (let j = 0; j < 8; j++) {
    let sumX2 = 0;
    for (let l = 0; l < 32; l++) {
      const v = x[s + 32 * j + l];
      sumX2 = fround(sumX2 + fround(v * v));
    }
    const avX = fround(Math.sqrt(fround(sumX2 / 32)));
    for (let l = 0; l < 32; l++) {
      weights[l] = avX + Math.abs(x[s + 32 * j + l]);
    }
    scales[j] = makeQkx2Quants(
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
      xm,
      rmin,
      rdelta,
      nstep,
      false,
    );
    if (scales[j] > maxScale) maxScale = scales[j];
    if (mins[j] > maxMin) maxMin = mins[j];
  }
  const invScale = maxScale > 0 ? fround(63 / maxScale) : 0;
  const invMin = maxMin > 0 ? fround(63 / maxMin) : 0;
  for (let j = 0; j < 8; j++) {
    const ls = Math.min(63, nearestInt(fround(invScale * scales[j])) & 255);
    const lm = Math.min(63, nearestInt(fround(invMin * mins[j])) & 255);
    packScalesK4(out, o + 4, j, ls, lm);
  }
  putHalf(out, o, fround(maxScale / 63));
  putHalf(out, o + 2, fround(maxMin / 63));
  const dAll = half(out, o);
  const mAll = half(out, o + 2);
  for (let j = 0; j < 8; j++) {
    scaleMinK4(j, out, o + 4, sm);
    const d = fround(dAll * sm[0]);
    if (!d) continue;
    const dm = fround(mAll * sm[1]);
    for (let ii = 0; ii < 32; ii++) {
      const l = nearestInt(fround(fround(x[s + 32 * j + ii] + dm) / d));
      L[32 * j + ii] = Math.max(0, Math.min(nmax, l));
    }
  }
}

function k4Scratch() {
  return {
    L: new Int32Array(256),
    Laux: new Int32Array(32),
    weights: new Float32Array(32),
    mins: new Float32Array(8),
    scales: new Float32Array(8),
    sm: new Int32Array(2),
    xm: new Float32Array(32),
  };
}

/**
 * Encodes Q4_K like ggml's `quantize_row_q4_K_ref`.
 *
 * @param x Values; the length must be a multiple of 256.
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ4_K, quantizeQ4_K } from "./k_quants.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeQ4_K(quantizeQ4_K(x), 256);
 * assert(Math.abs(y[10] - x[10]) < 0.1);
 * ```
 */
export function quantizeQ4_K(x: Float32Array): Uint8Array {
  const nb = checkValues("Q4_K", x, 256);
  const out = new Uint8Array(nb * 144);
  const t = k4Scratch();
  const L = t.L;
  for (let i = 0, s = 0, o = 0; i < nb; i++, s += 256, o += 144) {
    quantizeK4Scales(x, s, out, o, 15, -1, F_0_1, 20, t);
    for (let j = 0, q = o + 16; j < 256; j += 64, q += 32) {
      for (let l = 0; l < 32; l++) out[q + l] = L[j + l] | (L[j + l + 32] << 4);
    }
  }
  return out;
}

/**
 * Encodes Q5_K like ggml's `quantize_row_q5_K_ref`.
 *
 * @param x Values; the length must be a multiple of 256.
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ5_K, quantizeQ5_K } from "./k_quants.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeQ5_K(quantizeQ5_K(x), 256);
 * assert(Math.abs(y[10] - x[10]) < 0.05);
 * ```
 */
export function quantizeQ5_K(x: Float32Array): Uint8Array {
  const nb = checkValues("Q5_K", x, 256);
  const out = new Uint8Array(nb * 176);
  const t = k4Scratch();
  const L = t.L;
  for (let i = 0, s = 0, o = 0; i < nb; i++, s += 256, o += 176) {
    quantizeK4Scales(x, s, out, o, 31, -0.5, F_0_1, 15, t);
    const qh = o + 16;
    let ql = o + 48;
    let m1 = 1;
    let m2 = 2;
    for (let n = 0; n < 256; n += 64) {
      for (let j = 0; j < 32; j++) {
        let l1 = L[n + j];
        if (l1 > 15) {
          l1 -= 16;
          out[qh + j] |= m1;
        }
        let l2 = L[n + j + 32];
        if (l2 > 15) {
          l2 -= 16;
          out[qh + j] |= m2;
        }
        out[ql + j] = l1 | (l2 << 4);
      }
      m1 <<= 2;
      m2 <<= 2;
      ql += 32;
    }
  }
  return out;
}

/**
 * Encodes Q6_K like ggml's `quantize_row_q6_K_ref`.
 *
 * @param x Values; the length must be a multiple of 256.
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ6_K, quantizeQ6_K } from "./k_quants.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeQ6_K(quantizeQ6_K(x), 256);
 * assert(Math.abs(y[10] - x[10]) < 0.02);
 * ```
 */
export function quantizeQ6_K(x: Float32Array): Uint8Array {
  const nb = checkValues("Q6_K", x, 256);
  const out = new Uint8Array(nb * 210);
  const L = new Int32Array(256);
  const scales = new Float32Array(16);
  for (let i = 0, s = 0, o = 0; i < nb; i++, s += 256, o += 210) {
    let maxScale = 0;
    let maxAbsScale = 0;
    for (let ib = 0; ib < 16; ib++) {
      const scale = makeQxQuants(16, 32, x, s + 16 * ib, L, 16 * ib);
      scales[ib] = scale;
      const a = Math.abs(scale);
      if (a > maxAbsScale) {
        maxAbsScale = a;
        maxScale = scale;
      }
    }
    if (maxAbsScale < GROUP_MAX_EPS) {
      putHalf(out, o + 208, 0);
      continue;
    }
    const iscale = fround(-128 / maxScale);
    putHalf(out, o + 208, fround(1 / iscale));
    for (let ib = 0; ib < 16; ib++) {
      out[o + 192 + ib] =
        Math.min(127, nearestInt(fround(iscale * scales[ib]))) &
        255;
    }
    const dAll = half(out, o + 208);
    for (let j = 0; j < 16; j++) {
      const d = fround(dAll * ((out[o + 192 + j] << 24) >> 24));
      if (!d) continue;
      for (let ii = 0; ii < 16; ii++) {
        const l = nearestInt(fround(x[s + 16 * j + ii] / d));
        L[16 * j + ii] = Math.max(-32, Math.min(31, l)) + 32;
      }
    }
    for (
      let j = 0, ql = o, qh = o + 128;
      j < 256;
      j += 128, ql += 64, qh += 32
    ) {
      for (let l = 0; l < 32; l++) {
        const q1 = L[j + l] & 0xf;
        const q2 = L[j + l + 32] & 0xf;
        const q3 = L[j + l + 64] & 0xf;
        const q4 = L[j + l + 96] & 0xf;
        out[ql + l] = q1 | (q3 << 4);
        out[ql + l + 32] = q2 | (q4 << 4);
        out[qh + l] = (L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
          ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6);
      }
    }
  }
  return out;
}
