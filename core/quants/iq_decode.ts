/**
 * Decoders of the lattice ("IQ"), ternary (TQ), FP4 (MXFP4, NVFP4) and
 * one/two-bit (Q1_0, Q2_0) ggml types, matching ggml's `dequantize_row_*`
 * bit for bit: every float product is rounded to F32 in C's order. The grids
 * and value tables are in `_iq_tables.ts`.
 *
 * Block layouts (bytes; sizes from `QUANT_BLOCKS`):
 * IQ2_XXS = d:f16, qs:u16[32] (66); IQ2_XS = d, qs:u16[32], scales[8] (74);
 * IQ2_S = d, qs[32], signs[32], qh[8], scales[8] (82); IQ3_XXS = d, qs[64],
 * scales_and_signs:u32[8] (98); IQ3_S = d, qs[64], qh[8], signs[32],
 * scales[4] (110); IQ1_S = d, qs[32], qh:u16[8] (50); IQ1_M = qs[32],
 * qh[16], scales[8] with the f16 scale spread over the top nibbles (56);
 * IQ4_NL = d, qs[16] (18 per 32); IQ4_XS = d, scales_h:u16, scales_l[4],
 * qs[128] (136); TQ1_0 = qs[48], qh[4], d (54); TQ2_0 = qs[64], d (66);
 * MXFP4 = e:E8M0, qs[16] (17 per 32); NVFP4 = d:UE4M3[4], qs[32] (36 per
 * 64); Q1_0 = d, qs[16] (18 per 128); Q2_0 = d, qs[16] (18 per 64).
 *
 * @module
 */

import { checkBlocks } from "./_common.ts";
import { QUANT_BLOCKS } from "./blocks.ts";
import { readHalf } from "./f16.ts";
import {
  e8m0Half,
  IQ1S_DELTA,
  IQ1S_GRID,
  IQ2S_GRID,
  IQ2XS_GRID,
  IQ2XXS_GRID,
  IQ3S_GRID,
  IQ3XXS_GRID,
  KSIGNS,
  KVALUES_FP4,
  KVALUES_IQ4NL,
  ue4m3Half,
} from "./_iq_tables.ts";

const fround = Math.fround;

function u16(b: Uint8Array, o: number): number {
  return b[o] | (b[o + 1] << 8);
}

function u32(b: Uint8Array, o: number): number {
  return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
}

/** `n` values `db · grid · ±1` of a lattice entry, sign bit `j` negating value `j`. */
function putSigned(
  out: Float32Array,
  y: number,
  db: number,
  grid: Int8Array,
  g: number,
  signs: number,
  n: number,
): void {
  for (let j = 0; j < n; j++) {
    const v = fround(db * grid[g + j]);
    out[y + j] = (signs >> j) & 1 ? -v : v;
  }
}

/** The sub-block scale `d · (0.5 + s) · mul` of the IQ2/IQ3_XXS types, rounded like ggml. */
function halfStepScale(d: number, s: number, mul: number): number {
  return fround(fround(d * (0.5 + s)) * mul);
}

/** The odd sub-block scale `d · (2s + 1)` of the IQ1 and IQ3_S types. */
function oddScale(d: number, s: number): number {
  return fround(d * (2 * s + 1));
}

/** Eight values `dl · (grid + delta)` of a one-bit lattice entry. */
function putDelta8(
  out: Float32Array,
  y: number,
  dl: number,
  g: number,
  delta: number,
): void {
  for (let j = 0; j < 8; j++) {
    out[y + j] = fround(dl * (IQ1S_GRID[g + j] + delta));
  }
}

/**
 * `2n` values `d · table[nibble]` from `n` bytes at `q`: low nibbles to
 * `y..y+n`, high nibbles to `y+n..y+2n`.
 */
