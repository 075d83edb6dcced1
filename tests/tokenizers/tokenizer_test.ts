import { assertEquals, assertThrows } from "@std/assert";
import { createRng } from "../../core/rng.ts";
import { tokenizerFromGguf } from "../../tokenizers/gguf.ts";
import { createTokenizer } from "../../tokenizers/mod.ts";
import { BYTE_TO_CHAR } from "../../tokenizers/_text.ts";
import { bpeMetadata, spmMetadata } from "./_vocabs.ts";

/** A byte-level vocabulary holding every byte, plus a few merges. */
function fullByteBpe() {
  const tokens = [...BYTE_TO_CHAR, "Ġt", "he", "Ġthe", "ä¸", "<|eot|>"];
  return tokenizerFromGguf({
    "tokenizer.ggml.model": "gpt2",
    "tokenizer.ggml.pre": "llama-bpe",
    "tokenizer.ggml.tokens": tokens,
    "tokenizer.ggml.token_type": tokens.map((
      _,
      i,
    ) => (i === tokens.length - 1 ? 3 : 1)),
    "tokenizer.ggml.merges": ["Ġ t", "h e", "Ġt he", "ä ¸"],
    "tokenizer.ggml.bos_token_id": 260,
    "tokenizer.ggml.eos_token_id": 260,
    "tokenizer.ggml.add_bos_token": false,
  });
}

function randomText(seed: number, alphabet: string[], n: number): string {
  const rng = createRng(seed);
  let s = "";
  for (let i = 0; i < n; i++) s += alphabet[rng.int(alphabet.length)];
  return s;
}

const ALPHABET = [
  ..."the quick brown fox\n\t  ",
  "é",
  "中",
  "🦙",
  "👩‍💻",
  "'s",
  "123",
  "\r\n",
  "ß",
];

Deno.test("round trip: byte-level BPE with every byte decodes any text exactly", () => {
  const tok = fullByteBpe();
  for (let seed = 1; seed <= 200; seed++) {
    const text = randomText(seed, ALPHABET, 1 + (seed % 40));
    assertEquals(tok.decode(tok.encode(text)), text, `seed ${seed}`);
  }
  // " the" uses the merges: Ġt + he -> Ġthe
  assertEquals(tok.encode(" the"), [258]);
  assertEquals(tok.eog, [260]);
});

Deno.test("round trip: SentencePiece with byte fallback keeps text, spaces included", () => {
  const tok = tokenizerFromGguf(spmMetadata());
  const alphabet = [..."abc  \n\t", "é", "中", "🦙", "ab", "bc"];
  for (let seed = 1; seed <= 200; seed++) {
    const text = randomText(seed, alphabet, 1 + (seed % 30));
    assertEquals(tok.decode(tok.encode(text)), text, `seed ${seed}`);
  }
});

Deno.test("stream decoder: partial UTF-8 is held back until the character completes", () => {
  const tok = tokenizerFromGguf(spmMetadata());
  const ids = tok.encode("é🦙", { addSpecial: false });
  // ▁, C3 A9, F0 9F A6 99 as byte tokens (3 + byte)
  assertEquals(ids, [
    259,
    3 + 0xc3,
    3 + 0xa9,
    3 + 0xf0,
    3 + 0x9f,
    3 + 0xa6,
    3 + 0x99,
  ]);
  const sd = tok.createStreamDecoder();
  assertEquals(ids.map((id) => sd.decodeToken(id)), [
    "",
    "",
    "é",
    "",
    "",
    "",
    "🦙",
  ]);
  assertEquals(sd.flush(), "");
  const cut = tok.createStreamDecoder();
  assertEquals(cut.decodeToken(3 + 0xf0) + cut.decodeToken(3 + 0x9f), "");
  assertEquals(cut.flush(), "\uFFFD");
  // leading space: dropped once, at the start of the stream only
  const sp = tok.createStreamDecoder();
  assertEquals(
    [1, 265, 259, 261].map((id) => sp.decodeToken(id)).join(""),
    "a b",
  );
  const keep = tok.createStreamDecoder({ stripLeadingSpace: false });
  assertEquals([265].map((id) => keep.decodeToken(id)).join(""), " a");
});

Deno.test("token lookups and bytes", () => {
  const tok = tokenizerFromGguf(spmMetadata());
  assertEquals(tok.tokenText(265), "▁a");
  assertEquals(tok.tokenId("▁ab"), 266);
  assertEquals(tok.tokenId("zzz"), undefined);
  assertEquals(tok.tokenBytes(265), new TextEncoder().encode(" a"));
  assertEquals(tok.tokenBytes(3 + 0xff), Uint8Array.of(0xff));
  assertEquals(tok.tokenBytes(1).length, 0);
  assertEquals(tok.tokenBytes(1, true), new TextEncoder().encode("<s>"));
});

Deno.test("errors: ids outside the vocabulary, missing BOS, unknown sources", () => {
  const tok = tokenizerFromGguf(spmMetadata());
  assertThrows(
    () => tok.decode([999]),
    RangeError,
    "Token id 999 is outside the vocabulary of 267 tokens",
  );
  assertThrows(() => tok.tokenText(-1), RangeError, "Token id -1 is outside");
  const noBos = createTokenizer({
    model: { type: "BPE", vocab: { a: 0 }, merges: [] },
    pre_tokenizer: { type: "ByteLevel" },
  });
  assertThrows(
    () => noBos.encode("a", { addBos: true }),
    TypeError,
    "Cannot add BOS: this tokenizer has no BOS token",
  );
  assertThrows(
    () => noBos.encode("a", { addEos: true }),
    TypeError,
    "Cannot add EOS",
  );
  assertThrows(
    () => createTokenizer({} as never, { name: "x.json" }),
    TypeError,
    "x.json is neither a tokenizer.json object (no model.vocab) nor GGUF metadata",
  );
});

Deno.test("createTokenizer: GGUF metadata as object, Map, or a model with metadata", () => {
  const md = bpeMetadata();
  const a = createTokenizer(md).encode("lower newest!", { addSpecial: false });
  const b = createTokenizer(new Map(Object.entries(md))).encode(
    "lower newest!",
    { addSpecial: false },
  );
  const c = createTokenizer({ metadata: md }).encode("lower newest!", {
    addSpecial: false,
  });
  assertEquals(a, [18, 15, 17, 19]);
  assertEquals(b, a);
  assertEquals(c, a);
});
