// Quantized GEMM speed (many x rows: prefill, batched decode), one thread,
// weights in kernel memory: G multiply-adds per second of this process's
// CPU time (user + system), medians over batches, the ways of
// `kernels/fast/_dispatch.ts` alternating batch by batch in one process
// (integer tiles: Q8_0 as i16 `pmaddwd`, Q4_0 as bytes; against the tiles
// of exact integer products in F32, `intGemm` off; and the dot kernels on
// prepared weight rows, `gemmMinRows` Infinity). Results are bit for bit
// the same every way (tests/kernels/fast/batch_bits_test.ts).
//
//   deno run -A bench/quant_gemm.ts [--types Q8_0,Q4_0] [--rows 128,8]
//     [--batches 9] [--ms 150] [--simd 1]
//
// `--simd 1` runs the plain SIMD module (no relaxed SIMD: Q4_0 then runs
// on the i16 tiles too, not as bytes).

import process from "node:process";
import { state } from "../kernels/fast/_dispatch.ts";
import { fastLinear } from "../kernels/fast/matmul.ts";
import { configureKernels, kernelInfo } from "../kernels/fast/runtime.ts";
import type { FastDType } from "../kernels/quant_ref.ts";
import { cosines, makeWeight } from "../tests/kernels/fast/_helpers.ts";
import { cpuLine, median } from "./_peer.ts";

const args: Record<string, string> = {
  types: "Q8_0,Q4_0",
  rows: "128,8",
  batches: "9",
  ms: "150",
};
for (let i = 0; i < Deno.args.length; i += 2) {
  args[Deno.args[i].replace(/^--/, "")] = Deno.args[i + 1];
}
await configureKernels({ threads: 1, noRelaxedSimd: args.simd === "1" });
console.log(cpuLine());
console.log(`kernels: ${JSON.stringify(kernelInfo())}`);

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const ways: [string, () => void][] = [
  ["integer tiles", () => {
    state.gemmMinRows = 2;
    state.intGemm = true;
  }],
  ["F32 tiles", () => {
    state.gemmMinRows = 2;
    state.intGemm = false;
  }],
  ["dot kernels", () => {
    state.gemmMinRows = Infinity;
    state.intGemm = true;
  }],
];
const shapes: [number, number][] = [
  [1536, 576],
  [576, 1536],
  [5632, 2048],
  [2048, 5632],
];
console.log(
  `| type | rows | out × in | ${ways.map(([n]) => n).join(" | ")} | ${
    ways.slice(1).map(([n]) => `÷ ${n}`).join(" | ")
  } |`,
);
console.log(`| ${Array(2 + 2 * ways.length).fill("----").join(" | ")} |`);
for (const dtype of args.types.split(",") as FastDType[]) {
  for (const rows of args.rows.split(",").map(Number)) {
    for (const [outF, inF] of shapes) {
      const w = makeWeight(dtype, outF, inF);
      const x = cosines(rows * inF, inF / 32, 2);
      const macs = rows * outF * inF;
      const reps = ways.map(([, set]) => {
        set();
        const t0 = performance.now();
        let n = 0;
        while (performance.now() - t0 < 200) {
          fastLinear(x, rows, w);
          n++;
        }
        return Math.max(1, Math.round(n * Number(args.ms) / 200));
      });
      const rates: number[][] = ways.map(() => []);
      for (let b = 0; b < Number(args.batches); b++) {
        ways.forEach(([, set], i) => {
          set();
          const c0 = cpu();
          for (let r = 0; r < reps[i]; r++) fastLinear(x, rows, w);
          rates[i].push(macs * reps[i] / ((cpu() - c0) * 1e6));
        });
      }
      const med = rates.map(median);
      console.log(
        `| ${dtype} | ${rows} | ${outF} × ${inF} | ${
          med.map((g) => g.toFixed(1)).join(" | ")
        } | ${
          med.slice(1).map((g) => (med[0] / g).toFixed(2) + "×").join(" | ")
        } |`,
      );
    }
  }
}
state.gemmMinRows = 0;
state.intGemm = true;
