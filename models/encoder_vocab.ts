/**
 * An encoder's tokenizer as llama.cpp's converter writes it into GGUF
 * (`tokenizer.ggml.*` arrays): a WordPiece `tokenizer.json` becomes
 * `tokenizer.ggml.model = "bert"` (word starts marked with `▁`, `##`
 * continuations without their mark, special tokens as they are), a
 * byte-level BPE one `gpt2` with its merges, a SentencePiece Unigram one
 * (XLM-RoBERTa) `t5` with its scores and precompiled charsmap.
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
import { base64Bytes } from "../tokenizers/_charsmap.ts";
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
 * `ModernBertModel` (byte-level BPE: `gpt2`), `XLMRobertaModel`
 * (Unigram: `t5`, see {@link encoderUnigramVocab}).
 *
 * @param json The parsed `tokenizer.json`.
 * @param config The parsed `tokenizer_config.json` (special token names).
 * @param vocabRows Rows of the token embedding (the list is padded with
 * `[PAD{id}]` unused tokens up to it).
 * @param typeCount Rows of the token-type table (`tokenizer.ggml.token_type_count`).
 * @returns Values and types, or undefined for a tokenizer llama.cpp's
 * encoder vocabularies do not cover (WordLevel, a BPE without byte-level
 * pre-tokenizer …).
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
  if (type === "Unigram") {
    return encoderUnigramVocab(json, config, vocabRows, typeCount);
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

/** The normalizers of a `tokenizer.json` (a `Sequence` flattened). */
function flatten(node: unknown, key: string, list: string): Json[] {
  if (node === null || typeof node !== "object") return [];
  const n = node as Json;
  if (n.type === "Sequence" && Array.isArray(n[list])) {
    return (n[list] as unknown[]).flatMap((c) => flatten(c, key, list));
  }
  return [n];
}

/**
 * A SentencePiece Unigram `tokenizer.json` (XLM-RoBERTa) as llama.cpp's
 * converter writes it (`_xlmroberta_set_vocab`, its `tokenizer.json`
 * branch): `tokenizer.ggml.model = "t5"`, pre `default`, pieces with their
 * scores, token types (the unknown token `UNKNOWN`, special tokens
 * `CONTROL`, other added tokens `USER_DEFINED`, ids past the vocabulary
 * `[PAD{id}]` with score −10000, `UNUSED`), the normalizer's
 * `precompiled_charsmap` as bytes, `add_space_prefix` (the tokenizer
 * config's `add_prefix_space`, else the Metaspace's `prepend_scheme`),
 * the special token ids and the template's add-BOS / EOS / SEP flags.
 *
 * One deliberate difference: the converter takes
 * `remove_extra_whitespaces` from `clean_up_tokenization_spaces`, a
 * decoding flag; here it is true when the pre-tokenizer splits on
 * whitespace (`WhitespaceSplit` / `Whitespace`), which is what collapses
 * runs of spaces in the Hugging Face tokenizer, so llama.cpp's ids equal
 * its ids on such text.
 *
 * @param json The parsed `tokenizer.json` (a Unigram model).
 * @param config The parsed `tokenizer_config.json`.
 * @param vocabRows Rows of the token embedding (the list is padded to it).
 * @param typeCount Rows of the token-type table.
 * @returns Values and types of the `tokenizer.ggml.*` keys.
 * @throws {TypeError} When the model is not Unigram or its vocabulary is not a list of `[piece, score]`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encoderUnigramVocab } from "@modelhost/modelhost/models";
 * const v = encoderUnigramVocab({
 *   model: { type: "Unigram", unk_id: 3, vocab: [["<s>", 0], ["<pad>", 0], ["</s>", 0], ["<unk>", 0], ["\u2581a", -1.5]] },
 *   pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always" },
 *   added_tokens: [{ id: 0, content: "<s>", special: true }, { id: 2, content: "</s>", special: true }],
 * }, { bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>", pad_token: "<pad>" }, 6, 1);
 * assert(v.values["tokenizer.ggml.model"] === "t5");
 * assert((v.values["tokenizer.ggml.tokens"] as string[])[5] === "[PAD5]");
 * assert(Array.from(v.values["tokenizer.ggml.token_type"] as Int32Array).join() === "3,3,3,2,1,5");
 * ```
 */
