// One-row quantized matvec speed per weight type (the decode case), single
// thread, weights in kernel memory: nanoseconds of this process's CPU time
// (user + system, which other tenants of a shared machine disturb less than
// wall time) per 32 weights, median of several timed batches after a
// warm-up, and the fastest batch (the least disturbed: on a loaded machine
// the steadier measure of the instructions a kernel runs); wall time
// beside them. The shapes are a 1024-wide model's
// (1024 → 2816, 2816 → 1024) and the 2048 → 32000 output head's share of
// rows (8192 × 2048). Compare builds by running this script from two
// checkouts in turn.
//
//   deno run -A bench/quant_matvec.ts [--types Q4_K,Q6_K,Q5_0] [--batches 15]
//     [--ms 60]

import process from "node:process";
import { fastLinear } from "../kernels/fast/matmul.ts";
import { configureKernels, kernelInfo } from "../kernels/fast/runtime.ts";
import type { FastDType } from "../kernels/quant_ref.ts";
import { cosines, makeWeight } from "../tests/kernels/fast/_helpers.ts";
import { cpuLine } from "./_peer.ts";

const args: Record<string, string> = {
  types: "Q4_K,Q6_K,Q5_0,Q4_0,Q8_0",
  batches: "15",
  ms: "60",
};
for (let i = 0; i < Deno.args.length; i += 2) {
  args[Deno.args[i].replace(/^--/, "")] = Deno.args[i + 1];
}
await configureKernels({ threads: 1 });
console.log(cpuLine());
console.log(`kernels: ${JSON.stringify(kernelInfo())}`);

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (v: number[]) => v.slice().sort((a, b) => a - b)[v.length >> 1];

const shapes: [number, number][] = [
  [1536, 576],
  [576, 1536],
  [2816, 1024],
  [1024, 2816],
  [8192, 2048],
];
console.log(
  "| type | out × in | CPU ns / 32 weights, median | fastest | wall, median |",
);
console.log("| ---- | -------- | ---- | ---- | ---- |");
for (const dtype of args.types.split(",") as FastDType[]) {
  for (const [outF, inF] of shapes) {
    if (inF % (dtype.endsWith("_K") ? 256 : 32) !== 0) continue;
    const w = makeWeight(dtype, outF, inF);
    const x = cosines(inF, 1);
    const per = (n: number) => (outF * inF) / 32 * n;
    // warm-up (TurboFan, weight copy into kernel memory)
    const t0 = performance.now();
    let n = 0;
    while (performance.now() - t0 < 300) {
      fastLinear(x, 1, w);
      n++;
    }
    const reps = Math.max(1, Math.round(n * Number(args.ms) / 300));
    const cpus: number[] = [], walls: number[] = [];
    for (let b = 0; b < Number(args.batches); b++) {
      const c0 = cpu(), w0 = performance.now();
      for (let r = 0; r < reps; r++) fastLinear(x, 1, w);
      cpus.push((cpu() - c0) * 1e6 / per(reps));
      walls.push((performance.now() - w0) * 1e6 / per(reps));
    }
    console.log(
      `| ${dtype} | ${outF} × ${inF} | ${median(cpus).toFixed(2)} | ${
        Math.min(...cpus).toFixed(2)
      } | ${median(walls).toFixed(2)} |`,
    );
  }
}
