// Where the second thread's time goes in a 128-token prefill: every kernel
// call of the engine wrapped with a wall clock, per kernel name, split jobs
// (`Engine.run`) apart from calls on this thread alone, and the pool's own
// accounting (posting, own part, waiting for the worker; parts taken back).
// Also the round trip of an empty job and the time outside all kernels (the
// JavaScript between them). One thread and two alternate round by round.
//
//   deno run -A bench/prefill_split_probe.ts [--width 576] [--type Q8_0]
//     [--rounds 5] [--tokens 128] [--spin 20000] [--ways split|step]
//
// `--ways step` compares the block prefill step (layers/_block_prefill.ts)
// with the layer-by-layer path (`state.prefillStep` off) on 1 and 2
// threads instead of the ways of splitting the GEMMs.

import process from "node:process";
import { memorySource } from "../core/sources.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { state } from "../kernels/fast/_dispatch.ts";
import { configureKernels } from "../kernels/fast/runtime.ts";
import { getEngine } from "../kernels/wasm/_engine.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import { cpuLine, median } from "./_peer.ts";

const args: Record<string, string> = {
  width: "576",
  type: "Q8_0",
  rounds: "5",
  tokens: "128",
  spin: "20000",
  ways: "split",
};
for (let i = 0; i < Deno.args.length; i += 2) {
  args[Deno.args[i].replace(/^--/, "")] = Deno.args[i + 1];
}
const layers: Record<string, number> = { "576": 30, "1024": 12, "2048": 4 };
const path = `${
  Deno.env.get("TMPDIR") ?? "/tmp"
}/modelhost-llama-${args.width}x${layers[args.width]}-${args.type}.gguf`;
const model = await transformerFromGguf(
  await readGguf(memorySource(await Deno.readFile(path))),
);
const T = Number(args.tokens);
const prompt = Array.from({ length: T }, (_, i) => 259 + ((i * 7919) % 30000));
console.log(cpuLine());
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const e = getEngine()!;
type Acc = { calls: number; split: number; ms: number };
let acc = new Map<string, Acc>();
const get = (n: string) => {
  let a = acc.get(n);
  if (!a) acc.set(n, a = { calls: 0, split: 0, ms: 0 });
  return a;
};
let depth = 0;
let first = false;
const fn = e.fn as Record<string, (...a: number[]) => unknown>;
for (const name of Object.keys(fn)) {
  const f = fn[name];
  fn[name] = (...a: number[]) => {
    if (depth > 0) {
      const t = performance.now();
      const r = f(...a);
      const x = get(
        first ? `  own ${name}` : `  more (chunks, taken back) ${name}`,
      );
      first = false;
      x.calls++;
      x.ms += performance.now() - t;
      return r;
    }
    const t = performance.now();
    const r = f(...a);
    const x = get(name);
    x.calls++;
    x.ms += performance.now() - t;
    return r;
  };
}
const runChunks = e.runChunks.bind(e);
e.runChunks = (name, chunks) => {
  depth++;
  first = true;
  const t = performance.now();
  try {
    runChunks(name, chunks);
  } finally {
    depth--;
    const x = get(name);
    x.calls++;
    x.split++;
    x.ms += performance.now() - t;
  }
};
const run = e.run.bind(e);
e.run = (name, parts, touch) => {
  depth++;
  first = true;
  const t = performance.now();
  try {
    run(name, parts, touch);
  } finally {
    depth--;
    const x = get(name);
    x.calls++;
    x.split++;
    x.ms += performance.now() - t;
  }
};

// the ways: threads, whether GEMM panels are grabbed (state.gemmGrab),
// chunks per thread of the other split jobs (state.splitChunks) and
// whether blocks take the prefill step (state.prefillStep)
const ways: Record<string, [number, boolean, number, boolean]> =
  args.ways === "step"
    ? {
      "1 thread, layer by layer": [1, true, 4, false],
      "1 thread, block step": [1, true, 4, true],
      "2 threads, layer by layer": [2, true, 4, false],
      "2 threads, block step": [2, true, 4, true],
    }
    : {
      "1 thread": [1, true, 4, true],
      "2 threads, fixed halves": [2, false, 1, true],
      "2 threads, grabbed panels, fixed op ranges": [2, true, 1, true],
      "2 threads, grabbed panels, op ranges in chunks": [2, true, 4, true],
    };
