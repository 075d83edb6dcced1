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
import type { LayerConfig } from "../../core/model.ts";
import { createRng } from "../../core/rng.ts";
import { createScope } from "../../core/scope.ts";
import { floatTensor, type Tensor, tensorFromF32 } from "../../core/tensor.ts";
import { quantizeGguf } from "../../core/quants/mod.ts";
import { state } from "../../kernels/fast/_dispatch.ts";
import {
  allocateKernelBytes,
  configureKernels,
  shutdownKernels,
} from "../../kernels/fast/mod.ts";
import { getEngine } from "../../kernels/wasm/_engine.ts";
import { ctx } from "./_attention_vectors.ts";

interface Case {
  name: string;
  config: LayerConfig;
  /** dtype per projection name (`q_proj`, …, `down_proj`); others stay F32. */
  types: Record<string, string>;
  /** Weights read in place from kernel memory (as the GGUF loaders put them). */
  inKernel?: boolean;
}

const PROJ = ["q_proj", "k_proj", "v_proj", "o_proj"];
const MLP = ["gate_proj", "up_proj", "down_proj"];
const all = (t: string) =>
  Object.fromEntries([...PROJ, ...MLP].map((p) => [p, t]));

const CASES: Case[] = [
  {
    name: "Q8_0, GQA, neox",
    config: {
      type: "transformer_block",
      d_model: 64,
      num_heads: 4,
      num_kv_heads: 2,
      intermediate_size: 96,
    },
    types: all("Q8_0"),
  },
  {
    name: "Q4_0 in kernel memory",
    config: {
      type: "transformer_block",
      d_model: 64,
      num_heads: 4,
      num_kv_heads: 2,
      intermediate_size: 96,
    },
    types: all("Q4_0"),
    inKernel: true,
  },
  {
    name: "Q4_0, interleaved RoPE, biases, residual scale",
    config: {
      type: "transformer_block",
      d_model: 96,
      num_heads: 6,
      num_kv_heads: 3,
      intermediate_size: 160,
      rope_style: "interleaved",
      bias: true,
      mlp_bias: true,
      residual_scale: 0.5,
    },
    types: all("Q4_0"),
  },
  {
    name: "Q8_0 without RoPE",
    config: {
      type: "transformer_block",
      d_model: 64,
      num_heads: 2,
      intermediate_size: 64,
      use_rope: false,
    },
    types: all("Q8_0"),
  },
  {
    name: "Q4_K with Q6_K v and down (Q4_K_M's mix)",
    config: {
      type: "transformer_block",
      d_model: 256,
      num_heads: 4,
      num_kv_heads: 1,
      intermediate_size: 512,
    },
    types: { ...all("Q4_K"), v_proj: "Q6_K", down_proj: "Q6_K" },
  },
  {
    name: "Q5_0 with Q8_0 o_proj",
    config: {
      type: "transformer_block",
      d_model: 64,
      num_heads: 2,
      intermediate_size: 128,
      rope_theta: 500000,
    },
    types: { ...all("Q5_0"), o_proj: "Q8_0" },
  },
];

function place(b: Uint8Array, inKernel?: boolean): Uint8Array {
  if (!inKernel) return b;
  const k = allocateKernelBytes(b.length);
  k.set(b);
  return k;
}

function build(c: Case) {
  const cfg = transformerBlockLayer.parse(c.config, ctx("layers[0]"));
  const init = transformerBlockLayer.init!(cfg, createRng(11));
  const tensors = new Map<string, Tensor>();
  for (const s of transformerBlockLayer.params(cfg)) {
    const v = init.get(s.name)!;
    const proj = s.name.split(".")[1];
    const t = s.name.endsWith(".weight") ? c.types[proj] : undefined;
    const dtype = t === "F32" ? undefined : t;
    tensors.set(
      s.name,
      dtype
        ? {
          name: s.name,
          dtype: dtype as Tensor["dtype"],
          shape: s.shape,
          bytes: place(quantizeGguf(dtype as Tensor["dtype"], v), c.inKernel),
        }
        : tensorFromF32(s.name, v, s.shape),
    );
  }
  const scope = createScope(tensors);
  return { cfg, scope, block: transformerBlockLayer.build(cfg, scope) };
}

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
  const a = run(c, true, prompts), b = run(c, false, prompts);
  assertEquals(a.length, b.length);
  for (let i = 0; i < a.length; i++) {
    assertEquals(a[i].length, b[i].length);
    assert(
      a[i].every((v, j) => Object.is(v, b[i][j])),
      `${c.name}, prompts ${prompts}: output ${i}`,
    );
  }
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
  const parts = (cfgOver = cfg) => ({
    cfg: cfgOver,
    weights: scope,
    inter: cfg.intermediate_size,
    eps: cfg.rms_norm_eps,
    rs: 1,
    normIn: scope.getF32("input_layernorm.weight", [64]),
    normPost: scope.getF32("post_attention_layernorm.weight", [64]),
    mlpBias: false,
  });
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
