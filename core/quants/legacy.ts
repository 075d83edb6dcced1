/**
 * The 32-element ggml block types: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (and the
 * decoder of Q8_1). Decoders match ggml's `dequantize_row_*`; encoders match
 * its reference `quantize_row_*_ref` bit for bit (what `llama-quantize`
 * writes without an importance matrix).
 *
 * Block layouts (bytes, sizes from `QUANT_BLOCKS`): Q4_0 = d:f16, qs[16]
 * (18); Q4_1 = d:f16, m:f16, qs[16] (20); Q5_0 = d:f16, qh:u32, qs[16] (22);
 * Q5_1 = d:f16, m:f16, qh:u32, qs[16] (24); Q8_0 = d:f16, qs:i8[32] (34);
 * Q8_1 = d:f16, s:f16, qs:i8[32] (36). Element `j` of a block is the low
 * nibble of `qs[j]` for `j < 16` and the high nibble of `qs[j - 16]` after.
 *
 * @module
 */

import { checkBlocks, checkValues } from "./_common.ts";
import { QUANT_BLOCKS } from "./blocks.ts";
import { f32ToHalfBits, HALF_TO_F32 } from "./f16.ts";

const { Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 } = QUANT_BLOCKS;
const fround = Math.fround;
const FLT_MAX = 3.4028234663852886e38;

/**
 * Decodes Q4_0 blocks: `x = (q - 8) · d`.
 *
 * @param src Stored blocks (18 bytes per 32 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ4_0 } from "./legacy.ts";
 * const block = new Uint8Array(18); block[1] = 0x3c; // d = 1.0
 * block.fill(0x9a, 2); // low nibble 10, high nibble 9
 * const v = dequantizeQ4_0(block, 32);
 * assert(v[0] === 2 && v[16] === 1);
 * ```
 */
export function dequantizeQ4_0(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q4_0, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 18, y += 32) {
    const d = HALF_TO_F32[src[o] | (src[o + 1] << 8)];
    for (let j = 0; j < 16; j++) {
      const q = src[o + 2 + j];
      out[y + j] = ((q & 15) - 8) * d;
      out[y + j + 16] = ((q >> 4) - 8) * d;
    }
  }
  return out;
}

/**
 * Decodes Q4_1 blocks: `x = q · d + m`.
 *
 * @param src Stored blocks (20 bytes per 32 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ4_1 } from "./legacy.ts";
 * const block = new Uint8Array(20); block[1] = 0x3c; block[3] = 0xbc; // d = 1, m = -1
 * block.fill(0x21, 4);
 * const v = dequantizeQ4_1(block, 32);
 * assert(v[0] === 0 && v[16] === 1);
 * ```
 */
export function dequantizeQ4_1(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q4_1, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 20, y += 32) {
    const d = HALF_TO_F32[src[o] | (src[o + 1] << 8)];
    const m = HALF_TO_F32[src[o + 2] | (src[o + 3] << 8)];
    for (let j = 0; j < 16; j++) {
      const q = src[o + 4 + j];
      out[y + j] = fround((q & 15) * d) + m;
      out[y + j + 16] = fround((q >> 4) * d) + m;
    }
  }
  return out;
}

/**
 * Decodes Q5_0 blocks: `x = (q - 16) · d`, the fifth bit from `qh`.
 *
 * @param src Stored blocks (22 bytes per 32 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ5_0 } from "./legacy.ts";
 * const block = new Uint8Array(22); block[1] = 0x3c; block[2] = 1; // qh bit 0 set
 * const v = dequantizeQ5_0(block, 32);
 * assert(v[0] === 0 && v[1] === -16);
 * ```
 */
export function dequantizeQ5_0(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q5_0, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 22, y += 32) {
    const d = HALF_TO_F32[src[o] | (src[o + 1] << 8)];
    const qh = (src[o + 2] | (src[o + 3] << 8) | (src[o + 4] << 16) |
      (src[o + 5] << 24)) >>> 0;
    for (let j = 0; j < 16; j++) {
      const q = src[o + 6 + j];
      const h0 = ((qh >>> j) << 4) & 0x10;
      const h1 = (qh >>> (j + 12)) & 0x10;
      out[y + j] = (((q & 15) | h0) - 16) * d;
      out[y + j + 16] = (((q >> 4) | h1) - 16) * d;
    }
  }
  return out;
}

