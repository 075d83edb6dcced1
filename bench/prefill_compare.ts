// Prefill of a T-token prompt (default 128) on a SmolLM-135M-shaped Llama
// (random weights, our own GGUF writer) against llama.cpp through
// node-llama-cpp (bench/_nlc_peer.mjs), the two sides alternating round by
// round in one run; median of the per-round ratios, stalled rounds (a side
// slower than twice its own median) reported apart.
//
//   NODE_PATH=/work/nlc/node_modules deno run -A bench/prefill_compare.ts \
//     [--types Q8_0,Q4_0] [--tokens 128] [--rounds 7] [--threads 2]
//
// Without node-llama-cpp only our side runs.

import { memorySource } from "../core/sources.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../kernels/fast/runtime.ts";
import { SMOLLM_135M, smolLmShapeGguf } from "./_decode.ts";
import process from "node:process";
import { cpuLine, NlcPeer, summarize } from "./_peer.ts";

const selfCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const args: Record<string, string> = {
  types: "Q8_0,Q4_0",
  tokens: "128",
  rounds: "7",
  threads: "2",
};
for (let i = 0; i < Deno.args.length; i += 2) {
  args[Deno.args[i].replace(/^--/, "")] = Deno.args[i + 1];
}
const T = Number(args.tokens), rounds = Number(args.rounds);
const threads = Number(args.threads);

await configureKernels({ threads });
console.log(cpuLine());
console.log(`kernels: ${JSON.stringify(kernelInfo())}`);
const peer = await NlcPeer.start();
console.log(peer ? "peer: llama.cpp via node-llama-cpp" : "peer: none");

const prompt = Array.from({ length: T }, (_, i) => 2 + ((i * 7919) % 40000));
for (const type of args.types.split(",") as ("Q8_0" | "Q4_0" | "F32")[]) {
  const path = `${
    Deno.env.get("TMPDIR") ?? "/tmp"
  }/modelhost-smollm-${type}.gguf`;
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch {
    bytes = await smolLmShapeGguf(type, 1, SMOLLM_135M);
    await Deno.writeFile(path, bytes);
  }
  const model = await transformerFromGguf(await readGguf(memorySource(bytes)));
  const ac: number[] = [], bc: number[] = [];
  const ours = () => {
    const st = model.createState();
    const c0 = selfCpu(), t0 = performance.now();
    model.forward(prompt, st);
    const ms = performance.now() - t0;
    ac.push(selfCpu() - c0);
    return ms;
  };
  const theirs = async () => {
    const c0 = peer!.cpuMs();
    const ms = await peer!.prefill(prompt);
    bc.push(peer!.cpuMs() - c0);
    return ms;
  };
  ours();
  ours(); // warm: compiled kernels, resident weights, workers up
  if (peer) {
    await peer.load(path, threads, 512, 512);
    await theirs();
  }
  ac.length = bc.length = 0;
  const a: number[] = [], b: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // sides alternate, and which goes first alternates too
    const first = r % 2 === 0;
    if (first) a.push(ours());
    if (peer) b.push(await theirs());
    if (!first) a.push(ours());
  }
  const s = summarize(a, b, (ms) => (T * 1000) / ms);
  const c = summarize(ac, bc, (ms) => (T * 1000) / ms);
  console.log(
    `prefill ${T} tokens, ${type}, ${threads} threads: ours ${s.ours} tok/s` +
      (peer ? `, llama.cpp ${s.peer} tok/s, ratio ${s.ratio}` : "") +
      (s.stalled ? ` (${s.stalled})` : ""),
  );
  console.log(
    `  per CPU second: ours ${c.ours} tok/s` +
      (peer ? `, llama.cpp ${c.peer} tok/s, ratio ${c.ratio}` : ""),
  );
}
await peer?.close();
await shutdownKernels();
