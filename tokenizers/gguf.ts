/**
 * Tokenizers from GGUF metadata: the `tokenizer.ggml.*` keys that llama.cpp
 * writes (`model`, `pre`, `tokens`, `scores`, `token_type`, `merges`, the
 * special ids and the `add_*` switches).
 *
 * @module
 */

import { ownValue } from "../core/_own.ts";
import { BpeModel } from "./bpe.ts";
import { ggufPreTokenizer, patternSteps, runSteps } from "./pre_tokenize.ts";
import { SpmModel } from "./spm.ts";
import { Charsmap } from "./_charsmap.ts";
import { assembleTokenizer, TokenAttr, type Tokenizer } from "./tokenizer.ts";
import {
  ByteBuffer,
  byteLevelBytes,
  SPM_SPACE,
  utf8,
  utf8Append,
} from "./_text.ts";
import type { TokenizerParts } from "./tokenizer.ts";
import { bertWords, WordPieceModel } from "./wordpiece.ts";

/**
 * GGUF metadata: key to value, as a GGUF reader returns it (a plain object
 * or a `Map`). Arrays may be plain arrays or typed arrays; 64-bit integers
 * may be `bigint`.
 */
export type GgufMetadata =
  | Record<string, unknown>
  | ReadonlyMap<string, unknown>;

/** Options of {@link tokenizerFromGguf}. */
export interface GgufTokenizerOptions {
  /** Where the metadata came from, for error messages. @default {"GGUF metadata"} */
  name?: string;
  /** How many words (BPE) or segments (SentencePiece) to remember with their ids (0 turns the cache off). @default {50000} */
  wordCache?: number;
}

/**
 * The `tokenizer.ggml.model` values {@link tokenizerFromGguf} reads.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GGUF_TOKENIZER_MODELS } from "@modelhost/modelhost/tokenizers";
 * assert(GGUF_TOKENIZER_MODELS.includes("llama") && GGUF_TOKENIZER_MODELS.includes("gpt2"));
 * ```
 */
export const GGUF_TOKENIZER_MODELS: readonly string[] = [
  "llama",
  "gpt2",
  "bert",
  "t5",
];

/** `tokenizer.ggml.model` values llama.cpp knows that are refused here, with why. */
const REFUSED_MODELS: Record<string, string> = {
  rwkv: "RWKV's escaped byte vocabulary is not supported",
  plamo2: "PLaMo 2's suffix-table tokenizer is not supported",
  gemma4: "Gemma 4's byte-fallback BPE is not supported",
  hybriddna: "the HybriDNA k-mer tokenizer is not supported",
  whitespace: "the whitespace-split BPE is not supported",
  none: "the file has no vocabulary",
  no_vocab: "the file has no vocabulary",
};

/** GGUF `token_type` numbers to {@link TokenAttr} flags. */
const TOKEN_TYPES: Record<number, number> = {
  1: TokenAttr.NORMAL,
  2: TokenAttr.UNKNOWN,
  3: TokenAttr.CONTROL,
  4: TokenAttr.USER_DEFINED,
  5: TokenAttr.UNUSED,
  6: TokenAttr.BYTE,
};

function unwrap(v: unknown): unknown {
  // typed readers wrap values: entries as { value }, arrays as { type, items }
  if (
    v !== null && typeof v === "object" && !Array.isArray(v) &&
    !ArrayBuffer.isView(v)
  ) {
    if ("items" in v) return (v as { items: unknown }).items;
    if ("value" in v) return unwrap((v as { value: unknown }).value);
  }
  return v;
}

/**
 * Reads the tokenizer stored in GGUF metadata.
 *
 * - `tokenizer.ggml.model = "llama"`: SentencePiece BPE driven by `scores`,
 *   with byte fallback and a space prefix (`add_space_prefix`, default on).
 * - `"gpt2"`: byte-level BPE with `merges`; the pre-tokenizer patterns come
 *   from `tokenizer.ggml.pre` (see `ggufPreTokenizer`).
 * - `"bert"`: WordPiece.
 *
 * Special ids default as in llama.cpp and are dropped when out of range
 * (`4294967295` means "none").
 *
 * @param metadata The key/value metadata of a GGUF file.
 * @param options A name for messages.
 * @returns The tokenizer.
 * @throws {TypeError} When a required key is missing or has the wrong type,
 * or the tokenizer model or pre-tokenizer is not supported.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { tokenizerFromGguf } from "@modelhost/modelhost/tokenizers";
 * const tok = tokenizerFromGguf({
 *   "tokenizer.ggml.model": "llama",
 *   "tokenizer.ggml.tokens": ["<unk>", "<s>", "</s>", "▁", "a", "b", "▁a", "▁ab"],
 *   "tokenizer.ggml.scores": [0, 0, 0, -1, -2, -3, -4, -5],
 *   "tokenizer.ggml.token_type": [2, 3, 3, 1, 1, 1, 1, 1],
 * });
 * assert(tok.encode("ab").join() === "1,7");
 * assert(tok.decode([1, 7]) === "ab");
 * ```
 */
