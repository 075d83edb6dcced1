/**
 * The networks the ONNX tests export: every layer type and variant. Shared by
 * the ONNX Runtime parity test and the onnx.checker conformance test.
 */

import type { LayerConfig } from "../../core/model.ts";
import { buildNetwork, initNetwork, type Network } from "../../core/network.ts";
import { createRng } from "../../core/rng.ts";
import {
  type FloatTensor,
  floatTensor,
  type Tensor,
} from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import type { OnnxExportOptions } from "../../formats/onnx/mod.ts";

/** One exported network. */
export interface OnnxCase {
  /** Test name. */
  name: string;
  /** Network config. */
  config: Record<string, unknown>;
  /** Export options beside the opset. */
  options?: OnnxExportOptions;
  /** What the graph input holds. @default {"features"} */
  input?: "features" | "ids" | "sequence";
  /** Vocabulary size, for `ids` inputs. */
  vocab?: number;
  /** Replaces or adds tensors after the seeded init. */
  tensors?: (init: Map<string, Tensor>) => Map<string, Tensor>;
  /** Lowest opset the case exports at. */
  minOpset?: number;
  /** Highest opset the case exports at. */
  maxOpset?: number;
}

const dense = (output_size: number, activation = "linear", extra = {}) => ({
  type: "dense",
  output_size,
  activation,
  ...extra,
});

function net(input_size: number, ...layers: LayerConfig[]) {
  return { input_size, layers };
}

const ACTIVATIONS = [
  "linear",
  "relu",
  "leaky_relu",
  "sigmoid",
  "tanh",
  "softplus",
  "gelu",
  "gelu_tanh",
  "silu",
  "softmax",
];

