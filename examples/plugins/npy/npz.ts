/**
 * The `.npz` archive of NumPy (`np.savez`, `np.savez_compressed`): a ZIP
 * archive with one `.npy` file per array, named `<array name>.npy`, each
 * stored or deflated.
 *
 * @module
 */

import {
  type ByteSource,
  lazyTensorIndex,
  type ModelFile,
  type TensorInfo,
} from "@modelhost/modelhost";
import {
  encodeNpy,
  npyDataOffset,
  type NpyHeader,
  type NpyWriteOptions,
  onlyModel,
  parseNpyHeader,
  toLittleEndianCOrder,
} from "./npy.ts";
import {
  readZipDirectory,
  readZipEntry,
  readZipEntryPrefix,
  writeZip,
  type ZipEntry,
  type ZipInput,
} from "./_zip.ts";

/**
 * Reads a `.npz` archive as a model whose tensors are its arrays (the
 * entry name without `.npy`). Opening reads the central directory and each
 * array's header (inflating only the first bytes of deflated entries);
 * an array's data is read, inflated and checked against its CRC-32 when the
 * tensor is loaded. Entries that are not `.npy` files are skipped.
 *
 * @param src The archive.
 * @returns A model file with one model (id `"npz"`).
 * @throws {SyntaxError} On a broken archive or header, a corrupt deflate
 * stream or a CRC mismatch (when loading).
 * @throws {RangeError} On sizes and offsets that do not fit, and on zip64
 * archives.
 * @throws {TypeError} On encryption, other compression methods and bad
 * header values.
 * @throws {UnsupportedDTypeError} For array types modelhost has no dtype for.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readNpz, writeNpz } from "./npz.ts";
 * import { memorySource, memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost";
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array(4), [2, 2])]);
 * const chunks: Uint8Array<ArrayBuffer>[] = [];
 * for await (const c of writeNpz({ models: [{ id: "m", metadata: {}, tensors }] })) chunks.push(c.slice());
 * const bytes = new Uint8Array(await new Blob(chunks).arrayBuffer());
 * const file = await readNpz(memorySource(bytes, "m.npz"));
 * assert(file.models[0].tensors.info("w").shape.join() === "2,2");
 * ```
 */
export async function readNpz(src: ByteSource): Promise<ModelFile> {
  const entries = await readZipDirectory(src);
  const infos: TensorInfo[] = [];
  const found = new Map<string, { entry: ZipEntry; header: NpyHeader }>();
  for (const entry of entries) {
    if (!entry.name.endsWith(".npy")) continue;
    const where = `${src.name}:${entry.name}`;
    const head = await readZipEntryPrefix(src, entry, 12);
    const offset = npyDataOffset(head, where);
    if (offset > entry.size) {
      throw new RangeError(
        `Cannot read ${where}: its .npy header ends at byte ${offset}, the entry has ${entry.size}`,
      );
    }
    const header = parseNpyHeader(
      await readZipEntryPrefix(src, entry, offset),
      where,
    );
    if (header.dataOffset + header.dataLength !== entry.size) {
      throw new RangeError(
        `Cannot read ${where}: the array (${header.descr} [${
          header.shape.join(", ")
        }]) needs ${header.dataLength} bytes after its ${header.dataOffset}-byte header, the entry has ${
          entry.size - header.dataOffset
        }`,
      );
    }
    const name = entry.name.slice(0, -4);
    const direct = entry.method === 0 && !header.bigEndian &&
      !header.fortranOrder;
    infos.push({
      name,
      dtype: header.dtype,
      shape: header.shape,
      byteLength: header.dataLength,
      ...(direct ? { byteOffset: entry.dataOffset + header.dataOffset } : {}),
    });
    found.set(name, { entry, header });
  }
  const tensors = lazyTensorIndex(infos, async (info) => {
    const { entry, header } = found.get(info.name)!;
    const bytes = await readZipEntry(src, entry);
    return toLittleEndianCOrder(header, bytes.subarray(header.dataOffset));
  });
  return { format: "npz", models: [{ id: "npz", metadata: {}, tensors }] };
}

/** Options of {@link writeNpz}. */
export interface NpzWriteOptions extends NpyWriteOptions {
  /** Deflate each array (`np.savez_compressed`) instead of storing it (`np.savez`). @default {false} */
  compress?: boolean;
}

/** Default {@link NpzWriteOptions}. */
export const npzWriteDefaults: Required<NpzWriteOptions> = {
  compress: false,
  strictDtypes: false,
};

function checkName(name: string): void {
  if (
    name === "" || name.startsWith("/") || name.includes("\\") ||
    name.includes("\0") || name.split("/").some((s) => s === ".." || s === "")
  ) {
    throw new TypeError(
      `Cannot write tensor ${
        JSON.stringify(name)
      } to .npz: the name must be a relative path without empty, ".." or backslash parts (it becomes a file name in the archive)`,
    );
  }
}

/**
 * Writes a model's tensors as a `.npz` archive that `np.load` reads: one
 * `<name>.npy` entry per tensor, in the model's order, stored or deflated
 * (`compress`). Tensors are loaded and encoded one at a time, and the
 * archive streams out entry by entry. Metadata and the network config are
 * not written (the format holds arrays only).
 *
 * @param file A model file with one model.
 * @param options Compression and dtype handling.
 * @returns The archive's bytes, in chunks (errors surface while iterating).
 * @throws {TypeError} On several models or a name unfit for a zip entry.
 * @throws {RangeError} When the archive would need zip64.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { writeNpz } from "./npz.ts";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost";
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array(1000), [1000])]);
 * let size = 0;
 * for await (const c of writeNpz({ models: [{ id: "m", metadata: {}, tensors }] }, { compress: true })) size += c.byteLength;
 * assert(size < 1000);
 * ```
 */
export async function* writeNpz(
  file: ModelFile,
  options: NpzWriteOptions = {},
): AsyncGenerator<Uint8Array> {
  const model = onlyModel(file, ".npz");
  const names = model.tensors.names();
  names.forEach(checkName);
  async function* inputs(): AsyncGenerator<ZipInput> {
    for (const name of names) {
      const tensor = await model.tensors.load(name);
      yield { name: `${name}.npy`, data: encodeNpy(tensor, options) };
    }
  }
  yield* writeZip(inputs(), options.compress ?? npzWriteDefaults.compress);
}
