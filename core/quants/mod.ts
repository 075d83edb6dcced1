/**
 * Quantized-type knowledge in one place: the block facts of the ggml types
 * (`blocks.ts`), their codecs (`legacy.ts` for the 32-element types,
 * `k_decode.ts` / `k_encode.ts` for the K super-blocks, joined by name in
 * `codecs.ts`), and the F16 table (`f16.ts`). The dtype table, the kernels
 * and the fast kernels' references all read these.
 *
 * The entry points for every element type GGUF stores:
 *
 * - {@link dequantizeGguf}: every element type ggml defines (F32, F16,
 *   BF16, F64, the integers, Q4_0 … Q8_K, IQ1_S … IQ4_XS, TQ1_0, TQ2_0,
 *   MXFP4, NVFP4, Q1_0, Q2_0) → F32, bit-exact with ggml's
 *   `dequantize_row_*` (and gguf-py).
 * - {@link quantizeGguf}: F32 → Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K,
 *   Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4, byte-identical to what
 *   `llama-quantize` writes without an importance matrix
 *   (`quantizeIQ4_NL` / `quantizeIQ4_XS` in `iq_encode.ts` take one).
 *
 * Both functions refuse other types with an `UnsupportedDTypeError` naming
 * the type. The codecs are the `toF32` / `fromF32` of the dtype table's
 * rows, so `toFloat32(tensor)` dequantizes too.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeGguf } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => 0.1 + 2 * Math.cos(i));
 * const q = quantizeGguf("Q8_0", x);
 * assert(q.length === 8 * 34);
 * const y = dequantizeGguf("Q8_0", q, 256);
 * assert(Math.abs(y[7] - x[7]) < 0.01);
 * ```
 *
 * @module
 */

import {
  decodeToF32,
  type DTypeInfo,
  dtypeInfo,
  type DTypeName,
  encodeFromF32,
} from "../dtypes.ts";
import { UnsupportedDTypeError } from "../errors.ts";

export { QUANT_BLOCKS, type QuantBlock, type QuantTypeName } from "./blocks.ts";
export { QUANT_CODECS, type QuantCodec } from "./codecs.ts";
export {
  quantizeIQ4_NL,
  quantizeIQ4_NLRef,
  quantizeIQ4_XS,
  quantizeMXFP4,
} from "./iq_encode.ts";
export {
  quantizeIQ2_S,
  quantizeIQ2_XS,
  quantizeIQ3_S,
  quantizeIQ3_XXS,
} from "./iq_encode_grid.ts";
export {
  quantizeIQ1_M,
  quantizeIQ1_S,
  quantizeIQ2_XXS,
  quantizeTQ1_0,
  quantizeTQ2_0,
} from "./iq_encode_low.ts";
export {
  F16_TO_F32_BITS,
  f32ToHalfBits,
  HALF_TO_F32,
  halfToFloat,
  readHalf,
  writeHalf,
} from "./f16.ts";

/**
 * The types {@link quantizeGguf} produces, in the order of the GGUF issue.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { QUANTIZE_TYPES } from "@modelhost/modelhost/formats/gguf";
 * assert(QUANTIZE_TYPES.includes("Q4_K") && QUANTIZE_TYPES.includes("Q8_0"));
 * ```
 */
export const QUANTIZE_TYPES: readonly DTypeName[] = [
  "Q8_0",
  "Q4_0",
  "Q4_1",
  "Q5_0",
  "Q5_1",
  "Q2_K",
  "Q3_K",
  "Q4_K",
  "Q5_K",
  "Q6_K",
  "IQ4_NL",
  "IQ4_XS",
  "MXFP4",
  "IQ3_S",
  "IQ2_XS",
  "IQ3_XXS",
  "IQ2_XXS",
  "IQ2_S",
  "IQ1_S",
  "IQ1_M",
  "TQ1_0",
  "TQ2_0",
];

/**
 * The types {@link dequantizeGguf} reads.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { DEQUANTIZE_TYPES } from "@modelhost/modelhost/formats/gguf";
 * assert(DEQUANTIZE_TYPES.includes("Q6_K") && DEQUANTIZE_TYPES.includes("IQ2_XXS"));
 * ```
 */
