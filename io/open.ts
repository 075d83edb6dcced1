/**
 * Opening model files by path or URL with the registry: the format is
 * detected from the leading bytes (magic), then from the extension; a folder
 * (a sharded checkpoint, a Hugging Face model folder) is opened through the
 * first format plugin whose `folderEntry` recognizes its file names.
 *
 * @module
 */

import { releaseTemp, tempPath } from "./_temp.ts";
import { basename, dirname, join } from "@std/path";
import type {
  FormatPlugin,
  ReadOptions,
  WriteOptions,
} from "../core/plugin.ts";
import type { ModelFile } from "../core/model.ts";
import { type ByteSource, httpSource } from "../core/sources.ts";
import type { Registry } from "../registry.ts";
import { fileSource, writeFileAtomic } from "./file.ts";

/**
 * Leading bytes handed to each plugin's `detect`: enough for a transformers
 * `model.safetensors.index.json` whose `"weight_map"` follows a `metadata`
 * object (its `total_size` alone has 9+ digits past 100 MB).
 */
const DETECT_BYTES = 4096;

/** A model file opened for reading, with the source it reads from. */
export interface OpenedModel {
  /** The file as read (tensors load lazily). */
  file: ModelFile;
  /** The format plugin that read it. */
  format: FormatPlugin;
  /** The main source (its size is the file size). */
  source: ByteSource;
  /** The path or URL actually read (a folder resolves to one file inside it). */
  path: string;
  /** Opens a file beside the one read (shards), as handed to the reader. */
  resolve(relativePath: string): Promise<ByteSource>;
  /** Closes every file handle opened for this model. */
  close(): void;
}

/** Options of {@link openModel}. */
export interface OpenModelOptions {
  /** Skip detection and use this format. */
  format?: string;
  /** Extra options passed to the reader. */
  read?: ReadOptions;
}

function isUrl(p: string): boolean {
  return /^https?:\/\//i.test(p);
}

/**
 * Opens a byte source for a local path or an `http(s)://` URL.
 *
 * @param pathOrUrl Where the file is.
 * @returns The source.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { openSource } from "@modelhost/modelhost/io";
 * const path = await Deno.makeTempFile();
 * await Deno.writeFile(path, new Uint8Array(4));
 * const src = await openSource(path);
 * assert(src.size === 4);
 * src.close?.();
 * ```
 */
export function openSource(pathOrUrl: string): Promise<ByteSource> {
  return isUrl(pathOrUrl) ? httpSource(pathOrUrl) : fileSource(pathOrUrl);
}

/**
 * Picks the format plugin for a source: magic bytes first (the first
 * 4096), then a format whose `folderEntry` would pick this file name
 * (`*.safetensors.index.json`), then the file extension.
 *
 * @param registry The registry.
 * @param src The source.
 * @returns The plugin.
 * @throws {TypeError} When neither the bytes nor the extension match a
 * registered format (the message lists them).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { detectFormat } from "@modelhost/modelhost/io";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * import { memorySource } from "@modelhost/modelhost/core";
 * const reg = createRegistry().use({ kind: "format", name: "x", extensions: [".x"], detect: (h) => h[0] === 1 });
 * assert((await detectFormat(reg, memorySource(new Uint8Array([1]), "a.bin"))).name === "x");
 * ```
 */
