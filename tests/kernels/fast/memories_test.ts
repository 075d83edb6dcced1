/**
 * Weights in several WebAssembly memories (kernels/wasm/_shards.ts): a
 * small Q4_0/Q8_0 Llama model whose weights are forced into many memories
 * by a tiny per-memory share must give the very bits of the same model in
 * one memory, on one thread and on two.
 */

import { assert, assertEquals, assertThrows } from "@std/assert";
import { memorySource } from "../../../core/sources.ts";
import type { ModelFile } from "../../../core/model.ts";
import { readGguf, writeGgufBytes } from "../../../formats/gguf/mod.ts";
import { hfToGguf, transformerFromGguf } from "../../../models/mod.ts";
import {
  configureKernels,
  kernelCopyBytes,
  kernelInfo,
  shutdownKernels,
} from "../../../kernels/fast/mod.ts";
import { state } from "../../../kernels/fast/_dispatch.ts";
import {
  allocateWeightBytes,
  DEFAULT_WEIGHT_BYTES,
  shardState,
} from "../../../kernels/wasm/_shards.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";
import { llamaModelFile, llamaTensors } from "../../_helpers/llama.ts";

const CONFIG = {
  model_type: "llama",
  vocab_size: 96,
  hidden_size: 64,
  intermediate_size: 160,
  num_hidden_layers: 3,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  tie_word_embeddings: false,
};

function hfModel(): ModelFile {
  return llamaModelFile(
    llamaTensors(
      CONFIG,
      32,
      (i, _r, c, m) => Math.sin(i * 0.37 + m + 1) / Math.sqrt(c),
      true,
    ),
  );
}

async function gguf(quantize: "Q4_0" | "Q8_0"): Promise<ModelFile> {
  const file = hfToGguf({ config: CONFIG, model: hfModel() });
  return await readGguf(memorySource(await writeGgufBytes(file, { quantize })));
}

/** Logits of a 5-token prefill, then of 3 decoded tokens, concatenated. */
async function run(file: ModelFile): Promise<Float32Array> {
  const m = await transformerFromGguf(file);
  const st = m.createState();
  const out: number[] = [...m.forward([3, 14, 15, 9, 2], st)];
  for (const id of [26, 5, 35]) out.push(...m.forward([id], st));
  // quantized weights ran in place in whichever memory holds them
  for (const [name, w] of m.tensors) {
    if (w.dtype === "Q4_0" || w.dtype === "Q8_0") {
      assertEquals(kernelCopyBytes(w.bytes), 0, `${name} was copied`);
    }
  }
  return new Float32Array(out);
}

for (const quantize of ["Q4_0", "Q8_0"] as const) {
  Deno.test(`${quantize} weights in many memories give one memory's bits`, async () => {
    const e = getEngine();
    if (!e?.shared) {
      console.log("skipped: no shared WebAssembly memory here");
      return;
    }
    const file = await gguf(quantize);
    const one = await run(file);
    const before = kernelInfo().memories;
    const minWork = state.minParallelWork;
    try {
      // each Q4_0 matrix here is 2–6 KiB: about two per memory
      shardState.weightBytesPerMemory = 8192;
      const many = await run(file);
      const memories = kernelInfo().memories;
      assert(
        memories >= before + 8,
        `expected the weights in 8 or more further memories, got ${
          memories - before
        }`,
      );
      assertEquals(many, one);
      // two threads: every memory starts its own worker
      await configureKernels({ threads: 2, minParallelWork: 1 });
      const threaded = await run(file);
      assertEquals(threaded, one);
      assert(one.every(Number.isFinite));
    } finally {
      shardState.weightBytesPerMemory = DEFAULT_WEIGHT_BYTES;
      await configureKernels({ threads: 1, minParallelWork: minWork });
      await shutdownKernels();
    }
  });
}

Deno.test("a weight larger than one memory is refused with its size", () => {
  if (!getEngine()?.shared) return;
  assertThrows(
    () => allocateWeightBytes(2 ** 32),
    RangeError,
    "at most",
  );
});
