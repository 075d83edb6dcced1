// The Q4_K / Q6_K / Q5_0 GEMMs of kernels/wasm/_kernels_quant_kgemm.ts against the
// dot kernels it replaces for several x rows (knob `state.kGemm`), one
// thread: `fastLinear` of M rows on weight shapes of 576×30, 1024×12 and
// 2048×4 Q4_K_M models (random codes), the two paths alternating round by
// round, in this process's CPU time (user + system). Prints the median G
// multiply-adds per CPU second of each and their ratio (the two give the
// same bits; the script checks that too). `--models 576,1024,2048`: also
// a 128-token prefill of the Q4_K_M models of bench/llama_sweep.ts (read
// from its cache in $TMPDIR, written there by this script if missing), the
// GEMMs on and off alternating, CPU ms per prefill and the ratio.
//
//   deno run -A bench/kquant_gemm_bench.ts [--rows 32,128] [--rounds 7]
//     [--models 576,1024,2048] [--threads 1]

import { parseArgs } from "@std/cli";
import { assertEquals } from "@std/assert";
import process from "node:process";
import { state } from "../kernels/fast/_dispatch.ts";
import { fastLinear } from "../kernels/fast/matmul.ts";
import { configureKernels, kernelInfo } from "../kernels/fast/runtime.ts";
import { memorySource } from "../core/sources.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import { SMOLLM_135M, smolLmShapeGguf } from "./_decode.ts";
import { cpuLine, median } from "./_peer.ts";
import { cosines, makeWeight } from "../tests/kernels/fast/_helpers.ts";

const args = parseArgs(Deno.args, {
  string: ["rows", "rounds", "models", "threads"],
  default: { rows: "32,128", rounds: "7", models: "", threads: "1" },
});
await configureKernels({ threads: Number(args.threads) });
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
    // warm-up: V8 compiles WebAssembly functions fast first and optimizes
    // the hot ones later, so each path runs twice before it is timed
    for (const on of [false, true, false, true]) {
      state.kGemm = on;
      fastLinear(x, rows, w);
    }
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

const WIDTHS = args.models ? args.models.split(",").map(Number) : [];
if (WIDTHS.length) {
  console.log("");
  console.log(
    "| model | 128-token prefill, dots CPU ms | GEMM CPU ms | dots ÷ GEMM |",
  );
  console.log("| --- | --- | --- | --- |");
}
for (const width of WIDTHS) {
  // the shapes of bench/llama_sweep.ts
  const [layers, intermediate] = width === 1024 ? [12, 2816] : [4, 5632];
  const shape = width === 576 ? SMOLLM_135M : {
    ...SMOLLM_135M,
    vocab: 32000,
    hidden: width,
    layers,
    heads: width / 64,
    kvHeads: Math.max(1, width / 64 / 4),
    intermediate,
  };
  const path = `${
    Deno.env.get("TMPDIR") ?? "/tmp"
  }/modelhost-llama-${width}x${shape.layers}-Q4_K_M.gguf`;
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch {
    bytes = await smolLmShapeGguf("Q4_K_M", 1, shape);
  }
  const model = await transformerFromGguf(await readGguf(memorySource(bytes)));
  const prompt = Array.from(
    { length: 128 },
    (_, i) => 3 + 256 + ((i * 7919) % (shape.vocab - 260)),
  );
  const t = { dots: [] as number[], gemm: [] as number[] };
  let a: Float32Array | undefined, b: Float32Array | undefined;
  for (let r = 0; r < ROUNDS; r++) {
    for (const way of r % 2 ? ["gemm", "dots"] : ["dots", "gemm"]) {
      state.kGemm = way === "gemm";
      const c0 = cpuMs();
      const y = model.forward(prompt, model.createState());
      t[way as "dots" | "gemm"].push(cpuMs() - c0);
      if (way === "gemm") a = y;
      else b = y;
    }
  }
  state.kGemm = true;
  assertEquals(a, b, `${width} logits`);
  const d = median(t.dots), g = median(t.gemm);
  console.log(
    `| ${width}×${shape.layers} Q4_K_M | ${d.toFixed(0)} | ${g.toFixed(0)} | ${
      (d / g).toFixed(2)
    }× |`,
  );
}
