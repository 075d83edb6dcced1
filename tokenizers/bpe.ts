/**
 * Rank-driven BPE: the GPT-2 family (GPT-2, Llama 3, Qwen, SmolLM, DeepSeek,
 * Falcon, MPT, StarCoder / Refact ...), where a word's UTF-8 bytes start as
 * one symbol each and the merge list, in order, joins adjacent symbols;
 * and the character-level variant with byte fallback that Hugging Face
 * `tokenizer.json` files use for SentencePiece-converted models (Llama 2,
 * TinyLlama, Mistral).
 *
 * This module holds the model only: which ids one word becomes. Special
 * tokens, pre-tokenization and decoding live in `tokenizer.ts`, `gguf.ts`
 * and `hf.ts`.
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
import {
  BYTE_TO_CHAR,
  ByteBuffer,
  bytePiece,
  CHAR_TO_BYTE,
  utf8Append,
} from "./_text.ts";

/** What a {@link BpeModel} is built from. */
export interface BpeModelSpec {
  /** Token text by id. */
  tokens: readonly string[];
  /** Merges, highest priority first. */
  merges: readonly (readonly [string, string])[];
  /** Words start as bytes shown through the GPT-2 byte alphabet (`Ġ` = space). */
  byteLevel: boolean;
  /** Character-level only: characters missing from the vocabulary become `<0xNN>` tokens. */
  byteFallback?: boolean;
  /** A word found whole in the vocabulary is emitted without merging (Llama 3). */
  ignoreMerges?: boolean;
  /** Id for characters that cannot be represented (character-level only). */
  unk?: number;
  /** Consecutive unknown characters give one `unk` (Hugging Face `fuse_unk`). */
  fuseUnk?: boolean;
  /** Words remembered with their ids (0 turns the cache off). @default {50000} */
  cacheSize?: number;
}

/** Entries kept in the per-model word cache before it is cleared. */
export const WORD_CACHE_SIZE = 50_000;
/** Longer words are not cached (a SentencePiece-style word can be a whole text). */
const CACHED_WORD_LENGTH = 256;
/** Character-level words longer than this are merged segment by segment. */
const SEGMENTED_WORD_LENGTH = 32;

/**
 * A BPE model: turns one pre-tokenized word into token ids.
 *
 * Symbols are interned: vocabulary tokens keep their ids, and strings that
 * take part in merges without being tokens get ids past the vocabulary.
 * A final symbol that is not a token falls back to one token per byte, as
 * llama.cpp does.
 */
export class BpeModel {
  /** Number of vocabulary entries. */
  readonly vocabSize: number;
  readonly #spec: BpeModelSpec;
  readonly #symId = new Map<string, number>();
  readonly #symText: string[];
  readonly #merger: PairMerger;
  readonly #byteSym = new Int32Array(256);
  readonly #byteTok = new Int32Array(256).fill(-1);
  readonly #cache = new Map<string, Int32Array>();
  readonly #cacheSize: number;
  /** Character level: adjacent code units inside merge results, or undefined when segmenting is unsafe. */
  readonly #joins: PairTable | undefined;
  #syms = new Int32Array(256);
  readonly #buf = new ByteBuffer();

