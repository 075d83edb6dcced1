/**
 * Every distinct `tokenizer.ggml.pre` pattern set against llama.cpp:
 * `tests/vectors/gen/gguf_vocab_pre.py` writes the byte-level vocabulary of
 * `tokenizers/bpe_gpt2.json` as a vocab-only GGUF once per pre name and
 * records llama.cpp's ids (node-llama-cpp) for a dozen corpus texts; the
 * same metadata built here must give the same ids.
 */

import { assertEquals } from "@std/assert";
import { tokenizerFromGguf } from "../../tokenizers/gguf.ts";
import type { TokenizerJson } from "../../tokenizers/hf.ts";

const V = new URL("../vectors/", import.meta.url);
const ref = JSON.parse(
  Deno.readTextFileSync(new URL("gguf_vocab/pre.llamacpp.json", V)),
) as { texts: number[]; ids: Record<string, number[][]> };
const corpus: string[] = JSON.parse(
  Deno.readTextFileSync(new URL("tokenizers/corpus.json", V)),
).texts;
const json = JSON.parse(
  Deno.readTextFileSync(new URL("tokenizers/bpe_gpt2.json", V)),
).tokenizer as TokenizerJson;

const vocab = json.model.vocab as Record<string, number>;
const added = json.added_tokens ?? [];
const n = Math.max(...Object.values(vocab), ...added.map((a) => a.id)) + 1;
const tokens: string[] = new Array(n).fill("");
const types: number[] = new Array(n).fill(1);
for (const [t, i] of Object.entries(vocab)) tokens[i] = t;
for (const a of added) {
  tokens[a.id] = a.content;
  types[a.id] = a.special ? 3 : 4;
}
const merges = (json.model.merges as (string | string[])[]).map((m) =>
  Array.isArray(m) ? m.join(" ") : m
);

for (const [pre, expected] of Object.entries(ref.ids)) {
  Deno.test(`GGUF pre-tokenizer "${pre}": ids equal llama.cpp's`, () => {
    const tok = tokenizerFromGguf({
      "tokenizer.ggml.model": "gpt2",
      "tokenizer.ggml.pre": pre,
      "tokenizer.ggml.tokens": tokens,
      "tokenizer.ggml.token_type": types,
      "tokenizer.ggml.merges": merges,
      "tokenizer.ggml.bos_token_id": 0,
      "tokenizer.ggml.eos_token_id": 0,
      "tokenizer.ggml.add_bos_token": false,
    });
    ref.texts.forEach((t, i) => {
      assertEquals(
        tok.encode(corpus[t], { addSpecial: false }),
        expected[i],
        `${pre}: ${JSON.stringify(corpus[t].slice(0, 50))}`,
      );
    });
  });
}
