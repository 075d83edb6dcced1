/**
 * Shared by block_decode_test.ts and block_prefill_test.ts: quantized
 * `transformer_block`s (weights from the layer's own seeded init, quantized
 * by our GGUF quantizers, optionally placed in kernel memory as the GGUF
 * loaders place them), the pieces the two kernel-memory steps are built
 * from, and a bit-for-bit comparison of outputs.
 */

import { assert, assertEquals } from "@std/assert";
import { transformerBlockLayer } from "../../layers/transformer_block.ts";
import type { BlockDecodeParts } from "../../layers/_block_decode.ts";
import type { LayerConfig } from "../../core/model.ts";
import { createRng } from "../../core/rng.ts";
import type { Scope } from "../../core/plugin.ts";
import { createScope } from "../../core/scope.ts";
import { type Tensor, tensorFromF32 } from "../../core/tensor.ts";
import { quantizeGguf } from "../../core/quants/mod.ts";
import { allocateKernelBytes } from "../../kernels/fast/mod.ts";
import { ctx } from "./_attention_vectors.ts";

/** A block to build. */
export interface BlockCase {
  name: string;
  config: LayerConfig;
  /**
   * dtype per projection name (`q_proj`, …, `down_proj`); others, and
   * "F32", stay F32.
   */
  types: Record<string, string>;
  /** Weights read in place from kernel memory (as the GGUF loaders put them). */
  inKernel?: boolean;
}

const PROJ = ["q_proj", "k_proj", "v_proj", "o_proj"];
const MLP = ["gate_proj", "up_proj", "down_proj"];

/** Every projection of the block in dtype `t`. */
export const allTypes = (t: string): Record<string, string> =>
  Object.fromEntries([...PROJ, ...MLP].map((p) => [p, t]));

/** The cases both steps are checked on. */
export const BLOCK_CASES: BlockCase[] = [
  {
    name: "Q8_0, GQA, neox",
    config: {
      type: "transformer_block",
      d_model: 64,
      num_heads: 4,
      num_kv_heads: 2,
      intermediate_size: 96,
    },
    types: allTypes("Q8_0"),
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
    types: allTypes("Q4_0"),
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
    types: allTypes("Q4_0"),
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
    types: { ...allTypes("Q4_K"), v_proj: "Q6_K", down_proj: "Q6_K" },
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
    types: { ...allTypes("Q5_0"), o_proj: "Q8_0" },
  },
];

function place(b: Uint8Array, inKernel?: boolean): Uint8Array {
  if (!inKernel) return b;
  const k = allocateKernelBytes(b.length);
  k.set(b);
  return k;
}

/** The case's block, its parsed config and its weights' scope. */
export function buildBlock(c: BlockCase) {
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
 * The pieces a step is built from, for a 64-wide block without biases
 * or residual scale (the first case), with `cfg` swapped for `over`.
 */
export function stepParts(
  cfg: ReturnType<typeof buildBlock>["cfg"],
  scope: Scope,
  over: BlockDecodeParts["cfg"] = cfg,
): BlockDecodeParts {
  return {
    cfg: over,
    weights: scope,
    inter: cfg.intermediate_size,
    eps: cfg.rms_norm_eps,
    rs: 1,
    normIn: scope.getF32("input_layernorm.weight", [64]),
    normPost: scope.getF32("post_attention_layernorm.weight", [64]),
    mlpBias: false,
  };
}

/** Asserts that two lists of outputs are the same bits, output by output. */
export function assertSameBits(
  a: Float32Array[],
  b: Float32Array[],
  what: string,
): void {
  assertEquals(a.length, b.length);
  for (let i = 0; i < a.length; i++) {
    assertEquals(a[i].length, b[i].length);
    assert(a[i].every((v, j) => Object.is(v, b[i][j])), `${what}: output ${i}`);
  }
}
