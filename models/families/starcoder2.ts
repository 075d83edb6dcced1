/**
 * StarCoder2: LayerNorm with bias, biases on every projection
 * (`use_bias`), plain GELU (tanh) MLP `c_fc` / `c_proj`, optional sliding
 * window, usually tied embeddings.
 *
 * @module
 */

import { baseFromHf, llamaLike, ropeOf, ropeToHf } from "./_read.ts";
import { boolField } from "./_spec.ts";
import { familyInfo } from "./_info.ts";
import type { DecoderFamilySpec } from "./_decoder_spec.ts";

/** StarCoder2. */
export const starcoder2Spec: DecoderFamilySpec = {
  kind: "decoder_block",
  info: familyInfo("starcoder2"),
  hfArchitecture: "Starcoder2ForCausalLM",
  fromHf(o, where) {
    const base = baseFromHf("starcoder2", o, where, {
      epsKeys: ["norm_epsilon"],
    });
    const rope = ropeOf(o, where);
    const bias = boolField(o, "use_bias", where, true);
    const window = typeof o.sliding_window === "number"
      ? o.sliding_window
      : null;
    return {
      ...base,
      slidingWindow: window,
      attentionBias: { q: bias, k: bias, v: bias, o: bias },
      mlpBias: bias,
      tieWordEmbeddings: boolField(o, "tie_word_embeddings", where, true),
      variant: {
        ...llamaLike(
          base.numLayers,
          base.headDim,
          rope.theta,
          rope.scaling,
          window,
        ),
        norm: "layer",
        mlp: "plain",
        activation: "gelu_tanh",
      },
    };
  },
  toHf: (cfg) => ({
    norm_epsilon: cfg.rmsNormEps,
    hidden_act: "gelu_pytorch_tanh",
    use_bias: cfg.mlpBias,
    sliding_window: cfg.slidingWindow,
    tie_word_embeddings: cfg.tieWordEmbeddings,
    rope_parameters: ropeToHf(cfg.ropeTheta, cfg.ropeScaling),
  }),
  toGguf(cfg, put) {
    if (cfg.slidingWindow !== null) {
      put("starcoder2.attention.sliding_window", cfg.slidingWindow, "UINT32");
    }
  },
  fromGguf(get, base) {
    const sw = get("attention.sliding_window");
    const window = typeof sw === "number" && sw > 0 ? sw : null;
    return {
      ...llamaLike(
        base.numLayers,
        base.headDim,
        base.ropeTheta,
        base.ropeScaling,
        window,
      ),
      norm: "layer",
      mlp: "plain",
      activation: "gelu_tanh",
    };
  },
  hf: {
    block: ["model.layers.{i}."],
    blockStems: {
      attn_norm: "input_layernorm",
      "self_attn.q_proj": "self_attn.q_proj",
      "self_attn.k_proj": "self_attn.k_proj",
      "self_attn.v_proj": "self_attn.v_proj",
      "self_attn.o_proj": "self_attn.o_proj",
      mlp_norm: "post_attention_layernorm",
      "mlp.up_proj": "mlp.c_fc",
      "mlp.down_proj": "mlp.c_proj",
    },
    embedding: ["model.embed_tokens"],
    finalNorm: ["model.norm"],
    lmHead: ["lm_head"],
  },
};
