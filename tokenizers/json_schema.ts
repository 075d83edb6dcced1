/**
 * JSON Schema (and plain JSON) as a byte-level grammar: a schema is
 * compiled once into a tree of nodes, and a {@link ByteGrammar} then says,
 * byte by byte, whether the text so far can still become a JSON value
 * that validates. `tokenizers/constraint.ts` lifts it to whole tokens of a
 * vocabulary for constrained sampling (structured output).
 *
 * What is generated is always valid JSON, in a canonical shape: object
 * keys and enum strings exactly as `JSON.stringify` writes them, numbers
 * of at most 15 integer and 15 fraction digits and a 3-digit exponent,
 * whitespace between tokens as llama.cpp's JSON grammar allows it
 * (nothing, one space, or a newline and up to 20 spaces or tabs), no `\u`
 * escape of a
 * surrogate (so each character counts once), nesting at most 64 deep.
 *
 * Schema keywords understood: `type` (one or a list), `enum`, `const`,
 * `properties`, `required`, `additionalProperties` (with `properties`,
 * keys are the declared ones, in any order, each at most once; without,
 * any key with values of the `additionalProperties` schema), `items`,
 * `prefixItems`, `minItems`, `maxItems`, `minLength`, `maxLength`,
 * `anyOf`, `oneOf` (generated as `anyOf`: the output matches at least one
 * branch), `allOf` of one schema, `$ref` to `#`, `#/$defs/…` or
 * `#/definitions/…` (recursion allowed), `nullable`; annotations (`title`,
 * `description`, `default`, `examples`, `$schema`, `$id`, `$comment`,
 * `deprecated`, `readOnly`, `writeOnly`, `format` annotations listed in
 * {@link IGNORED_KEYWORDS}) are ignored. Any other keyword (`pattern`,
 * `minimum`, `multipleOf`, …) is refused with a `TypeError` naming it,
 * rather than generating output that might not validate.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { compileJsonSchema } from "@modelhost/modelhost/tokenizers";
 * const g = compileJsonSchema({
 *   type: "object",
 *   properties: { ok: { type: "boolean" } },
 *   required: ["ok"],
 * });
 * const feed = (text: string) => {
 *   let s = g.start();
 *   for (const b of new TextEncoder().encode(text)) {
 *     const n = g.step(s, b);
 *     if (!n) return undefined;
 *     s = n;
 *   }
 *   return s;
 * };
 * assert(g.complete(feed('{"ok": true}')!));
 * assert(feed('{"ok": 1') === undefined);
 * assert(!g.complete(feed('{"ok"')!));
 * ```
 *
 * @module
 */

/**
 * Keywords that describe a schema without constraining values; ignored.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { compileJsonSchema, IGNORED_KEYWORDS } from "@modelhost/modelhost/tokenizers";
 * assert(IGNORED_KEYWORDS.includes("description"));
 * compileJsonSchema({ type: "string", description: "a name" }); // fine
 * ```
 */
export const IGNORED_KEYWORDS: readonly string[] = [
  "$schema",
  "$id",
  "$comment",
  "$anchor",
  "title",
  "description",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "strict",
  "$defs",
  "definitions",
];

/**
 * A grammar over bytes: an immutable state, advanced one byte at a time.
 * What `tokenizers/constraint.ts` needs of a grammar.
 */
export interface ByteGrammar<S = unknown> {
  /** The state before any byte. */
  start(): S;
  /** The state after `byte`, or undefined when the byte cannot come next. */
  step(state: S, byte: number): S | undefined;
  /** Whether the bytes so far form a whole value (the output may end here). */
  complete(state: S): boolean;
  /** Whether no byte at all may follow (the value is closed). */
  finished(state: S): boolean;
  /**
   * A short key naming the state: equal keys mean equal futures (used to
   * reuse token masks). Undefined when the state has none.
   */
  key?(state: S): string;
}

/** Options of {@link compileJsonSchema}. */
export interface JsonSchemaOptions {
  /** Most spaces or tabs after a newline between tokens. @default {20} */
  maxWhitespace?: number;
  /** Deepest nesting of objects and arrays. @default {64} */
  maxDepth?: number;
}

// ------------------------------------------------------------ schema → nodes

type Node =
  | { kind: "obj"; props: Prop[]; free?: Node; id: number }
  | {
    kind: "arr";
    prefix: Node[];
    items: Node | null;
    min: number;
    max: number;
    id: number;
  }
  | { kind: "str"; min: number; max: number; id: number }
  | { kind: "num"; integer: boolean; id: number }
  | { kind: "lit"; values: Uint8Array[]; id: number }
  | { kind: "alt"; options: Node[]; id: number }
  | { kind: "any"; id: number }
  | { kind: "ref"; resolve: () => Node; id: number };

