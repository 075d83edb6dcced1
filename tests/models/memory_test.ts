/**
 * What a loaded quantized model holds: a generated Llama model written as
 * Q4_0 / Q8_0 GGUF by our writer and loaded with `loadTransformer` keeps
 * its quantized matrices once, in kernel memory, where the fast kernels
 * read them in ggml's block layout — no second (repacked) copy after a
 * forward pass — so the whole process holds ~4.5 / ~8.5 bits per weight.
 * Logits are bit-identical to the same model whose bytes live outside
 * kernel memory (the kernels then copy them in once, unchanged).
 */

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { writeGgufBytes } from "../../formats/gguf/mod.ts";
import { loadTransformer } from "../../io/transformer.ts";
import { kernelCopyBytes, kernelInfo } from "../../kernels/fast/runtime.ts";
import {
  buildTransformer,
  hfToGguf,
  type Transformer,
} from "../../models/mod.ts";
import { llamaModelFile, llamaTensors } from "../_helpers/llama.ts";

const CONFIG = {
  model_type: "llama",
  vocab_size: 512,
  hidden_size: 256,
  intermediate_size: 512,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 256,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  tie_word_embeddings: true,
  hidden_act: "silu",
};

/** GGUF bytes of a small random Llama model, quantized on write. */
async function ggufOf(quantize: "Q4_0" | "Q8_0"): Promise<Uint8Array> {
  const kv = (CONFIG.hidden_size / CONFIG.num_attention_heads) *
    CONFIG.num_key_value_heads;
  let seed = 1;
  const file = hfToGguf({
    config: CONFIG,
    model: llamaModelFile(
      llamaTensors(
        CONFIG,
        kv,
        (i, _r, cols) => Math.sin(0.37 * i + seed++) / Math.sqrt(cols),
      ),
    ),
  });
  return await writeGgufBytes(file, { quantize });
}

/** The same model with every tensor's bytes copied to a plain array. */
function outsideKernelMemory(model: Transformer): Transformer {
  const copies = new Map<Uint8Array, Uint8Array>(); // a tied lm_head stays tied
  const plain = new Map(
    [...model.tensors].map((
      [n, t],
    ) => [n, {
      ...t,
      bytes: copies.get(t.bytes) ??
        copies.set(t.bytes, t.bytes.slice()).get(t.bytes)!,
    }]),
  );
  return buildTransformer(model.config, plain);
}

for (
  const [quantize, blockBytes, limit] of [
    ["Q4_0", 18, 4.6],
    ["Q8_0", 34, 8.6],
  ] as const
) {
  Deno.test(`a ${quantize} model holds its blocks once: ≤ ${limit} bits per weight in all, logits unchanged`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "modelhost-mem-" });
    try {
      const path = join(dir, `m-${quantize}.gguf`);
      await Deno.writeFile(path, await ggufOf(quantize));
      const model = await loadTransformer(path);
      const ids = [1, 17, 300, 42, 7];
      const logits = model.forward(ids, model.createState(), {
        allPositions: true,
      });
      const mem = model.memory();
      const q = mem.byDtype[quantize];
      assertEquals(q.bytes, (q.parameters / 32) * blockBytes);
      // the kernels made no copy of any weight: all matrices are quantized
      // and were read where the loader put them
      assertEquals(mem.kernelCopyBytes, 0);
      for (const t of model.tensors.values()) {
        assertEquals(kernelCopyBytes(t.bytes), 0, t.name);
      }
      assert(
        mem.totalBitsPerWeight <= limit,
        `${mem.totalBitsPerWeight} bits per weight`,
      );
      assertEquals(mem.totalBitsPerWeight, mem.bitsPerWeight);

      // the same bytes outside kernel memory: copied in once, same logits
      const before = kernelInfo().residentBytes;
      const copy = outsideKernelMemory(model);
      const again = copy.forward(ids, copy.createState(), {
        allPositions: true,
      });
      assertEquals(again, logits);
      const copies = copy.memory().kernelCopyBytes;
      assertEquals(copies, q.bytes);
      assertEquals(kernelInfo().residentBytes - before, copies);
      assert(
        copy.memory().totalBitsPerWeight >
          mem.bitsPerWeight + 0.99 * (blockBytes * 8) / 32,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
