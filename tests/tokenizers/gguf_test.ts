import { assertEquals, assertThrows } from "@std/assert";
import { tokenizerFromGguf } from "../../tokenizers/gguf.ts";
import { bpeMetadata, spmMetadata } from "./_vocabs.ts";

Deno.test("gguf loader: missing or unsupported keys are TypeErrors naming the key", () => {
  assertThrows(
    () => tokenizerFromGguf({}, { name: "m.gguf" }),
    TypeError,
    "m.gguf has no tokenizer (tokenizer.ggml.model is missing)",
  );
  assertThrows(
    () => tokenizerFromGguf({ "tokenizer.ggml.model": "rwkv" }),
    TypeError,
    'tokenizer model "rwkv" is not supported (RWKV\'s escaped byte vocabulary is not supported); supported: llama, gpt2, bert, t5',
  );
  assertThrows(
    () => tokenizerFromGguf({ "tokenizer.ggml.model": "sentencepiece2" }),
    TypeError,
    'tokenizer model "sentencepiece2" is not supported; supported: llama, gpt2, bert, t5',
  );
  assertThrows(
    () => tokenizerFromGguf({ "tokenizer.ggml.model": "llama" }),
    TypeError,
    "tokenizer.ggml.tokens must be an array of strings, found nothing",
  );
  assertThrows(
    () =>
      tokenizerFromGguf(bpeMetadata({ "tokenizer.ggml.merges": undefined })),
    TypeError,
    "tokenizer.ggml.merges must be an array of strings",
  );
  assertThrows(
    () => tokenizerFromGguf(bpeMetadata({ "tokenizer.ggml.merges": ["ab"] })),
    TypeError,
    'tokenizer.ggml.merges[0] = "ab" has no space',
  );
  assertThrows(
    () => tokenizerFromGguf(bpeMetadata({ "tokenizer.ggml.pre": "nope" })),
    TypeError,
    'Unknown GGUF pre-tokenizer "nope"',
  );
  assertThrows(
    () =>
      tokenizerFromGguf(bpeMetadata({ "tokenizer.ggml.token_type": [1, 1] })),
    RangeError,
    "tokenizer.ggml.token_type has 2 entries for 24 tokens",
  );
  assertThrows(
    () => tokenizerFromGguf(bpeMetadata({ "tokenizer.ggml.tokens": ["a", 7] })),
    TypeError,
    "tokenizer.ggml.tokens[1] must be a string, found number",
  );
});

Deno.test("gguf loader: special ids out of range fall back to the defaults; bigint and typed arrays are read", () => {
  const md = spmMetadata({
    "tokenizer.ggml.eos_token_id": 4294967295, // "none": keep the default 2
    "tokenizer.ggml.padding_token_id": 4294967295, // no default: none
    "tokenizer.ggml.bos_token_id": 1n,
    "tokenizer.chat_template": "<|im_start|>",
  });
  md["tokenizer.ggml.scores"] = Float32Array.from(
    md["tokenizer.ggml.scores"] as number[],
  );
  md["tokenizer.ggml.token_type"] = Int32Array.from(
    md["tokenizer.ggml.token_type"] as number[],
  );
  const tok = tokenizerFromGguf(md);
  assertEquals([tok.bos, tok.eos, tok.pad], [1, 2, undefined]);
  assertEquals(tok.chatTemplate, "<|im_start|>");
  assertEquals(tok.encode("abc"), [1, 265, 264]);
});

Deno.test("gguf loader: typed reader entries ({ type, items }) are unwrapped", () => {
  const md = bpeMetadata();
  const wrapped = Object.fromEntries(
    Object.entries(md).map((
      [k, v],
    ) => [k, Array.isArray(v) ? { type: 8, items: v } : v]),
  );
  assertEquals(
    tokenizerFromGguf(wrapped).encode("lower", { addSpecial: false }),
    [18],
  );
});