export function encoderUnigramVocab(
  json: TokenizerJson,
  config: TokenizerConfigJson | undefined,
  vocabRows: number,
  typeCount: number,
): GgufMetadata {
  const model = json.model as Json;
  const list = model.vocab;
  if (model.type !== "Unigram" || !Array.isArray(list)) {
    throw new TypeError(
      `tokenizer.json: expected a Unigram model with a [piece, score] list, found ${
        String(model.type)
      }`,
    );
  }
  let n = Math.max(vocabRows, list.length);
  for (const a of json.added_tokens ?? []) n = Math.max(n, a.id + 1);
  const tokens: string[] = [];
  const scores = new Float32Array(n).fill(-10000);
  const kinds = new Int32Array(n).fill(GgufTokenType.UNUSED);
  for (let id = 0; id < n; id++) tokens.push(`[PAD${id}]`);
  list.forEach((entry, id) => {
    if (
      !Array.isArray(entry) || typeof entry[0] !== "string" ||
      typeof entry[1] !== "number"
    ) {
      throw new TypeError(
        `tokenizer.json: Unigram vocabulary entry ${id} is not [piece, score]`,
      );
    }
    tokens[id] = entry[0];
    scores[id] = entry[1];
    kinds[id] = GgufTokenType.NORMAL;
  });
  const idOf = (text: string | undefined): number | undefined => {
    if (text === undefined) return undefined;
    const a = (json.added_tokens ?? []).find((t) => t.content === text);
    if (a) return a.id;
    const id = tokens.indexOf(text);
    return id < 0 ? undefined : id;
  };
  const cfg = config as Json | undefined;
  const special = (key: string) => idOf(specialText(cfg?.[key]));
  const unk = special("unk_token") ??
    (typeof model.unk_id === "number" ? model.unk_id : undefined);
  const specialIds = new Set<number>();
  for (
    const k of [
      "bos_token",
      "eos_token",
      "unk_token",
      "sep_token",
      "pad_token",
      "cls_token",
      "mask_token",
    ]
  ) {
    const id = special(k);
    if (id !== undefined) specialIds.add(id);
  }
  for (const a of json.added_tokens ?? []) {
    tokens[a.id] = a.content;
    if (kinds[a.id] === GgufTokenType.UNUSED) scores[a.id] = 0;
    if (a.special === true) specialIds.add(a.id);
    kinds[a.id] = GgufTokenType.USER_DEFINED;
  }
  for (const id of specialIds) kinds[id] = GgufTokenType.CONTROL;
  if (unk !== undefined) kinds[unk] = GgufTokenType.UNKNOWN;

  const pres = flatten(json.pre_tokenizer, "type", "pretokenizers");
  const meta = pres.find((p) => p.type === "Metaspace");
  const addSpace = typeof cfg?.add_prefix_space === "boolean"
    ? cfg.add_prefix_space as boolean
    : meta !== undefined &&
      (meta.prepend_scheme ??
          (meta.add_prefix_space === false ? "never" : "always")) !== "never";
  const collapse = pres.some((p) =>
    p.type === "WhitespaceSplit" || p.type === "Whitespace"
  );
  const pre = flatten(json.normalizer, "type", "normalizers").find((x) =>
    x.type === "Precompiled"
  );
  const charsmap = typeof pre?.precompiled_charsmap === "string"
    ? base64Bytes(pre.precompiled_charsmap, "tokenizer.json normalizer")
    : undefined;

  const values: Record<string, unknown> = {};
  const types: Record<string, string> = {};
  const put = (k: string, v: unknown, t: string) => {
    values[k] = v;
    types[k] = t;
  };
  put("tokenizer.ggml.model", "t5", "STRING");
  put("tokenizer.ggml.pre", "default", "STRING");
  put("tokenizer.ggml.tokens", tokens, "ARRAY<STRING>");
  put("tokenizer.ggml.scores", scores, "ARRAY<FLOAT32>");
  put("tokenizer.ggml.token_type", kinds, "ARRAY<INT32>");
  put("tokenizer.ggml.add_space_prefix", addSpace, "BOOL");
  put("tokenizer.ggml.token_type_count", Math.max(typeCount, 1), "UINT32");
  put("tokenizer.ggml.remove_extra_whitespaces", collapse, "BOOL");
  if (charsmap && charsmap.length > 0) {
    put("tokenizer.ggml.precompiled_charsmap", charsmap, "ARRAY<UINT8>");
  }
  const ids: [string, number | undefined][] = [
    ["bos_token_id", special("bos_token")],
    ["eos_token_id", special("eos_token")],
    ["unknown_token_id", unk],
    ["seperator_token_id", special("sep_token")],
    ["padding_token_id", special("pad_token")],
    ["mask_token_id", special("mask_token")],
  ];
  for (const [k, v] of ids) {
    if (v !== undefined) put(`tokenizer.ggml.${k}`, v, "UINT32");
  }
  const t = templateFlags(json.post_processor);
  put("tokenizer.ggml.add_bos_token", t.bos, "BOOL");
  put("tokenizer.ggml.add_eos_token", t.eos, "BOOL");
  put("tokenizer.ggml.add_sep_token", t.sep, "BOOL");
  return { values, types };
}

/**
 * What a post-processor adds, as gguf-py's `SpecialVocab` reads it: a
 * special token before / after a single text, and one between the texts
 * of a pair.
 */
function templateFlags(
  post: unknown,
): { bos: boolean; eos: boolean; sep: boolean } {
  const p = post as Json | null | undefined;
  if (p?.type === "RobertaProcessing" || p?.type === "BertProcessing") {
    return { bos: true, eos: true, sep: true };
  }
  if (p?.type !== "TemplateProcessing") {
    return { bos: false, eos: false, sep: false };
  }
  const isSpecial = (x: unknown) =>
    x !== null && typeof x === "object" && "SpecialToken" in (x as Json);
  const seq = (x: unknown, id: string) =>
    x !== null && typeof x === "object" &&
    ((x as Json).Sequence as Json | undefined)?.id === id;
  const single = Array.isArray(p.single) ? p.single : [];
  const pair = Array.isArray(p.pair) ? p.pair : [];
  const a = pair.findIndex((x) => seq(x, "A"));
  const b = pair.findIndex((x) => seq(x, "B"));
  return {
    bos: single.length > 0 && isSpecial(single[0]),
    eos: single.length > 1 && isSpecial(single[single.length - 1]),
    sep: a >= 0 && b > a + 1 && pair.slice(a + 1, b).some(isSpecial),
  };
}