type NoId<T> = T extends unknown ? Omit<T, "id"> : never;

interface Prop {
  key: string;
  bytes: Uint8Array;
  node: Node;
  required: boolean;
}

const enc = new TextEncoder();
const TYPES = [
  "object",
  "array",
  "string",
  "number",
  "integer",
  "boolean",
  "null",
];
const KNOWN = new Set([
  ...IGNORED_KEYWORDS,
  "type",
  "enum",
  "const",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "prefixItems",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "anyOf",
  "oneOf",
  "allOf",
  "$ref",
  "nullable",
]);

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function count(
  s: Record<string, unknown>,
  key: string,
  path: string,
): number | undefined {
  const v = s[key];
  if (v === undefined) return undefined;
  if (!Number.isSafeInteger(v) || (v as number) < 0) {
    throw new TypeError(
      `JSON schema ${path}: "${key}" must be a whole number ≥ 0, got ${
        JSON.stringify(v)
      }`,
    );
  }
  return v as number;
}

class Compiler {
  #root: unknown;
  #ids = 0;
  #refs = new Map<string, Node>();

  constructor(root: unknown) {
    this.#root = root;
  }

  node(n: NoId<Node>): Node {
    return { ...n, id: this.#ids++ } as Node;
  }

  compile(schema: unknown, path: string): Node {
    if (schema === true) return this.node({ kind: "any" });
    if (schema === false) {
      throw new TypeError(
        `JSON schema ${path} is false: no value validates, nothing can be generated`,
      );
    }
    if (!isObject(schema)) {
      throw new TypeError(
        `JSON schema ${path} must be an object or a boolean, got ${
          JSON.stringify(schema)
        }`,
      );
    }
    for (const k of Object.keys(schema)) {
      if (!KNOWN.has(k) && k !== "format") {
        throw new TypeError(
          `JSON schema ${path}: the keyword "${k}" is not supported by structured output (supported: type, enum, const, properties, required, additionalProperties, items, prefixItems, minItems, maxItems, minLength, maxLength, anyOf, oneOf, allOf of one schema, $ref, nullable)`,
        );
      }
    }
    if (schema.format !== undefined) {
      throw new TypeError(
        `JSON schema ${path}: "format" (${
          JSON.stringify(schema.format)
        }) is not supported by structured output`,
      );
    }
    if (schema.$ref !== undefined) {
      const others = Object.keys(schema).filter((k) =>
        k !== "$ref" && !IGNORED_KEYWORDS.includes(k)
      );
      if (others.length > 0) {
        throw new TypeError(
          `JSON schema ${path}: "$ref" beside ${
            others.join(", ")
          } is not supported`,
        );
      }
      return this.#ref(schema.$ref, path);
    }
    const base = this.#compileBase(schema, path);
    if (schema.nullable === true) {
      return this.node({
        kind: "alt",
        options: [
          base,
          this.node({ kind: "lit", values: [enc.encode("null")] }),
        ],
      });
    }
    return base;
  }

  #ref(ref: unknown, path: string): Node {
    if (typeof ref !== "string") {
      throw new TypeError(`JSON schema ${path}: "$ref" must be a string`);
    }
    const have = this.#refs.get(ref);
    if (have) return have;
    if (ref !== "#" && !/^#\/(\$defs|definitions)\/[^/]+$/.test(ref)) {
      throw new TypeError(
        `JSON schema ${path}: "$ref": "${ref}" is not supported (only "#", "#/$defs/NAME" and "#/definitions/NAME")`,
      );
    }
    let target: unknown = this.#root;
    if (ref !== "#") {
      const [, where, name] = ref.split("/");
      const table = isObject(this.#root) ? this.#root[where] : undefined;
      const key = name.replaceAll("~1", "/").replaceAll("~0", "~");
      target = isObject(table) ? table[key] : undefined;
      if (target === undefined) {
        throw new TypeError(
          `JSON schema ${path}: "$ref": "${ref}" names no schema`,
        );
      }
    }
    const box: { target?: Node } = {};
    const node: Node = this.node({
      kind: "ref",
      resolve: () => box.target!,
    });
    this.#refs.set(ref, node);
    box.target = this.compile(target, ref);
    return node;
  }

  #compileBase(s: Record<string, unknown>, path: string): Node {
    if (s.const !== undefined) return this.#literals([s.const], path);
    if (s.enum !== undefined) {
      if (!Array.isArray(s.enum) || s.enum.length === 0) {
        throw new TypeError(
          `JSON schema ${path}: "enum" must be a non-empty list`,
        );
      }
      return this.#literals(s.enum, path);
    }
    if (s.allOf !== undefined) {
      if (!Array.isArray(s.allOf) || s.allOf.length !== 1) {
        throw new TypeError(
          `JSON schema ${path}: "allOf" is supported with one schema only`,
        );
      }
      const rest = { ...s };
      delete rest.allOf;
      if (Object.keys(rest).some((k) => !IGNORED_KEYWORDS.includes(k))) {
        throw new TypeError(
          `JSON schema ${path}: "allOf" beside other keywords is not supported`,
        );
      }
      return this.compile(s.allOf[0], `${path}/allOf/0`);
    }
    for (const k of ["anyOf", "oneOf"] as const) {
      if (s[k] === undefined) continue;
      const list = s[k];
      if (!Array.isArray(list) || list.length === 0) {
        throw new TypeError(
          `JSON schema ${path}: "${k}" must be a non-empty list`,
        );
      }
      const rest = { ...s };
      delete rest[k];
      const extra = Object.keys(rest).filter((x) =>
        !IGNORED_KEYWORDS.includes(x) && x !== "nullable"
      );
      if (extra.length > 0) {
        throw new TypeError(
          `JSON schema ${path}: "${k}" beside ${
            extra.join(", ")
          } is not supported (put them in each branch)`,
        );
      }
      return this.node({
        kind: "alt",
        options: list.map((x, i) => this.compile(x, `${path}/${k}/${i}`)),
      });
    }
    let types: string[];
    if (s.type === undefined) {
      const implied = this.#impliedTypes(s).map((t) => this.#typed(t, s, path));
      return implied.length === 1
        ? implied[0]
        : this.node({ kind: "alt", options: implied });
    } else if (typeof s.type === "string") types = [s.type];
    else if (
      Array.isArray(s.type) && s.type.length > 0 &&
      s.type.every((t) => typeof t === "string")
    ) types = s.type as string[];
    else {
      throw new TypeError(
        `JSON schema ${path}: "type" must be a type name or a list of them`,
      );
    }
    for (const t of types) {
      if (!TYPES.includes(t)) {
        throw new TypeError(
          `JSON schema ${path}: unknown type "${t}" (types: ${
            TYPES.join(", ")
          })`,
        );
      }
    }
    if (types.includes("integer") && types.includes("number")) {
      types = types.filter((t) => t !== "integer");
    }
    const options = types.map((t) => this.#typed(t, s, path));
    return options.length === 1
      ? options[0]
      : this.node({ kind: "alt", options });
  }

  /** Types a schema without `type` allows, from the keywords it uses. */
  #impliedTypes(s: Record<string, unknown>): string[] {
    const has = (...k: string[]) => k.some((x) => s[x] !== undefined);
    const out: string[] = [];
    if (has("properties", "required", "additionalProperties")) {
      out.push("object");
    }
    if (has("items", "prefixItems", "minItems", "maxItems")) out.push("array");
    if (has("minLength", "maxLength")) out.push("string");
    return out.length > 0 ? out : ["any"];
  }

