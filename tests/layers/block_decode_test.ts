/**
 * The one-token decode step of `transformer_block` on kernel memory
 * (`layers/_block_decode.ts`) against the layer-by-layer path it replaces
 * (`state.decodeStep = false`): the same bits for every decode step of a
 * prompt, over quantized weight types, mixed types (Q4_K_M's Q6_K rows),
 * biases, both RoPE styles, grouped-query heads, a residual scale and a
 * KV cache growing past its first capacity, on one thread and with every
 * kernel split over two. The layer-by-layer path is itself checked against
 * PyTorch (`transformer_block_test.ts`) and llama.cpp
 * (`tests/conformance/llama_test.ts`).
 */

import { assert, assertEquals } from "@std/assert";
import { blockDecodeStep } from "../../layers/_block_decode.ts";
import type { LayerState } from "../../core/plugin.ts";
import { createRng } from "../../core/rng.ts";
import { floatTensor } from "../../core/tensor.ts";
import { state } from "../../kernels/fast/_dispatch.ts";
import { configureKernels, shutdownKernels } from "../../kernels/fast/mod.ts";
import { getEngine } from "../../kernels/wasm/_engine.ts";
import {
  assertSameBits,
  BLOCK_CASES as CASES,
  type BlockCase as Case,
  buildBlock as build,
  stepParts,
} from "./_block_cases.ts";

/** A 3-token prompt, then `steps` tokens one at a time; every output. */
function run(c: Case, fused: boolean, steps: number): Float32Array[] {
  const { block, cfg } = build(c);
  const d = cfg.d_model;
  const rng = createRng(5);
  const row = (n: number) => {
    const x = new Float32Array(n * d);
    for (let i = 0; i < x.length; i++) x[i] = 2 * rng.next() - 1;
    return x;
  };
  const st: LayerState = {};
  const out = [block.forward(floatTensor(row(3), [1, 3, d]), st).data];
  state.decodeStep = fused;
  try {
    for (let t = 0; t < steps; t++) {
      out.push(block.forward(floatTensor(row(1), [1, 1, d]), st).data);
    }
  } finally {
    state.decodeStep = true;
  }
  return out;
}

function assertSame(c: Case, steps: number) {
  assertSameBits(run(c, true, steps), run(c, false, steps), c.name);
}

for (const c of CASES) {
  Deno.test(`block decode step, ${c.name}: same bits as layer by layer`, () => {
    assertSame(c, 20); // the cache starts at 16 positions: it grows once
  });
}

Deno.test("block decode step: taken for quantized blocks, not for others", () => {
  if (!getEngine()) return; // no WebAssembly SIMD: the general path only
  const c = CASES[0];
  const { cfg, scope, block } = build(c);
  const parts = (over = cfg) => stepParts(cfg, scope, over);
  const step = blockDecodeStep(parts())!;
  const st: LayerState = {};
  const x = new Float32Array(64).fill(0.25);
  assertEquals(step(x, st), null); // no cache yet: the prefill makes it
  block.forward(floatTensor(new Float32Array(64), [1, 1, 64]), st);
  const y = step(x, st);
  assert(y instanceof Float32Array && y.length === 64);
  assertEquals((st.kv as { length: number }).length, 2);
  assertEquals(blockDecodeStep(parts({ ...cfg, qk_norm: "head" })), null);
  assertEquals(blockDecodeStep(parts({ ...cfg, sliding_window: 4 })), null);
  // F32 weights: the general path
  const f32 = build({ ...c, types: {} });
  const s2: LayerState = {};
  f32.block.forward(floatTensor(new Float32Array(64), [1, 1, 64]), s2);
  const dense = blockDecodeStep({ ...parts(), weights: f32.scope })!;
  assertEquals(dense(x, s2), null);
});

Deno.test("block decode step: same bits with every kernel split over two threads", async () => {
  await configureKernels({ threads: 2, minParallelWork: 1 });
  try {
    for (const c of CASES) assertSame(c, 18);
  } finally {
    await shutdownKernels();
  }
});