  /**
   * Builds the model.
   *
   * @param spec Tokens, merges and flags.
   * @throws {RangeError} When vocabulary plus merge results exceed 2^26 symbols.
   */
  constructor(spec: BpeModelSpec) {
    this.#spec = spec;
    const tokens = spec.tokens;
    this.vocabSize = tokens.length;
    this.#symText = tokens.slice();
    for (let i = 0; i < tokens.length; i++) {
      if (tokens[i] !== "" && !this.#symId.has(tokens[i])) {
        this.#symId.set(tokens[i], i);
      }
    }
    const n = spec.merges.length;
    const pairs = new PairTable(n);
    const costs = new Float64Array(n);
    const results = new Int32Array(n);
    for (let r = 0; r < n; r++) {
      const [a, b] = spec.merges[r];
      const ia = this.#intern(a);
      const ib = this.#intern(b);
      if (!pairs.add(ia, ib, r)) continue; // the first (highest) rank wins
      costs[r] = r;
      results[r] = this.#intern(a + b);
    }
    this.#merger = new PairMerger(pairs, costs, results);
    this.#cacheSize = spec.cacheSize ?? WORD_CACHE_SIZE;
    // segmenting is exact while merges only join characters (not byte pieces or unk)
    const unkText = spec.unk !== undefined ? tokens[spec.unk] : undefined;
    const plain = spec.merges.every(([a, b]) =>
      !/^<0x[0-9A-Fa-f]{2}>$/.test(a) && !/^<0x[0-9A-Fa-f]{2}>$/.test(b) &&
      a !== unkText &&
      b !== unkText
    );
    this.#joins = !spec.byteLevel && plain
      ? adjacentUnits(spec.merges.map(([a, b]) => a + b))
      : undefined;
    for (let b = 0; b < 256; b++) {
      if (spec.byteLevel) this.#byteSym[b] = this.#intern(BYTE_TO_CHAR[b]);
      const id = this.#symId.get(
        spec.byteLevel ? BYTE_TO_CHAR[b] : bytePiece(b),
      );
      if (id !== undefined && id < this.vocabSize) this.#byteTok[b] = id;
    }
  }

  #intern(text: string): number {
    let id = this.#symId.get(text);
    if (id === undefined) {
      id = this.#symText.length;
      if (id >= MAX_SYMBOLS) {
        throw new RangeError(
          `BPE vocabulary too large: ${id} symbols, at most ${MAX_SYMBOLS}`,
        );
      }
      this.#symText.push(text);
      this.#symId.set(text, id);
    }
    return id;
  }

  /** The vocabulary id of a token text, or undefined. */
  tokenId(text: string): number | undefined {
    const id = this.#symId.get(text);
    return id !== undefined && id < this.vocabSize ? id : undefined;
  }

  /**
   * Appends the ids of one word to `out`.
   *
   * @param word The word (plain text; byte-level models encode its UTF-8 bytes).
   * @param out Receives the ids.
   */
  encodeWord(word: string, out: number[]): void {
    this.#cached(word, out, false);
  }

  /**
   * Appends the ids of one word already written in the byte alphabet
   * (byte-level models; what the Hugging Face `ByteLevel` pre-tokenizer
   * produces).
   *
   * @param word The word, one byte-alphabet character per byte.
   * @param out Receives the ids.
   */
  encodeMapped(word: string, out: number[]): void {
    this.#cached(word, out, true);
  }

  #cached(word: string, out: number[], mapped: boolean): void {
    if (word.length === 0) return;
    const cached = this.#cacheSize > 0 ? this.#cache.get(word) : undefined;
    if (cached !== undefined) {
      for (let i = 0; i < cached.length; i++) out.push(cached[i]);
      return;
    }
    if (this.#joins && word.length > SEGMENTED_WORD_LENGTH) {
      if (this.#spec.ignoreMerges) {
        const id = this.tokenId(word);
        if (id !== undefined) {
          out.push(id);
          return;
        }
      }
      forEachSegment(
        word,
        this.#joins,
        (s, e) => this.#cachedSegment(word.slice(s, e), out),
      );
      return;
    }
    this.#cachedSegment(word, out, mapped);
  }

  #cachedSegment(word: string, out: number[], mapped = false): void {
    const cached = this.#cacheSize > 0 ? this.#cache.get(word) : undefined;
    if (cached !== undefined) {
      for (let i = 0; i < cached.length; i++) out.push(cached[i]);
      return;
    }
    const start = out.length;
    if (this.#spec.byteLevel) this.#encodeBytes(word, out, mapped);
    else this.#encodeChars(word, out);
    if (this.#cacheSize === 0 || word.length > CACHED_WORD_LENGTH) return;
    if (this.#cache.size >= this.#cacheSize) this.#cache.clear();
    this.#cache.set(word, Int32Array.from(out.slice(start)));
  }

  #encodeBytes(word: string, out: number[], mapped: boolean): void {
    const buf = this.#buf;
    buf.length = 0;
    if (mapped) {
      for (let i = 0; i < word.length; i++) {
        const c = word.charCodeAt(i);
        const b = c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
        if (b >= 0) buf.push(b);
        else utf8Append(word, buf, i, i + 1);
      }
    } else {
      utf8Append(word, buf);
    }
    const n = buf.length;
    const bytes = buf.bytes;
    if (this.#spec.ignoreMerges) {
      let s = "";
      for (let i = 0; i < n; i++) s += BYTE_TO_CHAR[bytes[i]];
      const id = this.tokenId(s);
      if (id !== undefined) {
        out.push(id);
        return;
      }
    }
    const syms = this.#scratch(n);
    for (let i = 0; i < n; i++) syms[i] = this.#byteSym[bytes[i]];
    const m = this.#merger.merge(syms, n);
    for (let i = 0; i < m; i++) {
      const id = syms[i];
      if (id < this.vocabSize) {
        out.push(id);
        continue;
      }
      // not a token: one token per byte character, skipping unknown ones
      const text = this.#symText[id];
      for (const ch of text) {
        const t = this.tokenId(ch);
        if (t !== undefined) out.push(t);
      }
    }
  }

  #encodeChars(word: string, out: number[]): void {
    const spec = this.#spec;
    if (spec.ignoreMerges) {
      const id = this.tokenId(word);
      if (id !== undefined) {
        out.push(id);
        return;
      }
    }
    let syms = this.#scratch(word.length * 4);
    let n = 0;
    const unk = spec.unk ?? -1;
    for (const ch of word) {
      const id = this.tokenId(ch);
      if (id !== undefined) {
        syms[n++] = id;
        continue;
      }
      if (spec.byteFallback) {
        const buf = this.#buf;
        buf.length = 0;
        utf8Append(ch, buf);
        let ok = true;
        for (let j = 0; j < buf.length; j++) {
          ok &&= this.#byteTok[buf.bytes[j]] >= 0;
        }
        if (ok) {
          for (let j = 0; j < buf.length; j++) {
            syms[n++] = this.#byteTok[buf.bytes[j]];
          }
          continue;
        }
      }
      if (unk < 0) {
        throw new TypeError(
          `Cannot encode character U+${
            ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")
          }: not in the vocabulary and the model has no unknown token`,
        );
      }
      if (spec.fuseUnk && n > 0 && syms[n - 1] === unk) continue;
      syms[n++] = unk;
    }
    syms = this.#syms;
    const m = this.#merger.merge(syms, n);
    for (let i = 0; i < m; i++) {
      const id = syms[i];
      if (id < this.vocabSize) {
        out.push(id);
        continue;
      }
      const buf = this.#buf;
      buf.length = 0;
      utf8Append(this.#symText[id], buf);
      for (let j = 0; j < buf.length; j++) {
        const t = this.#byteTok[buf.bytes[j]];
        if (t >= 0) out.push(t);
        else if (unk >= 0) out.push(unk);
      }
    }
  }

  #scratch(n: number): Int32Array {
    if (this.#syms.length < n) {
      this.#syms = new Int32Array(Math.max(n, 2 * this.#syms.length));
    }
    return this.#syms;
  }
}
