/**
 * SafeTensors on the local file system (Deno): open a file, a sharded
 * checkpoint's index or a folder as one lazily read model; save a model as
 * one file or as shards plus an index, atomically; validate any of them.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { openSafetensors, saveSafetensors } from "@modelhost/modelhost/io/safetensors";
 * import { memoryTensorIndex } from "@modelhost/modelhost/core";
 * import { tensorFromF32, toFloat32 } from "@modelhost/modelhost/core";
 *
 * const dir = await Deno.makeTempDir();
 * const tensors = memoryTensorIndex([
 *   tensorFromF32("a", new Float32Array(300).fill(1), [300]),
 *   tensorFromF32("b", new Float32Array(300).fill(2), [300]),
 * ]);
 * await saveSafetensors(`${dir}/model.safetensors`, { models: [{ id: "m", metadata: {}, tensors }] }, { maxShardSize: 2000 });
 * const file = await openSafetensors(dir); // finds model.safetensors.index.json
 * assert(toFloat32(await file.models[0].tensors.load("b"))[0] === 2);
 * file.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */

import { basename, dirname, join } from "@std/path";
import type { ModelFile } from "../core/model.ts";
import type { ByteSource } from "../core/sources.ts";
import {
  readSafetensors,
  readSafetensorsShards,
  safetensorsFormat,
  type SafetensorsReport,
  type SafetensorsValidateOptions,
  type SafetensorsWriteOptions,
  validateSafetensors,
} from "../formats/safetensors/mod.ts";
import { type FileByteSource, fileSource } from "./file.ts";
import { writeModel } from "./open.ts";

/** A model file opened from disk; its files stay open until `close()`. */
export interface SafetensorsFile extends ModelFile {
  /** The files opened (one, or every shard). */
  readonly paths: readonly string[];
  /** Closes every opened file; later tensor loads fail. */
  close(): void;
}

/** Options of {@link openSafetensors}. */
export interface OpenSafetensorsOptions {
  /** Id of the model. @default {the file or index name without extensions, or the folder name} */
  id?: string;
  /** Check tensors against `__metadata__["modelhost.sha256"]` on load, and dtypes, shapes and quantization fields against `modelhost.header_sha256` at open. @default {true} */
  verify?: boolean;
}

const INDEX_SUFFIX = ".safetensors.index.json";

interface Located {
  /** The file or index to read, or several files to merge. */
  target: string | string[];
  /** Folder that relative names resolve against. */
  dir: string;
}

async function locate(path: string): Promise<Located> {
  const stat = await Deno.stat(path);
  if (!stat.isDirectory) return { target: path, dir: dirname(path) };
  const names: string[] = [];
  for await (const e of Deno.readDir(path)) if (e.isFile) names.push(e.name);
  names.sort();
  const indexes = names.filter((n) => n.endsWith(INDEX_SUFFIX));
  const preferred = indexes.includes(`model${INDEX_SUFFIX}`)
    ? `model${INDEX_SUFFIX}`
    : indexes.length === 1
    ? indexes[0]
    : undefined;
  if (preferred) return { target: join(path, preferred), dir: path };
  const files = names.filter((n) => n.endsWith(".safetensors"));
  if (files.length === 0) {
    throw new Deno.errors.NotFound(
      `No .safetensors file or index in folder ${path}`,
    );
  }
  return {
    target: files.length === 1 ? join(path, files[0]) : files,
    dir: path,
  };
}

function resolver(
  dir: string,
  opened: FileByteSource[],
): (relativePath: string) => Promise<ByteSource> {
  return async (rel) => {
    const src = await fileSource(join(dir, rel));
    opened.push(src);
    return src;
  };
}

/**
 * Opens a SafeTensors file, a `*.safetensors.index.json` or a folder (its
 * `model.safetensors.index.json`, its only index, its only `.safetensors`
 * file, or all its `.safetensors` files merged) as one lazily read model.
 * Only headers are read now; each tensor is read from disk when loaded.
 *
 * @param path A file, index or folder.
 * @param options Model id.
 * @returns The model file; call `close()` when done.
 * @throws {Deno.errors.NotFound} When the path or a shard does not exist, or a folder has no SafeTensors file.
 * @throws {RangeError} On invalid headers (see `formats/safetensors/mod.ts`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { openSafetensors, saveSafetensors } from "@modelhost/modelhost/io/safetensors";
 * import { memoryTensorIndex } from "@modelhost/modelhost/core";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const path = `${await Deno.makeTempDir()}/m.safetensors`;
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array(4), [2, 2])]);
 * await saveSafetensors(path, { models: [{ id: "m", metadata: {}, tensors }] });
 * const file = await openSafetensors(path);
 * assert(file.models[0].tensors.info("w").byteLength === 16);
 * file.close();
 * ```
 */
