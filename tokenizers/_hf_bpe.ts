/**
 * The `BPE` model of a `tokenizer.json`, with the Hugging Face tokenizers
 * library's rules: every merge joins two vocabulary tokens into a third
 * (a later duplicate of a pair overrides an earlier one), a word's
 * characters start as tokens (with `continuing_subword_prefix` /
 * `end_of_word_suffix` where set), characters missing from the vocabulary
 * become `<0xNN>` byte tokens (`byte_fallback`), the unknown token (fused
 * when `fuse_unk`) or nothing, and `ignore_merges` takes a whole word found
 * in the vocabulary as is. Dropout is not applied (encoding is
 * deterministic). Private to `tokenizers/`.
 *
 * @module
 */

import { PairMerger, PairTable } from "./_merge.ts";
import { BYTE_TO_CHAR, ByteBuffer, bytePiece, utf8Append } from "./_text.ts";
import { charLength } from "./_unicode.ts";

/** What an {@link HfBpe} is built from. */
export interface HfBpeSpec {
  /** Token text by id (the model's `vocab`; holes are ""). */
  tokens: readonly string[];
  /** Merges in rank order. */
  merges: readonly (readonly [string, string])[];
  /** Prefix of tokens that continue a word. */
  prefix?: string;
  /** Suffix of tokens that end a word. */
  suffix?: string;
  /** The unknown token's text. */
  unkToken?: string;
  /** Runs of unknown characters give one unknown token. */
  fuseUnk?: boolean;
  /** Unknown characters become `<0xNN>` tokens when they all exist. */
  byteFallback?: boolean;
  /** A word found whole in the vocabulary skips merging. */
  ignoreMerges?: boolean;
  /** Words remembered with their ids (0 turns the cache off). */
  cacheSize?: number;
  /** Makes the error for a malformed model. */
  fail: (msg: string) => Error;
}

/** Words longer than this are merged segment by segment when that is exact. */
const SEGMENTED_WORD_LENGTH = 48;

/** The Hugging Face BPE model: one pre-tokenized word to ids. */
export class HfBpe {
  readonly vocabSize: number;
  readonly #spec: HfBpeSpec;
  readonly #ids = new Map<string, number>();
  readonly #bmp = new Int32Array(65536).fill(-1);
  readonly #merger: PairMerger;
  readonly #byteChar = new Int32Array(256).fill(-1);
  readonly #byteTok = new Int32Array(256).fill(-1);
  readonly #unk: number;
  readonly #plain: boolean;
  readonly #joins: PairTable | undefined;
  readonly #cache = new Map<string, Int32Array>();
  readonly #cacheSize: number;
  #syms = new Int32Array(256);
  readonly #buf = new ByteBuffer();

