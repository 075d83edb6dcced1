/**
 * `olmo2` (OLMo 2): norms after attention and MLP instead of before
 * (`post_attention_layernorm`, `post_feedforward_layernorm`, no
 * `input_layernorm`), and an RMSNorm over the whole query and key
 * projections before RoPE (`self_attn.{q,k}_norm` of `heads·head_dim`).
 * llama.cpp: `olmo2` with `post_attention_norm`, `post_ffw_norm`,
 * `attn_{q,k}_norm`; rotary on half-split pairs. Its loader wants
 * `output.weight` even for tied embeddings (the export writes a copy) and
 * query heads of `hidden / heads`.
 *
 * @module
 */

import { boolField, type FamilySpec } from "./_spec.ts";

/** The OLMo 2 family. */
export const olmo2Family: FamilySpec = {
  kind: "trunk",
  info: {
    modelType: "olmo2",
    models: "OLMo 2",
    ggufArchitecture: "olmo2",
    specifics:
      "post-norms (norm_placement: post); q/k RMSNorm over the whole projection (qk_norm: full)",
  },
  hfArchitecture: "Olmo2ForCausalLM",
  permuteQk: false,
  ggufNeedsOutput: true,
  fromHf(o, where) {
    const b = boolField(o, "attention_bias", where, false);
    return {
      qkNorm: "full",
      normPlacement: "post",
      attentionBias: { q: b, k: b, v: b, o: b },
    };
  },
  toHf: (cfg) => ({ attention_bias: cfg.attentionBias.q }),
  fromGguf: () => ({ qkNorm: "full", normPlacement: "post" }),
  toGguf() {},
  ggufNames: {
    // the trunk calls the second norm ffn_norm; here it follows attention
    toFamily: (name) => name.replace(/\.ffn_norm\./, ".post_attention_norm."),
    fromFamily: (name) => name.replace(/\.post_attention_norm\./, ".ffn_norm."),
  },
};