/** Every case. */
export const CASES: OnnxCase[] = [
  ...ACTIVATIONS.map((a) => ({
    name: `dense ${a}`,
    config: net(
      6,
      dense(5, a, a === "leaky_relu" ? { negative_slope: 0.2 } : {}),
    ),
  })),
  {
    name: "dense without bias",
    config: net(6, dense(4, "tanh", { bias: false })),
  },
  {
    name: "MLP 2 layers",
    config: net(8, dense(16, "relu"), dense(3, "softmax")),
  },
  { name: "softmax standard", config: net(6, { type: "softmax" }) },
  {
    name: "softmax temperature",
    config: net(6, dense(6), {
      type: "softmax",
      softmax_variant: "temperature",
      temperature: 0.5,
    }),
  },
  {
    name: "softmax masked",
    config: net(5, dense(5), {
      type: "softmax",
      softmax_variant: "masked",
      mask: [true, false, true, true, false],
      temperature: 2,
    }),
  },
  {
    name: "softmax sparsemax",
    config: net(7, dense(7), { type: "softmax", softmax_variant: "sparsemax" }),
  },
  {
    name: "softmax sparsemax temperature 3",
    config: net(7, dense(7), {
      type: "softmax",
      softmax_variant: "sparse",
      temperature: 3,
    }),
  },
  ...[1, 1.5, 2, 1.3, 1.75].map((alpha) => ({
    name: `softmax entmax alpha ${alpha}`,
    config: net(7, dense(7), {
      type: "softmax",
      softmax_variant: "entmax",
      entmax_alpha: alpha,
      temperature: 0.8,
    }),
  })),
  {
    name: "softmax gumbel",
    config: net(4, dense(4), {
      type: "softmax",
      softmax_variant: "gumbel",
      seed: 11,
      temperature: 0.7,
    }),
    options: { gumbelMaxRows: 16 },
  },
  {
    name: "softmax grid",
    config: net(6, dense(6), {
      type: "softmax",
      softmax_variant: "grid",
      softmax_rows: 2,
    }),
  },
  { name: "layer_norm", config: net(6, dense(6), { type: "layer_norm" }) },
  {
    name: "layer_norm without bias, epsilon 0.1",
    config: net(6, dense(6), { type: "layer_norm", bias: false, epsilon: 0.1 }),
  },
  {
    name: "rms_norm",
    config: net(6, dense(6), { type: "rms_norm", epsilon: 1e-6 }),
  },
  {
    name: "embedding",
    config: {
      layers: [
        { type: "embedding", vocab_size: 11, embedding_dim: 6 },
        dense(3, "tanh"),
      ],
    },
    input: "ids",
    vocab: 11,
  },
  {
    name: "swiglu",
    config: net(6, { type: "swiglu", intermediate_size: 10 }),
  },
  {
    name: "swiglu with biases",
    config: net(6, { type: "swiglu", intermediate_size: 10, bias: true }),
  },
  {
    name: "swiglu as GeGLU (gelu gate)",
    config: net(6, {
      type: "swiglu",
      intermediate_size: 10,
      activation: "gelu",
    }),
  },
  {
    name: "swiglu as GeGLU (gelu_tanh gate, biases)",
    config: net(6, {
      type: "swiglu",
      intermediate_size: 10,
      activation: "gelu_tanh",
      bias: true,
    }),
  },
  {
    name: "residual with layers",
    config: net(6, {
      type: "residual",
      layers: [dense(9, "relu"), dense(6)],
    }),
  },
  {
    name: "residual of the previous layer",
    config: net(6, dense(6, "tanh"), { type: "residual" }),
  },
  {
    name: "sequential",
    config: net(6, {
      type: "sequential",
      layers: [dense(8, "silu"), { type: "layer_norm" }, dense(3)],
    }),
  },
  ...["probabilities", "features", "reconstruction"].flatMap((mode) =>
    ["euclidean", "cosine", "manhattan"].map((metric) => ({
      name: `kmeans ${mode} ${metric}`,
      config: net(5, {
        type: "kmeans",
        num_clusters: 4,
        kmeans_output_mode: mode,
        distance_metric: metric,
        kmeans_temperature: 2.5,
      }),
    }))
  ),
  {
    name: "kmeans with an attached layer",
    config: net(5, {
      type: "kmeans",
      num_clusters: 3,
      attached_layer: dense(4, "tanh"),
    }),
  },
  {
    name: "parallel concat",
    config: net(6, {
      type: "parallel",
      branches: [dense(3, "relu"), dense(2), { type: "softmax" }],
    }),
  },
  {
    name: "parallel add",
    config: net(6, {
      type: "parallel",
      combine_mode: "add",
      branches: [dense(4), dense(4, "sigmoid")],
    }),
  },
  {
    name: "parallel avg",
    config: net(6, {
      type: "parallel",
      combine_mode: "avg",
      branches: [dense(4), dense(4, "tanh"), dense(4, "gelu")],
    }),
  },
  {
    name: "parallel filter (Loom example)",
    config: {
      type: "parallel",
      combine_mode: "filter",
      filter_softmax: "standard",
      filter_gate: { type: "dense", input_size: 16, output_size: 2 },
      branches: [
        { type: "dense", output_size: 8 },
        { type: "kmeans", num_clusters: 4 },
      ],
    },
  },
  {
    name: "parallel filter without gate",
    config: net(6, {
      type: "parallel",
      combine_mode: "filter",
      branches: [dense(4), dense(4, "relu")],
    }),
  },
  {
    name: "parallel filter top_k 2 of 4, temperature",
    config: net(6, {
      type: "parallel",
      combine_mode: "filter",
      filter_gate: dense(4),
      filter_temperature: 0.5,
      top_k: 2,
      branches: [dense(5), dense(3, "relu"), dense(5, "tanh"), {
        type: "sequential",
        layers: [dense(7, "silu"), dense(5)],
      }],
    }),
  },
  {
    name: "parallel filter top_k 1, sparsemax gate",
    config: net(6, {
      type: "parallel",
      combine_mode: "filter",
      filter_gate: dense(3),
      filter_softmax: "sparsemax",
      top_k: 1,
      branches: [dense(4), dense(4, "relu"), dense(4, "tanh")],
    }),
  },
  {
    name: "parallel filter, entmax gate",
    config: net(6, {
      type: "parallel",
      combine_mode: "filter",
      filter_gate: dense(3),
      filter_softmax: { softmax_variant: "entmax" },
      branches: [dense(4), dense(4, "relu"), dense(4, "tanh")],
    }),
  },
  {
    name: "parallel filter, gumbel gate, no gate layer",
    config: net(6, {
      type: "parallel",
      combine_mode: "filter",
      filter_softmax: { softmax_variant: "gumbel", seed: 5 },
      branches: [dense(4), dense(4, "relu"), dense(4, "tanh")],
    }),
    options: { gumbelMaxRows: 8 },
  },
  {
    name: "parallel grid_scatter",
    config: net(6, {
      type: "parallel",
      combine_mode: "grid_scatter",
      grid_output_rows: 2,
      grid_output_cols: 2,
      grid_positions: [
        { branch_index: 0, target_row: 1, target_col: 1 },
        { branch_index: 1, target_row: 0, target_col: 1 },
        { branch_index: 2, target_row: 1, target_col: 0 },
      ],
      branches: [dense(2), dense(3, "relu"), dense(1)],
    }),
  },
  {
    name: "grid network 2×2×1 with a residual",
    config: {
      input_size: 6,
      grid_rows: 2,
      grid_cols: 2,
      layers: [dense(6, "relu"), { type: "residual" }, dense(4), {
        type: "softmax",
      }],
    },
  },
  {
    name: "per-row layers on a [batch, sequence, features] input",
    config: net(6, dense(8, "gelu"), { type: "rms_norm" }, {
      type: "swiglu",
      intermediate_size: 12,
    }),
    input: "sequence",
    options: { sequence: true },
  },
];

