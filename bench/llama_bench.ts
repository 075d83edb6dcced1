/**
 * Llama-family inference benchmarks: prefill of 64 tokens and one decode
 * step for stories260K in F32 (baseline), F16, Q8_0 and Q4_0, and for a
 * generated model of SmolLM-135M's shape (random weights) in F32 (baseline)
 * and Q8_0: prefill of 8 tokens and one decode step after them.
 *
 *   deno bench -A bench/llama_bench.ts
 *   deno run -A bench/llama_compare.ts     # tokens/s, beside llama.cpp when LLAMA_CPP_BIN is set
 */

import { join } from "@std/path";
import type { Transformer, TransformerState } from "../models/mod.ts";
import {
  fixturesDir,
  modelFromGguf,
  promptOf,
  smolLmGguf,
  STORIES,
} from "./_llama_inputs.ts";

const fixtures = fixturesDir();

/** A state holding `prompt`, and a decode step that rewinds to it after each call. */
function decoder(model: Transformer, prompt: number[]) {
  const state: TransformerState = model.createState();
  model.forward(prompt, state);
  return () => {
    model.forward([prompt[prompt.length - 1]], state);
    state.tokens.pop();
    for (const l of state.layers) {
      const kv = l.kv as { length: number } | undefined;
      if (kv) kv.length = prompt.length;
    }
  };
}

if (fixtures) {
  const prompt = promptOf(64, 512);
  for (const [q, rel] of Object.entries(STORIES)) {
    const model = await modelFromGguf(await Deno.readFile(join(fixtures, rel)));
    const step = decoder(model, prompt);
    Deno.bench(`stories260K ${q} prefill, 64 tokens`, {
      group: "stories260K prefill",
      baseline: q === "F32",
    }, () => {
      model.forward(prompt, model.createState());
    });
    Deno.bench(`stories260K ${q} decode step, 64 cached`, {
      group: "stories260K decode",
      baseline: q === "F32",
    }, step);
  }
} else {
  console.error("fixtures not found: stories260K benchmarks skipped");
}

const smolPrompt = promptOf(8, 49152);
for (const q of [undefined, "Q8_0"] as const) {
  const model = await modelFromGguf(await smolLmGguf(q));
  const step = decoder(model, smolPrompt);
  Deno.bench(`SmolLM-135M shape ${q ?? "F32"} prefill, 8 tokens`, {
    group: "SmolLM-135M shape prefill",
    baseline: q === undefined,
    n: 3,
    warmup: 1,
  }, () => {
    model.forward(smolPrompt, model.createState());
  });
  Deno.bench(`SmolLM-135M shape ${q ?? "F32"} decode step, 8 cached`, {
    group: "SmolLM-135M shape decode",
    baseline: q === undefined,
    n: 5,
    warmup: 1,
  }, step);
}
