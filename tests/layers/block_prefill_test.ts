/**
 * The many-row step of `transformer_block` on kernel memory
 * (`layers/_block_prefill.ts`) against the layer-by-layer path it replaces
 * (`state.prefillStep = false`): the same bits for prompts of 2, 3, 17 and
 * 128 rows, a second prompt after an existing cache (the cache growing
 * past its first capacity) and the decode steps after them, over quantized
 * weight types (Q8_0, Q4_0, Q5_0, Q4_K with Q4_K_M's Q6_K rows), biases,
 * both RoPE styles, grouped-query heads and a residual scale, on one thread
 * and with every kernel split over two. The layer-by-layer path is itself
 * checked against PyTorch (`transformer_block_test.ts`) and llama.cpp
 * (`tests/conformance/llama_test.ts`).
 */

import { assert, assertEquals } from "@std/assert";
import { transformerBlockLayer } from "../../layers/transformer_block.ts";
import { blockPrefillStep } from "../../layers/_block_prefill.ts";
import type { LayerState } from "../../core/plugin.ts";
import { createRng } from "../../core/rng.ts";
import { floatTensor } from "../../core/tensor.ts";
import { state } from "../../kernels/fast/_dispatch.ts";
import { configureKernels, shutdownKernels } from "../../kernels/fast/mod.ts";
import { getEngine } from "../../kernels/wasm/_engine.ts";
import {
  allTypes,
  assertSameBits,
  BLOCK_CASES,
  type BlockCase as Case,
  buildBlock as build,
  stepParts,
} from "./_block_cases.ts";

/** The decode step's cases and a block without RoPE. */
const CASES: Case[] = [
  ...BLOCK_CASES.slice(0, 3),
  {
    name: "Q8_0 without RoPE",
    config: {
      type: "transformer_block",
      d_model: 64,
      num_heads: 2,
      intermediate_size: 64,
      use_rope: false,
    },
    types: allTypes("Q8_0"),
  },
  ...BLOCK_CASES.slice(3),
];

/**
 * Prompts of `prompts[i]` rows one after the other on one state (the
 * first as `[1, n, d]`, the others as `[n, d]`), then 2 decode steps;
 * every output.
 */
function run(c: Case, fused: boolean, prompts: number[]): Float32Array[] {
  const { block, cfg } = build(c);
  const d = cfg.d_model;
  const rng = createRng(5);
  const row = (n: number) => {
    const x = new Float32Array(n * d);
    for (let i = 0; i < x.length; i++) x[i] = 2 * rng.next() - 1;
    return x;
  };
  const st: LayerState = {};
  const out: Float32Array[] = [];
  state.prefillStep = fused;
  try {
    prompts.forEach((n, i) => {
      const shape = i === 0 ? [1, n, d] : [n, d];
      out.push(block.forward(floatTensor(row(n), shape), st).data);
    });
    for (let t = 0; t < 2; t++) {
      out.push(block.forward(floatTensor(row(1), [1, 1, d]), st).data);
    }
  } finally {
    state.prefillStep = true;
  }
  return out;
}

function assertSame(c: Case, prompts: number[]) {
  assertSameBits(
    run(c, true, prompts),
    run(c, false, prompts),
    `${c.name}, prompts ${prompts}`,
  );
}

/** Prompt sets: odd counts, one past the first capacity, a long one. */
const PROMPTS = [[2], [3, 17], [17, 3, 2], [128]];

for (const c of CASES) {
  Deno.test(`block prefill step, ${c.name}: same bits as layer by layer`, () => {
    for (const p of PROMPTS) assertSame(c, p);
  });
}

Deno.test("block prefill step without a state (a cache for the call only): same bits", () => {
  for (const c of CASES) {
    const { block, cfg } = build(c);
    const d = cfg.d_model, rng = createRng(9);
    const x = new Float32Array(17 * d).map(() => 2 * rng.next() - 1);
    const outs = [true, false].map((on) => {
      state.prefillStep = on;
      try {
        return block.forward(floatTensor(x, [1, 17, d])).data;
      } finally {
        state.prefillStep = true;
      }
    });
    assert(outs[0].every((v, j) => Object.is(v, outs[1][j])), c.name);
  }
});

Deno.test("block prefill step: taken for quantized blocks, not for others", () => {
  if (!getEngine()) return; // no WebAssembly SIMD: the general path only
  const c = CASES[0];
  const { cfg, scope } = build(c);
  const parts = (over = cfg) => stepParts(cfg, scope, over);
  const step = blockPrefillStep(parts())!;
  const st: LayerState = {};
  const x = new Float32Array(5 * 64).fill(0.25);
  assertEquals(step(x.subarray(0, 64), 1, st), null); // one row: the decode step
  const y = step(x, 5, st);
  assert(y instanceof Float32Array && y.length === 5 * 64);
  assertEquals((st.kv as { length: number }).length, 5);
  // a batch cache of two sequences: the layer path
  const b2: LayerState = {};
  transformerBlockLayer.build(cfg, scope).forward(
    floatTensor(new Float32Array(2 * 3 * 64), [2, 3, 64]),
    b2,
  );
  assertEquals(step(x, 5, b2), null);
  assertEquals(blockPrefillStep(parts({ ...cfg, qk_norm: "head" })), null);
  assertEquals(blockPrefillStep(parts({ ...cfg, sliding_window: 4 })), null);
  // an F32 projection: the general path
  const f32 = build({ ...c, types: { ...c.types, o_proj: "F32" } });
  assertEquals(blockPrefillStep({ ...parts(), weights: f32.scope }), null);
});

Deno.test("block prefill step: same bits with every kernel split over two threads", async () => {
  await configureKernels({ threads: 2, minParallelWork: 1 });
  try {
    for (const c of CASES) for (const p of PROMPTS) assertSame(c, p);
  } finally {
    await shutdownKernels();
  }
});
