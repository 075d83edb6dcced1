/**
 * Helpers shared by the block (de)quantizers: ggml's rounding, C's
 * float-to-int conversions, the K-quants' packed 6-bit scales, and the input
 * checks (sizes from the block table in `blocks.ts`). Half-precision scales
 * are read and written with `f16.ts`.
 *
 * Every quantizer mirrors C code that computes in 32-bit `float`; in
 * JavaScript each operation is done in double and rounded with
 * `Math.fround`, which gives the same result as the float operation for
 * `+ - * /` and `sqrt` (double has more than twice float's precision).
 *
 * @module
 */

import type { QuantBlock } from "./blocks.ts";

const f32 = new Float32Array(1);
const f32bits = new Int32Array(f32.buffer);

/**
 * ggml's `nearest_int`: adds 1.5·2^23 in float and reads the mantissa bits,
 * i.e. round half to even for |x| ≤ 4194303; outside that range it returns
 * the same bits C does.
 *
 * @param x An F32 value.
 * @returns The integer.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { nearestInt } from "./_common.ts";
 * assert(nearestInt(2.5) === 2 && nearestInt(-3.5) === -4 && nearestInt(0.7) === 1);
 * ```
 */
export function nearestInt(x: number): number {
  if (x <= 4194303 && x >= -4194303) {
    return Math.fround(x + 12582912) - 12582912;
  }
  f32[0] = x + 12582912;
  return (f32bits[0] & 0x007fffff) - 0x00400000;
}

/**
 * C's `roundf`: halves round away from zero.
 *
 * @param x The value.
 * @returns The rounded value.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { roundAway } from "./_common.ts";
 * assert(roundAway(-2.5) === -3 && roundAway(2.5) === 3);
 * ```
 */
