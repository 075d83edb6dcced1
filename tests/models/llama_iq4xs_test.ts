/**
 * Generation from a GGUF holding IQ4_XS weights: a synthetic Llama of real
 * widths (dim 256, FFN 512) whose 2-D weights ggml quantized to IQ4_XS,
 * greedy-decoded from two prompts, gives llama.cpp's ids
 * (`tests/vectors/gen/llama_iq4xs.py`, node-llama-cpp 3.22.1). The same F32
 * weights requantized by modelhost give ggml's bytes.
 */

import { assertEquals } from "@std/assert";
import { loadTransformer } from "../../io/transformer.ts";
import { generate } from "../../models/mod.ts";
import { shutdownKernels } from "../../kernels/fast/runtime.ts";

const VEC = new URL("../vectors/", import.meta.url);

Deno.test("llama IQ4_XS: greedy ids from a GGUF of IQ4_XS weights equal llama.cpp's", async () => {
  const exp = JSON.parse(
    await Deno.readTextFile(new URL("llama_iq4xs.json", VEC)),
  ) as { cases: { prompt: number[]; greedy: number[] }[] };
  const model = await loadTransformer(
    new URL("llama_iq4xs.gguf", VEC).pathname,
  );
  try {
    for (const c of exp.cases) {
      const ids: number[] = [];
      for await (
        const t of generate(model, c.prompt, {
          greedy: true,
          maxTokens: c.greedy.length,
          stopAtEos: false,
        })
      ) ids.push(t.id);
      assertEquals(ids, c.greedy, `prompt ${c.prompt}`);
    }
  } finally {
    await shutdownKernels();
  }
});
