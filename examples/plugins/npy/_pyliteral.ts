/**
 * The `.npy` header literal: a small parser for the subset of Python that
 * NumPy writes (dicts, tuples, lists, strings, integers, True/False/None),
 * with a nesting limit. Private to the npy plugin.
 *
 * @module
 */

/** Nesting depth of the header literal we follow, against stack exhaustion. */
const MAX_DEPTH = 16;

/** A parsed Python literal. */
export type PyValue =
  | string
  | number
  | boolean
  | null
  | { kind: "tuple" | "list"; items: PyValue[] }
  | { kind: "dict"; entries: Map<string, PyValue> };

/** Parses one literal from `text`; errors name `where` and the position. */
export class PyParser {
  pos = 0;
  constructor(readonly text: string, readonly where: string) {}

  fail(msg: string): SyntaxError {
    return new SyntaxError(
      `Cannot parse the .npy header of ${this.where}: ${msg} at character ${this.pos}`,
    );
  }

  skip(): void {
    while (
      this.pos < this.text.length && " \t\r\n".includes(this.text[this.pos])
    ) {
      this.pos++;
    }
  }

  value(depth: number): PyValue {
    if (depth > MAX_DEPTH) throw this.fail(`nesting deeper than ${MAX_DEPTH}`);
    this.skip();
    const c = this.text[this.pos];
    if (c === undefined) throw this.fail("unexpected end");
    if (c === "'" || c === '"') return this.string(c);
    if (c === "(") return { kind: "tuple", items: this.seq(")", depth) };
    if (c === "[") return { kind: "list", items: this.seq("]", depth) };
    if (c === "{") return this.dict(depth);
    if (c === "-" || c === "+" || (c >= "0" && c <= "9")) return this.int();
    for (
      const [word, v] of [["True", true], ["False", false], [
        "None",
        null,
      ]] as const
    ) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return v;
      }
    }
    throw this.fail(`unexpected ${JSON.stringify(c)}`);
  }

  string(quote: string): string {
    this.pos++;
    let out = "";
    for (;;) {
      const c = this.text[this.pos++];
      if (c === undefined) throw this.fail("unterminated string");
      if (c === quote) return out;
      if (c === "\\") {
        const e = this.text[this.pos++];
        if (e === undefined) throw this.fail("unterminated string");
        out += e === "n" ? "\n" : e === "t" ? "\t" : e === "r" ? "\r" : e;
      } else out += c;
    }
  }

  int(): number {
    const m = /^[+-]?[0-9]+[lL]?/.exec(
      this.text.slice(this.pos, this.pos + 40),
    );
    if (!m) throw this.fail("expected an integer");
    const digits = m[0].replace(/[lL]$/, "");
    const next = this.text[this.pos + m[0].length];
    if (next === "." || next === "e" || next === "E") {
      throw this.fail("expected an integer, found a float");
    }
    this.pos += m[0].length;
    const v = Number(digits);
    if (!Number.isSafeInteger(v)) {
      throw new RangeError(
        `Cannot read the .npy header of ${this.where}: the integer ${digits} is beyond 2^53-1`,
      );
    }
    return v;
  }

  seq(close: string, depth: number): PyValue[] {
    this.pos++;
    const items: PyValue[] = [];
    for (;;) {
      this.skip();
      if (this.pos >= this.text.length) throw this.fail("unexpected end");
      if (this.text[this.pos] === close) {
        this.pos++;
        return items;
      }
      items.push(this.value(depth + 1));
      this.skip();
      if (this.text[this.pos] === ",") this.pos++;
      else if (this.text[this.pos] !== close) {
        throw this.fail(`expected "," or "${close}"`);
      }
    }
  }

  dict(depth: number): PyValue {
    this.pos++;
    const entries = new Map<string, PyValue>();
    for (;;) {
      this.skip();
      if (this.pos >= this.text.length) throw this.fail("unexpected end");
      if (this.text[this.pos] === "}") {
        this.pos++;
        return { kind: "dict", entries };
      }
      const c = this.text[this.pos];
      if (c !== "'" && c !== '"') throw this.fail("expected a string key");
      const key = this.string(c);
      this.skip();
      if (this.text[this.pos] !== ":") throw this.fail('expected ":"');
      this.pos++;
      if (entries.has(key)) throw this.fail(`duplicate key '${key}'`);
      entries.set(key, this.value(depth + 1));
      this.skip();
      if (this.text[this.pos] === ",") this.pos++;
      else if (this.text[this.pos] !== "}") {
        throw this.fail('expected "," or "}"');
      }
    }
  }
}

/** A literal as Python would print it, for error messages. */
export function shownPy(v: PyValue): string {
  if (v === null) return "None";
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "string") return `'${v}'`;
  if (typeof v === "number") return String(v);
  if (v.kind === "dict") return "a dict";
  const s = v.items.map(shownPy).join(", ");
  return v.kind === "tuple" ? `(${s})` : `[${s}]`;
}
