/**
 * Bundle files for Deno: {@link saveBundleFile} writes atomically (a
 * temporary file beside the target, renamed over it when complete) and
 * streams the text without building one large string;
 * {@link loadBundleFile} reads a bundle (ours or Loom's) from disk.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { loadBundleFile, saveBundleFile } from "@modelhost/modelhost/io/bundle";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const path = `${await Deno.makeTempDir()}/m.bundle.json`;
 * const w = tensorFromF32("layers.0.weight", new Float32Array([1, 2, 3, 4]), [2, 2]);
 * await saveBundleFile(path, [{ id: "m", tensors: [w] }]);
 * const file = await loadBundleFile(path, "m");
 * assert(file.models[0].tensors.info("layers.0.weight").byteLength === 16);
 * ```
 *
 * @module
 */

import type { ModelFile } from "../core/model.ts";
import {
  bundleBytes,
  type BundleFile,
  type BundleModelInput,
  loadBundle,
  type LoadBundleOptions,
  saveBundleChunks,
  type SaveBundleOptions,
} from "../formats/bundle/mod.ts";
import { writeFileAtomic } from "./file.ts";

/**
 * Writes models to a bundle file atomically: on any failure the target is
 * left as it was.
 *
 * @param path Destination path (`.bundle.json` by convention).
 * @param models The models, or a `ModelFile`.
 * @param options Storage dtype, metadata and checksum options.
 * @returns The number of bytes written.
 * @throws {TypeError} On a missing or repeated id or a value the dtype cannot hold.
 * @throws {RangeError} When a tensor's bytes do not match its dtype and shape.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { saveBundleFile } from "@modelhost/modelhost/io/bundle";
 * const path = `${await Deno.makeTempDir()}/empty.bundle.json`;
 * const n = await saveBundleFile(path, [{ id: "empty", tensors: [] }]);
 * assert(n === (await Deno.stat(path)).size);
 * ```
 */
export async function saveBundleFile(
  path: string,
  models: readonly BundleModelInput[] | ModelFile,
  options: SaveBundleOptions = {},
): Promise<number> {
  const parts = await saveBundleChunks(models, options);
  return await writeFileAtomic(path, bundleBytes(parts));
}

/**
 * Reads a bundle file (modelhost's or Loom's).
 *
 * @param path The file.
 * @param id When given, only this model is decoded and returned; a missing
 * id throws a `RangeError` that lists the ids present.
 * @param options Checksum verification and Loom conversion options.
 * @returns The bundle.
 * @throws {Deno.errors.NotFound} When the file does not exist.
 * @throws {SyntaxError} When the file is not JSON or tensor data is not base64.
 * @throws {TypeError} When it is not a bundle, or an entry is malformed.
 * @throws {RangeError} On an unknown id or data that does not fit dtype × shape.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { loadBundleFile, saveBundleFile } from "@modelhost/modelhost/io/bundle";
 * const path = `${await Deno.makeTempDir()}/two.bundle.json`;
 * await saveBundleFile(path, [{ id: "a", tensors: [] }, { id: "b", tensors: [] }]);
 * const ids = (await loadBundleFile(path)).models.map((m) => m.id);
 * assert(ids.join() === "a,b");
 * ```
 */
export async function loadBundleFile(
  path: string,
  id?: string,
  options: LoadBundleOptions = {},
): Promise<BundleFile> {
  const bytes = await Deno.readFile(path);
  try {
    return await loadBundle(bytes, id, options);
  } catch (e) {
    if (e instanceof Error && e.message.startsWith("Cannot read bundle:")) {
      const Ctor = e.constructor as new (msg: string) => Error;
      throw new Ctor(
        e.message.replace("Cannot read bundle:", `Cannot read ${path}:`),
      );
    }
    throw e;
  }
}
