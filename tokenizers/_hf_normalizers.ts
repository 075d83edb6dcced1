/**
 * The `normalizer` of a `tokenizer.json`, as the Hugging Face tokenizers
 * library runs it. Private to `tokenizers/`.
 *
 * Besides the text, a normalizer reports whether the first character of
 * its output still comes from the first character of its input: the
 * `Metaspace` pre-tokenizer's `"first"` scheme prepends only to text that
 * starts at offset 0 of the original.
 *
 * @module
 */

import { base64Bytes, Charsmap } from "./_charsmap.ts";
import { toJsRegExp } from "./pre_tokenize.ts";
import { findMatches, type Json, obj } from "./_hf_common.ts";
import {
  isMark,
  isMarkNonspacing,
  isOther,
  isWhitespace,
  lowercaseChars,
} from "./_unicode.ts";
import { asText, utf8 } from "./_text.ts";

/** Where the first output character comes from (see the module doc). */
export interface Lead {
  /** False once a normalizer dropped the first character of the original. */
  atZero: boolean;
}

/** A normalizer: text in, text out. */
export type Normalize = (s: string, lead: Lead) => string;

/** Things a normalizer can be built from besides its config. */
type Fail = (msg: string) => Error;

const escapeRe = (s: string) => s.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");

function isChinese(cp: number): boolean {
  return (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) || (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b920 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f);
}

/** Keeps the characters `keep` accepts; notes a dropped first character. */
function filterChars(
  s: string,
  lead: Lead,
  keep: (cp: number) => boolean,
): string {
  let out = "";
  let first = true;
  for (const ch of s) {
    const ok = keep(ch.codePointAt(0)!);
    if (first && !ok) lead.atZero = false;
    first = false;
    if (ok) out += ch;
  }
  return out;
}

type BertOptions = {
  lower: boolean;
  strip: boolean;
  clean: boolean;
  chinese: boolean;
};

/** ASCII text: no marks, no CJK; controls but \t \n \r go, those three become spaces. */
function bertAscii(s: string, lead: Lead, o: BertOptions): string {
  if (o.clean) {
    let out = "";
    let from = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x20 && c !== 0x7f) continue;
      out += s.slice(from, i);
      if (c === 9 || c === 10 || c === 13) out += " ";
      else if (i === 0) lead.atZero = false;
      from = i + 1;
    }
    s = from === 0 ? s : out + s.slice(from);
  }
  return o.lower ? s.toLowerCase() : s;
}

function bertOther(s: string, lead: Lead, o: BertOptions): string {
  if (o.clean) {
    s = filterChars(s, lead, (cp) =>
      !(cp === 0 || cp === 0xfffd ||
        (cp !== 9 && cp !== 10 && cp !== 13 && isOther(cp))));
    let t = "";
    for (const ch of s) {
      const cp = ch.codePointAt(0)!;
      t += cp === 9 || cp === 10 || cp === 13 || isWhitespace(cp) ? " " : ch;
    }
    s = t;
  }
  if (o.chinese) {
    let t = "";
    for (const ch of s) t += isChinese(ch.codePointAt(0)!) ? ` ${ch} ` : ch;
    s = t;
  }
  if (o.strip) {
    s = filterChars(s.normalize("NFD"), lead, (cp) => !isMarkNonspacing(cp));
  }
  if (o.lower) s = lowercaseChars(s);
  return s;
}

/**
 * BERT's normalizer. Every step works character by character (canonical
 * decomposition only reorders marks, which never sit next to ASCII
 * letters' other side), so ASCII runs take a fast path.
 */
function bertNormalize(s: string, lead: Lead, o: BertOptions): string {
  const parts: string[] = [];
  const other: Lead = { atZero: true };
  const n = s.length;
  for (let i = 0; i < n;) {
    let j = i;
    const ascii = s.charCodeAt(i) < 0x80;
    while (j < n && (s.charCodeAt(j) < 0x80) === ascii) j++;
    const seg = i === 0 && j === n ? s : s.slice(i, j);
    const l = i === 0 ? lead : other;
    parts.push(ascii ? bertAscii(seg, l, o) : bertOther(seg, l, o));
    i = j;
  }
  return parts.join("");
}

