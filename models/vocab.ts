/**
 * Vocabularies between Hugging Face `tokenizer.json` and GGUF
 * `tokenizer.ggml.*` metadata, for model conversion:
 *
 * - {@link ggufVocabFromTokenizerJson}: the keys llama.cpp reads. A
 *   SentencePiece-style BPE (`byte_fallback`, Llama 1/2, TinyLlama,
 *   Mistral) becomes `tokenizer.ggml.model = "llama"` with scores that
 *   rank each token by the first merge producing it (`−rank`), so
 *   llama.cpp's highest-score-first merging follows the merge list; a
 *   byte-level BPE (Llama 3, Qwen2, SmolLM) becomes `"gpt2"` with its
 *   merges and the `tokenizer.ggml.pre` name whose split patterns equal the
 *   file's.
 * - {@link tokenizerJsonFromGguf}: the reverse. SentencePiece scores become
 *   merges ordered by the merged token's score (every split of a token
 *   into two vocabulary pieces, as Hugging Face's own converter does).
 *
 * Token types are GGUF's numbers: 1 normal, 2 unknown, 3 control, 4
 * user-defined, 5 unused, 6 byte.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufVocabFromTokenizerJson, tokenizerJsonFromGguf } from "@modelhost/modelhost/models";
 * const md = {
 *   "tokenizer.ggml.model": "llama",
 *   "tokenizer.ggml.tokens": ["<unk>", "<s>", "</s>", "▁", "a", "b", "▁a", "▁ab"],
 *   "tokenizer.ggml.scores": [0, 0, 0, -1, -2, -3, -4, -5],
 *   "tokenizer.ggml.token_type": [2, 3, 3, 1, 1, 1, 1, 1],
 * };
 * const { tokenizer, tokenizerConfig } = tokenizerJsonFromGguf(md);
 * const back = ggufVocabFromTokenizerJson(tokenizer, { tokenizerConfig });
 * assert((back.values["tokenizer.ggml.tokens"] as string[])[7] === "▁ab");
 * ```
 *
 * @module
 */

import type {
  GenerationConfigJson,
  TokenizerConfigJson,
  TokenizerJson,
} from "../tokenizers/hf.ts";
import { createTokenizer } from "../tokenizers/mod.ts";
import {
  GGUF_PRE_NAMES,
  ggufPreTokenizer,
} from "../tokenizers/pre_tokenize.ts";
import type { GgufMetadata } from "./gguf_config.ts";

/**
 * GGUF token types (llama.cpp's `llama_token_type`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GgufTokenType } from "@modelhost/modelhost/models";
 * assert(GgufTokenType.BYTE === 6 && GgufTokenType.CONTROL === 3);
 * ```
 */
export const GgufTokenType = {
  NORMAL: 1,
  UNKNOWN: 2,
  CONTROL: 3,
  USER_DEFINED: 4,
  UNUSED: 5,
  BYTE: 6,
} as const;

/** The GPT-2 byte-level word pattern (Hugging Face's `ByteLevel` default). */
const GPT2_WORDS = ggufPreTokenizer("gpt-2").patterns[0];

/** `tokenizer.ggml.pre` names tried first, most common first. */
const PREFERRED_PRE = ["llama-bpe", "qwen2", "smollm", "gpt-2"];

/** Options of {@link ggufVocabFromTokenizerJson}. */
export interface VocabToGgufOptions {
  /** `tokenizer_config.json` (BOS/EOS, add_bos_token, chat_template). */
  tokenizerConfig?: TokenizerConfigJson;
  /** `generation_config.json` (EOS ids). */
  generationConfig?: GenerationConfigJson;
  /** Pad the vocabulary with `[PAD{id}]` unused tokens up to this size (the model's embedding rows). */
  vocabSize?: number;
  /** The `tokenizer.ggml.pre` name to write for a byte-level BPE, instead of detecting it. */
  pre?: string;
}

type Json = Record<string, unknown>;

