/**
 * Dense forward throughput: batch 64 through 1024 → 4096 → 1024 (ReLU
 * between), the network path against the bare `linear()` kernel calls
 * (baseline), so the ratio is the network and layer overhead.
 *
 *     deno bench -A bench/layers_bench.ts
 *
 * Before the benches run, a short timed loop prints GFLOP/s (2 FLOPs per
 * multiply-add) and the machine.
 */

import { buildNetwork, initNetwork } from "../core/network.ts";
import { floatTensor } from "../core/tensor.ts";
import { applyActivation } from "../kernels/activations.ts";
import { linear } from "../kernels/linear.ts";
import { defaultRegistry } from "../mod.ts";

const BATCH = 64, D = 1024, H = 4096;
const FLOPS = 2 * BATCH * (D * H + H * D);

const reg = defaultRegistry();
const cfg = {
  input_size: D,
  layers: [
    { type: "dense", output_size: H, activation: "relu" },
    { type: "dense", output_size: D },
  ],
};
const weights = initNetwork(reg, cfg, 1);
const net = buildNetwork(reg, cfg, weights);
const x = floatTensor(
  new Float32Array(BATCH * D).map((_, i) => Math.sin(i) * 0.5),
  [BATCH, D],
);
const w0 = weights.get("layers.0.weight")!,
  w1 = weights.get("layers.1.weight")!;
const b0 = new Float32Array(weights.get("layers.0.bias")!.bytes.slice().buffer);
const b1 = new Float32Array(weights.get("layers.1.bias")!.bytes.slice().buffer);

function kernelsOnly(): Float32Array {
  const h = linear(x.data, BATCH, w0, b0);
  applyActivation(h, H, "relu");
  return linear(h, BATCH, w1, b1);
}

const machine =
  `${Deno.build.os} ${Deno.build.arch}, ${navigator.hardwareConcurrency} logical cores, Deno ${Deno.version.deno} (V8 ${Deno.version.v8})`;
net.forward(x); // warm-up
const reps = 3;
const t0 = performance.now();
for (let i = 0; i < reps; i++) net.forward(x);
const ms = (performance.now() - t0) / reps;
console.log(`machine: ${machine}`);
console.log(
  `dense forward batch ${BATCH}, ${D}→${H}→${D}: ${
    (FLOPS / 1e9).toFixed(3)
  } GFLOP per call, ${ms.toFixed(1)} ms, ${
    (FLOPS / ms / 1e6).toFixed(2)
  } GFLOP/s`,
);

Deno.bench({
  name: "linear() kernels only, 64×1024→4096→1024",
  group: "dense",
  baseline: true,
  n: 3,
  warmup: 1,
  fn: () => {
    kernelsOnly();
  },
});

Deno.bench({
  name: "network.forward, dense 64×1024→4096→1024",
  group: "dense",
  n: 3,
  warmup: 1,
  fn: () => {
    net.forward(x);
  },
});
