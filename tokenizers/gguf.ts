/**
 * Tokenizers from GGUF metadata: the `tokenizer.ggml.*` keys that llama.cpp
 * writes (`model`, `pre`, `tokens`, `scores`, `token_type`, `merges`, the
 * special ids and the `add_*` switches).
 *
 * @module
 */

import { BpeModel } from "./bpe.ts";
import { ggufPreTokenizer, patternSteps, runSteps } from "./pre_tokenize.ts";
import { SpmModel } from "./spm.ts";
import { assembleTokenizer, TokenAttr, type Tokenizer } from "./tokenizer.ts";
import { byteLevelBytes, SPM_SPACE, utf8 } from "./_text.ts";
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
];

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
    throw new TypeError(
      `${where}: tokenizer model "${model}" is not supported (supported: ${
        GGUF_TOKENIZER_MODELS.join(", ")
      })`,
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
      addBos: bool("tokenizer.ggml.add_bos_token") ?? true,
      addEos: false,
      addSep: bool("tokenizer.ggml.add_sep_token") ?? true,
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
