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
 * import { readGguf } from "./gguf.ts";
 * import { memorySource } from "../core/sources.ts";
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
 * import { readGguf, writeGgufBytes, type GgufTensorPlan } from "./gguf.ts";
 * import { memorySource } from "../core/sources.ts";
 * import { memoryTensorIndex } from "../core/model.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
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

import type { ModelFile, NetworkConfig } from "../core/model.ts";
import { lazyTensorIndex } from "../core/model.ts";
import type { FormatPlugin } from "../core/plugin.ts";
import type { ByteSource } from "../core/sources.ts";
import type { Tensor } from "../core/tensor.ts";
import {
  type GgufHeader,
  type GgufMetadataEntry,
  GgufType,
  type GgufValue,
} from "./_gguf_types.ts";
import { readGgufHeader, type ReadGgufHeaderOptions } from "./_gguf_read.ts";
import { QUANTIZE_TYPES } from "../core/quants/mod.ts";
import { ggufTypeDescriptor } from "./_gguf_desc.ts";
import { type GgufWriteOptions, writeGguf } from "./_gguf_write.ts";
export { ggufTypeDescriptor } from "./_gguf_desc.ts";
export {
  GGUF_WRITE_DEFAULTS,
  type GgufQuantType,
  type GgufTensorPlan,
  type GgufWriteOptions,
  MAX_GGML_NAME_BYTES,
  planGguf,
  writeGguf,
  writeGgufBytes,
} from "./_gguf_write.ts";

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
} from "./_gguf_types.ts";
export {
  dequantize,
  DEQUANTIZE_TYPES,
  dequantizeGguf,
  quantize,
  QUANTIZE_TYPES,
  quantizeGguf,
} from "../core/quants/mod.ts";
export {
  parseGgufHeader,
  readGgufHeader,
  type ReadGgufHeaderOptions,
} from "./_gguf_read.ts";

/**
 * The ModelFile metadata key that holds each GGUF key's type descriptor.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GGUF_TYPES_KEY } from "./gguf.ts";
 * assert(GGUF_TYPES_KEY === "gguf.types");
 * ```
 */
export const GGUF_TYPES_KEY = "gguf.types";

/**
 * A metadata value as a plain JavaScript value: arrays become their items
 * (nested arrays recursively), everything else is returned as is.
 *
 * @param value A typed value.
 * @returns The plain value; a flat array's items are the same array object.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufPlainValue, GgufType } from "./gguf.ts";
 * const v = ggufPlainValue({ type: GgufType.STRING, items: ["a", "b"] });
 * assert(Array.isArray(v) && v[1] === "b");
 * ```
 */
export function ggufPlainValue(value: GgufValue): unknown {
  if (typeof value !== "object") return value;
  if (value.type !== GgufType.ARRAY) return value.items;
  return value.items.map((v) => ggufPlainValue(v));
}

/**
 * Finds a metadata entry by key.
 *
 * @param header A parsed header.
 * @param key The key.
 * @returns The entry, or `undefined`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufEntry, GgufType } from "./gguf.ts";
 * const header = { metadata: [{ key: "a", type: GgufType.UINT32, value: 7 }] };
 * assert(ggufEntry(header, "a")?.type === GgufType.UINT32);
 * ```
 */
export function ggufEntry(
  header: Pick<GgufHeader, "metadata">,
  key: string,
): GgufMetadataEntry | undefined {
  for (const e of header.metadata) if (e.key === key) return e;
  return undefined;
}

/**
 * A metadata value as a plain JavaScript value (see {@link ggufPlainValue}).
 *
 * @param header A parsed header.
 * @param key The key, e.g. `"tokenizer.ggml.tokens"`.
 * @returns The value, or `undefined` when the key is absent.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufValue, GgufType } from "./gguf.ts";
 * const header = { metadata: [{ key: "t", type: GgufType.ARRAY, value: { type: GgufType.STRING, items: ["<s>"] } }] };
 * assert((ggufValue(header, "t") as string[])[0] === "<s>");
 * ```
 */
export function ggufValue(
  header: Pick<GgufHeader, "metadata">,
  key: string,
): unknown {
  const e = ggufEntry(header, key);
  return e === undefined ? undefined : ggufPlainValue(e.value);
}

/**
 * The metadata as a plain record (key → plain value) with
 * {@link GGUF_TYPES_KEY} holding each key's type descriptor, as the ModelFile
 * carries it.
 *
 * @param header A parsed header.
 * @returns The record, keys in file order.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufMetadataRecord, GgufType } from "./gguf.ts";
 * const rec = ggufMetadataRecord({ metadata: [{ key: "n", type: GgufType.INT16, value: -2 }] });
 * assert(rec.n === -2 && (rec["gguf.types"] as Record<string, string>).n === "INT16");
 * ```
 */
export function ggufMetadataRecord(
  header: Pick<GgufHeader, "metadata">,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const types: Record<string, string> = {};
  for (const e of header.metadata) {
    out[e.key] = ggufPlainValue(e.value);
    types[e.key] = ggufTypeDescriptor(e.type, e.value);
  }
  out[GGUF_TYPES_KEY] = types;
  return out;
}

