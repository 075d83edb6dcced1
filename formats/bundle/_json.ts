/**
 * JSON for the bundle format: a canonical writer (sorted keys, numbers in
 * ECMAScript's shortest round-trip form, no whitespace) and a reader that
 * keeps long string values (the base64 tensor data) out of `JSON.parse`, so
 * a 90 MB bundle is parsed as a few kilobytes of structure plus string
 * slices.
 *
 * @module
 */
import { checkJsonDepth, MAX_JSON_DEPTH } from "../../core/_json_depth.ts";
export { checkJsonDepth, MAX_JSON_DEPTH };

/** Text inserted into the output as it is (already valid JSON). */
export class RawJson {
  /** The JSON text. */
  readonly text: string;
  /**
   * Wraps JSON text.
   *
   * @param text Valid JSON text, written verbatim.
   */
  constructor(text: string) {
    this.text = text;
  }
}

/**
 * A string value known to need no escaping (base64 text): written between
 * quotes without the scan `JSON.stringify` would do.
 */
export class PlainString {
  /** The string. */
  readonly value: string;
  /**
   * Wraps a string made only of characters JSON writes as they are.
   *
   * @param value The string.
   */
  constructor(value: string) {
    this.value = value;
  }
}

function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * Writes a value as canonical JSON into `out` (pieces to join): object keys
 * sorted by UTF-16 code units, `undefined` members left out, no whitespace.
 *
 * @param value A JSON-like value (plain objects, arrays, strings, finite
 * numbers, booleans, null, {@link RawJson}, {@link PlainString}).
 * @param out Pieces of output, appended to.
 * @param path Where the value sits, for error messages.
 * @param depth How deep `value` sits (the limit is `MAX_JSON_DEPTH`). @default {0}
 * @throws {TypeError} On a non-finite number or a value JSON cannot hold.
 */
export function writeCanonical(
  value: unknown,
  out: string[],
  path: string,
  depth = 0,
): void {
  if (depth > MAX_JSON_DEPTH) {
    throw new RangeError(
      `Cannot write ${path}: nested more than ${MAX_JSON_DEPTH} deep (MAX_JSON_DEPTH)`,
    );
  }
  switch (typeof value) {
    case "string":
      out.push(JSON.stringify(value));
      return;
    case "number":
      if (!Number.isFinite(value)) {
        throw new TypeError(
          `Cannot write ${path}: ${value} is not a finite number, JSON has no way to hold it`,
        );
      }
      out.push(JSON.stringify(value));
      return;
    case "boolean":
      out.push(value ? "true" : "false");
      return;
    case "object": {
      if (value === null) {
        out.push("null");
        return;
      }
      if (value instanceof PlainString) {
        out.push('"', value.value, '"');
        return;
      }
      if (value instanceof RawJson) {
        out.push(value.text);
        return;
      }
      if (Array.isArray(value)) {
        out.push("[");
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out.push(",");
          const v = value[i];
          // JSON.stringify writes holes and undefined in arrays as null.
          writeCanonical(
            v === undefined ? null : v,
            out,
            `${path}[${i}]`,
            depth + 1,
          );
        }
        out.push("]");
        return;
      }
      if (!isPlainObject(value)) {
        const name = (value as { constructor?: { name?: string } }).constructor
          ?.name ?? "object";
        throw new TypeError(
          `Cannot write ${path}: a ${name} is not a JSON value (use plain objects, arrays, strings, numbers, booleans, null)`,
        );
      }
      const rec = value as Record<string, unknown>;
      const keys = Object.keys(rec).filter((k) => rec[k] !== undefined).sort();
      out.push("{");
      for (let i = 0; i < keys.length; i++) {
        if (i > 0) out.push(",");
        out.push(JSON.stringify(keys[i]), ":");
        writeCanonical(rec[keys[i]], out, `${path}.${keys[i]}`, depth + 1);
      }
      out.push("}");
      return;
    }
    default:
      throw new TypeError(
        `Cannot write ${path}: a ${typeof value} is not a JSON value`,
      );
  }
}

/**
 * Canonical JSON text of a value.
 *
 * @param value The value.
 * @param path Where it sits, for errors.
 * @returns The text.
 */
export function canonicalJson(value: unknown, path = "value"): string {
  const out: string[] = [];
  writeCanonical(value, out, path);
  return out.join("");
}

/** String values at least this long are sliced out before `JSON.parse`. */
const LONG_STRING = 4096;
/** The placeholder prefix as JSON text (an escaped NUL). */
const PLACEHOLDER_ESCAPE = "\\u0000";
const BACKSLASH = 92, COLON = 58;

function isJsonSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

/** A JSON text with its long string values cut out. */
export interface SplitJson {
  /** The text with each long value replaced by a placeholder string. */
  skeleton: string;
  /** The raw (still escaped) contents of the cut strings, by placeholder index. */
  blobs: string[];
}

