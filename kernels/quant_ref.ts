/**
 * Scalar reference decoders for the weight dtypes the fast kernels read:
 * F32, F16, BF16 and the ggml blocks Q8_0, Q4_0, Q5_0, Q4_K, Q6_K. They decode
 * one row of a `[rows, cols]` matrix at a time, so the `_ref` kernels
 * never hold a whole weight in F32, with the dtype table's codecs (the block
 * codecs of `core/quants/`, checked against gguf-py). Beside them, the reference of how a
 * quantized weight is multiplied (llama.cpp's CPU rules): activations
 * quantized to Q8_0 / Q8_K blocks ({@link quantizeActivationsRef}) and
 * integer dot products per block ({@link quantizedDotRef}). Together they
 * are the quantized part of `linearRef` (`kernels/linear.ts`), the
 * reference the fast kernels are tested against; they are themselves
 * checked against NumPy (`tests/vectors/gen/fast_kernels.py`). Exported to
 * users from `kernels/fast` (`BLOCKS` as `FAST_BLOCKS`).
 *
 * Block sizes and layouts: `core/quants/blocks.ts`.
 *
 * @module
 */

import { dtypeInfo } from "../core/dtypes.ts";
import { UnsupportedDTypeError } from "../core/errors.ts";
import { halfToFloat } from "../core/quants/f16.ts";
import { iqActivationBlocks, iqDotRef } from "./_quant_ref_iq.ts";

export { halfToFloat } from "../core/quants/f16.ts";

/**
 * Weight dtypes with fast kernels (and these reference decoders).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { FAST_DTYPES } from "@modelhost/modelhost/kernels/fast";
 * assert(FAST_DTYPES.includes("Q4_0"));
 * ```
 */
export const FAST_DTYPES = [
  "F32",
  "F16",
  "BF16",
  "Q8_0",
  "Q4_0",
  "Q5_0",
  "Q4_K",
  "Q6_K",
  "IQ4_NL",
  "MXFP4",
  "IQ4_XS",
  "IQ3_S",
  "IQ2_XS",
] as const;

/** One of {@link FAST_DTYPES}. */
export type FastDType = typeof FAST_DTYPES[number];

/**
 * Elements and bytes per block of each {@link FastDType}, read from the dtype
 * table (whose quantized rows come from `core/quants/blocks.ts`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { FAST_BLOCKS } from "@modelhost/modelhost/kernels/fast";
 * assert(FAST_BLOCKS.Q8_0.elems === 32 && FAST_BLOCKS.Q8_0.bytes === 34);
 * ```
 */
export const BLOCKS: Readonly<
  Record<FastDType, { elems: number; bytes: number }>
> = Object.fromEntries(
  FAST_DTYPES.map((d) => {
    const { blockSize, blockBytes } = dtypeInfo(d);
    return [d, { elems: blockSize, bytes: blockBytes }];
  }),
) as Record<FastDType, { elems: number; bytes: number }>;

/**
 * Whether a dtype name has fast kernels.
 *
 * @param dtype A dtype name.
 * @returns True for the names in {@link FAST_DTYPES}.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { isFastDType } from "@modelhost/modelhost/kernels/fast";
 * assert(isFastDType("Q4_K") && !isFastDType("Q5_1"));
 * ```
 */