export const DEQUANTIZE_TYPES: readonly DTypeName[] = [
  "F32",
  "F16",
  "BF16",
  "F64",
  "I8",
  "I16",
  "I32",
  "I64",
  "Q4_0",
  "Q4_1",
  "Q5_0",
  "Q5_1",
  "Q8_0",
  "Q8_1",
  "Q2_K",
  "Q3_K",
  "Q4_K",
  "Q5_K",
  "Q6_K",
  "Q8_K",
  "IQ2_XXS",
  "IQ2_XS",
  "IQ3_XXS",
  "IQ1_S",
  "IQ4_NL",
  "IQ3_S",
  "IQ2_S",
  "IQ4_XS",
  "IQ1_M",
  "TQ1_0",
  "TQ2_0",
  "MXFP4",
  "NVFP4",
  "Q1_0",
  "Q2_0",
];

function refuse(d: DTypeInfo, what: string): UnsupportedDTypeError {
  const family = d.name.startsWith("IQ")
    ? "the IQ (importance-matrix lattice) types"
    : d.name.startsWith("TQ")
    ? "the TQ (ternary) types"
    : d.name === "MXFP4"
    ? "MXFP4"
    : `${d.name}`;
  return new UnsupportedDTypeError(
    d.name,
    `modelhost cannot ${what} ${family}; supported: ${
      (what === "quantize to" ? QUANTIZE_TYPES : DEQUANTIZE_TYPES).join(", ")
    }`,
  );
}

/**
 * Decodes `count` values stored in a GGUF element type to F32.
 *
 * @param dtype The stored type (name or dtype row).
 * @param bytes The stored bytes (whole blocks).
 * @param count Number of values; a multiple of the type's block size.
 * @returns A new Float32Array.
 * @throws {UnsupportedDTypeError} For types GGUF cannot hold.
 * @throws {RangeError} When `bytes` is too short or `count` is not whole blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf } from "@modelhost/modelhost/formats/gguf";
 * const block = new Uint8Array(34); block[1] = 0x3c; block[2] = 5; // d = 1, q0 = 5
 * assert(dequantizeGguf("Q8_0", block, 32)[0] === 5);
 * ```
 */
export function dequantizeGguf(
  dtype: DTypeName | DTypeInfo,
  bytes: Uint8Array,
  count: number,
): Float32Array {
  const d = typeof dtype === "string" ? dtypeInfo(dtype) : dtype;
  if (!DEQUANTIZE_TYPES.includes(d.name)) throw refuse(d, "dequantize");
  return decodeToF32(d, bytes, count);
}

/**
 * Encodes F32 values in a ggml block type with ggml's reference quantizer.
 *
 * @param dtype The target type, one of {@link QUANTIZE_TYPES}.
 * @param values The values; the length must be a multiple of the block size
 * (32, or 256 for the K types), and each block is quantized on its own.
 * @returns The blocks.
 * @throws {UnsupportedDTypeError} For other types (the IQ1/IQ2/IQ3 types, TQ*, NVFP4, Q8_K, ...).
 * @throws {RangeError} When the length is not whole blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { quantizeGguf } from "@modelhost/modelhost/formats/gguf";
 * const q = quantizeGguf("Q4_0", new Float32Array(64));
 * assert(q.length === 36);
 * ```
 */
export function quantizeGguf(
  dtype: DTypeName | DTypeInfo,
  values: Float32Array,
): Uint8Array {
  const d = typeof dtype === "string" ? dtypeInfo(dtype) : dtype;
  if (!QUANTIZE_TYPES.includes(d.name)) throw refuse(d, "quantize to");
  return encodeFromF32(d, values);
}

/**
 * Old name of {@link dequantizeGguf}.
 *
 * @deprecated Use {@link dequantizeGguf}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantize } from "@modelhost/modelhost/formats/gguf";
 * assert(dequantize("F32", new Uint8Array(4), 1)[0] === 0);
 * ```
 */
export const dequantize: typeof dequantizeGguf = dequantizeGguf;

/**
 * Old name of {@link quantizeGguf}.
 *
 * @deprecated Use {@link quantizeGguf}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { quantize } from "@modelhost/modelhost/formats/gguf";
 * assert(quantize("Q8_0", new Float32Array(32)).length === 34);
 * ```
 */
export const quantize: typeof quantizeGguf = quantizeGguf;
