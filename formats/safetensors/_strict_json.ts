/**
 * A strict JSON reader for untrusted headers. Unlike `JSON.parse` it keeps
 * integers exact (as `bigint`, so a 64-bit size is not rounded), refuses
 * duplicate object keys instead of keeping the last one, returns objects as
 * `Map`s (a key such as `__proto__` is plain data), and stops at a nesting
 * depth limit instead of exhausting the stack.
 *
 * @module
 */

/** A parsed JSON value; integers without fraction or exponent are bigints. */
export type JsonValue =
  | null
  | boolean
  | string
  | number
  | bigint
  | JsonValue[]
  | JsonObject;

/** A parsed JSON object, keys in document order. */
export type JsonObject = Map<string, JsonValue>;

/** Nesting limit; serde_json, which the reference reader uses, stops at 128 too. */
export const MAX_JSON_DEPTH = 128;

const WS_SPACE = 0x20, WS_TAB = 0x09, WS_LF = 0x0a, WS_CR = 0x0d;

function describe(text: string, pos: number): string {
  if (pos >= text.length) return "end of input";
  const c = text.codePointAt(pos)!;
  return c >= 0x20 && c < 0x7f
    ? `"${String.fromCharCode(c)}"`
    : `U+${c.toString(16).toUpperCase().padStart(4, "0")}`;
}

/**
 * Parses one JSON document; leading and trailing JSON whitespace (space, tab,
 * LF, CR) is allowed, anything else after the value is not.
 *
 * @param text The document.
 * @returns The value.
 * @throws {SyntaxError} On invalid JSON, a duplicate key or nesting deeper
 * than {@link MAX_JSON_DEPTH}; the message gives the character position.
 */