  #typed(t: string, s: Record<string, unknown>, path: string): Node {
    switch (t) {
      case "any":
        return this.node({ kind: "any" });
      case "string": {
        const min = count(s, "minLength", path) ?? 0;
        const max = count(s, "maxLength", path) ?? Infinity;
        if (min > max) {
          throw new TypeError(
            `JSON schema ${path}: minLength ${min} is above maxLength ${max}`,
          );
        }
        return this.node({ kind: "str", min, max });
      }
      case "number":
      case "integer":
        return this.node({ kind: "num", integer: t === "integer" });
      case "boolean":
        return this.node({
          kind: "lit",
          values: [enc.encode("true"), enc.encode("false")],
        });
      case "null":
        return this.node({ kind: "lit", values: [enc.encode("null")] });
      case "array":
        return this.#array(s, path);
      default:
        return this.#object(s, path);
    }
  }

  #array(s: Record<string, unknown>, path: string): Node {
    const min = count(s, "minItems", path) ?? 0;
    const max = count(s, "maxItems", path) ?? Infinity;
    if (min > max) {
      throw new TypeError(
        `JSON schema ${path}: minItems ${min} is above maxItems ${max}`,
      );
    }
    let prefix: Node[] = [];
    if (s.prefixItems !== undefined) {
      if (!Array.isArray(s.prefixItems)) {
        throw new TypeError(
          `JSON schema ${path}: "prefixItems" must be a list`,
        );
      }
      prefix = s.prefixItems.map((x, i) =>
        this.compile(x, `${path}/prefixItems/${i}`)
      );
    }
    let items: Node | null;
    if (s.items === false) items = null;
    else if (s.items === undefined) items = this.node({ kind: "any" });
    else if (Array.isArray(s.items)) {
      throw new TypeError(
        `JSON schema ${path}: "items" as a list (draft 4 tuples) is not supported; use "prefixItems"`,
      );
    } else items = this.compile(s.items, `${path}/items`);
    if (items === null && min > prefix.length) {
      throw new TypeError(
        `JSON schema ${path}: minItems ${min} but only ${prefix.length} items are allowed`,
      );
    }
    return this.node({ kind: "arr", prefix, items, min, max });
  }

  #object(s: Record<string, unknown>, path: string): Node {
    const props: Prop[] = [];
    const required = s.required ?? [];
    if (
      !Array.isArray(required) || !required.every((r) => typeof r === "string")
    ) {
      throw new TypeError(
        `JSON schema ${path}: "required" must be a list of names`,
      );
    }
    if (s.properties !== undefined && !isObject(s.properties)) {
      throw new TypeError(
        `JSON schema ${path}: "properties" must be an object`,
      );
    }
    const declared = (s.properties ?? {}) as Record<string, unknown>;
    for (const [key, sub] of Object.entries(declared)) {
      props.push({
        key,
        bytes: enc.encode(JSON.stringify(key)),
        node: this.compile(sub, `${path}/properties/${key}`),
        required: required.includes(key),
      });
    }
    const additional = s.additionalProperties;
    for (const r of required) {
      if (declared[r] === undefined) {
        if (additional === false) {
          throw new TypeError(
            `JSON schema ${path}: "${r}" is required but not allowed (no property of that name, additionalProperties false)`,
          );
        }
        props.push({
          key: r,
          bytes: enc.encode(JSON.stringify(r)),
          node: additional === undefined || additional === true
            ? this.node({ kind: "any" })
            : this.compile(additional, `${path}/additionalProperties`),
          required: true,
        });
      }
    }
    if (props.length > 0) return this.node({ kind: "obj", props });
    if (additional === false) return this.node({ kind: "obj", props: [] });
    const free = additional === undefined || additional === true
      ? this.node({ kind: "any" })
      : this.compile(additional, `${path}/additionalProperties`);
    return this.node({ kind: "obj", props: [], free });
  }

  #literals(values: unknown[], path: string): Node {
    return this.node({
      kind: "lit",
      values: values.map((v, i) => {
        const text = JSON.stringify(v);
        if (text === undefined) {
          throw new TypeError(
            `JSON schema ${path}: enum value ${i} is not JSON`,
          );
        }
        return enc.encode(text);
      }),
    });
  }
}