export function tokenizerFromGguf(
  metadata: GgufMetadata,
  options: GgufTokenizerOptions = {},
): Tokenizer {
  const where = options.name ?? "GGUF metadata";
  const get = (key: string): unknown =>
    unwrap(
      metadata instanceof Map
        ? metadata.get(key)
        : (metadata as Record<string, unknown>)[key],
    );
  const bad = (key: string, want: string, v: unknown) =>
    new TypeError(
      `${where}: ${key} must be ${want}, found ${
        v === undefined ? "nothing" : Array.isArray(v) ? "an array" : typeof v
      }`,
    );
  const str = (key: string): string | undefined => {
    const v = get(key);
    if (v === undefined) return undefined;
    if (typeof v !== "string") throw bad(key, "a string", v);
    return v;
  };
  const num = (key: string): number | undefined => {
    const v = get(key);
    if (v === undefined) return undefined;
    if (typeof v === "bigint") return Number(v);
    if (typeof v !== "number") throw bad(key, "a number", v);
    return v;
  };
  const bool = (key: string): boolean | undefined => {
    const v = get(key);
    if (v === undefined) return undefined;
    if (typeof v !== "boolean") throw bad(key, "a boolean", v);
    return v;
  };
  const list = <T>(key: string, kind: "string" | "number"): T[] | undefined => {
    const v = get(key);
    if (v === undefined) return undefined;
    if (!Array.isArray(v) && !ArrayBuffer.isView(v)) {
      throw bad(key, `an array of ${kind}s`, v);
    }
    const arr = Array.isArray(v)
      ? v
      : Array.from(v as unknown as ArrayLike<number>);
    for (let i = 0; i < arr.length; i++) {
      const t = typeof arr[i];
      if (t !== kind && !(kind === "number" && t === "bigint")) {
        throw new TypeError(
          `${where}: ${key}[${i}] must be a ${kind}, found ${t}`,
        );
      }
    }
    return (kind === "number" ? arr.map(Number) : arr) as T[];
  };

  const model = str("tokenizer.ggml.model");
  if (model === undefined) {
    throw new TypeError(
      `${where} has no tokenizer (tokenizer.ggml.model is missing)`,
    );
  }
  if (!GGUF_TOKENIZER_MODELS.includes(model)) {
    const why = ownValue(REFUSED_MODELS, model);
    throw new TypeError(
      `${where}: tokenizer model "${model}" is not supported${
        why ? ` (${why})` : ""
      }; supported: ${GGUF_TOKENIZER_MODELS.join(", ")}`,
    );
  }
  const tokens = list<string>("tokenizer.ggml.tokens", "string");
  if (!tokens) {
    throw bad("tokenizer.ggml.tokens", "an array of strings", undefined);
  }
  const n = tokens.length;
  const types = list<number>("tokenizer.ggml.token_type", "number");
  if (types && types.length < n) {
    throw new RangeError(
      `${where}: tokenizer.ggml.token_type has ${types.length} entries for ${n} tokens`,
    );
  }
  const attrs = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    attrs[i] = types ? TOKEN_TYPES[types[i]] ?? 0 : TokenAttr.NORMAL;
  }

  // special ids: llama.cpp's per-model defaults, then the file's values
  const defaults: Record<string, number | undefined> = model === "llama"
    ? { bos: 1, eos: 2, unk: 0 }
    : model === "t5"
    ? { eos: 1, unk: 2, pad: 0 }
    : model === "bert"
    ? { bos: 101, unk: 100, sep: 102, pad: 0 }
    : { bos: 11, eos: 11 };
  const special = (key: string, name: string): number | undefined => {
    const d = defaults[name];
    let id = d !== undefined && d < n ? d : undefined;
    // out-of-range values (4294967295 is "none") keep the default
    const v = num(`tokenizer.ggml.${key}`);
    if (v !== undefined && v >= 0 && v < n) id = v;
    return id;
  };
  // BERT files name their BOS (CLS) cls_token_id
  const bos =
    model === "bert" && num("tokenizer.ggml.bos_token_id") === undefined
      ? special("cls_token_id", "bos")
      : special("bos_token_id", "bos");
  const eos = special("eos_token_id", "eos");
  const unk = special("unknown_token_id", "unk");
  const sep = special("seperator_token_id", "sep");
  const pad = special("padding_token_id", "pad");
  const eot = special("eot_token_id", "eot");
  const eom = special("eom_token_id", "eom");
  const chatTemplate = str("tokenizer.chat_template");
  const eog = [eot, eom].filter((x): x is number => x !== undefined);

  if (model === "llama") {
    const scores = list<number>("tokenizer.ggml.scores", "number") ??
      new Array(n).fill(0);
    const spm = new SpmModel({
      tokens,
      scores,
      unk,
      cacheSize: options.wordCache,
    });
    const addSpacePrefix = bool("tokenizer.ggml.add_space_prefix") ?? true;
    return assembleTokenizer({
      kind: "spm",
      tokens,
      attrs,
      bos,
      eos,
      unk,
      pad,
      sep,
      eog,
      addBos: bool("tokenizer.ggml.add_bos_token") ?? true,
      addEos: bool("tokenizer.ggml.add_eos_token") ?? false,
      addSpacePrefix,
      chatTemplate,
      encodeText(text, out) {
        // llama.cpp puts the space in front of every text run
        const escaped = ((addSpacePrefix ? " " : "") + text).replaceAll(
          " ",
          SPM_SPACE,
        );
        spm.encode(escaped, out);
      },
      normalBytes: (id) => utf8(tokens[id].replaceAll(SPM_SPACE, " ")),
    });
  }

  if (model === "t5") {
    if (unk === undefined) {
      throw new TypeError(
        `${where}: a t5 (Unigram) vocabulary needs an unknown token`,
      );
    }
    const scores = list<number>("tokenizer.ggml.scores", "number") ??
      new Array(n).fill(0);
    const raw = get("tokenizer.ggml.precompiled_charsmap");
    let charsmap: Charsmap | undefined;
    if (raw !== undefined) {
      if (!Array.isArray(raw) && !ArrayBuffer.isView(raw)) {
        throw bad(
          "tokenizer.ggml.precompiled_charsmap",
          "an array of bytes",
          raw,
        );
      }
      const bytes = Uint8Array.from(
        Array.from(raw as ArrayLike<number | bigint>, (x) => Number(x) & 0xff),
      );
      if (bytes.length > 0) {
        charsmap = new Charsmap(
          bytes,
          `${where}: tokenizer.ggml.precompiled_charsmap`,
        );
      }
    }
    return ugmTokenizer({
      tokens,
      scores,
      attrs,
      unk,
      charsmap,
      addSpacePrefix: bool("tokenizer.ggml.add_space_prefix") ?? false,
      removeExtraWhitespaces: bool("tokenizer.ggml.remove_extra_whitespaces") ??
        false,
      cacheSize: options.wordCache,
      parts: {
        kind: "unigram",
        tokens,
        attrs,
        bos,
        eos,
        unk,
        pad,
        sep,
        eog,
        addBos: bool("tokenizer.ggml.add_bos_token") ?? false,
        addEos: bool("tokenizer.ggml.add_eos_token") ?? true,
        chatTemplate,
      },
    });
  }

  if (model === "bert") {
    if (unk === undefined) {
      throw new TypeError(
        `${where}: a WordPiece vocabulary needs an unknown token`,
      );
    }
    const wp = new WordPieceModel({
      tokens,
      unk,
      wordPrefix: SPM_SPACE,
      continuationPrefix: "",
    });
    const lowercase = bool("tokenizer.ggml.normalizer.lowercase") ?? true;
    return assembleTokenizer({
      kind: "wordpiece",
      tokens,
      attrs,
      bos,
      eos,
      unk,
      pad,
      sep,
      eog,
      // llama.cpp's WordPiece adds [CLS] and [SEP] whatever the add_*
      // flags say (its converter writes add_sep_token false and
      // add_eos_token true for BERT folders)
      addBos: true,
      addEos: false,
      addSep: true,
      addSpacePrefix: true,
      chatTemplate,
      encodeText(text, out) {
        for (const w of bertWords(text, { lowercase })) wp.encodeWord(w, out);
      },
      normalBytes: (id) => utf8(tokens[id].replaceAll(SPM_SPACE, " ")),
    });
  }

  // gpt2: byte-level BPE
  const rawMerges = list<string>("tokenizer.ggml.merges", "string");
  if (!rawMerges) {
    throw bad("tokenizer.ggml.merges", "an array of strings", undefined);
  }
  const merges = rawMerges.map((m, i): [string, string] => {
    const sp = m.indexOf(" ", 1);
    if (sp < 0) {
      throw new TypeError(
        `${where}: tokenizer.ggml.merges[${i}] = "${m}" has no space`,
      );
    }
    return [m.slice(0, sp), m.slice(sp + 1)];
  });
  const pre = ggufPreTokenizer(str("tokenizer.ggml.pre"));
  const steps = patternSteps(pre.patterns);
  const bpe = new BpeModel({
    tokens,
    merges,
    byteLevel: true,
    ignoreMerges: pre.ignoreMerges,
    cacheSize: options.wordCache,
  });
  return assembleTokenizer({
    kind: "bpe",
    tokens,
    attrs,
    bos,
    eos,
    unk,
    pad,
    sep,
    eog,
    addBos: bool("tokenizer.ggml.add_bos_token") ?? pre.addBos,
    addEos: bool("tokenizer.ggml.add_eos_token") ?? false,
    addSpacePrefix: false,
    chatTemplate,
    encodeText(text, out, atStart) {
      for (const w of runSteps(steps, text, atStart)) bpe.encodeWord(w, out);
    },
    normalBytes: (id) => byteLevelBytes(tokens[id]),
  });
}

