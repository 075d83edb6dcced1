/**
 * The SafeTensors format plugin: detection from a file's first bytes, the
 * entry file of a checkpoint folder, and the `safetensors` plugin that
 * routes `read`, `validate`, `write` and `writeFiles` to the reader, the
 * validator and the writer.
 *
 * @module
 */

import type { FormatPlugin, OptionSpec } from "../../core/plugin.ts";
import { SAFETENSORS_MAX_HEADER_BYTES } from "./_header.ts";
import { readSafetensors } from "./read.ts";
import { validateSafetensors } from "./validate.ts";
import {
  type SafetensorsWriteOptions,
  writeSafetensors,
  writeSafetensorsShards,
} from "./write.ts";

/**
 * Whether the first bytes of a file look like SafeTensors: a plausible
 * 8-byte header length followed by `{` (after optional JSON whitespace), or
 * a sharded checkpoint's index JSON (it mentions `"weight_map"`).
 *
 * @param head The file's first bytes (16 or more for a reliable answer).
 * @returns Whether the SafeTensors reader should be tried.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { detectSafetensors } from "@modelhost/modelhost/formats/safetensors";
 * const head = new Uint8Array([2, 0, 0, 0, 0, 0, 0, 0, 0x7b, 0x7d]);
 * assert(detectSafetensors(head));
 * assert(!detectSafetensors(new TextEncoder().encode("GGUF")));
 * ```
 */
export function detectSafetensors(head: Uint8Array): boolean {
  if (head.byteLength >= 9) {
    const n = new DataView(head.buffer, head.byteOffset, 8).getBigUint64(
      0,
      true,
    );
    if (n >= 2n && n <= BigInt(SAFETENSORS_MAX_HEADER_BYTES)) {
      const end = Math.min(head.byteLength, 8 + Number(n));
      for (let i = 8; i < end; i++) {
        const b = head[i];
        if (b === 0x7b) return true;
        if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) break;
      }
    }
  }
  let i = 0;
  while (
    i < head.byteLength &&
    (head[i] === 0x20 || head[i] === 0x0a || head[i] === 0x0d ||
      head[i] === 0x09)
  ) i++;
  if (head[i] !== 0x7b) return false;
  const text = new TextDecoder().decode(head);
  return text.includes('"weight_map"');
}

/** Options of the {@link safetensorsFormat} plugin factory. */
export interface SafetensorsPluginOptions {
  /** Write options applied under every `write` call's own options. @default {{}} */
  write?: SafetensorsWriteOptions;
}

const OPTIONS: readonly OptionSpec[] = [
  {
    name: "dtype",
    type: "string",
    description:
      "convert float weights to this dtype when writing (I8 stores per-row scales)",
    choices: ["F32", "F16", "BF16", "F64", "F8_E4M3", "F8_E5M2", "F4", "I8"],
  },
  {
    name: "sha256",
    type: "boolean",
    description: "store each tensor's SHA-256 in __metadata__ for validate",
    default: false,
  },
  {
    name: "verify",
    type: "boolean",
    use: "read",
    description:
      'check tensors against __metadata__["modelhost.sha256"] and the header against "modelhost.header_sha256" while reading',
    default: true,
  },
  {
    name: "maxShardSize",
    type: "number",
    description:
      "split the model into shards of at most this many data bytes, plus an index",
  },
  {
    name: "format",
    type: "string",
    description:
      '__metadata__["format"], the framework tag transformers checks',
    default: "pt",
  },
];

/**
 * Picks the file to open in a checkpoint folder: an index
 * (`model.safetensors.index.json` first), else the only `.safetensors` file.
 *
 * @param names File names in the folder.
 * @returns The name to read, or `undefined` when the folder is not a
 * SafeTensors checkpoint (or holds several files without an index).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { safetensorsFolderEntry } from "@modelhost/modelhost/formats/safetensors";
 * assert(safetensorsFolderEntry(["config.json", "model.safetensors"]) === "model.safetensors");
 * ```
 */
export function safetensorsFolderEntry(
  names: readonly string[],
): string | undefined {
  if (names.includes("model.safetensors.index.json")) {
    return "model.safetensors.index.json";
  }
  const index = names.find((n) => n.endsWith(".safetensors.index.json"));
  if (index) return index;
  const files = names.filter((n) => n.endsWith(".safetensors"));
  return files.length === 1 ? files[0] : undefined;
}

/**
 * The SafeTensors format plugin: reads single files and sharded
 * checkpoints (through `options.resolve`), writes one file as a stream.
 *
 * @param options Default write options.
 * @returns The plugin, named `"safetensors"`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { safetensorsFormat } from "@modelhost/modelhost/formats/safetensors";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const reg = createRegistry().use(safetensorsFormat());
 * assert(reg.formatForPath("model.safetensors").name === "safetensors");
 * ```
 */
export function safetensorsFormat(
  options: SafetensorsPluginOptions = {},
): FormatPlugin {
  return {
    kind: "format",
    name: "safetensors",
    description:
      "SafeTensors (.safetensors, sharded index.json): lazy and ranged reads, streaming writes",
    extensions: [".safetensors"],
    detect: detectSafetensors,
    folderEntry: safetensorsFolderEntry,
    read: (src, readOptions) => readSafetensors(src, readOptions),
    validate: async (src, readOptions) => {
      const report = await validateSafetensors(src, {
        resolve: readOptions?.resolve,
      });
      return report.problems.map((p) =>
        `${p.file}${
          p.tensor === undefined ? "" : ` tensor "${p.tensor}"`
        }: ${p.message}`
      );
    },
    write: (file, writeOptions) =>
      writeSafetensors(file, { ...options.write, ...writeOptions }),
    writeFiles: async (file, writeOptions) => {
      const plan = await writeSafetensorsShards(file, {
        ...options.write,
        ...writeOptions,
      });
      return [
        ...plan.shards.map((s) => ({ name: s.fileName, data: s.chunks() })),
        ...(plan.index
          ? [{ name: plan.index.fileName, data: plan.index.bytes }]
          : []),
      ];
    },
    options: OPTIONS,
  };
}

/**
 * The SafeTensors format plugin factory under its old name.
 *
 * @deprecated Use {@link safetensorsFormat}; this alias goes in the next
 * release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { safetensors, safetensorsFormat } from "@modelhost/modelhost/formats/safetensors";
 * assert(safetensors === safetensorsFormat);
 * ```
 */
export const safetensors: typeof safetensorsFormat = safetensorsFormat;
