/**
 * Q8_0 GGUF exports of the decoder_block families (gemma, gemma2,
 * gemma3_text, phi3, phi, gpt2, stablelm, starcoder2) against llama.cpp
 * running the same files (node-llama-cpp,
 * tests/vectors/gen/decoder_families_llama_cpp.mjs with `q8_0`, on
 * decoder_families_gguf.ts's `Q8_0` export): our greedy tokens from our
 * Q8_0 export equal llama.cpp's, up to a step where llama.cpp's two most
 * likely tokens are within 2% of each other, where ours must be one of the
 * two; fed llama.cpp's tokens, our next-token probabilities equal its three
 * most likely ones within 2.5e-2 (measured ≤ 2.2e-2; 2.3e-2 with the
 * weights widened to F32 instead of running llama.cpp's Q8_0 activation
 * rule: these tiny random models move that much from one Q8_0 activation
 * code landing the other way, and llama.cpp's KV cache is float16).
 * Checkpoints whose rows are not a multiple of 32 stay F16 in both
 * converters (llama.cpp's fallback), so they check the F16 path.
 * phi3-longrope-long's prompt (12) is longer than its original context (8)
 * and llama.cpp's context (64) too, so both run the long factors there.
 */

import { assert } from "@std/assert";
import { join } from "@std/path";
import { convertHfToGguf, loadTransformer } from "../../io/mod.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import {
  assertMatchesLlamaCpp,
  type LlamaCppCase,
  llamaCppRef,
  readVectors,
} from "../_helpers/llama_cpp_decoders.ts";

interface Case {
  name: string;
  folder: string;
  prompt: number[];
}

const vectors = await readVectors<{ cases: Case[] }>(
  "tests/vectors/decoder_families.json",
);
const llamaCpp = await readVectors<{ cases: LlamaCppCase[] }>(
  "tests/vectors/decoder_families_llama_cpp_q8_0.json",
);

for (const c of vectors.cases) {
  Deno.test(`${c.name}: a Q8_0 GGUF generates llama.cpp's greedy tokens`, async (t) => {
    const ref = llamaCppRef(llamaCpp.cases, c.name);
    const dir = await Deno.makeTempDir({ prefix: `dec-q8-${c.name}-` });
    try {
      const out = join(dir, "m.gguf");
      await convertHfToGguf(join(REPO_ROOT, c.folder), out, {
        name: "tiny",
        quantize: "Q8_0",
      });
      const model = await loadTransformer(out);
      if (model.config.hiddenSize % 32 === 0) {
        assert(
          [...model.tensors.values()].some((x) => x.dtype === "Q8_0"),
          "weights kept as Q8_0",
        );
      }
      await assertMatchesLlamaCpp(t, c.name, model, c.prompt, ref, 2.5e-2);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
