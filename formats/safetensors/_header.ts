/**
 * SafeTensors header decoding and validation: every check runs here, before
 * any tensor byte is read. The checks and their order follow the reference
 * reader (huggingface/safetensors, `SafeTensors::read_metadata` and
 * `Metadata::validate`); the module doc of `safetensors.ts` lists where we
 * are stricter.
 *
 * @module
 */

import {
  dtypeFromSafetensors,
  type DTypeInfo,
  type DTypeName,
  DTYPES,
} from "../../core/dtypes.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import {
  type JsonObject,
  jsonTypeOf,
  type JsonValue,
  parseStrictJson,
} from "./_strict_json.ts";

/**
 * Largest header accepted, in bytes: the reference reader's `MAX_HEADER_SIZE`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { SAFETENSORS_MAX_HEADER_BYTES } from "@modelhost/modelhost/formats/safetensors";
 * assert(SAFETENSORS_MAX_HEADER_BYTES === 100_000_000);
 * ```
 */
export const SAFETENSORS_MAX_HEADER_BYTES = 100_000_000;

/** Bytes of the little-endian u64 that opens every file. */
const LENGTH_BYTES = 8;
/** Sizes in the header are u64 in the reference; anything above is an overflow. */
const U64_MAX = (1n << 64n) - 1n;
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);
/** The key the format reserves for the string-to-string metadata map. */
export const METADATA_KEY = "__metadata__";
const ENTRY_FIELDS = ["dtype", "shape", "data_offsets"] as const;

/** One tensor entry of a validated header. */
export interface SafetensorsTensorEntry {
  /** Tensor name (the header key). */
  name: string;
  /** Element type. */
  dtype: DTypeName;
  /** Dimensions, outermost first. */
  shape: number[];
  /** `[begin, end]` of the data, relative to the start of the data section. */
  dataOffsets: [number, number];
  /** Absolute offset of the first byte in the file (`8 + headerLength + begin`). */
  byteOffset: number;
  /** `end - begin`. */
  byteLength: number;
}

/** A validated SafeTensors header. */
export interface SafetensorsHeader {
  /** Length of the JSON header in bytes (the u64 at offset 0). */
  headerLength: number;
  /** Absolute offset of the data section (`8 + headerLength`). */
  dataOffset: number;
  /** Length of the data section; equals the end of the last tensor. */
  dataLength: number;
  /** The `__metadata__` map, or `undefined` when absent or `null`. */
  metadata?: Record<string, string>;
  /** The tensors in header order. */
  tensors: SafetensorsTensorEntry[];
}

function bytes(n: bigint): string {
  return n === 1n ? "1 byte" : `${n} bytes`;
}

function fileLabel(name: string): string {
  return `SafeTensors file ${name}`;
}

/**
 * Reads and checks the header length from the first 8 bytes of a file.
 *
 * @param first8 The file's first bytes (fewer than 8 when the file is shorter).
 * @param fileSize Size of the whole file.
 * @param name File name for messages.
 * @returns The header length `n`; bytes `8 .. 8 + n` hold the JSON.
 * @throws {RangeError} When the file is shorter than 8 bytes, `n` exceeds
 * {@link SAFETENSORS_MAX_HEADER_BYTES}, or `8 + n` runs past the file.
 */
