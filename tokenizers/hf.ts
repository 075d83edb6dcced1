/**
 * Tokenizers from Hugging Face `tokenizer.json` files (plus, optionally,
 * `tokenizer_config.json` and `generation_config.json`): BPE models, byte
 * level (GPT-2, Llama 3, Qwen, SmolLM ...) or character level with byte
 * fallback (Llama 2, TinyLlama, Mistral), and WordPiece models (BERT).
 *
 * Supported pipeline parts: normalizers `NFC`, `NFD`, `NFKC`, `NFKD`,
 * `Lowercase`, `Strip`, `StripAccents`, `Replace`, `Prepend`,
 * `BertNormalizer`, `Sequence`; pre-tokenizers `ByteLevel`, `Split`,
 * `Digits`, `Punctuation`, `Metaspace`, `Whitespace`, `WhitespaceSplit`,
 * `CharDelimiterSplit`, `BertPreTokenizer`, `Sequence`; post-processors
 * `TemplateProcessing`, `BertProcessing`, `RobertaProcessing`, `ByteLevel`,
 * `Sequence`; decoders `ByteLevel`, `Metaspace`, `Replace`, `ByteFallback`,
 * `Fuse`, `Strip`, `WordPiece`, `Sequence`. Anything else is refused with a
 * `TypeError` naming it.
 *
 * @module
 */

import { BpeModel } from "./bpe.ts";
import {
  GPT2_PATTERN,
  type PreTokenizeStep,
  runSteps,
  type SplitBehavior,
  splitStep,
  toJsRegExp,
} from "./pre_tokenize.ts";
import { assembleTokenizer, TokenAttr, type Tokenizer } from "./tokenizer.ts";
import {
  BYTE_TO_CHAR,
  byteLevelBytes,
  parseBytePiece,
  SPM_SPACE,
  utf8,
} from "./_text.ts";
import { WordPieceModel } from "./wordpiece.ts";

/** One entry of `added_tokens` in `tokenizer.json`. */
export interface HfAddedToken {
  /** Token id. */
  id: number;
  /** Token text. */
  content: string;
  /** Special (control) token: matched only with `parseSpecial`, skipped when decoding. */
  special?: boolean;
  /** Swallows white space on its left. */
  lstrip?: boolean;
  /** Swallows white space on its right. */
  rstrip?: boolean;
  /** Other fields are accepted and ignored. */
  [field: string]: unknown;
}

/** The parts of a `tokenizer.json` this module reads (other fields are ignored). */
export interface TokenizerJson {
  /** The model: `{ type: "BPE" | "WordPiece", vocab, merges?, ... }`. */
  model: {
    type?: string;
    vocab: Record<string, number>;
    [field: string]: unknown;
  };
  /** Added tokens. */
  added_tokens?: HfAddedToken[];
  /** Normalizer config or null. */
  normalizer?: unknown;
  /** Pre-tokenizer config or null. */
  pre_tokenizer?: unknown;
  /** Post-processor config or null (where BOS / EOS come from). */
  post_processor?: unknown;
  /** Decoder config or null. */
  decoder?: unknown;
  /** Other fields are accepted and ignored. */
  [field: string]: unknown;
}

/** A special token as `tokenizer_config.json` writes it. */
export type HfTokenText = string | { content: string } | null;

/** The parts of `tokenizer_config.json` this module reads. */
export interface TokenizerConfigJson {
  /** BOS token text. */
  bos_token?: HfTokenText;
  /** EOS token text. */
  eos_token?: HfTokenText;
  /** Unknown token text. */
  unk_token?: HfTokenText;
  /** Padding token text. */
  pad_token?: HfTokenText;
  /** Whether encoding adds BOS (overrides the post-processor). */
  add_bos_token?: boolean;
  /** Whether encoding adds EOS (overrides the post-processor). */
  add_eos_token?: boolean;
  /** The Jinja chat template (or a list of named templates). */
  chat_template?: string | { name: string; template: string }[];
  /** Other fields are accepted and ignored. */
  [field: string]: unknown;
}

/** The parts of `generation_config.json` this module reads. */
export interface GenerationConfigJson {
  /** BOS id. */
  bos_token_id?: number;
  /** EOS id, or several ids that all end generation. */
  eos_token_id?: number | number[];
  /** Other fields are accepted and ignored. */
  [field: string]: unknown;
}

