/**
 * Encoders of the 256-element ggml "K" super-block types Q2_K, Q3_K, Q4_K,
 * Q5_K and Q6_K, matching ggml's reference `quantize_row_*_ref` bit for bit
 * (what `llama-quantize` writes without an importance matrix), including
 * the scale searches of `_k_search.ts`, with every float operation rounded
 * to F32 as C does. Layouts: see `k_decode.ts`.
 *
 * @module
 */

import {
  checkValues,
  nearestInt,
  pack2,
  packQ3Codes,
  packScalesK4,
  scaleMinK4,
} from "./_common.ts";
import {
  F_0_1,
  GROUP_MAX_EPS,
  makeQ3Quants,
  makeQkx2Quants,
  makeQxQuants,
} from "./_k_search.ts";
import {
  k4RequantPackWasm,
  k4RequantWasm,
  k4SearchWasm,
  K_WASM_CHUNK,
  q6RequantPackWasm,
  q6SearchWasm,
} from "./_k_wasm.ts";
import { QUANT_BLOCKS } from "./blocks.ts";
import { readHalf, writeHalf } from "./f16.ts";

const { Q2_K, Q3_K, Q4_K, Q5_K, Q6_K } = QUANT_BLOCKS;
const fround = Math.fround;

/**
 * Encodes Q2_K like ggml's `quantize_row_q2_K_ref`.
 *
 * @param x Values; the length must be a multiple of 256.
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ2_K } from "./k_decode.ts";
 * import { quantizeQ2_K } from "./k_encode.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeQ2_K(quantizeQ2_K(x), 256);
 * assert(Math.abs(y[10] - x[10]) < 0.5);
 * ```
 */
