// Greedy ids from llama.cpp (node-llama-cpp's prebuilt CPU library, one
// thread, F32 KV cache) for a GGUF Llama (argv[2]); run by llama_iq4xs.py
// and iq_llama_quantize.py, prints JSON.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { getLlama } = await import(require.resolve("node-llama-cpp"));
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath: process.argv[2] });
const ctx = await model.createContext({
  contextSize: 256,
  threads: 1,
  batchSize: 64,
  flashAttention: false,
  experimentalKvCacheKeyType: "F32",
  experimentalKvCacheValueType: "F32",
});
const seq = ctx.getSequence();
const prompts = [[1], [1, ...model.tokenize("Once upon a time")]];
const out = [];
for (const prompt of prompts) {
  await seq.clearHistory();
  const ids = [];
  for await (const t of seq.evaluate(prompt, { temperature: 0 })) {
    ids.push(t);
    if (ids.length === 32) break;
  }
  out.push({ prompt, greedy: ids });
}
const version = JSON.parse(
  readFileSync(join(dirname(require.resolve("node-llama-cpp")), "..", "package.json"), "utf8"),
).version;
console.log(JSON.stringify({ generator: "tests/vectors/gen/llama_iq4xs.py", library: `node-llama-cpp ${version}`, cases: out }));