/** Deterministic inputs for a case: `batch` rows (× `seq` for sequences). */
export function inputFor(
  c: OnnxCase,
  inputSize: number | undefined,
  batch: number,
  seq = 5,
  seed = 1,
): { ours: FloatTensor; shape: number[]; ids?: BigInt64Array } {
  const rng = createRng(seed * 7919 + batch);
  if (c.input === "ids") {
    const n = batch * seq;
    const ids = new Float32Array(n);
    for (let i = 0; i < n; i++) ids[i] = rng.int(c.vocab!);
    return {
      ours: floatTensor(ids, [batch, seq]),
      shape: [batch, seq],
      ids: BigInt64Array.from(ids, (v) => BigInt(v)),
    };
  }
  const shape = c.input === "sequence"
    ? [batch, seq, inputSize!]
    : [batch, inputSize!];
  const n = shape.reduce((a, b) => a * b, 1);
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = 1.5 * rng.normal();
  return { ours: floatTensor(x, shape), shape };
}

/** The case's network with seeded weights. */
export function caseNetwork(c: OnnxCase, seed = 3): Network {
  const reg = defaultRegistry();
  let tensors = initNetwork(reg, c.config, seed);
  if (c.tensors) tensors = c.tensors(tensors);
  return buildNetwork(reg, c.config, tensors);
}

const attn = (extra: Record<string, unknown>) => ({
  type: "multi_head_attention",
  num_heads: 4,
  ...extra,
});

/** Attention, transformer blocks and a small Llama-family network (prefill graphs). */
export const SEQUENCE_CASES: OnnxCase[] = [
  {
    name: "attention MHA, RoPE neox, causal",
    config: net(16, attn({})),
    input: "sequence",
  },
  {
    name: "attention GQA 4/2, RoPE interleaved",
    config: net(16, attn({ num_kv_heads: 2, rope_style: "interleaved" })),
    input: "sequence",
  },
  {
    name: "attention MQA 4/1, head_dim 6, biases, theta 500",
    config: net(
      16,
      attn({ num_kv_heads: 1, head_dim: 6, bias: true, rope_theta: 500 }),
    ),
    input: "sequence",
  },
  {
    name: "attention not causal, no RoPE",
    config: net(16, attn({ causal: false, use_rope: false, num_kv_heads: 2 })),
    input: "sequence",
  },
  {
    name: "attention not causal, sliding window 2 both ways, GQA",
    config: net(
      16,
      attn({ causal: false, sliding_window: 2, num_kv_heads: 2 }),
    ),
    input: "sequence",
  },
  {
    name: "attention sliding window 2, linear RoPE scaling",
    config: net(
      16,
      attn({
        sliding_window: 2,
        rope_scaling: { rope_type: "linear", factor: 2 },
      }),
    ),
    input: "sequence",
  },
  {
    name: "attention llama3 RoPE scaling",
    config: net(
      16,
      attn({
        num_kv_heads: 2,
        rope_theta: 500000,
        rope_scaling: {
          rope_type: "llama3",
          factor: 8,
          low_freq_factor: 1,
          high_freq_factor: 4,
          original_max_position_embeddings: 8,
        },
      }),
    ),
    input: "sequence",
  },
  {
    name: "transformer_block",
    config: net(16, {
      type: "transformer_block",
      num_heads: 4,
      num_kv_heads: 2,
      intermediate_size: 24,
      rms_norm_eps: 1e-5,
    }),
    input: "sequence",
  },
  {
    name: "attention q/k RMSNorm per head, attention_scale 0.3",
    config: net(
      16,
      attn({ num_kv_heads: 2, qk_norm: "head", attention_scale: 0.3 }),
    ),
    input: "sequence",
  },
  {
    name: "attention q/k RMSNorm over the whole projection",
    config: net(16, attn({ num_kv_heads: 2, qk_norm: "full" })),
    input: "sequence",
  },
  {
    name: "transformer_block post-norms, residual_scale 0.5 (OLMo 2, Granite)",
    config: net(16, {
      type: "transformer_block",
      num_heads: 4,
      num_kv_heads: 2,
      intermediate_size: 24,
      norm_placement: "post",
      residual_scale: 0.5,
      qk_norm: "full",
    }),
    input: "sequence",
  },
  {
    name:
      "transformer_block mixture of experts, top 2 of 4, and top 1 unnormalized",
    config: net(
      16,
      {
        type: "transformer_block",
        num_heads: 4,
        num_kv_heads: 2,
        intermediate_size: 24,
        moe: { num_experts: 4, top_k: 2, intermediate_size: 12 },
      },
      {
        type: "transformer_block",
        num_heads: 4,
        intermediate_size: 24,
        use_rope: false,
        moe: {
          num_experts: 3,
          top_k: 1,
          top_k_normalize: false,
          intermediate_size: 8,
        },
      },
    ),
    input: "sequence",
  },
  {
    name: "embedding and lm_head scales (Granite)",
    config: {
      layers: [
        { type: "embedding", vocab_size: 32, embedding_dim: 16, scale: 3 },
        {
          type: "transformer_block",
          num_heads: 4,
          intermediate_size: 40,
          attention_scale: 0.2,
          residual_scale: 0.7,
        },
        { type: "rms_norm", epsilon: 1e-6 },
        { type: "dense", output_size: 32, bias: false, scale: 0.4 },
      ],
    },
    input: "ids",
    vocab: 32,
  },
  {
    name:
      "Llama-family network (embedding → 2 × transformer_block → rms_norm → lm_head)",
    config: {
      layers: [
        { type: "embedding", vocab_size: 32, embedding_dim: 16 },
        {
          type: "transformer_block",
          num_heads: 4,
          num_kv_heads: 2,
          intermediate_size: 40,
        },
        {
          type: "transformer_block",
          num_heads: 4,
          num_kv_heads: 2,
          intermediate_size: 40,
        },
        { type: "rms_norm", epsilon: 1e-6 },
        { type: "dense", output_size: 32, bias: false },
      ],
    },
    input: "ids",
    vocab: 32,
  },
  ...DECODER_BLOCK_CASES(),
];

