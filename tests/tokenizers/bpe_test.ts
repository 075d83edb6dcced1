import { assert, assertEquals } from "@std/assert";
import { tokenizerFromGguf } from "../../tokenizers/gguf.ts";
import { BpeModel } from "../../tokenizers/bpe.ts";
import { BPE_TYPES, bpeMetadata } from "./_vocabs.ts";

Deno.test("bpe: merges apply by rank within each pre-tokenized word", () => {
  const tok = tokenizerFromGguf(bpeMetadata());
  // "lower": l o w e r -> (l,o)r0 -> lo w e r -> (lo,w)r1 -> low e r
  //   -> (e,r)r2 -> low er -> (low,er)r8 -> lower = 18
  // " newest": Ġ n e w e s t -> Ġn(r3) -> Ġne(r4) -> Ġnew(r5) -> es(r6)
  //   -> est(r7) -> [Ġnew=15, est=17]; "!" = 19
  assertEquals(tok.encode("lower newest!", { addSpecial: false }), [
    18,
    15,
    17,
    19,
  ]);
  assertEquals(tok.kind, "bpe");
  assertEquals(tok.vocabSize, 24);
});

Deno.test("bpe: equal ranks merge leftmost first", () => {
  const tok = tokenizerFromGguf(bpeMetadata());
  // "eee": pairs (e,e)@0 and (e,e)@1 both rank 9 -> left one: ee e
  assertEquals(tok.encode("eee", { addSpecial: false }), [20, 4]);
  // "eeee": ee at 0, then (e,e)@2 -> ee ee
  assertEquals(tok.encode("eeee", { addSpecial: false }), [20, 20]);
});

Deno.test("bpe: long words take the heap path and agree with the short path", () => {
  const tok = tokenizerFromGguf(bpeMetadata());
  // 25 letters e: ee x 12 then e (leftmost pairing all the way)
  const ids = tok.encode("e".repeat(25), { addSpecial: false });
  assertEquals(ids, [...new Array(12).fill(20), 4]);
  // 24 x "lower" glued: one word; each lower merges independently
  const long = tok.encode("lowerlowerlower" + "lower".repeat(9), {
    addSpecial: false,
  });
  assertEquals(long, new Array(12).fill(18));
});

Deno.test("bpe: multi-byte characters start as byte symbols and decode back", () => {
  const tok = tokenizerFromGguf(bpeMetadata());
  // "é" = C3 A9 -> byte chars "Ã" (22) and "©" (23); no merge joins them
  assertEquals(tok.encode("é", { addSpecial: false }), [22, 23]);
  assertEquals(tok.decode([22, 23]), "é");
  assertEquals(tok.decode([18, 15, 17, 19]), "lower newest!");
});

Deno.test("bpe: control tokens need parseSpecial; user-defined ones are always matched", () => {
  const types = BPE_TYPES.slice();
  types[21] = 4; // "ĠĠ" user-defined: text is matched as is
  const tokens = bpeMetadata()["tokenizer.ggml.tokens"] as string[];
  const withUser = tokens.slice();
  withUser[21] = "  ";
  const tok = tokenizerFromGguf(
    bpeMetadata({
      "tokenizer.ggml.token_type": types,
      "tokenizer.ggml.tokens": withUser,
    }),
  );
  assertEquals(
    tok.encode("lower<|endoftext|>", { addSpecial: false, parseSpecial: true }),
    [18, 0],
  );
  const plain = tok.encode("lower<|endoftext|>", { addSpecial: false });
  assertEquals(plain[0], 18);
  assert(
    !plain.includes(0),
    "control token text must not become the control id",
  );
  // "low  low": the two spaces are a user-defined token, the runs around it words
  assertEquals(tok.encode("low  low", { addSpecial: false }), [11, 21, 11]);
  assertEquals(tok.decode([11, 21, 11]), "low  low");
  assertEquals(tok.specialTokens.map((s) => [s.id, s.type]), [[0, "control"], [
    21,
    "user-defined",
  ]]);
});

Deno.test("bpe: BOS / EOS from metadata, decode skips control tokens unless asked", () => {
  const tok = tokenizerFromGguf(
    bpeMetadata({ "tokenizer.ggml.add_bos_token": true }),
  );
  assertEquals(tok.encode("low"), [0, 11]);
  assertEquals(tok.encode("low", { addEos: true }), [0, 11, 0]);
  assertEquals(tok.decode([0, 11, 0]), "low");
  assertEquals(
    tok.decode([0, 11, 0], { special: true }),
    "<|endoftext|>low<|endoftext|>",
  );
  assertEquals(tok.eog, [0]);
});

Deno.test("bpe model: symbols that are not tokens fall back to byte tokens", () => {
  // merge "a b" makes "ab", which is not in the vocabulary
  const m = new BpeModel({
    tokens: ["a", "b"],
    merges: [["a", "b"]],
    byteLevel: true,
  });
  const out: number[] = [];
  m.encodeWord("ab", out);
  assertEquals(out, [0, 1]);
  // ignoreMerges: a whole word found in the vocabulary wins over merging
  const m2 = new BpeModel({
    tokens: ["a", "b", "c", "abc", "ab"],
    merges: [["a", "b"]],
    byteLevel: true,
    ignoreMerges: true,
  });
  const o2: number[] = [];
  m2.encodeWord("abc", o2);
  m2.encodeWord("abb", o2); // not whole: ab b
  assertEquals(o2, [3, 4, 1]);
});

Deno.test("bpe model: character level with byte fallback and fused unknowns", () => {
  const tokens = ["<unk>", "▁", "h", "i", "hi", "▁hi", "<0xC3>", "<0xA9>"];
  const m = new BpeModel({
    tokens,
    merges: [["h", "i"], ["▁", "hi"]],
    byteLevel: false,
    byteFallback: true,
    unk: 0,
  });
  const out: number[] = [];
  m.encodeWord("▁hié", out); // ▁ h i é -> ▁ hi é -> ▁hi é; é -> C3 A9
  assertEquals(out, [5, 6, 7]);
  const m2 = new BpeModel({
    tokens,
    merges: [],
    byteLevel: false,
    unk: 0,
    fuseUnk: true,
  });
  const o2: number[] = [];
  m2.encodeWord("hxyi", o2); // x, y unknown -> one fused <unk>
  assertEquals(o2, [2, 0, 3]);
});
