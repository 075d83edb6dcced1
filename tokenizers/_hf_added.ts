/**
 * Added tokens of a `tokenizer.json` (`added_tokens`): found in the text
 * before anything else runs, leftmost first and longest at a position,
 * honouring `single_word`, `lstrip` and `rstrip` as the Hugging Face
 * tokenizers library does. Tokens with `normalized: false` are looked for
 * in the raw text; those with `normalized: true`, in their normalized form,
 * in the normalized text. Private to `tokenizers/`.
 *
 * @module
 */

import { isWhitespace, isWordChar } from "./_unicode.ts";

/** One added token, with its flags. */
export interface AddedToken {
  id: number;
  content: string;
  special: boolean;
  lstrip: boolean;
  rstrip: boolean;
  singleWord: boolean;
  normalized: boolean;
}

interface Node {
  next: Map<number, Node>;
  token: AddedToken | undefined;
}

/** A segment of text: plain text (`token` undefined) or an added token. */
export interface Segment {
  start: number;
  end: number;
  token: AddedToken | undefined;
}

function lastCodePoint(s: string, end: number): number {
  const c = s.charCodeAt(end - 1);
  if (c >= 0xdc00 && c <= 0xdfff && end >= 2) return s.codePointAt(end - 2)!;
  return c;
}

/** Finds one set of added tokens (all raw, or all normalized) in text. */
export class AddedMatcher {
  readonly #root: Node = { next: new Map(), token: undefined };
  readonly #first = new Set<number>();
  readonly size: number;

  /**
   * @param tokens The tokens with the text to look for (`pattern`).
   */
  constructor(tokens: readonly { token: AddedToken; pattern: string }[]) {
    let size = 0;
    for (const { token, pattern } of tokens) {
      if (pattern === "") continue;
      let node = this.#root;
      for (let i = 0; i < pattern.length; i++) {
        const c = pattern.charCodeAt(i);
        let nx = node.next.get(c);
        if (!nx) {
          nx = { next: new Map(), token: undefined };
          node.next.set(c, nx);
        }
        node = nx;
      }
      // the same text twice: the later token wins, as the map it comes from does
      node.token = token;
      this.#first.add(pattern.charCodeAt(0));
      size++;
    }
    this.size = size;
  }

  /**
   * Cuts `text` into plain runs and added tokens.
   *
   * @param text The text.
   * @param skipSpecial Leave special tokens in the text (they match, but are not taken).
   * @returns The segments, in order, covering the text (empty runs left out).
   */
  split(text: string, skipSpecial: boolean): Segment[] {
    const n = text.length;
    const out: Segment[] = [];
    if (this.size === 0 || n === 0) {
      if (n > 0) out.push({ start: 0, end: n, token: undefined });
      return out;
    }
    let startOffset = 0;
    let pos = 0;
    while (pos < n) {
      let mStart = -1;
      let mEnd = -1;
      let tok: AddedToken | undefined;
      for (let i = pos; i < n; i++) {
        if (!this.#first.has(text.charCodeAt(i))) continue;
        let node: Node | undefined = this.#root;
        for (let j = i; j < n && node; j++) {
          node = node.next.get(text.charCodeAt(j));
          if (node?.token) {
            tok = node.token;
            mEnd = j + 1;
          }
        }
        if (tok) {
          mStart = i;
          break;
        }
      }
      if (!tok) break;
      pos = mEnd;
      if (skipSpecial && tok.special) continue;
      let start = mStart;
      let stop = mEnd;
      if (tok.singleWord) {
        const startSpace = start === 0 ||
          !isWordChar(lastCodePoint(text, start));
        const stopSpace = stop === n || !isWordChar(text.codePointAt(stop)!);
        if (!startSpace || !stopSpace) continue;
      }
      if (tok.lstrip) {
        let s = start;
        while (s > 0) {
          const cp = lastCodePoint(text, s);
          if (!isWhitespace(cp)) break;
          s -= cp > 0xffff ? 2 : 1;
        }
        start = Math.max(s, startOffset);
      }
      if (tok.rstrip) {
        while (stop < n) {
          const cp = text.codePointAt(stop)!;
          if (!isWhitespace(cp)) break;
          stop += cp > 0xffff ? 2 : 1;
        }
      }
      if (startOffset < start) {
        out.push({ start: startOffset, end: start, token: undefined });
      }
      out.push({ start, end: stop, token: tok });
      startOffset = stop;
    }
    if (startOffset < n) {
      out.push({ start: startOffset, end: n, token: undefined });
    }
    return out;
  }
}