// ------------------------------------------------------------ the automaton

// Results of Frame.step besides a new frame: reject, "done after this
// byte", "done before this byte" (the byte goes to the parent) and
// "push a child value, which takes this byte".
const REJECT = 0;
const DONE = 1;
const DONE_BEFORE = 2;
type Step = Frame | typeof REJECT | typeof DONE | typeof DONE_BEFORE | Push;

interface Push {
  push: Node;
  /** What this frame becomes while the child runs. */
  self: Frame;
}

/** One level of the parse: an immutable frame of a node. */
interface Frame {
  /** Consumes one byte (−1: the end of the input). */
  step(b: number, g: Grammar): Step;
  /** This frame once its child value completed (`result`: a matched key's index). */
  child(result: number): Frame;
  /** The key naming this frame's state. */
  key(): string;
}

/** A parse: frames from the innermost out (a persistent list). */
interface Stack {
  frame: Frame;
  parent: Stack | null;
  depth: number;
}

const isWs = (b: number) =>
  b === 0x20 || b === 0x0a || b === 0x09 || b === 0x0d;
/**
 * Insignificant whitespace between tokens, by llama.cpp's JSON grammar
 * rule: nothing, one space, or a newline and up to `max` spaces or tabs.
 * `ws` is 0 before any, −1 after the space, k ≥ 1 after the newline and
 * k − 1 indents; undefined refuses the byte.
 */
function wsStep(ws: number, b: number, max: number): number | undefined {
  if (ws === 0) return b === 0x20 ? -1 : b === 0x0a ? 1 : undefined;
  if (ws > 0 && ws <= max && (b === 0x20 || b === 0x09)) return ws + 1;
  return undefined;
}
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
const isHex = (b: number) =>
  isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);

/** The top of the parse, around the root value: whitespace, the value, nothing after. */
class RootFrame implements Frame {
  constructor(
    readonly node: Node,
    readonly ws: number,
    readonly done: boolean,
  ) {}
  step(b: number, g: Grammar): Step {
    if (this.done) return b < 0 ? DONE : REJECT;
    if (b < 0) return REJECT;
    if (isWs(b)) {
      const w = wsStep(this.ws, b, g.maxWs);
      return w === undefined ? REJECT : new RootFrame(this.node, w, false);
    }
    return { push: this.node, self: new RootFrame(this.node, 0, false) };
  }
  child(): Frame {
    return new RootFrame(this.node, 0, true);
  }
  key(): string {
    return this.done ? "R." : `R${this.ws}`;
  }
}

