/**
 * Phi-3 / Phi-3.5 / Phi-4-mini: Llama's block with fused projections
 * (`qkv_proj` rows q, k, v; `gate_up_proj` rows gate, up — llama.cpp keeps
 * them fused as `attn_qkv` and `ffn_up`), and partial rotary where
 * `partial_rotary_factor` says (Phi-4-mini). `longrope` scaling is not
 * implemented (refused by the config reader).
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
import { familyInfo } from "./_info.ts";
import type { FamilySpec } from "./spec.ts";

/** Phi-3. */
export const phi3Spec: FamilySpec = {
  modelType: "phi3",
  ...familyInfo("phi3"),
  hfArchitecture: "Phi3ForCausalLM",
  ggufArch: "phi3",
  fromHf(o, where) {
    const base = baseFromHf("phi3", o, where, { epsKeys: ["rms_norm_eps"] });
    const rope = ropeOf(o, where);
    const window = typeof o.sliding_window === "number"
      ? o.sliding_window
      : null;
    return {
      ...base,
      slidingWindow: window,
      variant: {
        ...llamaLike(
          base.numLayers,
          base.headDim,
          rope.theta,
          rope.scaling,
          window,
        ),
        fusedQkv: true,
        fusedGateUp: true,
        rotaryDim: rotaryDimOf(base.headDim, rope.partial),
      },
    };
  },
  toHf: (cfg) => ({
    rms_norm_eps: cfg.rmsNormEps,
    hidden_act: "silu",
    sliding_window: cfg.slidingWindow,
    tie_word_embeddings: cfg.tieWordEmbeddings,
    rope_parameters: ropeToHf(
      cfg.ropeTheta,
      cfg.ropeScaling,
      cfg.variant!.rotaryDim / cfg.headDim,
    ),
  }),
  toGguf(cfg, put) {
    if (cfg.slidingWindow !== null) {
      put("phi3.attention.sliding_window", cfg.slidingWindow, "UINT32");
    }
  },
  fromGguf(get, base) {
    const rot = get("rope.dimension_count");
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
      fusedQkv: true,
      fusedGateUp: true,
      rotaryDim: typeof rot === "number" ? rot : base.headDim,
    };
  },
  ggufOutputRequired: true,
  hf: {
    block: ["model.layers.{i}."],
    blockStems: {
      attn_norm: "input_layernorm",
      "self_attn.qkv_proj": "self_attn.qkv_proj",
      "self_attn.o_proj": "self_attn.o_proj",
      mlp_norm: "post_attention_layernorm",
      "mlp.gate_up_proj": "mlp.gate_up_proj",
      "mlp.down_proj": "mlp.down_proj",
    },
    embedding: ["model.embed_tokens"],
    finalNorm: ["model.norm"],
    lmHead: ["lm_head"],
  },
};
