// Decode speed of one GGUF model under variants of a kernel-dispatch knob
// (`state` of kernels/fast/_dispatch.ts), the variants alternating round
// by round in one process; prints the median CPU ms and wall ms per token
// of each variant (CPU: this process's user + system time, all threads).
//
//   deno run -A bench/decode_knobs.ts MODEL.gguf KNOB=v1,v2[,…] [KNOB2=…] \
//     [--threads 1] [--rounds 7] [--tokens 24]
//
// e.g. `readAheadMinBytes=8388608,Infinity weightStreams=2,4` (every
// combination runs); a value `true` / `false` is a boolean. Use on a loaded machine: per-CPU-second is the steadier column.

import process from "node:process";
import { memorySource } from "../core/sources.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import { configureKernels, shutdownKernels } from "../kernels/fast/runtime.ts";
import { state } from "../kernels/fast/_dispatch.ts";
import { argmax } from "./_decode.ts";

const [file, ...rest] = Deno.args;
const opt: Record<string, string> = { threads: "1", rounds: "7", tokens: "24" };
const knobs: [string, unknown[]][] = [];
const parse = (v: string): unknown =>
  v === "true" ? true : v === "false" ? false : Number(v);
const st = state as unknown as Record<string, unknown>;
for (let i = 0; i < rest.length; i++) {
  if (rest[i].startsWith("--")) {
    opt[rest[i].slice(2)] = rest[++i];
    continue;
  }
  const [knob, list] = rest[i].split("=");
  if (!(knob in st)) throw new RangeError(`No knob ${knob}`);
  knobs.push([knob, list.split(",").map(parse)]);
}
// every combination of the knobs' values
let values: Record<string, unknown>[] = [{}];
for (const [k, vs] of knobs) {
  values = values.flatMap((v) => vs.map((x) => ({ ...v, [k]: x })));
}
const apply = (v: Record<string, unknown>) => Object.assign(st, v);
const label = (v: Record<string, unknown>) =>
  Object.entries(v).map(([k, x]) => `${k}=${x}`).join(" ");

await configureKernels({ threads: Number(opt.threads) });
const model = await transformerFromGguf(
  await readGguf(memorySource(await Deno.readFile(file))),
);
const decode = (n: number): [number, number] => {
  const s = model.createState();
  let lg = model.forward([5, 6, 7, 8], s);
  const c0 = process.cpuUsage(), t0 = performance.now();
  for (let i = 0; i < n; i++) lg = model.forward([argmax(lg)], s);
  const c = process.cpuUsage(c0);
  return [(c.user + c.system) / 1000 / n, (performance.now() - t0) / n];
};
for (const v of values) apply(v), decode(8); // warm every variant
const cpu = values.map(() => [] as number[]);
const wall = values.map(() => [] as number[]);
const T = Number(opt.tokens);
for (let r = 0; r < Number(opt.rounds); r++) {
  const order = values.map((_, i) => i);
  if (r % 2) order.reverse();
  for (const i of order) {
    apply(values[i]);
    const [c, w] = decode(T);
    cpu[i].push(c);
    wall[i].push(w);
  }
}
const med = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return s[s.length >> 1];
};
const load = (await Deno.readTextFile("/proc/loadavg").catch(() => "?"))
  .split(" ").slice(0, 3).join(" ");
console.log(`${file} ${opt.threads} thread(s), load ${load}`);
values.forEach((v, i) =>
  console.log(
    `${label(v)}: cpu ${med(cpu[i]).toFixed(2)} ms/tok, wall ${
      med(wall[i]).toFixed(2)
    } ms/tok (cpu ${cpu[i].map((x) => x.toFixed(1)).join(" ")})`,
  )
);
await shutdownKernels();