const obj = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v)
    ? v as Json
    : undefined;

/** The split patterns a `tokenizer.json` pre-tokenizer applies, in order. */
function splitPatterns(pre: unknown, out: string[]): boolean {
  const c = obj(pre);
  if (!c) return true;
  switch (c.type) {
    case "Sequence":
      for (const p of Array.isArray(c.pretokenizers) ? c.pretokenizers : []) {
        if (!splitPatterns(p, out)) return false;
      }
      return true;
    case "Split": {
      const pat = obj(c.pattern) ?? {};
      const behavior = String(c.behavior ?? "Isolated").toLowerCase();
      if (
        typeof pat.Regex !== "string" || behavior !== "isolated" ||
        c.invert === true
      ) {
        return false;
      }
      out.push(pat.Regex);
      return true;
    }
    case "Digits":
      out.push(c.individual_digits ? "\\p{N}" : "\\p{N}+");
      return true;
    case "ByteLevel":
      if (c.add_prefix_space === true) return false;
      if (c.use_regex !== false) out.push(GPT2_WORDS);
      return true;
    default:
      return false;
  }
}

/**
 * The `tokenizer.ggml.pre` name whose patterns equal those of a
 * `tokenizer.json` pre-tokenizer.
 *
 * @param preTokenizer The `pre_tokenizer` field.
 * @returns The name, or `undefined` when no known name matches.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufPreName } from "@modelhost/modelhost/models";
 * const smollm = { type: "Sequence", pretokenizers: [
 *   { type: "Digits", individual_digits: true },
 *   { type: "ByteLevel", add_prefix_space: false, use_regex: true },
 * ] };
 * assert(ggufPreName(smollm) === "smollm");
 * ```
 */
export function ggufPreName(preTokenizer: unknown): string | undefined {
  const pats: string[] = [];
  if (!splitPatterns(preTokenizer, pats)) return undefined;
  const names = [
    ...PREFERRED_PRE,
    ...GGUF_PRE_NAMES.filter((n) => !PREFERRED_PRE.includes(n)),
  ];
  for (const name of names) {
    const p = ggufPreTokenizer(name).patterns;
    if (p.length === pats.length && p.every((x, i) => x === pats[i])) {
      return name;
    }
  }
  return undefined;
}

/**
 * The GGUF tokenizer keys for a Hugging Face `tokenizer.json`.
 *
 * @param json The parsed `tokenizer.json` (a BPE model).
 * @param options The configs beside it, a vocabulary size to pad to, a `pre` name.
 * @returns Values and GGUF types of the `tokenizer.ggml.*` (and
 * `tokenizer.chat_template`) keys.
 * @throws {TypeError} For a WordPiece / Unigram model, or a byte-level
 * pre-tokenizer matching no `tokenizer.ggml.pre` name (pass `pre`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufVocabFromTokenizerJson } from "@modelhost/modelhost/models";
 * const { values } = ggufVocabFromTokenizerJson({
 *   model: { type: "BPE", vocab: { "a": 0, "b": 1, "ab": 2 }, merges: ["a b"] },
 *   pre_tokenizer: { type: "ByteLevel", add_prefix_space: false },
 *   decoder: { type: "ByteLevel" },
 * });
 * assert(values["tokenizer.ggml.model"] === "gpt2" && values["tokenizer.ggml.pre"] === "gpt-2");
 * ```
 */
