/**
 * The `gguf` format plugin and GGUF detection by magic bytes.
 *
 * @module
 */

import type { FormatPlugin } from "../../core/plugin.ts";
import { QUANTIZE_TYPES } from "../../core/quants/mod.ts";
import { readGguf } from "./read.ts";
import { type GgufWriteOptions, writeGguf } from "./write.ts";

/**
 * Whether leading bytes are a GGUF magic.
 *
 * @param head The first bytes of a file.
 * @returns `true` when they start with `"GGUF"`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { isGguf } from "@modelhost/modelhost/formats/gguf";
 * assert(isGguf(new TextEncoder().encode("GGUF\x03\0\0\0")));
 * ```
 */
export function isGguf(head: Uint8Array): boolean {
  return head.length >= 4 && head[0] === 0x47 && head[1] === 0x47 &&
    head[2] === 0x55 && head[3] === 0x46;
}

/**
 * The GGUF format plugin: reads GGUF v2/v3 into a lazy `ModelFile`, writes
 * v3 (quantizing on request).
 *
 * @returns The plugin, named `"gguf"`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufFormat } from "@modelhost/modelhost/formats/gguf";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const reg = createRegistry().use(ggufFormat());
 * assert(reg.formatForPath("model.gguf").name === "gguf");
 * ```
 */
export function ggufFormat(): FormatPlugin {
  return {
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
}

/**
 * The GGUF format plugin under its old name: one plugin object, made by
 * {@link ggufFormat}.
 *
 * @deprecated Use {@link ggufFormat} (`registry.use(ggufFormat)` or
 * `registry.use(ggufFormat())`); this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { gguf } from "@modelhost/modelhost/formats/gguf";
 * assert(gguf.name === "gguf");
 * ```
 */
export const gguf: FormatPlugin = ggufFormat();
