/**
 * Scalar reference decoders for the weight dtypes the fast kernels read:
 * F32, F16, BF16 and the ggml blocks Q8_0, Q4_0, Q4_K, Q6_K. They decode
 * one row of a `[rows, cols]` matrix at a time, so the `_ref` kernels
 * never hold a whole weight in F32. These are the `_ref` twins the fast
 * kernels are tested against; they are themselves checked against NumPy
 * decoders (`tests/kernels/fast/gen_vectors.py`).
 *
 * Block layouts (little-endian, as in ggml):
 *
 * | dtype | elements | bytes | layout |
 * | ----- | -------- | ----- | ------ |
 * | Q8_0 | 32 | 34 | f16 d, 32 × i8 q; value `d·q` |
 * | Q4_0 | 32 | 18 | f16 d, 16 bytes: low nibbles are elements 0..15, high 16..31; value `d·(q − 8)` |
 * | Q4_K | 256 | 144 | f16 d, f16 dmin, 12 bytes of 6-bit (scale, min) × 8, 128 bytes of nibbles; value `d·sc·q − dmin·m` per 32 |
 * | Q6_K | 256 | 210 | 128 bytes low nibbles, 64 bytes high 2 bits, 16 × i8 scales, f16 d; value `d·sc·(q − 32)` per 16 |
 *
 * @module
 */

import { UnsupportedDTypeError } from "../../core/errors.ts";

/**
 * Weight dtypes with fast kernels (and these reference decoders).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { FAST_DTYPES } from "./quant_ref.ts";
 * assert(FAST_DTYPES.includes("Q4_0"));
 * ```
 */
export const FAST_DTYPES = [
  "F32",
  "F16",
  "BF16",
  "Q8_0",
  "Q4_0",
  "Q4_K",
  "Q6_K",
] as const;

/** One of {@link FAST_DTYPES}. */
export type FastDType = typeof FAST_DTYPES[number];

/**
 * Elements and bytes per block of each {@link FastDType}.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { BLOCKS } from "./quant_ref.ts";
 * assert(BLOCKS.Q8_0.elems === 32 && BLOCKS.Q8_0.bytes === 34);
 * ```
 */
export const BLOCKS: Readonly<
  Record<FastDType, { elems: number; bytes: number }>
> = {
  F32: { elems: 1, bytes: 4 },
  F16: { elems: 1, bytes: 2 },
  BF16: { elems: 1, bytes: 2 },
  Q8_0: { elems: 32, bytes: 34 },
  Q4_0: { elems: 32, bytes: 18 },
  Q4_K: { elems: 256, bytes: 144 },
  Q6_K: { elems: 256, bytes: 210 },
};

/**
 * Whether a dtype name has fast kernels.
 *
 * @param dtype A dtype name.
 * @returns True for the names in {@link FAST_DTYPES}.
 *
 * @example
 * ```ts
 * import { isFastDType } from "./quant_ref.ts";
 * console.assert(isFastDType("Q4_K") && !isFastDType("Q5_0"));
 * ```
 */
export function isFastDType(dtype: string): dtype is FastDType {
  return (FAST_DTYPES as readonly string[]).includes(dtype);
}

/**
 * Decodes one IEEE half-precision value from its 16 bits.
 *
 * @param h The bits (0..65535).
 * @returns The value (subnormals, infinities and NaN included).
 *
 * @example
 * ```ts
 * import { halfToFloat } from "./quant_ref.ts";
 * console.assert(halfToFloat(0x3c00) === 1 && halfToFloat(0xc000) === -2);
 * ```
 */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/**
 * Bytes of one row of `cols` elements.
 *
 * @param dtype The dtype.
 * @param cols Elements per row.
 * @returns The byte length of a row.
 * @throws {RangeError} When `cols` is not a whole number of blocks.
 *
 * @example
 * ```ts
 * import { rowBytes } from "./quant_ref.ts";
 * console.assert(rowBytes("Q4_0", 64) === 36);
 * ```
 */
export function rowBytes(dtype: FastDType, cols: number): number {
  const b = BLOCKS[dtype];
  if (cols % b.elems !== 0) {
    throw new RangeError(
      `Cannot lay out rows of ${cols} ${dtype} elements: the row length must be a multiple of the block size ${b.elems}`,
    );
  }
  return (cols / b.elems) * b.bytes;
}

