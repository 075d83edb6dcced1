// llama.cpp through node-llama-cpp (its prebuilt CPU binaries, which pick
// the CPU variant at start), driven line by line from bench/*_compare.ts so
// that the two sides can alternate round by round in one run. Reads JSON
// commands from stdin, one per line, and answers one JSON line each:
//
//   {"op":"load","path":"m.gguf","threads":2,"ctx":512,"batch":512}
//   {"op":"prefill","tokens":[1,2,...]}   → {"ms":...}  (fresh sequence)
//   {"op":"decode","tokens":[1],"n":64}   → {"ms":...,"ids":[...]}  (greedy)
//   {"op":"quit"}
//
// Run through `NODE_PATH=/path/to/node_modules node bench/_nlc_peer.mjs`.

import { createInterface } from "node:readline";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { getLlama } = await import(require.resolve("node-llama-cpp"));
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
let model, ctx, seq;

const reply = (o) => process.stdout.write(JSON.stringify(o) + "\n");

async function fresh() {
  await seq.clearHistory();
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  try {
    if (cmd.op === "load") {
      if (ctx) await ctx.dispose();
      if (model) await model.dispose();
      model = await llama.loadModel({ modelPath: cmd.path });
      ctx = await model.createContext({
        contextSize: cmd.ctx ?? 512,
        batchSize: cmd.batch ?? 512,
        threads: { ideal: cmd.threads, min: cmd.threads },
      });
      seq = ctx.getSequence();
      reply({ ok: true, cpu: llama.cpuMathCores, gpu: llama.gpu });
    } else if (cmd.op === "prefill") {
      await fresh();
      const t0 = performance.now();
      await seq.evaluateWithoutGeneratingNewTokens(cmd.tokens);
      reply({ ms: performance.now() - t0 });
    } else if (cmd.op === "decode") {
      await fresh();
      const ids = [];
      const it = seq.evaluate(cmd.tokens, {
        temperature: 0,
        tokenBias: undefined,
      });
      // the first step includes the prompt; time the n after it
      let t0 = 0;
      for await (const tok of it) {
        if (ids.length === 0) t0 = performance.now();
        ids.push(tok);
        if (ids.length > cmd.n) break;
      }
      const ms = performance.now() - t0;
      reply({ ms, ids: ids.slice(0, cmd.n) });
    } else if (cmd.op === "quit") {
      reply({ ok: true });
      break;
    }
  } catch (e) {
    reply({ error: String(e?.stack ?? e) });
  }
}
if (ctx) await ctx.dispose();
if (model) await model.dispose();
await llama.dispose();
process.exit(0);
