/**
 * The GGUF header parser: magic, version, metadata of every type, tensor
 * infos, alignment and data offset. It reads only the header through a
 * {@link ByteSource}, in windows that grow as needed, and checks every count,
 * length and offset against the file size before allocating.
 *
 * @module
 */

import { dtypeFromGguf, DTYPES } from "../../core/dtypes.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import type { ByteSource } from "../../core/sources.ts";
import {
  DEFAULT_ALIGNMENT,
  GGUF_TYPE_NAMES,
  type GgufArray,
  type GgufHeader,
  type GgufMetadataEntry,
  type GgufTensorInfo,
  GgufType,
  type GgufValue,
  isGgufType,
  MAX_ALIGNMENT,
  MAX_ARRAY_DEPTH,
  MAX_DIMS,
  MAX_KEY_BYTES,
  MAX_STRING_BYTES,
  MAX_TENSOR_NAME_BYTES,
} from "./types.ts";

/** Options of {@link readGgufHeader}. */
export interface ReadGgufHeaderOptions {
  /** Bytes read in the first request; later windows grow as the header needs. @default {2 MiB} */
  initialRead?: number;
  /**
   * Return the header of a file whose data section is cut short (a partial
   * download) instead of throwing; the first missing tensor is described
   * in `truncated`. Loading a missing tensor still fails. @default {false}
   */
  allowTruncated?: boolean;
}

/**
 * Thrown inside the parser when the window ends before the data does: `end`
 * is the absolute offset the window must reach.
 */
class NeedMore {
  constructor(readonly end: number) {}
}

const TWO_POW_32 = 4294967296;

/** Bytes one element of a scalar type takes (strings and arrays: their smallest encoding). */
const MIN_ITEM_BYTES = [1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8];

/** A window of the file: `buf[0]` is the byte at absolute offset `base`. */
class Window {
  buf: Uint8Array;
  view: DataView;
  base: number;
  pos: number;
  constructor(
    readonly name: string,
    readonly size: number,
    buf: Uint8Array,
    base: number,
  ) {
    this.buf = buf;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.base = base;
    this.pos = base;
  }

  /** Local index of `n` bytes at the cursor; checks the file, then the window. */
  take(n: number, what: () => string): number {
    const local = this.pos - this.base;
    if (local + n > this.buf.length) {
      if (this.pos + n > this.size) {
        throw new RangeError(
          `Cannot read ${this.name}: ${what()} needs ${n} bytes at offset ${this.pos}, the file has ${
            Math.max(0, this.size - this.pos)
          } left`,
        );
      }
      throw new NeedMore(this.pos + n);
    }
    this.pos += n;
    return local;
  }

  u8(what: () => string): number {
    return this.buf[this.take(1, what)];
  }
  u32(what: () => string): number {
    return this.view.getUint32(this.take(4, what), true);
  }
  /** A u64 as a number; past 2^53 - 1 it is a RangeError naming `what`. */
  u64(what: () => string): number {
    const at = this.pos;
    const i = this.take(8, what);
    const lo = this.view.getUint32(i, true);
    const hi = this.view.getUint32(i + 4, true);
    if (hi > 0x1fffff) {
      throw new RangeError(
        `Cannot read ${this.name}: ${what()} at offset ${at} is ${
          this.view.getBigUint64(i, true)
        }, past 2^53-1`,
      );
    }
    return hi * TWO_POW_32 + lo;
  }
}

const utf8 = new TextDecoder("utf-8");
const utf8Fatal = new TextDecoder("utf-8", { fatal: true });

