/**
 * The `transformer_block` layer: one pre-norm Llama decoder layer.
 *
 * ```
 * h   = x + attention(rms_norm(x))
 * out = h + down(silu(gate(rms_norm(h))) · up(rms_norm(h)))
 * ```
 *
 * The config carries every attention field of `multi_head_attention` plus
 * `intermediate_size`, `rms_norm_eps` and `mlp_bias`. Weight names are the
 * Hugging Face Llama names below `model.layers.{n}.`, so mapping a
 * checkpoint is a prefix swap: `input_layernorm.weight`,
 * `self_attn.{q,k,v,o}_proj.weight` (+ biases),
 * `post_attention_layernorm.weight`, `mlp.{gate,up,down}_proj.weight`.
 * The layer's state is its attention's state (the KV cache in `state.kv`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { transformerBlockLayer } from "@modelhost/modelhost/layers";
 * import { createRng, createScope, floatTensor, tensorFromF32 } from "@modelhost/modelhost/core";
 * const ctx = { path: "layers[1]", parseChild: () => { throw new Error(); } };
 * const cfg = transformerBlockLayer.parse(
 *   { type: "transformer_block", d_model: 8, num_heads: 2, intermediate_size: 16 },
 *   ctx,
 * );
 * const specs = transformerBlockLayer.params(cfg);
 * const init = transformerBlockLayer.init!(cfg, createRng(3));
 * const tensors = new Map(specs.map((s) => [s.name, tensorFromF32(s.name, init.get(s.name)!, s.shape)]));
 * const block = transformerBlockLayer.build(cfg, createScope(tensors));
 * const state = {};
 * const y = block.forward(floatTensor(new Float32Array(4 * 8).fill(1), [4, 8]), state);
 * assert(y.shape.join() === "4,8");
 * ```
 *
 * @module
 */

import type { LayerConfig } from "../core/model.ts";
import type {
  Layer,
  LayerPlugin,
  LayerState,
  ParamSpec,
  Scope,
} from "../core/plugin.ts";
import { type FloatTensor, floatTensor } from "../core/tensor.ts";
import { rmsNorm } from "../kernels/norms.ts";
import {
  ATTENTION_FIELDS,
  type AttentionConfig,
  attentionFieldsToJSON,
  parseAttentionFields,
} from "./_attention_config.ts";
import { boolField, numberField, positiveInt } from "./_fields.ts";
import { attentionOnnx, multiHeadAttentionLayer } from "./attention.ts";
import { rmsNormOnnx } from "./_onnx.ts";
import { type SwigluConfig, swigluLayer } from "./swiglu.ts";

/** Normalized transformer-block config: the attention fields plus the MLP and norms. */
export interface TransformerBlockConfig extends AttentionConfig {
  /** Hidden width of the SwiGLU MLP. */
  intermediate_size: number;
  /** Epsilon added to the mean square in both RMS norms. */
  rms_norm_eps: number;
  /** Whether gate/up/down projections have biases. */
  mlp_bias: boolean;
}

const BLOCK_FIELDS = [
  ...ATTENTION_FIELDS,
  "intermediate_size",
  "rms_norm_eps",
  "mlp_bias",
];

/** The block's MLP as a `swiglu` layer config (weights under `mlp.`). */
function mlpConfig(cfg: TransformerBlockConfig): SwigluConfig {
  return swigluLayer.parse({
    type: "swiglu",
    input_size: cfg.d_model,
    intermediate_size: cfg.intermediate_size,
    bias: cfg.mlp_bias,
  }, {
    path: "transformer_block.mlp",
    inputSize: cfg.d_model,
    parseChild: () => {
      throw new TypeError("swiglu has no child layers");
    },
  });
}

/**
 * The transformer-block layer plugin (pre-norm Llama decoder layer).
 * Fields: the attention fields (see `multi_head_attention`),
 * `intermediate_size` (required), `rms_norm_eps` (default 1e-6, Hugging
 * Face's Llama default; Llama 2 checkpoints use 1e-5), `mlp_bias` (false).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { transformerBlockLayer } from "@modelhost/modelhost/layers";
 * const ctx = { path: "layers[1]", inputSize: 64, parseChild: () => { throw new Error(); } };
 * const cfg = transformerBlockLayer.parse(
 *   { type: "transformer_block", num_heads: 8, num_kv_heads: 4, intermediate_size: 172, rms_norm_eps: 1e-5 },
 *   ctx,
 * );
 * assert(cfg.d_model === 64 && cfg.head_dim === 8);
 * assert(transformerBlockLayer.params(cfg).some((p) => p.name === "mlp.down_proj.weight"));
 * ```
 */
