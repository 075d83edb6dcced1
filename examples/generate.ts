/**
 * Generates text with a Llama-family model, streaming tokens to stdout.
 *
 *   deno run -A examples/generate.ts [model] [prompt] [--chat] [--max N] [--temp T] [--top-k K] [--top-p P] [--seed S]
 *
 * `model` is a Hugging Face folder (config.json, *.safetensors,
 * tokenizer.json) or a GGUF file; by default the stories260K fixture.
 * `--chat` sends the prompt as a user message through the model's chat
 * template. `--temp 0` is greedy decoding.
 */

import { parseArgs } from "@std/cli";
import { loadTransformer } from "../io/transformer.ts";
import { generate, type GenerateResult } from "../models/mod.ts";

const args = parseArgs(Deno.args, {
  boolean: ["chat"],
  string: ["max", "temp", "top-k", "top-p", "seed"],
  default: {
    max: "128",
    temp: "0.8",
    "top-k": "40",
    "top-p": "0.95",
    seed: "1",
  },
});
const path = String(
  args._[0] ??
    new URL("../../shared/fixtures/gguf/stories260K.gguf", import.meta.url)
      .pathname,
);
const prompt = String(args._[1] ?? "Once upon a time");

const t0 = performance.now();
const model = await loadTransformer(path);
const mem = model.memory();
console.error(
  `${model.name}: ${model.config.family}, ${model.config.numLayers} blocks, hidden ${model.config.hiddenSize}, vocab ${model.config.vocabSize}; ` +
    `${(mem.parameters / 1e6).toFixed(2)} M weights in ${
      (mem.weightBytes / 2 ** 20).toFixed(1)
    } MiB (${mem.bitsPerWeight.toFixed(2)} bits/weight), loaded in ${
      (performance.now() - t0).toFixed(0)
    } ms`,
);

const enc = new TextEncoder();
if (!args.chat) await Deno.stdout.write(enc.encode(prompt));
const it = generate(
  model,
  args.chat ? [{ role: "user", content: prompt }] : prompt,
  {
    maxTokens: Number(args.max),
    temperature: Number(args.temp),
    topK: Number(args["top-k"]),
    topP: Number(args["top-p"]),
    seed: Number(args.seed),
  },
);
let result: GenerateResult;
while (true) {
  const r = await it.next();
  if (r.done) {
    result = r.value;
    break;
  }
  await Deno.stdout.write(enc.encode(r.value.text));
}
console.log();
console.error(
  `prompt ${result.promptIds.length} tokens in ${
    result.prefillMs.toFixed(0)
  } ms, ` +
    `${result.ids.length} generated in ${result.decodeMs.toFixed(0)} ms (${
      (result.ids.length / (result.decodeMs / 1000)).toFixed(1)
    } tokens/s); stopped: ${result.finishReason}`,
);
