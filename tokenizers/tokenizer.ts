/**
 * The {@link Tokenizer} every loader returns, and the parts shared by all
 * algorithms: special-token matching, BOS/EOS, decoding to text and
 * streaming decoding that holds back incomplete UTF-8.
 *
 * @module
 */

import { ByteBuffer, utf8 } from "./_text.ts";

/** Which algorithm a tokenizer runs. */
export type TokenizerKind =
  | "bpe"
  | "spm"
  | "wordpiece"
  | "unigram"
  | "wordlevel"
  | "rwkv";

/**
 * Token attributes (bit flags), as GGUF `tokenizer.ggml.token_type` describes them.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { TokenAttr } from "@modelhost/modelhost/tokenizers";
 * assert(TokenAttr.NORMAL === 1);
 * ```
 */
export const TokenAttr = {
  /** An ordinary piece. */
  NORMAL: 1,
  /** The unknown token. */
  UNKNOWN: 2,
  /** A control token (BOS, EOS, `<|im_start|>` ...): text only with `parseSpecial`. */
  CONTROL: 4,
  /** A user-defined token: always matched in text, decoded as its own text. */
  USER_DEFINED: 8,
  /** Unused slot: never produced by encoding, decodes to nothing. */
  UNUSED: 16,
  /** A byte token `<0xNN>`: decodes to that byte. */
  BYTE: 32,
} as const;

/** A token that is matched in text before the algorithm runs. */
export interface SpecialToken {
  /** Token id. */
  id: number;
  /** Its text. */
  text: string;
  /** `control` and `unknown` are matched only with `parseSpecial`; `user-defined` always. */
  type: "control" | "user-defined" | "unknown";
}

/** Options of {@link Tokenizer.encode}. */
export interface EncodeOptions {
  /** Add the BOS / EOS (or CLS / SEP) tokens the tokenizer is configured to add. @default {true} */
  addSpecial?: boolean;
  /** Prepend BOS; overrides what `addSpecial` implies. */
  addBos?: boolean;
  /** Append EOS; overrides what `addSpecial` implies. */
  addEos?: boolean;
  /**
   * Find special (control) tokens (`<s>`, `<|im_start|>`, `[CLS]` ...)
   * written in the text and give their ids, as Hugging Face `encode` does
   * by default. Off by default here: parsing special tokens out of user
   * text lets that text forge turns, system prompts or end-of-sequence
   * markers (prompt injection), so their text is tokenized as ordinary
   * text instead (Hugging Face's `split_special_tokens=True`). Turn it on
   * for text a chat template wrote. Non-special added tokens are always
   * found. @default {false}
   */
  parseSpecial?: boolean;
}

/** Options of {@link Tokenizer.decode} and {@link Tokenizer.createStreamDecoder}. */
export interface DecodeOptions {
  /** Render control tokens as their text instead of nothing. @default {false} */
  special?: boolean;
  /**
   * Drop the leading space of the first piece (the space SentencePiece
   * adds in front of the text). @default {tokenizer.addSpacePrefix}
   */
  stripLeadingSpace?: boolean;
}

/** Decodes tokens one at a time, as a generator produces them. */
export interface StreamDecoder {
  /**
   * Feeds one token.
   *
   * @param id Token id.
   * @returns The text completed by this token: bytes of a character that is
   * not yet complete are held back until a later token completes it.
   */
  decodeToken(id: number): string;
  /**
   * Ends the stream.
   *
   * @returns Held-back bytes of an incomplete character, as U+FFFD.
   */
  flush(): string;
}

