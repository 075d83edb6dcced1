import { assertEquals, assertThrows } from "@std/assert";
import { tokenizerFromJson, type TokenizerJson } from "../../tokenizers/hf.ts";
import { ggufPreTokenizer } from "../../tokenizers/pre_tokenize.ts";

const LLAMA3_VOCAB: Record<string, number> = {
  "H": 0,
  "e": 1,
  "l": 2,
  "o": 3,
  "Ġ": 4,
  "w": 5,
  "r": 6,
  "d": 7,
  "ll": 8,
  "llo": 9,
  "Hello": 10,
  "Ġw": 11,
  "or": 12,
  "Ġwor": 13,
  "Ġworld": 14,
  "ld": 15,
};

function llama3Json(ignoreMerges: boolean): TokenizerJson {
  return {
    model: {
      type: "BPE",
      vocab: LLAMA3_VOCAB,
      // pair form, as newer tokenizer.json files write merges
      merges: [["l", "l"], ["ll", "o"], ["Ġ", "w"], ["o", "r"], ["Ġw", "or"], [
        "l",
        "d",
      ], ["Ġwor", "ld"]],
      ignore_merges: ignoreMerges,
    },
    added_tokens: [
      { id: 16, content: "<|begin_of_text|>", special: true },
      { id: 17, content: "<|eot_id|>", special: true },
      { id: 18, content: "<tool>", special: false, lstrip: true, rstrip: true },
      { id: 19, content: "<|end_of_text|>", special: true },
    ],
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        {
          type: "Split",
          pattern: { Regex: ggufPreTokenizer("llama3").patterns[0] },
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
    },
    post_processor: {
      type: "Sequence",
      processors: [
        { type: "ByteLevel" },
        {
          type: "TemplateProcessing",
          single: [{ SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } }, {
            Sequence: { id: "A", type_id: 0 },
          }],
          special_tokens: {
            "<|begin_of_text|>": {
              id: "<|begin_of_text|>",
              ids: [16],
              tokens: ["<|begin_of_text|>"],
            },
          },
        },
      ],
    },
    decoder: { type: "ByteLevel" },
  };
}

Deno.test("tokenizer.json (Llama 3 style): Split + ByteLevel, BOS from the template, ignore_merges", () => {
  const tok = tokenizerFromJson(llama3Json(true));
  // "Hello" is a vocabulary entry: taken whole; " world": Ġw, or, Ġwor, ld, Ġworld
  assertEquals(tok.encode("Hello world"), [16, 10, 14]);
  assertEquals(tok.decode([16, 10, 14]), "Hello world");
  assertEquals([tok.bos, tok.addBos, tok.kind], [16, true, "bpe"]);
  // without ignore_merges, "Hello" merges from its letters: H e (l l -> ll, ll o -> llo)
  assertEquals(
    tokenizerFromJson(llama3Json(false)).encode("Hello", { addSpecial: false }),
    [0, 1, 9],
  );
  // <|eot_id|> and <|end_of_text|> end generation by their text
  assertEquals(tok.eog, [17, 19]);
});

Deno.test("tokenizer.json: added tokens with lstrip / rstrip swallow the spaces around them", () => {
  const tok = tokenizerFromJson(llama3Json(true));
  // "Hello <tool> world": the spaces go with <tool>, so "world" has no Ġ
  assertEquals(tok.encode("Hello <tool> world", { addSpecial: false }), [
    10,
    18,
    5,
    12,
    15,
  ]);
  assertEquals(tok.decode([10, 18, 5, 12, 15]), "Hello<tool>world");
});

Deno.test("tokenizer.json: tokenizer_config and generation_config override BOS / EOS", () => {
  const tok = tokenizerFromJson(llama3Json(true), {
    config: {
      add_bos_token: false,
      eos_token: "<|eot_id|>",
      chat_template: "{{ '<|start_header_id|>' }}",
    },
    generationConfig: { eos_token_id: [19, 17] },
  });
  assertEquals(tok.encode("Hello"), [10]);
  assertEquals(tok.eos, 19);
  assertEquals(tok.eog, [17, 19]);
  assertEquals(tok.chatTemplate, "{{ '<|start_header_id|>' }}");
});

