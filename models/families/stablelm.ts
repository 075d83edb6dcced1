/**
 * StableLM (StableLM-2, StableLM-3B-4E1T, StableCode): Llama's SwiGLU block
 * with LayerNorm (weight and bias), partial rotary
 * (`partial_rotary_factor`) and optional q/k/v biases (`use_qkv_bias`).
 * Per-head q/k LayerNorm and the parallel residual are refused.
 *
 * @module
 */

import {
  baseFromHf,
  llamaLike,
  ropeOf,
  ropeToHf,
  rotaryDimOf,
} from "./_read.ts";
import { boolField } from "./_spec.ts";
import { familyInfo } from "./_info.ts";
import type { DecoderFamilySpec } from "./_decoder_spec.ts";

/** StableLM. */
export const stablelmSpec: DecoderFamilySpec = {
  kind: "decoder_block",
  info: familyInfo("stablelm"),
  hfArchitecture: "StableLmForCausalLM",
  fromHf(o, where) {
    if (o.qk_layernorm === true || o.use_parallel_residual === true) {
      throw new TypeError(
        `${where}: stablelm with qk_layernorm or use_parallel_residual is not supported`,
      );
    }
    const base = baseFromHf("stablelm", o, where, {
      epsKeys: ["layer_norm_eps"],
    });
    const rope = ropeOf(o, where);
    const qkv = boolField(o, "use_qkv_bias", where, false);
    return {
      ...base,
      attentionBias: { q: qkv, k: qkv, v: qkv, o: false },
      variant: {
        ...llamaLike(base.numLayers, base.headDim, rope.theta, rope.scaling),
        norm: "layer",
        rotaryDim: rotaryDimOf(base.headDim, rope.partial),
      },
    };
  },
  toHf: (cfg) => ({
    layer_norm_eps: cfg.rmsNormEps,
    hidden_act: "silu",
    use_qkv_bias: cfg.attentionBias.q,
    qk_layernorm: false,
    use_parallel_residual: false,
    tie_word_embeddings: cfg.tieWordEmbeddings,
    partial_rotary_factor: cfg.variant!.rotaryDim / cfg.headDim,
    rope_parameters: ropeToHf(
      cfg.ropeTheta,
      cfg.ropeScaling,
      cfg.variant!.rotaryDim / cfg.headDim,
    ),
  }),
  fromGguf(get, base) {
    const rot = get("rope.dimension_count");
    return {
      ...llamaLike(
        base.numLayers,
        base.headDim,
        base.ropeTheta,
        base.ropeScaling,
      ),
      norm: "layer",
      rotaryDim: typeof rot === "number" ? rot : base.headDim,
    };
  },
  ggufOutputRequired: true,
  hf: {
    block: ["model.layers.{i}."],
    blockStems: {
      attn_norm: "input_layernorm",
      "self_attn.q_proj": "self_attn.q_proj",
      "self_attn.k_proj": "self_attn.k_proj",
      "self_attn.v_proj": "self_attn.v_proj",
      "self_attn.o_proj": "self_attn.o_proj",
      mlp_norm: "post_attention_layernorm",
      "mlp.gate_proj": "mlp.gate_proj",
      "mlp.up_proj": "mlp.up_proj",
      "mlp.down_proj": "mlp.down_proj",
    },
    embedding: ["model.embed_tokens"],
    finalNorm: ["model.norm"],
    lmHead: ["lm_head"],
  },
};
