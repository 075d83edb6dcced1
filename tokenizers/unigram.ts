/**
 * The Unigram model (SentencePiece's default; T5, XLM-R, ALBERT, mT5 ...):
 * every piece has a log-probability score and a text is cut into the
 * pieces whose scores sum highest (Viterbi over the lattice of pieces
 * found in the text). A character no piece covers becomes the unknown
 * token, scored 10 below the lowest piece; runs of unknowns fuse into one.
 *
 * This module holds the model only (one pre-tokenized word to ids); the
 * pipeline around it lives in `hf.ts` and `gguf.ts`.
 *
 * @module
 */

import { bytePiece, utf8 } from "./_text.ts";

/** What a {@link UnigramModel} is built from. */
export interface UnigramSpec {
  /** Piece text by id. */
  pieces: readonly string[];
  /** Piece score by id (log probabilities; higher is likelier). */
  scores: ArrayLike<number>;
  /** The unknown piece's id; a character no piece covers is an error without it. */
  unk?: number;
  /** Unknown text becomes its UTF-8 bytes as `<0xNN>` pieces when all exist. @default {false} */
  byteFallback?: boolean;
  /** Words remembered with their ids (0 turns the cache off). @default {50000} */
  cacheSize?: number;
}

/**
 * How far below the lowest piece the unknown token scores (SentencePiece's
 * `kUnkPenalty`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { UNK_PENALTY, UnigramModel } from "@modelhost/modelhost/tokenizers";
 * // "x" has no piece: it scores -1 - UNK_PENALTY, so one unknown beats nothing better
 * const m = new UnigramModel({ pieces: ["<unk>", "a"], scores: [-1, -1], unk: 0 });
 * const ids: number[] = [];
 * m.encodeWord("ax", ids);
 * assert(UNK_PENALTY === 10 && ids.join() === "1,0");
 * ```
 */
export const UNK_PENALTY = 10;

interface Node {
  next: Map<number, Node> | undefined;
  id: number;
}

/**
 * A Unigram model: one word in, token ids out.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { UnigramModel } from "@modelhost/modelhost/tokenizers";
 * const m = new UnigramModel({
 *   pieces: ["<unk>", "a", "b", "ab"],
 *   scores: [0, -2, -2, -1],
 *   unk: 0,
 * });
 * const ids: number[] = [];
 * m.encodeWord("abaxy", ids); // "ab" (-1) beats "a" + "b" (-4); "xy" is one unknown
 * assert(ids.join() === "3,1,0");
 * ```
 */
export class UnigramModel {
  /** Number of pieces. */
  readonly vocabSize: number;
  readonly #spec: UnigramSpec;
  readonly #root: Node = { next: undefined, id: -1 };
  readonly #ids = new Map<string, number>();
  readonly #score: Float64Array;
  readonly #unkScore: number;
  readonly #byteIds = new Int32Array(256).fill(-1);
  readonly #cache = new Map<string, Int32Array>();
  readonly #cacheSize: number;

  /**
   * Builds the model.
   *
   * @param spec Pieces, scores, the unknown id and options.
   * @throws {RangeError} When there are fewer scores than pieces, or the
   * unknown id is outside the pieces.
   */
  constructor(spec: UnigramSpec) {
    const n = spec.pieces.length;
    if (spec.scores.length < n) {
      throw new RangeError(
        `Unigram vocabulary has ${n} pieces but ${spec.scores.length} scores`,
      );
    }
    if (spec.unk !== undefined && !(spec.unk >= 0 && spec.unk < n)) {
      throw new RangeError(
        `Unigram unknown id ${spec.unk} is outside the ${n} pieces`,
      );
    }
    this.#spec = spec;
    this.vocabSize = n;
    this.#cacheSize = spec.cacheSize ?? 50_000;
    this.#score = new Float64Array(n);
    let min = Infinity;
    for (let id = 0; id < n; id++) {
      const text = spec.pieces[id];
      this.#score[id] = spec.scores[id];
      this.#ids.set(text, id); // a later duplicate wins, as in the reference
      if (spec.scores[id] < min) min = spec.scores[id];
    }
    this.#unkScore = min - UNK_PENALTY;
    for (let id = 0; id < n; id++) {
      const text = spec.pieces[id];
      if (text === "") continue;
      let node = this.#root;
      for (let i = 0; i < text.length; i++) {
        node.next ??= new Map();
        const c = text.charCodeAt(i);
        let nx = node.next.get(c);
        if (!nx) {
          nx = { next: undefined, id: -1 };
          node.next.set(c, nx);
        }
        node = nx;
      }
      node.id = this.#ids.get(text)!;
    }
    for (let b = 0; b < 256; b++) {
      const id = this.#ids.get(bytePiece(b));
      if (id !== undefined) this.#byteIds[b] = id;
    }
  }

