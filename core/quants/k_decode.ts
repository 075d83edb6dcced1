/**
 * Decoders of the 256-element ggml "K" super-block types: Q2_K, Q3_K, Q4_K,
 * Q5_K, Q6_K and Q8_K, matching ggml's `dequantize_row_*` bit for bit (every
 * float operation rounded to F32 as C does). The encoders are in
 * `k_encode.ts`.
 *
 * Block layouts (bytes, sizes from `QUANT_BLOCKS`): Q2_K = scales[16],
 * qs[64], d:f16, dmin:f16 (84); Q3_K = hmask[32], qs[64], scales[12], d:f16
 * (110); Q4_K = d:f16, dmin:f16, scales[12], qs[128] (144); Q5_K = d:f16,
 * dmin:f16, scales[12], qh[32], qs[128] (176); Q6_K = ql[128], qh[64],
 * scales:i8[16], d:f16 (210); Q8_K = d:f32, qs:i8[256], bsums:i16[16] (292).
 *
 * @module
 */

import { checkBlocks, scaleMinK4 } from "./_common.ts";
import { QUANT_BLOCKS } from "./blocks.ts";
import { readHalf } from "./f16.ts";

const { Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K } = QUANT_BLOCKS;
const fround = Math.fround;

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
 * import { dequantizeQ2_K } from "./k_decode.ts";
 * const b = new Uint8Array(84); b[0] = 0x21; b.fill(3, 16, 80); b[81] = 0x3c; b[83] = 0x3c;
 * assert(dequantizeQ2_K(b, 256)[0] === 1); // 1·3 − 2
 * ```
 */
export function dequantizeQ2_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q2_K, src, count);
  const out = new Float32Array(count);
  let y = 0;
  for (let i = 0, o = 0; i < nb; i++, o += 84) {
    const d = readHalf(src, o + 80);
    const min = readHalf(src, o + 82);
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
 * import { dequantizeQ3_K } from "./k_decode.ts";
 * // hmask and the 2-bit codes all ones (q = 3), scale codes 1 (1 − 32 = −31), d = 1.0
 * const b = new Uint8Array(110); b.fill(0xff, 0, 96); b.fill(0x11, 96, 104); b[109] = 0x3c;
 * assert(dequantizeQ3_K(b, 256)[0] === -31 * 3);
 * ```
 */
export function dequantizeQ3_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q3_K, src, count);
  const out = new Float32Array(count);
  const scales = new Int32Array(16);
  let y = 0;
  for (let i = 0, o = 0; i < nb; i++, o += 110) {
    const dAll = readHalf(src, o + 108);
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
 * import { dequantizeQ4_K } from "./k_decode.ts";
 * const b = new Uint8Array(144); b[1] = 0x3c; b[4] = 2; b.fill(0x55, 16);
 * assert(dequantizeQ4_K(b, 256)[0] === 10); // d·2·5
 * ```
 */
export function dequantizeQ4_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q4_K, src, count);
  const out = new Float32Array(count);
  const sm = new Int32Array(2);
  let y = 0;
  for (let i = 0, o = 0; i < nb; i++, o += 144) {
    const d = readHalf(src, o);
    const min = readHalf(src, o + 2);
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
 * import { dequantizeQ5_K } from "./k_decode.ts";
 * const b = new Uint8Array(176); b[1] = 0x3c; b[4] = 1; b[16] = 1; // high bit of value 0
 * assert(dequantizeQ5_K(b, 256)[0] === 16);
 * ```
 */
export function dequantizeQ5_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q5_K, src, count);
  const out = new Float32Array(count);
  const sm = new Int32Array(2);
  let y = 0;
  for (let i = 0, o = 0; i < nb; i++, o += 176) {
    const d = readHalf(src, o);
    const min = readHalf(src, o + 2);
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
 * import { dequantizeQ6_K } from "./k_decode.ts";
 * const b = new Uint8Array(210); b.fill(2, 192, 208); b[209] = 0x3c;
 * assert(dequantizeQ6_K(b, 256)[0] === -64); // 1·2·(0 − 32)
 * ```
 */
export function dequantizeQ6_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q6_K, src, count);
  const out = new Float32Array(count);
  let y = 0;
  for (let i = 0, o = 0; i < nb; i++, o += 210) {
    const d = readHalf(src, o + 208);
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
 * import { dequantizeQ8_K } from "./k_decode.ts";
 * const b = new Uint8Array(292); new DataView(b.buffer).setFloat32(0, 0.25, true); b[4] = 0xfc;
 * assert(dequantizeQ8_K(b, 256)[0] === -1);
 * ```
 */
export function dequantizeQ8_K(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q8_K, src, count);
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
