/**
 * The `bundle` format plugin and bundle detection from a file's first
 * bytes.
 *
 * @module
 */

import type { DTypeName } from "../../core/dtypes.ts";
import type { ModelFile } from "../../core/model.ts";
import type {
  FormatPlugin,
  OptionSpec,
  ReadOptions,
  WriteOptions,
} from "../../core/plugin.ts";
import type { ByteSource } from "../../core/sources.ts";
import { saveBundleChunks, type SaveBundleOptions } from "./write.ts";
import { loadBundle } from "./read.ts";
import { validateBundle } from "./validate.ts";

const HEAD_PATTERN =
  /^\uFEFF?\s*\{\s*(?:"[^"\\]*"\s*:\s*(?:"(?:[^"\\]|\\.)*"|-?[0-9.eE+-]+|true|false|null)\s*,\s*)*"type"\s*:\s*"modelhost\/bundle"/;

/**
 * Whether the first bytes of a file look like a bundle: a JSON object whose
 * `type` member, before any nested value, is `"modelhost/bundle"` (how both
 * modelhost and Loom write it).
 *
 * @param head The first bytes of the file (a few hundred are enough).
 * @returns True for a bundle.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { detectBundle } from "@modelhost/modelhost/formats/bundle";
 * const head = new TextEncoder().encode('{\n  "type": "modelhost/bundle",\n  "version": 1');
 * assert(detectBundle(head) && !detectBundle(new TextEncoder().encode('{"a": [1]}')));
 * ```
 */
export function detectBundle(head: Uint8Array): boolean {
  const text = new TextDecoder().decode(head.subarray(0, 4096));
  return HEAD_PATTERN.test(text);
}

async function* encodeChunks(parts: string[]): AsyncIterable<Uint8Array> {
  const enc = new TextEncoder();
  let small: string[] = [];
  let smallLength = 0;
  for (const p of parts) {
    if (p.length >= 65536) {
      if (small.length) yield enc.encode(small.join(""));
      small = [];
      smallLength = 0;
      yield enc.encode(p);
    } else {
      small.push(p);
      smallLength += p.length;
      if (smallLength >= 65536) {
        yield enc.encode(small.join(""));
        small = [];
        smallLength = 0;
      }
    }
  }
  if (small.length) yield enc.encode(small.join(""));
}

/**
 * Encodes bundle pieces (from {@link saveBundleChunks}) as UTF-8 chunks,
 * small pieces grouped so a writer makes few calls.
 *
 * @param parts The pieces.
 * @returns The chunks, in order.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { bundleBytes, saveBundleChunks } from "@modelhost/modelhost/formats/bundle";
 * let n = 0;
 * for await (const c of bundleBytes(await saveBundleChunks([]))) n += c.length;
 * assert(n > 0);
 * ```
 */
export function bundleBytes(parts: string[]): AsyncIterable<Uint8Array> {
  return encodeChunks(parts);
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

const STORABLE = [
  "F64",
  "F32",
  "F16",
  "BF16",
  "F8_E4M3",
  "F8_E5M2",
  "F4",
  "I64",
  "I32",
  "I16",
  "I8",
  "U64",
  "U32",
  "U16",
  "U8",
  "BOOL",
] as const;

const OPTIONS: readonly OptionSpec[] = [
  {
    name: "dtype",
    type: "string",
    description:
      "Stored dtype of every tensor (I8/U8 affine with scale and zero point, F4 with block scales); default: keep each tensor's dtype",
    choices: STORABLE,
  },
  {
    name: "created",
    type: "boolean",
    description: "Record the current time as metadata.created",
    default: false,
  },
  {
    name: "id",
    type: "string",
    description: "Read only the model with this id",
    use: "read",
  },
  {
    name: "verify",
    type: "boolean",
    description: "Check each tensor's SHA-256 while reading",
    use: "read",
    default: true,
  },
];

/** The bundle plugin: a format plugin whose `validate` is always there. */
export interface BundleFormatPlugin extends FormatPlugin {
  /** Every problem of a bundle file, as {@link validateBundle} lists them. */
  validate(src: ByteSource): Promise<string[]>;
}

/**
 * The bundle format plugin (`.bundle.json`, `.json`; detected by its
 * leading `"type": "modelhost/bundle"`). A factory, like every format
 * plugin: `registry.use(bundleFormat)` calls it.
 *
 * @returns The plugin, named `"bundle"`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { bundleFormat } from "@modelhost/modelhost/formats/bundle";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const reg = createRegistry().use(bundleFormat);
 * assert(reg.formatForPath("model.bundle.json").name === "bundle");
 * assert(bundleFormat().extensions.includes(".bundle.json"));
 * ```
 */
export function bundleFormat(): BundleFormatPlugin {
  return {
    kind: "format",
    name: "bundle",
    description:
      "modelhost bundle: JSON with configs, metadata and base64 tensors of several models (reads Loom bundles too)",
    extensions: [".bundle.json", ".json"],
    detect: detectBundle,
    async read(src: ByteSource, options?: ReadOptions): Promise<ModelFile> {
      const bytes = await src.read(0, src.size);
      const file = await loadBundle(bytes, str(options?.id), {
        verify: options?.verify === false ? false : true,
      });
      return file;
    },
    write(file: ModelFile, options?: WriteOptions): AsyncIterable<Uint8Array> {
      const opts: SaveBundleOptions = {};
      if (typeof options?.dtype === "string" && options.dtype !== "") {
        opts.dtype = options.dtype as DTypeName;
      }
      if (options?.created === true) opts.created = true;
      if (typeof options?.producer === "string") {
        opts.producer = options.producer;
      }
      return (async function* () {
        yield* encodeChunks(await saveBundleChunks(file, opts));
      })();
    },
    async validate(src: ByteSource): Promise<string[]> {
      return await validateBundle(await src.read(0, src.size));
    },
    options: OPTIONS,
  };
}