/**
 * A literal (true, false, null, enum and const values, object keys) among
 * candidates: `index[i]` is the original position of `values[i]`; `keys`
 * says whether completion reports which one matched (object keys).
 */
class LitFrame implements Frame {
  constructor(
    readonly values: Uint8Array[],
    readonly pos: number,
    readonly id: number,
    readonly index: number[],
    readonly keys: boolean,
  ) {}
  step(b: number): Step {
    const next: Uint8Array[] = [];
    const idx: number[] = [];
    let ended = -1;
    for (let i = 0; i < this.values.length; i++) {
      const v = this.values[i];
      if (v.length === this.pos) ended = i;
      else if (v[this.pos] === b) {
        next.push(v);
        idx.push(this.index[i]);
      }
    }
    if (next.length > 0) {
      // A value that ends right after this byte, with no other continuing,
      // is done now; one that is a prefix of others waits for the next byte.
      if (next.length === 1 && next[0].length === this.pos + 1) {
        return this.keys ? new KeyDone(idx[0]) : DONE;
      }
      return new LitFrame(next, this.pos + 1, this.id, idx, this.keys);
    }
    // (keys end with their quote: a finished key was reported above)
    return ended < 0 || this.keys ? REJECT : DONE_BEFORE;
  }
  child(): Frame {
    return this;
  }
  key(): string {
    return `L${this.id}.${this.pos}.${this.index.join(",")}`;
  }
}

/** A matched object key (a LitFrame's end that reports which key). */
class KeyDone implements Frame {
  constructor(readonly index: number) {}
  step(): Step {
    return REJECT;
  }
  child(): Frame {
    return this;
  }
  key(): string {
    return `K${this.index}`;
  }
}

/**
 * A JSON string. Phases: 0 before the quote, 1 content, 2 after a
 * backslash, 3–6 the hex digits of `\u`. `need` continuation bytes of a
 * UTF-8 character are pending, the next within [lo, hi].
 */
class StrFrame implements Frame {
  constructor(
    readonly node: { min: number; max: number; id: number },
    readonly phase: number,
    readonly chars: number,
    readonly need: number,
    readonly lo: number,
    readonly hi: number,
  ) {}
  #with(phase: number, chars: number, need = 0, lo = 0x80, hi = 0xbf) {
    return new StrFrame(this.node, phase, chars, need, lo, hi);
  }
  step(b: number): Step {
    const { min, max } = this.node;
    switch (this.phase) {
      case 0:
        return b === 0x22 ? this.#with(1, 0) : REJECT;
      case 1: {
        if (this.need > 0) {
          if (b < this.lo || b > this.hi) return REJECT;
          return this.#with(1, this.chars, this.need - 1);
        }
        if (b === 0x22) return this.chars >= min ? DONE : REJECT;
        if (b < 0x20 || b > 0xf4 || (b >= 0x80 && b < 0xc2)) return REJECT;
        if (this.chars >= max) return REJECT;
        if (b === 0x5c) return this.#with(2, this.chars);
        if (b < 0x80) {
          // Unbounded strings keep one frame for all plain characters.
          return max === Infinity && this.chars >= min
            ? this
            : this.#with(1, this.chars + 1);
        }
        if (b < 0xe0) return this.#with(1, this.chars + 1, 1);
        if (b < 0xf0) {
          return this.#with(
            1,
            this.chars + 1,
            2,
            b === 0xe0 ? 0xa0 : 0x80,
            b === 0xed ? 0x9f : 0xbf,
          );
        }
        return this.#with(
          1,
          this.chars + 1,
          3,
          b === 0xf0 ? 0x90 : 0x80,
          b === 0xf4 ? 0x8f : 0xbf,
        );
      }
      case 2:
        if (b === 0x75) return this.#with(3, this.chars);
        return '"\\/bfnrt'.includes(String.fromCharCode(b))
          ? this.#with(1, this.chars + 1)
          : REJECT;
      case 3:
        if (!isHex(b)) return REJECT;
        // No surrogate halves (\uD800–\uDFFF): each escape is one character.
        return this.#with(4, this.chars, 0, b === 0x64 || b === 0x44 ? 1 : 0);
      case 4:
        if (!isHex(b)) return REJECT;
        if (this.lo === 1 && !(isDigit(b) && b < 0x38)) return REJECT;
        return this.#with(5, this.chars);
      case 5:
        return isHex(b) ? this.#with(6, this.chars) : REJECT;
      default:
        return isHex(b) ? this.#with(1, this.chars + 1) : REJECT;
    }
  }
  child(): Frame {
    return this;
  }
  key(): string {
    const c = this.node.max === Infinity && this.chars >= this.node.min
      ? "+"
      : this.chars;
    return `S${this.node.id}.${this.phase}.${c}.${this.need}.${this.lo}.${this.hi}`;
  }
}

