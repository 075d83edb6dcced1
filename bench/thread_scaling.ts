// 1 → 2 thread scaling of decode, ours and llama.cpp's (node-llama-cpp,
// bench/_nlc_peer.mjs), on one GGUF file: four sides (ours 1 thread, ours
// 2, llama.cpp 1, llama.cpp 2; llama.cpp as two processes, one per thread
// count) take turns round by round, the order reversed every other round.
// Prints per side the median wall and CPU ms per decoded token (CPU: the
// process's user + system time, all its threads) and, per round, the
// scaling: 1-thread time ÷ 2-thread time, in wall time and in tokens per
// CPU second, with the medians over rounds.
//
//   NODE_PATH=/work/nlc/node_modules deno run -A bench/thread_scaling.ts \
//     MODEL.gguf [--rounds 7] [--decode 16]
//
// A shared machine's other tenants take cores away at random, which the
// 2-thread wall times feel most: read the load printed beside the numbers.

import process from "node:process";
import { memorySource } from "../core/sources.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import { configureKernels, shutdownKernels } from "../kernels/fast/runtime.ts";
import { cpuLine, median, NlcPeer } from "./_peer.ts";
import { argmax } from "./_decode.ts";

const [file, ...rest] = Deno.args;
const opt: Record<string, string> = { rounds: "7", decode: "16" };
for (let i = 0; i < rest.length; i += 2) {
  opt[rest[i].replace(/^--/, "")] = rest[i + 1];
}
const D = Number(opt.decode), rounds = Number(opt.rounds);
const prompt = [5, 6, 7, 8];

console.log(cpuLine());
const model = await transformerFromGguf(
  await readGguf(memorySource(await Deno.readFile(file))),
);
const selfCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** Our decode of `n` tokens after the prompt: [wall ms, cpu ms] per token. */
async function ours(threads: number, n: number): Promise<[number, number]> {
  // workers stay up between this side's turns only through the round
  await configureKernels({ threads, idleMs: 60_000 });
  const s = model.createState();
  let lg = model.forward(prompt, s);
  for (let i = 0; i < 2; i++) lg = model.forward([argmax(lg)], s); // workers up
  const c0 = selfCpu(), t0 = performance.now();
  for (let i = 0; i < n; i++) lg = model.forward([argmax(lg)], s);
  return [(performance.now() - t0) / n, (selfCpu() - c0) / n];
}
const peers: (NlcPeer | undefined)[] = [
  await NlcPeer.start(),
  await NlcPeer.start(),
];
if (peers[0] && peers[1]) {
  await peers[0].load(file, 1, 256, 256);
  await peers[1].load(file, 2, 256, 256);
  console.log(`llama.cpp CPU variant: ${peers[0].cpuVariant() || "?"}`);
} else console.log("peer: none (node-llama-cpp missing)");
async function theirs(threads: number, n: number): Promise<[number, number]> {
  const p = peers[threads - 1]!;
  const c0 = p.cpuMs();
  const r = await p.decode(prompt, n);
  return [r.ms / n, (p.cpuMs() - c0) / n];
}
const sides = [
  { name: "ours, 1 thread", run: () => ours(1, D) },
  { name: "ours, 2 threads", run: () => ours(2, D) },
  ...(peers[0]
    ? [
      { name: "llama.cpp, 1 thread", run: () => theirs(1, D) },
      { name: "llama.cpp, 2 threads", run: () => theirs(2, D) },
    ]
    : []),
];
for (const s of sides) await s.run(); // warm
const wall = sides.map(() => [] as number[]);
const cpu = sides.map(() => [] as number[]);
for (let r = 0; r < rounds; r++) {
  const order = sides.map((_, i) => i);
  if (r % 2) order.reverse();
  for (const i of order) {
    const [w, c] = await sides[i].run();
    wall[i].push(w);
    cpu[i].push(c);
  }
}
console.log(
  `${rounds} rounds, ${D} decoded tokens after ${prompt.length}; ${cpuLine()}`,
);
sides.forEach((s, i) =>
  console.log(
    `${s.name.padEnd(22)} wall ${median(wall[i]).toFixed(2)} ms/tok (${
      wall[i].map((x) => x.toFixed(1)).join(" ")
    }), cpu ${median(cpu[i]).toFixed(2)} ms/tok`,
  )
);
for (let k = 0; k + 1 < sides.length; k += 2) {
  const w = wall[k].map((x, r) => x / wall[k + 1][r]);
  const c = cpu[k].map((x, r) => x / cpu[k + 1][r]);
  console.log(
    `${sides[k].name.split(",")[0]}: 1 → 2 threads ×${
      median(w).toFixed(2)
    } wall (rounds ${w.map((x) => x.toFixed(2)).join(" ")}), ×${
      median(c).toFixed(2)
    } tokens per CPU second`,
  );
}
for (const p of peers) await p?.close();
await shutdownKernels();
