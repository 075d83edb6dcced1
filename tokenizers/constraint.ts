/**
 * Token-level constraints for sampling (structured output). A
 * {@link ByteGrammar} says which bytes may come next; here it is lifted to
 * the vocabulary: the tokens whose bytes the grammar accepts from the
 * current state, found by walking a trie of the vocabulary's byte strings
 * alongside the grammar (a branch is left as soon as the grammar refuses a
 * byte), so one step costs in proportion to the tokens still possible, not
 * to the vocabulary. Masks are remembered by grammar state, so repeated
 * states (inside a long string, say) cost one lookup.
 *
 * `generate()` takes a constraint as its `constraint` option.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createTokenizer, jsonConstraint } from "@modelhost/modelhost/tokenizers";
 * const tok = createTokenizer({
 *   "tokenizer.ggml.model": "llama",
 *   "tokenizer.ggml.tokens": ["<unk>", "<s>", "</s>", "{", "}", "\"a\"", ":", "1", "x"],
 *   "tokenizer.ggml.scores": [0, 0, 0, -1, -1, -1, -1, -1, -1],
 *   "tokenizer.ggml.token_type": [2, 3, 3, 1, 1, 1, 1, 1, 1],
 * });
 * const c = jsonConstraint(tok, {
 *   type: "object", properties: { a: { type: "integer" } }, required: ["a"],
 * });
 * const logits = new Float32Array(9);
 * c.mask(logits);
 * assert(logits[3] === 0 && logits[8] === -Infinity); // "{" yes, "x" no
 * for (const id of [3, 5, 6, 7, 4]) c.accept(id);
 * assert(c.complete() && c.finished());
 * ```
 *
 * @module
 */

import { type ByteGrammar, compileJsonSchema } from "./json_schema.ts";
import type { JsonSchemaOptions } from "./json_schema.ts";
import type { Tokenizer } from "./tokenizer.ts";

/**
 * Limits which tokens may come next while sampling; one instance follows
 * one generation.
 */
export interface TokenConstraint {
  /**
   * Sets the logits of tokens that may not come next to `-Infinity`
   * (tokens without bytes, such as end-of-generation, included: whoever
   * samples decides about those from {@link TokenConstraint.complete}).
   */
  mask(logits: Float32Array): void;
  /**
   * Advances past a token.
   *
   * @throws {RangeError} When the token may not come next.
   */
  accept(id: number): void;
  /** Whether the output so far is whole (generation may end here). */
  complete(): boolean;
  /** Whether nothing may follow (generation must end here). */
  finished(): boolean;
}

/** The vocabulary's byte strings as a trie, built once per tokenizer. */
interface Trie {
  /** Per node: first child, next sibling, the byte on its edge. */
  first: Int32Array;
  next: Int32Array;
  byte: Uint8Array;
  /** Per node: the tokens that end there, `ids[idStart[n] … idStart[n+1])`. */
  idStart: Int32Array;
  ids: Int32Array;
  /** Vocabulary size. */
  vocab: number;
}

const tries = new WeakMap<Tokenizer, Trie>();

function trieOf(tok: Tokenizer): Trie {
  const have = tries.get(tok);
  if (have) return have;
  const first: number[] = [-1], next: number[] = [-1], byte: number[] = [0];
  const ends: number[][] = [[]];
  for (let id = 0; id < tok.vocabSize; id++) {
    const bytes = tok.tokenBytes(id);
    if (bytes.length === 0) continue;
    let n = 0;
    for (const b of bytes) {
      let c = first[n];
      while (c >= 0 && byte[c] !== b) c = next[c];
      if (c < 0) {
        c = first.length;
        first.push(-1);
        next.push(first[n]);
        byte.push(b);
        ends.push([]);
        first[n] = c;
      }
      n = c;
    }
    ends[n].push(id);
  }
  const idStart = new Int32Array(ends.length + 1);
  for (let i = 0; i < ends.length; i++) {
    idStart[i + 1] = idStart[i] + ends[i].length;
  }
  const ids = new Int32Array(idStart[ends.length]);
  for (let i = 0; i < ends.length; i++) ids.set(ends[i], idStart[i]);
  const t: Trie = {
    first: Int32Array.from(first),
    next: Int32Array.from(next),
    byte: Uint8Array.from(byte),
    idStart,
    ids,
    vocab: tok.vocabSize,
  };
  tries.set(tok, t);
  return t;
}

/** Options of {@link grammarConstraint}. */
export interface GrammarConstraintOptions {
  /** Masks remembered by grammar state (least recently used dropped). @default {256} */
  cacheSize?: number;
}

/**
 * Lifts a byte grammar to the tokens of a vocabulary.
 *
 * @param tokenizer The model's tokenizer (its `tokenBytes` are what the
 *   grammar sees).
 * @param grammar The byte grammar.
 * @param options Mask cache size.
 * @returns A fresh constraint at the grammar's start.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { compileJsonSchema, createTokenizer, grammarConstraint } from "@modelhost/modelhost/tokenizers";
 * const tok = createTokenizer({
 *   "tokenizer.ggml.model": "llama",
 *   "tokenizer.ggml.tokens": ["<unk>", "<s>", "</s>", "tr", "ue", "x"],
 *   "tokenizer.ggml.scores": [0, 0, 0, -1, -1, -1],
 *   "tokenizer.ggml.token_type": [2, 3, 3, 1, 1, 1],
 * });
 * const c = grammarConstraint(tok, compileJsonSchema({ type: "boolean" }));
 * c.accept(3);
 * c.accept(4);
 * assert(c.finished());
 * ```
 */