  /** The id of a piece text, or undefined. */
  pieceId(text: string): number | undefined {
    return this.#ids.get(text);
  }

  /**
   * Appends the ids of one word to `out`.
   *
   * @param word The word (already normalized and pre-tokenized).
   * @param out Receives the ids.
   * @throws {TypeError} When a character has no piece and there is no unknown token.
   */
  encodeWord(word: string, out: number[]): void {
    if (word.length === 0) return;
    const cached = this.#cacheSize > 0 ? this.#cache.get(word) : undefined;
    if (cached !== undefined) {
      for (let i = 0; i < cached.length; i++) out.push(cached[i]);
      return;
    }
    const start = out.length;
    for (const piece of this.segment(word)) this.#resolve(piece, out);
    if (this.#cacheSize === 0 || word.length > 256) return;
    if (this.#cache.size >= this.#cacheSize) this.#cache.clear();
    this.#cache.set(word, Int32Array.from(out.slice(start)));
  }

  /**
   * The best segmentation of a word as piece texts, runs of unknown
   * characters fused into one string.
   *
   * @param word The word.
   * @returns The pieces, in order.
   * @throws {TypeError} When a character has no piece and there is no unknown token.
   */
  segment(word: string): string[] {
    const pieces: string[] = [];
    this.#viterbi(word, (s, e) => {
      pieces.push(word.slice(s, e));
    });
    return pieces;
  }

  /**
   * Runs Viterbi over `word` and calls `piece(start, end, id)` for each
   * piece of the best path in order (unknown runs fused, id -1).
   */
  #viterbi(
    word: string,
    piece: (start: number, end: number, id: number) => void,
  ): void {
    const n = word.length;
    const bestScore = new Float64Array(n + 1);
    const bestStart = new Int32Array(n + 1).fill(-1);
    const bestId = new Int32Array(n + 1);
    bestStart[0] = 0;
    const unk = this.#spec.unk ?? -1;
    for (let s = 0; s < n;) {
      if (bestStart[s] < 0) {
        s++;
        continue;
      }
      const base = bestScore[s];
      const c0 = word.charCodeAt(s);
      const charLen = c0 >= 0xd800 && c0 <= 0xdbff && s + 1 < n &&
          (word.charCodeAt(s + 1) & 0xfc00) === 0xdc00
        ? 2
        : 1;
      let single = false;
      let node: Node | undefined = this.#root;
      for (let e = s; e < n && node?.next; e++) {
        node = node.next.get(word.charCodeAt(e));
        if (!node) break;
        if (node.id < 0) continue;
        const end = e + 1;
        // a piece that ends inside a surrogate pair is not a piece of this text
        if (end < n && (word.charCodeAt(end) & 0xfc00) === 0xdc00) continue;
        const score = base + this.#score[node.id];
        if (bestStart[end] < 0 || score > bestScore[end]) {
          bestScore[end] = score;
          bestStart[end] = s;
          bestId[end] = node.id;
        }
        if (end - s === charLen) single = true;
      }
      if (!single) {
        if (unk < 0) {
          throw new TypeError(
            `Cannot encode U+${
              word.codePointAt(s)!.toString(16).toUpperCase().padStart(4, "0")
            }: no piece covers it and the model has no unknown token`,
          );
        }
        const end = s + charLen;
        const score = base + this.#unkScore;
        if (bestStart[end] < 0 || score > bestScore[end]) {
          bestScore[end] = score;
          bestStart[end] = s;
          bestId[end] = unk;
        }
      }
      s += charLen;
    }
    const ends: number[] = [];
    for (let e = n; e > 0; e = bestStart[e]) ends.push(e);
    ends.reverse();
    let start = 0;
    let fusedFrom = -1;
    for (const e of ends) {
      const s = bestStart[e];
      if (bestId[e] === unk) {
        if (fusedFrom < 0) fusedFrom = s;
      } else {
        if (fusedFrom >= 0) piece(fusedFrom, s, -1);
        fusedFrom = -1;
        piece(s, e, bestId[e]);
      }
      start = e;
    }
    if (fusedFrom >= 0) piece(fusedFrom, start, -1);
  }

  #resolve(piece: string, out: number[]): void {
    const id = this.#ids.get(piece);
    if (id !== undefined) {
      out.push(id);
      return;
    }
    if (this.#spec.byteFallback) {
      const bytes = utf8(piece);
      let ok = true;
      for (const b of bytes) ok &&= this.#byteIds[b] >= 0;
      if (ok) {
        for (const b of bytes) out.push(this.#byteIds[b]);
        return;
      }
    }
    if (this.#spec.unk === undefined) {
      throw new TypeError(
        `Cannot encode "${piece}": not a piece and the model has no unknown token`,
      );
    }
    out.push(this.#spec.unk);
  }
}
