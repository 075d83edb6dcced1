/**
 * Tokenizers from Hugging Face `tokenizer.json` files (plus, optionally,
 * `tokenizer_config.json` and `generation_config.json`), run the way the
 * Hugging Face `tokenizers` library runs them:
 *
 * 1. added tokens are found in the raw text (`normalized: false`), the rest
 *    is normalized, and added tokens are found again in the normalized text
 *    (`normalized: true`); `lstrip`, `rstrip` and `single_word` apply;
 * 2. the pre-tokenizer cuts each remaining run into words;
 * 3. the model turns each word into ids;
 * 4. the post-processor adds the special tokens of a single sequence.
 *
 * Decoding maps ids to token strings and runs the decoder chain.
 *
 * Supported parts: models `BPE` (with `ignore_merges`, `byte_fallback`,
 * `fuse_unk`, `continuing_subword_prefix`, `end_of_word_suffix`; dropout is
 * not applied), `WordPiece`, `Unigram`, `WordLevel`; normalizers `NFC`,
 * `NFD`, `NFKC`, `NFKD`, `Lowercase`, `Strip`, `StripAccents`, `Replace`,
 * `Prepend`, `BertNormalizer`, `Precompiled`, `Sequence`; pre-tokenizers
 * `ByteLevel`, `Split`, `Metaspace`, `Whitespace`, `WhitespaceSplit`,
 * `Punctuation`, `Digits`, `CharDelimiterSplit`, `BertPreTokenizer`,
 * `Sequence`; post-processors `TemplateProcessing`, `BertProcessing`,
 * `RobertaProcessing`, `ByteLevel`, `Sequence`; decoders `ByteLevel`,
 * `Metaspace`, `WordPiece`, `Replace`, `Strip`, `Fuse`, `ByteFallback`,
 * `BPEDecoder`, `CTC`, `Sequence`. Anything else is refused with a
 * `TypeError` naming it. `truncation` and `padding` are ignored (as
 * transformers does).
 *
 * @module
 */

import { AddedMatcher, type AddedToken } from "./_hf_added.ts";
import { obj } from "./_hf_common.ts";
import {
  buildDecoder,
  byteLevelTokenBytes,
  type Decoder,
} from "./_hf_decoders.ts";
import {
  buildNormalizer,
  type Lead,
  type Normalize,
} from "./_hf_normalizers.ts";
import { buildPreTokenizer, type Pieces } from "./_hf_pre_tokenizers.ts";
import { parseBytePiece, utf8 } from "./_text.ts";
import {
  type DecodeOptions,
  type EncodeOptions,
  EOG_TEXTS,
  type SpecialToken,
  type StreamDecoder,
  type Tokenizer,
  type TokenizerKind,
} from "./tokenizer.ts";
import {
  type Fail,
  MAX_ID_GAP,
  type Model,
  readModel,
  readPostProcessor,
} from "./_hf_model.ts";

/** One entry of `added_tokens` in `tokenizer.json`. */
export interface HfAddedToken {
  /** Token id. */
  id: number;
  /** Token text. */
  content: string;
  /** Special token: matched only with `parseSpecial`, skipped when decoding. */
  special?: boolean;
  /** Swallows white space on its left. */
  lstrip?: boolean;
  /** Swallows white space on its right. */
  rstrip?: boolean;
  /** Matches only as a whole word. */
  single_word?: boolean;
  /** Matched in the normalized text (true) or the raw text (false). */
  normalized?: boolean;
  /** Other fields are accepted and ignored. */
  [field: string]: unknown;
}

