/**
 * Pre-tokenization: cutting text into the words that BPE merges within.
 *
 * Patterns are written in the Oniguruma dialect that `tokenizer.json` files
 * use (the Hugging Face tokenizers library compiles them with Oniguruma);
 * {@link toJsRegExp} rewrites them into JavaScript Unicode regular
 * expressions. GGUF files name their pattern set by `tokenizer.ggml.pre`;
 * {@link ggufPreTokenizer} maps each name to the patterns of the model it
 * came from (the same table llama.cpp keeps in `src/llama-vocab.cpp`).
 *
 * @module
 */

import { ownValue } from "../core/_own.ts";

/**
 * White space as Oniguruma and Python `regex` see it (Unicode `White_Space`):
 * JavaScript's `\s` differs (it adds U+FEFF and drops U+0085).
 */
const WS =
  "\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

/** Options of {@link toJsPattern} and {@link toJsRegExp}. */
export interface ToJsPatternOptions {
  /**
   * `^` and `$` match at line starts and ends and `.` matches anything but
   * `\n`, as in Oniguruma's Ruby syntax (what `tokenizer.json` patterns
   * use); false keeps JavaScript's meanings (llama.cpp's patterns).
   * @default {true}
   */
  lineAnchors?: boolean;
}

/** Characters that keep a backslash in a JavaScript `u`-mode pattern. */
const SYNTAX = new Set("^$\\.*+?()[]{}|/".split(""));

/**
 * Rewrites an Oniguruma / Python-style pattern into a JavaScript `u`-mode
 * source: `\s`/`\S` become Unicode white space, `\d` and `\w` become their
 * Unicode meanings, `(?i:...)` groups are spelled out letter by letter
 * (so the result runs on engines without inline modifiers), possessive
 * quantifiers and atomic groups lose their possessiveness (the patterns
 * tokenizers ship match the same with plain greedy ones), `\x{HH}` becomes
 * `\u{HH}`, and escapes JavaScript rejects in `u` mode become literals.
 *
 * @param pattern The pattern as written in `tokenizer.json`.
 * @param options Which meaning `^`, `$` and `.` have.
 * @returns The JavaScript pattern source.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { toJsPattern } from "@modelhost/modelhost/tokenizers";
 * assert(toJsPattern("(?i:'s)") === "(?:'[sS])");
 * ```
 */