/**
 * Decodes row `row` of a `[rows, cols]` weight matrix stored in `dtype`.
 *
 * @param dtype The stored dtype.
 * @param bytes The whole matrix's bytes.
 * @param row Row index.
 * @param cols Elements per row.
 * @param out Where to write (length ≥ cols); a new array when absent.
 * @returns The `cols` values of the row.
 * @throws {RangeError} When the bytes are too short for that row.
 * @throws {UnsupportedDTypeError} When `dtype` is not one of {@link FAST_DTYPES}.
 *
 * @example
 * ```ts
 * import { dequantizeRowRef } from "./quant_ref.ts";
 * // One Q8_0 block: d = 0.5 (f16 0x3800), codes 0..31.
 * const b = new Uint8Array(34);
 * b[0] = 0x00; b[1] = 0x38;
 * for (let i = 0; i < 32; i++) b[2 + i] = i;
 * const row = dequantizeRowRef("Q8_0", b, 0, 32);
 * console.assert(row[3] === 1.5);
 * ```
 */
export function dequantizeRowRef(
  dtype: string,
  bytes: Uint8Array,
  row: number,
  cols: number,
  out: Float32Array = new Float32Array(cols),
): Float32Array {
  if (!isFastDType(dtype)) {
    throw new UnsupportedDTypeError(dtype, "no fast kernel row decoder");
  }
  const rb = rowBytes(dtype, cols);
  const start = row * rb;
  if (bytes.byteLength < start + rb) {
    throw new RangeError(
      `Cannot decode row ${row} of ${dtype}: needs ${rb} bytes at offset ${start}, have ${bytes.byteLength}`,
    );
  }
  const b = bytes.subarray(start, start + rb);
  const u16 = (i: number) => b[i] | (b[i + 1] << 8);
  const i8 = (i: number) => (b[i] << 24) >> 24;
  switch (dtype) {
    case "F32": {
      const dv = new DataView(b.buffer, b.byteOffset, rb);
      for (let i = 0; i < cols; i++) out[i] = dv.getFloat32(4 * i, true);
      break;
    }
    case "F16":
      for (let i = 0; i < cols; i++) out[i] = halfToFloat(u16(2 * i));
      break;
    case "BF16": {
      const dv = new DataView(new ArrayBuffer(4));
      for (let i = 0; i < cols; i++) {
        dv.setUint32(0, u16(2 * i) << 16);
        out[i] = dv.getFloat32(0);
      }
      break;
    }
    case "Q8_0":
      for (let blk = 0; blk < cols / 32; blk++) {
        const o = blk * 34;
        const d = halfToFloat(u16(o));
        for (let j = 0; j < 32; j++) out[blk * 32 + j] = d * i8(o + 2 + j);
      }
      break;
    case "Q4_0":
      for (let blk = 0; blk < cols / 32; blk++) {
        const o = blk * 18;
        const d = halfToFloat(u16(o));
        for (let j = 0; j < 16; j++) {
          const q = b[o + 2 + j];
          out[blk * 32 + j] = d * ((q & 15) - 8);
          out[blk * 32 + 16 + j] = d * ((q >> 4) - 8);
        }
      }
      break;
    case "Q4_K":
      for (let blk = 0; blk < cols / 256; blk++) {
        const o = blk * 144;
        const d = halfToFloat(u16(o));
        const dmin = halfToFloat(u16(o + 2));
        const s = (j: number) => b[o + 4 + j];
        for (let j = 0; j < 8; j++) {
          // 6-bit scale and min of sub-block j
          const sc = j < 4
            ? s(j) & 63
            : (s(j + 4) & 15) | ((s(j - 4) >> 6) << 4);
          const m = j < 4
            ? s(j + 4) & 63
            : (s(j + 4) >> 4) | ((s(j) >> 6) << 4);
          // sub-blocks 2c and 2c+1 share the 32 bytes qs[32c..32c+32)
          const qs = o + 16 + (j >> 1) * 32;
          for (let l = 0; l < 32; l++) {
            const q = j & 1 ? b[qs + l] >> 4 : b[qs + l] & 15;
            out[blk * 256 + j * 32 + l] = d * sc * q - dmin * m;
          }
        }
      }
      break;
    case "Q6_K":
      for (let blk = 0; blk < cols / 256; blk++) {
        const o = blk * 210;
        const d = halfToFloat(u16(o + 208));
        for (let e = 0; e < 256; e++) {
          const half = e >> 7; // 128 elements per half
          const quarter = (e >> 5) & 3;
          const l = e & 31;
          const ql = b[o + half * 64 + (quarter & 1) * 32 + l];
          const qh = b[o + 128 + half * 32 + l];
          const low = quarter < 2 ? ql & 15 : ql >> 4;
          const high = (qh >> (2 * quarter)) & 3;
          const q = (low | (high << 4)) - 32;
          out[blk * 256 + e] = d * i8(o + 192 + (e >> 4)) * q;
        }
      }
      break;
  }
  return out;
}