export function ggufVocabFromTokenizerJson(
  json: TokenizerJson,
  options: VocabToGgufOptions = {},
): GgufMetadata {
  const tok = createTokenizer(json, {
    config: options.tokenizerConfig,
    generationConfig: options.generationConfig,
  });
  const model = json.model;
  if (model.type !== undefined && model.type !== "BPE") {
    throw new TypeError(
      `tokenizer.json: a ${model.type} model cannot be written as a Llama-family GGUF vocabulary (BPE only)`,
    );
  }
  const spm = model.byte_fallback === true;
  const n = Math.max(tok.vocabSize, options.vocabSize ?? 0);
  const tokens: string[] = [];
  const types = new Int32Array(n);
  const special = new Map<number, boolean>();
  for (const a of json.added_tokens ?? []) {
    special.set(a.id, a.special === true);
  }
  for (let id = 0; id < n; id++) {
    const text = id < tok.vocabSize ? tok.tokenText(id) : "";
    if (id >= tok.vocabSize || (text === "" && !special.has(id))) {
      tokens.push(`[PAD${id}]`);
      types[id] = GgufTokenType.UNUSED;
      continue;
    }
    // user-defined pieces are matched in raw text and copied out as they are
    // by llama.cpp, so their "▁" become spaces (as convert_hf_to_gguf.py does)
    tokens.push(
      spm && special.get(id) === false ? text.replaceAll("\u2581", " ") : text,
    );
    types[id] = id === tok.unk
      ? GgufTokenType.UNKNOWN
      : special.has(id)
      ? (special.get(id) ? GgufTokenType.CONTROL : GgufTokenType.USER_DEFINED)
      : spm && /^<0x[0-9A-Fa-f]{2}>$/.test(text)
      ? GgufTokenType.BYTE
      : GgufTokenType.NORMAL;
  }
  const values: Record<string, unknown> = {};
  const gtypes: Record<string, string> = {};
  const put = (k: string, v: unknown, t: string) => {
    values[k] = v;
    gtypes[k] = t;
  };
  const merges = (Array.isArray(model.merges) ? model.merges : []).map((m) =>
    Array.isArray(m) ? `${m[0]} ${m[1]}` : String(m)
  );
  if (spm) {
    const scores = new Float32Array(n);
    const ids = new Map(tokens.map((t, i) => [t, i]));
    const ranked = new Set<number>();
    merges.forEach((m, rank) => {
      const sp = m.indexOf(" ", 1);
      const id = ids.get(m.slice(0, sp) + m.slice(sp + 1));
      if (id !== undefined && !ranked.has(id)) {
        ranked.add(id);
        scores[id] = -rank;
      }
    });
    for (let id = 0; id < n; id++) {
      // Pieces no merge produces can only come from the pieces themselves.
      if (
        !ranked.has(id) && [...tokens[id]].length > 1 &&
        types[id] === GgufTokenType.NORMAL
      ) {
        scores[id] = -1e9;
      }
    }
    put("tokenizer.ggml.model", "llama", "STRING");
    put("tokenizer.ggml.tokens", tokens, "ARRAY<STRING>");
    put("tokenizer.ggml.scores", scores, "ARRAY<FLOAT32>");
    put("tokenizer.ggml.token_type", types, "ARRAY<INT32>");
    put("tokenizer.ggml.add_space_prefix", tok.addSpacePrefix, "BOOL");
  } else {
    const pre = options.pre ?? ggufPreName(json.pre_tokenizer);
    if (pre === undefined) {
      throw new TypeError(
        `tokenizer.json: its pre-tokenizer ${
          JSON.stringify(json.pre_tokenizer).slice(0, 120)
        } matches no llama.cpp tokenizer.ggml.pre name; pass the name (known: ${
          GGUF_PRE_NAMES.join(", ")
        })`,
      );
    }
    put("tokenizer.ggml.model", "gpt2", "STRING");
    put("tokenizer.ggml.pre", pre, "STRING");
    put("tokenizer.ggml.tokens", tokens, "ARRAY<STRING>");
    put("tokenizer.ggml.token_type", types, "ARRAY<INT32>");
    put("tokenizer.ggml.merges", merges, "ARRAY<STRING>");
  }
  const id = (k: string, v: number | undefined) => {
    if (v !== undefined) put(`tokenizer.ggml.${k}`, v, "UINT32");
  };
  id("bos_token_id", tok.bos);
  id("eos_token_id", tok.eos);
  id("unknown_token_id", tok.unk);
  id("padding_token_id", tok.pad);
  const eot = tok.eog.find((x) => x !== tok.eos);
  id("eot_token_id", eot);
  put("tokenizer.ggml.add_bos_token", tok.addBos, "BOOL");
  put("tokenizer.ggml.add_eos_token", tok.addEos, "BOOL");
  if (tok.chatTemplate !== undefined) {
    put("tokenizer.chat_template", tok.chatTemplate, "STRING");
  }
  return { values, types: gtypes };
}