/**
 * A JSON number. Phases: 0 start, 1 after "-", 2 integer digits, 3 after
 * a leading 0, 4 after ".", 5 fraction digits, 6 after "e", 7 after the
 * exponent's sign, 8 exponent digits; `n` digits so far in the part.
 */
class NumFrame implements Frame {
  constructor(
    readonly integer: boolean,
    readonly phase: number,
    readonly n: number,
  ) {}
  #to(phase: number, n = 0) {
    return new NumFrame(this.integer, phase, n);
  }
  step(b: number): Step {
    const d = isDigit(b);
    const exp = !this.integer && (b === 0x65 || b === 0x45);
    switch (this.phase) {
      case 0:
      case 1:
        if (b === 0x2d && this.phase === 0) return this.#to(1);
        if (b === 0x30) return this.#to(3);
        return d ? this.#to(2, 1) : REJECT;
      case 2:
        if (d) return this.n < 15 ? this.#to(2, this.n + 1) : REJECT;
        if (b === 0x2e && !this.integer) return this.#to(4);
        if (exp) return this.#to(6);
        return DONE_BEFORE;
      case 3:
        if (b === 0x2e && !this.integer) return this.#to(4);
        if (exp) return this.#to(6);
        return d ? REJECT : DONE_BEFORE;
      case 4:
        return d ? this.#to(5, 1) : REJECT;
      case 5:
        if (d) return this.n < 15 ? this.#to(5, this.n + 1) : REJECT;
        if (exp) return this.#to(6);
        return DONE_BEFORE;
      case 6:
      case 7:
        if ((b === 0x2b || b === 0x2d) && this.phase === 6) return this.#to(7);
        return d ? this.#to(8, 1) : REJECT;
      default:
        if (d) return this.n < 3 ? this.#to(8, this.n + 1) : REJECT;
        return DONE_BEFORE;
    }
  }
  child(): Frame {
    return this;
  }
  key(): string {
    return `N${this.integer ? "i" : "f"}${this.phase}.${this.n}`;
  }
}

/**
 * An array. Phases: 0 before "[", 1 after "[", 2 after an item, 3 after
 * ","; `n` items so far, `ws` the whitespace state (see `wsStep`).
 */
class ArrFrame implements Frame {
  constructor(
    readonly node: Extract<Node, { kind: "arr" }>,
    readonly phase: number,
    readonly n: number,
    readonly ws: number,
  ) {}
  #item(i: number): Node | null {
    return this.node.prefix[i] ?? this.node.items;
  }
  step(b: number, g: Grammar): Step {
    const { min, max } = this.node;
    if (this.phase === 0) {
      return b === 0x5b ? new ArrFrame(this.node, 1, 0, 0) : REJECT;
    }
    if (b < 0) return REJECT;
    if (isWs(b)) {
      const w = wsStep(this.ws, b, g.maxWs);
      return w === undefined
        ? REJECT
        : new ArrFrame(this.node, this.phase, this.n, w);
    }
    const canItem = this.n < max && this.#item(this.n) !== null;
    if (this.phase === 2) {
      if (b === 0x2c) {
        return canItem ? new ArrFrame(this.node, 3, this.n, 0) : REJECT;
      }
      return b === 0x5d && this.n >= min ? DONE : REJECT;
    }
    if (this.phase === 1 && b === 0x5d) return this.n >= min ? DONE : REJECT;
    if (!canItem) return REJECT;
    return {
      push: this.#item(this.n)!,
      self: new ArrFrame(this.node, 3, this.n, 0),
    };
  }
  child(): Frame {
    return new ArrFrame(this.node, 2, this.n + 1, 0);
  }
  key(): string {
    return `A${this.node.id}.${this.phase}.${this.n}.${this.ws}`;
  }
}

/**
 * An object. Phases: 0 before "{", 1 after "{", 2 reading a key, 3 after
 * the key, 4 after ":", 5 after a value, 6 after ","; `seen` is a bit set
 * of the declared keys given so far, `at` the key being read or valued.
 */