function putNibbles(
  out: Float32Array,
  y: number,
  src: Uint8Array,
  q: number,
  n: number,
  table: ArrayLike<number>,
  d: number,
): void {
  for (let j = 0; j < n; j++) {
    out[y + j] = fround(d * table[src[q + j] & 0xf]);
    out[y + j + n] = fround(d * table[src[q + j] >> 4]);
  }
}

/**
 * Decodes IQ2_XXS super-blocks.
 *
 * @param src Stored blocks (66 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeIQ2_XXS } from "./iq_decode.ts";
 * const b = new Uint8Array(66); b[1] = 0x3c; // d = 1, grid 0 (all 8), scale 0
 * assert(dequantizeIQ2_XXS(b, 256)[0] === 8 * 0.125);
 * ```
 */
export function dequantizeIQ2_XXS(
  src: Uint8Array,
  count: number,
): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.IQ2_XXS, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 66) {
    const d = readHalf(src, o);
    for (let ib = 0; ib < 8; ib++) {
      const q = o + 2 + 8 * ib;
      const aux1 = u32(src, q + 4);
      const db = halfStepScale(d, aux1 >>> 28, 0.25);
      for (let l = 0; l < 4; l++, y += 8) {
        putSigned(
          out,
          y,
          db,
          IQ2XXS_GRID,
          src[q + l] * 8,
          KSIGNS[(aux1 >>> (7 * l)) & 127],
          8,
        );
      }
    }
  }
  return out;
}

/**
 * Decodes IQ2_XS super-blocks.
 *
 * @param src Stored blocks (74 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeIQ2_XS } from "./iq_decode.ts";
 * const b = new Uint8Array(74); b[1] = 0x3c; b[66] = 1; // sub-block scale 1
 * assert(dequantizeIQ2_XS(b, 256)[0] === 8 * 1.5 * 0.25);
 * ```
 */
export function dequantizeIQ2_XS(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.IQ2_XS, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 74) {
    const d = readHalf(src, o);
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[o + 66 + ib];
      const db0 = halfStepScale(d, sc & 0xf, 0.25);
      const db1 = halfStepScale(d, sc >> 4, 0.25);
      for (let l = 0; l < 4; l++, y += 8) {
        const q = u16(src, o + 2 + 2 * (4 * ib + l));
        putSigned(
          out,
          y,
          l < 2 ? db0 : db1,
          IQ2XS_GRID,
          (q & 511) * 8,
          KSIGNS[q >> 9],
          8,
        );
      }
    }
  }
  return out;
}

/**
 * Decodes IQ2_S super-blocks.
 *
 * @param src Stored blocks (82 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeIQ2_S } from "./iq_decode.ts";
 * const b = new Uint8Array(82); b[1] = 0x3c; b[34] = 1; // first value negated
 * assert(dequantizeIQ2_S(b, 256)[0] === -8 * 0.125);
 * ```
 */
export function dequantizeIQ2_S(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.IQ2_S, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 82) {
    const d = readHalf(src, o);
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[o + 74 + ib];
      const db0 = halfStepScale(d, sc & 0xf, 0.25);
      const db1 = halfStepScale(d, sc >> 4, 0.25);
      const qh = src[o + 66 + ib];
      for (let l = 0; l < 4; l++, y += 8) {
        const g = src[o + 2 + 4 * ib + l] | ((qh << (8 - 2 * l)) & 0x300);
        putSigned(
          out,
          y,
          l < 2 ? db0 : db1,
          IQ2S_GRID,
          g * 8,
          src[o + 34 + 4 * ib + l],
          8,
        );
      }
    }
  }
  return out;
}

/**
 * Decodes IQ3_XXS super-blocks.
 *
 * @param src Stored blocks (98 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeIQ3_XXS } from "./iq_decode.ts";
 * const b = new Uint8Array(98); b[1] = 0x3c; // grid 0 (all 4), scale 0
 * assert(dequantizeIQ3_XXS(b, 256)[0] === 4 * 0.25);
 * ```
 */