/** What {@link tokenizerJsonFromGguf} returns. */
export interface HfTokenizerFiles {
  /** The `tokenizer.json` object. */
  tokenizer: TokenizerJson;
  /** The `tokenizer_config.json` object. */
  tokenizerConfig: TokenizerConfigJson;
}

/**
 * A Hugging Face `tokenizer.json` (and `tokenizer_config.json`) for a GGUF
 * vocabulary (`tokenizer.ggml.model` `llama` or `gpt2`).
 *
 * @param md GGUF metadata (plain values).
 * @returns The two JSON objects.
 * @throws {TypeError} For another tokenizer model or missing keys.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { tokenizerJsonFromGguf } from "@modelhost/modelhost/models";
 * import { createTokenizer } from "@modelhost/modelhost/tokenizers";
 * const md = {
 *   "tokenizer.ggml.model": "llama",
 *   "tokenizer.ggml.tokens": ["<unk>", "<s>", "</s>", "▁", "a", "b", "▁a", "▁ab"],
 *   "tokenizer.ggml.scores": [0, 0, 0, -1, -2, -3, -4, -5],
 *   "tokenizer.ggml.token_type": [2, 3, 3, 1, 1, 1, 1, 1],
 * };
 * const { tokenizer, tokenizerConfig } = tokenizerJsonFromGguf(md);
 * const tok = createTokenizer(tokenizer, { config: tokenizerConfig });
 * assert(tok.encode("ab").join() === createTokenizer(md).encode("ab").join());
 * ```
 */