/** Text to token ids and back. */
export interface Tokenizer {
  /** The algorithm. */
  readonly kind: TokenizerKind;
  /** Number of token ids (vocabulary plus added tokens). */
  readonly vocabSize: number;
  /** Beginning-of-sequence id (CLS for WordPiece). */
  readonly bos: number | undefined;
  /** End-of-sequence id. */
  readonly eos: number | undefined;
  /** Unknown-token id. */
  readonly unk: number | undefined;
  /** Padding id. */
  readonly pad: number | undefined;
  /** Separator id (WordPiece). */
  readonly sep: number | undefined;
  /** Ids that end generation: EOS and end-of-turn tokens (`<|eot_id|>`, `<|im_end|>` ...). */
  readonly eog: readonly number[];
  /** Whether `encode` adds BOS by default. */
  readonly addBos: boolean;
  /** Whether `encode` adds EOS by default. */
  readonly addEos: boolean;
  /** Whether encoding puts a space in front of the text (SentencePiece); decoding drops it. */
  readonly addSpacePrefix: boolean;
  /** Tokens matched in text before the algorithm runs. */
  readonly specialTokens: readonly SpecialToken[];
  /** The Jinja chat template the model file carries, when it has one (the one named `default` when it names several). */
  readonly chatTemplate: string | undefined;
  /** Every named chat template the model file carries (`default`, `tool_use` ...); empty when none. */
  readonly chatTemplates: Readonly<Record<string, string>>;
  /**
   * Encodes text.
   *
   * @param text The text.
   * @param options BOS / EOS and special-token parsing.
   * @returns Token ids.
   */
  encode(text: string, options?: EncodeOptions): number[];
  /**
   * Decodes ids to text (invalid UTF-8 becomes U+FFFD).
   *
   * @param ids Token ids.
   * @param options Special-token rendering and leading-space handling.
   * @returns The text.
   * @throws {RangeError} For an id outside the vocabulary.
   */
  decode(ids: Iterable<number>, options?: DecodeOptions): string;
  /**
   * The bytes one token decodes to.
   *
   * @param id Token id.
   * @param special Give control tokens their text (otherwise they are empty).
   * @returns The bytes (do not modify).
   * @throws {RangeError} For an id outside the vocabulary.
   */
  tokenBytes(id: number, special?: boolean): Uint8Array;
  /**
   * The vocabulary entry of an id, as stored (`Ġhello`, `▁hello`, `<0x0A>`).
   *
   * @param id Token id.
   * @returns The entry.
   * @throws {RangeError} For an id outside the vocabulary.
   */
  tokenText(id: number): string;
  /**
   * The id of a vocabulary entry.
   *
   * @param text The entry, as stored.
   * @returns The id, or undefined.
   */
  tokenId(text: string): number | undefined;
  /**
   * A decoder for tokens arriving one at a time.
   *
   * @param options As for {@link Tokenizer.decode}.
   * @returns A fresh decoder.
   */
  createStreamDecoder(options?: DecodeOptions): StreamDecoder;
}

/** What an algorithm hands to {@link assembleTokenizer}. Private to `tokenizers/`. */
export interface TokenizerParts {
  kind: TokenizerKind;
  tokens: readonly string[];
  /** {@link TokenAttr} flags by id. */
  attrs: Uint8Array;
  bos?: number;
  eos?: number;
  unk?: number;
  pad?: number;
  sep?: number;
  /** Extra end-of-generation ids (EOT, EOM). */
  eog?: number[];
  addBos: boolean;
  addEos: boolean;
  /** Append SEP when adding special tokens (WordPiece). */
  addSep?: boolean;
  addSpacePrefix: boolean;
  /** Special ids that swallow white space before / after them. */
  lstrip?: ReadonlySet<number>;
  rstrip?: ReadonlySet<number>;
  chatTemplate?: string;
  /** Encodes one run of plain text; `atStart` = it begins the input. */
  encodeText(text: string, out: number[], atStart: boolean): void;
  /** The bytes of a NORMAL token. */
  normalBytes(id: number): Uint8Array;
}

/** Texts llama.cpp treats as ending generation wherever they appear. Private to `tokenizers/`. */
export const EOG_TEXTS: ReadonlySet<string> = new Set([
  "<|eot_id|>",
  "<|im_end|>",
  "<|end|>",
  "<end_of_turn>",
  "<|endoftext|>",
  "<|end_of_text|>",
  "<|eom_id|>",
  "<EOT>",
  "<｜end▁of▁sentence｜>",
]);

interface TrieNode {
  next: Map<number, TrieNode>;
  id: number;
  always: boolean;
}

