/**
 * The `decoder` of a `tokenizer.json`, as the Hugging Face tokenizers
 * library runs it: a chain of steps over the list of token strings, joined
 * at the end. Private to `tokenizers/`.
 *
 * Each step takes `first`, the index the list's first token has in the
 * whole output: 0 normally, 1 when the tokens continue earlier text (a
 * stream that must keep the leading space of its first token).
 *
 * @module
 */

import { findMatches, obj } from "./_hf_common.ts";
import { patternRegExp } from "./_hf_normalizers.ts";
import { prependScheme } from "./_hf_pre_tokenizers.ts";
import {
  asText,
  CHAR_TO_BYTE,
  parseBytePiece,
  SPM_SPACE,
  utf8,
} from "./_text.ts";

/** One decoding step. */
export type DecodeStep = (tokens: string[], first: number) => string[];

/** The decoder and what the tokenizer may infer from it. */
export interface Decoder {
  /** Runs the chain; returns the text. */
  decode(tokens: string[], first: number): string;
  /** The chain starts with the byte-level mapping (tokens are byte-alphabet strings). */
  byteLevel: boolean;
  /** Some step drops the space in front of the first token (Metaspace, Strip, WordPiece). */
  stripsLeading: boolean;
  /** Some step turns `<0xNN>` tokens into bytes. */
  byteFallback: boolean;
}

type Fail = (msg: string) => Error;

const lossy = new TextDecoder("utf-8", { ignoreBOM: true });
const strict = new TextDecoder("utf-8", { ignoreBOM: true, fatal: true });

/** The bytes of a byte-level token: every character in the byte alphabet, or its own UTF-8. */
export function byteLevelTokenBytes(t: string, out: number[]): void {
  const start = out.length;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    const b = c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
    if (b < 0) {
      out.length = start;
      for (const x of utf8(t)) out.push(x);
      return;
    }
    out.push(b);
  }
}

const byteLevelStep: DecodeStep = (tokens) => {
  const bytes: number[] = [];
  for (const t of tokens) byteLevelTokenBytes(t, bytes);
  return [lossy.decode(Uint8Array.from(bytes))];
};

const byteFallbackStep: DecodeStep = (tokens) => {
  const out: string[] = [];
  let pending: number[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    try {
      out.push(strict.decode(Uint8Array.from(pending)));
    } catch {
      for (let i = 0; i < pending.length; i++) out.push("\ufffd");
    }
    pending = [];
  };
  for (const t of tokens) {
    const b = parseBytePiece(t);
    if (b >= 0) pending.push(b);
    else {
      flush();
      out.push(t);
    }
  }
  flush();
  return out;
};

const fuseStep: DecodeStep = (tokens) => [tokens.join("")];

function wordPieceCleanup(s: string): string {
  return s.replaceAll(" .", ".").replaceAll(" ?", "?").replaceAll(" !", "!")
    .replaceAll(" ,", ",").replaceAll(" ' ", "'").replaceAll(" n't", "n't")
    .replaceAll(" 'm", "'m").replaceAll(" do not", " don't")
    .replaceAll(" 's", "'s").replaceAll(" 've", "'ve").replaceAll(
      " 're",
      "'re",
    );
}

/**
 * Builds the decoder a `tokenizer.json` describes.
 *
 * @param cfg The `decoder` field (null for none: tokens joined with spaces).
 * @param fail Makes the error for an unsupported or malformed part.
 * @returns The decoder.
 */