export function dequantizeIQ3_XXS(
  src: Uint8Array,
  count: number,
): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.IQ3_XXS, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 98) {
    const d = readHalf(src, o);
    for (let ib = 0; ib < 8; ib++) {
      const aux = u32(src, o + 66 + 4 * ib);
      const db = halfStepScale(d, aux >>> 28, 0.5);
      const qs = o + 2 + 8 * ib;
      for (let l = 0; l < 4; l++, y += 8) {
        const signs = KSIGNS[(aux >>> (7 * l)) & 127];
        putSigned(out, y, db, IQ3XXS_GRID, src[qs + 2 * l] * 4, signs, 4);
        putSigned(
          out,
          y + 4,
          db,
          IQ3XXS_GRID,
          src[qs + 2 * l + 1] * 4,
          signs >> 4,
          4,
        );
      }
    }
  }
  return out;
}

/**
 * Decodes IQ3_S super-blocks.
 *
 * @param src Stored blocks (110 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeIQ3_S } from "./iq_decode.ts";
 * const b = new Uint8Array(110); b[1] = 0x3c; // grid 0 (all 1), scale 1 + 2·0
 * assert(dequantizeIQ3_S(b, 256)[0] === 1);
 * ```
 */
export function dequantizeIQ3_S(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.IQ3_S, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 110) {
    const d = readHalf(src, o);
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[o + 106 + (ib >> 1)];
      const db = oddScale(d, (ib & 1) ? sc >> 4 : sc & 0xf);
      const qh = src[o + 66 + ib];
      const qs = o + 2 + 8 * ib;
      for (let l = 0; l < 4; l++, y += 8) {
        const signs = src[o + 74 + 4 * ib + l];
        const g1 = src[qs + 2 * l] | ((qh << (8 - 2 * l)) & 256);
        const g2 = src[qs + 2 * l + 1] | ((qh << (7 - 2 * l)) & 256);
        putSigned(out, y, db, IQ3S_GRID, g1 * 4, signs, 4);
        putSigned(out, y + 4, db, IQ3S_GRID, g2 * 4, signs >> 4, 4);
      }
    }
  }
  return out;
}

/**
 * Decodes IQ1_S super-blocks.
 *
 * @param src Stored blocks (50 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeIQ1_S } from "./iq_decode.ts";
 * const b = new Uint8Array(50); b[1] = 0x3c; // grid 0 (all −1), scale 1, delta +1/8
 * assert(dequantizeIQ1_S(b, 256)[0] === -0.875);
 * ```
 */
export function dequantizeIQ1_S(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.IQ1_S, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 50) {
    const d = readHalf(src, o);
    for (let ib = 0; ib < 8; ib++) {
      const qh = u16(src, o + 34 + 2 * ib);
      const dl = oddScale(d, (qh >> 12) & 7);
      const delta = qh & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;
      for (let l = 0; l < 4; l++, y += 8) {
        const g = (src[o + 2 + 4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)) * 8;
        putDelta8(out, y, dl, g, delta);
      }
    }
  }
  return out;
}

/**
 * Decodes IQ1_M super-blocks.
 *
 * @param src Stored blocks (56 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeIQ1_M } from "./iq_decode.ts";
 * // the f16 scale 1.0 (0x3c00) lives in the top nibbles of the four scale words
 * const b = new Uint8Array(56); b[53] = 0xc0; b[55] = 0x30;
 * assert(dequantizeIQ1_M(b, 256)[0] === -0.875);
 * ```
 */
