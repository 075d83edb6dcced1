/**
 * An encoder's tokenizer as llama.cpp's converter writes it into GGUF
 * (`tokenizer.ggml.*` arrays): a WordPiece `tokenizer.json` becomes
 * `tokenizer.ggml.model = "bert"` (word starts marked with `▁`, `##`
 * continuations without their mark, special tokens as they are), a
 * byte-level BPE one `gpt2` with its merges.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encoderGgufVocab } from "@modelhost/modelhost/models";
 * const v = encoderGgufVocab({
 *   model: { type: "WordPiece", unk_token: "[UNK]", vocab: { "[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "hi": 3, "##s": 4 } },
 *   added_tokens: [
 *     { id: 0, content: "[UNK]", special: true }, { id: 1, content: "[CLS]", special: true },
 *     { id: 2, content: "[SEP]", special: true },
 *   ],
 * }, { cls_token: "[CLS]", sep_token: "[SEP]", unk_token: "[UNK]" }, 5, 2);
 * assert((v!.values["tokenizer.ggml.tokens"] as string[]).join(" ") === "[UNK] [CLS] [SEP] ▁hi s");
 * assert(v!.values["tokenizer.ggml.bos_token_id"] === 1);
 * ```
 *
 * @module
 */

import type { TokenizerConfigJson, TokenizerJson } from "../tokenizers/hf.ts";
import type { GgufMetadata } from "./gguf_config.ts";
import { GgufTokenType, ggufVocabFromTokenizerJson } from "./vocab.ts";

type Json = Record<string, unknown>;

/** A special token's text in `tokenizer_config.json` (a string or `{content}`). */
function specialText(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (v !== null && typeof v === "object") {
    const c = (v as Json).content;
    if (typeof c === "string") return c;
  }
  return undefined;
}

/**
 * GGUF tokenizer keys for an encoder's `tokenizer.json`, laid out as
 * llama.cpp's `convert_hf_to_gguf.py` writes them for `BertModel`,
 * `NomicBertModel` (WordPiece: `bert`), `RobertaModel` and
 * `ModernBertModel` (byte-level BPE: `gpt2`).
 *
 * @param json The parsed `tokenizer.json`.
 * @param config The parsed `tokenizer_config.json` (special token names).
 * @param vocabRows Rows of the token embedding (the list is padded with
 * `[PAD{id}]` unused tokens up to it).
 * @param typeCount Rows of the token-type table (`tokenizer.ggml.token_type_count`).
 * @returns Values and types, or undefined for a tokenizer llama.cpp's
 * encoder vocabularies do not cover here (Unigram).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encoderGgufVocab } from "@modelhost/modelhost/models";
 * const v = encoderGgufVocab({
 *   model: { type: "WordPiece", unk_token: "[UNK]", vocab: { "[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "hi": 3, "##s": 4 } },
 *   added_tokens: [
 *     { id: 0, content: "[UNK]", special: true }, { id: 1, content: "[CLS]", special: true },
 *     { id: 2, content: "[SEP]", special: true },
 *   ],
 * }, { cls_token: "[CLS]", sep_token: "[SEP]", unk_token: "[UNK]" }, 5, 2);
 * assert((v!.values["tokenizer.ggml.tokens"] as string[]).join(" ") === "[UNK] [CLS] [SEP] ▁hi s");
 * assert(v!.values["tokenizer.ggml.bos_token_id"] === 1);
 * ```
 */
export function encoderGgufVocab(
  json: TokenizerJson,
  config: TokenizerConfigJson | undefined,
  vocabRows: number,
  typeCount: number,
): GgufMetadata | undefined {
  const type = json.model?.type;
  if (type === "BPE") {
    const pre = json.pre_tokenizer as Json | undefined;
    // RoBERTa's and ModernBERT's ByteLevel pre-tokenizers split with GPT-2's
    // pattern (llama.cpp's converter names ModernBERT's "modern-bert", which
    // llama.cpp runs with that same pattern)
    const out = ggufVocabFromTokenizerJson(json, {
      tokenizerConfig: config,
      vocabSize: vocabRows,
      pre: pre?.type === "ByteLevel" ? "gpt-2" : undefined,
    });
    out.values["tokenizer.ggml.token_type_count"] = Math.max(typeCount, 1);
    out.types["tokenizer.ggml.token_type_count"] = "UINT32";
    return out;
  }
  if (type !== "WordPiece") return undefined;
  const vocab = (json.model as Json).vocab as Record<string, number>;
  let n = vocabRows;
  for (const id of Object.values(vocab)) n = Math.max(n, id + 1);
  for (const a of json.added_tokens ?? []) n = Math.max(n, a.id + 1);
  const raw: (string | undefined)[] = new Array(n).fill(undefined);
  for (const [t, id] of Object.entries(vocab)) raw[id] = t;
  const kinds = new Int32Array(n).fill(GgufTokenType.NORMAL);
  for (const a of json.added_tokens ?? []) {
    raw[a.id] = a.content;
    kinds[a.id] = a.special === true
      ? GgufTokenType.CONTROL
      : GgufTokenType.USER_DEFINED;
  }
  const tokens: string[] = [];
  for (let id = 0; id < n; id++) {
    const t = raw[id];
    if (t === undefined) {
      tokens.push(`[PAD${id}]`);
      kinds[id] = GgufTokenType.UNUSED;
    } else if (kinds[id] === GgufTokenType.CONTROL) {
      tokens.push(t);
    } else {
      tokens.push(t.startsWith("##") ? t.slice(2) : "\u2581" + t);
    }
  }
  const idOf = (key: string): number | undefined => {
    const text = specialText((config as Json | undefined)?.[key]);
    if (text === undefined) return undefined;
    const id = raw.indexOf(text);
    return id < 0 ? undefined : id;
  };
  const unkText = (json.model as Json).unk_token;
  const unk = idOf("unk_token") ??
    (typeof unkText === "string" ? raw.indexOf(unkText) : -1);
  const values: Record<string, unknown> = {};
  const types: Record<string, string> = {};
  const put = (k: string, v: unknown, t: string) => {
    values[k] = v;
    types[k] = t;
  };
  put("tokenizer.ggml.model", "bert", "STRING");
  put("tokenizer.ggml.pre", "default", "STRING");
  put("tokenizer.ggml.tokens", tokens, "ARRAY<STRING>");
  put("tokenizer.ggml.token_type", kinds, "ARRAY<INT32>");
  put("tokenizer.ggml.token_type_count", Math.max(typeCount, 1), "UINT32");
  // as gguf-py's SpecialVocab: BERT's BOS is its CLS token
  const cls = idOf("cls_token");
  const ids: [string, number | undefined][] = [
    ["bos_token_id", idOf("bos_token") ?? cls],
    ["unknown_token_id", unk >= 0 ? unk : undefined],
    ["seperator_token_id", idOf("sep_token")],
    ["padding_token_id", idOf("pad_token")],
    ["cls_token_id", cls],
    ["mask_token_id", idOf("mask_token")],
  ];
  for (const [k, v] of ids) {
    if (v !== undefined) put(`tokenizer.ggml.${k}`, v, "UINT32");
  }
  put("tokenizer.ggml.add_bos_token", true, "BOOL");
  put("tokenizer.ggml.add_eos_token", false, "BOOL");
  const norm = json.normalizer as Json | null | undefined;
  if (norm?.type === "BertNormalizer" && norm.lowercase === false) {
    // llama.cpp's WordPiece lowercases always; ours reads this
    put("tokenizer.ggml.normalizer.lowercase", false, "BOOL");
  }
  return { values, types };
}
