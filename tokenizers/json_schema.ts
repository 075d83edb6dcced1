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

import { Compiler, enc, type Node } from "./_json_schema_nodes.ts";
import {
  ArrFrame,
  DONE,
  DONE_BEFORE,
  type Frame,
  KEY_NODE,
  KeyDone,
  LitFrame,
  NumFrame,
  ObjFrame,
  REJECT,
  RootFrame,
  type Stack,
  StrFrame,
} from "./_json_schema_frames.ts";

export { IGNORED_KEYWORDS } from "./_json_schema_nodes.ts";

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