export function dequantizeIQ1_M(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.IQ1_M, src, count);
  const out = new Float32Array(count);
  const half = new Uint8Array(2);
  const sc = new Uint16Array(4);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 56) {
    for (let k = 0; k < 4; k++) sc[k] = u16(src, o + 48 + 2 * k);
    const s = (sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) |
      ((sc[2] >> 4) & 0x0f00) |
      (sc[3] & 0xf000);
    half[0] = s & 0xff;
    half[1] = s >> 8;
    const d = readHalf(half, 0);
    for (let ib = 0; ib < 8; ib++) {
      const w = sc[ib >> 1];
      const sh = 6 * (ib & 1);
      const dl1 = oddScale(d, (w >> sh) & 7);
      const dl2 = oddScale(d, (w >> (sh + 3)) & 7);
      const qs = o + 4 * ib;
      const qh0 = src[o + 32 + 2 * ib];
      const qh1 = src[o + 33 + 2 * ib];
      const idx = [
        src[qs] | ((qh0 << 8) & 0x700),
        src[qs + 1] | ((qh0 << 4) & 0x700),
        src[qs + 2] | ((qh1 << 8) & 0x700),
        src[qs + 3] | ((qh1 << 4) & 0x700),
      ];
      const delta = [
        qh0 & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA,
        qh0 & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA,
        qh1 & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA,
        qh1 & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA,
      ];
      for (let l = 0; l < 4; l++, y += 8) {
        putDelta8(out, y, l < 2 ? dl1 : dl2, idx[l] * 8, delta[l]);
      }
    }
  }
  return out;
}

/**
 * Decodes IQ4_NL blocks.
 *
 * @param src Stored blocks (18 bytes per 32 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeIQ4_NL } from "./iq_decode.ts";
 * const b = new Uint8Array(18); b[1] = 0x3c; b[2] = 0xf0; // codes 0 and 15
 * const y = dequantizeIQ4_NL(b, 32);
 * assert(y[0] === -127 && y[16] === 113);
 * ```
 */
export function dequantizeIQ4_NL(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.IQ4_NL, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 18, y += 32) {
    putNibbles(out, y, src, o + 2, 16, KVALUES_IQ4NL, readHalf(src, o));
  }
  return out;
}

/**
 * Decodes IQ4_XS super-blocks.
 *
 * @param src Stored blocks (136 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeIQ4_XS } from "./iq_decode.ts";
 * // d = 1, first sub-block scale 33 − 32 = 1, code 15
 * const b = new Uint8Array(136); b[1] = 0x3c; b[2] = 2; b[4] = 1; b[8] = 15;
 * assert(dequantizeIQ4_XS(b, 256)[0] === 113);
 * ```
 */
export function dequantizeIQ4_XS(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.IQ4_XS, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 136) {
    const d = readHalf(src, o);
    const sh = u16(src, o + 2);
    for (let ib = 0; ib < 8; ib++, y += 32) {
      const ls = ((src[o + 4 + (ib >> 1)] >> (4 * (ib & 1))) & 0xf) |
        (((sh >> (2 * ib)) & 3) << 4);
      const dl = fround(d * (ls - 32));
      putNibbles(out, y, src, o + 8 + 16 * ib, 16, KVALUES_IQ4NL, dl);
    }
  }
  return out;
}

/**
 * Decodes TQ1_0 (ternary, five values per byte in base 3) super-blocks.
 *
 * @param src Stored blocks (54 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeTQ1_0 } from "./iq_decode.ts";
 * const b = new Uint8Array(54); b[53] = 0x3c; // every digit 0 → −1
 * assert(dequantizeTQ1_0(b, 256)[0] === -1);
 * ```
 */
export function dequantizeTQ1_0(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.TQ1_0, src, count);
  const out = new Float32Array(count);
  const pow3 = [1, 3, 9, 27, 81];
  const trit = (b: number, n: number): number =>
    ((((b * pow3[n]) & 0xff) * 3) >> 8) - 1;
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 54) {
    const d = readHalf(src, o + 52);
    for (const [start, width] of [[0, 32], [32, 16]]) {
      for (let n = 0; n < 5; n++) {
        for (let m = 0; m < width; m++) {
          out[y++] = fround(trit(src[o + start + m], n) * d);
        }
      }
    }
    for (let n = 0; n < 4; n++) {
      for (let j = 0; j < 4; j++) {
        out[y++] = fround(trit(src[o + 48 + j], n) * d);
      }
    }
  }
  return out;
}

