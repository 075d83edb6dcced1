/**
 * The part of the ZIP format `.npz` files use: an archive of entries, each
 * stored or deflated, found through the central directory at the end.
 * Deflate goes through the web `CompressionStream` / `DecompressionStream`
 * (`"deflate-raw"`), so this runs in browsers too. Zip64 archives,
 * encryption, multi-disk archives and other compression methods are refused.
 *
 * @module
 */

import type { ByteSource } from "@modelhost/modelhost";

const LOCAL_SIG = 0x04034b50;
const CENTRAL_SIG = 0x02014b50;
const END_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const LOCAL_BYTES = 30;
const CENTRAL_BYTES = 46;
const END_BYTES = 22;
/** The end record's comment is at most 65,535 bytes: the search window. */
const MAX_COMMENT = 0xffff;
/** Deflate expands at most about 1032:1; a larger claim is a lie. */
const MAX_DEFLATE_RATIO = 1032;
/** First guess of how much an entry inflates: its compressed size times this. */
const INITIAL_EXPANSION = 4;
/** Compressed bytes read per step while inflating. */
const CHUNK = 1 << 16;
/** Flag bit 11: the name is UTF-8. */
const UTF8_FLAG = 0x0800;
/** 1980-01-01 00:00 as a DOS date and time: fixed, so output is deterministic. */
const DOS_DATE = (0 << 9) | (1 << 5) | 1;
const DOS_TIME = 0;

/** One entry of an archive, as its central directory describes it. */
export interface ZipEntry {
  /** The entry's path inside the archive. */
  name: string;
  /** 0 stored, 8 deflate. */
  method: 0 | 8;
  /** CRC-32 of the uncompressed bytes. */
  crc32: number;
  /** Bytes stored in the archive. */
  compressedSize: number;
  /** Bytes once uncompressed. */
  size: number;
  /** Where its local header starts. */
  localOffset: number;
  /** Where its stored bytes start (after the local header). */
  dataOffset: number;
}

/** CRC-32 tables for slicing by 8: table k advances a byte k positions. */
const CRC_TABLES = (() => {
  const t = new Uint32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    for (let k = 1; k < 8; k++) {
      const prev = t[(k - 1) * 256 + n];
      t[k * 256 + n] = (prev >>> 8) ^ t[prev & 0xff];
    }
  }
  return t;
})();

/**
 * CRC-32 (the ZIP / PNG polynomial), optionally continuing an earlier one.
 * Eight bytes per step (slicing by 8).
 *
 * @param bytes The data.
 * @param crc The CRC of the data before it. @default {0}
 * @returns The CRC as an unsigned 32-bit number.
 */