/**
 * Decodes Q5_1 blocks: `x = q · d + m`, the fifth bit from `qh`.
 *
 * @param src Stored blocks (24 bytes per 32 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ5_1 } from "./legacy.ts";
 * const block = new Uint8Array(24); block[1] = 0x3c; block[7] = 0x80; // qh bit 31
 * const v = dequantizeQ5_1(block, 32);
 * assert(v[31] === 16 && v[30] === 0);
 * ```
 */
export function dequantizeQ5_1(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q5_1, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 24, y += 32) {
    const d = HALF_TO_F32[src[o] | (src[o + 1] << 8)];
    const m = HALF_TO_F32[src[o + 2] | (src[o + 3] << 8)];
    const qh = (src[o + 4] | (src[o + 5] << 8) | (src[o + 6] << 16) |
      (src[o + 7] << 24)) >>> 0;
    for (let j = 0; j < 16; j++) {
      const q = src[o + 8 + j];
      const h0 = ((qh >>> j) << 4) & 0x10;
      const h1 = (qh >>> (j + 12)) & 0x10;
      out[y + j] = fround(((q & 15) | h0) * d) + m;
      out[y + j + 16] = fround(((q >> 4) | h1) * d) + m;
    }
  }
  return out;
}

/**
 * Decodes Q8_0 blocks: `x = q · d`.
 *
 * @param src Stored blocks (34 bytes per 32 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ8_0 } from "./legacy.ts";
 * const block = new Uint8Array(34); block[1] = 0x38; block[2] = 0xff; // d = 0.5, q0 = -1
 * assert(dequantizeQ8_0(block, 32)[0] === -0.5);
 * ```
 */
export function dequantizeQ8_0(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q8_0, src, count);
  const out = new Float32Array(count);
  const s8 = new Int8Array(src.buffer, src.byteOffset, src.byteLength);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 34, y += 32) {
    const d = HALF_TO_F32[src[o] | (src[o + 1] << 8)];
    const q = o + 2;
    for (let j = 0; j < 32; j++) out[y + j] = s8[q + j] * d;
  }
  return out;
}

/**
 * Decodes Q8_1 blocks (`x = q · d`; the stored sum is not needed).
 *
 * @param src Stored blocks (36 bytes per 32 values).
 * @param count Number of values.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ8_1 } from "./legacy.ts";
 * const block = new Uint8Array(36); block[1] = 0x3c; block[4] = 3;
 * assert(dequantizeQ8_1(block, 32)[0] === 3);
 * ```
 */
export function dequantizeQ8_1(src: Uint8Array, count: number): Float32Array {
  const nb = checkBlocks(Q8_1, src, count);
  const out = new Float32Array(count);
  for (let i = 0, o = 0, y = 0; i < nb; i++, o += 36, y += 32) {
    const d = HALF_TO_F32[src[o] | (src[o + 1] << 8)];
    for (let j = 0; j < 32; j++) {
      out[y + j] = ((src[o + 4 + j] << 24) >> 24) * d;
    }
  }
  return out;
}

/** The signed value of largest magnitude in x[s..s+n) (the first one on ties), as ggml picks it. */
function signedAbsMax(x: Float32Array, s: number, n: number): number {
  let amax = 0;
  let max = 0;
  for (let j = s; j < s + n; j++) {
    const v = x[j];
    const a = Math.abs(v);
    if (amax < a) {
      amax = a;
      max = v;
    }
  }
  return max;
}

/**
 * Encodes Q4_0 like ggml's `quantize_row_q4_0_ref`: `d = max / -8` where
 * `max` is the signed value of largest magnitude, codes `min(15, trunc(x/d + 8.5))`.
 *
 * @param x Values; the length must be a multiple of 32.
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ4_0, quantizeQ4_0 } from "./legacy.ts";
 * const x = Float32Array.from({ length: 32 }, (_, i) => i - 16);
 * const y = dequantizeQ4_0(quantizeQ4_0(x), 32);
 * assert(y[0] === -16 && Math.abs(y[5] - x[5]) <= 1);
 * ```
 */