/** The parts of a `tokenizer.json` this module reads (other fields are ignored). */
export interface TokenizerJson {
  /** The model: `{ type: "BPE" | "WordPiece" | "Unigram" | "WordLevel", vocab, ... }`. */
  model: {
    type?: string;
    vocab: Record<string, number> | [string, number][];
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
  /** How many words to remember with their ids (0 turns the cache off). @default {50000} */
  wordCache?: number;
}

function tokenText(t: HfTokenText | undefined): string | undefined {
  if (t === null || t === undefined) return undefined;
  return typeof t === "string" ? t : t.content;
}

/**
 * Reads a Hugging Face `tokenizer.json`.
 *
 * The special tokens `encode` adds come from the post-processor, changed by
 * `tokenizer_config.json`'s `add_bos_token` / `add_eos_token` when it has
 * them; BOS / EOS ids come from the post-processor and the configs
 * (`generation_config.json`'s `eos_token_id` lists end-of-generation ids).
 * Added tokens marked `special` are matched in text only with
 * `parseSpecial` (see {@link EncodeOptions}); the others always are.
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
  return new HfTokenizer(json, options);
}

class HfTokenizer implements Tokenizer {
  readonly kind: TokenizerKind;
  readonly vocabSize: number;
  readonly bos: number | undefined;
  readonly eos: number | undefined;
  readonly unk: number | undefined;
  readonly pad: number | undefined;
  readonly sep: number | undefined;
  readonly eog: readonly number[];
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly addSpacePrefix: boolean;
  readonly specialTokens: readonly SpecialToken[];
  readonly chatTemplate: string | undefined;
  readonly chatTemplates: Readonly<Record<string, string>>;
  readonly #model: Model;
  readonly #normalize: Normalize | undefined;
  readonly #pre: ReturnType<typeof buildPreTokenizer>;
  readonly #decoder: Decoder;
  readonly #raw: AddedMatcher;
  readonly #normalized: AddedMatcher;
  readonly #prefix: number[];
  readonly #suffix: number[];
  /** Token string by id for decoding (added tokens over the model's; normalized ones as normalized). */
  readonly #text: (string | undefined)[];
  /** Token string by id as the file stores it. */
  readonly #stored: (string | undefined)[];
  readonly #special = new Set<string>();
  readonly #addedIds = new Map<string, number>();
  readonly #modelIds = new Map<string, number>();
  readonly #bytes: (Uint8Array | undefined)[];

  constructor(json: TokenizerJson, options: HfTokenizerOptions) {
    const where = options.name ?? "tokenizer.json";
    const fail: Fail = (msg) => new TypeError(`${where}: ${msg}`);
    const model = obj(json?.model);
    if (!model) throw fail("has no model object");
    this.#model = readModel(model, fail, options.wordCache);
    const modelTokens = this.#model.tokens;
    this.#normalize = buildNormalizer(json.normalizer, fail);
    this.#pre = buildPreTokenizer(json.pre_tokenizer, fail);
    this.#decoder = buildDecoder(json.decoder, fail);

    // added tokens
    const list = Array.isArray(json.added_tokens) ? json.added_tokens : [];
    const added: AddedToken[] = list.map((a, i) => {
      if (
        !Number.isInteger(a?.id) || a.id < 0 || typeof a.content !== "string"
      ) {
        throw fail(
          `added_tokens[${i}] = ${
            JSON.stringify(a)
          } needs a non-negative integer id and a content string`,
        );
      }
      return {
        id: a.id,
        content: a.content,
        special: a.special === true,
        lstrip: a.lstrip === true,
        rstrip: a.rstrip === true,
        singleWord: a.single_word === true,
        normalized: a.normalized ?? !a.special,
      };
    });
    let size = modelTokens.length;
    for (const a of added) size = Math.max(size, a.id + 1);
    if (size > 2 * (modelTokens.length + added.length) + MAX_ID_GAP) {
      throw new RangeError(
        `${where}: added token id ${size - 1} is far beyond the ${
          modelTokens.length + added.length
        } tokens the file defines`,
      );
    }
    this.vocabSize = size;
    this.#text = new Array(size);
    this.#stored = new Array(size);
    modelTokens.forEach((t, i) => {
      if (t !== "") {
        this.#text[i] = t;
        this.#stored[i] = t;
        if (!this.#modelIds.has(t)) this.#modelIds.set(t, i);
      }
    });
    const lead: Lead = { atZero: true };
    const normalizedText = (a: AddedToken) =>
      a.normalized && this.#normalize
        ? this.#normalize(a.content, lead)
        : a.content;
    for (const a of added) {
      // decoding shows a normalized token as the normalizer writes it
      this.#text[a.id] = normalizedText(a);
      this.#stored[a.id] = a.content;
      this.#addedIds.set(a.content, a.id);
      if (a.special) this.#special.add(a.content);
    }
    this.#raw = new AddedMatcher(
      added.filter((a) => !a.normalized).map((token) => ({
        token,
        pattern: token.content,
      })),
    );
    this.#normalized = new AddedMatcher(
      added.filter((a) => a.normalized).map((token) => ({
        token,
        pattern: normalizedText(token),
      })),
    );
    this.#bytes = new Array(size);