/**
 * Cuts string values of at least 4096 characters out of a JSON text,
 * leaving `"\u0000<index>"` placeholders. Only values (strings after a
 * colon) are cut, never keys.
 *
 * @param text The JSON text.
 * @returns The skeleton and the cut strings, or `undefined` when nothing was
 * cut or the text already holds a `\u0000` escape a placeholder could be
 * confused with.
 */
export function splitLongStrings(text: string): SplitJson | undefined {
  const pieces: string[] = [];
  const blobs: string[] = [];
  let last = 0;
  let pos = 0;
  const n = text.length;
  while (pos < n) {
    const q = text.indexOf('"', pos);
    if (q < 0) break;
    // Find the closing quote: one not preceded by an odd run of backslashes.
    let e = q + 1;
    for (;;) {
      e = text.indexOf('"', e);
      if (e < 0) break;
      let bs = 0;
      while (text.charCodeAt(e - 1 - bs) === BACKSLASH) bs++;
      if ((bs & 1) === 0) break;
      e++;
    }
    if (e < 0) break; // unterminated: JSON.parse reports it
    if (e - q - 1 >= LONG_STRING && precededByColon(text, q)) {
      const piece = text.slice(last, q);
      if (piece.includes(PLACEHOLDER_ESCAPE)) return undefined;
      pieces.push(piece, `"${PLACEHOLDER_ESCAPE}${blobs.length}"`);
      blobs.push(text.slice(q + 1, e));
      last = e + 1;
    }
    pos = e + 1;
  }
  if (blobs.length === 0) return undefined;
  const tail = text.slice(last);
  if (tail.includes(PLACEHOLDER_ESCAPE)) return undefined;
  pieces.push(tail);
  return { skeleton: pieces.join(""), blobs };
}

/**
 * Parses JSON text like `JSON.parse`, except that long string values are
 * taken out of the text first and put back as slices of it afterwards. The
 * result is the same value `JSON.parse` returns.
 *
 * @param text The JSON text.
 * @returns The parsed value.
 * @throws {SyntaxError} With `JSON.parse`'s message when the text is not JSON.
 */
export function parseJsonWithLongStrings(text: string): unknown {
  const split = splitLongStrings(text);
  if (!split) {
    const v = JSON.parse(text);
    checkJsonDepth(v, "JSON text");
    return v;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(split.skeleton);
  } catch {
    return JSON.parse(text); // throws with positions in the caller's text
  }
  checkJsonDepth(parsed, "JSON text");
  return restoreLongStrings(parsed, split.blobs);
}

function precededByColon(text: string, q: number): boolean {
  let i = q - 1;
  while (i >= 0 && isJsonSpace(text.charCodeAt(i))) i--;
  return i >= 0 && text.charCodeAt(i) === COLON;
}

/**
 * The value of a JSON string from its raw text between the quotes.
 *
 * @param raw The text between the quotes, escapes included.
 * @returns The string value.
 * @throws {SyntaxError} When the raw text is not a valid JSON string body.
 */
export function unescapeJsonString(raw: string): string {
  // Escapes need the real JSON string parser.
  if (raw.indexOf("\\") >= 0) return JSON.parse(`"${raw}"`) as string;
  return raw;
}

/**
 * The blob index a placeholder string stands for, or -1 for any other value.
 *
 * @param v A value from the parsed skeleton.
 * @param blobs The cut strings.
 * @returns The index into `blobs`, or -1.
 */
export function placeholderIndex(v: unknown, blobs: readonly string[]): number {
  if (typeof v !== "string" || v.length < 2 || v.charCodeAt(0) !== 0) {
    return -1;
  }
  const i = Number(v.slice(1));
  return Number.isInteger(i) && i >= 0 && i < blobs.length ? i : -1;
}

/**
 * Puts the cut strings back into a parsed skeleton (or part of one), in place.
 *
 * @param v The parsed value.
 * @param blobs The cut strings.
 * @returns The value with every placeholder replaced by its string.
 */
export function restoreLongStrings(
  v: unknown,
  blobs: readonly string[],
): unknown {
  if (typeof v === "string") {
    const i = placeholderIndex(v, blobs);
    return i < 0 ? v : unescapeJsonString(blobs[i]);
  }
  if (typeof v !== "object" || v === null || blobs.length === 0) return v;
  // An explicit stack, not recursion: the value comes from a file and may be
  // nested deeper than the call stack allows.
  const stack: object[] = [v];
  while (stack.length > 0) {
    const o = stack.pop()!;
    const rec = o as Record<string, unknown>;
    const keys = Array.isArray(o) ? null : Object.keys(rec);
    const n = keys ? keys.length : (o as unknown[]).length;
    for (let j = 0; j < n; j++) {
      const k = keys ? keys[j] : j;
      const x = rec[k as string];
      if (typeof x === "string") {
        const i = placeholderIndex(x, blobs);
        if (i >= 0) rec[k as string] = unescapeJsonString(blobs[i]);
      } else if (typeof x === "object" && x !== null) stack.push(x);
    }
  }
  return v;
}
