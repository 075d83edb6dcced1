/**
 * GGUF, the llama.cpp / ggml model format: a reader for versions 2 and 3
 * (every metadata type, nested arrays, tensor infos, alignment, lazy tensor
 * reads through any {@link ByteSource}) and the `gguf` format plugin.
 *
 * Two views of a file:
 *
 * - {@link readGgufHeader} gives the typed header: every metadata entry as
 *   `{ key, type, value }` with its GGUF value type kept (arrays as
 *   `{ type, items }` with their element type), tensor infos with `dims` in
 *   ggml order and `shape` in PyTorch order, the alignment and the data offset.
 * - {@link readGguf} (and the plugin's `read`) gives a {@link ModelFile}:
 *   metadata as plain values (`model.metadata["llama.block_count"] === 2`;
 *   arrays as plain arrays), plus the key `"gguf.types"` mapping each key to
 *   its GGUF type descriptor (`"UINT32"`, `"ARRAY<STRING>"`), and a lazy tensor
 *   index.
 *
 * Shapes: ggml lists dimensions fastest-first (`ne[0]` is the row length).
 * The ModelFile reverses them into row-major PyTorch order, so a GGUF weight
 * with `dims [4096, 11008]` has `shape [11008, 4096]` (`[out, in]`). Tensor
 * bytes are returned as stored (little-endian, quantized blocks untouched);
 * from a memory source they are zero-copy views.
 *
 * Values: 64-bit integers (UINT64, INT64) are bigints, every other number is
 * a number (FLOAT32 values are the exact double of the stored float). Strings
 * are decoded as UTF-8; invalid bytes become U+FFFD, as in gguf-py.
 *
 * Refused with clear errors: version 1 and unknown versions, big-endian files
 * (`SyntaxError`), unknown ggml type ids (`UnsupportedDTypeError`), counts,
 * lengths, dimensions or offsets that the file cannot hold, misaligned or
 * overlapping tensors (`RangeError`), duplicate keys or tensor names
 * (`SyntaxError`). The limits are the exported `MAX_*` constants.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readGguf } from "@modelhost/modelhost/formats/gguf";
 * import { memorySource } from "@modelhost/modelhost/core";
 * // GGUF v3, one F32 tensor "b" with dims [2], alignment 32, data at 64.
 * const bytes = new Uint8Array(72);
 * const v = new DataView(bytes.buffer);
 * bytes.set([0x47, 0x47, 0x55, 0x46]);
 * v.setUint32(4, 3, true); v.setBigUint64(8, 1n, true); v.setBigUint64(16, 0n, true);
 * v.setBigUint64(24, 1n, true); bytes[32] = 0x62; v.setUint32(33, 1, true);
 * v.setBigUint64(37, 2n, true); v.setUint32(45, 0, true); v.setBigUint64(49, 0n, true);
 * v.setFloat32(64, 1.5, true); v.setFloat32(68, -2, true);
 * const file = await readGguf(memorySource(bytes));
 * const t = await file.models[0].tensors.load("b");
 * assert(t.shape[0] === 2 && new Float32Array(t.bytes.slice().buffer)[1] === -2);
 * ```
 *
 * @example Write, quantizing 2-D weights to Q8_0 (norms and 1-D tensors stay F32)
 * ```ts
 * import { assert } from "@std/assert";
 * import { readGguf, writeGgufBytes, type GgufTensorPlan } from "@modelhost/modelhost/formats/gguf";
 * import { memorySource, memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 *
 * const w = Float32Array.from({ length: 64 * 32 }, (_, i) => Math.sin(i));
 * const file = {
 *   models: [{
 *     id: "tiny",
 *     metadata: { "general.architecture": "llama", "llama.block_count": 1 },
 *     tensors: memoryTensorIndex([
 *       tensorFromF32("blk.0.attn_q.weight", w, [32, 64]),
 *       tensorFromF32("blk.0.attn_norm.weight", new Float32Array(64).fill(1), [64]),
 *     ]),
 *   }],
 * };
 * let plan: GgufTensorPlan[] = [];
 * const bytes = await writeGgufBytes(file, { quantize: "Q8_0", onPlan: (p) => (plan = p) });
 * assert(plan[0].to === "Q8_0" && plan[1].to === "F32");
 * const back = await readGguf(memorySource(bytes));
 * assert(back.models[0].metadata["llama.block_count"] === 1);
 * ```
 *
 * @module
 */

export { ggufTypeDescriptor } from "./_desc.ts";
export {
  GGUF_WRITE_DEFAULTS,
  type GgufQuantType,
  type GgufTensorPlan,
  type GgufWriteOptions,
  MAX_GGML_NAME_BYTES,
  planGguf,
  writeGguf,
  writeGgufBytes,
} from "./write.ts";

export {
  DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_TYPE_NAMES,
  type GgufArray,
  type GgufHeader,
  type GgufMetadataEntry,
  type GgufTensorInfo,
  GgufType,
  type GgufValue,
  isGgufType,
  MAX_ALIGNMENT,
  MAX_ARRAY_DEPTH,
  MAX_DIMS,
  MAX_KEY_BYTES,
  MAX_STRING_BYTES,
  MAX_TENSOR_NAME_BYTES,
} from "./types.ts";
export {
  dequantize,
  DEQUANTIZE_TYPES,
  dequantizeGguf,
  quantize,
  QUANTIZE_TYPES,
  quantizeGguf,
  quantizeIQ1_M,
  quantizeIQ1_S,
  quantizeIQ2_S,
  quantizeIQ2_XS,
  quantizeIQ2_XXS,
  quantizeIQ3_S,
  quantizeIQ3_XXS,
  quantizeIQ4_NL,
  quantizeIQ4_NLRef,
  quantizeIQ4_XS,
  quantizeMXFP4,
  quantizeTQ1_0,
  quantizeTQ2_0,
} from "../../core/quants/mod.ts";
export {
  parseGgufHeader,
  readGgufHeader,
  type ReadGgufHeaderOptions,
} from "./header.ts";
export {
  GGUF_TYPES_KEY,
  ggufEntry,
  ggufMetadataRecord,
  ggufModelFile,
  ggufPlainValue,
  ggufValue,
  readGguf,
  readGgufTensor,
} from "./read.ts";
export { gguf, ggufFormat, isGguf } from "./plugin.ts";
export {
  GGUF_PRESET_ALIASES,
  GGUF_PRESETS,
  type GgufPreset,
  ggufPreset,
  type GgufPresetChoice,
  type GgufPresetModel,
  type GgufPresetOptions,
  type GgufPresetTensor,
  ggufPresetTypes,
  llamaKeepsTensor,
  llamaTensorOrder,
} from "./presets.ts";
export { ggufTypeLoss } from "./_loss.ts";