/** Options of {@link tokenizerFromJson}. */
export interface HfTokenizerOptions {
  /** The `tokenizer_config.json` beside the file. */
  config?: TokenizerConfigJson;
  /** The `generation_config.json` beside the file. */
  generationConfig?: GenerationConfigJson;
  /** Where the JSON came from, for messages. @default {"tokenizer.json"} */
  name?: string;
  /** BPE: how many words to remember with their ids (0 turns the cache off). @default {50000} */
  wordCache?: number;
}

type Json = Record<string, unknown>;

/** Unused ids tolerated past twice the defined tokens (a hostile-size limit). */
const MAX_ID_GAP = 4096;

const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v)
    ? v as Json
    : undefined;

const escapeRe = (s: string) => s.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");

function tokenText(t: HfTokenText | undefined): string | undefined {
  if (t === null || t === undefined) return undefined;
  return typeof t === "string" ? t : t.content;
}

/**
 * Reads a Hugging Face `tokenizer.json`.
 *
 * BOS / EOS come from the post-processor template, overridden by
 * `tokenizer_config.json` (`add_bos_token`, `bos_token`, ...) and
 * `generation_config.json` (`eos_token_id`). Added tokens marked `special`
 * are control tokens (matched in text only with `parseSpecial`); the others
 * are always matched.
 *
 * @param json The parsed `tokenizer.json`.
 * @param options The configs beside it.
 * @returns The tokenizer.
 * @throws {TypeError} For a model type or pipeline part that is not
 * supported, or a malformed field; the message names it.
 * @throws {RangeError} When token ids run far past the tokens defined.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { tokenizerFromJson } from "@modelhost/modelhost/tokenizers";
 * const tok = tokenizerFromJson({
 *   model: { type: "BPE", vocab: { "h": 0, "i": 1, "hi": 2, "Ġ": 3, "Ġhi": 4 }, merges: ["h i", "Ġ hi"] },
 *   pre_tokenizer: { type: "ByteLevel", add_prefix_space: false },
 *   decoder: { type: "ByteLevel" },
 * });
 * assert(tok.encode("hi hi").join() === "2,4");
 * assert(tok.decode([2, 4]) === "hi hi");
 * ```
 */
