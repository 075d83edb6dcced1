/**
 * The benchmark MLP (1024 → 4096 → ReLU → 1024, F32, batch 64), built as a
 * modelhost network with deterministic weights, its ONNX export, and the
 * input. Shared by `onnx_bench.ts` and `onnx_compare.ts`.
 */

import { buildNetwork, type Network } from "../core/network.ts";
import { tensorFromF32 } from "../core/tensor.ts";
import { defaultRegistry } from "../mod.ts";

/** Batch, model width and hidden width. */
export const B = 64, D = 1024, H = 4096;

/** The network config. */
export const MLP_CONFIG = {
  input_size: D,
  layers: [
    { type: "dense", output_size: H, activation: "relu" },
    { type: "dense", output_size: D },
  ],
};

/** The MLP with weights `0.05·sin(0.37 i)` etc. (deterministic, no RNG). */
export function mlpNetwork(): Network {
  const w1 = Float32Array.from(
    { length: H * D },
    (_, i) => 0.05 * Math.sin(0.37 * i),
  );
  const b1 = Float32Array.from({ length: H }, (_, i) => 0.01 * Math.cos(i));
  const w2 = Float32Array.from(
    { length: D * H },
    (_, i) => 0.03 * Math.cos(0.11 * i),
  );
  const b2 = Float32Array.from({ length: D }, (_, i) => 0.01 * Math.sin(i));
  const tensors = new Map([
    ["layers.0.weight", tensorFromF32("layers.0.weight", w1, [H, D])],
    ["layers.0.bias", tensorFromF32("layers.0.bias", b1, [H])],
    ["layers.1.weight", tensorFromF32("layers.1.weight", w2, [D, H])],
    ["layers.1.bias", tensorFromF32("layers.1.bias", b2, [D])],
  ]);
  return buildNetwork(defaultRegistry(), MLP_CONFIG, tensors);
}

/** The input batch `0.1 + 2·cos(i)`, `[64, 1024]`. */
export function mlpInput(): Float32Array {
  return Float32Array.from({ length: B * D }, (_, i) => 0.1 + 2 * Math.cos(i));
}