interface UgmSpec {
  tokens: readonly string[];
  scores: ArrayLike<number>;
  attrs: Uint8Array;
  unk: number;
  charsmap: Charsmap | undefined;
  addSpacePrefix: boolean;
  removeExtraWhitespaces: boolean;
  cacheSize?: number;
  parts: Omit<
    TokenizerParts,
    "encodeText" | "normalBytes" | "addSpacePrefix"
  >;
}

interface ByteNode {
  next: Map<number, ByteNode>;
  id: number;
}

/** llama.cpp's `unicode_len_utf8`: the length a lead byte announces (1 for a stray continuation byte). */
const UTF8_LEN = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4];

/**
 * llama.cpp's Unigram (UGM) tokenizer, over UTF-8 bytes as llama.cpp runs
 * it: the input is normalized prefix by prefix (a user-defined token is
 * kept as it is, else the longest charsmap entry, else one character, a
 * malformed byte becoming U+FFFD), spaces are escaped to `▁` (merged and
 * trimmed with `remove_extra_whitespaces`, one put in front with
 * `add_space_prefix`), then Viterbi picks pieces (user-defined ones scored
 * 0, an unknown character 10 below the lowest normal piece, runs of
 * unknowns one unknown token). Like llama.cpp, a user-defined token is
 * looked for by the longest path of the token trie the input follows, so
 * input sharing only a first byte or two with a user-defined token keeps
 * those bytes as they are (and they become the unknown token).
 */