    // special tokens around a sequence; BOS / EOS
    const post = readPostProcessor(json.post_processor, fail);
    const cfg = options.config ?? {};
    const idOf = (text: string | undefined, what: string) => {
      if (text === undefined) return undefined;
      const id = this.tokenId(text);
      if (id === undefined) {
        throw fail(`${what} "${text}" is not in the vocabulary`);
      }
      return id;
    };
    let bos = idOf(tokenText(cfg.bos_token), "bos_token") ?? post.prefix[0];
    let eos = idOf(tokenText(cfg.eos_token), "eos_token") ??
      (post.sep === undefined
        ? post.suffix[post.suffix.length - 1]
        : undefined);
    let prefix = post.prefix;
    let suffix = post.suffix;
    if (typeof cfg.add_bos_token === "boolean") {
      prefix = cfg.add_bos_token ? (bos !== undefined ? [bos] : []) : [];
    }
    if (typeof cfg.add_eos_token === "boolean") {
      suffix = cfg.add_eos_token ? (eos !== undefined ? [eos] : []) : [];
    }
    this.#prefix = prefix;
    this.#suffix = suffix;
    const gen = options.generationConfig ?? {};
    const eog = new Set<number>();
    if (typeof gen.bos_token_id === "number") bos = gen.bos_token_id;
    if (gen.eos_token_id !== undefined) {
      const ids = Array.isArray(gen.eos_token_id)
        ? gen.eos_token_id
        : [gen.eos_token_id];
      if (ids.length > 0) eos = ids[0];
      for (const id of ids) if (id >= 0 && id < size) eog.add(id);
    }
    const check = (what: string, id: number | undefined) => {
      if (id !== undefined && !(Number.isInteger(id) && id >= 0 && id < size)) {
        throw new RangeError(
          `${where}: the ${what} token id ${id} is outside the vocabulary of ${size} tokens`,
        );
      }
      return id;
    };
    this.bos = check("BOS", bos);
    this.eos = check("EOS", eos);
    this.unk = check("unknown", this.#model.unk);
    this.pad = check("padding", idOf(tokenText(cfg.pad_token), "pad_token"));
    this.sep = check("separator", post.sep);
    for (const id of [...prefix, ...suffix]) check("post-processor", id);
    if (this.eos !== undefined) eog.add(this.eos);
    for (let id = 0; id < size; id++) {
      const t = this.#stored[id];
      if (t !== undefined && EOG_TEXTS.has(t)) eog.add(id);
    }
    this.eog = [...eog].sort((a, b) => a - b);
    this.addBos = prefix.length > 0;
    this.addEos = suffix.length > 0;
    this.addSpacePrefix = this.#decoder.stripsLeading;
    this.specialTokens = added.map((a) => ({
      id: a.id,
      text: a.content,
      type: a.special ? "control" : "user-defined",
    }));
    const templates: Record<string, string> = {};
    if (typeof cfg.chat_template === "string") {
      templates.default = cfg.chat_template;
    } else if (Array.isArray(cfg.chat_template)) {
      for (const t of cfg.chat_template) {
        if (typeof t?.name === "string" && typeof t.template === "string") {
          templates[t.name] = t.template;
        }
      }
    }
    this.chatTemplates = templates;
    this.chatTemplate = templates.default ?? Object.values(templates)[0];
    const byteLevel = this.#pre.byteLevel || this.#decoder.byteLevel;
    const t = this.#model.type;
    this.kind = t === "BPE"
      ? (byteLevel ? "bpe" : "spm")
      : t === "WordPiece"
      ? "wordpiece"
      : t === "Unigram"
      ? "unigram"
      : "wordlevel";
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const addSpecial = options.addSpecial ?? true;
    const parseSpecial = options.parseSpecial ?? false;
    const out: number[] = [];
    const addBos = options.addBos ?? addSpecial;
    const addEos = options.addEos ?? addSpecial;
    if (addBos) {
      if (this.#prefix.length > 0) out.push(...this.#prefix);
      else if (options.addBos) {
        if (this.bos === undefined) {
          throw new TypeError(
            "Cannot add BOS: this tokenizer has no BOS token",
          );
        }
        out.push(this.bos);
      }
    }
    for (const seg of this.#raw.split(text, !parseSpecial)) {
      if (seg.token) {
        out.push(seg.token.id);
        continue;
      }
      const lead: Lead = { atZero: seg.start === 0 };
      let s = text.slice(seg.start, seg.end);
      if (this.#normalize) s = this.#normalize(s, lead);
      if (s.length === 0) continue;
      for (const sub of this.#normalized.split(s, !parseSpecial)) {
        if (sub.token) {
          out.push(sub.token.id);
          continue;
        }
        this.#encodeRun(
          sub.start === 0 && sub.end === s.length
            ? s
            : s.slice(sub.start, sub.end),
          lead.atZero && sub.start === 0,
          out,
        );
      }
    }
    if (addEos) {
      if (this.#suffix.length > 0) out.push(...this.#suffix);
      else if (options.addEos) {
        if (this.eos === undefined) {
          throw new TypeError(
            "Cannot add EOS: this tokenizer has no EOS token",
          );
        }
        out.push(this.eos);
      }
    }
    return out;
  }

  #encodeRun(run: string, atZero: boolean, out: number[]): void {
    const p: Pieces = { list: [run], atZero };
    for (const step of this.#pre.steps) step(p);
    const m = this.#model;
    if (this.#pre.byteLevelTail) {
      for (const w of p.list) m.encodeBytes(w, out);
    } else {
      for (const w of p.list) m.encodeWord(w, out);
    }
  }

  #check(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
      throw new RangeError(
        `Token id ${id} is outside the vocabulary of ${this.vocabSize} tokens`,
      );
    }
  }

