/**
 * GGUF as a {@link ModelFile}: metadata as plain values plus each key's
 * type descriptor under {@link GGUF_TYPES_KEY}, tensors behind a lazy index
 * that reads a tensor's bytes when it is loaded.
 *
 * @module
 */

import { setOwn } from "../../core/_own.ts";
import { checkJsonDepth } from "../../core/_json_depth.ts";
import type { ModelFile, NetworkConfig } from "../../core/model.ts";
import { lazyTensorIndex } from "../../core/model.ts";
import type { ByteSource } from "../../core/sources.ts";
import type { Tensor } from "../../core/tensor.ts";
import {
  type GgufHeader,
  type GgufMetadataEntry,
  GgufType,
  type GgufValue,
} from "./types.ts";
import { readGgufHeader, type ReadGgufHeaderOptions } from "./header.ts";
import { ggufTypeDescriptor } from "./_desc.ts";

/**
 * The ModelFile metadata key that holds each GGUF key's type descriptor.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GGUF_TYPES_KEY } from "@modelhost/modelhost/formats/gguf";
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
 * import { ggufPlainValue, GgufType } from "@modelhost/modelhost/formats/gguf";
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
 * import { ggufEntry, GgufType } from "@modelhost/modelhost/formats/gguf";
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
 * import { ggufValue, GgufType } from "@modelhost/modelhost/formats/gguf";
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
 * import { ggufMetadataRecord, GgufType } from "@modelhost/modelhost/formats/gguf";
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
    setOwn(out, e.key, ggufPlainValue(e.value));
    setOwn(types, e.key, ggufTypeDescriptor(e.type, e.value));
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
 * import { readGgufHeader, readGgufTensor } from "@modelhost/modelhost/formats/gguf";
 * import { memorySource } from "@modelhost/modelhost/core";
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
 * import { ggufModelFile, readGgufHeader } from "@modelhost/modelhost/formats/gguf";
 * import { memorySource } from "@modelhost/modelhost/core";
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
      checkJsonDepth(config, "modelhost.config");
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
 * import { readGguf } from "@modelhost/modelhost/formats/gguf";
 * import { memorySource } from "@modelhost/modelhost/core";
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