/** Decodes UTF-8 bytes (invalid bytes become U+FFFD, as gguf-py does); pure ASCII takes a fast path. */
function decodeUtf8(buf: Uint8Array, start: number, len: number): string {
  if (len <= 32) {
    let ascii = true;
    for (let j = start; j < start + len; j++) {
      if (buf[j] >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) {
      return String.fromCharCode.apply(
        null,
        buf.subarray(start, start + len) as unknown as number[],
      );
    }
  }
  return utf8.decode(buf.subarray(start, start + len));
}

function readString(
  w: Window,
  max: number,
  what: () => string,
): string {
  const at = w.pos;
  const len = w.u64(what);
  if (len > max) {
    throw new RangeError(
      `Cannot read ${w.name}: ${what()} at offset ${at} is ${len} bytes long, the limit is ${max}`,
    );
  }
  const i = w.take(len, what);
  return decodeUtf8(w.buf, i, len);
}

/**
 * Reads `count` strings. Their bytes are copied into one buffer with an
 * ASCII separator after each (so no UTF-8 sequence spans two strings),
 * decoded with one call, and sliced; an invalid string anywhere sends the
 * whole array to the per-string decoder.
 */
function readStringArray(
  w: Window,
  count: number,
  what: () => string,
): string[] {
  const buf = w.buf;
  const view = w.view;
  const starts = new Int32Array(count);
  const lens = new Int32Array(count);
  let p = w.pos - w.base;
  let total = 0;
  let maxLen = 0;
  const first = p;
  // Past the window, ask for the whole array at once, estimated from the
  // bytes per item seen so far, instead of growing a window at a time.
  const short = (need: number, i: number): NeedMore => {
    const perItem = i > 0 ? (p - first) / i : 16;
    const guess = w.base + first + Math.ceil(perItem * count * 1.05) + 64;
    return new NeedMore(Math.min(w.size, Math.max(need, guess)));
  };
  for (let i = 0; i < count; i++) {
    if (p + 8 > buf.length) {
      w.pos = w.base + p;
      if (w.pos + 8 <= w.size) throw short(w.pos + 8, i);
      w.take(8, () => `${what()} item ${i} length`);
    }
    const lo = view.getUint32(p, true);
    const hi = view.getUint32(p + 4, true);
    if (hi !== 0 || lo > MAX_STRING_BYTES) {
      throw new RangeError(
        `Cannot read ${w.name}: ${what()} item ${i} at offset ${
          w.base + p
        } is ${
          hi * TWO_POW_32 + lo
        } bytes long, the limit is ${MAX_STRING_BYTES}`,
      );
    }
    if (p + 8 + lo > buf.length) {
      w.pos = w.base + p + 8;
      if (w.pos + lo <= w.size) throw short(w.pos + lo, i);
      w.take(lo, () => `${what()} item ${i}`);
    }
    starts[i] = p + 8;
    lens[i] = lo;
    total += lo;
    if (lo > maxLen) maxLen = lo;
    p += 8 + lo;
  }
  w.pos = w.base + p;

  const out = new Array<string>(count);
  if (maxLen < 128 && count > 0) {
    // Every length prefix is then 8 ASCII bytes: the payload decodes as one
    // text in which each prefix is 8 code units and separates the strings.
    let text: string | undefined;
    try {
      text = utf8Fatal.decode(buf.subarray(first, p));
    } catch {
      text = undefined;
    }
    if (text !== undefined) {
      if (text.length === p - first) {
        // Pure ASCII: units are bytes.
        for (let i = 0; i < count; i++) {
          const a = starts[i] - first;
          out[i] = text.substring(a, a + lens[i]);
        }
        return out;
      }
      let u = 0;
      for (let i = 0; i < count; i++) {
        u += 8;
        const a = u;
        const s = starts[i];
        const e = s + lens[i];
        for (let j = s; j < e; j++) {
          const b = buf[j];
          // UTF-16 units of valid UTF-8: one per lead byte, two for 4-byte sequences.
          u += ((b & 0xc0) !== 0x80 ? 1 : 0) + (b >= 0xf0 ? 1 : 0);
        }
        out[i] = text.substring(a, u);
      }
      if (u === text.length) return out;
    }
    for (let i = 0; i < count; i++) {
      out[i] = utf8.decode(buf.subarray(starts[i], starts[i] + lens[i]));
    }
    return out;
  }
  const cat = new Uint8Array(total + count);
  const ends = new Int32Array(count);
  let q = 0;
  let units = 0;
  for (let i = 0; i < count; i++) {
    const s = starts[i];
    const e = s + lens[i];
    for (let j = s; j < e; j++) {
      const b = buf[j];
      cat[q++] = b;
      // UTF-16 units of valid UTF-8: one per lead byte, two for 4-byte sequences.
      units += ((b & 0xc0) !== 0x80 ? 1 : 0) + (b >= 0xf0 ? 1 : 0);
    }
    ends[i] = units;
    cat[q++] = 0x0a;
    units++;
  }
  let text: string | undefined;
  try {
    text = utf8Fatal.decode(cat);
  } catch {
    text = undefined;
  }
  if (text !== undefined && text.length === units) {
    let start = 0;
    for (let i = 0; i < count; i++) {
      out[i] = text.substring(start, ends[i]);
      start = ends[i] + 1;
    }
  } else {
    for (let i = 0; i < count; i++) {
      out[i] = utf8.decode(buf.subarray(starts[i], starts[i] + lens[i]));
    }
  }
  return out;
}

function readNumberArray(
  w: Window,
  type: GgufType,
  count: number,
  what: () => string,
): GgufValue[] {
  const size = MIN_ITEM_BYTES[type];
  const i = w.take(count * size, what);
  const v = w.view;
  const out = new Array<GgufValue>(count);
  switch (type) {
    case GgufType.UINT8:
      for (let k = 0; k < count; k++) out[k] = v.getUint8(i + k);
      break;
    case GgufType.INT8:
      for (let k = 0; k < count; k++) out[k] = v.getInt8(i + k);
      break;
    case GgufType.UINT16:
      for (let k = 0; k < count; k++) out[k] = v.getUint16(i + 2 * k, true);
      break;
    case GgufType.INT16:
      for (let k = 0; k < count; k++) out[k] = v.getInt16(i + 2 * k, true);
      break;
    case GgufType.UINT32:
      for (let k = 0; k < count; k++) out[k] = v.getUint32(i + 4 * k, true);
      break;
    case GgufType.INT32:
      for (let k = 0; k < count; k++) out[k] = v.getInt32(i + 4 * k, true);
      break;
    case GgufType.FLOAT32:
      for (let k = 0; k < count; k++) out[k] = v.getFloat32(i + 4 * k, true);
      break;
    case GgufType.BOOL:
      for (let k = 0; k < count; k++) out[k] = v.getUint8(i + k) !== 0;
      break;
    case GgufType.UINT64:
      for (let k = 0; k < count; k++) {
        out[k] = v.getBigUint64(i + 8 * k, true);
      }
      break;
    case GgufType.INT64:
      for (let k = 0; k < count; k++) out[k] = v.getBigInt64(i + 8 * k, true);
      break;
    case GgufType.FLOAT64:
      for (let k = 0; k < count; k++) out[k] = v.getFloat64(i + 8 * k, true);
      break;
  }
  return out;
}

function readValue(
  w: Window,
  type: GgufType,
  depth: number,
  what: () => string,
): GgufValue {
  switch (type) {
    case GgufType.UINT8:
      return w.u8(what);
    case GgufType.INT8:
      return w.view.getInt8(w.take(1, what));
    case GgufType.UINT16:
      return w.view.getUint16(w.take(2, what), true);
    case GgufType.INT16:
      return w.view.getInt16(w.take(2, what), true);
    case GgufType.UINT32:
      return w.u32(what);
    case GgufType.INT32:
      return w.view.getInt32(w.take(4, what), true);
    case GgufType.FLOAT32:
      return w.view.getFloat32(w.take(4, what), true);
    case GgufType.BOOL:
      return w.u8(what) !== 0;
    case GgufType.STRING:
      return readString(w, MAX_STRING_BYTES, what);
    case GgufType.UINT64:
      return w.view.getBigUint64(w.take(8, what), true);
    case GgufType.INT64:
      return w.view.getBigInt64(w.take(8, what), true);
    case GgufType.FLOAT64:
      return w.view.getFloat64(w.take(8, what), true);
    case GgufType.ARRAY:
      return readArray(w, depth + 1, what);
  }
}

function readArray(w: Window, depth: number, what: () => string): GgufArray {
  const at = w.pos;
  if (depth > MAX_ARRAY_DEPTH) {
    throw new RangeError(
      `Cannot read ${w.name}: ${what()} at offset ${at} nests arrays ${depth} deep, the limit is ${MAX_ARRAY_DEPTH}`,
    );
  }
  const type = w.u32(() => `${what()} element type`);
  if (!isGgufType(type)) {
    throw new SyntaxError(
      `Cannot read ${w.name}: ${what()} at offset ${at} has unknown element type ${type} (known: 0..12)`,
    );
  }
  const count = w.u64(() => `${what()} length`);
  const need = count * MIN_ITEM_BYTES[type];
  const left = w.size - w.pos;
  if (need > left) {
    throw new RangeError(
      `Cannot read ${w.name}: ${what()} at offset ${at} declares ${count} ${
        GGUF_TYPE_NAMES[type]
      } items, which need at least ${need} bytes; the file has ${left} left`,
    );
  }
  let items: GgufValue[];
  if (type === GgufType.STRING) {
    items = readStringArray(w, count, what);
  } else if (type === GgufType.ARRAY) {
    items = new Array<GgufValue>(count);
    for (let k = 0; k < count; k++) {
      items[k] = readArray(w, depth + 1, () => `${what()} item ${k}`);
    }
  } else {
    items = readNumberArray(w, type, count, what);
  }
  return { type, items };
}

/** Minimum bytes of one key-value pair: key length (empty key), value type, a 1-byte value. */
const MIN_KV_BYTES = 8 + 4 + 1;
/** Minimum bytes of one tensor info: name length, n_dims, type, offset. */
const MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8;

function checkCount(
  w: Window,
  count: number,
  minBytes: number,
  what: string,
  at: number,
): void {
  const left = w.size - w.pos;
  if (count * minBytes > left) {
    throw new RangeError(
      `Cannot read ${w.name}: the header at offset ${at} declares ${count} ${what}, which need at least ${
        count * minBytes
      } bytes; the file has ${left} left`,
    );
  }
}

/**
 * Parses a whole GGUF header held in memory (the file's bytes, or at least
 * everything before the tensor data).
 *
 * @param bytes The file's leading bytes.
 * @param name Name for messages.
 * @param fileSize Size of the whole file. @default bytes.length
 * @returns The header.
 * @throws {SyntaxError} Bad magic, unsupported version, big-endian file, unknown value type, duplicate key or tensor.
 * @throws {RangeError} A count, length, dimension or offset the file cannot hold.
 * @throws {UnsupportedDTypeError} An unknown ggml type id.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseGgufHeader } from "@modelhost/modelhost/formats/gguf";
 * const bytes = new Uint8Array([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0, ...new Array(16).fill(0)]);
 * assert(parseGgufHeader(bytes).version === 3);
 * ```
 */
export function parseGgufHeader(
  bytes: Uint8Array,
  name = "<memory>",
  fileSize: number = bytes.length,
): GgufHeader {
  const p = new HeaderParser(name, fileSize, bytes);
  try {
    return p.run();
  } catch (e) {
    if (e instanceof NeedMore) {
      throw new RangeError(
        `Cannot read ${name}: the header needs bytes up to offset ${e.end}, only ${bytes.length} were given`,
      );
    }
    throw e;
  }
}

/**
 * Reads the header of a GGUF file through a byte source, asking only for the
 * ranges the header occupies: a first window, then larger ones while a value
 * runs past it. Tensor data is not read.
 *
 * @param src The source.
 * @param options Window size.
 * @returns The header.
 * @throws {SyntaxError} Bad magic, unsupported version, big-endian file, unknown value type, duplicate key or tensor.
 * @throws {RangeError} A count, length, dimension or offset the file cannot hold.
 * @throws {UnsupportedDTypeError} An unknown ggml type id.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readGgufHeader } from "@modelhost/modelhost/formats/gguf";
 * import { memorySource } from "@modelhost/modelhost/core";
 * const bytes = new Uint8Array([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0, ...new Array(16).fill(0)]);
 * const h = await readGgufHeader(memorySource(bytes));
 * assert(h.tensors.length === 0 && h.alignment === 32);
 * ```
 */
export async function readGgufHeader(
  src: ByteSource,
  options: ReadGgufHeaderOptions = {},
): Promise<GgufHeader> {
  const first = Math.min(src.size, options.initialRead ?? 2 * 1024 * 1024);
  const p = new HeaderParser(src.name, src.size, await src.read(0, first));
  p.allowTruncated = options.allowTruncated ?? false;
  for (;;) {
    try {
      return p.run();
    } catch (e) {
      if (!(e instanceof NeedMore)) throw e;
      await p.grow(src, e.end);
    }
  }
}

/**
 * A resumable parser: `run` parses from the last completed item, and a
 * {@link NeedMore} leaves that state untouched so `grow` + `run` continues.
 */
class HeaderParser {
  w: Window;
  stage = 0;
  version = 0;
  tensorCount = 0;
  kvCount = 0;
  metadata: GgufMetadataEntry[] = [];
  keys = new Set<string>();
  tensors: GgufTensorInfo[] = [];
  tensorNames = new Set<string>();
  alignment = DEFAULT_ALIGNMENT;
  /** Absolute offset of the item being parsed (where a retry restarts). */
  itemStart = 0;
  allowTruncated = false;

  constructor(readonly name: string, readonly size: number, bytes: Uint8Array) {
    this.w = new Window(name, size, bytes, 0);
  }

  async grow(src: ByteSource, need: number): Promise<void> {
    const w = this.w;
    const keepFrom = this.itemStart;
    const have = w.base + w.buf.length;
    // Grow geometrically from what the current item has needed so far.
    const want = Math.min(
      this.size,
      Math.max(need, keepFrom + 2 * (have - keepFrom), have + 64 * 1024),
    );
    const more = await src.read(have, want - have);
    const next = new Uint8Array(want - keepFrom);
    next.set(w.buf.subarray(keepFrom - w.base));
    next.set(more, have - keepFrom);
    this.w = new Window(this.name, this.size, next, keepFrom);
  }

  run(): GgufHeader {
    const w = this.w;
    w.pos = this.itemStart;
    if (this.stage === 0) this.readPreamble();
    while (this.metadata.length < this.kvCount) {
      this.itemStart = w.pos;
      this.readKv();
    }
    if (this.stage === 1) {
      this.applyAlignment();
      this.stage = 2;
    }
    while (this.tensors.length < this.tensorCount) {
      this.itemStart = w.pos;
      this.readTensorInfo();
    }
    this.itemStart = w.pos;
    return this.finish(w.pos);
  }

  readPreamble(): void {
    const w = this.w;
    const name = this.name;
    if (this.size < 4) {
      throw new SyntaxError(
        `Cannot read ${name} as GGUF: the file has ${this.size} bytes, too few for the magic`,
      );
    }
    const magic = w.buf.subarray(w.take(4, () => "the magic"), 4);
    if (
      magic[0] !== 0x47 || magic[1] !== 0x47 || magic[2] !== 0x55 ||
      magic[3] !== 0x46
    ) {
      throw new SyntaxError(
        `Cannot read ${name} as GGUF: the magic is ${
          [...magic].map((b) => b.toString(16).padStart(2, "0")).join(" ")
        }, expected 47 47 55 46 ("GGUF")`,
      );
    }
    w.pos = 4;
    const version = w.u32(() => "the version");
    if (version > 0xffff && (version & 0xffff) === 0) {
      const be = ((version >>> 24) | ((version >>> 8) & 0xff00)) >>> 0;
      throw new SyntaxError(
        `Cannot read ${name}: it is a big-endian GGUF (version ${be} stored big-endian at offset 4); only little-endian files are supported, convert it with gguf-py's gguf_convert_endian.py`,
      );
    }
    if (version === 1) {
      throw new SyntaxError(
        `Cannot read ${name}: GGUF version 1 (32-bit counts, before 2023-08) is not supported; re-convert the model to GGUF v3`,
      );
    }
    if (version !== 2 && version !== 3) {
      throw new SyntaxError(
        `Cannot read ${name}: unsupported GGUF version ${version} at offset 4; supported versions are 2 and 3`,
      );
    }
    this.version = version;
    this.tensorCount = w.u64(() => "the tensor count");
    this.kvCount = w.u64(() => "the metadata count");
    checkCount(w, this.kvCount, MIN_KV_BYTES, "metadata pairs", 16);
    checkCount(
      w,
      this.tensorCount,
      MIN_TENSOR_INFO_BYTES,
      "tensor infos",
      8,
    );
    this.stage = 1;
    this.itemStart = w.pos;
  }

  readKv(): void {
    const w = this.w;
    const at = w.pos;
    const index = this.metadata.length;
    const key = readString(
      w,
      MAX_KEY_BYTES,
      () => `the key of metadata pair ${index}`,
    );
    const what = () => `metadata "${key}"`;
    const type = w.u32(() => `the value type of ${what()}`);
    if (!isGgufType(type)) {
      throw new SyntaxError(
        `Cannot read ${this.name}: ${what()} at offset ${at} has unknown value type ${type} (known: 0..12)`,
      );
    }
    const value = readValue(w, type, 0, what);
    if (this.keys.has(key)) {
      throw new SyntaxError(
        `Cannot read ${this.name}: duplicate metadata key "${key}" at offset ${at}`,
      );
    }
    this.keys.add(key);
    this.metadata.push({ key, type, value, offset: at });
  }

  applyAlignment(): void {
    const e = this.metadata.find((m) => m.key === "general.alignment");
    if (!e) return;
    if (e.type !== GgufType.UINT32) {
      throw new TypeError(
        `Cannot read ${this.name}: general.alignment at offset ${e.offset} is ${
          GGUF_TYPE_NAMES[e.type]
        }, the spec requires UINT32`,
      );
    }
    const a = e.value as number;
    if (a === 0 || (a & (a - 1)) !== 0 || a > MAX_ALIGNMENT) {
      throw new RangeError(
        `Cannot read ${this.name}: general.alignment is ${a}; it must be a power of two no larger than ${MAX_ALIGNMENT}`,
      );
    }
    this.alignment = a;
  }

  readTensorInfo(): void {
    const w = this.w;
    const at = w.pos;
    const index = this.tensors.length;
    const name = readString(
      w,
      MAX_TENSOR_NAME_BYTES,
      () => `the name of tensor ${index}`,
    );
    const what = () => `tensor "${name}"`;
    const nDims = w.u32(() => `the dimension count of ${what()}`);
    if (nDims > MAX_DIMS) {
      throw new RangeError(
        `Cannot read ${this.name}: ${what()} at offset ${at} has ${nDims} dimensions, the limit is ${MAX_DIMS}`,
      );
    }
    const dims: number[] = [];
    let count = 1;
    for (let d = 0; d < nDims; d++) {
      const n = w.u64(() => `dimension ${d} of ${what()}`);
      dims.push(n);
      count *= n;
    }
    if (count > Number.MAX_SAFE_INTEGER) {
      throw new RangeError(
        `Cannot read ${this.name}: ${what()} at offset ${at} has dims [${
          dims.join(", ")
        }], whose element count overflows 2^53-1`,
      );
    }
    const ggmlType = w.u32(() => `the type of ${what()}`);
    const offset = w.u64(() => `the data offset of ${what()}`);
    const dt = dtypeFromGguf(ggmlType);
    if (!dt) {
      const known = DTYPES.filter((d) => d.gguf !== undefined)
        .map((d) => `${d.name}=${d.gguf}`).join(", ");
      throw new UnsupportedDTypeError(
        `ggml type ${ggmlType}`,
        `${what()} in ${this.name} (tensor info at offset ${at}) has an unknown ggml type id; known: ${known}`,
      );
    }
    const row = nDims === 0 ? 1 : dims[0];
    if (row % dt.blockSize !== 0) {
      throw new RangeError(
        `Cannot read ${this.name}: ${what()} is ${dt.name} with rows of ${row} elements, not a multiple of its block size ${dt.blockSize}`,
      );
    }
    if (offset % this.alignment !== 0) {
      throw new RangeError(
        `Cannot read ${this.name}: ${what()} has data offset ${offset}, not a multiple of the alignment ${this.alignment}`,
      );
    }
    if (this.tensorNames.has(name)) {
      throw new SyntaxError(
        `Cannot read ${this.name}: duplicate tensor name "${name}" at offset ${at}`,
      );
    }
    this.tensorNames.add(name);
    this.tensors.push({
      name,
      dims,
      shape: dims.slice().reverse(),
      ggmlType,
      dtype: dt.name,
      offset,
      byteLength: (count / dt.blockSize) * dt.blockBytes,
    });
  }

  finish(end: number): GgufHeader {
    const a = this.alignment;
    const dataOffset = Math.ceil(end / a) * a;
    const available = this.size - dataOffset;
    const sorted = this.tensors.slice().sort((x, y) => x.offset - y.offset);
    let prev: GgufTensorInfo | undefined;
    let truncated: string | undefined;
    for (const t of sorted) {
      if (t.offset + t.byteLength > available) {
        const msg =
          `Cannot read ${this.name}: tensor "${t.name}" needs ${t.byteLength} bytes at offset ${
            dataOffset + t.offset
          }, the file has ${Math.max(0, available - t.offset)} left`;
        if (!this.allowTruncated) throw new RangeError(msg);
        truncated ??= msg;
      }
      if (prev && prev.offset + prev.byteLength > t.offset) {
        throw new RangeError(
          `Cannot read ${this.name}: tensors "${prev.name}" (bytes ${prev.offset}..${
            prev.offset + prev.byteLength
          }) and "${t.name}" (from ${t.offset}) overlap in the data section`,
        );
      }
      prev = t;
    }
    return {
      name: this.name,
      fileSize: this.size,
      version: this.version,
      metadata: this.metadata,
      tensors: this.tensors,
      alignment: a,
      dataOffset,
      ...(truncated === undefined ? {} : { truncated }),
    };
  }
}
