// llama.cpp's greedy continuation of the families' prompt on our GGUF export
// of every checkpoint in tests/vectors/families/, through node-llama-cpp's
// prebuilt CPU binaries. Run from the repository root:
//
//   NODE_PATH=/work/nlc/node_modules node tests/vectors/gen/model_families_llamacpp.mjs
//
// It runs tests/vectors/gen/model_families_gguf.ts (deno) to write the GGUF
// files (F32, and Q8_0 for the mixture-of-experts checkpoints) into a
// temporary folder (Q4_0 too for the mixtures of experts), evaluates the prompt ids of tests/vectors/model_families.json
// and takes 32 greedy tokens (temperature 0, no BOS added), and writes
// tests/vectors/model_families_llamacpp.json: { "<case>.<f32|q8_0|q4_0>": ids }.
// With an argument FILE.gguf it prints that file's greedy ids instead
// (tests/models/model_families_llamacpp_test.ts runs it live that way).
import { createRequire } from "node:module";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";

const require = createRequire(import.meta.url);
const { getLlama } = await import(require.resolve("node-llama-cpp"));
const GREEDY = 32;
const prompt = JSON.parse(readFileSync("tests/vectors/model_families.json", "utf8")).prompt;
const llama = await getLlama({ gpu: false, build: "never", logLevel: process.env.LLAMA_LOG ?? "error" });

async function greedy(path) {
  const model = await llama.loadModel({ modelPath: path });
  // an F32 KV cache, as ours is (llama.cpp defaults to F16)
  const ctx = await model.createContext({
    contextSize: 128,
    threads: 1,
    experimentalKvCacheKeyType: "F32",
    experimentalKvCacheValueType: "F32",
  });
  const seq = ctx.getSequence();
  const ids = [];
  for await (const t of seq.evaluate(prompt, { temperature: 0 })) {
    ids.push(t);
    if (ids.length === GREEDY) break;
  }
  await ctx.dispose();
  await model.dispose();
  return ids;
}

const single = process.argv[2];
if (single) {
  console.log(JSON.stringify(await greedy(single)));
} else {
  const dir = mkdtempSync(join(tmpdir(), "families-gguf-"));
  try {
    execFileSync("deno", ["run", "-A", "tests/vectors/gen/model_families_gguf.ts", dir], { stdio: "inherit" });
    const out = {
      generator: "tests/vectors/gen/model_families_llamacpp.mjs",
      library: `node-llama-cpp ${JSON.parse(readFileSync(require.resolve("node-llama-cpp").replace(/dist\/.*$/, "package.json"), "utf8")).version}`,
      prompt,
      greedy: {},
    };
    for (const f of readdirSync(dir).filter((f) => f.endsWith(".gguf")).sort()) {
      // null: llama.cpp refuses the file
      out.greedy[f.replace(/\.gguf$/, "")] = await greedy(join(dir, f)).catch(() => null);
      console.log(f, out.greedy[f.replace(/\.gguf$/, "")]?.slice(0, 8) ?? "refused");
    }
    writeFileSync("tests/vectors/model_families_llamacpp.json", JSON.stringify(out, null, 1) + "\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