export function quantizeQ2_K(x: Float32Array): Uint8Array {
  const nb = checkValues(Q2_K, x);
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
      writeHalf(out, o + 80, fround(maxScale / q4scale));
    } else {
      for (let j = 0; j < 16; j++) out[o + j] = 0;
      writeHalf(out, o + 80, 0);
    }
    if (maxMin > 0) {
      const iscale = fround(q4scale / maxMin);
      for (let j = 0; j < 16; j++) {
        out[o + j] |= nearestInt(fround(iscale * mins[j])) << 4;
      }
      writeHalf(out, o + 82, fround(maxMin / q4scale));
    } else {
      writeHalf(out, o + 82, 0);
    }
    const dAll = readHalf(out, o + 80);
    const mAll = readHalf(out, o + 82);
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
 * import { dequantizeQ3_K } from "./k_decode.ts";
 * import { quantizeQ3_K } from "./k_encode.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeQ3_K(quantizeQ3_K(x), 256);
 * assert(Math.abs(y[10] - x[10]) < 0.3);
 * ```
 */
export function quantizeQ3_K(x: Float32Array): Uint8Array {
  const nb = checkValues(Q3_K, x);
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
      writeHalf(out, o + 108, fround(1 / iscale));
    } else {
      writeHalf(out, o + 108, 0);
    }
    const dAll = readHalf(out, o + 108);
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
    packQ3Codes(L, out, o);
  }
  return out;
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
    dd: Float32Array;
  },
): void {
  const { L, Laux, weights, mins, scales, sm, xm } = t;
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
  }
  k4Header(out, o, scales, 0, mins, sm, t.dd, 0);
  for (let j = 0; j < 8; j++) {
    const d = t.dd[j];
    if (!d) continue;
    const dm = t.dd[8 + j];
    for (let ii = 0; ii < 32; ii++) {
      const l = nearestInt(fround(fround(x[s + 32 * j + ii] + dm) / d));
      L[32 * j + ii] = Math.max(0, Math.min(nmax, l));
    }
  }
}

/**
 * The header of a Q4_K / Q5_K block from its sub-block scales and mins
 * (`scales[so..so+8)`, `mins[so..so+8)`): the 6-bit scales and mins, d and
 * dmin; each sub-block's `d` and `dm` go to `dd[db + j]`, `dd[db + 8 + j]`.
 */
function k4Header(
  out: Uint8Array,
  o: number,
  scales: Float32Array,
  so: number,
  mins: Float32Array,
  sm: Int32Array,
  dd: Float32Array,
  db: number,
): void {
  let maxScale = 0;
  let maxMin = 0;
  for (let j = so; j < so + 8; j++) {
    if (scales[j] > maxScale) maxScale = scales[j];
    if (mins[j] > maxMin) maxMin = mins[j];
  }
  const invScale = maxScale > 0 ? fround(63 / maxScale) : 0;
  const invMin = maxMin > 0 ? fround(63 / maxMin) : 0;
  for (let j = 0; j < 8; j++) {
    const ls = Math.min(
      63,
      nearestInt(fround(invScale * scales[so + j])) & 255,
    );
    const lm = Math.min(63, nearestInt(fround(invMin * mins[so + j])) & 255);
    packScalesK4(out, o + 4, j, ls, lm);
  }
  writeHalf(out, o, fround(maxScale / 63));
  writeHalf(out, o + 2, fround(maxMin / 63));
  const dAll = readHalf(out, o);
  const mAll = readHalf(out, o + 2);
  for (let j = 0; j < 8; j++) {
    scaleMinK4(j, out, o + 4, sm);
    dd[db + j] = fround(dAll * sm[0]);
    dd[db + 8 + j] = fround(mAll * sm[1]);
  }
}

/**
 * Q4_K / Q5_K blocks: the scale searches and final codes in WebAssembly
 * (`_k_wasm.ts`, same bits) a chunk of blocks at a time, else the scalar
 * code; `pack` stores one block's 256 codes `L[lo..lo+256)` at `o`.
 */
function encodeK4(
  x: Float32Array,
  nb: number,
  out: Uint8Array,
  blockBytes: number,
  nmax: number,
  rmin: number,
  nstep: number,
  pack: (o: number, L: Int32Array, lo: number) => void,
): void {
  const t = k4Scratch();
  const scales = new Float32Array(K_WASM_CHUNK * 8);
  const mins = new Float32Array(K_WASM_CHUNK * 8);
  const dd = new Float32Array(K_WASM_CHUNK * 16);
  const L = new Int32Array(K_WASM_CHUNK * 256);
  for (let i0 = 0; i0 < nb; i0 += K_WASM_CHUNK) {
    const n = Math.min(K_WASM_CHUNK, nb - i0);
    const s = i0 * 256;
    if (k4SearchWasm(x, s, n, nmax, rmin, F_0_1, nstep, scales, mins)) {
      for (let b = 0; b < n; b++) {
        const o = (i0 + b) * blockBytes;
        k4Header(out, o, scales, 8 * b, mins, t.sm, dd, 16 * b);
      }
      if (blockBytes === 144) {
        // Q4_K: codes packed in WebAssembly too
        k4RequantPackWasm(n, dd, out, i0 * 144);
        continue;
      }
      k4RequantWasm(n, nmax, dd, L);
      for (let b = 0; b < n; b++) pack((i0 + b) * blockBytes, L, 256 * b);
    } else {
      for (let b = 0; b < n; b++) {
        const o = (i0 + b) * blockBytes;
        quantizeK4Scales(x, s + 256 * b, out, o, nmax, rmin, F_0_1, nstep, t);
        pack(o, t.L, 0);
      }
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
    dd: new Float32Array(16),
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
 * import { dequantizeQ4_K } from "./k_decode.ts";
 * import { quantizeQ4_K } from "./k_encode.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeQ4_K(quantizeQ4_K(x), 256);
 * assert(Math.abs(y[10] - x[10]) < 0.1);
 * ```
 */