export function tokenizerJsonFromGguf(
  md: Record<string, unknown>,
): HfTokenizerFiles {
  const src = createTokenizer(md, { name: "GGUF metadata" });
  const kind = md["tokenizer.ggml.model"];
  const tokens = md["tokenizer.ggml.tokens"] as string[];
  const types = Array.from(
    (md["tokenizer.ggml.token_type"] ?? []) as ArrayLike<number>,
    Number,
  );
  // A Map, not an object: "toString" and "constructor" are tokens too.
  const ids = new Map<string, number>();
  const added: TokenizerJson["added_tokens"] = [];
  tokens.forEach((t, id) => {
    const type = types[id] ?? GgufTokenType.NORMAL;
    if (
      type === GgufTokenType.CONTROL || type === GgufTokenType.USER_DEFINED ||
      type === GgufTokenType.UNKNOWN
    ) {
      added!.push({
        id,
        content: t,
        special: type !== GgufTokenType.USER_DEFINED,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
      });
    }
    if (!ids.has(t)) ids.set(t, id);
  });
  const vocab = Object.fromEntries(ids) as Record<string, number>;
  const textOf = (id: number | undefined) =>
    id === undefined ? undefined : tokens[id];
  const post = src.addBos && src.bos !== undefined
    ? {
      type: "TemplateProcessing",
      single: [
        { SpecialToken: { id: tokens[src.bos], type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: tokens[src.bos], type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: tokens[src.bos], type_id: 1 } },
        { Sequence: { id: "B", type_id: 1 } },
      ],
      special_tokens: {
        [tokens[src.bos]]: {
          id: tokens[src.bos],
          ids: [src.bos],
          tokens: [tokens[src.bos]],
        },
      },
    }
    : null;
  const config: TokenizerConfigJson = {
    add_bos_token: src.addBos,
    add_eos_token: src.addEos,
    bos_token: textOf(src.bos) ?? null,
    eos_token: textOf(src.eos) ?? null,
    unk_token: textOf(src.unk) ?? null,
    ...(src.pad !== undefined ? { pad_token: tokens[src.pad] } : {}),
    ...(src.chatTemplate !== undefined
      ? { chat_template: src.chatTemplate }
      : {}),
    tokenizer_class: kind === "llama"
      ? "LlamaTokenizerFast"
      : "PreTrainedTokenizerFast",
  };
  if (kind === "llama") {
    const scores = Array.from(
      (md["tokenizer.ggml.scores"] ??
        new Array(tokens.length).fill(0)) as ArrayLike<number>,
      Number,
    );
    const merges: [string, string, number, number, number][] = [];
    tokens.forEach((t, id) => {
      if ((types[id] ?? 1) !== GgufTokenType.NORMAL) return;
      const chars = [...t];
      const local: [string, string, number, number, number][] = [];
      for (let k = 1; k < chars.length; k++) {
        const l = chars.slice(0, k).join(""), r = chars.slice(k).join("");
        const li = ids.get(l), ri = ids.get(r);
        if (li !== undefined && ri !== undefined) {
          local.push([l, r, scores[id], li, ri]);
        }
      }
      local.sort((a, b) => a[3] - b[3] || a[4] - b[4]);
      merges.push(...local);
    });
    // Stable: equal scores keep vocabulary order.
    merges.sort((a, b) => b[2] - a[2]);
    const space = src.addSpacePrefix;
    return {
      tokenizer: {
        version: "1.0",
        added_tokens: added,
        normalizer: {
          type: "Sequence",
          normalizers: [
            ...(space ? [{ type: "Prepend", prepend: "▁" }] : []),
            { type: "Replace", pattern: { String: " " }, content: "▁" },
          ],
        },
        pre_tokenizer: null,
        post_processor: post,
        decoder: {
          type: "Sequence",
          decoders: [
            { type: "Replace", pattern: { String: "▁" }, content: " " },
            { type: "ByteFallback" },
            { type: "Fuse" },
            ...(space
              ? [{ type: "Strip", content: " ", start: 1, stop: 0 }]
              : []),
          ],
        },
        model: {
          type: "BPE",
          dropout: null,
          unk_token: textOf(src.unk) ?? null,
          continuing_subword_prefix: null,
          end_of_word_suffix: null,
          fuse_unk: true,
          byte_fallback: true,
          ignore_merges: false,
          vocab,
          merges: merges.map((m) => [m[0], m[1]]),
        },
      },
      tokenizerConfig: config,
    };
  }
  if (kind !== "gpt2") {
    throw new TypeError(
      `GGUF tokenizer model ${
        JSON.stringify(kind)
      } cannot be written as a Llama-family tokenizer.json (llama or gpt2 only)`,
    );
  }
  const pre = ggufPreTokenizer(md["tokenizer.ggml.pre"] as string | undefined);
  const merges = (md["tokenizer.ggml.merges"] ?? []) as string[];
  return {
    tokenizer: {
      version: "1.0",
      added_tokens: added,
      normalizer: null,
      pre_tokenizer: {
        type: "Sequence",
        pretokenizers: [
          ...pre.patterns.map((p) => ({
            type: "Split",
            pattern: { Regex: p },
            behavior: "Isolated",
            invert: false,
          })),
          {
            type: "ByteLevel",
            add_prefix_space: false,
            trim_offsets: true,
            use_regex: false,
          },
        ],
      },
      post_processor: post,
      decoder: {
        type: "ByteLevel",
        add_prefix_space: true,
        trim_offsets: true,
        use_regex: true,
      },
      model: {
        type: "BPE",
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: pre.ignoreMerges,
        vocab,
        merges: merges.map((m) => {
          const sp = m.indexOf(" ", 1);
          return [m.slice(0, sp), m.slice(sp + 1)];
        }),
      },
    },
    tokenizerConfig: config,
  };
}
