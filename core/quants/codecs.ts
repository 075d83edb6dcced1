/**
 * The block codecs of the quantized types that have them, by name: the
 * `toF32` / `fromF32` of the dtype table's quantized rows. Decoders match
 * ggml's `dequantize_row_*`; encoders its reference `quantize_row_*_ref`
 * bit for bit. Q8_1 and Q8_K decode only (ggml writes them as activation
 * blocks, not as weights); every other type decodes, and IQ4_NL, IQ4_XS and
 * MXFP4 also encode (`iq_encode.ts`), as do IQ3_S, IQ3_XXS, IQ2_S and, with
 * an importance matrix only, IQ2_XS (`iq_encode_grid.ts`), IQ1_M, TQ1_0,
 * TQ2_0 and, with an importance matrix only, IQ2_XXS and IQ1_S
 * (`iq_encode_low.ts`).
 *
 * @module
 */

import type { FromF32, ToF32 } from "../dtypes.ts";
import type { QuantTypeName } from "./blocks.ts";
import * as legacy from "./legacy.ts";
import * as kDecode from "./k_decode.ts";
import * as kEncode from "./k_encode.ts";
import * as iq from "./iq_decode.ts";
import * as iqEncode from "./iq_encode.ts";
import * as iqGrid from "./iq_encode_grid.ts";
import * as iqLow from "./iq_encode_low.ts";

/** A quantized type's decoder and, when it has one, its encoder. */
export interface QuantCodec {
  /** Decodes `count` values (whole blocks) to F32. */
  readonly toF32: ToF32;
  /** Encodes F32 values (whole blocks). */
  readonly fromF32?: FromF32;
}

/**
 * Every quantized type's codec, by name; types without one are absent.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { QUANT_CODECS } from "./codecs.ts";
 * const q = QUANT_CODECS.Q8_0!.fromF32!(new Float32Array(32).fill(127));
 * assert(q.length === 34 && QUANT_CODECS.Q8_0!.toF32(q, 32)[5] === 127);
 * assert(QUANT_CODECS.Q8_K!.fromF32 === undefined && QUANT_CODECS.NVFP4!.fromF32 === undefined);
 * ```
 */
export const QUANT_CODECS: Readonly<
  Partial<Record<QuantTypeName, QuantCodec>>
> = {
  Q4_0: { toF32: legacy.dequantizeQ4_0, fromF32: legacy.quantizeQ4_0 },
  Q4_1: { toF32: legacy.dequantizeQ4_1, fromF32: legacy.quantizeQ4_1 },
  Q5_0: { toF32: legacy.dequantizeQ5_0, fromF32: legacy.quantizeQ5_0 },
  Q5_1: { toF32: legacy.dequantizeQ5_1, fromF32: legacy.quantizeQ5_1 },
  Q8_0: { toF32: legacy.dequantizeQ8_0, fromF32: legacy.quantizeQ8_0 },
  Q8_1: { toF32: legacy.dequantizeQ8_1 },
  Q2_K: { toF32: kDecode.dequantizeQ2_K, fromF32: kEncode.quantizeQ2_K },
  Q3_K: { toF32: kDecode.dequantizeQ3_K, fromF32: kEncode.quantizeQ3_K },
  Q4_K: { toF32: kDecode.dequantizeQ4_K, fromF32: kEncode.quantizeQ4_K },
  Q5_K: { toF32: kDecode.dequantizeQ5_K, fromF32: kEncode.quantizeQ5_K },
  Q6_K: { toF32: kDecode.dequantizeQ6_K, fromF32: kEncode.quantizeQ6_K },
  Q8_K: { toF32: kDecode.dequantizeQ8_K },
  // ggml requires an importance matrix for IQ2_XXS, IQ2_XS and IQ1_S: their
  // encoders refuse without one (a TypeError); quantizeWithImatrix passes it
  IQ2_XXS: {
    toF32: iq.dequantizeIQ2_XXS,
    fromF32: (x) =>
      iqLow.quantizeIQ2_XXS(x, x.length, undefined as unknown as Float32Array),
  },
  IQ2_XS: {
    toF32: iq.dequantizeIQ2_XS,
    fromF32: (x) =>
      iqGrid.quantizeIQ2_XS(x, x.length, undefined as unknown as Float32Array),
  },
  IQ3_XXS: { toF32: iq.dequantizeIQ3_XXS, fromF32: iqGrid.quantizeIQ3_XXS },
  IQ1_S: {
    toF32: iq.dequantizeIQ1_S,
    fromF32: (x) =>
      iqLow.quantizeIQ1_S(x, x.length, undefined as unknown as Float32Array),
  },
  IQ4_NL: { toF32: iq.dequantizeIQ4_NL, fromF32: iqEncode.quantizeIQ4_NL },
  IQ3_S: { toF32: iq.dequantizeIQ3_S, fromF32: iqGrid.quantizeIQ3_S },
  IQ2_S: { toF32: iq.dequantizeIQ2_S, fromF32: iqGrid.quantizeIQ2_S },
  IQ4_XS: { toF32: iq.dequantizeIQ4_XS, fromF32: iqEncode.quantizeIQ4_XS },
  IQ1_M: { toF32: iq.dequantizeIQ1_M, fromF32: iqLow.quantizeIQ1_M },
  TQ1_0: { toF32: iq.dequantizeTQ1_0, fromF32: iqLow.quantizeTQ1_0 },
  TQ2_0: { toF32: iq.dequantizeTQ2_0, fromF32: iqLow.quantizeTQ2_0 },
  MXFP4: { toF32: iq.dequantizeMXFP4, fromF32: iqEncode.quantizeMXFP4 },
  NVFP4: { toF32: iq.dequantizeNVFP4 },
  Q1_0: { toF32: iq.dequantizeQ1_0 },
  Q2_0: { toF32: iq.dequantizeQ2_0 },
};