export function toJsPattern(
  pattern: string,
  options: ToJsPatternOptions = {},
): string {
  const lines = options.lineAnchors ?? true;
  let out = "";
  let inClass = false;
  let classStart = false; // just after '[' or '[^'
  let caseless = 0; // depth of open (?i: groups
  const groups: boolean[] = []; // per open '(': is it a (?i: group
  let afterQuantifier = false;
  const cps = Array.from(pattern);
  const lit = (ch: string) => `\\u{${ch.codePointAt(0)!.toString(16)}}`;
  const letterBoth = (ch: string) => {
    const lo = ch.toLowerCase();
    const up = ch.toUpperCase();
    if (
      lo === up || Array.from(lo).length !== 1 || Array.from(up).length !== 1
    ) {
      return ch;
    }
    const both = ch === lo ? lo + up : up + lo;
    return inClass ? both : `[${both}]`;
  };
  const folds = (ch: string) =>
    caseless > 0 && ch.toLowerCase() !== ch.toUpperCase();
  for (let i = 0; i < cps.length; i++) {
    const ch = cps[i];
    const wasQuantifier: boolean = afterQuantifier;
    afterQuantifier = false;
    if (ch === "\\") {
      const c = cps[++i];
      if (c === undefined) {
        throw new SyntaxError(`Pattern ends with a lone backslash: ${pattern}`);
      }
      classStart = false;
      switch (c) {
        case "s":
          out += inClass ? WS : `[${WS}]`;
          break;
        case "S":
          out += inClass ? "\\S" : `[^${WS}]`;
          break;
        case "d":
          out += "\\p{Nd}";
          break;
        case "D":
          out += "\\P{Nd}";
          break;
        case "w":
          out += inClass
            ? "\\p{L}\\p{M}\\p{Nd}\\p{Pc}"
            : "[\\p{L}\\p{M}\\p{Nd}\\p{Pc}]";
          break;
        case "W":
          out += inClass ? "\\W" : "[^\\p{L}\\p{M}\\p{Nd}\\p{Pc}]";
          break;
        case "h":
          out += inClass ? "0-9a-fA-F" : "[0-9a-fA-F]";
          break;
        case "A":
          out += "^";
          break;
        case "z":
          out += "$";
          break;
        case "Z":
          out += "(?=\\n?$)";
          break;
        case "p":
        case "P": {
          let name: string;
          if (cps[i + 1] === "{") {
            const close = cps.indexOf("}", i + 2);
            if (close < 0) {
              throw new SyntaxError(`Unclosed \\${c}{ in pattern ${pattern}`);
            }
            name = cps.slice(i + 2, close).join("");
            i = close;
          } else {
            name = cps[++i] ?? "";
          }
          let neg = c === "P";
          if (name.startsWith("^")) {
            neg = !neg;
            name = name.slice(1);
          }
          if (
            /^(Han|Hiragana|Katakana|Hangul|Latin|Greek|Cyrillic|Arabic|Hebrew|Thai)$/
              .test(name)
          ) {
            name = `Script=${name}`;
          }
          out += `\\${neg ? "P" : "p"}{${name}}`;
          break;
        }
        case "x":
          if (cps[i + 1] === "{") {
            const close = cps.indexOf("}", i + 2);
            out += `\\u{${cps.slice(i + 2, close).join("")}}`;
            i = close;
          } else {
            out += `\\x${cps[i + 1]}${cps[i + 2]}`;
            i += 2;
          }
          break;
        case "t":
        case "n":
        case "r":
        case "f":
        case "v":
        case "b":
        case "B":
        case "u":
        case "0":
          out += "\\" + c;
          break;
        default:
          if (SYNTAX.has(c) || (c === "-" && inClass)) out += "\\" + c;
          else if (/[0-9]/.test(c)) out += "\\" + c; // back reference
          else out += folds(c) ? letterBoth(c) : lit(c);
      }
      continue;
    }
    if (inClass) {
      if (ch === "]" && !classStart) {
        inClass = false;
        out += "]";
      } else if (ch === "[") {
        out += "\\[";
      } else if (ch === "^" && classStart && out.endsWith("[")) {
        out += "^";
        continue; // still at the class start
      } else if (ch === "]") {
        out += "\\]"; // a ']' right after '[' is literal in Oniguruma
      } else {
        out += folds(ch) ? letterBoth(ch) : ch;
      }
      classStart = false;
      continue;
    }
    switch (ch) {
      case "[":
        inClass = true;
        classStart = true;
        out += "[";
        break;
      case "(":
        if (cps[i + 1] === "?") {
          const rest = cps.slice(i + 2, i + 5).join("");
          if (rest.startsWith("i:")) {
            groups.push(true);
            caseless++;
            out += "(?:";
            i += 3;
            break;
          }
          if (rest.startsWith(">")) {
            groups.push(false);
            out += "(?:";
            i += 2;
            break;
          }
          if (rest.startsWith("i)")) {
            caseless++; // to the end of the pattern
            i += 3;
            break;
          }
        }
        groups.push(false);
        out += "(";
        break;
      case ")":
        if (groups.pop()) caseless--;
        out += ")";
        break;
      case "*":
      case "?":
        out += ch;
        afterQuantifier = ch === "*" || !wasQuantifier;
        break;
      case "+":
        if (wasQuantifier) break; // possessive: drop the '+'
        out += "+";
        afterQuantifier = true;
        break;
      case "{": {
        const m = /^\{\d+(,\d*)?\}/.exec(cps.slice(i, i + 24).join(""));
        if (m) {
          out += m[0];
          i += m[0].length - 1;
          afterQuantifier = true;
        } else {
          out += "\\{";
        }
        break;
      }
      case "}":
        out += "\\}";
        break;
      case "]":
        out += "\\]";
        break;
      case "^":
        out += lines ? "(?<![^\\n])" : "^";
        break;
      case "$":
        out += lines ? "(?![^\\n])" : "$";
        break;
      case ".":
        out += lines ? "[^\\n]" : ".";
        break;
      default:
        out += folds(ch) ? letterBoth(ch) : ch;
    }
  }
  if (inClass) throw new SyntaxError(`Unclosed [ in pattern ${pattern}`);
  return out;
}