export function grammarConstraint<S>(
  tokenizer: Tokenizer,
  grammar: ByteGrammar<S>,
  options: GrammarConstraintOptions = {},
): TokenConstraint {
  const trie = trieOf(tokenizer);
  const cacheSize = options.cacheSize ?? 256;
  const cache = cachesOf(grammar, trie);
  let state = grammar.start();
  let sinceText = "";

  /** The allowed token ids from `state`, walking the trie. */
  const allowed = (): Int32Array => {
    const key = grammar.key?.(state);
    if (key !== undefined) {
      const hit = cache.get(key);
      if (hit) {
        cache.delete(key);
        cache.set(key, hit);
        return hit;
      }
    }
    const out: number[] = [];
    const { first, next, byte, idStart, ids } = trie;
    // depth-first, with the grammar state reached at each node
    const nodes: number[] = [first[0]];
    const states: S[] = [state];
    while (nodes.length > 0) {
      const n = nodes.pop()!;
      const from = states[states.length - 1];
      if (n < 0) {
        states.pop();
        continue;
      }
      nodes.push(next[n]);
      const s = grammar.step(from, byte[n]);
      if (s === undefined) continue;
      for (let i = idStart[n]; i < idStart[n + 1]; i++) out.push(ids[i]);
      if (first[n] >= 0) {
        nodes.push(first[n]);
        states.push(s);
      }
    }
    const list = Int32Array.from(out);
    if (key !== undefined) {
      if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!);
      cache.set(key, list);
    }
    return list;
  };

  return {
    mask(logits: Float32Array): void {
      const ok = allowed();
      const keep = new Float32Array(ok.length);
      for (let i = 0; i < ok.length; i++) keep[i] = logits[ok[i]];
      logits.fill(-Infinity);
      for (let i = 0; i < ok.length; i++) logits[ok[i]] = keep[i];
    },
    accept(id: number): void {
      const bytes = tokenizer.tokenBytes(id);
      let s: S | undefined = state;
      for (const b of bytes) {
        s = grammar.step(s, b);
        if (s === undefined) {
          throw new RangeError(
            `Token ${id} (${
              JSON.stringify(tokenizer.decode([id]))
            }) may not follow ${JSON.stringify(sinceText.slice(-40))}`,
          );
        }
      }
      if (bytes.length === 0) {
        throw new RangeError(
          `Token ${id} has no text; it cannot continue constrained output`,
        );
      }
      state = s;
      sinceText += tokenizer.decode([id]);
    },
    complete: () => grammar.complete(state),
    finished: () => grammar.finished(state),
  };
}

/** Mask caches, shared by the constraints of one grammar and vocabulary. */
const masks = new WeakMap<object, WeakMap<Trie, Map<string, Int32Array>>>();

function cachesOf(grammar: object, trie: Trie): Map<string, Int32Array> {
  let byTrie = masks.get(grammar);
  if (!byTrie) masks.set(grammar, byTrie = new WeakMap());
  let m = byTrie.get(trie);
  if (!m) byTrie.set(trie, m = new Map());
  return m;
}

/**
 * A constraint that makes generation produce JSON: any JSON object
 * (`"json"`, JSON mode), or a value that validates against a JSON Schema
 * (see `compileJsonSchema` for what is understood). Compiled schemas are
 * reused for equal schemas, and so are their token masks.
 *
 * @param tokenizer The model's tokenizer.
 * @param schema A JSON Schema, or `"json"`.
 * @param options Whitespace and depth limits of the grammar.
 * @returns A fresh constraint.
 * @throws {TypeError} For a schema keyword that is not supported.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createTokenizer, jsonConstraint } from "@modelhost/modelhost/tokenizers";
 * const tok = createTokenizer({
 *   "tokenizer.ggml.model": "llama",
 *   "tokenizer.ggml.tokens": ["<unk>", "<s>", "</s>", "{", "}", "[", "a"],
 *   "tokenizer.ggml.scores": [0, 0, 0, -1, -1, -1, -1],
 *   "tokenizer.ggml.token_type": [2, 3, 3, 1, 1, 1, 1],
 * });
 * const c = jsonConstraint(tok, "json");
 * const l = new Float32Array(7);
 * c.mask(l);
 * assert(l[3] === 0 && l[5] === -Infinity); // JSON mode: an object
 * ```
 */
export function jsonConstraint(
  tokenizer: Tokenizer,
  schema: unknown,
  options: JsonSchemaOptions = {},
): TokenConstraint {
  const key = JSON.stringify([schema, options]);
  let g = grammars.get(key);
  if (g) {
    grammars.delete(key);
  } else {
    g = compileJsonSchema(schema, options);
    if (grammars.size >= 64) grammars.delete(grammars.keys().next().value!);
  }
  grammars.set(key, g);
  return grammarConstraint(tokenizer, g);
}

/** Compiled schemas by their JSON text (least recently used dropped). */
const grammars = new Map<string, ByteGrammar<unknown>>();