export const transformerBlockLayer: LayerPlugin<TransformerBlockConfig> = {
  kind: "layer",
  type: "transformer_block",
  description:
    "Pre-norm Llama decoder layer: RMSNorm → attention → residual → RMSNorm → SwiGLU → residual",
  parse(json: LayerConfig, ctx): TransformerBlockConfig {
    const attn = parseAttentionFields(
      json,
      ctx,
      "transformer_block",
      BLOCK_FIELDS,
    );
    return {
      ...attn,
      intermediate_size: positiveInt(json, "intermediate_size", ctx.path),
      rms_norm_eps: numberField(json, "rms_norm_eps", ctx.path, 1e-6, {
        above: 0,
      }),
      mlp_bias: boolField(json, "mlp_bias", ctx.path, false),
    };
  },
  inputSize: (cfg) => cfg.d_model,
  outputSize: (cfg) => cfg.d_model,
  toJSON: (cfg) => ({
    type: "transformer_block",
    ...attentionFieldsToJSON(cfg),
    intermediate_size: cfg.intermediate_size,
    rms_norm_eps: cfg.rms_norm_eps,
    mlp_bias: cfg.mlp_bias,
  }),
  params(cfg): ParamSpec[] {
    const d = cfg.d_model;
    const out: ParamSpec[] = [
      { name: "input_layernorm.weight", shape: [d], init: "ones" },
    ];
    for (const p of multiHeadAttentionLayer.params(cfg)) {
      out.push({ ...p, name: `self_attn.${p.name}` });
    }
    out.push({
      name: "post_attention_layernorm.weight",
      shape: [d],
      init: "ones",
    });
    for (const p of swigluLayer.params(mlpConfig(cfg))) {
      out.push({ ...p, name: `mlp.${p.name}` });
    }
    return out;
  },
  init(cfg, rng): Map<string, Float32Array> {
    const d = cfg.d_model;
    const out = new Map<string, Float32Array>();
    out.set("input_layernorm.weight", new Float32Array(d).fill(1));
    for (const [n, v] of multiHeadAttentionLayer.init!(cfg, rng)) {
      out.set(`self_attn.${n}`, v);
    }
    out.set("post_attention_layernorm.weight", new Float32Array(d).fill(1));
    for (const [n, v] of swigluLayer.init!(mlpConfig(cfg), rng)) {
      out.set(`mlp.${n}`, v);
    }
    return out;
  },
  build(cfg, weights: Scope): Layer {
    const d = cfg.d_model, eps = cfg.rms_norm_eps;
    const normIn = weights.getF32("input_layernorm.weight", [d]);
    const attn = multiHeadAttentionLayer.build(cfg, weights.at("self_attn"));
    const normPost = weights.getF32("post_attention_layernorm.weight", [d]);
    const mlp = swigluLayer.build(mlpConfig(cfg), weights.at("mlp"));
    return {
      forward(x: FloatTensor, state?: LayerState): FloatTensor {
        const s = x.shape;
        if ((s.length !== 2 && s.length !== 3) || s[s.length - 1] !== d) {
          throw new TypeError(
            `Cannot run transformer_block at "${weights.prefix}": input has shape [${
              s.join(", ")
            }], expected [batch, seq, ${d}] or [seq, ${d}]`,
          );
        }
        const rows = x.data.length / d;
        const a = attn.forward(
          floatTensor(rmsNorm(x.data, rows, d, normIn, eps), [...s]),
          state,
        ).data;
        const h = new Float32Array(x.data.length);
        for (let i = 0; i < h.length; i++) h[i] = x.data[i] + a[i];
        const n = rmsNorm(h, rows, d, normPost, eps);
        const m = mlp.forward(floatTensor(n, [...s])).data;
        for (let i = 0; i < h.length; i++) h[i] += m[i];
        return floatTensor(h, [...s]);
      },
    };
  },
  toOnnx(g, cfg, weights, input, ctx) {
    const d = cfg.d_model, eps = cfg.rms_norm_eps;
    const norm = (name: string, x: string) =>
      rmsNormOnnx(g, x, g.weight(weights, name, { shape: [d] }), eps);
    const a = attentionOnnx(
      g,
      cfg,
      weights.at("self_attn"),
      norm("input_layernorm.weight", input),
    );
    const h = g.op("Add", [input, a]);
    const m = swigluLayer.toOnnx!(
      g,
      mlpConfig(cfg),
      weights.at("mlp"),
      norm("post_attention_layernorm.weight", h),
      ctx,
    );
    return g.op("Add", [h, m]);
  },
};

/**
 * Old name of {@link transformerBlockLayer}.
 *
 * @deprecated Use {@link transformerBlockLayer}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { transformerBlock, transformerBlockLayer } from "@modelhost/modelhost/layers";
 * assert(transformerBlock === transformerBlockLayer);
 * ```
 */
export const transformerBlock: LayerPlugin<TransformerBlockConfig> =
  transformerBlockLayer;
