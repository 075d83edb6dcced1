/**
 * Lazy SafeTensors reading: the header is read and validated up front, each
 * tensor's bytes only when it is loaded. Single files and sharded
 * checkpoints (`model.safetensors.index.json` + shards) open the same way.
 *
 * @module
 */

import { setOwn } from "../../core/_own.ts";
import { checkJsonDepth } from "../../core/_json_depth.ts";
import type {
  Model,
  ModelFile,
  NetworkConfig,
  TensorIndex,
  TensorInfo,
} from "../../core/model.ts";
import type { ReadOptions } from "../../core/plugin.ts";
import type { ByteSource } from "../../core/sources.ts";
import type { DTypeName } from "../../core/dtypes.ts";
import type { QuantParams, Tensor } from "../../core/tensor.ts";
import {
  decodeHeader,
  headerLengthOf,
  SAFETENSORS_MAX_HEADER_BYTES,
  type SafetensorsHeader,
  type SafetensorsTensorEntry,
} from "./_header.ts";
import { digestTensorsOf, HEADER_SHA256_KEY, headerDigest } from "./_digest.ts";

/**
 * `__metadata__` keys modelhost reads and writes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { SAFETENSORS_KEYS } from "@modelhost/modelhost/formats/safetensors";
 * assert(`${SAFETENSORS_KEYS.provenance}seed` === "modelhost.provenance.seed");
 * ```
 */
export const SAFETENSORS_KEYS = {
  /** The network config, a JSON object (`NetworkConfig`). */
  config: "modelhost.config",
  /** Quantization params per tensor: JSON `{ name: { scale, zero_point?, axis?, block_size? } }`. */
  quant: "modelhost.quant",
  /** SHA-256 of each tensor's stored bytes: JSON `{ name: "<64 hex digits>" }`. */
  sha256: "modelhost.sha256",
  /**
   * SHA-256 over every tensor's name, dtype, shape and byte digest and the
   * `modelhost.quant` text (64 hex digits; see `docs/formats/safetensors.md`).
   */
  headerSha256: HEADER_SHA256_KEY,
  /** Prefix of provenance keys (`modelhost.provenance.git_commit`, ...). */
  provenance: "modelhost.provenance.",
} as const;

/** Options of {@link readSafetensors}. */
export interface SafetensorsReadOptions extends ReadOptions {
  /**
   * Opens a file beside the one being read (the shards named by an index).
   * Needed only to read an index. @default {undefined}
   */
  resolve?: (relativePath: string) => Promise<ByteSource>;
  /** Id of the returned model. @default {the file name without its extensions} */
  id?: string;
  /**
   * Check each tensor's bytes against `__metadata__["modelhost.sha256"]`
   * when it is loaded, and, at open, every tensor's dtype and shape and the
   * `modelhost.quant` text against `modelhost.header_sha256` (files without
   * those keys read as before, a file with only the byte map has its bytes
   * checked; a map that leaves a tensor out, or a header digest without a
   * byte map, is refused). @default {true}
   */
  verify?: boolean;
}

/**
 * Reads and validates the header of a SafeTensors file: two reads, the
 * 8-byte length and the JSON, and nothing of the tensor data.
 *
 * @param src The file.
 * @returns The validated header.
 * @throws {RangeError} On a bad header length, offsets or sizes.
 * @throws {SyntaxError} When the header is not UTF-8 JSON.
 * @throws {TypeError} On a wrong header structure.
 * @throws {UnsupportedDTypeError} On an unknown dtype.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readSafetensorsHeader } from "@modelhost/modelhost/formats/safetensors";
 * import { memorySource } from "@modelhost/modelhost/core";
 * const json = '{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}';
 * const bytes = new Uint8Array([json.length, 0, 0, 0, 0, 0, 0, 0, ...new TextEncoder().encode(json), 7, 9]);
 * const header = await readSafetensorsHeader(memorySource(bytes));
 * assert(header.tensors[0].byteOffset === 8 + json.length);
 * ```
 */
