/**
 * File access for Deno: a {@link ByteSource} over a local file that reads
 * only the requested ranges, and atomic writes (temporary file, then
 * rename) so a failure never leaves a half-written model.
 *
 * This is the one module of the library that uses the Deno API.
 *
 * @module
 */

import { dirname } from "@std/path";
import { releaseTemp, sweepStaleTemps, tempPath } from "./_temp.ts";
import type { ByteSource } from "../core/sources.ts";
import { checkRange } from "../core/sources.ts";

/** A byte source over an open file handle; `close()` releases it. */
export interface FileByteSource extends ByteSource {
  /** Closes the file; later reads fail. */
  close(): void;
}

/**
 * Opens a local file as a byte source. Only the requested ranges are read.
 *
 * @param path The file path.
 * @returns The source; call `close()` when done.
 * @throws {Deno.errors.NotFound} When the file does not exist.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fileSource } from "@modelhost/modelhost/io";
 * const path = await Deno.makeTempFile();
 * await Deno.writeFile(path, new Uint8Array([9, 8, 7]));
 * const src = await fileSource(path);
 * assert((await src.read(1, 1))[0] === 8);
 * src.close();
 * ```
 */
export async function fileSource(path: string): Promise<FileByteSource> {
  const file = await Deno.open(path, { read: true });
  const { size } = await file.stat();
  let closed = false;
  let queue: Promise<unknown> = Promise.resolve();
  const readAt = async (
    offset: number,
    length: number,
  ): Promise<Uint8Array> => {
    checkRange(path, size, offset, length);
    const out = new Uint8Array(length);
    await file.seek(offset, Deno.SeekMode.Start);
    let got = 0;
    while (got < length) {
      const n = await file.read(out.subarray(got));
      if (n === null) {
        throw new RangeError(
          `Cannot read ${path}: needs ${length} bytes at offset ${offset}, the file ended after ${got}`,
        );
      }
      got += n;
    }
    return out;
  };
  return {
    name: path,
    size,
    read(offset, length) {
      // Seek + read must not interleave between concurrent callers.
      const p = queue.then(() => readAt(offset, length));
      queue = p.catch(() => {});
      return p;
    },
    close() {
      if (!closed) {
        closed = true;
        file.close();
      }
    },
  };
}

/**
 * Writes bytes or a stream of chunks to `path` atomically: the data goes to a
 * temporary file beside it, which is renamed over `path` only when complete.
 * On failure the temporary file is removed and `path` is untouched.
 *
 * @param path Destination.
 * @param data The bytes, or chunks produced one at a time.
 * @returns The number of bytes written.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { writeFileAtomic } from "@modelhost/modelhost/io";
 * const dir = await Deno.makeTempDir();
 * await writeFileAtomic(`${dir}/a.bin`, new Uint8Array([1, 2]));
 * assert((await Deno.readFile(`${dir}/a.bin`)).length === 2);
 * ```
 */
export async function writeFileAtomic(
  path: string,
  data: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
): Promise<number> {
  // temporary files a killed process left beside the target go first
  await sweepStaleTemps(dirname(path) || ".");
  const tmp = tempPath(path);
  const file = await Deno.open(tmp, {
    write: true,
    create: true,
    truncate: true,
  });
  let written = 0;
  try {
    const chunks = data instanceof Uint8Array ? [data] : data;
    for await (const chunk of chunks) {
      let off = 0;
      while (off < chunk.byteLength) {
        off += await file.write(chunk.subarray(off));
      }
      written += chunk.byteLength;
    }
    await file.sync();
    file.close();
    await Deno.rename(tmp, path);
    releaseTemp(tmp);
    return written;
  } catch (e) {
    try {
      file.close();
    } catch { /* already closed */ }
    await Deno.remove(tmp).catch(() => {});
    releaseTemp(tmp);
    throw e;
  }
}