export function crc32(bytes: Uint8Array, crc = 0): number {
  const t = CRC_TABLES;
  let c = ~crc >>> 0;
  let i = 0;
  const n = bytes.byteLength;
  for (; i + 8 <= n; i += 8) {
    const a = c ^ (bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) |
      (bytes[i + 3] << 24));
    c = t[1792 + (a & 0xff)] ^ t[1536 + ((a >>> 8) & 0xff)] ^
      t[1280 + ((a >>> 16) & 0xff)] ^ t[1024 + (a >>> 24)] ^
      t[768 + bytes[i + 4]] ^ t[512 + bytes[i + 5]] ^ t[256 + bytes[i + 6]] ^
      t[bytes[i + 7]];
  }
  for (; i < n; i++) c = t[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

function zip64Error(where: string, why: string): RangeError {
  return new RangeError(
    `Cannot read ${where}: zip64 archives are not supported (${why}); this reader handles archives below 4 GiB and 65,535 entries`,
  );
}

/**
 * Reads an archive's central directory and each entry's local header.
 *
 * @param src The archive.
 * @returns The entries, in directory order.
 * @throws {SyntaxError} When there is no end record or a signature is wrong.
 * @throws {RangeError} On offsets and sizes that do not fit the file, on
 * overlapping entries, and on zip64 archives.
 * @throws {TypeError} On encrypted entries, unsupported compression
 * methods, multi-disk archives and duplicate names.
 */
export async function readZipDirectory(src: ByteSource): Promise<ZipEntry[]> {
  const where = src.name;
  if (src.size < END_BYTES) {
    throw new RangeError(
      `Cannot read ${where}: ${src.size} bytes is too small for a zip archive (the end record alone is ${END_BYTES})`,
    );
  }
  const tailLength = Math.min(src.size, END_BYTES + MAX_COMMENT);
  const tailStart = src.size - tailLength;
  const tail = await src.read(tailStart, tailLength);
  const tv = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  let end = -1;
  for (let i = tail.byteLength - END_BYTES; i >= 0; i--) {
    if (
      tv.getUint32(i, true) === END_SIG &&
      i + END_BYTES + tv.getUint16(i + 20, true) === tail.byteLength
    ) {
      end = i;
      break;
    }
  }
  if (end < 0) {
    throw new SyntaxError(
      `Cannot read ${where}: no zip end-of-central-directory record (not a zip archive, or truncated)`,
    );
  }
  const endOffset = tailStart + end;
  const disk = tv.getUint16(end + 4, true);
  const cdDisk = tv.getUint16(end + 6, true);
  const onDisk = tv.getUint16(end + 8, true);
  const total = tv.getUint16(end + 10, true);
  const cdSize = tv.getUint32(end + 12, true);
  const cdOffset = tv.getUint32(end + 16, true);
  if (
    end >= 20 && tv.getUint32(end - 20, true) === ZIP64_LOCATOR_SIG
  ) {
    throw zip64Error(where, "it has a zip64 end-of-central-directory locator");
  }
  if (total === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    throw zip64Error(where, "its end record defers to a zip64 record");
  }
  if (disk !== 0 || cdDisk !== 0 || onDisk !== total) {
    throw new TypeError(
      `Cannot read ${where}: multi-disk (split) zip archives are not supported`,
    );
  }
  if (cdOffset + cdSize > endOffset) {
    throw new RangeError(
      `Cannot read ${where}: the central directory (${cdSize} bytes at offset ${cdOffset}) runs past the end record at ${endOffset}`,
    );
  }
  const cd = await src.read(cdOffset, cdSize);
  const cv = new DataView(cd.buffer, cd.byteOffset, cd.byteLength);
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const entries: ZipEntry[] = [];
  const names = new Set<string>();
  let at = 0;
  for (let i = 0; i < total; i++) {
    if (at + CENTRAL_BYTES > cd.byteLength) {
      throw new RangeError(
        `Cannot read ${where}: central directory entry ${i} of ${total} runs past the directory's ${cdSize} bytes`,
      );
    }
    if (cv.getUint32(at, true) !== CENTRAL_SIG) {
      throw new SyntaxError(
        `Cannot read ${where}: bad signature of central directory entry ${i} at offset ${
          cdOffset + at
        }`,
      );
    }
    const flags = cv.getUint16(at + 8, true);
    const method = cv.getUint16(at + 10, true);
    const crc = cv.getUint32(at + 16, true);
    const compressedSize = cv.getUint32(at + 20, true);
    const size = cv.getUint32(at + 24, true);
    const nameLength = cv.getUint16(at + 28, true);
    const extraLength = cv.getUint16(at + 30, true);
    const commentLength = cv.getUint16(at + 32, true);
    const startDisk = cv.getUint16(at + 34, true);
    const localOffset = cv.getUint32(at + 42, true);
    const next = at + CENTRAL_BYTES + nameLength + extraLength + commentLength;
    if (next > cd.byteLength) {
      throw new RangeError(
        `Cannot read ${where}: central directory entry ${i} runs past the directory's ${cdSize} bytes`,
      );
    }
    let name: string;
    try {
      name = decoder.decode(
        cd.subarray(at + CENTRAL_BYTES, at + CENTRAL_BYTES + nameLength),
      );
    } catch {
      throw new SyntaxError(
        `Cannot read ${where}: the name of entry ${i} is not valid UTF-8`,
      );
    }
    const label = `entry "${name}" of ${where}`;
    if (
      compressedSize === 0xffffffff || size === 0xffffffff ||
      localOffset === 0xffffffff
    ) {
      throw zip64Error(where, `${label} keeps its sizes in a zip64 field`);
    }
    if (flags & 1) {
      throw new TypeError(`Cannot read ${label}: it is encrypted`);
    }
    if (method !== 0 && method !== 8) {
      throw new TypeError(
        `Cannot read ${label}: compression method ${method} is not supported (0 stored and 8 deflate are)`,
      );
    }
    if (startDisk !== 0) {
      throw new TypeError(
        `Cannot read ${label}: it starts on disk ${startDisk}`,
      );
    }
    if (method === 0 && compressedSize !== size) {
      throw new RangeError(
        `Cannot read ${label}: it is stored, yet its sizes differ (${compressedSize} stored, ${size} declared)`,
      );
    }
    if (method === 8 && size > compressedSize * MAX_DEFLATE_RATIO + 16) {
      throw new RangeError(
        `Cannot read ${label}: it claims ${size} bytes from ${compressedSize} compressed bytes, more than deflate's ${MAX_DEFLATE_RATIO}:1 can expand`,
      );
    }
    if (names.has(name)) {
      throw new TypeError(
        `Cannot read ${where}: the entry "${name}" appears twice`,
      );
    }
    names.add(name);
    entries.push({
      name,
      method,
      crc32: crc,
      compressedSize,
      size,
      localOffset,
      dataOffset: -1,
    });
    at = next;
  }
  if (at !== cd.byteLength) {
    throw new RangeError(
      `Cannot read ${where}: the central directory holds ${
        cd.byteLength - at
      } bytes after its ${total} entries`,
    );
  }
  // Local headers: the data starts after each one's own name and extra
  // field (NumPy's local headers carry a zip64 extra field that its
  // central directory does not).
  for (const e of entries) {
    const label = `entry "${e.name}" of ${where}`;
    if (e.localOffset + LOCAL_BYTES > cdOffset) {
      throw new RangeError(
        `Cannot read ${label}: its local header at offset ${e.localOffset} runs into the central directory at ${cdOffset}`,
      );
    }
    const head = await src.read(e.localOffset, LOCAL_BYTES);
    const hv = new DataView(head.buffer, head.byteOffset, head.byteLength);
    if (hv.getUint32(0, true) !== LOCAL_SIG) {
      throw new SyntaxError(
        `Cannot read ${label}: bad local header signature at offset ${e.localOffset}`,
      );
    }
    if (hv.getUint16(8, true) !== e.method) {
      throw new SyntaxError(
        `Cannot read ${label}: its local header says method ${
          hv.getUint16(8, true)
        }, the central directory ${e.method}`,
      );
    }
    const nameLength = hv.getUint16(26, true);
    const extraLength = hv.getUint16(28, true);
    e.dataOffset = e.localOffset + LOCAL_BYTES + nameLength + extraLength;
    if (e.dataOffset + e.compressedSize > cdOffset) {
      throw new RangeError(
        `Cannot read ${label}: needs ${e.compressedSize} bytes at offset ${e.dataOffset}, the entries end at ${cdOffset}`,
      );
    }
    const localName = await src.read(e.localOffset + LOCAL_BYTES, nameLength);
    let decoded: string | undefined;
    try {
      decoded = decoder.decode(localName);
    } catch { /* reported below */ }
    if (decoded !== e.name) {
      throw new SyntaxError(
        `Cannot read ${label}: its local header names it ${
          JSON.stringify(decoded ?? "(not UTF-8)")
        }`,
      );
    }
  }
  const byOffset = [...entries].sort((a, b) => a.localOffset - b.localOffset);
  for (let i = 1; i < byOffset.length; i++) {
    const prev = byOffset[i - 1], cur = byOffset[i];
    if (prev.dataOffset + prev.compressedSize > cur.localOffset) {
      throw new RangeError(
        `Cannot read ${where}: entries "${prev.name}" and "${cur.name}" overlap (${
          prev.dataOffset + prev.compressedSize
        } > ${cur.localOffset})`,
      );
    }
  }
  return entries;
}

/** A pull-based stream of an entry's compressed bytes. */
function compressedStream(
  src: ByteSource,
  entry: ZipEntry,
  failed: { error?: unknown },
): ReadableStream<BufferSource> {
  let pos = 0;
  return new ReadableStream<BufferSource>({
    async pull(controller) {
      if (pos >= entry.compressedSize) {
        controller.close();
        return;
      }
      const n = Math.min(CHUNK, entry.compressedSize - pos);
      try {
        const chunk = await src.read(entry.dataOffset + pos, n);
        pos += n;
        controller.enqueue(chunk as Uint8Array<ArrayBuffer>);
      } catch (e) {
        failed.error = e;
        throw e;
      }
    },
  }, { highWaterMark: 0 });
}

/**
 * Inflates an entry: its first `limit` bytes, or (when `limit` is its size)
 * all of it, checked against the declared size.
 */
async function inflate(
  src: ByteSource,
  entry: ZipEntry,
  limit: number,
): Promise<Uint8Array> {
  const label = `entry "${entry.name}" of ${src.name}`;
  const failed: { error?: unknown } = {};
  const reader = compressedStream(src, entry, failed)
    .pipeThrough(new DecompressionStream("deflate-raw"))
    .getReader();
  // The buffer grows with the actual output (from a guess of a few times the
  // compressed size), so a directory entry that only claims a huge size
  // does not get that memory.
  let out = new Uint8Array(
    Math.min(limit, entry.compressedSize * INITIAL_EXPANSION + CHUNK),
  );
  let got = 0;
  const next = async () => {
    try {
      return await reader.read();
    } catch (e) {
      if (failed.error !== undefined) throw failed.error;
      throw new SyntaxError(
        `Cannot inflate ${label}: ${e instanceof Error ? e.message : e}`,
      );
    }
  };
  try {
    while (got < limit) {
      const { done, value } = await next();
      if (done) break;
      if (got + value.byteLength > entry.size) {
        throw new RangeError(
          `Cannot read ${label}: it inflates to more than the ${entry.size} bytes its directory entry declares`,
        );
      }
      const take = Math.min(value.byteLength, limit - got);
      if (got + take > out.byteLength) {
        const grown = new Uint8Array(
          Math.min(limit, Math.max(got + take, 2 * out.byteLength)),
        );
        grown.set(out.subarray(0, got));
        out = grown;
      }
      out.set(value.subarray(0, take), got);
      got += take;
    }
    if (limit === entry.size) {
      // Everything must have been consumed, with nothing more to come.
      for (;;) {
        const { done, value } = await next();
        if (done) break;
        if (value.byteLength > 0) {
          throw new RangeError(
            `Cannot read ${label}: it inflates to more than the ${entry.size} bytes its directory entry declares`,
          );
        }
      }
      if (got < entry.size) {
        throw new RangeError(
          `Cannot read ${label}: it inflates to ${got} bytes, its directory entry declares ${entry.size}`,
        );
      }
    }
    return got === limit ? out : out.subarray(0, got);
  } finally {
    reader.cancel().catch(() => {});
  }
}

/**
 * The first `length` bytes of an entry, uncompressed (fewer when the entry
 * is shorter). Inflates only as much as needed.
 *
 * @param src The archive.
 * @param entry The entry.
 * @param length How many bytes.
 * @returns The bytes.
 */
export async function readZipEntryPrefix(
  src: ByteSource,
  entry: ZipEntry,
  length: number,
): Promise<Uint8Array> {
  const n = Math.min(length, entry.size);
  if (entry.method === 0) return await src.read(entry.dataOffset, n);
  return await inflate(src, entry, n);
}

/**
 * An entry's whole content, uncompressed and checked against its CRC-32.
 *
 * @param src The archive.
 * @param entry The entry.
 * @returns The bytes.
 * @throws {SyntaxError} On a corrupt deflate stream or a CRC mismatch.
 * @throws {RangeError} When the content is longer or shorter than declared.
 */
export async function readZipEntry(
  src: ByteSource,
  entry: ZipEntry,
): Promise<Uint8Array> {
  const bytes = entry.method === 0
    ? await src.read(entry.dataOffset, entry.size)
    : await inflate(src, entry, entry.size);
  const crc = crc32(bytes);
  if (crc !== entry.crc32) {
    throw new SyntaxError(
      `Cannot read entry "${entry.name}" of ${src.name}: CRC-32 mismatch (computed ${
        crc.toString(16).padStart(8, "0")
      }, stored ${
        entry.crc32.toString(16).padStart(8, "0")
      }); the archive is corrupt`,
    );
  }
  return bytes;
}

async function deflateRaw(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream()
    .pipeThrough(new CompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** One file to put in an archive. */
export interface ZipInput {
  /** Its path inside the archive. */
  name: string;
  /** Its content. */
  data: Uint8Array;
}

/**
 * Writes a ZIP archive entry by entry: each entry's local header and data
 * as soon as it is known, then the central directory and the end record.
 * Timestamps are fixed (1980-01-01), so the same entries give the same bytes.
 *
 * @param inputs The files, in archive order.
 * @param compress Deflate each entry (else store it).
 * @returns The archive's bytes, in chunks.
 * @throws {RangeError} When the archive would need zip64 (an entry or the
 * archive past 4 GiB, or more than 65,535 entries).
 */
export async function* writeZip(
  inputs: AsyncIterable<ZipInput>,
  compress: boolean,
): AsyncGenerator<Uint8Array> {
  const encoder = new TextEncoder();
  const central: Uint8Array[] = [];
  let offset = 0;
  let count = 0;
  for await (const input of inputs) {
    const name = encoder.encode(input.name);
    const crc = crc32(input.data);
    const data = compress ? await deflateRaw(input.data) : input.data;
    if (
      input.data.byteLength >= 0xffffffff || data.byteLength >= 0xffffffff ||
      offset >= 0xffffffff || ++count >= 0xffff
    ) {
      throw new RangeError(
        `Cannot write "${input.name}": the archive would need zip64 (over 4 GiB or 65,535 entries), which this writer does not produce`,
      );
    }
    const flags = name.some((b) => b >= 0x80) ? UTF8_FLAG : 0;
    const method = compress ? 8 : 0;
    const local = new Uint8Array(LOCAL_BYTES + name.byteLength);
    const lv = new DataView(local.buffer);
    lv.setUint32(0, LOCAL_SIG, true);
    lv.setUint16(4, 20, true);
    lv.setUint16(6, flags, true);
    lv.setUint16(8, method, true);
    lv.setUint16(10, DOS_TIME, true);
    lv.setUint16(12, DOS_DATE, true);
    lv.setUint32(14, crc, true);
    lv.setUint32(18, data.byteLength, true);
    lv.setUint32(22, input.data.byteLength, true);
    lv.setUint16(26, name.byteLength, true);
    lv.setUint16(28, 0, true);
    local.set(name, LOCAL_BYTES);

    const entry = new Uint8Array(CENTRAL_BYTES + name.byteLength);
    const cv = new DataView(entry.buffer);
    cv.setUint32(0, CENTRAL_SIG, true);
    cv.setUint16(4, 20, true);
    cv.setUint16(6, 20, true);
    cv.setUint16(8, flags, true);
    cv.setUint16(10, method, true);
    cv.setUint16(12, DOS_TIME, true);
    cv.setUint16(14, DOS_DATE, true);
    cv.setUint32(16, crc, true);
    cv.setUint32(20, data.byteLength, true);
    cv.setUint32(24, input.data.byteLength, true);
    cv.setUint16(28, name.byteLength, true);
    cv.setUint32(42, offset, true);
    entry.set(name, CENTRAL_BYTES);
    central.push(entry);

    yield local;
    yield data;
    offset += local.byteLength + data.byteLength;
  }
  const cdSize = central.reduce((s, e) => s + e.byteLength, 0);
  if (offset + cdSize >= 0xffffffff) {
    throw new RangeError(
      "Cannot write the archive: it would pass 4 GiB and need zip64, which this writer does not produce",
    );
  }
  for (const e of central) yield e;
  const end = new Uint8Array(END_BYTES);
  const ev = new DataView(end.buffer);
  ev.setUint32(0, END_SIG, true);
  ev.setUint16(8, central.length, true);
  ev.setUint16(10, central.length, true);
  ev.setUint32(12, cdSize, true);
  ev.setUint32(16, offset, true);
  yield end;
}
