/**
 * Deno-side file access: byte sources over local files, atomic writes, and
 * opening model files, folders or URLs through the registry.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fileSource } from "@modelhost/modelhost/io";
 * const path = await Deno.makeTempFile();
 * await Deno.writeFile(path, new Uint8Array([1, 2, 3]));
 * const src = await fileSource(path);
 * assert(src.size === 3);
 * src.close();
 * ```
 *
 * @module
 */

export * from "./file.ts";
export * from "./open.ts";
export * from "./transformer.ts";
export * from "./quant_pool.ts";
export * from "./encoder.ts";
export * from "./blas.ts";
