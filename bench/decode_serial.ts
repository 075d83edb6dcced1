// How much of a decoded token runs outside the quantized matvec jobs (the
// work that stays on one thread however many there are: the layers'
// JavaScript, norms, RoPE, the KV append, attention, SwiGLU, activation
// quantization, the embedding, the head's copy, the sampler's argmax),
// with the one-token block step on kernel memory (`layers/_block_decode.ts`)
// and without it (`state.decodeStep = false`), the two alternating round by
// round in one process. Every `*_mm` kernel call (and pool job) is timed;
// "outside" is the token's wall time less that. Medians over the rounds.
//
//   deno run -A bench/decode_serial.ts MODEL.gguf[,MODEL2…] \
//     [--threads 1] [--rounds 7] [--decode 16]
//
// The timer costs about 0.1 µs per job (121 per token at 576×30). With 2
// threads, "outside" also leaves out the pool's posting and waiting.

import { memorySource } from "../core/sources.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import { configureKernels, shutdownKernels } from "../kernels/fast/runtime.ts";
import { state } from "../kernels/fast/_dispatch.ts";
import { getEngine } from "../kernels/wasm/_engine.ts";
import { argmax } from "./_decode.ts";
import { cpuLine, median } from "./_peer.ts";

const opt: Record<string, string> = { threads: "1", rounds: "7", decode: "16" };
const files: string[] = [];
for (let i = 0; i < Deno.args.length; i++) {
  const a = Deno.args[i];
  if (a.startsWith("--")) opt[a.slice(2)] = Deno.args[++i];
  else files.push(...a.split(",").filter((f) => f));
}
const N = Number(opt.decode), R = Number(opt.rounds);
await configureKernels({ threads: Number(opt.threads) });
const e = getEngine();
if (!e) throw new Error("no WebAssembly SIMD engine: nothing to time");
let inJobs = 0;
for (const [k, f] of Object.entries(e.fn)) {
  if (!k.endsWith("_mm")) continue;
  e.fn[k] = (...a: number[]) => {
    const t0 = performance.now();
    f(...a);
    inJobs += performance.now() - t0;
  };
}
// with threads the job goes through `run`, whose local part calls the
// timed export too: time `run` alone for those
const run = e.run.bind(e);
let inRun = false;
e.run = (...a: Parameters<typeof run>) => {
  if (!a[0].endsWith("_mm") || inRun) return run(...a);
  const before = inJobs, t0 = performance.now();
  inRun = true;
  try {
    run(...a);
  } finally {
    inRun = false;
  }
  inJobs = before + performance.now() - t0;
};
console.log(cpuLine());
console.log(
  `${opt.threads} thread(s), ${R} rounds of ${N} tokens after a 4-token prompt and 2 tokens`,
);
for (const file of files) {
  const model = await transformerFromGguf(
    await readGguf(memorySource(await Deno.readFile(file))),
  );
  const all = {
    on: { wall: [] as number[], out: [] as number[] },
    off: { wall: [] as number[], out: [] as number[] },
  };
  for (let r = 0; r < R; r++) {
    for (const on of r % 2 ? [false, true] : [true, false]) {
      state.decodeStep = on;
      const st = model.createState();
      let lg = model.forward([5, 6, 7, 8], st);
      for (let i = 0; i < 2; i++) lg = model.forward([argmax(lg)], st);
      inJobs = 0;
      const t0 = performance.now();
      for (let i = 0; i < N; i++) lg = model.forward([argmax(lg)], st);
      const wall = (performance.now() - t0) / N;
      const side = all[on ? "on" : "off"];
      side.wall.push(wall);
      side.out.push(wall - inJobs / N);
    }
  }
  state.decodeStep = true;
  const f = (a: number[]) => median(a).toFixed(2);
  console.log(
    `${file.split("/").pop()}: block step: ${
      f(all.on.wall)
    } ms/token, outside the jobs ${f(all.on.out)} | layer by layer: ${
      f(all.off.wall)
    }, outside ${f(all.off.out)}`,
  );
}
await shutdownKernels();