export function headerLengthOf(
  first8: Uint8Array,
  fileSize: number,
  name: string,
): number {
  if (fileSize < LENGTH_BYTES || first8.byteLength < LENGTH_BYTES) {
    throw new RangeError(
      `Cannot read ${
        fileLabel(name)
      }: it has ${fileSize} bytes, too small for the 8-byte header length`,
    );
  }
  const n = new DataView(first8.buffer, first8.byteOffset, LENGTH_BYTES)
    .getBigUint64(0, true);
  if (n > BigInt(SAFETENSORS_MAX_HEADER_BYTES)) {
    throw new RangeError(
      `Cannot read ${
        fileLabel(name)
      }: header length ${n} is larger than the ${SAFETENSORS_MAX_HEADER_BYTES}-byte limit`,
    );
  }
  const len = Number(n);
  if (LENGTH_BYTES + len > fileSize) {
    throw new RangeError(
      `Cannot read ${
        fileLabel(name)
      }: header length ${len} runs past the end of the file (needs ${
        LENGTH_BYTES + len
      } bytes, the file has ${fileSize})`,
    );
  }
  return len;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Decodes and validates the JSON header.
 *
 * @param json The header bytes (`8 .. 8 + n` of the file).
 * @param fileSize Size of the whole file; the tensors must cover exactly
 * `fileSize - 8 - n` bytes.
 * @param name File name for messages.
 * @returns The validated header.
 */
export function decodeHeader(
  json: Uint8Array,
  fileSize: number,
  name: string,
): SafetensorsHeader {
  const headerLength = json.byteLength;
  let text: string;
  try {
    text = UTF8.decode(json);
  } catch {
    throw new SyntaxError(
      `Cannot parse the header of ${
        fileLabel(name)
      }: its ${headerLength} bytes are not valid UTF-8`,
    );
  }
  let root: JsonValue;
  try {
    root = parseStrictJson(text);
  } catch (e) {
    throw new SyntaxError(
      `Cannot parse the header of ${fileLabel(name)}: invalid JSON, ${
        (e as Error).message
      }`,
    );
  }
  if (!(root instanceof Map)) {
    throw new TypeError(
      `Invalid header in ${fileLabel(name)}: expected a JSON object, got ${
        jsonTypeOf(root)
      }`,
    );
  }
  return validateHeader(root, headerLength, fileSize, name);
}

interface Pending {
  name: string;
  dtype: DTypeInfo;
  shape: bigint[];
  begin: bigint;
  end: bigint;
}

function tensorLabel(name: string, file: string): string {
  return `tensor ${JSON.stringify(name)} in ${fileLabel(file)}`;
}

function readMetadata(
  v: JsonValue,
  file: string,
): Record<string, string> | undefined {
  if (v === null) return undefined; // the reference reads null as "no metadata"
  if (!(v instanceof Map)) {
    throw new TypeError(
      `Invalid ${METADATA_KEY} in ${
        fileLabel(file)
      }: expected an object of strings, got ${jsonTypeOf(v)}`,
    );
  }
  const out: [string, string][] = [];
  for (const [k, val] of v) {
    if (typeof val !== "string") {
      throw new TypeError(
        `Invalid ${METADATA_KEY} in ${fileLabel(file)}: the value of ${
          JSON.stringify(k)
        } must be a string, got ${jsonTypeOf(val)}`,
      );
    }
    out.push([k, val]);
  }
  return Object.fromEntries(out);
}

function readEntry(key: string, v: JsonValue, file: string): Pending {
  const where = tensorLabel(key, file);
  if (!(v instanceof Map)) {
    throw new TypeError(
      `Invalid ${where}: expected an object with dtype, shape and data_offsets, got ${
        jsonTypeOf(v)
      }`,
    );
  }
  for (const f of ENTRY_FIELDS) {
    if (!v.has(f)) {
      throw new TypeError(`Invalid ${where}: missing field "${f}"`);
    }
  }
  for (const f of v.keys()) {
    if (!(ENTRY_FIELDS as readonly string[]).includes(f)) {
      throw new TypeError(
        `Invalid ${where}: unexpected field ${
          JSON.stringify(f)
        } (allowed: dtype, shape, data_offsets)`,
      );
    }
  }
  const code = v.get("dtype")!;
  if (typeof code !== "string") {
    throw new TypeError(
      `Invalid ${where}: dtype must be a string, got ${jsonTypeOf(code)}`,
    );
  }
  const dtype = dtypeFromSafetensors(code);
  if (!dtype) {
    const known = DTYPES.filter((d) => d.safetensors).map((d) => d.safetensors);
    throw new UnsupportedDTypeError(
      code,
      `${where} uses a dtype that is not a SafeTensors dtype here; known: ${
        known.join(", ")
      }`,
    );
  }
  const shapeV = v.get("shape")!;
  if (!Array.isArray(shapeV)) {
    throw new TypeError(
      `Invalid ${where}: shape must be an array of integers, got ${
        jsonTypeOf(shapeV)
      }`,
    );
  }
  const shape: bigint[] = [];
  for (let i = 0; i < shapeV.length; i++) {
    const d = shapeV[i];
    if (typeof d !== "bigint" || d < 0n || d > U64_MAX) {
      throw new RangeError(
        `Invalid ${where}: shape dimension ${i} is ${
          typeof d === "bigint" || typeof d === "number"
            ? String(d)
            : jsonTypeOf(d)
        }, expected an integer in 0..2^64-1`,
      );
    }
    shape.push(d);
  }
  const offV = v.get("data_offsets")!;
  if (
    !Array.isArray(offV) || offV.length !== 2 ||
    !offV.every((o) => typeof o === "bigint")
  ) {
    throw new TypeError(
      `Invalid ${where}: data_offsets must be [begin, end], two integers, got ${
        Array.isArray(offV)
          ? `[${
            offV.map((o) => typeof o === "bigint" ? String(o) : jsonTypeOf(o))
              .join(", ")
          }]`
          : jsonTypeOf(offV)
      }`,
    );
  }
  const [begin, end] = offV as bigint[];
  if (begin < 0n || end < 0n || begin > U64_MAX || end > U64_MAX) {
    throw new RangeError(
      `Invalid ${where}: data_offsets [${begin}, ${end}] must be integers in 0..2^64-1`,
    );
  }
  return { name: key, dtype, shape, begin, end };
}

function validateHeader(
  root: JsonObject,
  headerLength: number,
  fileSize: number,
  file: string,
): SafetensorsHeader {
  let metadata: Record<string, string> | undefined;
  const pending: Pending[] = [];
  for (const [key, v] of root) {
    if (key === METADATA_KEY) metadata = readMetadata(v, file);
    else pending.push(readEntry(key, v, file));
  }

  // The reference sorts by (begin, end) and walks the data section in order.
  const byOffset = pending.map((p, i) => ({ p, i })).sort((a, b) =>
    a.p.begin < b.p.begin
      ? -1
      : a.p.begin > b.p.begin
      ? 1
      : a.p.end < b.p.end
      ? -1
      : a.p.end > b.p.end
      ? 1
      : a.i - b.i
  );
  let cursor = 0n;
  let previous: string | undefined;
  for (const { p } of byOffset) {
    const where = tensorLabel(p.name, file);
    if (p.end < p.begin) {
      throw new RangeError(
        `Invalid ${where}: data_offsets [${p.begin}, ${p.end}] end before they begin`,
      );
    }
    if (p.begin > cursor) {
      throw new RangeError(
        `Invalid ${where}: data_offsets [${p.begin}, ${p.end}] leave a hole of ${
          bytes(p.begin - cursor)
        } after ${
          previous === undefined
            ? "the start of the data section"
            : `tensor ${JSON.stringify(previous)}, which ends at ${cursor}`
        }`,
      );
    }
    if (p.begin < cursor) {
      throw new RangeError(
        `Invalid ${where}: data_offsets [${p.begin}, ${p.end}] overlap tensor ${
          JSON.stringify(previous)
        }, which ends at ${cursor}`,
      );
    }
    cursor = p.end;
    previous = p.name;

    let count = 1n;
    for (const d of p.shape) {
      count *= d;
      if (count > U64_MAX) {
        throw new RangeError(
          `Invalid ${where}: the element count of shape [${
            p.shape.join(", ")
          }] overflows 64 bits`,
        );
      }
    }
    const bits = count * BigInt(p.dtype.blockBytes * 8);
    if (bits > U64_MAX * BigInt(p.dtype.blockSize)) {
      throw new RangeError(
        `Invalid ${where}: the byte size of ${p.dtype.name} [${
          p.shape.join(", ")
        }] overflows 64 bits`,
      );
    }
    if (count % BigInt(p.dtype.blockSize) !== 0n) {
      throw new RangeError(
        `Invalid ${where}: ${p.dtype.name} packs ${p.dtype.blockSize} elements per ${p.dtype.blockBytes}-byte block; ${count} elements do not fill whole blocks`,
      );
    }
    const need = count / BigInt(p.dtype.blockSize) *
      BigInt(p.dtype.blockBytes);
    if (p.end - p.begin !== need) {
      throw new RangeError(
        `Invalid ${where}: ${p.dtype.name} [${
          p.shape.join(", ")
        }] needs ${need} bytes, data_offsets [${p.begin}, ${p.end}] give ${
          p.end - p.begin
        }`,
      );
    }
  }

  const dataOffset = LENGTH_BYTES + headerLength;
  const dataLength = fileSize - dataOffset;
  if (cursor !== BigInt(dataLength)) {
    throw new RangeError(
      cursor < BigInt(dataLength)
        ? `Invalid ${
          fileLabel(file)
        }: the tensors cover ${cursor} bytes of a ${dataLength}-byte data section; ${
          BigInt(dataLength) - cursor
        } trailing bytes belong to no tensor`
        : `Invalid ${
          fileLabel(file)
        }: the tensors need ${cursor} bytes of data, the file has ${dataLength} after the header`,
    );
  }

  const tensors: SafetensorsTensorEntry[] = pending.map((p) => {
    const shape = p.shape.map((d, i) => {
      if (d > SAFE_MAX) {
        throw new RangeError(
          `Cannot read ${
            tensorLabel(p.name, file)
          }: shape dimension ${i} is ${d}, above 2^53-1, the largest size a JavaScript number holds exactly`,
        );
      }
      return Number(d);
    });
    // Offsets fit: they are at most the file size.
    const begin = Number(p.begin), end = Number(p.end);
    return {
      name: p.name,
      dtype: p.dtype.name,
      shape,
      dataOffsets: [begin, end],
      byteOffset: dataOffset + begin,
      byteLength: end - begin,
    };
  });
  return { headerLength, dataOffset, dataLength, metadata, tensors };
}