export function buildDecoder(cfg: unknown, fail: Fail): Decoder {
  const info = { byteLevel: false, stripsLeading: false, byteFallback: false };
  const steps: DecodeStep[] = [];
  const visit = (d: unknown) => {
    const c = obj(d);
    if (!c) return;
    switch (c.type) {
      case "Sequence":
        for (const x of Array.isArray(c.decoders) ? c.decoders : []) {
          visit(x);
        }
        return;
      case "ByteLevel":
        if (steps.length === 0) info.byteLevel = true;
        steps.push(byteLevelStep);
        return;
      case "Metaspace": {
        const rep = asText(c.replacement, SPM_SPACE);
        const scheme = prependScheme(c);
        if (scheme !== "never") info.stripsLeading = true;
        steps.push((tokens, first) =>
          tokens.map((t, i) =>
            i + first === 0 && scheme !== "never"
              ? t.replaceAll(rep, "")
              : t.replaceAll(rep, " ")
          )
        );
        return;
      }
      case "WordPiece": {
        const prefix = asText(c.prefix, "##");
        const cleanup = c.cleanup !== false;
        info.stripsLeading = true;
        steps.push((tokens, first) =>
          tokens.map((t, i) => {
            if (i + first !== 0) {
              t = t.startsWith(prefix) ? t.slice(prefix.length) : " " + t;
            }
            return cleanup ? wordPieceCleanup(t) : t;
          })
        );
        return;
      }
      case "Replace": {
        const re = patternRegExp(c.pattern, "Replace decoder", fail);
        const content = asText(c.content, "");
        const literal = obj(c.pattern)?.String;
        if (typeof literal === "string" && literal !== "") {
          // a literal pattern matches where the string occurs, left to right
          steps.push((tokens) =>
            tokens.map((t) => t.replaceAll(literal, content))
          );
          return;
        }
        steps.push((tokens) =>
          tokens.map((t) => {
            if (t.length === 0) return t;
            const segs = findMatches(t, re);
            let out = "";
            for (let i = 0; i < segs.length; i += 3) {
              out += segs[i + 2] ? content : t.slice(segs[i], segs[i + 1]);
            }
            return out;
          })
        );
        return;
      }
      case "Strip": {
        const content = asText(c.content, " ");
        const start = Number(c.start ?? 0);
        const stop = Number(c.stop ?? 0);
        if (start > 0) info.stripsLeading = true;
        // after Fuse the one token is the whole text: a continued stream keeps its start
        const fused = steps.includes(fuseStep);
        steps.push((tokens, first) =>
          tokens.map((t, i) => {
            // whole characters off each end (content is one character)
            let a = 0;
            if (!(fused && i === 0 && first > 0)) {
              for (let k = 0; k < start && t.startsWith(content, a); k++) {
                a += content.length;
              }
            }
            let b = t.length;
            for (
              let k = 0;
              k < stop && b - content.length >= 0 &&
              t.startsWith(content, b - content.length);
              k++
            ) b -= content.length;
            return b <= a ? "" : a === 0 && b === t.length ? t : t.slice(a, b);
          })
        );
        return;
      }
      case "Fuse":
        steps.push(fuseStep);
        return;
      case "ByteFallback":
        info.byteFallback = true;
        steps.push(byteFallbackStep);
        return;
      case "BPEDecoder": {
        const suffix = asText(c.suffix, "</w>");
        steps.push((tokens) =>
          tokens.map((t, i) =>
            t.replaceAll(suffix, i === tokens.length - 1 ? "" : " ")
          )
        );
        return;
      }
      case "CTC": {
        const pad = asText(c.pad_token, "<pad>");
        const delim = asText(c.word_delimiter_token, "|");
        const cleanup = c.cleanup !== false;
        steps.push((tokens) => {
          const out: string[] = [];
          let prev: string | undefined;
          for (const t of tokens) {
            if (t === prev) continue;
            prev = t;
            if (t === pad) continue;
            out.push(cleanup ? wordPieceCleanup(t).replaceAll(delim, " ") : t);
          }
          return out;
        });
        return;
      }
      default:
        throw fail(`decoder "${asText(c.type, "")}" is not supported`);
    }
  };
  visit(cfg);
  const decode = steps.length === 0
    ? (tokens: string[]) => tokens.join(" ")
    : (tokens: string[], first: number) => {
      for (const step of steps) tokens = step(tokens, first);
      return tokens.join("");
    };
  return { decode, ...info };
}
