/**
 * Vocabulary conversion for model conversion, checked with llama.cpp's own
 * tokenizer test vectors (`fixtures/gguf/llama.cpp-vocab`: `.inp` texts →
 * `.out` ids, no BOS): a GGUF vocabulary written as a Hugging Face
 * `tokenizer.json` (SentencePiece scores turned into merges; byte-level BPE
 * with its split patterns) must tokenize every input as llama.cpp does,
 * and so must that `tokenizer.json` written back as GGUF `tokenizer.ggml.*`
 * keys (merges turned into scores; the `pre` name detected from the
 * patterns).
 */

import { assertEquals } from "@std/assert";
import { memorySource } from "../../core/sources.ts";
import { readGguf } from "../../formats/gguf/mod.ts";
import {
  ggufVocabFromTokenizerJson,
  tokenizerJsonFromGguf,
} from "../../models/mod.ts";
import { createTokenizer } from "../../tokenizers/mod.ts";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";

// SentencePiece (llama), byte-level with one pattern (gpt-2) and with six (deepseek-llm).
const VOCABS = ["llama-spm", "gpt-2", "deepseek-llm"];

for (const v of VOCABS) {
  conformanceTest(
    `vocab ${v}: GGUF → tokenizer.json → GGUF tokenizes llama.cpp's test inputs as llama.cpp`,
    async () => {
      const base = fixture("gguf/llama.cpp-vocab", `ggml-vocab-${v}.gguf`);
      const inputs = (await Deno.readTextFile(`${base}.inp`)).split(
        "\n__ggml_vocab_test__\n",
      );
      inputs[inputs.length - 1] = inputs[inputs.length - 1].replace(/\n$/, "");
      const outputs = (await Deno.readTextFile(`${base}.out`)).split("\n");
      const md = (await readGguf(memorySource(await Deno.readFile(base))))
        .models[0].metadata;
      const { tokenizer, tokenizerConfig } = tokenizerJsonFromGguf(md);
      const viaJson = createTokenizer(tokenizer, { config: tokenizerConfig });
      const back = ggufVocabFromTokenizerJson(tokenizer, { tokenizerConfig });
      if (md["tokenizer.ggml.model"] === "gpt2") {
        assertEquals(
          back.values["tokenizer.ggml.pre"],
          md["tokenizer.ggml.pre"],
        );
      }
      const tokens = md["tokenizer.ggml.tokens"] as string[];
      const backTokens = back.values["tokenizer.ggml.tokens"] as string[];
      assertEquals(backTokens.length, tokens.length);
      const firstDiff = tokens.findIndex((t, i) => backTokens[i] !== t);
      assertEquals(firstDiff, -1, `token ${firstDiff} differs`);
      const viaGguf = createTokenizer(back.values);
      let pass = 0;
      inputs.forEach((text, i) => {
        const want = outputs[i].trim();
        const a = viaJson.encode(text, { addSpecial: false }).join(" ");
        const b = viaGguf.encode(text, { addSpecial: false }).join(" ");
        assertEquals(
          a,
          want,
          `tokenizer.json, input ${i} ${JSON.stringify(text)}`,
        );
        assertEquals(
          b,
          want,
          `back to GGUF, input ${i} ${JSON.stringify(text)}`,
        );
        pass++;
      });
      console.log(`${v}: ${pass}/${inputs.length} inputs both ways`);
    },
  );
}
