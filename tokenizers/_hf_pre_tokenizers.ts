/**
 * The `pre_tokenizer` of a `tokenizer.json`, as the Hugging Face tokenizers
 * library runs it: each step cuts every piece into smaller ones. Private
 * to `tokenizers/`.
 *
 * @module
 */

import {
  applyBehavior,
  findChars,
  findMatches,
  invert,
  obj,
  type SplitBehavior,
} from "./_hf_common.ts";
import { patternRegExp } from "./_hf_normalizers.ts";
import { GPT2_PATTERN, toJsRegExp } from "./pre_tokenize.ts";
import { asText, BYTE_TO_CHAR, SPM_SPACE, utf8 } from "./_text.ts";
import { isNumeric, isPunctuation, isWhitespace } from "./_unicode.ts";

/** Pieces of text and whether the first one starts at offset 0 of the original. */
export interface Pieces {
  /** The pieces, in order, none empty. */
  list: string[];
  /** Whether `list[0]` starts at offset 0 of the original text. */
  atZero: boolean;
}

/** One pre-tokenization step. */
export type PreStep = (p: Pieces) => void;

/** The pre-tokenizer: its steps, and whether the last one is the byte-level mapping. */
export interface PreTokenizer {
  /** Steps, in order. */
  steps: PreStep[];
  /**
   * The pipeline ends with the `ByteLevel` byte-to-character mapping, left
   * out of `steps` so that a byte-level model can map bytes itself.
   */
  byteLevelTail: boolean;
  /** Some step maps to the byte alphabet (the decoder side may rely on it). */
  byteLevel: boolean;
}

type Fail = (msg: string) => Error;

const BEHAVIORS: Record<string, SplitBehavior> = {
  isolated: "Isolated",
  removed: "Removed",
  merged_with_previous: "MergedWithPrevious",
  mergedwithprevious: "MergedWithPrevious",
  merged_with_next: "MergedWithNext",
  mergedwithnext: "MergedWithNext",
  contiguous: "Contiguous",
};

function behaviorOf(
  v: unknown,
  fail: Fail,
  dflt?: SplitBehavior,
): SplitBehavior {
  if (v === undefined && dflt) return dflt;
  const key = asText(v, "").toLowerCase();
  const b = Object.hasOwn(BEHAVIORS, key) ? BEHAVIORS[key] : undefined;
  if (!b) throw fail(`split behavior ${asText(v, "nothing")} is not known`);
  return b;
}

/** A step that cuts each piece with `find` and keeps pieces as `behavior` says. */
function splitWith(
  find: (s: string) => number[],
  behavior: SplitBehavior,
): PreStep {
  return (p) => {
    const out: string[] = [];
    let atZero = false;
    for (let k = 0; k < p.list.length; k++) {
      const s = p.list[k];
      const kept = applyBehavior(find(s), behavior);
      for (let i = 0; i < kept.length; i += 2) {
        if (kept[i + 1] <= kept[i]) continue;
        if (out.length === 0) atZero = k === 0 && p.atZero && kept[i] === 0;
        out.push(
          kept[i] === 0 && kept[i + 1] === s.length
            ? s
            : s.slice(kept[i], kept[i + 1]),
        );
      }
    }
    p.list = out;
    p.atZero = atZero;
  };
}

/**
 * BERT's pre-tokenizer in one pass: white space cuts (and goes),
 * punctuation is a piece of its own. Same pieces as the two splits.
 */
const bertStep: PreStep = (p) => {
  const out: string[] = [];
  let atZero = false;
  for (let k = 0; k < p.list.length; k++) {
    const s = p.list[k];
    let start = -1;
    for (let i = 0; i < s.length;) {
      const cp = s.codePointAt(i)!;
      const len = cp > 0xffff ? 2 : 1;
      const ws = isWhitespace(cp);
      if (ws || isPunctuation(cp)) {
        if (start >= 0) {
          if (out.length === 0) atZero = k === 0 && p.atZero && start === 0;
          out.push(s.slice(start, i));
          start = -1;
        }
        if (!ws) {
          if (out.length === 0) atZero = k === 0 && p.atZero && i === 0;
          out.push(s.slice(i, i + len));
        }
      } else if (start < 0) start = i;
      i += len;
    }
    if (start >= 0) {
      if (out.length === 0) atZero = k === 0 && p.atZero && start === 0;
      out.push(start === 0 ? s : s.slice(start));
    }
  }
  p.list = out;
  p.atZero = atZero;
};

