/**
 * Base64 for the bundle format: the platform's `Uint8Array.prototype.toBase64`
 * / `setFromBase64` where the runtime has them (Deno 2.9, Chromium 140+,
 * Firefox 133+), `@std/encoding` otherwise. The native path is several times
 * faster; both give the same bytes.
 *
 * @module
 */

import { decodeBase64, encodeBase64 } from "@std/encoding";

interface NativeBase64 {
  toBase64(): string;
  setFromBase64(s: string): { read: number; written: number };
}

const PROTO = Uint8Array.prototype as unknown as Partial<NativeBase64>;

/** Whether the runtime has the native base64 methods of `Uint8Array`. */
export const NATIVE_BASE64: boolean = typeof PROTO.toBase64 === "function" &&
  typeof PROTO.setFromBase64 === "function";

/**
 * Encodes bytes as standard padded base64.
 *
 * @param bytes The bytes.
 * @returns The base64 text.
 */
export function toBase64(bytes: Uint8Array): string {
  if (NATIVE_BASE64) return (bytes as unknown as NativeBase64).toBase64();
  return encodeBase64(bytes);
}

/**
 * The number of bytes a base64 text holds, assuming it has no whitespace
 * (what every writer we read emits). Exact for padded and unpadded text.
 *
 * @param text The base64 text.
 * @returns The decoded length.
 */
export function base64ByteLength(text: string): number {
  let n = text.length;
  if (n > 0 && text.charCodeAt(n - 1) === 61) n--; // '='
  if (n > 0 && text.charCodeAt(n - 1) === 61) n--;
  return Math.floor((n * 3) / 4);
}

/**
 * Decodes base64 into a new buffer of exactly `expected` bytes.
 *
 * @param text The base64 text.
 * @param expected The byte length the caller needs.
 * @returns The bytes, or `undefined` when the text holds another number of
 * bytes (the caller reports both counts).
 * @throws {SyntaxError} When the text is not base64.
 */
export function fromBase64Exact(
  text: string,
  expected: number,
): Uint8Array | undefined {
  if (NATIVE_BASE64) {
    const out = new Uint8Array(expected);
    const r = (out as unknown as NativeBase64).setFromBase64(text);
    if (r.read !== text.length || r.written !== expected) {
      // Either the text holds more bytes than `expected` (decoding stopped
      // early) or fewer. Decode the rest to tell a bad character from a
      // length mismatch: a bad character throws here.
      fromBase64(text);
      return undefined;
    }
    return out;
  }
  const out = fromBase64(text);
  return out.length === expected ? out : undefined;
}

/**
 * Decodes base64 into a new buffer.
 *
 * @param text The base64 text.
 * @returns The bytes.
 * @throws {SyntaxError} When the text is not base64.
 */
export function fromBase64(text: string): Uint8Array {
  const ctor = Uint8Array as unknown as {
    fromBase64?: (s: string) => Uint8Array;
  };
  if (typeof ctor.fromBase64 === "function") return ctor.fromBase64(text);
  if (!/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(text)) {
    throw new SyntaxError(
      "Found a character that cannot be part of a valid base64 string",
    );
  }
  return decodeBase64(text.replace(/\s+/g, ""));
}