export function tokenizerFromJson(
  json: TokenizerJson,
  options: HfTokenizerOptions = {},
): Tokenizer {
  const where = options.name ?? "tokenizer.json";
  const fail = (msg: string) => new TypeError(`${where}: ${msg}`);
  const model = obj(json?.model);
  if (!model) throw fail("has no model object");
  const type = model.type ?? ("merges" in model ? "BPE" : undefined);
  if (type !== "BPE" && type !== "WordPiece") {
    throw fail(
      `model type "${type}" is not supported (supported: BPE, WordPiece)`,
    );
  }
  const vocab = obj(model.vocab);
  if (!vocab) throw fail("model.vocab must be an object of token -> id");

  // ids -> text, attributes
  const added = Array.isArray(json.added_tokens) ? json.added_tokens : [];
  let size = 0;
  for (const id of Object.values(vocab)) {
    if (!Number.isInteger(id) || (id as number) < 0) {
      throw fail(`model.vocab has a bad id ${JSON.stringify(id)}`);
    }
    size = Math.max(size, (id as number) + 1);
  }
  for (const a of added) size = Math.max(size, a.id + 1);
  // ids are dense in real files; a far-away id must not size a huge table
  const entries = Object.keys(vocab).length + added.length;
  if (size > 2 * entries + MAX_ID_GAP) {
    throw new RangeError(
      `${where}: token id ${
        size - 1
      } is far beyond the ${entries} tokens the file defines`,
    );
  }
  const tokens: string[] = new Array(size).fill("");
  const attrs = new Uint8Array(size).fill(TokenAttr.UNUSED);
  const byteFallback = model.byte_fallback === true;
  for (const [text, id] of Object.entries(vocab) as [string, number][]) {
    tokens[id] = text;
    attrs[id] = byteFallback && parseBytePiece(text) >= 0
      ? TokenAttr.BYTE
      : TokenAttr.NORMAL;
  }
  const modelTokens = tokens.slice(); // what the model itself knows
  const lstrip = new Set<number>();
  const rstrip = new Set<number>();
  for (const a of added) {
    if (!Number.isInteger(a.id) || typeof a.content !== "string") {
      throw fail(
        `added_tokens entry ${
          JSON.stringify(a)
        } needs an integer id and a content string`,
      );
    }
    tokens[a.id] = a.content;
    attrs[a.id] = a.special ? TokenAttr.CONTROL : TokenAttr.USER_DEFINED;
    if (a.lstrip) lstrip.add(a.id);
    if (a.rstrip) rstrip.add(a.id);
  }
  const idOf = new Map<string, number>();
  tokens.forEach((t, i) => {
    if (t !== "" && !idOf.has(t)) idOf.set(t, i);
  });
  const lookup = (
    text: string | undefined,
    what: string,
  ): number | undefined => {
    if (text === undefined) return undefined;
    const id = idOf.get(text);
    if (id === undefined) {
      throw fail(`${what} "${text}" is not in the vocabulary`);
    }
    return id;
  };
  const unk = typeof model.unk_token === "string"
    ? idOf.get(model.unk_token)
    : undefined;
  if (unk !== undefined && attrs[unk] === TokenAttr.NORMAL) {
    attrs[unk] = TokenAttr.UNKNOWN;
  }

  const normalize = buildNormalizer(json.normalizer, fail);
  const pre = buildPreTokenizer(json.pre_tokenizer, fail);
  const dec = readDecoder(json.decoder, fail);
  const byteLevel = pre.byteLevel || dec.byteLevel;

  // BOS / EOS: post-processor, then the configs
  const post = readPostProcessor(json.post_processor, fail, idOf);
  const cfg = options.config ?? {};
  let bos = post.bos;
  let eos = post.eos;
  let addBos = bos !== undefined;
  let addEos = eos !== undefined;
  bos = lookup(tokenText(cfg.bos_token), "bos_token") ?? bos;
  eos = lookup(tokenText(cfg.eos_token), "eos_token") ?? eos;
  if (typeof cfg.add_bos_token === "boolean") addBos = cfg.add_bos_token;
  if (typeof cfg.add_eos_token === "boolean") addEos = cfg.add_eos_token;
  const gen = options.generationConfig ?? {};
  const eog: number[] = [];
  if (typeof gen.bos_token_id === "number") bos = gen.bos_token_id;
  if (gen.eos_token_id !== undefined) {
    const ids = Array.isArray(gen.eos_token_id)
      ? gen.eos_token_id
      : [gen.eos_token_id];
    if (ids.length > 0) eos = ids[0];
    eog.push(...ids);
  }
  const pad = lookup(tokenText(cfg.pad_token), "pad_token");
  let chatTemplate: string | undefined;
  if (typeof cfg.chat_template === "string") chatTemplate = cfg.chat_template;
  else if (Array.isArray(cfg.chat_template)) {
    const t = cfg.chat_template.find((x) => x.name === "default") ??
      cfg.chat_template[0];
    chatTemplate = t?.template;
  }

  let encodeWord: (w: string, out: number[]) => void;
  let normalBytes: (id: number) => Uint8Array;
  if (type === "WordPiece") {
    if (unk === undefined) {
      throw fail("a WordPiece model needs model.unk_token in the vocabulary");
    }
    const prefix = typeof model.continuing_subword_prefix === "string"
      ? model.continuing_subword_prefix
      : "##";
    const wp = new WordPieceModel({
      tokens: modelTokens,
      unk,
      wordPrefix: "",
      continuationPrefix: prefix,
      maxInputChars: typeof model.max_input_chars_per_word === "number"
        ? model.max_input_chars_per_word
        : 100,
    });
    encodeWord = (w, out) => wp.encodeWord(w, out);
    normalBytes = (id) =>
      utf8(
        tokens[id].startsWith(prefix)
          ? tokens[id].slice(prefix.length)
          : " " + tokens[id],
      );
  } else {
    for (const k of ["continuing_subword_prefix", "end_of_word_suffix"]) {
      if (typeof model[k] === "string" && model[k] !== "") {
        throw fail(`BPE option model.${k} is not supported`);
      }
    }
    const rawMerges = Array.isArray(model.merges) ? model.merges : [];
    const merges = rawMerges.map((m, i): [string, string] => {
      if (Array.isArray(m) && m.length === 2) {
        return [String(m[0]), String(m[1])];
      }
      if (typeof m === "string") {
        const sp = m.indexOf(" ", 1);
        if (sp > 0) return [m.slice(0, sp), m.slice(sp + 1)];
      }
      throw fail(
        `model.merges[${i}] = ${
          JSON.stringify(m)
        } is neither "a b" nor ["a", "b"]`,
      );
    });
    const bpe = new BpeModel({
      tokens: modelTokens,
      merges,
      byteLevel,
      byteFallback,
      ignoreMerges: model.ignore_merges === true,
      unk,
      fuseUnk: model.fuse_unk === true,
      cacheSize: options.wordCache,
    });
    encodeWord = pre.byteLevel
      ? (w, out) => bpe.encodeMapped(w, out)
      : (w, out) => bpe.encodeWord(w, out);
    normalBytes = byteLevel ? (id) => byteLevelBytes(tokens[id]) : (id) =>
      utf8(
        dec.spaceChar ? tokens[id].replaceAll(dec.spaceChar, " ") : tokens[id],
      );
  }

  return assembleTokenizer({
    kind: type === "WordPiece" ? "wordpiece" : byteLevel ? "bpe" : "spm",
    tokens,
    attrs,
    bos,
    eos,
    unk,
    pad,
    sep: post.sep,
    eog,
    addBos,
    addEos,
    addSep: post.sep !== undefined,
    addSpacePrefix: type === "WordPiece" ? true : dec.stripLeadingSpace,
    lstrip,
    rstrip,
    chatTemplate,
    encodeText(text, out, atStart) {
      const normalized = normalize(text);
      for (const w of runSteps(pre.steps, normalized, atStart)) {
        encodeWord(w, out);
      }
    },
    normalBytes,
  });
}

