/**
 * IEEE half precision (F16), the one table every part of modelhost widens
 * F16 with: the F16 dtype's decoder, the scales of the ggml block codecs and
 * the fast kernels' scalar references all read {@link F16_TO_F32_BITS}.
 *
 * @module
 */

/**
 * F32 bits of every F16 code, built from the bit layout: widening is one
 * lookup per element, 1.4-2.2x faster than `Float32Array.from(Float16Array)` on
 * 4-16 MiB on a Xeon, even with it on an AMD EPYC (bench/dtypes_compare.ts;
 * `f16_widen.ts` picks the faster per machine), and NaN payloads are kept bit
 * for bit. 256 KiB, built once.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { F16_TO_F32_BITS } from "./f16.ts";
 * assert(F16_TO_F32_BITS[0x3c00] === 0x3f800000); // 1.0
 * assert(F16_TO_F32_BITS[0x7e01] === 0x7fc02000); // NaN payload kept
 * ```
 */
export const F16_TO_F32_BITS: Uint32Array = (() => {
  const bits = new Uint32Array(65536);
  const f = new Float32Array(bits.buffer);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const e = (h >>> 10) & 31, m = h & 0x3ff;
    if (e === 0) f[h] = m * 2 ** -24; // zero and subnormals, exact in F32
    else if (e === 31) bits[h] = 0x7f800000 | (m << 13); // Inf, NaN
    else bits[h] = ((e + 112) << 23) | (m << 13); // rebias 15 -> 127
    bits[h] = (bits[h] | sign) >>> 0;
  }
  return bits;
})();

/**
 * The value of every F16 code: {@link F16_TO_F32_BITS} read as F32 (the same
 * memory, no second table).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { HALF_TO_F32 } from "./f16.ts";
 * assert(HALF_TO_F32[0x3800] === 0.5 && HALF_TO_F32[0xfc00] === -Infinity);
 * ```
 */
export const HALF_TO_F32: Float32Array = new Float32Array(
  F16_TO_F32_BITS.buffer,
);

/**
 * Decodes one F16 value from its 16 bits.
 *
 * @param h The bits (0..65535).
 * @returns The value (subnormals, infinities and NaN included).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { halfToFloat } from "@modelhost/modelhost/kernels/fast";
 * assert(halfToFloat(0x3c00) === 1 && halfToFloat(0xc000) === -2);
 * ```
 */
export function halfToFloat(h: number): number {
  return HALF_TO_F32[h & 0xffff];
}

/**
 * Reads the little-endian F16 at byte `o` of `bytes`.
 *
 * @param bytes The bytes.
 * @param o Byte offset.
 * @returns The value.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readHalf } from "./f16.ts";
 * assert(readHalf(new Uint8Array([0, 0, 0x00, 0x3c]), 2) === 1);
 * ```
 */
export function readHalf(bytes: Uint8Array, o: number): number {
  return HALF_TO_F32[bytes[o] | (bytes[o + 1] << 8)];
}

const h16 = new Float16Array(1);
const h16bits = new Uint16Array(h16.buffer);

/**
 * Rounds an F32 value to F16 (nearest even, as ggml's `GGML_FP32_TO_FP16`)
 * and returns its bit pattern.
 *
 * @param x The value.
 * @returns The 16-bit pattern.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { f32ToHalfBits } from "./f16.ts";
 * assert(f32ToHalfBits(1) === 0x3c00 && f32ToHalfBits(-0) === 0x8000);
 * ```
 */
export function f32ToHalfBits(x: number): number {
  h16[0] = x;
  return h16bits[0];
}

/**
 * Writes `v` rounded to F16 (nearest even) as little-endian bytes at `o`.
 *
 * @param out The bytes.
 * @param o Byte offset.
 * @param v The value.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { writeHalf } from "./f16.ts";
 * const b = new Uint8Array(2);
 * writeHalf(b, 0, 1);
 * assert(b[0] === 0 && b[1] === 0x3c);
 * ```
 */
export function writeHalf(out: Uint8Array, o: number, v: number): void {
  const h = f32ToHalfBits(v);
  out[o] = h & 255;
  out[o + 1] = h >> 8;
}
