/**
 * Score-driven SentencePiece BPE (Llama 1/2, TinyLlama, Baichuan and the
 * other GGUF vocabularies with `tokenizer.ggml.model = "llama"`): the text,
 * with spaces shown as `▁`, starts as one symbol per character; the
 * adjacent pair whose concatenation is the vocabulary piece with the
 * highest score is merged first (leftmost on ties) until no adjacent pair
 * forms a piece. Characters left over that are not pieces become their
 * UTF-8 bytes as `<0xNN>` tokens (byte fallback).
 *
 * @module
 */

import {
  adjacentUnits,
  forEachSegment,
  MAX_SYMBOLS,
  PairMerger,
  PairTable,
} from "./_merge.ts";
import { ByteBuffer, bytePiece, utf8Append } from "./_text.ts";

/** What an {@link SpmModel} is built from. */
export interface SpmModelSpec {
  /** Piece text by id. */
  tokens: readonly string[];
  /** Piece scores by id (higher merges first). */
  scores: ArrayLike<number>;
  /** Id for bytes that have no `<0xNN>` piece; dropped when absent. */
  unk?: number;
  /** Merge long texts segment by segment (same result, much faster). @default {true} */
  segment?: boolean;
  /** Segments remembered with their ids (0 turns the cache off). @default {50000} */
  cacheSize?: number;
}

/** Longer segments are not cached. */
const CACHED_SEGMENT_LENGTH = 256;

/**
 * A SentencePiece BPE model. Every way of cutting a piece into two parts
 * that are themselves pieces (or single characters) is a mergeable pair
 * whose priority is the piece's score, which reproduces SentencePiece's
 * and llama.cpp's merge order.
 */
export class SpmModel {
  /** Number of pieces. */
  readonly vocabSize: number;
  readonly #unk: number;
  readonly #merger: PairMerger;
  readonly #joins: PairTable | undefined;
  /** Symbol id of each BMP code unit that is a piece or a lone character; -1 otherwise. */
  readonly #bmp = new Int32Array(65536).fill(-1);
  /** The same for characters outside the BMP. */
  readonly #astral = new Map<number, number>();
  readonly #symText: string[];
  readonly #byteTok = new Int32Array(256).fill(-1);
  #syms = new Int32Array(256);
  readonly #buf = new ByteBuffer();
  readonly #cache = new Map<string, Int32Array>();
  readonly #cacheSize: number;

  /**
   * Builds the model.
   *
   * @param spec Pieces, scores and the unknown id.
   * @throws {RangeError} When `scores` is shorter than `tokens`.
   */
  constructor(spec: SpmModelSpec) {
    const tokens = spec.tokens;
    this.vocabSize = tokens.length;
    if (spec.scores.length < tokens.length) {
      throw new RangeError(
        `SentencePiece vocabulary has ${tokens.length} pieces but ${spec.scores.length} scores`,
      );
    }
    this.#unk = spec.unk ?? -1;
    this.#cacheSize = spec.cacheSize ?? 50_000;
    this.#symText = tokens.slice();
    const ids = new Map<string, number>();
    for (let i = 0; i < tokens.length; i++) {
      if (tokens[i] !== "" && !ids.has(tokens[i])) ids.set(tokens[i], i);
    }
    const symOf = (text: string, create: boolean): number => {
      const id = ids.get(text);
      if (id !== undefined) return id;
      // a lone character that is not a piece can still start a merge
      const cp = text.codePointAt(0)!;
      if (!create || text.length !== (cp > 0xffff ? 2 : 1)) return -1;
      const next = this.#symText.length;
      if (next >= MAX_SYMBOLS) {
        throw new RangeError(
          `SentencePiece vocabulary too large: ${next} symbols`,
        );
      }
      this.#symText.push(text);
      ids.set(text, next);
      return next;
    };
    const pairs = new PairTable(tokens.length * 2);
    const costs = new Float64Array(tokens.length);
    const results = new Int32Array(tokens.length);
    for (let t = 0; t < tokens.length; t++) {
      const text = tokens[t];
      if (ids.get(text) !== t) continue; // empty or a duplicate
      costs[t] = -spec.scores[t];
      results[t] = t;
      for (let k = 1; k < text.length; k++) {
        const c = text.charCodeAt(k);
        if (c >= 0xdc00 && c <= 0xdfff) continue; // inside a surrogate pair
        const left = symOf(text.slice(0, k), true);
        const right = symOf(text.slice(k), true);
        if (left >= 0 && right >= 0) {
          pairs.add(left, right, t);
        }
      }
    }
    this.#merger = new PairMerger(pairs, costs, results);
    this.#joins = spec.segment === false ? undefined : adjacentUnits(tokens);
    for (const [text, id] of ids) {
      const cp = text.codePointAt(0)!;
      if (text.length === 1) this.#bmp[cp] = id;
      else if (text.length === 2 && cp > 0xffff) this.#astral.set(cp, id);
    }
    for (let b = 0; b < 256; b++) {
      const id = ids.get(bytePiece(b));
      if (id !== undefined && id < this.vocabSize) this.#byteTok[b] = id;
      else {
        // llama.cpp falls back to the byte as a one-character piece
        const one = b < 0x80 ? ids.get(String.fromCharCode(b)) : undefined;
        if (one !== undefined && one < this.vocabSize) this.#byteTok[b] = one;
      }
    }
  }