export async function readSafetensorsHeader(
  src: ByteSource,
): Promise<SafetensorsHeader> {
  const first = await src.read(0, Math.min(8, src.size));
  return await headerAfter(src, first);
}

async function headerAfter(
  src: ByteSource,
  first: Uint8Array,
): Promise<SafetensorsHeader> {
  const n = headerLengthOf(first, src.size, src.name);
  const json = await src.read(8, n);
  return decodeHeader(json, src.size, src.name);
}

/**
 * Whether leading bytes are JSON text (an index file) rather than a
 * SafeTensors file. A SafeTensors header length under the 100 MB limit has
 * zero bytes in its top half, which JSON text never contains.
 */
export function isJsonText(first: Uint8Array): boolean {
  if (first.byteLength === 0) return false;
  let sawBrace = false;
  for (const b of first) {
    if (b < 0x09) return false;
    if (!sawBrace && b === 0x7b) sawBrace = true;
    else if (
      !sawBrace && b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09
    ) {
      return false;
    }
  }
  return sawBrace;
}

function baseName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? name;
  return base.split("?")[0];
}

function idFrom(name: string): string {
  const stem = baseName(name).replace(/\.safetensors(\.index\.json)?$/i, "")
    .replace(/\.json$/i, "");
  return stem === "" || stem.startsWith("<") ? "model" : stem;
}