const IS_SPACE = new Set([0x20, 0x09, 0x0a, 0x0b, 0x0c, 0x0d]);
const EMPTY = new Uint8Array(0);

class VocabTokenizer implements Tokenizer {
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
  readonly #parts: TokenizerParts;
  readonly #root: TrieNode = { next: new Map(), id: -1, always: false };
  readonly #first = new Set<number>();
  #hasAlways = false;
  #hasControl = false;
  readonly #pieces: (Uint8Array | undefined)[];
  #ids: Map<string, number> | undefined;
  readonly #decoder = new TextDecoder("utf-8", { ignoreBOM: true });

  constructor(parts: TokenizerParts) {
    this.#parts = parts;
    this.kind = parts.kind;
    this.vocabSize = parts.tokens.length;
    const check = (what: string, id: number | undefined) => {
      if (id !== undefined && !(id >= 0 && id < this.vocabSize)) {
        throw new RangeError(
          `The ${what} token id ${id} is outside the vocabulary of ${this.vocabSize} tokens`,
        );
      }
      return id;
    };
    this.bos = check("BOS", parts.bos);
    this.eos = check("EOS", parts.eos);
    this.unk = check("unknown", parts.unk);
    this.pad = check("padding", parts.pad);
    this.sep = check("separator", parts.sep);
    this.addBos = parts.addBos;
    this.addEos = parts.addEos;
    this.addSpacePrefix = parts.addSpacePrefix;
    this.chatTemplate = parts.chatTemplate;
    this.chatTemplates = parts.chatTemplate !== undefined
      ? { default: parts.chatTemplate }
      : {};
    this.#pieces = new Array(this.vocabSize);
    const eog = new Set<number>();
    if (this.eos !== undefined) eog.add(this.eos);
    for (const id of parts.eog ?? []) {
      if (check("end-of-generation", id) !== undefined) eog.add(id);
    }
    const specials: SpecialToken[] = [];
    const { tokens, attrs } = parts;
    for (let id = 0; id < tokens.length; id++) {
      const a = attrs[id];
      const text = tokens[id];
      if (EOG_TEXTS.has(text)) eog.add(id);
      if (
        text === "" ||
        !(a & (TokenAttr.CONTROL | TokenAttr.UNKNOWN | TokenAttr.USER_DEFINED))
      ) {
        continue;
      }
      const type = a & TokenAttr.USER_DEFINED
        ? "user-defined"
        : a & TokenAttr.CONTROL
        ? "control"
        : "unknown";
      specials.push({ id, text, type });
      this.#addSpecial(text, id, type === "user-defined");
    }
    this.specialTokens = specials;
    this.eog = [...eog].sort((x, y) => x - y);
  }