  constructor(spec: HfBpeSpec) {
    this.#spec = spec;
    const tokens = spec.tokens;
    this.vocabSize = tokens.length;
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i];
      if (t === "") continue;
      this.#ids.set(t, i);
      if (t.length === 1) this.#bmp[t.charCodeAt(0)] = i;
    }
    const unk = spec.unkToken !== undefined
      ? this.#ids.get(spec.unkToken)
      : undefined;
    if (spec.unkToken !== undefined && unk === undefined) {
      throw spec.fail(`BPE unk_token "${spec.unkToken}" is not in model.vocab`);
    }
    this.#unk = unk ?? -1;
    const prefixLen = spec.prefix?.length ?? 0;
    const n = spec.merges.length;
    const pairs = new PairTable(n);
    const costs = new Float64Array(n);
    const results = new Int32Array(n);
    const resultTexts: string[] = [];
    // a later duplicate of a pair overrides an earlier one: add from the end
    for (let r = n - 1; r >= 0; r--) {
      const [a, b] = spec.merges[r];
      const ia = this.#ids.get(a);
      const ib = this.#ids.get(b);
      if (ia === undefined || ib === undefined) {
        throw spec.fail(
          `merge ${r} ("${a}" "${b}") uses a token missing from model.vocab`,
        );
      }
      const joined = a + b.slice(prefixLen);
      const res = this.#ids.get(joined);
      if (res === undefined) {
        throw spec.fail(
          `merge ${r} ("${a}" "${b}") makes "${joined}", which is not in model.vocab`,
        );
      }
      if (!pairs.add(ia, ib, r)) continue;
      costs[r] = r;
      results[r] = res;
      resultTexts.push(joined);
    }
    this.#merger = new PairMerger(pairs, costs, results);
    this.#cacheSize = spec.cacheSize ?? 50_000;
    for (let b = 0; b < 256; b++) {
      this.#byteChar[b] = this.#ids.get(BYTE_TO_CHAR[b]) ?? -1;
      this.#byteTok[b] = this.#ids.get(bytePiece(b)) ?? -1;
    }
    this.#plain = !spec.prefix && !spec.suffix;
    // merging piece by piece is exact while merges only join characters
    const special = (t: string) =>
      /^<0x[0-9A-Fa-f]{2}>$/.test(t) || t === spec.unkToken;
    const segmentable = this.#plain &&
      spec.merges.every(([a, b]) => !special(a) && !special(b));
    if (segmentable) {
      const t = new PairTable(1024);
      for (const s of resultTexts) {
        for (let i = 1; i < s.length; i++) {
          t.add(s.charCodeAt(i - 1), s.charCodeAt(i), 1);
        }
      }
      this.#joins = t;
    }
  }

  /** The id of a vocabulary token, or undefined. */
  tokenId(text: string): number | undefined {
    return this.#ids.get(text);
  }

  /**
   * Appends the ids of one word to `out`.
   *
   * @param word The word as the model sees it (byte-alphabet text for a
   * byte-level vocabulary).
   * @param out Receives the ids.
   */
  encodeWord(word: string, out: number[]): void {
    if (word.length === 0) return;
    const cached = this.#cacheSize > 0 ? this.#cache.get(word) : undefined;
    if (cached !== undefined) {
      for (let i = 0; i < cached.length; i++) out.push(cached[i]);
      return;
    }
    const start = out.length;
    if (this.#spec.ignoreMerges) {
      const id = this.#ids.get(word);
      if (id !== undefined) {
        out.push(id);
        this.#remember(word, out, start);
        return;
      }
    }
    if (this.#joins && word.length > SEGMENTED_WORD_LENGTH) {
      this.#segmented(word, out);
    } else this.#chars(word, 0, word.length, out);
    this.#remember(word, out, start);
  }

  /**
   * Appends the ids of one word given as plain text, for a byte-level
   * vocabulary: its UTF-8 bytes are shown through the byte alphabet first
   * (what the `ByteLevel` pre-tokenizer does), without building that text.
   *
   * @param word The word, plain text.
   * @param out Receives the ids.
   */
  encodeBytes(word: string, out: number[]): void {
    if (word.length === 0) return;
    const cached = this.#cacheSize > 0 ? this.#cache.get(word) : undefined;
    if (cached !== undefined) {
      for (let i = 0; i < cached.length; i++) out.push(cached[i]);
      return;
    }
    const start = out.length;
    const buf = this.#buf;
    buf.length = 0;
    utf8Append(word, buf);
    const nb = buf.length;
    const bytes = buf.bytes;
    let known = true;
    for (let i = 0; i < nb; i++) known &&= this.#byteChar[bytes[i]] >= 0;
    if (!known || this.#spec.ignoreMerges || !this.#plain) {
      // the general path, on the byte-alphabet text
      let s = "";
      for (let i = 0; i < nb; i++) s += BYTE_TO_CHAR[bytes[i]];
      this.encodeWord(s, out);
      this.#remember(word, out, start);
      return;
    }
    const syms = this.#scratch(nb);
    for (let i = 0; i < nb; i++) syms[i] = this.#byteChar[bytes[i]];
    const m = this.#merger.merge(syms, nb);
    for (let i = 0; i < m; i++) out.push(syms[i]);
    this.#remember(word, out, start);
  }

  #remember(word: string, out: number[], start: number): void {
    if (this.#cacheSize === 0 || word.length > 256) return;
    if (this.#cache.size >= this.#cacheSize) this.#cache.clear();
    this.#cache.set(word, Int32Array.from(out.slice(start)));
  }

  #known(s: string, i: number): boolean {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      return this.#ids.has(s.slice(i, i + 2));
    }
    return this.#bmp[c] >= 0;
  }

  #segmented(word: string, out: number[]): void {
    const joins = this.#joins!;
    const fuse = this.#spec.fuseUnk && this.#unk >= 0 &&
      !this.#spec.byteFallback;
    let start = 0;
    let prevAt = 0;
    let i = charLength(word, 0);
    while (i < word.length) {
      if (
        joins.get(word.charCodeAt(i - 1), word.charCodeAt(i)) === -1 &&
        !(fuse && !this.#known(word, prevAt) && !this.#known(word, i))
      ) {
        this.#chars(word, start, i, out);
        start = i;
      }
      prevAt = i;
      i += charLength(word, i);
    }
    this.#chars(word, start, word.length, out);
  }

  /** Merges `word[from, to)` from its characters. */
  #chars(word: string, from: number, to: number, out: number[]): void {
    const spec = this.#spec;
    let syms = this.#scratch((to - from) * 4 + 8);
    let n = 0;
    let unkPending = false;
    const unk = this.#unk;
    for (let i = from; i < to;) {
      const c = word.charCodeAt(i);
      const len = c >= 0xd800 && c <= 0xdbff && i + 1 < to ? 2 : 1;
      let id: number;
      let s: string | undefined;
      if (this.#plain) {
        id = len === 1
          ? this.#bmp[c]
          : this.#ids.get(word.slice(i, i + 2)) ?? -1;
      } else {
        s = word.slice(i, i + len);
        if (i > from && spec.prefix) s = spec.prefix + s;
        if (i + len >= to && spec.suffix) s = s + spec.suffix;
        id = this.#ids.get(s) ?? -1;
      }
      i += len;
      if (id >= 0) {
        if (unkPending) {
          syms[n++] = unk;
          unkPending = false;
        }
        syms[n++] = id;
        continue;
      }
      if (spec.byteFallback) {
        const text = s ?? word.slice(i - len, i);
        const buf = this.#buf;
        buf.length = 0;
        utf8Append(text, buf);
        let ok = true;
        for (let j = 0; j < buf.length; j++) {
          ok &&= this.#byteTok[buf.bytes[j]] >= 0;
        }
        if (ok) {
          if (syms.length < n + buf.length) syms = this.#grow(n + buf.length);
          for (let j = 0; j < buf.length; j++) {
            syms[n++] = this.#byteTok[buf.bytes[j]];
          }
          continue;
        }
      }
      if (unk >= 0) {
        if (unkPending && !spec.fuseUnk) syms[n++] = unk;
        unkPending = true;
      }
    }
    if (unkPending) syms[n++] = unk;
    const m = this.#merger.merge(syms, n);
    for (let k = 0; k < m; k++) out.push(syms[k]);
  }

  #scratch(n: number): Int32Array {
    if (this.#syms.length < n) this.#grow(n);
    return this.#syms;
  }

  #grow(n: number): Int32Array {
    const next = new Int32Array(Math.max(n, 2 * this.#syms.length));
    next.set(this.#syms);
    this.#syms = next;
    return next;
  }
}
