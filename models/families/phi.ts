/**
 * Phi-1 / Phi-1.5 / Phi-2 (`phi`; llama.cpp's `phi2`): one LayerNorm feeds
 * attention and MLP in parallel (`x + attn(n) + mlp(n)`), partial rotary
 * (`partial_rotary_factor`), plain GELU (tanh) MLP `fc1`/`fc2`, biases
 * everywhere, an lm_head with a bias.
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
import type { DecoderFamilySpec, DecoderVariant } from "./_decoder_spec.ts";
import type { TransformerConfig } from "../config.ts";

function variant(base: TransformerConfig, rotary: number): DecoderVariant {
  return {
    ...llamaLike(
      base.numLayers,
      base.headDim,
      base.ropeTheta,
      base.ropeScaling,
    ),
    norm: "layer",
    mlp: "plain",
    activation: "gelu_tanh",
    parallel: true,
    rotaryDim: rotary,
    lmHeadBias: true,
  };
}

const BIAS = { q: true, k: true, v: true, o: true };

/** Phi-2. */
export const phiSpec: DecoderFamilySpec = {
  kind: "decoder_block",
  info: familyInfo("phi"),
  hfArchitecture: "PhiForCausalLM",
  fromHf(o, where) {
    if (o.qk_layernorm === true) {
      throw new TypeError(`${where}: phi with qk_layernorm is not supported`);
    }
    const base = baseFromHf("phi", o, where, { epsKeys: ["layer_norm_eps"] });
    const rope = ropeOf(o, where);
    return {
      ...base,
      attentionBias: { ...BIAS },
      mlpBias: true,
      variant: variant(base, rotaryDimOf(base.headDim, rope.partial)),
    };
  },
  toHf: (cfg) => ({
    layer_norm_eps: cfg.rmsNormEps,
    hidden_act: "gelu_new",
    qk_layernorm: false,
    tie_word_embeddings: false,
    partial_rotary_factor: cfg.variant!.rotaryDim / cfg.headDim,
    rope_parameters: ropeToHf(
      cfg.ropeTheta,
      cfg.ropeScaling,
      cfg.variant!.rotaryDim / cfg.headDim,
    ),
  }),
  fromGguf(get, base) {
    const rot = get("rope.dimension_count");
    return variant(base, typeof rot === "number" ? rot : base.headDim);
  },
  ggufOutputRequired: true,
  hf: {
    block: ["model.layers.{i}."],
    blockStems: {
      attn_norm: "input_layernorm",
      "self_attn.q_proj": "self_attn.q_proj",
      "self_attn.k_proj": "self_attn.k_proj",
      "self_attn.v_proj": "self_attn.v_proj",
      "self_attn.o_proj": "self_attn.dense",
      "mlp.up_proj": "mlp.fc1",
      "mlp.down_proj": "mlp.fc2",
    },
    embedding: ["model.embed_tokens"],
    finalNorm: ["model.final_layernorm"],
    lmHead: ["lm_head"],
  },
};
