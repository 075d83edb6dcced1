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
 * | `modelhost.sha256` | JSON `{ tensor: "<64 hex digits>" }`, the SHA-256 of each tensor's stored bytes, checked by {@link validateSafetensors} |
 * | `modelhost.provenance.git_commit`, `.dataset_sha256`, `.seed`, `.created_at`, `.<other>` | provenance, written from the `provenance` option |
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readSafetensors, serializeSafetensors } from "./safetensors.ts";
 * import { memoryTensorIndex } from "../core/model.ts";
 * import { memorySource } from "../core/sources.ts";
 * import { tensorFromF32, toFloat32 } from "../core/tensor.ts";
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

import type { DTypeName } from "../core/dtypes.ts";
import type { FormatPlugin, OptionSpec } from "../core/plugin.ts";
import type { Tensor } from "../core/tensor.ts";
import { SAFETENSORS_MAX_HEADER_BYTES } from "./_safetensors_header.ts";
import { readSafetensors } from "./_safetensors_read.ts";
import { validateSafetensors } from "./_safetensors_validate.ts";
import {
  type SafetensorsWriteOptions,
  writeSafetensors,
  writeSafetensorsShards,
} from "./_safetensors_write.ts";

export {
  SAFETENSORS_MAX_HEADER_BYTES,
  type SafetensorsHeader,
  type SafetensorsTensorEntry,
} from "./_safetensors_header.ts";
export {
  parseSafetensorsIndex,
  readSafetensors,
  readSafetensorsHeader,
  readSafetensorsShards,
  SAFETENSORS_KEYS,
  type SafetensorsIndex,
  type SafetensorsReadOptions,
  type SafetensorsShardsOptions,
} from "./_safetensors_read.ts";
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
} from "./_safetensors_write.ts";
export {
  type SafetensorsProblem,
  type SafetensorsReport,
  type SafetensorsValidateOptions,
  validateSafetensors,
} from "./_safetensors_validate.ts";

/**
 * Whether the first bytes of a file look like SafeTensors: a plausible
 * 8-byte header length followed by `{` (after optional JSON whitespace), or
 * a sharded checkpoint's index JSON (it mentions `"weight_map"`).
 *
 * @param head The file's first bytes (16 or more for a reliable answer).
 * @returns Whether the SafeTensors reader should be tried.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { detectSafetensors } from "./safetensors.ts";
 * const head = new Uint8Array([2, 0, 0, 0, 0, 0, 0, 0, 0x7b, 0x7d]);
 * assert(detectSafetensors(head));
 * assert(!detectSafetensors(new TextEncoder().encode("GGUF")));
 * ```
 */
export function detectSafetensors(head: Uint8Array): boolean {
  if (head.byteLength >= 9) {
    const n = new DataView(head.buffer, head.byteOffset, 8).getBigUint64(
      0,
      true,
    );
    if (n >= 2n && n <= BigInt(SAFETENSORS_MAX_HEADER_BYTES)) {
      const end = Math.min(head.byteLength, 8 + Number(n));
      for (let i = 8; i < end; i++) {
        const b = head[i];
        if (b === 0x7b) return true;
        if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) break;
      }
    }
  }
  let i = 0;
  while (
    i < head.byteLength &&
    (head[i] === 0x20 || head[i] === 0x0a || head[i] === 0x0d ||
      head[i] === 0x09)
  ) i++;
  if (head[i] !== 0x7b) return false;
  const text = new TextDecoder().decode(head);
  return text.includes('"weight_map"');
}

/** A typed array over a tensor's stored elements. */
export type StoredArray =
  | Float64Array
  | Float32Array
  | Float16Array
  | BigInt64Array
  | BigUint64Array
  | Int32Array
  | Uint32Array
  | Int16Array
  | Uint16Array
  | Int8Array
  | Uint8Array;

type ArrayCtor = {
  readonly BYTES_PER_ELEMENT: number;
  new (buffer: ArrayBuffer, byteOffset: number, length: number): StoredArray;
};

const ARRAY_OF: Partial<Record<DTypeName, ArrayCtor>> = {
  F64: Float64Array,
  F32: Float32Array,
  F16: Float16Array,
  BF16: Uint16Array,
  I64: BigInt64Array,
  U64: BigUint64Array,
  I32: Int32Array,
  U32: Uint32Array,
  I16: Int16Array,
  U16: Uint16Array,
  I8: Int8Array,
};

