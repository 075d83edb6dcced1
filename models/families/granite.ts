/**
 * `granite` (IBM Granite 3.x dense): the Llama trunk with four
 * multipliers: `embedding_multiplier` (embedding rows), `residual_multiplier`
 * (attention and MLP outputs before each residual add),
 * `attention_multiplier` (replaces 1/√head_dim) and `logits_scaling` (the
 * logits are divided by it). llama.cpp: `granite` with
 * `embedding_scale`, `residual_scale`, `attention.scale`, `logit_scale`;
 * q/k permuted like Llama.
 *
 * @module
 */

import { boolField, type FamilySpec, ggufFloat, numField } from "./_spec.ts";

/** The Granite family. */
export const graniteFamily: FamilySpec = {
  kind: "trunk",
  info: {
    modelType: "granite",
    models: "Granite 3.x (dense)",
    ggufArchitecture: "granite",
    specifics:
      "embedding, residual, attention and logit multipliers (embedding scale, residual_scale, attention_scale, lm_head scale)",
  },
  hfArchitecture: "GraniteForCausalLM",
  permuteQk: true,
  fromHf(o, where) {
    const b = boolField(o, "attention_bias", where, false);
    return {
      attentionBias: { q: b, k: b, v: b, o: b },
      mlpBias: boolField(o, "mlp_bias", where, false),
      embeddingScale: numField(o, "embedding_multiplier", where, 1),
      residualScale: numField(o, "residual_multiplier", where, 1),
      attentionScale: numField(o, "attention_multiplier", where, 1),
      logitsScaling: numField(o, "logits_scaling", where, 1),
    };
  },
  toHf: (cfg) => ({
    attention_bias: cfg.attentionBias.q,
    mlp_bias: cfg.mlpBias,
    embedding_multiplier: cfg.embeddingScale ?? 1,
    residual_multiplier: cfg.residualScale ?? 1,
    attention_multiplier: cfg.attentionScale ?? 1 / Math.sqrt(cfg.headDim),
    logits_scaling: cfg.logitsScaling ?? 1,
  }),
  fromGguf: (get, _names, where) => ({
    embeddingScale: ggufFloat(get, "embedding_scale", where, 1),
    residualScale: ggufFloat(get, "residual_scale", where, 1),
    attentionScale: ggufFloat(get, "attention.scale", where, 1),
    logitsScaling: ggufFloat(get, "logit_scale", where, 1),
  }),
  toGguf(cfg, put) {
    put("embedding_scale", cfg.embeddingScale ?? 1, "FLOAT32");
    put("residual_scale", cfg.residualScale ?? 1, "FLOAT32");
    put(
      "attention.scale",
      cfg.attentionScale ?? 1 / Math.sqrt(cfg.headDim),
      "FLOAT32",
    );
    put("logit_scale", cfg.logitsScaling ?? 1, "FLOAT32");
  },
};
