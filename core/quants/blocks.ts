/**
 * Block facts of the ggml quantized types: elements per block, bytes per
 * block and the `ggml_type` id GGUF stores. This is the one table of them;
 * the dtype table (`core/dtypes.ts`), the block codecs beside this file and
 * the fast kernels' references (`kernels/quant_ref.ts`) read it.
 *
 * Layouts (little-endian, as ggml's block structs):
 *
 * | type | elements | bytes | layout |
 * | ---- | -------- | ----- | ------ |
 * | Q4_0 | 32 | 18 | f16 d, 16 bytes of nibbles (low: elements 0..15, high: 16..31) |
 * | Q4_1 | 32 | 20 | f16 d, f16 m, 16 bytes of nibbles |
 * | Q5_0 | 32 | 22 | f16 d, u32 fifth bits, 16 bytes of nibbles |
 * | Q5_1 | 32 | 24 | f16 d, f16 m, u32 fifth bits, 16 bytes of nibbles |
 * | Q8_0 | 32 | 34 | f16 d, 32 × i8 |
 * | Q8_1 | 32 | 36 | f16 d, f16 s, 32 × i8 |
 * | Q2_K | 256 | 84 | 16 scale bytes, 64 bytes of 2-bit codes, f16 d, f16 dmin |
 * | Q3_K | 256 | 110 | 32 bytes high-bit mask, 64 bytes of 2-bit codes, 12 scale bytes, f16 d |
 * | Q4_K | 256 | 144 | f16 d, f16 dmin, 12 bytes of 6-bit (scale, min) × 8, 128 bytes of nibbles |
 * | Q5_K | 256 | 176 | f16 d, f16 dmin, 12 scale bytes, 32 bytes of fifth bits, 128 bytes of nibbles |
 * | Q6_K | 256 | 210 | 128 bytes low nibbles, 64 bytes high 2 bits, 16 × i8 scales, f16 d |
 * | Q8_K | 256 | 292 | f32 d, 256 × i8, 16 × i16 block sums |
 *
 * The layouts of the IQ*, TQ*, FP4 (MXFP4, NVFP4), Q1_0 and Q2_0 types are
 * listed in `iq_decode.ts`.
 *
 * @module
 */

/** The quantized (block) dtype names. */
export type QuantTypeName =
  | "Q4_0"
  | "Q4_1"
  | "Q5_0"
  | "Q5_1"
  | "Q8_0"
  | "Q8_1"
  | "Q2_K"
  | "Q3_K"
  | "Q4_K"
  | "Q5_K"
  | "Q6_K"
  | "Q8_K"
  | "IQ2_XXS"
  | "IQ2_XS"
  | "IQ3_XXS"
  | "IQ1_S"
  | "IQ4_NL"
  | "IQ3_S"
  | "IQ2_S"
  | "IQ4_XS"
  | "IQ1_M"
  | "TQ1_0"
  | "TQ2_0"
  | "MXFP4"
  | "NVFP4"
  | "Q1_0"
  | "Q2_0";

/** The facts of one quantized type. */
export interface QuantBlock {
  /** The dtype name. */
  readonly name: QuantTypeName;
  /** The `ggml_type` id in GGUF tensor infos. */
  readonly gguf: number;
  /** Elements per block. */
  readonly blockSize: number;
  /** Bytes per block. */
  readonly blockBytes: number;
}

function b(
  name: QuantTypeName,
  gguf: number,
  blockSize: number,
  blockBytes: number,
): QuantBlock {
  return { name, gguf, blockSize, blockBytes };
}

/**
 * Every quantized type's block facts, in the dtype table's order. The GGUF
 * ids are the numbers of ggml's `ggml_type` enum.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { QUANT_BLOCKS } from "./blocks.ts";
 * assert(QUANT_BLOCKS.Q4_0.blockBytes === 18 && QUANT_BLOCKS.Q6_K.blockSize === 256);
 * ```
 */
export const QUANT_BLOCKS: Readonly<Record<QuantTypeName, QuantBlock>> = {
  Q4_0: b("Q4_0", 2, 32, 18),
  Q4_1: b("Q4_1", 3, 32, 20),
  Q5_0: b("Q5_0", 6, 32, 22),
  Q5_1: b("Q5_1", 7, 32, 24),
  Q8_0: b("Q8_0", 8, 32, 34),
  Q8_1: b("Q8_1", 9, 32, 36),
  Q2_K: b("Q2_K", 10, 256, 84),
  Q3_K: b("Q3_K", 11, 256, 110),
  Q4_K: b("Q4_K", 12, 256, 144),
  Q5_K: b("Q5_K", 13, 256, 176),
  Q6_K: b("Q6_K", 14, 256, 210),
  Q8_K: b("Q8_K", 15, 256, 292),
  IQ2_XXS: b("IQ2_XXS", 16, 256, 66),
  IQ2_XS: b("IQ2_XS", 17, 256, 74),
  IQ3_XXS: b("IQ3_XXS", 18, 256, 98),
  IQ1_S: b("IQ1_S", 19, 256, 50),
  IQ4_NL: b("IQ4_NL", 20, 32, 18),
  IQ3_S: b("IQ3_S", 21, 256, 110),
  IQ2_S: b("IQ2_S", 22, 256, 82),
  IQ4_XS: b("IQ4_XS", 23, 256, 136),
  IQ1_M: b("IQ1_M", 29, 256, 56),
  TQ1_0: b("TQ1_0", 34, 256, 54),
  TQ2_0: b("TQ2_0", 35, 256, 66),
  MXFP4: b("MXFP4", 39, 32, 17),
  NVFP4: b("NVFP4", 40, 64, 36),
  Q1_0: b("Q1_0", 41, 128, 18),
  Q2_0: b("Q2_0", 42, 64, 18),
};