export function isFastDType(dtype: string): dtype is FastDType {
  return (FAST_DTYPES as readonly string[]).includes(dtype);
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
 * import { assert } from "@std/assert";
 * import { rowBytes } from "@modelhost/modelhost/kernels/fast";
 * assert(rowBytes("Q4_0", 64) === 36);
 * ```
 */
export function rowBytes(dtype: FastDType, cols: number): number {
  const b = BLOCKS[dtype] ?? blockOf(dtype);
  if (cols % b.elems !== 0) {
    throw new RangeError(
      `Cannot lay out rows of ${cols} ${dtype} elements: the row length must be a multiple of the block size ${b.elems}`,
    );
  }
  return (cols / b.elems) * b.bytes;
}

/** Elements and bytes per block of any dtype (the types with only a dot rule). */
function blockOf(dtype: string): { elems: number; bytes: number } {
  const { blockSize, blockBytes } = dtypeInfo(dtype);
  return { elems: blockSize, bytes: blockBytes };
}

/**
 * Decodes row `row` of a `[rows, cols]` weight matrix stored in `dtype`,
 * with the dtype table's decoder (for the ggml blocks, the codecs of
 * `core/quants/`, bit-exact with ggml's `dequantize_row_*`).
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
 * import { assert } from "@std/assert";
 * import { dequantizeRowRef } from "@modelhost/modelhost/kernels/fast";
 * // One Q8_0 block: d = 0.5 (f16 0x3800), codes 0..31.
 * const b = new Uint8Array(34);
 * b[0] = 0x00; b[1] = 0x38;
 * for (let i = 0; i < 32; i++) b[2 + i] = i;
 * const row = dequantizeRowRef("Q8_0", b, 0, 32);
 * assert(row[3] === 1.5);
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
  out.set(dtypeInfo(dtype).toF32!(bytes.subarray(start, start + rb), cols));
  return out;
}

/**
 * The activation blocks llama.cpp's CPU path multiplies a quantized weight
 * by: Q8_0 blocks (32 values, f16 scale) for Q8_0, Q4_0 and Q5_0 weights, Q8_K
 * blocks (256 values, F32 scale) for Q4_K and Q6_K weights.
 */
export type ActivationBlocks = "Q8_0" | "Q8_K";

/**
 * Which activation blocks a weight dtype is multiplied by.
 *
 * @param dtype A weight dtype.
 * @returns `"Q8_0"`, `"Q8_K"`, or `undefined` for F32/F16/BF16 (not quantized).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { activationBlocksOf } from "@modelhost/modelhost/kernels/fast";
 * assert(activationBlocksOf("Q4_0") === "Q8_0");
 * assert(activationBlocksOf("Q6_K") === "Q8_K");
 * ```
 */
export function activationBlocksOf(
  dtype: string,
): ActivationBlocks | undefined {
  if (dtype === "Q8_0" || dtype === "Q4_0" || dtype === "Q5_0") return "Q8_0";
  if (dtype === "Q4_K" || dtype === "Q6_K") return "Q8_K";
  return iqActivationBlocks(dtype);
}

/** Activations quantized by {@link quantizeActivationsRef}. */
export interface QuantizedActivations {
  /** Elements per block (32 or 256). */
  block: number;
  /** The int8 codes, one per input value. */
  codes: Int8Array;
  /** One scale per block: a value is `codes[i] · scales[i / block]`. */
  scales: Float32Array;
}

/**
 * Quantizes activations as llama.cpp does before a quantized matmul (the
 * rules of its x86 SIMD code, which produced the reference logits this
 * project is checked against), in F32 arithmetic:
 *
 * - `"Q8_0"`, per 32 values: `d = f16(amax / 127)` (round to nearest
 *   even), codes `round(x · (127 / amax))` with ties to even (0 when
 *   `amax = 0`). ggml's portable `quantize_row_q8_0_ref` computes the codes
 *   as `roundf(x · (1 / d))` instead: the two differ only where a product
 *   lands within an F32 rounding of a half-integer.
 * - `"Q8_K"`, per 256 values: `iscale = 127 / amax`, codes
 *   `round(x · iscale)` (ties to even), `d = 1 / iscale` in F32 (0 when
 *   `amax = 0`), as `quantize_row_q8_K_ref` (whose `iscale = −127 / max`
 *   negates codes and `d` together).
 *
 * @param x The values (a whole number of blocks).
 * @param blocks The block kind.
 * @returns Codes and per-block scales.
 * @throws {RangeError} When `x.length` is not a multiple of the block size.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { quantizeActivationsRef } from "@modelhost/modelhost/kernels/fast";
 * const x = new Float32Array(32);
 * x[0] = 1.27; x[1] = -0.5; x[2] = 0.005;
 * const q = quantizeActivationsRef(x, "Q8_0");
 * assert(q.codes[0] === 127 && q.codes[1] === -50 && q.codes[2] === 0);
 * assert(q.scales[0] === 0.01000213623046875); // f16(0.01)
 * ```
 */
export function quantizeActivationsRef(
  x: ArrayLike<number>,
  blocks: ActivationBlocks,
): QuantizedActivations {
  const block = blocks === "Q8_0" ? 32 : 256;
  if (x.length % block !== 0) {
    throw new RangeError(
      `Cannot quantize ${x.length} activations to ${blocks}: the length must be a multiple of the block size ${block}`,
    );
  }
  const f = Math.fround;
  const half = new Float16Array(1);
  const codes = new Int8Array(x.length);
  const scales = new Float32Array(x.length / block);
  for (let b = 0; b < scales.length; b++) {
    const o = b * block;
    let amax = 0;
    for (let j = 0; j < block; j++) amax = Math.max(amax, Math.abs(x[o + j]));
    let id: number;
    if (blocks === "Q8_0") {
      half[0] = f(amax / 127);
      scales[b] = half[0];
      id = amax > 0 ? f(127 / amax) : 0;
    } else {
      id = amax > 0 ? f(127 / amax) : 0;
      scales[b] = amax > 0 ? f(1 / id) : 0;
    }
    for (let j = 0; j < block; j++) {
      const v = f(x[o + j] * id);
      const r = Math.round(v);
      codes[o + j] = Math.min(127, r - v === 0.5 && r % 2 !== 0 ? r - 1 : r);
    }
  }
  return { block, codes, scales };
}

/**
 * The dot product of row `row` of a quantized `[rows, cols]` weight with
 * activations quantized by {@link quantizeActivationsRef} (starting at
 * element `at` of `xq`), by llama.cpp's rules: exact integer dot products
 * per block, scaled by `d_w · d_x` (Q8_0, Q4_0, Q5_0: per 32, the product exact
 * in F32) or, for Q4_K / Q6_K, per 256 by `f32(d_x · d)` over the integer
 * sum of sub-block scales times sub-block dots (Q4_K subtracts
 * `f32(d_x · dmin) · Σ m_j · Σ codes_j`). Blocks are summed in F64, so
 * this is the exact value of the rule; the SIMD kernels sum in F32.
 *
 * @param dtype Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, or one of the types with only this
 * scalar rule (IQ4_NL, MXFP4 with Q8_0 blocks; IQ4_XS, IQ3_S, IQ2_XS with
 * Q8_K blocks; see `_quant_ref_iq.ts`).
 * @param bytes The whole matrix's bytes.
 * @param row Row index.
 * @param cols Elements per row.
 * @param xq The quantized activations ({@link activationBlocksOf} the dtype).
 * @param at The element of `xq` that lines up with the row's first weight.
 * @returns The dot product.
 * @throws {TypeError} When `dtype` is not one of the four, or `xq` has the
 * wrong block kind.
 * @throws {RangeError} When the bytes are too short for that row.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { quantizeActivationsRef, quantizedDotRef } from "@modelhost/modelhost/kernels/fast";
 * // One Q8_0 block: d = 0.5 (f16 0x3800), all codes 2: each weight is 1.
 * const w = new Uint8Array(34).fill(2);
 * w[0] = 0x00; w[1] = 0x38;
 * const xq = quantizeActivationsRef(new Float32Array(32).fill(1.27), "Q8_0");
 * assert(quantizedDotRef("Q8_0", w, 0, 32, xq, 0) === 32 * 127 * xq.scales[0]);
 * ```
 */
export function quantizedDotRef(
  dtype: string,
  bytes: Uint8Array,
  row: number,
  cols: number,
  xq: QuantizedActivations,
  at: number,
): number {
  const want = activationBlocksOf(dtype);
  if (!want || xq.block !== (want === "Q8_0" ? 32 : 256)) {
    throw new TypeError(
      `Cannot dot ${dtype} weights with ${xq.block}-value activation blocks: expected ${
        want ?? "a quantized weight dtype"
      }`,
    );
  }
  const rb = rowBytes(dtype as FastDType, cols);
  const start = row * rb;
  if (bytes.byteLength < start + rb) {
    throw new RangeError(
      `Cannot read row ${row} of ${dtype}: needs ${rb} bytes at offset ${start}, have ${bytes.byteLength}`,
    );
  }
  const b = bytes.subarray(start, start + rb);
  const u16 = (i: number) => b[i] | (b[i + 1] << 8);
  const i8 = (i: number) => (b[i] << 24) >> 24;
  const q = xq.codes, f = Math.fround;
  let s = 0;
  switch (dtype) {
    case "Q8_0":
    case "Q4_0": {
      const bb = dtype === "Q8_0" ? 34 : 18;
      for (let blk = 0; blk < cols / 32; blk++) {
        const o = blk * bb, x0 = at + blk * 32;
        let dot = 0;
        for (let j = 0; j < 32; j++) {
          const w = dtype === "Q8_0"
            ? i8(o + 2 + j)
            : (j < 16 ? b[o + 2 + j] & 15 : b[o + 2 + j - 16] >> 4) - 8;
          dot += w * q[x0 + j];
        }
        s += halfToFloat(u16(o)) * xq.scales[x0 / 32] * dot;
      }
      break;
    }
    case "Q5_0":
      // f16 d, u32 fifth bits (bit j for element j), 16 bytes of nibbles
      for (let blk = 0; blk < cols / 32; blk++) {
        const o = blk * 22, x0 = at + blk * 32;
        const qh = (b[o + 2] | (b[o + 3] << 8) | (b[o + 4] << 16) |
          (b[o + 5] << 24)) >>> 0;
        let dot = 0;
        for (let j = 0; j < 32; j++) {
          const nib = j < 16 ? b[o + 6 + j] & 15 : b[o + 6 + j - 16] >> 4;
          dot += ((nib | (((qh >>> j) & 1) << 4)) - 16) * q[x0 + j];
        }
        s += halfToFloat(u16(o)) * xq.scales[x0 / 32] * dot;
      }
      break;
    case "Q4_K":
      for (let blk = 0; blk < cols / 256; blk++) {
        const o = blk * 144, x0 = at + blk * 256;
        const dx = xq.scales[x0 / 256];
        const sc = (j: number) => b[o + 4 + j];
        let isum = 0, imin = 0;
        for (let j = 0; j < 8; j++) {
          const scale = j < 4
            ? sc(j) & 63
            : (sc(j + 4) & 15) | ((sc(j - 4) >> 6) << 4);
          const m = j < 4
            ? sc(j + 4) & 63
            : (sc(j + 4) >> 4) | ((sc(j) >> 6) << 4);
          const qs = o + 16 + (j >> 1) * 32;
          let dot = 0, xsum = 0;
          for (let l = 0; l < 32; l++) {
            const w = j & 1 ? b[qs + l] >> 4 : b[qs + l] & 15;
            dot += w * q[x0 + 32 * j + l];
            xsum += q[x0 + 32 * j + l];
          }
          isum += scale * dot;
          imin += m * xsum;
        }
        s += f(dx * halfToFloat(u16(o))) * isum -
          f(dx * halfToFloat(u16(o + 2))) * imin;
      }
      break;
    case "Q6_K":
      for (let blk = 0; blk < cols / 256; blk++) {
        const o = blk * 210, x0 = at + blk * 256;
        let isum = 0;
        for (let g = 0; g < 16; g++) {
          let dot = 0;
          for (let e = 16 * g; e < 16 * g + 16; e++) {
            const half = e >> 7, quarter = (e >> 5) & 3, l = e & 31;
            const ql = b[o + half * 64 + (quarter & 1) * 32 + l];
            const qh = b[o + 128 + half * 32 + l];
            const low = quarter < 2 ? ql & 15 : ql >> 4;
            const w = (low | (((qh >> (2 * quarter)) & 3) << 4)) - 32;
            dot += w * q[x0 + e];
          }
          isum += i8(o + 192 + g) * dot;
        }
        s += f(xq.scales[x0 / 256] * halfToFloat(u16(o + 208))) * isum;
      }
      break;
    default:
      s = iqDotRef(dtype, b, cols, xq, at);
  }
  return s;
}

/**
 * Each value rounded to the nearest F16 value (ties to even), as ggml
 * converts activations before a matmul with F16 weights.
 *
 * @param x The values.
 * @returns A new array of the rounded values (±Infinity beyond F16's range).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { roundToF16 } from "@modelhost/modelhost/kernels/fast";
 * assert(roundToF16(new Float32Array([0.1]))[0] === 0.0999755859375);
 * ```
 */
export function roundToF16(x: Float32Array): Float32Array {
  return Float32Array.from(Float16Array.from(x));
}