class ObjFrame implements Frame {
  constructor(
    readonly node: Extract<Node, { kind: "obj" }>,
    readonly phase: number,
    readonly seen: bigint,
    readonly at: number,
    readonly ws: number,
  ) {}
  #to(phase: number, seen = this.seen, at = this.at) {
    return new ObjFrame(this.node, phase, seen, at, 0);
  }
  #remaining(): number[] {
    const out: number[] = [];
    this.node.props.forEach((_, i) => {
      if (!(this.seen & (1n << BigInt(i)))) out.push(i);
    });
    return out;
  }
  #canClose(): boolean {
    return this.node.props.every((p, i) =>
      !p.required || (this.seen & (1n << BigInt(i)))
    );
  }
  #canKey(): boolean {
    return this.node.free !== undefined || this.#remaining().length > 0;
  }
  step(b: number, g: Grammar): Step {
    if (this.phase === 0) return b === 0x7b ? this.#to(1) : REJECT;
    if (b < 0) return REJECT;
    if (isWs(b) && this.phase !== 2) {
      const w = wsStep(this.ws, b, g.maxWs);
      return w === undefined
        ? REJECT
        : new ObjFrame(this.node, this.phase, this.seen, this.at, w);
    }
    switch (this.phase) {
      case 1:
      case 6:
        if (b === 0x7d && this.phase === 1) {
          return this.#canClose() ? DONE : REJECT;
        }
        if (b !== 0x22 || !this.#canKey()) return REJECT;
        return { push: KEY_NODE, self: this.#to(2) };
      case 3:
        return b === 0x3a ? this.#to(4) : REJECT;
      case 4: {
        const value = this.at >= 0
          ? this.node.props[this.at].node
          : this.node.free!;
        return { push: value, self: this.#to(4) };
      }
      default: // 5
        if (b === 0x2c) return this.#canKey() ? this.#to(6) : REJECT;
        return b === 0x7d && this.#canClose() ? DONE : REJECT;
    }
  }
  child(result: number): Frame {
    if (this.phase === 2) {
      return result >= 0
        ? this.#to(3, this.seen | (1n << BigInt(result)), result)
        : this.#to(3, this.seen, -1);
    }
    return this.#to(5, this.seen, -1);
  }
  /** The frames that read a key here: the remaining declared keys, or any string. */
  keyFrame(): Frame {
    if (this.node.free) {
      return new StrFrame(
        { min: 0, max: Infinity, id: -1 },
        0,
        0,
        0,
        0x80,
        0xbf,
      );
    }
    const rest = this.#remaining();
    return new LitFrame(
      rest.map((i) => this.node.props[i].bytes),
      0,
      this.node.id,
      rest,
      true,
    );
  }
  key(): string {
    return `O${this.node.id}.${this.phase}.${this.seen}.${this.at}.${this.ws}`;
  }
}

/** Stands for "the key of the object frame below" in a push. */
const KEY_NODE: Node = { kind: "any", id: -2 };

/** A compiled grammar; its states are lists of parses. */
class Grammar implements ByteGrammar<readonly Stack[]> {
  readonly maxWs: number;
  readonly maxDepth: number;
  readonly #root: Node;

  constructor(root: Node, o: Required<JsonSchemaOptions>) {
    this.#root = root;
    this.maxWs = o.maxWhitespace;
    this.maxDepth = o.maxDepth;
  }

  start(): readonly Stack[] {
    return [{
      frame: new RootFrame(this.#root, 0, false),
      parent: null,
      depth: 0,
    }];
  }

  /** Frames that begin a value of `node` (several for alternatives). */
  #framesOf(node: Node, out: Frame[], seen = 0): void {
    if (seen > 64) {
      throw new RangeError(
        "JSON schema: $ref or anyOf nesting reaches itself without consuming input",
      );
    }
    switch (node.kind) {
      case "obj":
        out.push(new ObjFrame(node, 0, 0n, -1, 0));
        break;
      case "arr":
        out.push(new ArrFrame(node, 0, 0, 0));
        break;
      case "str":
        out.push(new StrFrame(node, 0, 0, 0, 0x80, 0xbf));
        break;
      case "num":
        out.push(new NumFrame(node.integer, 0, 0));
        break;
      case "lit":
        out.push(
          new LitFrame(
            node.values,
            0,
            node.id,
            node.values.map((_, i) => i),
            false,
          ),
        );
        break;
      case "alt":
        for (const o of node.options) this.#framesOf(o, out, seen + 1);
        break;
      case "ref":
        this.#framesOf(node.resolve(), out, seen + 1);
        break;
      default:
        out.push(...ANY_FRAMES);
    }
  }

  /** Every parse after feeding `b` (−1: the end) to `s`, appended to `out`. */
  #feed(s: Stack, b: number, out: Stack[]): void {
    const r = s.frame.step(b, this);
    if (r === REJECT) return;
    if (r === DONE || r === DONE_BEFORE || r instanceof KeyDone) {
      const p = s.parent;
      if (!p) {
        if (r === DONE && b < 0) out.push(s);
        return;
      }
      const up: Stack = {
        frame: p.frame.child(r instanceof KeyDone ? r.index : -1),
        parent: p.parent,
        depth: p.depth,
      };
      if (r === DONE_BEFORE) this.#feed(up, b, out);
      else out.push(up);
      return;
    }
    if ("push" in r) {
      if (s.depth >= this.maxDepth) return;
      const parent: Stack = { frame: r.self, parent: s.parent, depth: s.depth };
      const frames: Frame[] = [];
      if (r.push === KEY_NODE) frames.push((r.self as ObjFrame).keyFrame());
      else this.#framesOf(r.push, frames);
      for (const f of frames) {
        this.#feed({ frame: f, parent, depth: s.depth + 1 }, b, out);
      }
      return;
    }
    out.push(
      r === s.frame ? s : { frame: r, parent: s.parent, depth: s.depth },
    );
  }

  step(state: readonly Stack[], byte: number): readonly Stack[] | undefined {
    if (state.length === 1) {
      const out: Stack[] = [];
      this.#feed(state[0], byte, out);
      if (out.length === 0) return undefined;
      return out.length === 1 && out[0] === state[0] ? state : out;
    }
    const out: Stack[] = [];
    for (const s of state) this.#feed(s, byte, out);
    return out.length > 0 ? dedupe(out) : undefined;
  }

  complete(state: readonly Stack[]): boolean {
    const out: Stack[] = [];
    for (const s of state) {
      this.#feed(s, -1, out);
      if (out.length > 0) return true;
    }
    return false;
  }

  finished(state: readonly Stack[]): boolean {
    return state.every((s) =>
      s.parent === null && s.frame instanceof RootFrame && s.frame.done
    );
  }

  key(state: readonly Stack[]): string {
    return state.map((s) => {
      const parts: string[] = [];
      for (let x: Stack | null = s; x; x = x.parent) parts.push(x.frame.key());
      return parts.join("/");
    }).join("|");
  }
}

/** Parses that are the same (by key) kept once. */
function dedupe(list: Stack[]): Stack[] {
  if (list.length < 2) return list;
  const seen = new Set<string>();
  const out: Stack[] = [];
  for (const s of list) {
    const parts: string[] = [];
    for (let x: Stack | null = s; x; x = x.parent) parts.push(x.frame.key());
    const k = parts.join("/");
    if (!seen.has(k)) {
      seen.add(k);
      out.push(s);
    }
  }
  return out;
}

/** Nodes of "any JSON value" (JSON mode), built once. */
const ANY_NODE: Node = { kind: "any", id: -3 };
const ANY_OBJ: Extract<Node, { kind: "obj" }> = {
  kind: "obj",
  props: [],
  free: ANY_NODE,
  id: -4,
};
const ANY_ARR: Extract<Node, { kind: "arr" }> = {
  kind: "arr",
  prefix: [],
  items: ANY_NODE,
  min: 0,
  max: Infinity,
  id: -5,
};
const ANY_FRAMES: Frame[] = [
  new ObjFrame(ANY_OBJ, 0, 0n, -1, 0),
  new ArrFrame(ANY_ARR, 0, 0, 0),
  new StrFrame({ min: 0, max: Infinity, id: -6 }, 0, 0, 0, 0x80, 0xbf),
  new NumFrame(false, 0, 0),
  new LitFrame(
    [enc.encode("true"), enc.encode("false"), enc.encode("null")],
    0,
    -7,
    [0, 1, 2],
    false,
  ),
];

/**
 * Compiles a JSON Schema into a byte grammar whose complete states are
 * exactly the canonical JSON texts (see the module notes) that validate.
 * `"json"` (or `undefined`) stands for JSON mode: any JSON object.
 *
 * @param schema A JSON Schema (an object or `true`), or `"json"`.
 * @param options Whitespace and depth limits.
 * @returns The grammar.
 * @throws {TypeError} For a keyword or form that is not supported (the
 * message names it and where it is), or a schema nothing validates.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { compileJsonSchema } from "@modelhost/modelhost/tokenizers";
 * const g = compileJsonSchema({ enum: ["red", "green"] });
 * let s = g.start();
 * for (const b of new TextEncoder().encode('"gre')) s = g.step(s, b)!;
 * assert(g.step(s, 0x78) === undefined); // "x" cannot follow "gre
 * ```
 */
export function compileJsonSchema(
  schema: unknown,
  options: JsonSchemaOptions = {},
): ByteGrammar<unknown> {
  const o = { maxWhitespace: 20, maxDepth: 64, ...options };
  const root = schema === "json" || schema === undefined
    ? ANY_OBJ
    : new Compiler(schema).compile(schema, "#");
  return new Grammar(root, o) as ByteGrammar<unknown>;
}
