/**
 * GGUF Unigram vocabularies (`tokenizer.ggml.model = "t5"`, llama.cpp's
 * UGM) against llama.cpp itself: `tests/vectors/gen/gguf_vocab_t5.py`
 * trains SentencePiece Unigram models on our text and writes them as
 * vocab-only GGUF files the way llama.cpp's converter writes T5 (charsmap,
 * add_space_prefix, remove_extra_whitespaces, user-defined and control
 * pieces); `gguf_vocab_llamacpp.mjs` records llama.cpp's ids and text for
 * the shared corpus through node-llama-cpp.
 */

import { assertEquals } from "@std/assert";
import { ggufMetadataRecord, readGgufHeader } from "../../formats/gguf/mod.ts";
import { memorySource } from "../../core/sources.ts";
import { createTokenizer } from "../../tokenizers/mod.ts";

const DIR = new URL("../vectors/gguf_vocab/", import.meta.url);
const texts: string[] = JSON.parse(
  Deno.readTextFileSync(
    new URL("../vectors/tokenizers/corpus.json", import.meta.url),
  ),
).texts;

for (const name of ["t5-unigram", "t5-userdefined", "t5-noextra"]) {
  Deno.test(`GGUF t5 vocabulary ${name}: ids and text equal llama.cpp's`, async () => {
    const bytes = Deno.readFileSync(new URL(`${name}.gguf`, DIR));
    const md = ggufMetadataRecord(await readGgufHeader(memorySource(bytes)));
    const ref = JSON.parse(
      Deno.readTextFileSync(new URL(`${name}.llamacpp.json`, DIR)),
    ) as { encode: number[][]; decode: string[] };
    const tok = createTokenizer(md, { name });
    assertEquals(tok.kind, "unigram");
    texts.forEach((text, i) => {
      const ids = tok.encode(text, { addSpecial: false });
      assertEquals(
        ids,
        ref.encode[i],
        `${name} encode ${JSON.stringify(text.slice(0, 50))}`,
      );
      assertEquals(
        tok.decode(ids),
        ref.decode[i],
        `${name} decode ${JSON.stringify(text.slice(0, 50))}`,
      );
    });
    // EOS is added by default, as llama.cpp does for t5
    assertEquals(tok.encode("hi").at(-1), tok.eos);
  });
}