// ---------------------------------------------------------------- normalizers

type Fail = (msg: string) => TypeError;

function buildNormalizer(cfg: unknown, fail: Fail): (s: string) => string {
  const c = obj(cfg);
  if (!c) return (s) => s;
  switch (c.type) {
    case "NFC":
    case "NFD":
    case "NFKC":
    case "NFKD":
      return (s) => s.normalize(c.type as string);
    case "Lowercase":
      return (s) => s.toLowerCase();
    case "Strip": {
      const left = c.strip_left !== false;
      const right = c.strip_right !== false;
      return (s) => {
        if (left) {
          s = s.replace(
            /^[\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/u,
            "",
          );
        }
        if (right) {
          s = s.replace(
            /[\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/u,
            "",
          );
        }
        return s;
      };
    }
    case "StripAccents":
      return (s) => s.replace(/\p{Mn}/gu, "");
    case "Prepend": {
      const p = String(c.prepend ?? "");
      return (s) => (s.length > 0 ? p + s : s);
    }
    case "Replace": {
      const pat = obj(c.pattern) ?? {};
      const content = String(c.content ?? "");
      if (typeof pat.String === "string") {
        const from = pat.String;
        return (s) => s.replaceAll(from, content);
      }
      if (typeof pat.Regex === "string") {
        const re = toJsRegExp(pat.Regex);
        return (s) => s.replace(re, () => content);
      }
      throw fail(`Replace normalizer needs pattern.String or pattern.Regex`);
    }
    case "BertNormalizer": {
      const lower = c.lowercase !== false;
      const strip = typeof c.strip_accents === "boolean"
        ? c.strip_accents
        : lower;
      const clean = c.clean_text !== false;
      const chinese = c.handle_chinese_chars !== false;
      return (s) => bertNormalize(s, { lower, strip, clean, chinese });
    }
    case "Sequence": {
      const list = Array.isArray(c.normalizers) ? c.normalizers : [];
      const fns = list.map((n) => buildNormalizer(n, fail));
      return (s) => fns.reduce((acc, f) => f(acc), s);
    }
    default:
      throw fail(`normalizer "${c.type}" is not supported`);
  }
}

function isChineseCp(cp: number): boolean {
  return (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) || (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b920 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f);
}

function bertNormalize(
  s: string,
  o: { lower: boolean; strip: boolean; clean: boolean; chinese: boolean },
): string {
  let out = "";
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (o.clean) {
      if (cp === 0 || cp === 0xfffd) continue;
      if (/[\t\n\r]/.test(ch) || /\p{Zs}/u.test(ch)) {
        out += " ";
        continue;
      }
      if (/\p{C}/u.test(ch)) continue;
    }
    out += o.chinese && isChineseCp(cp) ? ` ${ch} ` : ch;
  }
  if (o.strip) out = out.normalize("NFD").replace(/\p{Mn}/gu, "");
  if (o.lower) out = out.toLowerCase();
  return out;
}

// -------------------------------------------------------------- pre-tokenizers

function toByteAlphabet(piece: string): string {
  let s = "";
  for (const b of utf8(piece)) s += BYTE_TO_CHAR[b];
  return s;
}

interface PreTokenizer {
  steps: PreTokenizeStep[];
  byteLevel: boolean;
}

function behaviorOf(v: unknown, fail: Fail): SplitBehavior {
  const names: Record<string, SplitBehavior> = {
    isolated: "Isolated",
    removed: "Removed",
    merged_with_previous: "MergedWithPrevious",
    mergedwithprevious: "MergedWithPrevious",
    merged_with_next: "MergedWithNext",
    mergedwithnext: "MergedWithNext",
    contiguous: "Contiguous",
  };
  if (v === undefined) return "Isolated";
  const b = names[String(v).toLowerCase()];
  if (!b) throw fail(`split behavior "${v}" is not known`);
  return b;
}

function buildPreTokenizer(cfg: unknown, fail: Fail): PreTokenizer {
  const c = obj(cfg);
  if (!c) return { steps: [], byteLevel: false };
  switch (c.type) {
    case "Sequence": {
      const list = Array.isArray(c.pretokenizers) ? c.pretokenizers : [];
      const parts = list.map((p) => buildPreTokenizer(p, fail));
      return {
        steps: parts.flatMap((p) => p.steps),
        byteLevel: parts.some((p) => p.byteLevel),
      };
    }
    case "ByteLevel": {
      const prefix = c.add_prefix_space === true;
      const steps: PreTokenizeStep[] = [];
      if (prefix) {
        steps.push((pieces) =>
          pieces.map((p) => (p.startsWith(" ") ? p : " " + p))
        );
      }
      if (c.use_regex !== false) {
        steps.push(splitStep(toJsRegExp(GPT2_PATTERN)));
      }
      // later steps, and the model, see the byte alphabet (`Ġ` for a space)
      steps.push((pieces) => pieces.map(toByteAlphabet));
      return { steps, byteLevel: true };
    }
    case "Split": {
      const pat = obj(c.pattern) ?? {};
      const source = typeof pat.Regex === "string"
        ? pat.Regex
        : typeof pat.String === "string"
        ? escapeRe(pat.String)
        : undefined;
      if (source === undefined) {
        throw fail("Split pre-tokenizer needs pattern.String or pattern.Regex");
      }
      return {
        steps: [
          splitStep(
            toJsRegExp(source),
            behaviorOf(c.behavior, fail),
            c.invert === true,
          ),
        ],
        byteLevel: false,
      };
    }
    case "Digits": // Rust's char::is_numeric: Nd, Nl and No
      return {
        steps: [
          splitStep(toJsRegExp(c.individual_digits ? "\\p{N}" : "\\p{N}+")),
        ],
        byteLevel: false,
      };
    case "Punctuation":
      return {
        steps: [
          splitStep(
            toJsRegExp("[\\p{P}$+<=>^`|~]"),
            behaviorOf(c.behavior, fail),
          ),
        ],
        byteLevel: false,
      };
    case "Whitespace":
      return {
        steps: [splitStep(toJsRegExp("\\w+|[^\\w\\s]+"), "Removed", true)],
        byteLevel: false,
      };
    case "WhitespaceSplit":
      return {
        steps: [splitStep(toJsRegExp("\\s+"), "Removed")],
        byteLevel: false,
      };
    case "CharDelimiterSplit":
      return {
        steps: [
          splitStep(
            toJsRegExp(escapeRe(String(c.delimiter ?? " "))),
            "Removed",
          ),
        ],
        byteLevel: false,
      };
    case "BertPreTokenizer":
      return {
        steps: [
          splitStep(toJsRegExp("\\s+"), "Removed"),
          splitStep(toJsRegExp("[\\p{P}$+<=>^`|~]")),
        ],
        byteLevel: false,
      };
    case "Metaspace": {
      const rep = String(c.replacement ?? SPM_SPACE);
      const scheme = typeof c.prepend_scheme === "string"
        ? c.prepend_scheme
        : c.add_prefix_space === false
        ? "never"
        : "always";
      const split = c.split !== false;
      const splitter = splitStep(toJsRegExp(escapeRe(rep)), "MergedWithNext");
      return {
        steps: [(pieces, first) => {
          const out = pieces.map((p, i) => {
            let s = p.replaceAll(" ", rep);
            const prepend = scheme === "always" ||
              (scheme === "first" && first && i === 0);
            if (prepend && !s.startsWith(rep)) s = rep + s;
            return s;
          });
          return split ? splitter(out, first) : out;
        }],
        byteLevel: false,
      };
    }
    default:
      throw fail(`pre-tokenizer "${c.type}" is not supported`);
  }
}

// --------------------------------------------------------- post-processors

interface PostInfo {
  bos?: number;
  eos?: number;
  sep?: number;
}

function readPostProcessor(
  cfg: unknown,
  fail: Fail,
  idOf: Map<string, number>,
): PostInfo {
  const c = obj(cfg);
  if (!c) return {};
  switch (c.type) {
    case "TemplateProcessing": {
      const single = Array.isArray(c.single) ? c.single : [];
      const specials = obj(c.special_tokens) ?? {};
      const idFor = (name: string): number => {
        const st = obj(specials[name]);
        const ids = st && Array.isArray(st.ids) ? st.ids : undefined;
        const id = ids && ids.length === 1 ? Number(ids[0]) : idOf.get(name);
        if (id === undefined) {
          throw fail(`post_processor special token "${name}" has no id`);
        }
        return id;
      };
      const info: PostInfo = {};
      let seenSequence = false;
      for (const item of single) {
        const it = obj(item) ?? {};
        if (obj(it.Sequence)) {
          seenSequence = true;
          continue;
        }
        const st = obj(it.SpecialToken);
        if (!st) continue;
        const id = idFor(String(st.id));
        if (!seenSequence) info.bos ??= id;
        else info.eos ??= id;
      }
      return info;
    }
    case "BertProcessing":
    case "RobertaProcessing": {
      const cls = Array.isArray(c.cls) ? Number(c.cls[1]) : undefined;
      const sep = Array.isArray(c.sep) ? Number(c.sep[1]) : undefined;
      return { bos: cls, sep };
    }
    case "ByteLevel":
      return {};
    case "Sequence": {
      const list = Array.isArray(c.processors) ? c.processors : [];
      return Object.assign(
        {},
        ...list.map((p) => readPostProcessor(p, fail, idOf)),
      );
    }
    default:
      throw fail(`post_processor "${c.type}" is not supported`);
  }
}

// ------------------------------------------------------------------ decoders

interface DecoderInfo {
  byteLevel: boolean;
  /** The character shown for a space in tokens (`▁`), if the decoder maps it back. */
  spaceChar?: string;
  stripLeadingSpace: boolean;
}

function readDecoder(cfg: unknown, fail: Fail): DecoderInfo {
  const info: DecoderInfo = { byteLevel: false, stripLeadingSpace: false };
  const visit = (d: unknown) => {
    const c = obj(d);
    if (!c) return;
    switch (c.type) {
      case "ByteLevel":
        info.byteLevel = true;
        break;
      case "Metaspace": {
        info.spaceChar = String(c.replacement ?? SPM_SPACE);
        const scheme = typeof c.prepend_scheme === "string"
          ? c.prepend_scheme
          : c.add_prefix_space === false
          ? "never"
          : "always";
        if (scheme !== "never") info.stripLeadingSpace = true;
        break;
      }
      case "Replace": {
        const pat = obj(c.pattern) ?? {};
        if (typeof pat.String === "string" && c.content === " ") {
          info.spaceChar = pat.String;
        } else {throw fail(
            `decoder Replace ${JSON.stringify(c.pattern)} is not supported`,
          );}
        break;
      }
      case "Strip":
        if (Number(c.start ?? 0) > 0) info.stripLeadingSpace = true;
        break;
      case "ByteFallback":
      case "Fuse":
      case "WordPiece":
        break;
      case "Sequence":
        for (const x of Array.isArray(c.decoders) ? c.decoders : []) visit(x);
        break;
      default:
        throw fail(`decoder "${c.type}" is not supported`);
    }
  };
  visit(cfg);
  return info;
}