/** Maps each piece to the GPT-2 byte alphabet (`Ġ` for a space). */
export function toByteAlphabet(piece: string): string {
  let ascii = true;
  for (let i = 0; i < piece.length; i++) {
    const c = piece.charCodeAt(i);
    if (c > 0x7e || c < 0x21) {
      ascii = false;
      break;
    }
  }
  if (ascii) return piece;
  let s = "";
  for (const b of utf8(piece)) s += BYTE_TO_CHAR[b];
  return s;
}

const byteLevelStep: PreStep = (p) => {
  p.list = p.list.map(toByteAlphabet);
};

/** The scheme of a `Metaspace` config (old files say `add_prefix_space`). */
export function prependScheme(c: Record<string, unknown>): string {
  if (c.add_prefix_space === false) return "never";
  return typeof c.prepend_scheme === "string" ? c.prepend_scheme : "always";
}

/**
 * Builds the pre-tokenizer a `tokenizer.json` describes.
 *
 * @param cfg The `pre_tokenizer` field (null for none).
 * @param fail Makes the error for an unsupported or malformed part.
 * @returns The steps.
 */
export function buildPreTokenizer(cfg: unknown, fail: Fail): PreTokenizer {
  const steps: PreStep[] = [];
  let byteLevel = false;
  const visit = (d: unknown) => {
    const c = obj(d);
    if (!c) return;
    switch (c.type) {
      case "Sequence":
        for (const x of Array.isArray(c.pretokenizers) ? c.pretokenizers : []) {
          visit(x);
        }
        return;
      case "ByteLevel": {
        if (c.add_prefix_space === true) {
          steps.push((p) => {
            p.list = p.list.map((s) => (s.startsWith(" ") ? s : " " + s));
          });
        }
        if (c.use_regex !== false) {
          const re = toJsRegExp(GPT2_PATTERN);
          steps.push(splitWith(
            (s) => findMatches(s, re),
            "Isolated",
          ));
        }
        steps.push(byteLevelStep);
        byteLevel = true;
        return;
      }
      case "Split": {
        const re = patternRegExp(c.pattern, "Split pre-tokenizer", fail);
        const inv = c.invert === true;
        steps.push(splitWith(
          inv ? (s) => invert(findMatches(s, re)) : (s) => findMatches(s, re),
          behaviorOf(c.behavior, fail),
        ));
        return;
      }
      case "Whitespace": {
        // the Rust regex crate's \w and \s (Unicode word characters, White_Space)
        const re =
          /[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\p{White_Space}]+/gu;
        steps.push(splitWith((s) => invert(findMatches(s, re)), "Removed"));
        return;
      }
      case "WhitespaceSplit":
        steps.push(splitWith((s) => findChars(s, isWhitespace), "Removed"));
        return;
      case "Punctuation":
        steps.push(splitWith(
          (s) => findChars(s, isPunctuation),
          behaviorOf(c.behavior, fail, "Isolated"),
        ));
        return;
      case "Digits":
        steps.push(splitWith(
          (s) => findChars(s, isNumeric),
          c.individual_digits === true ? "Isolated" : "Contiguous",
        ));
        return;
      case "BertPreTokenizer":
        steps.push(bertStep);
        return;
      case "CharDelimiterSplit": {
        const d = asText(c.delimiter, "");
        const cp = d.codePointAt(0);
        if (cp === undefined || d.length !== (cp > 0xffff ? 2 : 1)) {
          throw fail(`CharDelimiterSplit needs one character, found "${d}"`);
        }
        steps.push(splitWith((s) => findChars(s, (x) => x === cp), "Removed"));
        return;
      }
      case "Metaspace": {
        const rep = asText(c.replacement, SPM_SPACE);
        const repCp = rep.codePointAt(0)!;
        const scheme = prependScheme(c);
        if (!["always", "first", "never"].includes(scheme)) {
          throw fail(`Metaspace prepend_scheme "${scheme}" is not known`);
        }
        steps.push((p) => {
          p.list = p.list.map((s, i) => {
            s = s.replaceAll(" ", rep);
            const prepend = scheme === "always" ||
              (scheme === "first" && i === 0 && p.atZero);
            return prepend && !s.startsWith(rep) ? rep + s : s;
          });
        });
        if (c.split !== false) {
          steps.push(
            splitWith(
              (s) => findChars(s, (x) => x === repCp),
              "MergedWithNext",
            ),
          );
        }
        return;
      }
      default:
        throw fail(`pre-tokenizer "${asText(c.type, "")}" is not supported`);
    }
  };
  visit(cfg);
  const byteLevelTail = steps.length > 0 &&
    steps[steps.length - 1] === byteLevelStep;
  if (byteLevelTail) steps.pop();
  return { steps, byteLevelTail, byteLevel };
}