export function quantizeQ4_K(x: Float32Array): Uint8Array {
  const nb = checkValues(Q4_K, x);
  const out = new Uint8Array(nb * 144);
  encodeK4(x, nb, out, 144, 15, -1, 20, (o, L, lo) => {
    for (let j = lo, q = o + 16; j < lo + 256; j += 64, q += 32) {
      for (let l = 0; l < 32; l++) out[q + l] = L[j + l] | (L[j + l + 32] << 4);
    }
  });
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
 * import { dequantizeQ5_K } from "./k_decode.ts";
 * import { quantizeQ5_K } from "./k_encode.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeQ5_K(quantizeQ5_K(x), 256);
 * assert(Math.abs(y[10] - x[10]) < 0.05);
 * ```
 */
export function quantizeQ5_K(x: Float32Array): Uint8Array {
  const nb = checkValues(Q5_K, x);
  const out = new Uint8Array(nb * 176);
  encodeK4(x, nb, out, 176, 31, -0.5, 15, (o, L, lo) => {
    const qh = o + 16;
    let ql = o + 48;
    let m1 = 1;
    let m2 = 2;
    for (let n = lo; n < lo + 256; n += 64) {
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
  });
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
 * import { dequantizeQ6_K } from "./k_decode.ts";
 * import { quantizeQ6_K } from "./k_encode.ts";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeQ6_K(quantizeQ6_K(x), 256);
 * assert(Math.abs(y[10] - x[10]) < 0.02);
 * ```
 */
export function quantizeQ6_K(x: Float32Array): Uint8Array {
  const nb = checkValues(Q6_K, x);
  const out = new Uint8Array(nb * 210);
  const L = new Int32Array(K_WASM_CHUNK * 256);
  const scales = new Float32Array(K_WASM_CHUNK * 16);
  const dd = new Float32Array(K_WASM_CHUNK * 16);
  const kept = new Uint8Array(K_WASM_CHUNK);
  for (let i0 = 0; i0 < nb; i0 += K_WASM_CHUNK) {
    const n = Math.min(K_WASM_CHUNK, nb - i0);
    const s = i0 * 256;
    if (q6SearchWasm(x, s, n, scales)) {
      // searches, then the final codes, in WebAssembly (same bits)
      for (let b = 0; b < n; b++) {
        kept[b] = q6Header(out, (i0 + b) * 210, scales, 16 * b, dd) ? 1 : 0;
      }
      q6RequantPackWasm(n, dd, out, i0 * 210, kept);
      continue;
    }
    for (let b = 0; b < n; b++) {
      const sb = s + 256 * b, o = (i0 + b) * 210;
      for (let ib = 0; ib < 16; ib++) {
        scales[ib] = makeQxQuants(16, 32, x, sb + 16 * ib, L, 16 * ib);
      }
      if (!q6Header(out, o, scales, 0, dd)) continue;
      for (let j = 0; j < 16; j++) {
        const d = dd[j];
        if (!d) continue;
        for (let ii = 0; ii < 16; ii++) {
          const l = nearestInt(fround(x[sb + 16 * j + ii] / d));
          L[16 * j + ii] = Math.max(-32, Math.min(31, l)) + 32;
        }
      }
      packQ6(out, o, L, 0);
    }
  }
  return out;
}

/**
 * A Q6_K block's scales and d from its 16 sub-block scales
 * (`scales[so..so+16)`); each sub-block's `d` goes to `dd[so + j]`.
 * Returns false for a block whose scales are all below `GROUP_MAX_EPS`
 * (d 0, codes left zero, as in ggml).
 */
function q6Header(
  out: Uint8Array,
  o: number,
  scales: Float32Array,
  so: number,
  dd: Float32Array,
): boolean {
  let maxScale = 0;
  let maxAbsScale = 0;
  for (let ib = so; ib < so + 16; ib++) {
    const a = Math.abs(scales[ib]);
    if (a > maxAbsScale) {
      maxAbsScale = a;
      maxScale = scales[ib];
    }
  }
  if (maxAbsScale < GROUP_MAX_EPS) {
    writeHalf(out, o + 208, 0);
    dd.fill(0, so, so + 16);
    return false;
  }
  const iscale = fround(-128 / maxScale);
  writeHalf(out, o + 208, fround(1 / iscale));
  for (let ib = 0; ib < 16; ib++) {
    out[o + 192 + ib] =
      Math.min(127, nearestInt(fround(iscale * scales[so + ib]))) & 255;
  }
  const dAll = readHalf(out, o + 208);
  for (let j = 0; j < 16; j++) {
    dd[so + j] = fround(dAll * ((out[o + 192 + j] << 24) >> 24));
  }
  return true;
}

/** Packs a Q6_K block's 256 codes `L[lo..lo+256)` into the low and high bits at `o`. */
function packQ6(out: Uint8Array, o: number, L: Int32Array, lo: number): void {
  for (
    let j = lo, ql = o, qh = o + 128;
    j < lo + 256;
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
