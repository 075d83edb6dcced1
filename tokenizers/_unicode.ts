/**
 * Character classes as the Rust side of the Hugging Face tokenizers library
 * sees them (`char::is_whitespace`, `char::is_numeric`, the `regex` crate's
 * `\w`, `is_ascii_punctuation`), written once so every pipeline part agrees.
 * Private to `tokenizers/`.
 *
 * @module
 */

const WHITE = /^\p{White_Space}$/u;
const RUST_WORD = /[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]/u;
const PUNCT = /^\p{P}$/u;
const NUMERIC = /^\p{N}$/u;
const OTHER = /^\p{C}$/u;
const MARK_NONSPACING = /^\p{Mn}$/u;
const MARK = /^\p{M}$/u;

function table(test: (ch: string) => boolean): (cp: number) => boolean {
  // a lazily filled cache for the BMP; astral characters are tested each time
  const cache = new Uint8Array(65536);
  return (cp) => {
    if (cp < 65536) {
      let v = cache[cp];
      if (v === 0) {
        v = test(String.fromCharCode(cp)) ? 2 : 1;
        cache[cp] = v;
      }
      return v === 2;
    }
    return test(String.fromCodePoint(cp));
  };
}

/** Rust `char::is_whitespace`: the Unicode `White_Space` property. */
export const isWhitespace: (cp: number) => boolean = table((c) =>
  WHITE.test(c)
);

/** The Rust `regex` crate's `\w`: alphabetic, marks, digits, connectors, joiners. */
export const isWordChar: (cp: number) => boolean = table((c) =>
  RUST_WORD.test(c)
);

/** ASCII punctuation (Rust `is_ascii_punctuation`) or Unicode category P. */
export const isPunctuation: (cp: number) => boolean = table((c) =>
  /^[!-/:-@[-`{-~]$/.test(c) || PUNCT.test(c)
);

/** Rust `char::is_numeric`: categories Nd, Nl and No. */
export const isNumeric: (cp: number) => boolean = table((c) => NUMERIC.test(c));

/** Unicode category C (control, format, unassigned, private use, surrogate). */
export const isOther: (cp: number) => boolean = table((c) => OTHER.test(c));

/** Unicode category Mn. */
export const isMarkNonspacing: (cp: number) => boolean = table((c) =>
  MARK_NONSPACING.test(c)
);

/** Unicode category M (Mn, Mc, Me). */
export const isMark: (cp: number) => boolean = table((c) => MARK.test(c));

/** Lower-cases one code point at a time, as Rust's `char::to_lowercase` (no final-sigma rule). */
export function lowercaseChars(s: string): string {
  // fast path: nothing outside ASCII
  let ascii = true;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (ascii) return s.toLowerCase();
  let out = "";
  for (const ch of s) out += ch.toLowerCase();
  return out;
}

/** UTF-16 length of the code point starting at `i`. */
export function charLength(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
    const d = s.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return 2;
  }
  return 1;
}
