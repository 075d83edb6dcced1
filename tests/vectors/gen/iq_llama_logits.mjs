// Raw logits from llama.cpp (node-llama-cpp's prebuilt CPU library, one
// thread, F32 KV cache) at every position of a prompt, for a GGUF
// (argv[2]) and a prompt of token ids (argv[3], JSON); run by
// iq_llama_logits.ts, prints JSON.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { getLlama } = await import(require.resolve("node-llama-cpp"));
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath: process.argv[2] });
const prompt = JSON.parse(process.argv[3]);
const ctx = await model.createContext({
  contextSize: 64,
  threads: 1,
  batchSize: 64,
  flashAttention: false,
  experimentalKvCacheKeyType: "F32",
  experimentalKvCacheValueType: "F32",
});
const seq = ctx.getSequence();
const res = await seq.controlledEvaluate(
  prompt.map((t) => [t, { generateNext: { logits: true } }]),
);
const n = res[0].next.logits.size; // every token of the vocabulary
const logits = res.map((r) => {
  const row = new Array(n).fill(null);
  for (const [tok, v] of r.next.logits) row[tok] = Math.fround(v);
  return row;
});
const version = JSON.parse(
  readFileSync(join(dirname(require.resolve("node-llama-cpp")), "..", "package.json"), "utf8"),
).version;
console.log(JSON.stringify({ library: `node-llama-cpp ${version}`, logits }));