export async function detectFormat(
  registry: Registry,
  src: ByteSource,
): Promise<FormatPlugin> {
  const head = await src.read(0, Math.min(DETECT_BYTES, src.size));
  const path = src.name.replace(/[?#].*$/, "");
  // A format that picks this very file out of a folder claims it before the
  // bare extension does (model.safetensors.index.json is not a .json bundle).
  const base = path.split(/[\\/]/).pop() ?? "";
  return registry.detect(head) ??
    registry.formats().find((f) => f.folderEntry?.([base]) === base) ??
    registry.formatForPath(path);
}

/**
 * Opens a model file, folder or URL and reads it (lazily: headers now,
 * tensor bytes on demand).
 *
 * @param registry The registry whose format plugins may read it.
 * @param pathOrUrl A file, a folder, or an `http(s)://` URL.
 * @param options Format override and reader options.
 * @returns The opened model; call `close()` when done.
 *
 * @example
 * ```ts ignore
 * import { openModel } from "@modelhost/modelhost/io";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const m = await openModel(defaultRegistry(), "model.safetensors");
 * console.log(m.file.models[0].tensors.names());
 * m.close();
 * ```
 */
export async function openModel(
  registry: Registry,
  pathOrUrl: string,
  options: OpenModelOptions = {},
): Promise<OpenedModel> {
  let path = pathOrUrl;
  if (!isUrl(path)) {
    const st = await Deno.stat(path);
    if (st.isDirectory) {
      const names = [...Deno.readDirSync(path)].filter((e) => e.isFile).map((
        e,
      ) => e.name).sort();
      let entry: string | undefined;
      for (const f of registry.formats()) {
        entry = f.folderEntry?.(names);
        if (entry) break;
      }
      if (!entry) {
        throw new TypeError(
          `Cannot open folder ${path}: no registered format recognizes its files (${
            names.slice(0, 10).join(", ")
          }${names.length > 10 ? ", …" : ""})`,
        );
      }
      path = join(path, entry);
    }
  }
  const opened: ByteSource[] = [];
  const source = await openSource(path);
  opened.push(source);
  const close = () => {
    for (const s of opened) s.close?.();
  };
  try {
    const format = options.format
      ? registry.format(options.format)
      : await detectFormat(registry, source);
    if (!format.read) {
      throw new TypeError(
        `Format "${format.name}" cannot read files (it is write-only)`,
      );
    }
    const resolve = async (rel: string): Promise<ByteSource> => {
      const target = isUrl(path)
        ? new URL(rel, path).href
        : join(dirname(path), rel);
      const s = await openSource(target);
      opened.push(s);
      return s;
    };
    const file = await format.read(source, { resolve, ...options.read });
    file.format ??= format.name;
    return { file, format, source, path, resolve, close };
  } catch (e) {
    close();
    throw e;
  }
}

/** What {@link writeModel} wrote. */
export interface WrittenModel {
  /** Every path written (the main file first). */
  paths: string[];
  /** Total bytes written. */
  bytes: number;
}

/**
 * Writes a model file with a format plugin, atomically: every output goes to
 * a temporary file first and is renamed into place only when all of them
 * are complete, so a failure never leaves a half-written model. A plugin
 * with `writeFiles` may produce several files (shards and an index); they
 * go beside `path`, named from `options.baseName` (default: `path`'s file
 * name without its extension).
 *
 * @param format The plugin (must have `write` or `writeFiles`).
 * @param file The model file.
 * @param path Destination of the main file.
 * @param options Writer options.
 * @returns The paths and bytes written.
 *
 * @example
 * ```ts ignore
 * import { writeModel } from "@modelhost/modelhost/io";
 * await writeModel(registry.format("safetensors"), file, "out.safetensors", { dtype: "F16" });
 * ```
 */
export async function writeModel(
  format: FormatPlugin,
  file: ModelFile,
  path: string,
  options: WriteOptions = {},
): Promise<WrittenModel> {
  if (format.writeFiles) {
    const stem = basename(path).replace(/\.[^.]+$/, "");
    const files = await format.writeFiles(file, { baseName: stem, ...options });
    if (files.length === 1) {
      return {
        paths: [path],
        bytes: await writeFileAtomic(path, files[0].data),
      };
    }
    const dir = dirname(path);
    const done: [string, string][] = [];
    let bytes = 0;
    try {
      for (const f of files) {
        const final = join(dir, f.name);
        const partial = tempPath(final, "partial");
        done.push([partial, final]);
        bytes += await writeFileAtomic(partial, f.data);
      }
    } catch (e) {
      for (const [tmp] of done) {
        await Deno.remove(tmp).catch(() => {});
        releaseTemp(tmp);
      }
      throw e;
    }
    for (const [tmp, final] of done) {
      await Deno.rename(tmp, final);
      releaseTemp(tmp);
    }
    return { paths: done.map(([, final]) => final), bytes };
  }
  if (!format.write) {
    throw new TypeError(`Format "${format.name}" cannot write files`);
  }
  const result = format.write(file, options);
  const data = result instanceof Promise ? await result : result;
  return { paths: [path], bytes: await writeFileAtomic(path, data) };
}