/**
 * Reads one tensor's stored bytes.
 *
 * @param src The file.
 * @param header Its parsed header.
 * @param name The tensor name.
 * @returns The tensor, with its shape in PyTorch order.
 * @throws {RangeError} When no tensor has that name.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readGgufHeader, readGgufTensor } from "./gguf.ts";
 * import { memorySource } from "../core/sources.ts";
 * const bytes = new Uint8Array(72);
 * const v = new DataView(bytes.buffer);
 * bytes.set([0x47, 0x47, 0x55, 0x46]);
 * v.setUint32(4, 3, true); v.setBigUint64(8, 1n, true);
 * v.setBigUint64(24, 1n, true); bytes[32] = 0x62; v.setUint32(33, 1, true);
 * v.setBigUint64(37, 2n, true);
 * const src = memorySource(bytes);
 * const t = await readGgufTensor(src, await readGgufHeader(src), "b");
 * assert(t.bytes.length === 8);
 * ```
 */
export async function readGgufTensor(
  src: ByteSource,
  header: GgufHeader,
  name: string,
): Promise<Tensor> {
  const t = header.tensors.find((x) => x.name === name);
  if (!t) {
    throw new RangeError(
      `No tensor named "${name}" in ${header.name} (${header.tensors.length} tensors)`,
    );
  }
  const bytes = await src.read(header.dataOffset + t.offset, t.byteLength);
  return { name, dtype: t.dtype, shape: t.shape.slice(), bytes };
}

/**
 * Wraps a parsed header as a {@link ModelFile} whose tensors are read from
 * `src` on demand.
 *
 * @param src The file.
 * @param header Its parsed header.
 * @returns The model file (one model).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufModelFile, readGgufHeader } from "./gguf.ts";
 * import { memorySource } from "../core/sources.ts";
 * const bytes = new Uint8Array([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0, ...new Array(16).fill(0)]);
 * const src = memorySource(bytes);
 * const file = ggufModelFile(src, await readGgufHeader(src));
 * assert(file.models[0].id === "model" && file.format === "gguf");
 * ```
 */
export function ggufModelFile(src: ByteSource, header: GgufHeader): ModelFile {
  const metadata = ggufMetadataRecord(header);
  const name = metadata["general.name"];
  const infos = header.tensors.map((t) => ({
    name: t.name,
    dtype: t.dtype,
    shape: t.shape.slice(),
    byteLength: t.byteLength,
    byteOffset: header.dataOffset + t.offset,
  }));
  let config: NetworkConfig | undefined;
  const stored = metadata["modelhost.config"];
  if (typeof stored === "string") {
    try {
      config = JSON.parse(stored);
    } catch {
      config = undefined;
    }
  }
  return {
    format: "gguf",
    models: [{
      id: typeof name === "string" && name !== "" ? name : "model",
      ...(config ? { config } : {}),
      metadata,
      tensors: lazyTensorIndex(
        infos,
        (i) => src.read(i.byteOffset!, i.byteLength),
      ),
    }],
  };
}

/**
 * Reads a GGUF file's header and returns it as a lazy {@link ModelFile}.
 *
 * @param src The file.
 * @param options Window size of the header reads (see {@link readGgufHeader}).
 * @returns The model file.
 * @throws {SyntaxError} Bad magic, unsupported version, big-endian file, unknown value type, duplicates.
 * @throws {RangeError} Counts, lengths, dims or offsets the file cannot hold.
 * @throws {UnsupportedDTypeError} An unknown ggml type id.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readGguf } from "./gguf.ts";
 * import { memorySource } from "../core/sources.ts";
 * const bytes = new Uint8Array([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0, ...new Array(16).fill(0)]);
 * const file = await readGguf(memorySource(bytes));
 * assert(file.models[0].tensors.names().length === 0);
 * ```
 */
export async function readGguf(
  src: ByteSource,
  options: ReadGgufHeaderOptions = {},
): Promise<ModelFile> {
  return ggufModelFile(src, await readGgufHeader(src, options));
}

/**
 * Whether leading bytes are a GGUF magic.
 *
 * @param head The first bytes of a file.
 * @returns `true` when they start with `"GGUF"`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { isGguf } from "./gguf.ts";
 * assert(isGguf(new TextEncoder().encode("GGUF\x03\0\0\0")));
 * ```
 */
export function isGguf(head: Uint8Array): boolean {
  return head.length >= 4 && head[0] === 0x47 && head[1] === 0x47 &&
    head[2] === 0x55 && head[3] === 0x46;
}

/**
 * The `gguf` format plugin: reads GGUF v2/v3 into a lazy {@link ModelFile}.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { gguf } from "./gguf.ts";
 * import { createRegistry } from "../registry.ts";
 * const reg = createRegistry().use(gguf);
 * assert(reg.formatForPath("model.gguf").name === "gguf");
 * ```
 */
export const gguf: FormatPlugin = {
  kind: "format",
  name: "gguf",
  description:
    "GGUF v2/v3 (llama.cpp): every metadata type, quantized tensors, quantize on write",
  extensions: [".gguf"],
  detect: isGguf,
  read: (src, options) =>
    readGguf(src, {
      ...(typeof options?.initialRead === "number"
        ? { initialRead: options.initialRead }
        : {}),
    }),
  write: (file, options) => writeGguf(file, options as GgufWriteOptions),
  options: [
    {
      name: "quantize",
      type: "string",
      description:
        "quantize 2-D weights on write (llama.cpp --pure rules; 1-D tensors and norms stay)",
      choices: [...QUANTIZE_TYPES, "F16", "BF16", "F32"],
    },
    {
      name: "alignment",
      type: "number",
      description: "alignment of tensor data (power of two)",
      default: 32,
    },
  ],
};