export function quantizeQ4_0(x: Float32Array): Uint8Array {
  const nb = checkValues(Q4_0, x);
  const out = new Uint8Array(nb * 18);
  for (let i = 0, s = 0, o = 0; i < nb; i++, s += 32, o += 18) {
    const max = signedAbsMax(x, s, 32);
    const d = fround(max / -8);
    const id = d ? fround(1 / d) : 0;
    const h = f32ToHalfBits(d);
    out[o] = h & 255;
    out[o + 1] = h >> 8;
    for (let j = 0; j < 16; j++) {
      const x0 = fround(x[s + j] * id);
      const x1 = fround(x[s + 16 + j] * id);
      // (int8_t) truncation; x/d + 8.5 lies in [0, 17) for finite input.
      const t0 = fround(x0 + 8.5) | 0;
      const t1 = fround(x1 + 8.5) | 0;
      const q0 = t0 < 15 ? t0 : 15;
      const q1 = t1 < 15 ? t1 : 15;
      out[o + 2 + j] = (q0 & 255) | ((q1 << 4) & 255);
    }
  }
  return out;
}

/** Stores min and max of x[s..s+32) in `mm` (ggml starts from ±FLT_MAX). */
function minMax(x: Float32Array, s: number, mm: Float64Array): void {
  let min = FLT_MAX;
  let max = -FLT_MAX;
  for (let j = s; j < s + 32; j++) {
    const v = x[j];
    if (v < min) min = v;
    if (v > max) max = v;
  }
  mm[0] = min;
  mm[1] = max;
}

/**
 * Encodes Q4_1 like ggml's `quantize_row_q4_1_ref`: `d = (max - min) / 15`,
 * `m = min`, codes `min(15, trunc((x - min)/d + 0.5))`.
 *
 * @param x Values; the length must be a multiple of 32.
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ4_1, quantizeQ4_1 } from "./legacy.ts";
 * const x = Float32Array.from({ length: 32 }, (_, i) => i / 2);
 * const y = dequantizeQ4_1(quantizeQ4_1(x), 32);
 * assert(Math.abs(y[7] - x[7]) < 0.6);
 * ```
 */
export function quantizeQ4_1(x: Float32Array): Uint8Array {
  const nb = checkValues(Q4_1, x);
  const out = new Uint8Array(nb * 20);
  const mm = new Float64Array(2);
  for (let i = 0, s = 0, o = 0; i < nb; i++, s += 32, o += 20) {
    minMax(x, s, mm);
    const min = mm[0];
    const d = fround(fround(mm[1] - min) / 15);
    const id = d ? fround(1 / d) : 0;
    const hd = f32ToHalfBits(d);
    const hm = f32ToHalfBits(min);
    out[o] = hd & 255;
    out[o + 1] = hd >> 8;
    out[o + 2] = hm & 255;
    out[o + 3] = hm >> 8;
    for (let j = 0; j < 16; j++) {
      const x0 = fround(fround(x[s + j] - min) * id);
      const x1 = fround(fround(x[s + 16 + j] - min) * id);
      const q0 = Math.min(15, Math.trunc(fround(x0 + 0.5)));
      const q1 = Math.min(15, Math.trunc(fround(x1 + 0.5)));
      out[o + 4 + j] = (q0 & 255) | ((q1 << 4) & 255);
    }
  }
  return out;
}

function putU32(out: Uint8Array, o: number, v: number): void {
  out[o] = v & 255;
  out[o + 1] = (v >>> 8) & 255;
  out[o + 2] = (v >>> 16) & 255;
  out[o + 3] = (v >>> 24) & 255;
}

/**
 * Encodes Q5_0 like ggml's `quantize_row_q5_0_ref`: `d = max / -16`, codes
 * `min(31, trunc(x/d + 16.5))`, the fifth bits packed into `qh`.
 *
 * @param x Values; the length must be a multiple of 32.
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ5_0, quantizeQ5_0 } from "./legacy.ts";
 * const x = Float32Array.from({ length: 32 }, (_, i) => Math.sin(i));
 * const y = dequantizeQ5_0(quantizeQ5_0(x), 32);
 * assert(Math.abs(y[3] - x[3]) < 0.04);
 * ```
 */