function spmJson(pre: unknown, normalizer: unknown): TokenizerJson {
  return {
    model: {
      type: "BPE",
      vocab: {
        "<unk>": 0,
        "<s>": 1,
        "</s>": 2,
        "<0xC3>": 3,
        "<0xA9>": 4,
        "▁": 5,
        "a": 6,
        "b": 7,
        "ab": 8,
        "▁ab": 9,
      },
      merges: ["a b", "▁ ab"],
      byte_fallback: true,
      unk_token: "<unk>",
      fuse_unk: true,
    },
    added_tokens: [0, 1, 2].map((id) => ({
      id,
      content: ["<unk>", "<s>", "</s>"][id],
      special: true,
    })),
    normalizer,
    pre_tokenizer: pre,
    post_processor: {
      type: "TemplateProcessing",
      single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, {
        Sequence: { id: "A", type_id: 0 },
      }],
      special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
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
  };
}

Deno.test("tokenizer.json (Llama 2 style): Prepend + Replace normalizer, byte fallback", () => {
  const tok = tokenizerFromJson(spmJson(null, {
    type: "Sequence",
    normalizers: [{ type: "Prepend", prepend: "▁" }, {
      type: "Replace",
      pattern: { String: " " },
      content: "▁",
    }],
  }));
  // "ab ab" -> "▁ab▁ab": a b -> ab (rank 0), ▁ ab -> ▁ab (rank 1), twice
  assertEquals(tok.encode("ab ab"), [1, 9, 9]);
  // é has no piece: bytes C3 A9
  assertEquals(tok.encode("é", { addSpecial: false }), [5, 3, 4]);
  assertEquals(tok.decode([1, 9, 9]), "ab ab");
  assertEquals(tok.decode([5, 3, 4]), "é");
  // the normalizer runs per text run, so text after <s> gets its ▁ too
  assertEquals(tok.encode("<s>ab", { addSpecial: false, parseSpecial: true }), [
    1,
    9,
  ]);
  assertEquals(tok.kind, "spm");
});

Deno.test("tokenizer.json (Metaspace, prepend_scheme first): only the start of the input gets ▁", () => {
  const tok = tokenizerFromJson(
    spmJson({
      type: "Metaspace",
      replacement: "▁",
      prepend_scheme: "first",
      split: false,
    }, null),
  );
  assertEquals(tok.encode("ab ab", { addSpecial: false }), [9, 9]);
  assertEquals(tok.encode("<s>ab", { addSpecial: false, parseSpecial: true }), [
    1,
    8,
  ]);
});

Deno.test("tokenizer.json: unsupported parts are refused by name", () => {
  const base = llama3Json(true);
  assertThrows(
    () => tokenizerFromJson({ ...base, model: { type: "Chars", vocab: {} } }),
    TypeError,
    'tokenizer.json: model type "Chars" is not supported (supported: BPE, WordPiece, Unigram, WordLevel)',
  );
  assertThrows(
    () =>
      tokenizerFromJson({ ...base, normalizer: { type: "ByteLevel" } }, {
        name: "x/tokenizer.json",
      }),
    TypeError,
    'x/tokenizer.json: normalizer "ByteLevel" is not supported',
  );
  assertThrows(
    () =>
      tokenizerFromJson({ ...base, normalizer: { type: "Precompiled" } }, {
        name: "t5/tokenizer.json",
      }),
    TypeError,
    "t5/tokenizer.json: Precompiled normalizer needs a precompiled_charsmap string",
  );
  assertThrows(
    () =>
      tokenizerFromJson({
        ...base,
        model: { type: "Unigram", vocab: [["a", 0]], unk_id: 3 },
      }),
    TypeError,
    "model.unk_id 3 is outside the 1 pieces",
  );
  assertThrows(
    () =>
      tokenizerFromJson({ ...base, pre_tokenizer: { type: "UnicodeScripts" } }),
    TypeError,
    'pre-tokenizer "UnicodeScripts" is not supported',
  );
  assertThrows(
    () =>
      tokenizerFromJson({ ...base, model: { ...base.model, merges: ["ab"] } }),
    TypeError,
    'model.merges[0] = "ab" is neither "a b" nor ["a", "b"]',
  );
  assertThrows(
    () =>
      tokenizerFromJson({
        ...base,
        model: { type: "BPE", vocab: { a: 1_000_000_000 } },
      }),
    RangeError,
    "model.vocab token id 1000000000 is far beyond the 1 tokens it defines",
  );
  assertThrows(
    () => tokenizerFromJson(base, { config: { bos_token: "<nope>" } }),
    TypeError,
    'bos_token "<nope>" is not in the vocabulary',
  );
});