function strip(s: string, lead: Lead, left: boolean, right: boolean): string {
  let a = 0;
  let b = s.length;
  if (left) {
    while (a < b) {
      const cp = s.codePointAt(a)!;
      if (!isWhitespace(cp)) break;
      a += cp > 0xffff ? 2 : 1;
    }
    if (a > 0) lead.atZero = false;
  }
  if (right) {
    while (b > a) {
      const c = s.charCodeAt(b - 1);
      const cp = c >= 0xdc00 && c <= 0xdfff && b - 2 >= a
        ? s.codePointAt(b - 2)!
        : c;
      if (!isWhitespace(cp)) break;
      b -= cp > 0xffff ? 2 : 1;
    }
  }
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

let segmenter: Intl.Segmenter | undefined;

/** Grapheme clusters (extended), as the `unicode-segmentation` crate cuts them. */
export function graphemes(s: string): Iterable<string> {
  // ASCII text: every character is a cluster, except CR LF
  let ascii = true;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (ascii) {
    const out: string[] = [];
    for (let i = 0; i < s.length; i++) {
      if (s.charCodeAt(i) === 13 && s.charCodeAt(i + 1) === 10) {
        out.push("\r\n");
        i++;
      } else out.push(s[i]);
    }
    return out;
  }
  segmenter ??= new Intl.Segmenter(undefined, { granularity: "grapheme" });
  const out: string[] = [];
  for (const g of segmenter.segment(s)) out.push(g.segment);
  return out;
}

/** The Hugging Face `Precompiled` normalizer over a parsed charsmap. */
export function precompiledNormalizer(map: Charsmap): Normalize {
  const cache = new Map<string, string | null>();
  const transform = (chunk: string): string | undefined => {
    let v = cache.get(chunk);
    if (v === undefined) {
      v = map.shortest(utf8(chunk)) ?? null;
      if (cache.size > 100_000) cache.clear();
      cache.set(chunk, v);
    }
    return v ?? undefined;
  };
  return (s, lead) => {
    let out = "";
    let first = true;
    for (const g of graphemes(s)) {
      let piece: string | undefined;
      if (utf8Length(g) < 6) piece = transform(g);
      if (piece === undefined) {
        piece = "";
        for (const ch of g) piece += transform(ch) ?? ch;
      }
      if (first && piece === "") lead.atZero = false;
      first = false;
      out += piece;
    }
    return out;
  };
}

function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? 2 : 3;
  }
  return n;
}

/** Finds a `Replace` / `Split` pattern (`{ String }` or `{ Regex }`) as a regular expression. */
export function patternRegExp(
  pattern: unknown,
  what: string,
  fail: Fail,
): RegExp {
  const pat = obj(pattern) ?? {};
  if (typeof pat.String === "string") return toJsRegExp(escapeRe(pat.String));
  if (typeof pat.Regex === "string") return toJsRegExp(pat.Regex);
  throw fail(`${what} needs pattern.String or pattern.Regex`);
}

/** Replaces every match of `re` (Oniguruma iteration) with `content`. */
export function replaceAll(
  s: string,
  re: RegExp,
  content: string,
  lead?: Lead,
): string {
  if (s.length === 0) return s;
  const segs = findMatches(s, re);
  if (segs.length === 3 && segs[2] === 0) return s;
  let out = "";
  for (let i = 0; i < segs.length; i += 3) {
    if (segs[i + 2]) {
      if (i === 0 && lead && content === "" && segs[i + 1] > 0) {
        lead.atZero = false;
      }
      out += content;
    } else out += s.slice(segs[i], segs[i + 1]);
  }
  return out;
}

/**
 * Builds the normalizer a `tokenizer.json` describes.
 *
 * @param cfg The `normalizer` field (null for none).
 * @param fail Makes the error for an unsupported or malformed part.
 * @returns The normalizer, or undefined when there is none.
 */
export function buildNormalizer(
  cfg: unknown,
  fail: Fail,
): Normalize | undefined {
  const c = obj(cfg);
  if (!c) return undefined;
  switch (c.type) {
    case "NFC":
    case "NFD":
    case "NFKC":
    case "NFKD": {
      const form = c.type;
      return (s) => s.normalize(form);
    }
    case "Lowercase":
      return (s) => lowercaseChars(s);
    case "Strip": {
      const left = c.strip_left !== false;
      const right = c.strip_right !== false;
      return (s, lead) => strip(s, lead, left, right);
    }
    case "StripAccents":
      return (s, lead) => filterChars(s, lead, (cp) => !isMark(cp));
    case "Prepend": {
      const p = asText(c.prepend, "");
      return (s) => (s.length > 0 ? p + s : s);
    }
    case "Replace": {
      const re = patternRegExp(c.pattern, "Replace normalizer", fail);
      const content = asText(c.content, "");
      const literal = obj(c.pattern)?.String;
      if (typeof literal === "string" && literal !== "") {
        return (s, lead) => {
          if (content === "" && s.startsWith(literal)) lead.atZero = false;
          return s.replaceAll(literal, content);
        };
      }
      return (s, lead) => replaceAll(s, re, content, lead);
    }
    case "BertNormalizer": {
      const lower = c.lowercase !== false;
      const strip = typeof c.strip_accents === "boolean"
        ? c.strip_accents
        : lower;
      const clean = c.clean_text !== false;
      const chinese = c.handle_chinese_chars !== false;
      return (s, lead) =>
        bertNormalize(s, lead, { lower, strip, clean, chinese });
    }
    case "Precompiled": {
      if (typeof c.precompiled_charsmap !== "string") {
        throw fail(
          "Precompiled normalizer needs a precompiled_charsmap string",
        );
      }
      const bytes = base64Bytes(
        c.precompiled_charsmap,
        "Precompiled normalizer",
      );
      // an empty charsmap normalizes nothing
      if (bytes.length === 0) return (s) => s;
      return precompiledNormalizer(new Charsmap(bytes));
    }
    case "Sequence": {
      const list = Array.isArray(c.normalizers) ? c.normalizers : [];
      const fns = list.map((n) => buildNormalizer(n, fail)).filter((
        f,
      ): f is Normalize => f !== undefined);
      return (s, lead) => {
        for (const f of fns) s = f(s, lead);
        return s;
      };
    }
    default:
      throw fail(`normalizer "${asText(c.type, "")}" is not supported`);
  }
}

export type { Json };
