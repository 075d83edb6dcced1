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
  ForwardContext,
  Layer,
  LayerPlugin,
  LayerState,
  ParamSpec,
  ParsedLayer,
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
import { boolField, choiceField, numberField, positiveInt } from "./_fields.ts";
import { initLayer, layerParams } from "../core/network.ts";
import { attentionOnnx, multiHeadAttentionLayer } from "./attention.ts";
import { rmsNormOnnx, scalar } from "./_onnx.ts";
import { type SwigluConfig, swigluLayer } from "./swiglu.ts";
import { blockDecodeStep } from "./_block_decode.ts";
import { blockPrefillStep } from "./_block_prefill.ts";

/** A mixture-of-experts MLP: a router and SwiGLU experts, only the top k run per token. */
export interface BlockMoeConfig {
  /** Number of experts. */
  num_experts: number;
  /** Experts each token goes through. */
  top_k: number;
  /** Whether the k router weights are rescaled to sum 1. */
  top_k_normalize: boolean;
  /** Hidden width of each expert's SwiGLU. */
  intermediate_size: number;
}

/** Normalized transformer-block config: the attention fields plus the MLP and norms. */
export interface TransformerBlockConfig extends AttentionConfig {
  /** Hidden width of the SwiGLU MLP. */
  intermediate_size: number;
  /** Epsilon added to the mean square in both RMS norms. */
  rms_norm_eps: number;
  /** Whether gate/up/down projections have biases. */
  mlp_bias: boolean;
  /**
   * Where the two RMS norms sit: `"pre"` normalizes the input of attention
   * and MLP (`input_layernorm`, `post_attention_layernorm`), `"post"` their
   * outputs before the residual add (OLMo 2: `post_attention_layernorm`,
   * `post_feedforward_layernorm`).
   */
  norm_placement: "pre" | "post";
  /** Multiplier of the attention and MLP outputs before each residual add (Granite). */
  residual_scale: number;
  /** A mixture of experts in place of the SwiGLU MLP, or null. */
  moe: BlockMoeConfig | null;
  /** The MoE as a parsed `parallel` layer (filter mode, top_k), when `moe` is set. */
  moe_layer?: ParsedLayer;
}

const BLOCK_FIELDS = [
  ...ATTENTION_FIELDS,
  "intermediate_size",
  "rms_norm_eps",
  "mlp_bias",
  "norm_placement",
  "residual_scale",
  "moe",
];

/** The `parallel` layer a block's MoE stands for (weights under `mlp.`). */
function moeJson(d: number, m: BlockMoeConfig): LayerConfig {
  return {
    type: "parallel",
    input_size: d,
    combine_mode: "filter",
    filter_gate: {
      type: "dense",
      input_size: d,
      output_size: m.num_experts,
      bias: false,
    },
    filter_softmax: "standard",
    top_k: m.top_k,
    ...(m.top_k_normalize ? {} : { top_k_normalize: false }),
    branches: Array.from({ length: m.num_experts }, () => ({
      type: "swiglu",
      input_size: d,
      intermediate_size: m.intermediate_size,
    })),
  };
}

function parseMoe(
  raw: unknown,
  path: string,
): BlockMoeConfig | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw new TypeError(
      `${path}.moe: expected null or an object, got ${JSON.stringify(raw)}`,
    );
  }
  const o = raw as Record<string, unknown>;
  const where = `${path}.moe`;
  const num_experts = positiveInt(o, "num_experts", where);
  const top_k = positiveInt(o, "top_k", where);
  if (top_k > num_experts) {
    throw new TypeError(
      `${where}.top_k: expected at most num_experts (${num_experts}), got ${top_k}`,
    );
  }
  return {
    num_experts,
    top_k,
    top_k_normalize: boolField(o, "top_k_normalize", where, true),
    intermediate_size: positiveInt(o, "intermediate_size", where),
  };
}