function ugmTokenizer(spec: UgmSpec): Tokenizer {
  const { tokens, attrs } = spec;
  const isUser = (id: number) => (attrs[id] & TokenAttr.USER_DEFINED) !== 0;
  const f32 = Math.fround;
  let min = Infinity;
  for (let id = 0; id < tokens.length; id++) {
    if (attrs[id] & TokenAttr.NORMAL) min = Math.min(min, f32(spec.scores[id]));
  }
  const unkScore = f32((min === Infinity ? 3.4028234663852886e38 : min) - 10);
  const score = new Float64Array(tokens.length);
  const root: ByteNode = { next: new Map(), id: -1 };
  const userRoot: ByteNode = { next: new Map(), id: -1 };
  const insert = (r: ByteNode, bytes: Uint8Array, id: number) => {
    let node = r;
    for (const b of bytes) {
      let nx = node.next.get(b);
      if (!nx) {
        nx = { next: new Map(), id: -1 };
        node.next.set(b, nx);
      }
      node = nx;
    }
    node.id = id;
  };
  for (let id = 0; id < tokens.length; id++) {
    score[id] = isUser(id) ? 0 : f32(spec.scores[id]);
    const a = attrs[id];
    const bytes = utf8(tokens[id]);
    if (a & (TokenAttr.NORMAL | TokenAttr.USER_DEFINED | TokenAttr.UNUSED)) {
      insert(root, bytes, id);
    }
    if (a & TokenAttr.USER_DEFINED) insert(userRoot, bytes, id);
  }
  const space = utf8(SPM_SPACE); // llama.cpp escapes spaces in every UGM vocabulary
  const inBuf = new ByteBuffer();
  const norm = new ByteBuffer();

  /** Normalizes `input` into `norm` (llama.cpp's `normalize`). */
  const normalize = (input: Uint8Array): void => {
    norm.length = 0;
    const n = input.length;
    let prepended = false;
    let inWord = false;
    const emit = (bytes: Uint8Array, from: number, to: number) => {
      for (let k = from; k < to; k++) {
        const c = bytes[k];
        if (c !== 0x20) {
          if (!inWord) {
            inWord = true;
            if (
              (spec.addSpacePrefix && !prepended) || spec.removeExtraWhitespaces
            ) {
              norm.append(space);
              prepended = true;
            }
          }
          norm.push(c);
        } else {
          inWord = false;
          if (!spec.removeExtraWhitespaces) norm.append(space);
        }
      }
    };
    for (let i = 0; i < n;) {
      // the longest path of the user-defined trie the input follows
      let node: ByteNode | undefined = userRoot;
      let userLen = 0;
      while (i + userLen < n) {
        node = node.next.get(input[i + userLen]);
        if (!node) break;
        userLen++;
      }
      if (userLen > 0) {
        emit(input, i, i + userLen);
        i += userLen;
        continue;
      }
      const hit = spec.charsmap?.longest(input, i);
      if (hit) {
        const r = utf8(spec.charsmap!.replacementAt(hit.value));
        emit(r, 0, r.length);
        i += hit.length;
        continue;
      }
      const len = charLength(input, i);
      if (len > 0) {
        emit(input, i, i + len);
        i += len;
      } else {
        emit(REPLACEMENT, 0, 3);
        i += 1;
      }
    }
  };

  const viterbi = (out: number[]): void => {
    const bytes = norm.bytes;
    const n = norm.length;
    if (n === 0) return;
    const best = new Float64Array(n + 1).fill(-Number.MAX_VALUE);
    const from = new Int32Array(n + 1);
    const ids = new Int32Array(n + 1).fill(spec.unk);
    best[0] = 0;
    for (let i = 0; i < n;) {
      const units = Math.min(UTF8_LEN[bytes[i] >> 4], n - i);
      let single = false;
      const base = best[i];
      let node: ByteNode | undefined = root.next.get(bytes[i]);
      let p = i + 1;
      while (p <= n && node) {
        if (node.id >= 0) {
          if (p - i === units) single = true;
          const c = base + score[node.id];
          if (c > best[p]) {
            best[p] = c;
            from[p] = i;
            ids[p] = node.id;
          }
        }
        node = p < n ? node.next.get(bytes[p]) : undefined;
        p++;
      }
      if (!single) {
        const e = i + units;
        const c = base + unkScore;
        if (c > best[e]) {
          best[e] = c;
          from[e] = i;
          ids[e] = spec.unk;
        }
      }
      i += units;
    }
    const rev: number[] = [];
    let prevUnk = false;
    for (let e = n; e > 0; e = from[e]) {
      const isUnk = ids[e] === spec.unk;
      if (!(prevUnk && isUnk)) rev.push(ids[e]);
      prevUnk = isUnk;
    }
    for (let k = rev.length - 1; k >= 0; k--) out.push(rev[k]);
  };

  return assembleTokenizer({
    ...spec.parts,
    addSpacePrefix: spec.addSpacePrefix,
    encodeText(text, out) {
      inBuf.length = 0;
      utf8Append(text, inBuf);
      normalize(inBuf.bytes.subarray(0, inBuf.length));
      viterbi(out);
    },
    normalBytes: (id) => utf8(tokens[id].replaceAll(SPM_SPACE, " ")),
  });
}

const REPLACEMENT = Uint8Array.of(0xef, 0xbf, 0xbd);

/**
 * The length of the well-formed-looking UTF-8 character at `i` as
 * llama.cpp's `unicode_cpt_from_utf8` accepts it (lead byte and
 * continuation bits only), or 0 when it throws.
 */
function charLength(b: Uint8Array, i: number): number {
  const c = b[i];
  const cont = (k: number) => i + k < b.length && (b[i + k] & 0xc0) === 0x80;
  if (!(c & 0x80)) return 1;
  if (!(c & 0x40)) return 0;
  if (!(c & 0x20)) return cont(1) ? 2 : 0;
  if (!(c & 0x10)) return cont(1) && cont(2) ? 3 : 0;
  if (!(c & 0x08)) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}
