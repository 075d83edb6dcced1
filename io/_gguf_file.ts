// A GGUF file opened for loading a model: the magic checked first, then a
// small file read whole (one read) and a large one tensor by tensor.

import type { ModelFile } from "../core/model.ts";
import { type ByteSource, memorySource } from "../core/sources.ts";
import { isGguf, readGguf } from "../formats/gguf/mod.ts";

/** Files up to this size are read in one piece; larger ones lazily. */
const READ_WHOLE_BYTES = 64 << 20;

/**
 * Reads the GGUF file behind `src` (its path names it in messages).
 *
 * @throws {TypeError} When the file is not GGUF.
 */
export async function readGgufForLoading(
  src: ByteSource,
  path: string,
): Promise<ModelFile> {
  const head = await src.read(0, Math.min(4, src.size));
  if (!isGguf(head)) {
    throw new TypeError(
      `Cannot load ${path}: not a GGUF file (pass a Hugging Face folder or a .gguf file)`,
    );
  }
  return src.size <= READ_WHOLE_BYTES
    ? await readGguf(memorySource(await src.read(0, src.size), path))
    : await readGguf(src);
}
