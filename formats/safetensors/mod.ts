/**
 * The SafeTensors format: an 8-byte little-endian header length `n`, `n`
 * bytes of UTF-8 JSON (tensor name → `{dtype, shape, data_offsets}`, plus an
 * optional `__metadata__` string → string map), then the tensors' bytes,
 * row-major and little-endian.
 *
 * **Reading** is lazy: {@link readSafetensors} reads the 8-byte length and
 * the header (a few KB of a 10 GB file), validates all of it, and reads a
 * tensor's bytes only when `tensors.load(name)` is called, from memory, a
 * file (`io/safetensors.ts`) or an HTTP server answering `Range` requests
 * (`httpSource` in `core/sources.ts`). A `model.safetensors.index.json` opens
 * as one model whose shards are opened through `options.resolve`.
 *
 * **Validation** runs before any tensor is touched. Each rule has its own
 * message; the last column is the error of the reference implementation
 * (huggingface/safetensors, `SafeTensorError`) for the same file:
 *
 * | rule | error | reference |
 * |---|---|---|
 * | file shorter than 8 bytes | `RangeError` "too small for the 8-byte header length" | `HeaderTooSmall` |
 * | header length above 100,000,000 bytes | `RangeError` "larger than the 100000000-byte limit" | `HeaderTooLarge` |
 * | header runs past the end of the file | `RangeError` "runs past the end of the file" | `InvalidHeaderLength` |
 * | header not UTF-8 | `SyntaxError` "not valid UTF-8" | `InvalidHeader` |
 * | header not JSON, or a duplicate key | `SyntaxError` "invalid JSON" | `InvalidHeaderDeserialization` |
 * | header not an object; entry not an object; missing or extra field; wrong field type; `__metadata__` not string → string | `TypeError` | `InvalidHeaderDeserialization` |
 * | unknown dtype | `UnsupportedDTypeError` (a `TypeError`) | `InvalidHeaderDeserialization` |
 * | negative, fractional or > 2^64-1 dimension or offset | `RangeError` "expected an integer in 0..2^64-1" | `InvalidHeaderDeserialization` |
 * | `end < begin`, a hole, or an overlap between tensors | `RangeError` "end before they begin" / "leave a hole" / "overlap" | `InvalidOffset` |
 * | element count or byte size beyond 64 bits | `RangeError` "overflows 64 bits" | `ValidationOverflow` |
 * | F4 with an odd element count | `RangeError` "do not fill whole blocks" | `MisalignedSlice` |
 * | `end - begin` ≠ elements × dtype size (F4: two per byte) | `RangeError` "needs N bytes" | `TensorInvalidInfo` |
 * | tensors do not end exactly at the end of the file | `RangeError` "trailing bytes belong to no tensor" / "the file has" | `MetadataIncompleteBuffer` |
 *
 * Leading and trailing JSON whitespace around the header object is accepted,
 * as in the reference; `"__metadata__": null` reads as no metadata. Where we
 * are stricter than the reference:
 *
 * - extra fields in a tensor entry are refused (the reference ignores them);
 * - a duplicate key is refused (the reference's JSON layer keeps the last);
 * - a dimension above 2^53-1 is refused even when another dimension is 0
 *   (a JavaScript number cannot hold it exactly);
 * - dtypes the reference knows but our dtype table does not (`C64`,
 *   `F6_E2M3`, `F6_E3M2`, `F8_E8M0`, `F8_E4M3FNUZ`, `F8_E5M2FNUZ`) are
 *   refused with `UnsupportedDTypeError`;
 * - `modelhost.config` and `modelhost.quant` metadata, when present, must
 *   be valid (they are our keys; other keys are free text).
 *
 * **Writing** is deterministic and streaming: {@link writeSafetensors}
 * yields the header, then each tensor as it is loaded; header entries are
 * sorted by name and padded with spaces to a multiple of 8; data is laid out
 * contiguously by descending element size, then name, so each tensor is
 * aligned to its element size. {@link writeSafetensorsShards} splits a model
 * by `maxShardSize` into `model-00001-of-0000N.safetensors` files plus
 * `model.safetensors.index.json` (`metadata.total_size`, `weight_map`).
 *
 * **Metadata keys** modelhost writes and reads (all `__metadata__` values
 * are strings):
 *
 * | key | value |
 * |---|---|
 * | `format` | `"pt"` by default, the value Hugging Face `transformers` expects |
 * | `modelhost.config` | the network config, JSON, so a network round-trips |
 * | `modelhost.quant` | JSON `{ tensor: { scale, zero_point?, axis?, block_size? } }`; `value = (code - zero_point) * scale`, scalars per tensor, arrays per channel along `axis` (default 0) or per block of `block_size` elements |
 * | `modelhost.sha256` | JSON `{ tensor: "<64 hex digits>" }`, the SHA-256 of each tensor's stored bytes, checked by {@link validateSafetensors} and on load |
 * | `modelhost.header_sha256` | 64 hex digits: SHA-256 of the compact JSON `{"quant": <modelhost.quant text or null>, "tensors": [[name, dtype, shape, byte sha256], ...]}` (tensors by name), so a dtype, shape or quantization edit is caught; checked on load and by {@link validateSafetensors} |
 * | `modelhost.provenance.git_commit`, `.dataset_sha256`, `.seed`, `.created_at`, `.<other>` | provenance, written from the `provenance` option |
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readSafetensors, serializeSafetensors } from "@modelhost/modelhost/formats/safetensors";
 * import { memoryTensorIndex, memorySource, tensorFromF32, toFloat32 } from "@modelhost/modelhost/core";
 *
 * const tensors = memoryTensorIndex([tensorFromF32("layers.0.weight", new Float32Array([1, 2, 3, 4]), [2, 2])]);
 * const config = { layers: [{ type: "dense", input_size: 2, output_size: 2 }] };
 * const bytes = await serializeSafetensors({ models: [{ id: "net", config, metadata: {}, tensors }] }, { dtype: "BF16" });
 * const back = (await readSafetensors(memorySource(bytes))).models[0];
 * assert(back.config?.layers[0].type === "dense");
 * assert(toFloat32(await back.tensors.load("layers.0.weight"))[3] === 4);
 * ```
 *
 * @module
 */

export {
  SAFETENSORS_MAX_HEADER_BYTES,
  type SafetensorsHeader,
  type SafetensorsTensorEntry,
} from "./_header.ts";
export {
  parseSafetensorsIndex,
  readSafetensors,
  readSafetensorsHeader,
  readSafetensorsShards,
  SAFETENSORS_KEYS,
  type SafetensorsIndex,
  type SafetensorsReadOptions,
  type SafetensorsShardsOptions,
  type StoredArray,
  typedArrayOf,
} from "./read.ts";
export {
  type SafetensorsProvenance,
  type SafetensorsShard,
  type SafetensorsShardPlan,
  safetensorsWriteDefaults,
  type SafetensorsWriteOptions,
  serializeSafetensors,
  sha256Hex,
  writeSafetensors,
  writeSafetensorsShards,
} from "./write.ts";
export {
  type SafetensorsProblem,
  type SafetensorsReport,
  type SafetensorsValidateOptions,
  validateSafetensors,
} from "./validate.ts";
export {
  detectSafetensors,
  safetensors,
  safetensorsFolderEntry,
  safetensorsFormat,
  type SafetensorsPluginOptions,
} from "./plugin.ts";