/**
 * Compiles an Oniguruma-style pattern (as found in `tokenizer.json`) into a
 * global JavaScript Unicode regular expression.
 *
 * @param pattern The pattern.
 * @param options Which meaning `^`, `$` and `.` have.
 * @returns The compiled expression (flags `gu`).
 * @throws {SyntaxError} When the pattern cannot be compiled; the message
 * quotes it.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { toJsRegExp } from "@modelhost/modelhost/tokenizers";
 * const re = toJsRegExp("\\p{N}{1,3}");
 * assert("12345".match(re)!.join(",") === "123,45");
 * ```
 */
export function toJsRegExp(
  pattern: string,
  options: ToJsPatternOptions = {},
): RegExp {
  const src = toJsPattern(pattern, options);
  try {
    return new RegExp(src, "gu");
  } catch (e) {
    throw new SyntaxError(
      `Cannot compile pre-tokenizer pattern ${JSON.stringify(pattern)}: ${
        (e as Error).message
      }`,
    );
  }
}

/**
 * How a split keeps the matched delimiters (the Hugging Face
 * `SplitDelimiterBehavior` names).
 */
export type SplitBehavior =
  | "Isolated"
  | "Removed"
  | "MergedWithPrevious"
  | "MergedWithNext"
  | "Contiguous";

/** One pre-tokenization step over a list of pieces. */
export type PreTokenizeStep = (pieces: string[], first: boolean) => string[];

/**
 * Cuts each piece at the matches of `re`, keeping matches and the text
 * between them as `behavior` says (`invert` swaps which side is the
 * delimiter).
 */
export function splitStep(
  re: RegExp,
  behavior: SplitBehavior = "Isolated",
  invert = false,
): PreTokenizeStep {
  return (pieces) => {
    const out: string[] = [];
    for (const p of pieces) splitOne(p, re, behavior, invert, out);
    return out;
  };
}

function splitOne(
  piece: string,
  re: RegExp,
  behavior: SplitBehavior,
  invert: boolean,
  out: string[],
): void {
  if (piece.length === 0) return;
  // segments as [start, end, isDelimiter]
  const segs: number[] = [];
  re.lastIndex = 0;
  let last = 0;
  for (let m = re.exec(piece); m !== null; m = re.exec(piece)) {
    const s = m.index;
    const e = s + m[0].length;
    if (e === s) {
      // empty match: step one code point
      const c = piece.charCodeAt(s);
      re.lastIndex = s + (c >= 0xd800 && c <= 0xdbff ? 2 : 1);
      if (re.lastIndex > piece.length) break;
      continue;
    }
    if (s > last) segs.push(last, s, invert ? 1 : 0);
    segs.push(s, e, invert ? 0 : 1);
    last = e;
  }
  if (last < piece.length) segs.push(last, piece.length, invert ? 1 : 0);
  if (behavior === "Isolated") {
    for (let i = 0; i < segs.length; i += 3) {
      out.push(piece.slice(segs[i], segs[i + 1]));
    }
    return;
  }
  if (behavior === "Removed") {
    for (let i = 0; i < segs.length; i += 3) {
      if (!segs[i + 2]) out.push(piece.slice(segs[i], segs[i + 1]));
    }
    return;
  }
  // merge segments into pieces [start, end)
  const bounds: number[] = [];
  let prevDelim = 0;
  for (let i = 0; i < segs.length; i += 3) {
    const [s, e, d] = [segs[i], segs[i + 1], segs[i + 2]];
    const n = bounds.length;
    if (behavior === "MergedWithPrevious") {
      if (d && n > 0 && !prevDelim) bounds[n - 2] = e;
      else bounds.push(s, e, d);
      prevDelim = d;
    } else if (behavior === "MergedWithNext") {
      if (n > 0 && bounds[n - 1]) {
        bounds[n - 2] = e;
        bounds[n - 1] = d;
      } else bounds.push(s, e, d);
    } else { // Contiguous
      if (d && n > 0 && bounds[n - 1]) bounds[n - 2] = e;
      else bounds.push(s, e, d);
    }
  }
  for (let i = 0; i < bounds.length; i += 3) {
    out.push(piece.slice(bounds[i], bounds[i + 1]));
  }
}

/** The GPT-2 word pattern (also the Hugging Face `ByteLevel` default). */
export const GPT2_PATTERN =
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

