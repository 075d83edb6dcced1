/**
 * WordPiece (BERT): text is cleaned, lower-cased and stripped of accents,
 * cut at white space and around punctuation and CJK ideographs, and each
 * word becomes its longest vocabulary prefix, then the longest piece of
 * what is left, and so on; a word with any part not in the vocabulary
 * becomes the unknown token.
 *
 * GGUF vocabularies (`tokenizer.ggml.model = "bert"`) mark a word start
 * with `▁` and continuation pieces with nothing; `tokenizer.json` files
 * mark continuation pieces with `##`. Both spellings are supported.
 *
 * @module
 */

/** What a {@link WordPieceModel} is built from. */
export interface WordPieceSpec {
  /** Piece text by id. */
  tokens: readonly string[];
  /** The unknown token id. */
  unk: number;
  /** Prefix of word-initial pieces (`"▁"` in GGUF, `""` in tokenizer.json). */
  wordPrefix: string;
  /** Prefix of continuation pieces (`""` in GGUF, `"##"` in tokenizer.json). */
  continuationPrefix: string;
  /** Longer words become `unk` without a search. @default {Infinity} */
  maxInputChars?: number;
}

/** Options of {@link bertWords}. */
export interface BertNormalizeOptions {
  /** Lower-case the text. @default {true} */
  lowercase?: boolean;
  /** Drop combining marks after canonical decomposition. @default {true} */
  stripAccents?: boolean;
  /** Put spaces around CJK ideographs. @default {true} */
  splitChinese?: boolean;
}

const WHITE =
  /[\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/u;
const CONTROL = /\p{C}/u;
const PUNCT = /[\p{P}$+<=>^`|~]/u;
const MARK = /\p{Mn}/u;

function isChinese(cp: number): boolean {
  return (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) || (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b920 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f);
}

/**
 * The BERT basic tokenizer: normalizes `text` and cuts it into words.
 *
 * @param text Input text.
 * @param opts Normalization switches.
 * @returns The words, in order.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { bertWords } from "./wordpiece.ts";
 * assert(bertWords("Héllo, World!").join("|") === "hello|,|world|!");
 * ```
 */
export function bertWords(
  text: string,
  opts: BertNormalizeOptions = {},
): string[] {
  const lower = opts.lowercase ?? true;
  const strip = opts.stripAccents ?? lower;
  const chinese = opts.splitChinese ?? true;
  let src = text;
  if (strip) src = src.normalize("NFD");
  const words: string[] = [];
  let cur = "";
  const flush = () => {
    if (cur.length > 0) words.push(cur);
    cur = "";
  };
  for (const ch of src) {
    const cp = ch.codePointAt(0)!;
    if (WHITE.test(ch)) {
      flush();
      continue;
    }
    if (cp === 0 || cp === 0xfffd || CONTROL.test(ch)) continue;
    if (strip && MARK.test(ch)) continue;
    const c = lower ? ch.toLowerCase() : ch;
    if (PUNCT.test(ch) || (chinese && isChinese(cp))) {
      flush();
      words.push(c);
    } else {
      cur += c;
    }
  }
  flush();
  return words;
}

/** A WordPiece model: one word to ids by greedy longest match. */
export class WordPieceModel {
  /** Number of vocabulary entries. */
  readonly vocabSize: number;
  readonly #ids = new Map<string, number>();
  readonly #spec: WordPieceSpec;
  readonly #maxLen: number;

  /**
   * Builds the model.
   *
   * @param spec Pieces, unknown id and prefix spelling.
   */
  constructor(spec: WordPieceSpec) {
    this.#spec = spec;
    this.vocabSize = spec.tokens.length;
    let maxLen = 0;
    spec.tokens.forEach((t, i) => {
      if (t !== "" && !this.#ids.has(t)) this.#ids.set(t, i);
      maxLen = Math.max(maxLen, t.length);
    });
    this.#maxLen = maxLen;
  }

  /**
   * Appends the ids of one word to `out`.
   *
   * @param word A word from {@link bertWords}.
   * @param out Receives the ids.
   */
  encodeWord(word: string, out: number[]): void {
    const { wordPrefix, continuationPrefix, unk } = this.#spec;
    const max = this.#spec.maxInputChars ?? Infinity;
    if (word.length > max && countCodePoints(word) > max) {
      out.push(unk);
      return;
    }
    // GGUF spelling: search "▁word" with bare continuations (llama.cpp);
    // tokenizer.json spelling: search "word" with "##" continuations
    const text = continuationPrefix === "" ? wordPrefix + word : word;
    const start = out.length;
    let i = 0;
    while (i < text.length) {
      const prefix = i === 0 ? "" : continuationPrefix;
      let found = -1;
      let end = Math.min(text.length, i + this.#maxLen);
      for (; end > i; end--) {
        const id = this.#ids.get(prefix + text.slice(i, end));
        if (id !== undefined) {
          found = id;
          break;
        }
      }
      if (found < 0) {
        out.length = start;
        out.push(unk);
        return;
      }
      out.push(found);
      i = end;
    }
  }
}

function countCodePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff || i === 0) n++;
    else if ((s.charCodeAt(i - 1) & 0xfc00) !== 0xd800) n++;
  }
  return n;
}
