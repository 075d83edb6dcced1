/**
 * Text helpers shared by the tokenizers: UTF-8 encoding into a reusable
 * buffer, the GPT-2 byte <-> printable character table, and a growable byte
 * buffer. Private to `tokenizers/`.
 *
 * @module
 */

/** A growable byte buffer; `bytes.subarray(0, length)` is the content. */
export class ByteBuffer {
  /** Backing store; only the first `length` bytes are meaningful. */
  bytes: Uint8Array = new Uint8Array(256);
  /** Number of bytes written. */
  length = 0;

  /** Makes room for `extra` more bytes. */
  reserve(extra: number): void {
    const need = this.length + extra;
    if (need <= this.bytes.length) return;
    let cap = this.bytes.length * 2;
    while (cap < need) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.bytes.subarray(0, this.length));
    this.bytes = next;
  }

  /** Appends one byte. */
  push(b: number): void {
    if (this.length === this.bytes.length) this.reserve(1);
    this.bytes[this.length++] = b;
  }

  /** Appends several bytes. */
  append(src: Uint8Array): void {
    this.reserve(src.length);
    this.bytes.set(src, this.length);
    this.length += src.length;
  }

  /** A copy of the content. */
  toBytes(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }
}

/**
 * Appends the UTF-8 encoding of `text[start, end)` to `out`. Lone surrogates
 * become U+FFFD, as `TextEncoder` does.
 */
export function utf8Append(
  text: string,
  out: ByteBuffer,
  start = 0,
  end: number = text.length,
): void {
  out.reserve((end - start) * 3);
  const b = out.bytes;
  let n = out.length;
  for (let i = start; i < end; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      b[n++] = c;
      continue;
    }
    if (c < 0x800) {
      b[n++] = 0xc0 | (c >> 6);
      b[n++] = 0x80 | (c & 63);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < end ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        b[n++] = 0xf0 | (c >> 18);
        b[n++] = 0x80 | ((c >> 12) & 63);
        b[n++] = 0x80 | ((c >> 6) & 63);
        b[n++] = 0x80 | (c & 63);
        continue;
      }
      c = 0xfffd;
    }
    b[n++] = 0xe0 | (c >> 12);
    b[n++] = 0x80 | ((c >> 6) & 63);
    b[n++] = 0x80 | (c & 63);
  }
  out.length = n;
}

/** UTF-8 bytes of a string. */
export function utf8(text: string): Uint8Array {
  const buf = new ByteBuffer();
  utf8Append(text, buf);
  return buf.toBytes();
}

/**
 * The GPT-2 byte-level alphabet: byte b is shown as a printable character.
 * Bytes that are printable Latin-1 (`!`..`~`, `¡`..`¬`, `®`..`ÿ`) keep their
 * own code point; the other 68 take code points 256, 257, ... in byte order.
 */
export const BYTE_TO_CHAR: readonly string[] = (() => {
  const keep = (b: number) =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) ||
    (b >= 0xae && b <= 0xff);
  const table: string[] = new Array(256);
  let next = 256;
  for (let b = 0; b < 256; b++) {
    table[b] = String.fromCharCode(keep(b) ? b : next++);
  }
  return table;
})();

/** Inverse of {@link BYTE_TO_CHAR}, indexed by UTF-16 code unit; -1 = not a byte character. */
export const CHAR_TO_BYTE: Int16Array = (() => {
  const inv = new Int16Array(512).fill(-1);
  BYTE_TO_CHAR.forEach((ch, b) => inv[ch.charCodeAt(0)] = b);
  return inv;
})();

/** Parses `<0xNN>` (SentencePiece byte pieces); -1 when the text is not one. */
export function parseBytePiece(text: string): number {
  if (text.length !== 6 || !text.startsWith("<0x") || text[5] !== ">") {
    return -1;
  }
  const v = parseInt(text.slice(3, 5), 16);
  return Number.isNaN(v) || !/^[0-9A-Fa-f]{2}$/.test(text.slice(3, 5)) ? -1 : v;
}

/** The `<0xNN>` piece text of a byte, upper-case hex as SentencePiece writes it. */
export function bytePiece(b: number): string {
  return `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`;
}

/** The character SentencePiece vocabularies use for a space (`▁`, U+2581). */
export const SPM_SPACE = "\u2581";

/** Bytes of a byte-level token; characters outside the byte alphabet keep their UTF-8. */
export function byteLevelBytes(text: string): Uint8Array {
  const out: number[] = [];
  for (const ch of text) {
    const c = ch.charCodeAt(0);
    const b = ch.length === 1 && c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
    if (b >= 0) out.push(b);
    else out.push(...utf8(ch));
  }
  return Uint8Array.from(out);
}

/**
 * A value from a tokenizer file as text, without calling anything on it
 * (`String(v)` runs an object's own `toString`, which a hostile file can
 * set to a number): strings as they are, numbers and booleans printed, other
 * values as JSON, `fallback` for null and undefined.
 */
export function asText(v: unknown, fallback: string): string {
  if (v === undefined || v === null) return fallback;
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  try {
    return JSON.stringify(v) ?? fallback;
  } catch {
    return fallback;
  }
}
