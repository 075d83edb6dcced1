import { assertEquals } from "@std/assert";
import { tokenizerFromGguf } from "../../tokenizers/gguf.ts";
import { SpmModel } from "../../tokenizers/spm.ts";
import { spmMetadata } from "./_vocabs.ts";

// Ids: 0 <unk>, 1 <s>, 2 </s>, 3 + b = <0xbb>, 259 ▁, 260 a, 261 b, 262 c,
// 263 ab (-5), 264 bc (-0.5), 265 ▁a (-6), 266 ▁ab (-7)

Deno.test("spm: the highest-scoring piece merges first, not the leftmost", () => {
  const tok = tokenizerFromGguf(spmMetadata());
  // "abc" -> "▁abc": pairs ▁a (-6), ab (-5), bc (-0.5): bc first -> ▁ a bc;
  // "abc" is not a piece, so ▁a merges -> [▁a, bc]
  assertEquals(tok.encode("abc", { addSpecial: false }), [265, 264]);
  // BOS by default (llama vocabularies add it)
  assertEquals(tok.encode("abc"), [1, 265, 264]);
  assertEquals(tok.kind, "spm");
  assertEquals([tok.bos, tok.eos, tok.unk], [1, 2, 0]);
});

Deno.test("spm: characters that are not pieces become byte tokens", () => {
  const tok = tokenizerFromGguf(spmMetadata());
  // "é" -> "▁é"; é = C3 A9 -> <0xC3> = 3 + 0xC3 = 198, <0xA9> = 172
  assertEquals(tok.encode("é", { addSpecial: false }), [259, 198, 172]);
  assertEquals(tok.decode([259, 198, 172]), "é");
  // spaces inside the text are ▁ too: "a b" -> ▁a ▁ b
  assertEquals(tok.encode("a b", { addSpecial: false }), [265, 259, 261]);
  assertEquals(tok.decode([1, 265, 259, 261]), "a b");
});

Deno.test("spm: control text is plain text unless parseSpecial; a prefix space follows each special", () => {
  const tok = tokenizerFromGguf(spmMetadata());
  // parsed: <s>, then "abc" with its own space prefix
  assertEquals(
    tok.encode("<s>abc", { addSpecial: false, parseSpecial: true }),
    [1, 265, 264],
  );
  // not parsed: ▁ < s > a b c -> only bc merges; < s > are bytes 0x3C 0x73 0x3E
  assertEquals(
    tok.encode("<s>abc", { addSpecial: false }),
    [259, 3 + 0x3c, 3 + 0x73, 3 + 0x3e, 260, 264],
  );
});

Deno.test("spm: add_space_prefix false leaves the text as it is", () => {
  const tok = tokenizerFromGguf(
    spmMetadata({ "tokenizer.ggml.add_space_prefix": false }),
  );
  // a b c -> bc -> [a, bc]
  assertEquals(tok.encode("abc", { addSpecial: false }), [260, 264]);
  assertEquals(tok.addSpacePrefix, false);
  assertEquals(tok.decode([260, 264]), "abc");
});

Deno.test("spm model: long texts (heap path) match the pairwise rule", () => {
  const m = new SpmModel({
    tokens: ["a", "b", "ab", "bb"],
    scores: [0, 0, -2, -1],
  });
  const out: number[] = [];
  // "abb" x 8: in each "abb", bb (-1) beats ab (-2) -> a bb ... and between
  // groups "ba" is no piece -> [a, bb] x 8
  m.encode("abb".repeat(8), out);
  assertEquals(out, new Array(8).fill([0, 3]).flat());
  // astral characters are one symbol each and fall back to 4 bytes
  const out2: number[] = [];
  new SpmModel({
    tokens: ["<0xF0>", "<0x9F>", "<0xA6>", "<0x99>"],
    scores: [0, 0, 0, 0],
  })
    .encode("🦙", out2);
  assertEquals(out2, [0, 1, 2, 3]);
});

Deno.test("spm: matches SentencePiece itself on a model it trained (tests/vectors/spm_tiny.json)", () => {
  // made by tests/vectors/gen/spm_tiny.py with the sentencepiece library
  const ref = JSON.parse(
    Deno.readTextFileSync(new URL("../vectors/spm_tiny.json", import.meta.url)),
  );
  const tok = tokenizerFromGguf({
    "tokenizer.ggml.model": "llama",
    "tokenizer.ggml.tokens": ref.tokens,
    "tokenizer.ggml.scores": ref.scores,
    "tokenizer.ggml.token_type": ref.token_type,
  });
  assertEquals(ref.cases.length, 14);
  ref.cases.forEach((c: { text: string; ids: number[] }, i: number) => {
    assertEquals(
      tok.encode(c.text, { addSpecial: false }),
      c.ids,
      JSON.stringify(c.text),
    );
    assertEquals(tok.decode(c.ids), ref.decoded[i]);
  });
});
