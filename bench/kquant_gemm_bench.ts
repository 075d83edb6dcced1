// The Q4_K / Q6_K / Q5_0 GEMMs of kernels/wasm/_kernels_quant_kgemm.ts against the
// dot kernels it replaces for several x rows (knob `state.kGemm`), one
// thread: `fastLinear` of M rows on weight shapes of 576×30, 1024×12 and
// 2048×4 Q4_K_M models (random codes), the two paths alternating round by
// round, in this process's CPU time (user + system). Prints the median G
// multiply-adds per CPU second of each and their ratio (the two give the
// same bits; the script checks that too).
//
//   deno run -A bench/kquant_gemm_bench.ts [--rows 32,128] [--rounds 7]

import { parseArgs } from "@std/cli";
import { assertEquals } from "@std/assert";
import process from "node:process";
import { state } from "../kernels/fast/_dispatch.ts";
import { fastLinear } from "../kernels/fast/matmul.ts";
import { kernelInfo } from "../kernels/fast/runtime.ts";
import { cpuLine, median } from "./_peer.ts";
import { cosines, makeWeight } from "../tests/kernels/fast/_helpers.ts";

const args = parseArgs(Deno.args, {
  string: ["rows", "rounds"],
  default: { rows: "32,128", rounds: "7" },
});
const ROWS = args.rows.split(",").map(Number);
const ROUNDS = Number(args.rounds);
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
console.log(cpuLine());
console.log(`kernels: ${JSON.stringify(kernelInfo())}`);

const SHAPES = [
  ["Q5_0", 1536, 576],
  ["Q4_K", 2816, 1024],
  ["Q6_K", 1024, 2816],
  ["Q4_K", 5632, 2048],
  ["Q6_K", 2048, 5632],
] as const;

console.log(
  "| weight | out × in | rows | dots G/CPU s | GEMM G/CPU s | GEMM ÷ dots |",
);
console.log("| --- | --- | --- | --- | --- | --- |");
for (const [dtype, outF, inF] of SHAPES) {
  const w = makeWeight(dtype, outF, inF);
  for (const rows of ROWS) {
    const x = cosines(rows * inF, 3, 1.5);
    const work = rows * outF * inF / 1e9;
    const t = { dots: [] as number[], gemm: [] as number[] };
    let a: Float32Array | undefined, b: Float32Array | undefined;
    for (let r = 0; r < ROUNDS; r++) {
      for (const way of r % 2 ? ["gemm", "dots"] : ["dots", "gemm"]) {
        state.kGemm = way === "gemm";
        const c0 = cpuMs();
        const y = fastLinear(x, rows, w);
        const c = cpuMs() - c0;
        if (way === "gemm") a = y;
        else b = y;
        t[way as "dots" | "gemm"].push(work / (c / 1000));
      }
    }
    state.kGemm = true;
    assertEquals(a, b, `${dtype} ${outF}×${inF}, ${rows} rows`);
    const d = median(t.dots), g = median(t.gemm);
    console.log(
      `| ${dtype} | ${outF} × ${inF} | ${rows} | ${d.toFixed(1)} | ${
        g.toFixed(1)
      } | ${(g / d).toFixed(2)}× |`,
    );
  }
}