export function parseStrictJson(text: string): JsonValue {
  let pos = 0;
  const n = text.length;

  const fail = (what: string, at = pos): never => {
    throw new SyntaxError(`${what} at character ${at}`);
  };
  const unexpected = (expected: string): never =>
    fail(`expected ${expected}, found ${describe(text, pos)}`);

  const skipWs = (): void => {
    while (pos < n) {
      const c = text.charCodeAt(pos);
      if (c === WS_SPACE || c === WS_LF || c === WS_CR || c === WS_TAB) pos++;
      else break;
    }
  };

  const parseString = (): string => {
    // pos is at the opening quote.
    pos++;
    let out = "";
    let start = pos;
    while (true) {
      if (pos >= n) fail("unterminated string");
      const c = text.charCodeAt(pos);
      if (c === 0x22) {
        out += text.slice(start, pos);
        pos++;
        return out;
      }
      if (c < 0x20) {
        fail(`control character ${describe(text, pos)} inside a string`);
      }
      if (c !== 0x5c) {
        pos++;
        continue;
      }
      out += text.slice(start, pos);
      const e = text.charCodeAt(pos + 1);
      pos += 2;
      switch (e) {
        case 0x22:
          out += '"';
          break;
        case 0x5c:
          out += "\\";
          break;
        case 0x2f:
          out += "/";
          break;
        case 0x62:
          out += "\b";
          break;
        case 0x66:
          out += "\f";
          break;
        case 0x6e:
          out += "\n";
          break;
        case 0x72:
          out += "\r";
          break;
        case 0x74:
          out += "\t";
          break;
        case 0x75: {
          const hi = readHex4();
          if (hi >= 0xd800 && hi <= 0xdbff) {
            if (
              text.charCodeAt(pos) !== 0x5c || text.charCodeAt(pos + 1) !== 0x75
            ) {
              fail("lone leading surrogate in a \\u escape");
            }
            pos += 2;
            const lo = readHex4();
            if (lo < 0xdc00 || lo > 0xdfff) {
              fail("lone leading surrogate in a \\u escape");
            }
            out += String.fromCharCode(hi, lo);
          } else if (hi >= 0xdc00 && hi <= 0xdfff) {
            fail("lone trailing surrogate in a \\u escape");
          } else {
            out += String.fromCharCode(hi);
          }
          break;
        }
        default:
          fail(`invalid escape \\${describe(text, pos - 1)}`, pos - 2);
      }
      start = pos;
    }
  };

  const readHex4 = (): number => {
    let v = 0;
    for (let i = 0; i < 4; i++) {
      const c = text.charCodeAt(pos);
      let d: number;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x57;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x37;
      else return fail("invalid \\u escape");
      v = v * 16 + d;
      pos++;
    }
    return v;
  };

  const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

  const parseNumber = (): number | bigint => {
    const start = pos;
    if (text.charCodeAt(pos) === 0x2d) pos++;
    const first = text.charCodeAt(pos);
    if (first === 0x30) {
      pos++;
    } else if (first >= 0x31 && first <= 0x39) {
      while (isDigit(text.charCodeAt(pos))) pos++;
    } else {
      unexpected("a digit");
    }
    let integer = true;
    if (text.charCodeAt(pos) === 0x2e) {
      integer = false;
      pos++;
      if (!isDigit(text.charCodeAt(pos))) unexpected("a digit after '.'");
      while (isDigit(text.charCodeAt(pos))) pos++;
    }
    const e = text.charCodeAt(pos);
    if (e === 0x65 || e === 0x45) {
      integer = false;
      pos++;
      const s = text.charCodeAt(pos);
      if (s === 0x2b || s === 0x2d) pos++;
      if (!isDigit(text.charCodeAt(pos))) unexpected("a digit in the exponent");
      while (isDigit(text.charCodeAt(pos))) pos++;
    }
    const lexeme = text.slice(start, pos);
    return integer ? BigInt(lexeme) : Number(lexeme);
  };

  const literal = (word: string, value: JsonValue): JsonValue => {
    if (text.startsWith(word, pos)) {
      pos += word.length;
      return value;
    }
    return unexpected("a JSON value");
  };

  const parseValue = (depth: number): JsonValue => {
    skipWs();
    const c = text.charCodeAt(pos);
    switch (c) {
      case 0x7b: // {
      case 0x5b: // [
        if (depth >= MAX_JSON_DEPTH) {
          fail(`nesting deeper than ${MAX_JSON_DEPTH} levels`);
        }
        return c === 0x7b ? parseObject(depth + 1) : parseArray(depth + 1);
      case 0x22:
        return parseString();
      case 0x74:
        return literal("true", true);
      case 0x66:
        return literal("false", false);
      case 0x6e:
        return literal("null", null);
      default:
        if (c === 0x2d || isDigit(c)) return parseNumber();
        return unexpected("a JSON value");
    }
  };

  const parseArray = (depth: number): JsonValue[] => {
    pos++;
    const out: JsonValue[] = [];
    skipWs();
    if (text.charCodeAt(pos) === 0x5d) {
      pos++;
      return out;
    }
    while (true) {
      out.push(parseValue(depth));
      skipWs();
      const c = text.charCodeAt(pos);
      if (c === 0x2c) {
        pos++;
      } else if (c === 0x5d) {
        pos++;
        return out;
      } else {
        unexpected("',' or ']'");
      }
    }
  };

  const parseObject = (depth: number): JsonObject => {
    pos++;
    const out: JsonObject = new Map();
    skipWs();
    if (text.charCodeAt(pos) === 0x7d) {
      pos++;
      return out;
    }
    while (true) {
      skipWs();
      if (text.charCodeAt(pos) !== 0x22) unexpected("a string key");
      const keyAt = pos;
      const key = parseString();
      if (out.has(key)) fail(`duplicate key ${JSON.stringify(key)}`, keyAt);
      skipWs();
      if (text.charCodeAt(pos) !== 0x3a) unexpected("':'");
      pos++;
      out.set(key, parseValue(depth));
      skipWs();
      const c = text.charCodeAt(pos);
      if (c === 0x2c) {
        pos++;
      } else if (c === 0x7d) {
        pos++;
        return out;
      } else {
        unexpected("',' or '}'");
      }
    }
  };

  const value = parseValue(0);
  skipWs();
  if (pos < n) unexpected("end of input after the value");
  return value;
}

/** A short description of a JSON value's type, for messages. */
export function jsonTypeOf(v: JsonValue): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (v instanceof Map) return "an object";
  if (typeof v === "bigint") return "an integer";
  return `a ${typeof v}`;
}
