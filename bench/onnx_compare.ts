/**
 * Our forward vs ONNX Runtime on our own export of the same network, in one
 * run: the dense MLP (batch 64, 1024 → 4096 → ReLU → 1024, F32). Prints the
 * ratios (ours / ORT; above 1 means ORT is faster).
 *
 * `deno run -A bench/onnx_compare.ts [--rounds N]`
 *
 * The two sides alternate in rounds; the table gives each side's best round
 * and the median of the per-round ratios (robust on a shared machine). ORT
 * runs at 1 intra-op thread (the same as our forward) and at 2.
 */

import { parseArgs } from "@std/cli";
import * as ort from "onnxruntime-node";
import { floatTensor } from "../core/tensor.ts";
import { exportOnnx } from "../formats/onnx/mod.ts";
import { B, D, H, mlpInput, mlpNetwork } from "./_onnx_mlp.ts";
import { cpuInfo } from "./_peer.ts";

const args = parseArgs(Deno.args, {
  string: ["rounds"],
  default: { rounds: "5" },
});
const ROUNDS = Number(args.rounds);

function machine(): string {
  const cpu = cpuInfo().model ?? "unknown CPU";
  return `${cpu}, ${navigator.hardwareConcurrency} logical CPUs, Deno ${Deno.version.deno}, onnxruntime-node ${ort.env.versions.common}`;
}

async function time(f: () => unknown): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

/** Alternates `a` and `b`; best times and the median per-round ratio a/b. */
async function compare(
  a: () => unknown,
  b: () => unknown,
): Promise<{ a: number; b: number; ratio: number }> {
  await a();
  await b();
  let ta = Infinity, tb = Infinity;
  const ratios: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const x = await time(a);
    const y = await time(b);
    ta = Math.min(ta, x);
    tb = Math.min(tb, y);
    ratios.push(x / y);
  }
  ratios.sort((p, q) => p - q);
  return { a: ta, b: tb, ratio: ratios[ratios.length >> 1] };
}

const net = mlpNetwork();
const x = mlpInput();
let bytes: Uint8Array = new Uint8Array(0);
const exportMs = await time(() => {
  bytes = exportOnnx(net);
});
console.log(`# modelhost forward vs ONNX Runtime on our ONNX export\n`);
console.log(`Machine: ${machine()}`);
console.log(
  `MLP: batch ${B}, ${D} → ${H} → ReLU → ${D}, F32; export ${
    exportMs.toFixed(0)
  } ms, ${(bytes.length / 2 ** 20).toFixed(1)} MiB\n`,
);

const ours = () => net.forward(floatTensor(x, [B, D]));
const expected = ours().data;
const flops = 2 * B * D * H * 2;

console.log(
  "| ORT threads | ours (ms) | ORT (ms) | ours GFLOP/s | ORT GFLOP/s | ratio ours/ORT |",
);
console.log("|---|---|---|---|---|---|");
for (const threads of [1, 2]) {
  const session = await ort.InferenceSession.create(bytes, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
  });
  const feed = { input: new ort.Tensor("float32", x, [B, D]) };
  const got = (await session.run(feed)).output.data as Float32Array;
  // Same results: the largest difference relative to the largest output
  // (4096-term sums in different orders differ in the last bits).
  let diff = 0, scale = 0;
  for (let i = 0; i < got.length; i++) {
    diff = Math.max(diff, Math.abs(got[i] - expected[i]));
    scale = Math.max(scale, Math.abs(expected[i]));
  }
  if (diff > 1e-4 * scale) {
    throw new Error(
      `ORT and our forward differ by ${diff} (largest output ${scale})`,
    );
  }
  const r = await compare(ours, () => session.run(feed));
  console.log(
    `| ${threads} | ${r.a.toFixed(1)} | ${r.b.toFixed(1)} | ${
      (flops / r.a / 1e6).toFixed(2)
    } | ${(flops / r.b / 1e6).toFixed(2)} | ${r.ratio.toFixed(1)} |`,
  );
  await session.release();
}