type Res = {
  wall: number[];
  cpu: number[];
  rows: Map<string, Acc>[];
  pool: number[][];
};
const results: Record<string, Res> = {};
for (const [k, [th, grab]] of Object.entries(ways)) {
  results[k] = { wall: [], cpu: [], rows: [], pool: [] };
  await configureKernels({
    threads: th,
    idleMs: Infinity,
    spin: Number(args.spin),
  });
  state.gemmGrab = grab;
  state.splitChunks = ways[k][2];
  state.prefillStep = ways[k][3];
  model.forward(prompt, model.createState()); // warm
}
for (let r = 0; r < Number(args.rounds); r++) {
  const order = Object.keys(ways);
  if (r % 2) order.reverse();
  for (const th of order) {
    await configureKernels({
      threads: ways[th][0],
      idleMs: Infinity,
      spin: Number(args.spin),
    });
    state.gemmGrab = ways[th][1];
    state.splitChunks = ways[th][2];
    state.prefillStep = ways[th][3];
    acc = new Map();
    if (ways[th][0] === 2) {
      model.forward(prompt.slice(0, 16), model.createState());
    }
    acc = new Map();
    const p = e.pool;
    const p0 = p ? { ...p.time, tb: p.takenBack, st: p.stalls } : undefined;
    const c0 = cpu(), t0 = performance.now();
    model.forward(prompt, model.createState());
    results[th].wall.push(performance.now() - t0);
    results[th].cpu.push(cpu() - c0);
    results[th].rows.push(acc);
    if (p && p0) {
      results[th].pool.push([
        p.time.post - p0.post,
        p.time.own - p0.own,
        p.time.wait - p0.wait,
        p.takenBack - p0.tb,
        p.stalls - p0.st,
      ]);
    }
  }
}
// the round trip of an empty split job (touch with no ranges)
await configureKernels({
  threads: 2,
  idleMs: Infinity,
  spin: Number(args.spin),
});
const trips: number[] = [];
for (let i = 0; i < 2000; i++) {
  const t = performance.now();
  run("touch", [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0]]);
  trips.push(performance.now() - t);
}
console.log(
  `empty split job round trip: median ${
    (median(trips) * 1000).toFixed(1)
  } µs, p90 ${(trips.sort((a, b) => a - b)[1800] * 1000).toFixed(1)} µs`,
);
state.gemmGrab = true;
state.splitChunks = 4;
state.prefillStep = true;
for (const th of Object.keys(ways)) {
  const R = results[th];
  console.log(
    `\n${args.width} ${args.type}, ${th}: wall ${
      median(R.wall).toFixed(0)
    } ms, CPU ${median(R.cpu).toFixed(0)} ms`,
  );
  if (R.pool.length) {
    const m = (k: number) => median(R.pool.map((x) => x[k]));
    console.log(
      `pool: post ${m(0).toFixed(1)} ms, own part ${m(1).toFixed(1)} ms, wait ${
        m(2).toFixed(1)
      } ms, taken back ${m(3)}, stalls ${m(4)}`,
    );
  }
  const names = [...new Set(R.rows.flatMap((m) => [...m.keys()]))];
  const med = (n: string) => median(R.rows.map((m) => m.get(n)?.ms ?? 0));
  names.sort((a, b) => med(b) - med(a));
  let inK = 0;
  for (const n of names) {
    const x = R.rows[0].get(n);
    if (!n.startsWith(" ")) inK += med(n);
    console.log(
      `  ${n.padEnd(18)} ${
        med(n).toFixed(1).padStart(7)
      } ms  calls ${x?.calls} split ${x?.split}`,
    );
  }
  console.log(`  outside kernels ~${(median(R.wall) - inK).toFixed(0)} ms`);
}
await configureKernels({ threads: 1 });