export async function openSafetensors(
  path: string,
  options: OpenSafetensorsOptions = {},
): Promise<SafetensorsFile> {
  const opened: FileByteSource[] = [];
  const close = (): void => {
    for (const s of opened) s.close();
  };
  try {
    const { target, dir } = await locate(path);
    const resolve = resolver(dir, opened);
    let file: ModelFile;
    if (Array.isArray(target)) {
      file = await readSafetensorsShards(target, resolve, {
        id: options.id ?? basename(path),
        verify: options.verify,
      });
    } else {
      const src = await fileSource(target);
      opened.push(src);
      file = await readSafetensors(src, {
        resolve,
        id: options.id,
        verify: options.verify,
      });
    }
    return { ...file, paths: opened.map((s) => s.name), close };
  } catch (e) {
    close();
    throw e;
  }
}

/** What {@link saveSafetensors} wrote. */
export interface SavedSafetensors {
  /** Paths written: the file, or every shard then the index. */
  paths: string[];
  /** Total bytes written. */
  bytes: number;
}

/**
 * Saves a model as SafeTensors, streaming one tensor at a time. Without
 * sharding, `path` is written atomically (temporary file, then rename).
 * When `maxShardSize` splits the model, the shards
 * (`<stem>-00001-of-0000N.safetensors`, `stem` being `path`'s name without
 * `.safetensors`) and `<stem>.safetensors.index.json` go beside `path`: all
 * are written to temporary files first and renamed only when every one is
 * complete, so a failure leaves no partial checkpoint behind.
 *
 * @param path Destination file (its folder receives the shards).
 * @param file The model file (exactly one model).
 * @param options Write options (`dtype`, `sha256`, `maxShardSize`, ...).
 * @returns The paths and bytes written.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { saveSafetensors } from "@modelhost/modelhost/io/safetensors";
 * import { memoryTensorIndex } from "@modelhost/modelhost/core";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const dir = await Deno.makeTempDir();
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array(4), [4])]);
 * const saved = await saveSafetensors(`${dir}/w.safetensors`, { models: [{ id: "m", metadata: {}, tensors }] }, { dtype: "F16" });
 * assert(saved.paths.length === 1 && saved.bytes % 8 === 0);
 * ```
 */
export async function saveSafetensors(
  path: string,
  file: ModelFile,
  options: SafetensorsWriteOptions = {},
): Promise<SavedSafetensors> {
  // Shards are named after the file name without `.safetensors` (only that
  // suffix is stripped); writeModel renames them all into place at once.
  const baseName = basename(path).replace(/\.safetensors$/i, "");
  return await writeModel(safetensorsFormat(), file, path, {
    baseName,
    ...options,
  });
}

/**
 * Validates a SafeTensors file, index or folder on disk: every structural
 * rule, the index against its shards, the modelhost metadata keys and every
 * stored SHA-256.
 *
 * @param path A file, index or folder.
 * @param options Strictness options.
 * @returns The report; `ok` is false when any problem was found.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { saveSafetensors, validateSafetensorsFile } from "@modelhost/modelhost/io/safetensors";
 * import { memoryTensorIndex } from "@modelhost/modelhost/core";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const path = `${await Deno.makeTempDir()}/v.safetensors`;
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array([1, 2]), [2])]);
 * await saveSafetensors(path, { models: [{ id: "m", metadata: {}, tensors }] }, { sha256: true });
 * const report = await validateSafetensorsFile(path);
 * assert(report.ok && report.hashed === 1);
 * ```
 */
export async function validateSafetensorsFile(
  path: string,
  options: Omit<SafetensorsValidateOptions, "resolve"> = {},
): Promise<SafetensorsReport> {
  const opened: FileByteSource[] = [];
  try {
    const { target, dir } = await locate(path);
    const resolve = resolver(dir, opened);
    if (Array.isArray(target)) {
      return await validateSafetensors(target, { ...options, resolve });
    }
    const src = await fileSource(target);
    opened.push(src);
    return await validateSafetensors(src, { ...options, resolve });
  } finally {
    for (const s of opened) s.close();
  }
}
