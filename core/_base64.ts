/**
 * Base64 for the text formats (the bundle's tensors, Loom's weight blobs):
 * the platform's `Uint8Array.prototype.toBase64` / `setFromBase64` where the
 * runtime has them (Deno 2.9, Chromium 140+, Firefox 133+), `@std/encoding`
 * otherwise. The native path is several times faster; both give the same
 * bytes. Private to the package (not part of `core/mod.ts`).
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
 * @param native Use the platform's methods (tests pass false to check the
 * fallback).
 * @returns The base64 text.
 */
export function toBase64(bytes: Uint8Array, native = NATIVE_BASE64): string {
  if (native) return (bytes as unknown as NativeBase64).toBase64();
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
 * Decodes base64 into `target`, which must be exactly as long as the data.
 *
 * @param text The base64 text.
 * @param target Where the bytes go.
 * @returns False when the text holds another number of bytes than
 * `target.length` (the caller reports both counts).
 * @throws {SyntaxError} When the text is not base64.
 */
export function fromBase64Into(
  text: string,
  target: Uint8Array,
  native = NATIVE_BASE64,
): boolean {
  if (native) {
    const r = (target as unknown as NativeBase64).setFromBase64(text);
    if (r.read !== text.length || r.written !== target.length) {
      // Either the text holds more bytes than the target (decoding stopped
      // early) or fewer. Decode it all so a bad character throws rather
      // than reads as a length mismatch.
      fromBase64(text);
      return false;
    }
    return true;
  }
  const out = fromBase64(text, false);
  if (out.length !== target.length) return false;
  target.set(out);
  return true;
}

/**
 * Decodes base64 into a new buffer. Padding may be left out; ASCII
 * whitespace is ignored.
 *
 * @param text The base64 text.
 * @param native Use the platform's method (tests pass false to check the
 * fallback).
 * @returns The bytes.
 * @throws {SyntaxError} When the text is not base64.
 */
export function fromBase64(text: string, native = NATIVE_BASE64): Uint8Array {
  const ctor = Uint8Array as unknown as {
    fromBase64?: (s: string) => Uint8Array;
  };
  if (native && typeof ctor.fromBase64 === "function") {
    return ctor.fromBase64(text);
  }
  const bad = () =>
    new SyntaxError(
      "Found a character that cannot be part of a valid base64 string",
    );
  const compact = text.replace(/[\t\n\f\r ]+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) {
    throw bad();
  }
  const padded = compact.length % 4 === 0
    ? compact
    : compact + "=".repeat(4 - (compact.length % 4));
  try {
    return decodeBase64(padded);
  } catch {
    throw bad();
  }
}
