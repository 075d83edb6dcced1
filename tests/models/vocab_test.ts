import { assertEquals, assertThrows } from "@std/assert";
import {
  ggufPreName,
  GgufTokenType,
  ggufVocabFromTokenizerJson,
  tokenizerJsonFromGguf,
} from "../../models/mod.ts";
import { ggufPreTokenizer } from "../../tokenizers/pre_tokenize.ts";

const split = (regex: string) => ({
  type: "Sequence",
  pretokenizers: [
    {
      type: "Split",
      pattern: { Regex: regex },
      behavior: "Isolated",
      invert: false,
    },
    {
      type: "ByteLevel",
      add_prefix_space: false,
      trim_offsets: true,
      use_regex: false,
    },
  ],
});

Deno.test("ggufPreName: the llama.cpp name whose patterns equal the tokenizer.json ones", () => {
  assertEquals(
    ggufPreName(split(ggufPreTokenizer("llama-bpe").patterns[0])),
    "llama-bpe",
  );
  assertEquals(
    ggufPreName(split(ggufPreTokenizer("qwen2").patterns[0])),
    "qwen2",
  );
  assertEquals(
    ggufPreName({
      type: "ByteLevel",
      add_prefix_space: false,
      use_regex: true,
    }),
    "gpt-2",
  );
  assertEquals(
    ggufPreName({
      type: "Sequence",
      pretokenizers: [
        { type: "Digits", individual_digits: true },
        { type: "ByteLevel", add_prefix_space: false, use_regex: true },
      ],
    }),
    "smollm",
  );
  assertEquals(ggufPreName(split("\\w+")), undefined);
  assertEquals(
    ggufPreName({ type: "ByteLevel", add_prefix_space: true }),
    undefined,
  );
});

const SPM_JSON = {
  model: {
    type: "BPE",
    byte_fallback: true,
    unk_token: "<unk>",
    vocab: {
      "<unk>": 0,
      "<s>": 1,
      "</s>": 2,
      "<0x41>": 3,
      "▁": 4,
      "a": 5,
      "b": 6,
      "▁a": 7,
      "ab": 8,
      "▁ab": 9,
      "xyz": 10,
    },
    merges: ["▁ a", "a b", "▁a b", "▁ ab"],
  },
  added_tokens: [
    { id: 0, content: "<unk>", special: true },
    { id: 1, content: "<s>", special: true },
    { id: 2, content: "</s>", special: true },
  ],
  normalizer: {
    type: "Sequence",
    normalizers: [{ type: "Prepend", prepend: "▁" }, {
      type: "Replace",
      pattern: { String: " " },
      content: "▁",
    }],
  },
  decoder: {
    type: "Sequence",
    decoders: [
      { type: "Replace", pattern: { String: "▁" }, content: " " },
      { type: "ByteFallback" },
      { type: "Fuse" },
      { type: "Strip", content: " ", start: 1, stop: 0 },
    ],
  },
  post_processor: {
    type: "TemplateProcessing",
    single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, {
      Sequence: { id: "A", type_id: 0 },
    }],
    special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
  },
};

Deno.test("SentencePiece tokenizer.json → GGUF: types, scores from merge ranks, padding", () => {
  const { values, types } = ggufVocabFromTokenizerJson(SPM_JSON, {
    vocabSize: 13,
  });
  assertEquals(values["tokenizer.ggml.model"], "llama");
  assertEquals(types["tokenizer.ggml.scores"], "ARRAY<FLOAT32>");
  const tokens = values["tokenizer.ggml.tokens"] as string[];
  assertEquals(tokens.slice(9), ["▁ab", "xyz", "[PAD11]", "[PAD12]"]);
  const tt = Array.from(values["tokenizer.ggml.token_type"] as Int32Array);
  const { NORMAL: N, UNKNOWN: U, CONTROL: C, BYTE: B, UNUSED: X } =
    GgufTokenType;
  assertEquals(tt, [U, C, C, B, N, N, N, N, N, N, N, X, X]);
  // "▁a" rank 0, "ab" rank 1, "▁ab" first made by rank 2; "xyz" by no merge
  const scores = Array.from(values["tokenizer.ggml.scores"] as Float32Array);
  assertEquals([scores[7], scores[8], scores[9], scores[10], scores[5]], [
    -0,
    -1,
    -2,
    -1e9,
    0,
  ]);
  assertEquals(
    [
      values["tokenizer.ggml.bos_token_id"],
      values["tokenizer.ggml.add_bos_token"],
      values["tokenizer.ggml.add_space_prefix"],
    ],
    [1, true, true],
  );
});

Deno.test("GGUF SentencePiece → tokenizer.json: merges ordered by score, every split in the vocabulary", () => {
  const md = {
    "tokenizer.ggml.model": "llama",
    "tokenizer.ggml.tokens": [
      "<unk>",
      "<s>",
      "</s>",
      "▁",
      "a",
      "b",
      "▁a",
      "ab",
      "▁ab",
    ],
    "tokenizer.ggml.scores": [0, 0, 0, -1, -2, -3, -4, -5, -6],
    "tokenizer.ggml.token_type": [2, 3, 3, 1, 1, 1, 1, 1, 1],
  };
  const { tokenizer, tokenizerConfig } = tokenizerJsonFromGguf(md);
  // "▁a" (−4) before "ab" (−5) before "▁ab" (−6), whose splits are "▁ ab" and "▁a b" (by left id)
  assertEquals(tokenizer.model.merges, [["▁", "a"], ["a", "b"], ["▁", "ab"], [
    "▁a",
    "b",
  ]]);
  assertEquals(tokenizer.added_tokens?.map((a) => a.content), [
    "<unk>",
    "<s>",
    "</s>",
  ]);
  assertEquals([tokenizerConfig.bos_token, tokenizerConfig.add_bos_token], [
    "<s>",
    true,
  ]);
});

Deno.test("byte-level tokenizer.json without a known pre-tokenizer is refused unless named", () => {
  const json = {
    model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 }, merges: ["a b"] },
    pre_tokenizer: split("\\w+"),
    decoder: { type: "ByteLevel" },
  };
  assertThrows(
    () => ggufVocabFromTokenizerJson(json),
    TypeError,
    "matches no llama.cpp tokenizer.ggml.pre name",
  );
  assertEquals(
    ggufVocabFromTokenizerJson(json, { pre: "gpt-2" })
      .values["tokenizer.ggml.pre"],
    "gpt-2",
  );
  assertThrows(
    () =>
      ggufVocabFromTokenizerJson({
        model: { type: "WordPiece", vocab: { "[UNK]": 0 }, unk_token: "[UNK]" },
      }),
    TypeError,
    "a WordPiece model cannot be written as a Llama-family GGUF vocabulary",
  );
});