export function quantizeQ5_0(x: Float32Array): Uint8Array {
  const nb = checkValues(Q5_0, x);
  const out = new Uint8Array(nb * 22);
  for (let i = 0, s = 0, o = 0; i < nb; i++, s += 32, o += 22) {
    const max = signedAbsMax(x, s, 32);
    const d = fround(max / -16);
    const id = d ? fround(1 / d) : 0;
    const h = f32ToHalfBits(d);
    out[o] = h & 255;
    out[o + 1] = h >> 8;
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const x0 = fround(x[s + j] * id);
      const x1 = fround(x[s + 16 + j] * id);
      const q0 = Math.min(31, Math.trunc(fround(x0 + 16.5))) & 255;
      const q1 = Math.min(31, Math.trunc(fround(x1 + 16.5))) & 255;
      out[o + 6 + j] = (q0 & 15) | ((q1 & 15) << 4);
      qh |= ((q0 & 0x10) >>> 4) << j;
      qh |= ((q1 & 0x10) >>> 4) << (j + 16);
    }
    putU32(out, o + 2, qh);
  }
  return out;
}

/**
 * Encodes Q5_1 like ggml's `quantize_row_q5_1_ref`: `d = (max - min) / 31`,
 * `m = min`, codes `trunc((x - min)/d + 0.5)`.
 *
 * @param x Values; the length must be a multiple of 32.
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ5_1, quantizeQ5_1 } from "./legacy.ts";
 * const x = Float32Array.from({ length: 32 }, (_, i) => Math.cos(i));
 * const y = dequantizeQ5_1(quantizeQ5_1(x), 32);
 * assert(Math.abs(y[9] - x[9]) < 0.04);
 * ```
 */
export function quantizeQ5_1(x: Float32Array): Uint8Array {
  const nb = checkValues(Q5_1, x);
  const out = new Uint8Array(nb * 24);
  const mm = new Float64Array(2);
  for (let i = 0, s = 0, o = 0; i < nb; i++, s += 32, o += 24) {
    minMax(x, s, mm);
    const min = mm[0];
    const d = fround(fround(mm[1] - min) / 31);
    const id = d ? fround(1 / d) : 0;
    const hd = f32ToHalfBits(d);
    const hm = f32ToHalfBits(min);
    out[o] = hd & 255;
    out[o + 1] = hd >> 8;
    out[o + 2] = hm & 255;
    out[o + 3] = hm >> 8;
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const x0 = fround(fround(x[s + j] - min) * id);
      const x1 = fround(fround(x[s + 16 + j] - min) * id);
      const q0 = Math.trunc(fround(x0 + 0.5)) & 255;
      const q1 = Math.trunc(fround(x1 + 0.5)) & 255;
      out[o + 8 + j] = (q0 & 15) | ((q1 & 15) << 4);
      qh |= ((q0 & 0x10) >>> 4) << j;
      qh |= ((q1 & 0x10) >>> 4) << (j + 16);
    }
    putU32(out, o + 4, qh);
  }
  return out;
}

/**
 * Encodes Q8_0 like ggml's `quantize_row_q8_0_ref`: `d = amax / 127`, codes
 * `roundf(x / d)` (halves away from zero).
 *
 * @param x Values; the length must be a multiple of 32.
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeQ8_0, quantizeQ8_0 } from "./legacy.ts";
 * const x = Float32Array.from({ length: 32 }, (_, i) => 0.1 + 2 * Math.cos(i));
 * const y = dequantizeQ8_0(quantizeQ8_0(x), 32);
 * assert(Math.abs(y[4] - x[4]) < 0.01);
 * ```
 */
export function quantizeQ8_0(x: Float32Array): Uint8Array {
  const nb = checkValues(Q8_0, x);
  const out = new Uint8Array(nb * 34);
  for (let i = 0, s = 0, o = 0; i < nb; i++, s += 32, o += 34) {
    let amax = 0;
    for (let j = s; j < s + 32; j++) {
      const a = Math.abs(x[j]);
      amax = amax > a ? amax : a;
    }
    const d = fround(amax / 127);
    const id = d ? fround(1 / d) : 0;
    const h = f32ToHalfBits(d);
    out[o] = h & 255;
    out[o + 1] = h >> 8;
    for (let j = 0; j < 32; j++) {
      // roundf (halves away from zero): v ± 0.5 is exact in double, then
      // truncate toward zero.
      const v = fround(x[s + j] * id);
      out[o + 2 + j] = (v < 0 ? v - 0.5 : v + 0.5) | 0;
    }
  }
  return out;
}