const LLAMA3 =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2 =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const GPT4O =
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const TEKKEN =
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const BLOOM = " ?[^(\\s|.,!?…。，、।۔،)]+";
/** The cased letters DeepSeek LLM's tokenizer lists one by one. */
const DEEPSEEK_LETTERS =
  "A-Za-z\\x{b5}\\x{c0}-\\x{d6}\\x{d8}-\\x{f6}\\x{f8}-\\x{1ba}\\x{1bc}-\\x{1bf}\\x{1c4}-\\x{293}\\x{295}-\\x{2af}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37b}-\\x{37d}\\x{37f}\\x{386}\\x{388}-\\x{38a}\\x{38c}\\x{38e}-\\x{3a1}\\x{3a3}-\\x{3f5}\\x{3f7}-\\x{481}\\x{48a}-\\x{52f}\\x{531}-\\x{556}\\x{10a0}-\\x{10c5}\\x{13a0}-\\x{13f5}\\x{13f8}-\\x{13fd}\\x{1c90}-\\x{1cba}\\x{1cbd}-\\x{1cbf}\\x{1d00}-\\x{1d2b}\\x{1d6b}-\\x{1d77}\\x{1d79}-\\x{1d9a}\\x{1e00}-\\x{1f15}\\x{1f18}-\\x{1f1d}\\x{1f20}-\\x{1f45}\\x{1f48}-\\x{1f4d}\\x{1f50}-\\x{1f57}\\x{1f59}\\x{1f5b}\\x{1f5d}\\x{1f5f}-\\x{1f7d}\\x{1f80}-\\x{1fb4}\\x{1fb6}-\\x{1fbc}\\x{1fbe}\\x{1fc2}-\\x{1fc4}\\x{1fc6}-\\x{1fcc}\\x{1fd0}-\\x{1fd3}\\x{1fd6}-\\x{1fdb}\\x{1fe0}-\\x{1fec}\\x{1ff2}-\\x{1ff4}\\x{1ff6}-\\x{1ffc}\\x{2102}\\x{2107}\\x{210a}-\\x{2113}\\x{2115}\\x{2119}-\\x{211d}\\x{2124}\\x{2126}\\x{2128}\\x{212a}-\\x{212d}\\x{212f}-\\x{2134}\\x{2139}\\x{213c}-\\x{213f}\\x{2145}-\\x{2149}\\x{214e}\\x{2183}\\x{2184}\\x{2c00}-\\x{2c7b}\\x{2c7e}-\\x{2ce4}\\x{2ceb}-\\x{2cee}\\x{2cf2}\\x{2cf3}\\x{a640}-\\x{a66d}\\x{a680}-\\x{a69b}\\x{a722}-\\x{a76f}\\x{a771}-\\x{a787}\\x{a78b}-\\x{a78e}\\x{ab70}-\\x{abbf}\\x{fb00}-\\x{fb06}\\x{fb13}-\\x{fb17}\\x{ff21}-\\x{ff3a}\\x{ff41}-\\x{ff5a}\\x{10400}-\\x{1044f}\\x{104b0}-\\x{104d3}\\x{104d8}-\\x{104fb}\\x{10c80}-\\x{10cb2}\\x{10cc0}-\\x{10cf2}\\x{118a0}-\\x{118df}\\x{1e900}-\\x{1e943}";
const CJK = "[\\x{4e00}-\\x{9fa5}\\x{800}-\\x{4e00}\\x{ac00}-\\x{d7ff}]+";

/** What a GGUF `tokenizer.ggml.pre` name stands for. */
export interface GgufPreTokenizer {
  /** Patterns applied one after another, each isolating its matches. */
  patterns: readonly string[];
  /** Whole words found in the vocabulary skip merging (Llama 3 style). */
  ignoreMerges: boolean;
  /** The family adds BOS by default (when the GGUF file does not say). */
  addBos: boolean;
}

