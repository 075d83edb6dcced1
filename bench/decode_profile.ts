// Where one decode token's time goes: every kernel call of the engine is
// timed by a wrapper (per export: ms per token, calls per token, share),
// and what is left of the token's wall time is JavaScript between the
// kernels (the layers, the dispatch, the copies) plus the wait for the
// pool's workers inside `run`.
//
//   deno run -A bench/decode_profile.ts MODEL.gguf [threads=1] [tokens=32]
//
// The wrappers cost about a microsecond a call; the CPU time printed is
// this process's (all threads), measured over the same tokens.

import process from "node:process";
import { memorySource } from "../core/sources.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import { configureKernels, shutdownKernels } from "../kernels/fast/runtime.ts";
import { getEngine } from "../kernels/wasm/_engine.ts";
import { argmax } from "./_decode.ts";

const [file, threads = "1", N = "32"] = Deno.args;
await configureKernels({ threads: Number(threads) });
const model = await transformerFromGguf(
  await readGguf(memorySource(await Deno.readFile(file))),
);
const e = getEngine()!;
const times = new Map<string, [number, number]>();
let on = false;
const note = (k: string, t: number) => {
  const v = times.get(k) ?? [0, 0];
  v[0] += t;
  v[1]++;
  times.set(k, v);
};
for (const [k, f] of Object.entries(e.fn)) {
  e.fn[k] = (...a: number[]) => {
    if (!on) return f(...a);
    const t0 = performance.now();
    f(...a);
    note(k, performance.now() - t0);
  };
}
const run = e.run.bind(e);
e.run = (...a: Parameters<typeof run>) => {
  if (!on) return run(...a);
  const t0 = performance.now();
  run(...a);
  note(`run:${a[0]}`, performance.now() - t0);
};
const warm = model.createState();
let lg = model.forward([5, 6, 7, 8], warm);
for (let i = 0; i < 64; i++) lg = model.forward([argmax(lg)], warm);
const st = model.createState();
lg = model.forward([5, 6, 7, 8], st);
on = true;
const n = Number(N);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < n; i++) lg = model.forward([argmax(lg)], st);
const tot = performance.now() - t0;
const cu = process.cpuUsage(cpu0);
on = false;
const load = (await Deno.readTextFile("/proc/loadavg").catch(() => "?"))
  .split(" ").slice(0, 3).join(" ");
console.log(
  `${file}, ${threads} thread(s), load ${load}; cpu ${
    ((cu.user + cu.system) / 1000 / n).toFixed(3)
  } ms/tok (all threads)`,
);
let inK = 0;
for (const [k, [t, c]] of [...times].sort((a, b) => b[1][0] - a[1][0])) {
  if (!k.startsWith("run:")) inK += t;
  console.log(
    `${k.padEnd(22)} ${(t / n).toFixed(3)} ms/tok  ${
      (c / n).toFixed(1)
    } calls/tok  ${(100 * t / tot).toFixed(1)}%`,
  );
}
console.log(
  `wall ${(tot / n).toFixed(3)} ms/tok; in direct kernel calls ${
    (inK / n).toFixed(3)
  }; the rest (JavaScript, pool waits) ${((tot - inK) / n).toFixed(3)}`,
);
await shutdownKernels();