  #tokens(ids: Iterable<number>, special: boolean): string[] {
    const tokens: string[] = [];
    for (const id of ids) {
      this.#check(id);
      const t = this.#text[id];
      if (t === undefined) continue;
      if (!special && this.#special.has(t)) continue;
      tokens.push(t);
    }
    return tokens;
  }

  decode(ids: Iterable<number>, options: DecodeOptions = {}): string {
    const tokens = this.#tokens(ids, options.special ?? false);
    return this.#decoder.decode(
      tokens,
      options.stripLeadingSpace === false ? 1 : 0,
    );
  }

  tokenBytes(id: number, special = false): Uint8Array {
    this.#check(id);
    const t = this.#text[id];
    if (t === undefined || (!special && this.#special.has(t))) {
      return new Uint8Array(0);
    }
    let b = this.#bytes[id];
    if (b === undefined) {
      if (this.#decoder.byteLevel) {
        const out: number[] = [];
        byteLevelTokenBytes(t, out);
        b = Uint8Array.from(out);
      } else if (this.#decoder.byteFallback && parseBytePiece(t) >= 0) {
        b = Uint8Array.of(parseBytePiece(t));
      } else b = utf8(this.#decoder.decode([t], 1));
      this.#bytes[id] = b;
    }
    return b;
  }

  tokenText(id: number): string {
    this.#check(id);
    return this.#stored[id] ?? "";
  }

  tokenId(text: string): number | undefined {
    return this.#addedIds.get(text) ?? this.#modelIds.get(text);
  }

  createStreamDecoder(options: DecodeOptions = {}): StreamDecoder {
    const special = options.special ?? false;
    const first = options.stripLeadingSpace === false ? 1 : 0;
    const dec = (ids: number[]) =>
      this.#decoder.decode(this.#tokens(ids, special), first);
    let ids: number[] = [];
    let prefix = "";
    let prefixIndex = 0;
    return {
      decodeToken: (id: number): string => {
        this.#check(id);
        if (prefix === "" && ids.length > 0) {
          const p = dec(ids);
          if (!p.endsWith("\ufffd")) {
            prefix = p;
            prefixIndex = ids.length;
          }
        }
        ids.push(id);
        const s = dec(ids);
        if (s.length > prefix.length && !s.endsWith("\ufffd")) {
          const text = s.startsWith(prefix) ? s.slice(prefix.length) : s;
          const nextIndex = ids.length - prefixIndex;
          ids = ids.slice(prefixIndex);
          prefix = dec(ids);
          prefixIndex = nextIndex;
          return text;
        }
        return "";
      },
      flush: (): string => {
        const s = dec(ids);
        ids = [];
        const rest = s.length > prefix.length && s.startsWith(prefix)
          ? s.slice(prefix.length)
          : "";
        prefix = "";
        prefixIndex = 0;
        return rest;
      },
    };
  }
}