export function roundAway(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

/**
 * The 6-bit scale and min of sub-block `j` (0..7) of a Q4_K / Q5_K block,
 * unpacked from the 12 scale bytes at `q` (ggml's `get_scale_min_k4`) into
 * `sm[0]` (scale) and `sm[1]` (min).
 *
 * @param j Sub-block index.
 * @param b The bytes.
 * @param q Offset of the 12 packed scale bytes.
 * @param sm Receives scale and min.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { scaleMinK4 } from "./_common.ts";
 * const sm = new Int32Array(2);
 * scaleMinK4(1, new Uint8Array([0, 5, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0]), 0, sm);
 * assert(sm[0] === 5 && sm[1] === 7);
 * ```
 */
export function scaleMinK4(
  j: number,
  b: Uint8Array,
  q: number,
  sm: Int32Array,
): void {
  if (j < 4) {
    sm[0] = b[q + j] & 63;
    sm[1] = b[q + j + 4] & 63;
  } else {
    sm[0] = (b[q + j + 4] & 0xf) | ((b[q + j - 4] >> 6) << 4);
    sm[1] = (b[q + j + 4] >> 4) | ((b[q + j] >> 6) << 4);
  }
}

/**
 * Packs sub-block `j` (0..7)'s 6-bit scale `ls` and min `lm` into the 12
 * scale bytes of a Q4_K / Q5_K block at `sc`, the inverse of
 * {@link scaleMinK4}. Bytes for `j ≥ 4` are OR-ed in, so write `j < 4` first.
 *
 * @param out The block bytes.
 * @param sc Offset of the 12 packed scale bytes.
 * @param j Sub-block index.
 * @param ls The 6-bit scale.
 * @param lm The 6-bit min.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { packScalesK4, scaleMinK4 } from "./_common.ts";
 * const b = new Uint8Array(12), sm = new Int32Array(2);
 * for (let j = 0; j < 8; j++) packScalesK4(b, 0, j, 40 + j, 50 + j);
 * scaleMinK4(6, b, 0, sm);
 * assert(sm[0] === 46 && sm[1] === 56);
 * ```
 */
export function packScalesK4(
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

/**
 * Packs 256 two-bit codes four per byte into 64 bytes at `q` (the Q2_K and
 * Q3_K layout): byte `32h + l` holds codes `128h + l + 32k` at bits `2k`.
 *
 * @param L The codes (0..3).
 * @param out The block bytes.
 * @param q Offset of the 64 code bytes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { pack2 } from "./_common.ts";
 * const L = new Int32Array(256);
 * L[32] = 3; // second code of byte 0
 * const out = new Uint8Array(64);
 * pack2(L, out, 0);
 * assert(out[0] === 3 << 2);
 * ```
 */
export function pack2(L: Int32Array, out: Uint8Array, q: number): void {
  for (let j = 0; j < 256; j += 128) {
    for (let l = 0; l < 32; l++) {
      out[q + j / 4 + l] = L[j + l] | (L[j + l + 32] << 2) |
        (L[j + l + 64] << 4) | (L[j + l + 96] << 6);
    }
  }
}

/**
 * Stores 256 three-bit Q3_K codes (0..7): the high bit of code `32k + m`
 * goes to bit `k` of `hmask` byte `m` (32 bytes at `o`, OR-ed in, so they
 * must start zero), the low two bits to the 64 bytes at `o + 32` through
 * {@link pack2}. `L` is left holding the low bits.
 *
 * @param L The codes; reduced to their low two bits.
 * @param out The block bytes.
 * @param o Offset of the block's `hmask`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { packQ3Codes } from "./_common.ts";
 * const L = new Int32Array(256);
 * L[33] = 5; // high bit: hmask[1] bit 1; low bits 1: byte 32 + 1 at bit 2
 * const out = new Uint8Array(96);
 * packQ3Codes(L, out, 0);
 * assert(out[1] === 2 && out[33] === 1 << 2);
 * ```
 */
export function packQ3Codes(L: Int32Array, out: Uint8Array, o: number): void {
  let m = 0, hm = 1;
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

/**
 * Checks the inputs of a block decoder.
 *
 * @param block The type's block facts (from `QUANT_BLOCKS`).
 * @param src The stored bytes.
 * @param count Elements to decode.
 * @returns The number of blocks.
 * @throws {RangeError} When `count` is not whole blocks or `src` is short.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { checkBlocks } from "./_common.ts";
 * import { QUANT_BLOCKS } from "./blocks.ts";
 * assert(checkBlocks(QUANT_BLOCKS.Q8_0, new Uint8Array(68), 64) === 2);
 * ```
 */
export function checkBlocks(
  block: QuantBlock,
  src: Uint8Array,
  count: number,
): number {
  const { name, blockSize, blockBytes } = block;
  if (!Number.isSafeInteger(count) || count < 0 || count % blockSize !== 0) {
    throw new RangeError(
      `Cannot decode ${count} ${name} values: the count must be a multiple of the block size ${blockSize}`,
    );
  }
  const nb = count / blockSize;
  if (src.byteLength < nb * blockBytes) {
    throw new RangeError(
      `Cannot decode ${count} ${name} values: needs ${
        nb * blockBytes
      } bytes (${nb} blocks of ${blockBytes}), got ${src.byteLength}`,
    );
  }
  return nb;
}

/**
 * Checks the input of a block encoder.
 *
 * @param block The type's block facts (from `QUANT_BLOCKS`).
 * @param x The values.
 * @returns The number of blocks.
 * @throws {RangeError} When the length is not whole blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { checkValues } from "./_common.ts";
 * import { QUANT_BLOCKS } from "./blocks.ts";
 * assert(checkValues(QUANT_BLOCKS.Q4_K, new Float32Array(512)) === 2);
 * ```
 */
export function checkValues(block: QuantBlock, x: Float32Array): number {
  const { name, blockSize } = block;
  if (x.length % blockSize !== 0) {
    throw new RangeError(
      `Cannot encode ${x.length} values as ${name}: the count must be a multiple of the block size ${blockSize}`,
    );
  }
  return x.length / blockSize;
}