/** The block's two norm weights, in order (see `norm_placement`). */
function normNames(cfg: TransformerBlockConfig): [string, string] {
  return cfg.norm_placement === "pre"
    ? ["input_layernorm.weight", "post_attention_layernorm.weight"]
    : ["post_attention_layernorm.weight", "post_feedforward_layernorm.weight"];
}

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
    const moe = parseMoe(json.moe, ctx.path);
    return {
      ...attn,
      intermediate_size: positiveInt(json, "intermediate_size", ctx.path),
      rms_norm_eps: numberField(json, "rms_norm_eps", ctx.path, 1e-6, {
        above: 0,
      }),
      mlp_bias: boolField(json, "mlp_bias", ctx.path, false),
      norm_placement: choiceField(
        json,
        "norm_placement",
        ctx.path,
        ["pre", "post"] as const,
        "pre",
      ),
      residual_scale: numberField(json, "residual_scale", ctx.path, 1, {
        above: 0,
      }),
      moe,
      ...(moe
        ? {
          moe_layer: ctx.parseChild(
            moeJson(attn.d_model, moe),
            `${ctx.path}.moe`,
            attn.d_model,
          ),
        }
        : {}),
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
    ...(cfg.norm_placement !== "pre"
      ? { norm_placement: cfg.norm_placement }
      : {}),
    ...(cfg.residual_scale !== 1 ? { residual_scale: cfg.residual_scale } : {}),
    ...(cfg.moe ? { moe: { ...cfg.moe } } : {}),
  }),
  params(cfg): ParamSpec[] {
    const d = cfg.d_model;
    const [n1, n2] = normNames(cfg);
    const out: ParamSpec[] = [{ name: n1, shape: [d], init: "ones" }];
    for (const p of multiHeadAttentionLayer.params(cfg)) {
      out.push({ ...p, name: `self_attn.${p.name}` });
    }
    out.push({ name: n2, shape: [d], init: "ones" });
    const mlp = cfg.moe_layer
      ? layerParams(cfg.moe_layer)
      : swigluLayer.params(mlpConfig(cfg));
    for (const p of mlp) out.push({ ...p, name: `mlp.${p.name}` });
    return out;
  },
  init(cfg, rng): Map<string, Float32Array> {
    const d = cfg.d_model;
    const [n1, n2] = normNames(cfg);
    const out = new Map<string, Float32Array>();
    out.set(n1, new Float32Array(d).fill(1));
    for (const [n, v] of multiHeadAttentionLayer.init!(cfg, rng)) {
      out.set(`self_attn.${n}`, v);
    }
    out.set(n2, new Float32Array(d).fill(1));
    const mlp = cfg.moe_layer
      ? initLayer(cfg.moe_layer, rng)
      : swigluLayer.init!(mlpConfig(cfg), rng);
    for (const [n, v] of mlp) out.set(`mlp.${n}`, v);
    return out;
  },
  build(cfg, weights: Scope): Layer {
    const d = cfg.d_model, eps = cfg.rms_norm_eps;
    const [n1, n2] = normNames(cfg);
    const pre = cfg.norm_placement === "pre", rs = cfg.residual_scale;
    const normIn = weights.getF32(n1, [d]);
    const attn = multiHeadAttentionLayer.build(cfg, weights.at("self_attn"));
    const normPost = weights.getF32(n2, [d]);
    const mlp = cfg.moe_layer
      ? cfg.moe_layer.plugin.build(cfg.moe_layer.cfg, weights.at("mlp"))
      : swigluLayer.build(mlpConfig(cfg), weights.at("mlp"));
    // one token on kernel memory throughout, where the weights allow it
    const parts = {
      cfg,
      weights,
      inter: cfg.intermediate_size,
      eps,
      rs,
      normIn,
      normPost,
      mlpBias: cfg.mlp_bias,
    };
    const step = pre && !cfg.moe_layer ? blockDecodeStep(parts) : null;
    // many rows of one sequence likewise (a prefill)
    const prefill = pre && !cfg.moe_layer ? blockPrefillStep(parts) : null;
    return {
      forward(
        x: FloatTensor,
        state?: LayerState,
        context?: ForwardContext,
      ): FloatTensor {
        const s = x.shape;
        if ((s.length !== 2 && s.length !== 3) || s[s.length - 1] !== d) {
          throw new TypeError(
            `Cannot run transformer_block at "${weights.prefix}": input has shape [${
              s.join(", ")
            }], expected [batch, seq, ${d}] or [seq, ${d}]`,
          );
        }
        const rows = x.data.length / d;
        if (step && rows === 1 && state && !context?.sequences) {
          const y = step(x.data, state);
          if (y) return floatTensor(y, [...s]);
        }
        if (
          prefill && rows > 1 && !context?.sequences &&
          !context?.attentionMask && (s.length === 2 || s[0] === 1)
        ) {
          // without a state, a cache for this call only (as the layer path)
          const y = prefill(x.data, rows, state ?? {});
          if (y) return floatTensor(y, [...s]);
        }
        let a = attn.forward(
          floatTensor(pre ? rmsNorm(x.data, rows, d, normIn, eps) : x.data, [
            ...s,
          ]),
          state,
          context?.sequences ? { sequences: context.sequences } : undefined,
        ).data;
        if (!pre) a = rmsNorm(a, rows, d, normIn, eps);
        const h = new Float32Array(x.data.length);
        for (let i = 0; i < h.length; i++) h[i] = x.data[i] + rs * a[i];
        const n = pre ? rmsNorm(h, rows, d, normPost, eps) : h;
        let m = mlp.forward(floatTensor(n, [...s])).data;
        if (!pre) m = rmsNorm(m, rows, d, normPost, eps);
        for (let i = 0; i < h.length; i++) h[i] += rs * m[i];
        return floatTensor(h, [...s]);
      },
    };
  },
  toOnnx(g, cfg, weights, input, ctx) {
    const d = cfg.d_model, eps = cfg.rms_norm_eps;
    const [n1, n2] = normNames(cfg);
    const pre = cfg.norm_placement === "pre";
    const norm = (name: string, x: string) =>
      rmsNormOnnx(g, x, g.weight(weights, name, { shape: [d] }), eps);
    const scaled = (x: string) =>
      cfg.residual_scale === 1
        ? x
        : g.op("Mul", [x, scalar(g, cfg.residual_scale)]);
    let a = attentionOnnx(
      g,
      cfg,
      weights.at("self_attn"),
      pre ? norm(n1, input) : input,
    );
    if (!pre) a = norm(n1, a);
    const h = g.op("Add", [input, scaled(a)]);
    const mlpIn = pre ? norm(n2, h) : h;
    let m = cfg.moe_layer
      ? g.lower(cfg.moe_layer, weights.at("mlp"), mlpIn, {
        path: `${ctx.path}.moe`,
      })
      : swigluLayer.toOnnx!(g, mlpConfig(cfg), weights.at("mlp"), mlpIn, ctx);
    if (!pre) m = norm(n2, m);
    return g.op("Add", [h, scaled(m)]);
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