/**
 * A typed array over a tensor's stored elements: a zero-copy view when the
 * bytes sit at an offset aligned to the element size (always the case for
 * tensors read from a file or HTTP, and for our own files read from
 * memory), a copy otherwise. BF16 comes as raw `Uint16Array` codes; U8,
 * BOOL, F8 and packed F4 (two codes per byte, low nibble first) as
 * `Uint8Array`. Quantization params are not applied: use `toFloat32`.
 *
 * @param t The tensor.
 * @returns The elements.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { typedArrayOf } from "./safetensors.ts";
 * const bytes = new Uint8Array(new Int16Array([-3, 7]).buffer);
 * const a = typedArrayOf({ name: "t", dtype: "I16", shape: [2], bytes });
 * assert(a instanceof Int16Array && a[0] === -3 && a.buffer === bytes.buffer);
 * ```
 */
export function typedArrayOf(t: Tensor): StoredArray {
  const Ctor = ARRAY_OF[t.dtype];
  if (!Ctor) return t.bytes;
  const size = Ctor.BYTES_PER_ELEMENT;
  const b = t.bytes.byteOffset % size === 0 &&
      t.bytes.buffer instanceof ArrayBuffer
    ? t.bytes
    : t.bytes.slice();
  return new Ctor(
    b.buffer as ArrayBuffer,
    b.byteOffset,
    Math.floor(b.byteLength / size),
  );
}

/** Options of the {@link safetensors} plugin factory. */
export interface SafetensorsPluginOptions {
  /** Write options applied under every `write` call's own options. @default {{}} */
  write?: SafetensorsWriteOptions;
}

const OPTIONS: readonly OptionSpec[] = [
  {
    name: "dtype",
    type: "string",
    description:
      "convert float weights to this dtype when writing (I8 stores per-row scales)",
    choices: ["F32", "F16", "BF16", "F64", "F8_E4M3", "F8_E5M2", "F4", "I8"],
  },
  {
    name: "sha256",
    type: "boolean",
    description: "store each tensor's SHA-256 in __metadata__ for validate",
    default: false,
  },
  {
    name: "maxShardSize",
    type: "number",
    description:
      "split the model into shards of at most this many data bytes, plus an index",
  },
  {
    name: "format",
    type: "string",
    description:
      '__metadata__["format"], the framework tag transformers checks',
    default: "pt",
  },
];

/**
 * Picks the file to open in a checkpoint folder: an index
 * (`model.safetensors.index.json` first), else the only `.safetensors` file.
 *
 * @param names File names in the folder.
 * @returns The name to read, or `undefined` when the folder is not a
 * SafeTensors checkpoint (or holds several files without an index).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { safetensorsFolderEntry } from "./safetensors.ts";
 * assert(safetensorsFolderEntry(["config.json", "model.safetensors"]) === "model.safetensors");
 * ```
 */
export function safetensorsFolderEntry(
  names: readonly string[],
): string | undefined {
  if (names.includes("model.safetensors.index.json")) {
    return "model.safetensors.index.json";
  }
  const index = names.find((n) => n.endsWith(".safetensors.index.json"));
  if (index) return index;
  const files = names.filter((n) => n.endsWith(".safetensors"));
  return files.length === 1 ? files[0] : undefined;
}

/**
 * The SafeTensors format plugin: reads single files and sharded
 * checkpoints (through `options.resolve`), writes one file as a stream.
 *
 * @param options Default write options.
 * @returns The plugin, named `"safetensors"`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { safetensors } from "./safetensors.ts";
 * import { createRegistry } from "../registry.ts";
 * const reg = createRegistry().use(safetensors());
 * assert(reg.formatForPath("model.safetensors").name === "safetensors");
 * ```
 */
export function safetensors(
  options: SafetensorsPluginOptions = {},
): FormatPlugin {
  return {
    kind: "format",
    name: "safetensors",
    description:
      "SafeTensors (.safetensors, sharded index.json): lazy and ranged reads, streaming writes",
    extensions: [".safetensors"],
    detect: detectSafetensors,
    folderEntry: safetensorsFolderEntry,
    read: (src, readOptions) => readSafetensors(src, readOptions),
    validate: async (src, readOptions) => {
      const report = await validateSafetensors(src, {
        resolve: readOptions?.resolve,
      });
      return report.problems.map((p) =>
        `${p.file}${
          p.tensor === undefined ? "" : ` tensor "${p.tensor}"`
        }: ${p.message}`
      );
    },
    write: (file, writeOptions) =>
      writeSafetensors(file, { ...options.write, ...writeOptions }),
    writeFiles: async (file, writeOptions) => {
      const plan = await writeSafetensorsShards(file, {
        ...options.write,
        ...writeOptions,
      });
      return [
        ...plan.shards.map((s) => ({ name: s.fileName, data: s.chunks() })),
        ...(plan.index
          ? [{ name: plan.index.fileName, data: plan.index.bytes }]
          : []),
      ];
    },
    options: OPTIONS,
  };
}