const PRE: Record<string, [readonly string[], boolean?, boolean?]> = {
  "default": [[
    "[\\p{P}\\$\\+<=>\\^~\\|]+",
    GPT2_PATTERN,
    "\\p{N}+",
    "[0-9][0-9][0-9]",
  ]],
  "llama3": [[LLAMA3], true, true],
  "dbrx": [[LLAMA3]],
  "smaug-bpe": [[LLAMA3]],
  "deepseek-llm": [[
    "[\\r\\n]",
    `\\s?[${DEEPSEEK_LETTERS}]+`,
    "\\s?[!-/:-~\\x{ff01}-\\x{ff0f}\\x{ff1a}-\\x{ff5e}\\x{2018}-\\x{201f}\\x{3000}-\\x{3002}]+",
    "\\s+$",
    CJK,
    "\\p{N}+",
  ]],
  "deepseek-coder": [[
    "[\\r\\n]",
    "\\s?\\p{L}+",
    "\\s?\\p{P}+",
    CJK,
    "\\p{N}",
  ]],
  "deepseek-v3": [[
    "\\p{N}{1,3}",
    "[\\x{4e00}-\\x{9fa5}\\x{3040}-\\x{309f}\\x{30a0}-\\x{30ff}]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ]],
  "falcon": [[
    "[\\p{P}\\$\\+<=>\\^~\\|`]+",
    GPT2_PATTERN,
    "[0-9][0-9][0-9]",
  ]],
  "starcoder": [["\\p{N}", GPT2_PATTERN]],
  "gpt-2": [[GPT2_PATTERN]],
  "qwen2": [[QWEN2]],
  "stablelm2": [[QWEN2]],
  "chatglm-bpe": [[LLAMA3]],
  "poro-chat": [[BLOOM]],
  "bloom": [[BLOOM]],
  "viking": [[BLOOM, "\\p{N}"]],
  "tekken": [[TEKKEN], true, true],
  "gpt-4o": [[GPT4O]],
  "chameleon": [
    [
      "<sentinel:[0-9]+>",
      "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
      "([\\t\\n]|    |  )",
      "\\p{N}",
      "[\\p{P}!-/:-@\\[-`{-~]",
      GPT2_PATTERN,
    ],
    false,
    true,
  ],
  "bailingmoe": [[
    "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
  ]],
  "seed-coder": [[
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ]],
  "jais-2": [[
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
  ]],
  "spark2_5": [[
    "\\p{N}{1,3}",
    "[\\x{4e00}-\\x{9fa5}\\x{3040}-\\x{309f}\\x{30a0}-\\x{30ff}]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\\r\\n]|\\s+(?!\\S)|\\s+",
    "\\p{N}",
  ]],
  "youtu": [
    [
      "[\\x{ac00}-\\x{d7a3}\\x{3131}-\\x{318e}]+|[\\x{ff01}\\x{2026}\\x{201c}\\x{201d}\\x{2018}\\x{2019}\\x{2014}\\x{ff1a}\\x{ff1b}\\x{ff0c}\\x{3001}-\\x{303f}\\x{fe30}-\\x{fe4f}]+|[\\x{3105}-\\x{312f}]+|[\\x{4e00}-\\x{9fa5}\\x{3040}-\\x{309f}\\x{30a0}-\\x{30ff}]+",
      "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ],
    true,
  ],
  "qwen35": [[
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ]],
  "granite-embed-multi-97m": [
    [
      "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ],
    true,
  ],
  "tiny_aya": [[
    "\\d{1,3}(?=(?:\\d{3})*\\b)",
    GPT4O,
  ]],
  "ufakzeka": [[
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  ]],
  "laguna": [[
    "[^\\n]+|[\\n]+",
    QWEN2,
  ]],
  "exaone-moe": [[
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
  ]],
  "minicpm5": [
    [
      "\\p{N}{1,3}",
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ],
    true,
  ],
};

/**
 * `tokenizer.ggml.pre` names llama.cpp knows whose splitting needs custom
 * code there (or a different byte handling), refused with the reason.
 */
const REFUSED: Record<string, string> = {
  "kimi-k2":
    "llama.cpp splits Kimi-K2 text with custom code (Han-aware classes)",
  "afmoe": "llama.cpp groups AFMoE digits with custom code",
  "superbpe": "its zero-length split pattern needs llama.cpp's regex engine",
  "gemma4": "Gemma 4 BPE runs on raw UTF-8 with escaped spaces, not byte-level",
  "granite-embed-multi-311m":
    "its BPE runs on raw UTF-8 with escaped spaces, not byte-level",
  "sarvam-moe": "its BPE runs on raw UTF-8 with escaped spaces, not byte-level",
  "whitespace": "its vocabulary is split at white space without byte encoding",
};

/** Other names llama.cpp gives to the same pattern sets. */
const ALIASES: Record<string, string> = {
  "llama-v3": "llama3",
  "llama-bpe": "llama3",
  "falcon3": "llama3",
  "falcon-h1": "llama3",
  "pixtral": "llama3",
  "midm-2.0": "llama3",
  "refact": "starcoder",
  "command-r": "starcoder",
  "smollm": "starcoder",
  "codeshell": "starcoder",
  "exaone": "starcoder",
  "minerva-7b": "starcoder",
  "mpt": "gpt-2",
  "olmo": "gpt-2",
  "jais": "gpt-2",
  "phi-2": "gpt-2",
  "jina-es": "gpt-2",
  "jina-de": "gpt-2",
  "jina-v1-en": "gpt-2",
  "jina-v2-es": "gpt-2",
  "jina-v2-de": "gpt-2",
  "jina-v2-code": "gpt-2",
  "roberta-bpe": "gpt-2",
  "gigachat": "gpt-2",
  "exaone4": "gpt-2",
  "trillion": "gpt-2",
  "granite-docling": "gpt-2",
  "a.x-4.0": "gpt-2",
  "mellum": "gpt-2",
  "deepseek-r1-qwen": "qwen2",
  "megrez": "qwen2",
  "hunyuan": "qwen2",
  "glm4": "chatglm-bpe",
  "gpt3-finnish": "bloom",
  "llama4": "gpt-4o",
  "bailingmoe2": "bailingmoe",
  "grok-2": "qwen2",
  "hunyuan-dense": "deepseek-v3",
  "joyai-llm": "deepseek-v3",
  "hy_v4": "deepseek-v3",
  "lfm2": "llama3",
  "jina-v5-nano": "llama3",
  "modern-bert": "gpt-2",
  "kormo": "qwen2",
  "f2llmv2": "qwen2",
  "solar-open": "qwen2",
  "kanana2": "gpt-4o",
  "talkie": "gpt-4o",
  "minimax-m2": "gpt-4o",
  "cohere2moe": "tiny_aya",
  "llada-moe": "bailingmoe",
  "mellum2": "starcoder",
};

/**
 * The `tokenizer.ggml.pre` names {@link ggufPreTokenizer} knows (the
 * names llama.cpp splits with custom code are refused by name instead).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GGUF_PRE_NAMES } from "@modelhost/modelhost/tokenizers";
 * assert(GGUF_PRE_NAMES.includes("default"));
 * ```
 */
export const GGUF_PRE_NAMES: readonly string[] = [
  ...Object.keys(PRE),
  ...Object.keys(ALIASES).filter((k) => !(k in PRE)),
].sort();

/**
 * The pre-tokenizer a GGUF byte-level BPE vocabulary names in
 * `tokenizer.ggml.pre`. A missing name means `"default"`, as in llama.cpp.
 *
 * @param pre The `tokenizer.ggml.pre` value.
 * @returns The patterns and the flags that go with the name.
 * @throws {TypeError} For a name not in the table; the message lists the
 * known names.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufPreTokenizer } from "@modelhost/modelhost/tokenizers";
 * assert(ggufPreTokenizer("llama-bpe").ignoreMerges);
 * assert(ggufPreTokenizer("gpt-2").patterns.length === 1);
 * ```
 */
export function ggufPreTokenizer(pre: string | undefined): GgufPreTokenizer {
  const name = pre === undefined || pre === "" ? "default" : pre;
  const entry = ownValue(PRE, ownValue(ALIASES, name) ?? name);
  if (!entry) {
    if (Object.hasOwn(REFUSED, name)) {
      throw new TypeError(
        `GGUF pre-tokenizer "${name}" (tokenizer.ggml.pre) is not supported: ${
          REFUSED[name]
        }`,
      );
    }
    throw new TypeError(
      `Unknown GGUF pre-tokenizer "${name}" (tokenizer.ggml.pre); known: ${
        GGUF_PRE_NAMES.join(", ")
      }`,
    );
  }
  return {
    patterns: entry[0],
    ignoreMerges: entry[1] ?? false,
    addBos: entry[2] ?? false,
  };
}

/** Splits text with a list of patterns, each isolating its matches. */
export function patternSteps(patterns: readonly string[]): PreTokenizeStep[] {
  return patterns.map((p) =>
    splitStep(toJsRegExp(p, { lineAnchors: false }), "Isolated")
  );
}

/** Runs pre-tokenization steps over one text fragment. */
export function runSteps(
  steps: readonly PreTokenizeStep[],
  text: string,
  first: boolean,
): string[] {
  let pieces = [text];
  for (const step of steps) pieces = step(pieces, first);
  return pieces;
}