/** `decoder_block` variants (the families beyond Llama) and a GPT-2-like network. */
function DECODER_BLOCK_CASES(): OnnxCase[] {
  const block = (extra: Record<string, unknown>) =>
    net(16, {
      type: "decoder_block",
      num_heads: 4,
      num_kv_heads: 2,
      intermediate_size: 20,
      ...extra,
    });
  return [
    {
      name:
        "decoder_block: Gemma 2 (sandwich norms, soft-capping, scale, window)",
      config: block({
        head_dim: 6,
        post_norms: true,
        attention_scale: 0.3,
        attn_softcap: 1.5,
        sliding_window: 3,
        activation: "gelu_tanh",
      }),
      input: "sequence",
    },
    {
      name:
        "decoder_block: Gemma 3 (q/k norm) and Phi-3 (fused qkv, gate_up, partial rotary)",
      config: block({
        qk_norm: "head",
        fused_qkv: true,
        fused_gate_up: true,
        rotary_dim: 2,
        q_bias: true,
      }),
      input: "sequence",
    },
    ...[4, 8].map((after): OnnxCase => ({
      name:
        `decoder_block: Phi-3 LongRoPE, 5 positions, long factors after ${after}`,
      config: block({
        fused_qkv: true,
        fused_gate_up: true,
        rotary_dim: 4,
        rope_factors: [1, 1.5],
        rope_long_factors: [2.5, 9],
        rope_long_after: after,
        rope_attn_factor: 1.2,
      }),
      input: "sequence",
    })),
    {
      name: "decoder_block: Phi-2 (parallel, LayerNorm, plain GELU, biases)",
      config: block({
        norm: "layer",
        parallel: true,
        mlp: "plain",
        activation: "gelu",
        mlp_bias: true,
        bias: true,
        rotary_dim: 2,
      }),
      input: "sequence",
    },
    {
      name:
        "GPT-2-like network (decoder_embedding with positions and scale → decoder_block → layer_norm → lm_head)",
      config: {
        layers: [
          {
            type: "decoder_embedding",
            vocab_size: 32,
            embedding_dim: 16,
            max_positions: 24,
            scale: 1.5,
          },
          {
            type: "decoder_block",
            num_heads: 4,
            intermediate_size: 24,
            norm: "layer",
            mlp: "plain",
            activation: "gelu_tanh",
            fused_qkv: true,
            bias: true,
            mlp_bias: true,
            rotary_dim: 0,
          },
          { type: "layer_norm", epsilon: 1e-5 },
          { type: "dense", output_size: 32, bias: false },
        ],
      },
      input: "ids",
      vocab: 32,
    },
  ];
}
