// Embedding vectors of stories260K from llama.cpp, through node-llama-cpp
// (its prebuilt CPU binaries): the last token's hidden state after the
// final norm, for the inputs below and every prefix of their token lists
// (by causality, the mean of a sequence's hidden states is the mean over
// its prefixes' last-token states). tests/models/embed_test.ts reads it.
//
// Run from the repository root, with node-llama-cpp installed where node
// finds it (e.g. `npm i node-llama-cpp@3.22.1` in a folder, then
// NODE_PATH=that/node_modules):
//   NODE_PATH=/tmp/nlc/node_modules node tests/vectors/gen/embed_llama_cpp.mjs
// Writes tests/vectors/embed_llama_cpp.json.

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { getLlama } = await import(require.resolve("node-llama-cpp"));
const MODEL = "../shared/fixtures/gguf/stories260K.gguf";
const TEXTS = ["Once upon a time", "The cat sat on the mat.", "Lily"];

const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath: MODEL });
const ctx = await model.createEmbeddingContext({ contextSize: 256, threads: 1 });
const inputs = [];
for (const text of TEXTS) {
  const ids = [model.tokens.bos, ...model.tokenize(text)];
  const prefixes = [];
  for (let n = 1; n <= ids.length; n++) {
    const e = await ctx.getEmbeddingFor(ids.slice(0, n));
    prefixes.push(Array.from(e.vector));
  }
  inputs.push({ text, ids, prefixLast: prefixes });
}
writeFileSync(
  "tests/vectors/embed_llama_cpp.json",
  JSON.stringify({
    generator: "tests/vectors/gen/embed_llama_cpp.mjs",
    library: `node-llama-cpp ${JSON.parse(
      readFileSync(
        join(dirname(require.resolve("node-llama-cpp")), "..", "package.json"),
        "utf8",
      ),
    ).version}`,
    model: "stories260K.gguf",
    inputs,
  }) + "\n",
);
console.log(`wrote ${inputs.length} inputs`);