  /**
   * Appends the ids of `text` to `out`. The caller has already replaced
   * spaces with `▁` and added any space prefix.
   *
   * @param text The escaped text.
   * @param out Receives the ids.
   */
  encode(text: string, out: number[]): void {
    if (text.length === 0) return;
    if (this.#syms.length < text.length) {
      this.#syms = new Int32Array(Math.max(text.length, 2 * this.#syms.length));
    }
    // pieces never span two characters that no piece has side by side, so
    // the text is merged segment by segment (same result, far less work)
    if (this.#joins) {
      forEachSegment(
        text,
        this.#joins,
        (start, end) => this.#segment(text, start, end, out),
      );
    } else {
      this.#segment(text, 0, text.length, out);
    }
  }

  #segment(text: string, start: number, end: number, out: number[]): void {
    const cacheable = this.#cacheSize > 0 &&
      end - start <= CACHED_SEGMENT_LENGTH;
    const key = cacheable ? text.slice(start, end) : "";
    if (cacheable) {
      const hit = this.#cache.get(key);
      if (hit !== undefined) {
        for (let i = 0; i < hit.length; i++) out.push(hit[i]);
        return;
      }
    }
    const first = out.length;
    this.#merge(text, start, end, out);
    if (cacheable) {
      if (this.#cache.size >= this.#cacheSize) this.#cache.clear();
      this.#cache.set(key, Int32Array.from(out.slice(first)));
    }
  }

  #merge(text: string, start: number, end: number, out: number[]): void {
    const syms = this.#syms;
    let n = 0;
    for (let i = start; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < end) {
        const d = text.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          syms[n++] = this.#astral.get(cp) ?? -1 - cp;
          i++;
          continue;
        }
      }
      const id = this.#bmp[c];
      syms[n++] = id >= 0 ? id : -1 - c;
    }
    const m = this.#merger.merge(syms, n);
    for (let i = 0; i < m; i++) {
      const id = syms[i];
      if (id >= 0 && id < this.vocabSize) {
        out.push(id);
        continue;
      }
      const buf = this.#buf;
      buf.length = 0;
      if (id >= 0) utf8Append(this.#symText[id], buf);
      else utf8Append(String.fromCodePoint(-1 - id), buf);
      for (let j = 0; j < buf.length; j++) {
        const t = this.#byteTok[buf.bytes[j]];
        if (t >= 0) out.push(t);
        else if (this.#unk >= 0) out.push(this.#unk);
      }
    }
  }
}