/**
 * Decodes TQ2_0 (ternary in two bits) super-blocks.
 *
 * @param src Stored blocks (66 bytes per 256 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeTQ2_0 } from "./iq_decode.ts";
 * const b = new Uint8Array(66); b[0] = 2; b[65] = 0x3c; // code 2 → +1
 * assert(dequantizeTQ2_0(b, 256)[0] === 1 && dequantizeTQ2_0(b, 256)[1] === -1);
 * ```
 */
export function dequantizeTQ2_0(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.TQ2_0, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 66) {
    const d = readHalf(src, o + 64);
    for (let j = 0; j < 64; j += 32) {
      for (let l = 0; l < 4; l++) {
        for (let m = 0; m < 32; m++) {
          out[y++] = fround((((src[o + j + m] >> (2 * l)) & 3) - 1) * d);
        }
      }
    }
  }
  return out;
}

/**
 * Decodes MXFP4 blocks (E8M0 scale, 32 E2M1 values).
 *
 * @param src Stored blocks (17 bytes per 32 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeMXFP4 } from "./iq_decode.ts";
 * const b = new Uint8Array(17); b[0] = 127; b[1] = 0xf7; // scale 2^-1 · {12, −12}
 * const y = dequantizeMXFP4(b, 32);
 * assert(y[0] === 6 && y[16] === -6);
 * ```
 */
export function dequantizeMXFP4(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.MXFP4, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 17, y += 32) {
    putNibbles(out, y, src, o + 1, 16, KVALUES_FP4, e8m0Half(src[o]));
  }
  return out;
}

/**
 * Decodes NVFP4 blocks (four UE4M3 scales, 64 E2M1 values).
 *
 * @param src Stored blocks (36 bytes per 64 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeNVFP4 } from "./iq_decode.ts";
 * const b = new Uint8Array(36); b[0] = 0x38; b[4] = 0x07; // scale 1.0, code 7 (6.0)
 * assert(dequantizeNVFP4(b, 64)[0] === 6);
 * ```
 */
export function dequantizeNVFP4(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.NVFP4, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 36) {
    for (let s = 0; s < 4; s++, y += 16) {
      putNibbles(
        out,
        y,
        src,
        o + 4 + 8 * s,
        8,
        KVALUES_FP4,
        ue4m3Half(src[o + s]),
      );
    }
  }
  return out;
}

/**
 * Decodes Q1_0 blocks (one sign bit per value, ±d).
 *
 * @param src Stored blocks (18 bytes per 128 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ1_0 } from "./iq_decode.ts";
 * const b = new Uint8Array(18); b[1] = 0x3c; b[2] = 1;
 * const y = dequantizeQ1_0(b, 128);
 * assert(y[0] === 1 && y[1] === -1);
 * ```
 */
export function dequantizeQ1_0(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.Q1_0, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 18) {
    const d = readHalf(src, o);
    for (let j = 0; j < 128; j++) {
      out[y++] = (src[o + 2 + (j >> 3)] >> (j & 7)) & 1 ? d : -d;
    }
  }
  return out;
}

/**
 * Decodes Q2_0 blocks (two bits per value: −1, 0, 1, 2 times d).
 *
 * @param src Stored blocks (18 bytes per 64 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ2_0 } from "./iq_decode.ts";
 * const b = new Uint8Array(18); b[1] = 0x3c; b[2] = 3; // code 3 → +2, then −1s
 * const y = dequantizeQ2_0(b, 64);
 * assert(y[0] === 2 && y[1] === -1);
 * ```
 */
export function dequantizeQ2_0(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(QUANT_BLOCKS.Q2_0, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 18) {
    const d = readHalf(src, o);
    for (let j = 0; j < 64; j++) {
      out[y++] = fround(
        (((src[o + 2 + (j >> 2)] >> (2 * (j & 3))) & 3) - 1) * d,
      );
    }
  }
  return out;
}
