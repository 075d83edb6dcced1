import { assertEquals } from "@std/assert";
import { tokenizerFromGguf } from "../../tokenizers/gguf.ts";
import { tokenizerFromJson } from "../../tokenizers/hf.ts";
import { bertWords } from "../../tokenizers/wordpiece.ts";

const GGUF_TOKENS = [
  "[PAD]",
  "[UNK]",
  "[CLS]",
  "[SEP]",
  "▁un",
  "aff",
  "able",
  "▁!",
  "▁hello",
  "▁",
];

function ggufBert() {
  return tokenizerFromGguf({
    "tokenizer.ggml.model": "bert",
    "tokenizer.ggml.tokens": GGUF_TOKENS,
    "tokenizer.ggml.token_type": [3, 3, 3, 3, 1, 1, 1, 1, 1, 1],
    "tokenizer.ggml.unknown_token_id": 1,
    "tokenizer.ggml.cls_token_id": 2,
    "tokenizer.ggml.seperator_token_id": 3,
    "tokenizer.ggml.padding_token_id": 0,
  });
}

Deno.test("wordpiece: basic tokenizer lower-cases, strips accents, isolates punctuation and CJK", () => {
  assertEquals(bertWords("Héllo, World!"), ["hello", ",", "world", "!"]);
  assertEquals(bertWords("a\u200db\tc我们d"), ["ab", "c", "我", "们", "d"]);
  assertEquals(bertWords("ÀB", { lowercase: false }), ["ÀB"]);
});

Deno.test("wordpiece (GGUF): greedy longest match, CLS / SEP around, unknown words whole", () => {
  const tok = ggufBert();
  // "unaffable!" -> words unaffable, ! -> ▁un aff able | ▁!
  assertEquals(tok.encode("unaffable!", { addSpecial: false }), [4, 5, 6, 7]);
  assertEquals(tok.encode("unaffable!"), [2, 4, 5, 6, 7, 3]);
  // "Héllo" -> hello -> ▁hello; "xyz" has no piece -> [UNK]
  assertEquals(tok.encode("Héllo xyz", { addSpecial: false }), [8, 1]);
  // "unx": ▁un, then "x" fails -> the whole word is [UNK]
  assertEquals(tok.encode("unx", { addSpecial: false }), [1]);
  assertEquals(tok.decode([2, 4, 5, 6, 7, 3]), "unaffable !");
  assertEquals([tok.bos, tok.sep, tok.unk, tok.pad], [2, 3, 1, 0]);
});

Deno.test("wordpiece (tokenizer.json): ## continuations and BertProcessing", () => {
  const vocab: Record<string, number> = {
    "[PAD]": 0,
    "[UNK]": 1,
    "[CLS]": 2,
    "[SEP]": 3,
    "un": 4,
    "##aff": 5,
    "##able": 6,
    "!": 7,
    "hello": 8,
  };
  const tok = tokenizerFromJson({
    model: {
      type: "WordPiece",
      vocab,
      unk_token: "[UNK]",
      continuing_subword_prefix: "##",
    },
    added_tokens: [0, 1, 2, 3].map((id) => ({
      id,
      content: Object.keys(vocab)[id],
      special: true,
    })),
    normalizer: { type: "BertNormalizer", lowercase: true },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: {
      type: "BertProcessing",
      cls: ["[CLS]", 2],
      sep: ["[SEP]", 3],
    },
    decoder: { type: "WordPiece", prefix: "##" },
  });
  assertEquals(tok.encode("UnAffable! hello"), [2, 4, 5, 6, 7, 8, 3]);
  // the WordPiece decoder's cleanup joins " !" (tokenizers does the same)
  assertEquals(tok.decode([2, 4, 5, 6, 7, 8, 3]), "unaffable! hello");
  assertEquals(tok.kind, "wordpiece");
});
