/**
 * `qwen3` (Qwen3 dense): the Llama trunk with an RMSNorm over each query
 * and key head before RoPE (`self_attn.{q,k}_norm`, GGUF
 * `attn_{q,k}_norm`), optional attention biases. llama.cpp: `qwen3`, rotary
 * on half-split pairs (no q/k permutation).
 *
 * @module
 */

import { boolField, type FamilySpec } from "./_spec.ts";

/** The Qwen3 family. */
export const qwen3Family: FamilySpec = {
  kind: "trunk",
  info: {
    modelType: "qwen3",
    models: "Qwen3 (dense)",
    ggufArchitecture: "qwen3",
    specifics: "q/k RMSNorm per head before RoPE (qk_norm: head)",
  },
  hfArchitecture: "Qwen3ForCausalLM",
  permuteQk: false,
  fromHf(o, where) {
    const b = boolField(o, "attention_bias", where, false);
    return {
      qkNorm: "head",
      attentionBias: { q: b, k: b, v: b, o: b },
      slidingWindow: null,
    };
  },
  toHf: (cfg) => ({
    attention_bias: cfg.attentionBias.q,
    use_sliding_window: false,
  }),
  fromGguf: (_get, names) => ({
    qkNorm: names.has("blk.0.attn_q_norm.weight") ? "head" : undefined,
  }),
  toGguf() {},
};