  #addSpecial(text: string, id: number, always: boolean): void {
    let node = this.#root;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      let nx = node.next.get(c);
      if (!nx) {
        nx = { next: new Map(), id: -1, always: false };
        node.next.set(c, nx);
      }
      node = nx;
    }
    if (node.id >= 0) return; // the same text twice: the lower id wins
    node.id = id;
    node.always = always;
    this.#first.add(text.charCodeAt(0));
    if (always) this.#hasAlways = true;
    else this.#hasControl = true;
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const parts = this.#parts;
    const addSpecial = options.addSpecial ?? true;
    const addBos = options.addBos ?? (addSpecial && this.addBos);
    const addEos = options.addEos ?? (addSpecial && this.addEos);
    const parseSpecial = options.parseSpecial ?? false;
    const out: number[] = [];
    if (addBos) {
      if (this.bos === undefined) {
        throw new TypeError("Cannot add BOS: this tokenizer has no BOS token");
      }
      out.push(this.bos);
    }
    let textStart = 0;
    const n = text.length;
    if (this.#hasAlways || (parseSpecial && this.#hasControl)) {
      for (let i = 0; i < n; i++) {
        if (!this.#first.has(text.charCodeAt(i))) continue;
        // leftmost-longest match among the eligible special tokens
        let node: TrieNode | undefined = this.#root;
        let bestId = -1;
        let bestEnd = -1;
        for (let j = i; j < n && node; j++) {
          node = node.next.get(text.charCodeAt(j));
          if (node && node.id >= 0 && (node.always || parseSpecial)) {
            bestId = node.id;
            bestEnd = j + 1;
          }
        }
        if (bestId < 0) continue;
        let left = i;
        if (parts.lstrip?.has(bestId)) {
          while (left > textStart && IS_SPACE.has(text.charCodeAt(left - 1))) {
            left--;
          }
        }
        if (left > textStart) {
          parts.encodeText(text.slice(textStart, left), out, textStart === 0);
        }
        out.push(bestId);
        let right = bestEnd;
        if (parts.rstrip?.has(bestId)) {
          while (right < n && IS_SPACE.has(text.charCodeAt(right))) right++;
        }
        textStart = right;
        i = right - 1;
      }
    }
    if (textStart < n) {
      parts.encodeText(text.slice(textStart), out, textStart === 0);
    }
    if (addEos) {
      if (this.eos === undefined) {
        throw new TypeError("Cannot add EOS: this tokenizer has no EOS token");
      }
      out.push(this.eos);
    }
    if (addSpecial && parts.addSep && this.sep !== undefined) {
      out.push(this.sep);
    }
    return out;
  }

  #check(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
      throw new RangeError(
        `Token id ${id} is outside the vocabulary of ${this.vocabSize} tokens`,
      );
    }
  }

  tokenBytes(id: number, special = false): Uint8Array {
    this.#check(id);
    const a = this.#parts.attrs[id];
    if (a & (TokenAttr.CONTROL | TokenAttr.UNKNOWN)) {
      return special ? utf8(this.#parts.tokens[id]) : EMPTY;
    }
    let p = this.#pieces[id];
    if (p === undefined) {
      if (a & TokenAttr.USER_DEFINED) p = utf8(this.#parts.tokens[id]);
      else if (a & TokenAttr.BYTE) {
        p = Uint8Array.of(parseInt(this.#parts.tokens[id].slice(3, 5), 16));
      } else if (a & TokenAttr.NORMAL) p = this.#parts.normalBytes(id);
      else p = EMPTY;
      this.#pieces[id] = p;
    }
    return p;
  }

  tokenText(id: number): string {
    this.#check(id);
    return this.#parts.tokens[id];
  }

  tokenId(text: string): number | undefined {
    if (!this.#ids) {
      this.#ids = new Map();
      this.#parts.tokens.forEach((t, i) => {
        if (!this.#ids!.has(t)) this.#ids!.set(t, i);
      });
    }
    return this.#ids.get(text);
  }

  decode(ids: Iterable<number>, options: DecodeOptions = {}): string {
    const special = options.special ?? false;
    let strip = options.stripLeadingSpace ?? this.addSpacePrefix;
    const buf = new ByteBuffer();
    for (const id of ids) {
      const p = this.tokenBytes(id, special);
      if (p.length === 0) continue;
      if (strip) {
        strip = false;
        if (p[0] === 0x20) {
          buf.append(p.subarray(1));
          continue;
        }
      }
      buf.append(p);
    }
    return this.#decoder.decode(buf.bytes.subarray(0, buf.length));
  }

  createStreamDecoder(options: DecodeOptions = {}): StreamDecoder {
    const special = options.special ?? false;
    let strip = options.stripLeadingSpace ?? this.addSpacePrefix;
    const td = new TextDecoder("utf-8", { ignoreBOM: true });
    return {
      decodeToken: (id: number): string => {
        let p = this.tokenBytes(id, special);
        if (p.length === 0) return "";
        if (strip) {
          strip = false;
          if (p[0] === 0x20) p = p.subarray(1);
        }
        return td.decode(p, { stream: true });
      },
      flush: (): string => td.decode(),
    };
  }
}

/**
 * Builds a {@link Tokenizer} from an algorithm's parts. Private to
 * `tokenizers/` (loaders call it); exported for the loaders only.
 *
 * @param parts Vocabulary, attributes, special ids and the text encoder.
 * @returns The tokenizer.
 */
export function assembleTokenizer(parts: TokenizerParts): Tokenizer {
  return new VocabTokenizer(parts);
}
