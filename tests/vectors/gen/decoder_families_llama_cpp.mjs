// llama.cpp's greedy tokens on our GGUF exports of the tiny family
// checkpoints (tests/vectors/families/*), through node-llama-cpp (its
// prebuilt CPU llama.cpp). The GGUF files are the ones modelhost's
// converter writes (`hfToGguf` + `writeGguf`, F32): make them first with
//   deno run -A tests/vectors/gen/decoder_families_gguf.ts /tmp/families-gguf
// then
//   NODE_PATH=/work/nlc/node_modules node tests/vectors/gen/decoder_families_llama_cpp.mjs /tmp/families-gguf
// For each case: the prompt ids of tests/vectors/decoder_families.json
// are evaluated and 32 tokens taken greedily (temperature 0, no stop
// token, EOS included; llama.cpp pads the context to 256 tokens, within
// phi3-longrope's original length, so it runs the short rope factors as
// transformers does), with the three most likely tokens and their
// probabilities at each step. Writes
// tests/vectors/decoder_families_llama_cpp.json.

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { getLlama } = await import(require.resolve("node-llama-cpp"));
const dir = process.argv[2];
if (!dir) throw new Error("usage: node decoder_families_llama_cpp.mjs GGUF_DIR");
const vec = JSON.parse(readFileSync("tests/vectors/decoder_families.json", "utf8"));
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const cases = [];
for (const c of vec.cases) {
  let model;
  try {
    model = await llama.loadModel({ modelPath: join(dir, `${c.name}.gguf`) });
  } catch (e) {
    console.log(c.name, "llama.cpp cannot load it:", e.message);
    cases.push({ name: c.name, error: String(e.message) });
    continue;
  }
  const ctx = await model.createContext({ contextSize: 64, threads: 1, batchSize: 64 });
  const seq = ctx.getSequence();
  const ids = [];
  const top = [];
  for await (
    const out of seq.evaluateWithMetadata(c.prompt, { probabilities: true }, {
      temperature: 0,
      yieldEogToken: true,
    })
  ) {
    ids.push(out.token);
    // the three most likely next tokens with their probabilities
    top.push(
      [...out.probabilities.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3)
        .map(([t, p]) => [Number(t), p]),
    );
    if (ids.length === 32) break;
  }
  cases.push({ name: c.name, greedy: ids.map(Number), top });
  console.log(c.name, ids.join(","), ids.join() === c.greedy.join() ? "= transformers" : "!= transformers");
  await ctx.dispose();
  await model.dispose();
}
writeFileSync(
  "tests/vectors/decoder_families_llama_cpp.json",
  JSON.stringify({
    generator: "tests/vectors/gen/decoder_families_llama_cpp.mjs",
    library: `node-llama-cpp ${JSON.parse(
      readFileSync(join(dirname(require.resolve("node-llama-cpp")), "..", "package.json"), "utf8"),
    ).version}`,
    cases,
  }) + "\n",
);