function parseJsonKey(
  metadata: Record<string, string>,
  key: string,
  file: string,
): unknown {
  let v: unknown;
  try {
    v = JSON.parse(metadata[key]);
  } catch (e) {
    throw new SyntaxError(
      `Cannot read __metadata__[${
        JSON.stringify(key)
      }] of ${file}: invalid JSON, ${(e as Error).message}`,
    );
  }
  checkJsonDepth(v, `__metadata__[${JSON.stringify(key)}] of ${file}`);
  return v;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Decodes the `modelhost.config` entry of a metadata map.
 *
 * @param metadata The `__metadata__` map.
 * @param file File name for messages.
 * @returns The config, or `undefined` when the key is absent.
 */
export function configFromMetadata(
  metadata: Record<string, string> | undefined,
  file: string,
): NetworkConfig | undefined {
  if (!metadata || !Object.hasOwn(metadata, SAFETENSORS_KEYS.config)) {
    return undefined;
  }
  const v = parseJsonKey(metadata, SAFETENSORS_KEYS.config, file);
  if (!isPlainObject(v) || !Array.isArray(v.layers)) {
    throw new TypeError(
      `Invalid __metadata__["${SAFETENSORS_KEYS.config}"] in ${file}: expected a network config object with a "layers" array`,
    );
  }
  return v as NetworkConfig;
}

function numberList(
  v: unknown,
  what: string,
): number | Float32Array {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (
    Array.isArray(v) &&
    v.every((x) => typeof x === "number" && Number.isFinite(x))
  ) {
    return Float32Array.from(v as number[]);
  }
  throw new TypeError(`${what} must be a finite number or an array of them`);
}

/**
 * Decodes the `modelhost.quant` entry of a metadata map and checks each
 * entry against its tensor's shape.
 *
 * @param metadata The `__metadata__` map.
 * @param tensors The file's tensors by name.
 * @param file File name for messages.
 * @returns Quantization params by tensor name.
 */
export function quantFromMetadata(
  metadata: Record<string, string> | undefined,
  tensors: ReadonlyMap<string, { shape: number[] }>,
  file: string,
): Map<string, QuantParams> {
  const out = new Map<string, QuantParams>();
  if (!metadata || !Object.hasOwn(metadata, SAFETENSORS_KEYS.quant)) return out;
  const v = parseJsonKey(metadata, SAFETENSORS_KEYS.quant, file);
  const where = `__metadata__["${SAFETENSORS_KEYS.quant}"] in ${file}`;
  if (!isPlainObject(v)) {
    throw new TypeError(
      `Invalid ${where}: expected an object keyed by tensor name`,
    );
  }
  for (const [name, q] of Object.entries(v)) {
    const t = tensors.get(name);
    const at = `Invalid ${where}: entry ${JSON.stringify(name)}`;
    if (!t) throw new TypeError(`${at} names no tensor of this file`);
    if (!isPlainObject(q)) throw new TypeError(`${at} must be an object`);
    for (const k of Object.keys(q)) {
      if (!["scale", "zero_point", "axis", "block_size"].includes(k)) {
        throw new TypeError(`${at} has an unknown field ${JSON.stringify(k)}`);
      }
    }
    const params: QuantParams = { scale: numberList(q.scale, `${at}: scale`) };
    if (q.zero_point !== undefined) {
      params.zeroPoint = numberList(q.zero_point, `${at}: zero_point`);
    }
    for (const k of ["axis", "block_size"] as const) {
      const x = q[k];
      if (x === undefined) continue;
      if (!Number.isSafeInteger(x) || (x as number) < (k === "axis" ? 0 : 1)) {
        throw new TypeError(
          `${at}: ${k} must be a ${
            k === "axis" ? "non-negative" : "positive"
          } integer`,
        );
      }
      if (k === "axis") params.axis = x as number;
      else params.blockSize = x as number;
    }
    let count = 1;
    for (const d of t.shape) count *= d;
    const want = params.blockSize !== undefined
      ? Math.ceil(count / params.blockSize)
      : t.shape[params.axis ?? 0];
    for (
      const [k, arr] of [["scale", params.scale], [
        "zero_point",
        params.zeroPoint,
      ]] as const
    ) {
      if (arr instanceof Float32Array && arr.length !== want) {
        throw new TypeError(
          `${at}: ${arr.length} ${k} values for shape [${
            t.shape.join(", ")
          }], expected ${want}`,
        );
      }
    }
    out.set(name, params);
  }
  return out;
}

/** One opened file of a checkpoint. */
interface Part {
  src: ByteSource;
  header: SafetensorsHeader;
  /** Name relative to the index, or the source name for a single file. */
  file: string;
}

interface Located {
  part: Part;
  entry: SafetensorsTensorEntry;
  quant?: QuantParams;
  /** The recorded SHA-256, checked on load. */
  sha256?: string;
}

const HEX64 = /^[0-9a-f]{64}$/;

async function sha256Of(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  let s = "";
  for (const b of d) s += b.toString(16).padStart(2, "0");
  return s;
}

/** The recorded digests of one file, every tensor covered, or an empty map when it records none. */
function digestsOf(part: Part): Map<string, string> {
  const out = new Map<string, string>();
  const meta = part.header.metadata;
  if (!meta || !Object.hasOwn(meta, SAFETENSORS_KEYS.sha256)) return out;
  const key = `__metadata__["${SAFETENSORS_KEYS.sha256}"] of ${part.file}`;
  const v = parseJsonKey(meta, SAFETENSORS_KEYS.sha256, part.file);
  if (!isPlainObject(v)) {
    throw new TypeError(
      `Cannot verify ${key}: expected an object of tensor name to hex digest (pass verify: false to read without checking)`,
    );
  }
  for (const t of part.header.tensors) {
    const d = Object.hasOwn(v, t.name) ? v[t.name] : undefined;
    if (typeof d !== "string" || !HEX64.test(d)) {
      throw new TypeError(
        `Cannot verify tensor ${JSON.stringify(t.name)}: ${key} ${
          d === undefined
            ? "has no digest for it"
            : "holds no 64-digit hex digest for it"
        } (it lists ${
          Object.keys(v).length
        } of ${part.header.tensors.length} tensors; pass verify: false to read without checking)`,
      );
    }
    out.set(t.name, d);
  }
  return out;
}

/**
 * Checks `modelhost.header_sha256`, when recorded, against the file's
 * tensors (names, dtypes, shapes, byte digests) and `modelhost.quant` text.
 */
async function checkHeaderDigest(
  part: Part,
  bytes: Map<string, string>,
): Promise<void> {
  const meta = part.header.metadata;
  if (!meta || !Object.hasOwn(meta, SAFETENSORS_KEYS.headerSha256)) return;
  const key =
    `__metadata__["${SAFETENSORS_KEYS.headerSha256}"] of ${part.file}`;
  const want = meta[SAFETENSORS_KEYS.headerSha256];
  if (!HEX64.test(want)) {
    throw new TypeError(
      `Cannot verify ${key}: expected 64 lower-case hex digits, got ${
        JSON.stringify(want.slice(0, 80))
      } (pass verify: false to read without checking)`,
    );
  }
  if (part.header.tensors.length > 0 && bytes.size === 0) {
    throw new TypeError(
      `Cannot verify ${key}: the file records a header digest but no __metadata__["${SAFETENSORS_KEYS.sha256}"] (a removed checksum; pass verify: false to read without checking)`,
    );
  }
  const quant = Object.hasOwn(meta, SAFETENSORS_KEYS.quant)
    ? meta[SAFETENSORS_KEYS.quant]
    : undefined;
  const got = await headerDigest(
    digestTensorsOf(part.header.tensors, bytes),
    quant,
  );
  if (got !== want) {
    throw new RangeError(
      `Checksum mismatch in the header of ${part.file}: ${key} records ${want}, the ${part.header.tensors.length} tensors' names, dtypes, shapes and byte digests with __metadata__["${SAFETENSORS_KEYS.quant}"] hash to ${got} (a relabelled dtype or shape, or edited quantization fields; pass verify: false to read without checking)`,
    );
  }
}

function indexOf(located: Map<string, Located>): TensorIndex {
  const missing = (name: string): RangeError => {
    const known = [...located.keys()];
    const list = known.length > 20
      ? `${known.slice(0, 20).join(", ")}, …`
      : known.join(", ");
    return new RangeError(
      `No tensor named "${name}" (${known.length} tensors: ${list || "none"})`,
    );
  };
  return {
    names: () => [...located.keys()],
    has: (name) => located.has(name),
    info(name): TensorInfo {
      const l = located.get(name);
      if (!l) throw missing(name);
      return {
        name,
        dtype: l.entry.dtype,
        shape: [...l.entry.shape],
        byteLength: l.entry.byteLength,
        byteOffset: l.entry.byteOffset,
      };
    },
    async load(name): Promise<Tensor> {
      const l = located.get(name);
      if (!l) throw missing(name);
      const bytes = await l.part.src.read(
        l.entry.byteOffset,
        l.entry.byteLength,
      );
      if (l.sha256 !== undefined) {
        const got = await sha256Of(bytes);
        if (got !== l.sha256) {
          throw new RangeError(
            `Checksum mismatch in tensor ${
              JSON.stringify(name)
            } of ${l.part.file}: __metadata__["${SAFETENSORS_KEYS.sha256}"] records ${l.sha256}, its ${bytes.byteLength} bytes hash to ${got}`,
          );
        }
      }
      const t: Tensor = {
        name,
        dtype: l.entry.dtype,
        shape: [...l.entry.shape],
        bytes,
      };
      if (l.quant) t.quant = l.quant;
      return t;
    },
  };
}

/** Merges JSON-map metadata keys (quant, sha256) across shards. */
function mergeMetadata(parts: Part[]): Record<string, string> {
  const out: Record<string, string> = {};
  const maps = new Map<string, Record<string, unknown>>();
  for (const p of parts) {
    const m = p.header.metadata;
    if (!m) continue;
    for (const [k, v] of Object.entries(m)) {
      if (k === SAFETENSORS_KEYS.headerSha256) continue; // per shard, checked at open
      if (k === SAFETENSORS_KEYS.quant || k === SAFETENSORS_KEYS.sha256) {
        const parsed = parseJsonKey(m, k, p.file);
        if (!isPlainObject(parsed)) continue; // reported by the per-file checks
        maps.set(k, { ...maps.get(k), ...parsed });
      } else if (!Object.hasOwn(out, k)) {
        setOwn(out, k, v);
      }
    }
  }
  for (const [k, v] of maps) {
    const sorted = Object.fromEntries(
      Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    setOwn(out, k, JSON.stringify(sorted));
  }
  return out;
}

async function buildModel(
  id: string,
  parts: Part[],
  only: Map<string, string> | undefined,
  verify: boolean,
): Promise<Model> {
  const located = new Map<string, Located>();
  for (const part of parts) {
    const byName = new Map(part.header.tensors.map((t) => [t.name, t]));
    const quant = quantFromMetadata(part.header.metadata, byName, part.file);
    const digests = verify ? digestsOf(part) : new Map<string, string>();
    if (verify) await checkHeaderDigest(part, digests);
    for (const entry of part.header.tensors) {
      if (only && only.get(entry.name) !== part.file) continue;
      if (located.has(entry.name)) {
        throw new TypeError(
          `Cannot open the checkpoint: tensor ${
            JSON.stringify(entry.name)
          } is in both ${located.get(entry.name)!.part.file} and ${part.file}`,
        );
      }
      located.set(entry.name, {
        part,
        entry,
        quant: quant.get(entry.name),
        sha256: digests.get(entry.name),
      });
    }
  }
  let ordered = located;
  if (only) {
    ordered = new Map();
    for (const [name, file] of only) {
      const l = located.get(name);
      if (!l) {
        throw new RangeError(
          `Cannot open the checkpoint: tensor ${
            JSON.stringify(name)
          } is listed in the index for ${file}, but that shard has no such tensor`,
        );
      }
      ordered.set(name, l);
    }
  }
  const metadata = parts.length === 1
    ? { ...parts[0].header.metadata }
    : mergeMetadata(parts);
  const config = configFromMetadata(
    metadata,
    parts.map((p) => p.file).join(", "),
  );
  const model: Model = { id, metadata, tensors: indexOf(ordered) };
  if (config) model.config = config;
  return model;
}

/** A parsed `model.safetensors.index.json`. */
export interface SafetensorsIndex {
  /** The index's own `metadata` object (`total_size`, ...). */
  metadata: Record<string, unknown>;
  /** Tensor name to shard file, in index order. */
  weightMap: Map<string, string>;
}

/**
 * Checks a shard name from an index: a relative path that stays inside the
 * index's folder.
 */
function checkShardName(file: string, index: string): void {
  if (
    file === "" || file.startsWith("/") || file.startsWith("\\") ||
    /^[a-zA-Z]:/.test(file) ||
    file.split(/[\\/]/).some((s) => s === ".." || s === "")
  ) {
    throw new TypeError(
      `Invalid index ${index}: shard name ${
        JSON.stringify(file)
      } must be a relative path inside the index's folder`,
    );
  }
}

/**
 * Parses the text of a `model.safetensors.index.json`.
 *
 * @param bytes The index file's bytes.
 * @param name File name for messages.
 * @returns The index.
 * @throws {SyntaxError} When it is not JSON.
 * @throws {TypeError} When `weight_map` is not an object of relative file names.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseSafetensorsIndex } from "@modelhost/modelhost/formats/safetensors";
 * const text = '{"metadata":{"total_size":8},"weight_map":{"w":"model-00001-of-00001.safetensors"}}';
 * const index = parseSafetensorsIndex(new TextEncoder().encode(text));
 * assert(index.weightMap.get("w") === "model-00001-of-00001.safetensors");
 * ```
 */
export function parseSafetensorsIndex(
  bytes: Uint8Array,
  name = "<index>",
): SafetensorsIndex {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    throw new SyntaxError(
      `Cannot parse index ${name}: ${(e as Error).message}`,
    );
  }
  checkJsonDepth(v, `index ${name}`);
  if (!isPlainObject(v) || !isPlainObject(v.weight_map)) {
    throw new TypeError(
      `Invalid index ${name}: expected an object with a "weight_map" object`,
    );
  }
  if (v.metadata !== undefined && !isPlainObject(v.metadata)) {
    throw new TypeError(`Invalid index ${name}: "metadata" must be an object`);
  }
  const weightMap = new Map<string, string>();
  for (const [t, f] of Object.entries(v.weight_map)) {
    if (typeof f !== "string") {
      throw new TypeError(
        `Invalid index ${name}: weight_map[${
          JSON.stringify(t)
        }] must be a file name, got ${typeof f}`,
      );
    }
    checkShardName(f, name);
    weightMap.set(t, f);
  }
  return { metadata: (v.metadata ?? {}) as Record<string, unknown>, weightMap };
}

/** Opens every shard file once, in first-mention order, and reads its header. */
async function openParts(
  files: readonly string[],
  resolve: (relativePath: string) => Promise<ByteSource>,
): Promise<Part[]> {
  const parts: Part[] = [];
  for (const file of files) {
    const src = await resolve(file);
    parts.push({ src, file, header: await readSafetensorsHeader(src) });
  }
  return parts;
}

/**
 * Reads a SafeTensors file, or a sharded checkpoint from its
 * `model.safetensors.index.json` (shards opened with `options.resolve`).
 * Only headers are read; each tensor's bytes are read when it is loaded,
 * as a fresh buffer from a file or HTTP source (aligned) or a zero-copy
 * view from a memory source (see {@link typedArrayOf} for typed views).
 *
 * @param src The file or index.
 * @param options Shard resolver and model id.
 * @returns A model file with one lazily loaded model.
 * @throws {RangeError} On a bad header length, offsets or sizes, or a
 * tensor listed in the index but missing from its shard.
 * @throws {SyntaxError} When a header is not UTF-8 JSON.
 * @throws {TypeError} On a wrong header structure, or an index without `resolve`.
 * @throws {UnsupportedDTypeError} On an unknown dtype.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readSafetensors } from "@modelhost/modelhost/formats/safetensors";
 * import { memorySource } from "@modelhost/modelhost/core";
 * const json = '{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}';
 * const bytes = new Uint8Array([json.length, 0, 0, 0, 0, 0, 0, 0, ...new TextEncoder().encode(json), 7, 9]);
 * const file = await readSafetensors(memorySource(bytes));
 * const x = await file.models[0].tensors.load("x");
 * assert(x.bytes[1] === 9);
 * ```
 */
export async function readSafetensors(
  src: ByteSource,
  options: SafetensorsReadOptions = {},
): Promise<ModelFile> {
  const first = await src.read(0, Math.min(8, src.size));
  if (isJsonText(first)) {
    if (src.size > SAFETENSORS_MAX_HEADER_BYTES) {
      throw new RangeError(
        `Cannot read index ${src.name}: ${src.size} bytes is larger than the ${SAFETENSORS_MAX_HEADER_BYTES}-byte limit`,
      );
    }
    const index = parseSafetensorsIndex(await src.read(0, src.size), src.name);
    if (!options.resolve) {
      throw new TypeError(
        `Cannot read index ${src.name}: opening its shards needs options.resolve`,
      );
    }
    const files = [...new Set(index.weightMap.values())];
    const parts = await openParts(files, options.resolve);
    return {
      format: "safetensors",
      models: [
        await buildModel(
          options.id ?? idFrom(src.name),
          parts,
          index.weightMap,
          options.verify ?? true,
        ),
      ],
    };
  }
  const header = await headerAfter(src, first);
  const part: Part = { src, header, file: src.name };
  return {
    format: "safetensors",
    models: [
      await buildModel(
        options.id ?? idFrom(src.name),
        [part],
        undefined,
        options.verify ?? true,
      ),
    ],
  };
}

/** Options of {@link readSafetensorsShards}. */
export interface SafetensorsShardsOptions {
  /** Id of the returned model. @default {"model"} */
  id?: string;
  /** Check tensors against `modelhost.sha256` on load and the header against `modelhost.header_sha256` (see {@link SafetensorsReadOptions}). @default {true} */
  verify?: boolean;
}

/**
 * Reads several SafeTensors files as one model (a folder of shards with no
 * index). A tensor name found in two files is an error.
 *
 * @param files Relative names of the files, opened with `resolve`.
 * @param resolve Opens one file.
 * @param options Model id.
 * @returns A model file with one lazily loaded model.
 * @throws {TypeError} When two files hold a tensor of the same name.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readSafetensorsShards, serializeSafetensors } from "@modelhost/modelhost/formats/safetensors";
 * import { memorySource, memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * const one = (name: string) =>
 *   serializeSafetensors({ models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex([tensorFromF32(name, new Float32Array(2), [2])]) }] });
 * const files = new Map([["a.safetensors", await one("a")], ["b.safetensors", await one("b")]]);
 * const file = await readSafetensorsShards([...files.keys()], (f) => Promise.resolve(memorySource(files.get(f)!, f)));
 * assert(file.models[0].tensors.names().join() === "a,b");
 * ```
 */
export async function readSafetensorsShards(
  files: readonly string[],
  resolve: (relativePath: string) => Promise<ByteSource>,
  options: SafetensorsShardsOptions = {},
): Promise<ModelFile> {
  const parts = await openParts(files, resolve);
  return {
    format: "safetensors",
    models: [
      await buildModel(
        options.id ?? "model",
        parts,
        undefined,
        options.verify ?? true,
      ),
    ],
  };
}

/** A typed array over a tensor's stored elements. */
export type StoredArray =
  | Float64Array
  | Float32Array
  | Float16Array
  | BigInt64Array
  | BigUint64Array
  | Int32Array
  | Uint32Array
  | Int16Array
  | Uint16Array
  | Int8Array
  | Uint8Array;

type ArrayCtor = {
  readonly BYTES_PER_ELEMENT: number;
  new (buffer: ArrayBuffer, byteOffset: number, length: number): StoredArray;
};

const ARRAY_OF: Partial<Record<DTypeName, ArrayCtor>> = {
  F64: Float64Array,
  F32: Float32Array,
  F16: Float16Array,
  BF16: Uint16Array,
  I64: BigInt64Array,
  U64: BigUint64Array,
  I32: Int32Array,
  U32: Uint32Array,
  I16: Int16Array,
  U16: Uint16Array,
  I8: Int8Array,
};

/**
 * A typed array over a tensor's stored elements: a zero-copy view when the
 * bytes sit at an offset aligned to the element size (always the case for
 * tensors read from a file or HTTP, and for our own files read from
 * memory), a copy otherwise. BF16 comes as raw `Uint16Array` codes; U8,
 * BOOL, F8 and packed F4 (two codes per byte, low nibble first) as
 * `Uint8Array`. Quantization params are not applied: use `toFloat32`.
 *
 * @param t The tensor.
 * @returns The elements.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { typedArrayOf } from "@modelhost/modelhost/formats/safetensors";
 * const bytes = new Uint8Array(new Int16Array([-3, 7]).buffer);
 * const a = typedArrayOf({ name: "t", dtype: "I16", shape: [2], bytes });
 * assert(a instanceof Int16Array && a[0] === -3 && a.buffer === bytes.buffer);
 * ```
 */
export function typedArrayOf(t: Tensor): StoredArray {
  const Ctor = ARRAY_OF[t.dtype];
  if (!Ctor) return t.bytes;
  const size = Ctor.BYTES_PER_ELEMENT;
  const b = t.bytes.byteOffset % size === 0 &&
      t.bytes.buffer instanceof ArrayBuffer
    ? t.bytes
    : t.bytes.slice();
  return new Ctor(
    b.buffer as ArrayBuffer,
    b.byteOffset,
    Math.floor(b.byteLength / size),
  );
}
