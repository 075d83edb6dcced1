/**
 * `qwen3_moe` (Qwen3 MoE): Qwen3's attention (q/k RMSNorm per head) with a
 * mixture of SwiGLU experts in every block: router `mlp.gate`, experts
 * `mlp.experts.{j}.{gate,up,down}_proj`; softmax over all router logits,
 * the top `num_experts_per_tok` kept, rescaled to sum 1 when
 * `norm_topk_prob`. llama.cpp: `qwen3moe`, experts stacked in
 * `ffn_{gate,up,down}_exps`, router `ffn_gate_inp`; it always rescales
 * (`expert_weights_norm` is written for files without `norm_topk_prob`).
 *
 * @module
 */

import { boolField, type FamilySpec, ggufInt, intField } from "./_spec.ts";

/** The Qwen3-MoE family. */
export const qwen3MoeFamily: FamilySpec = {
  kind: "trunk",
  info: {
    modelType: "qwen3_moe",
    models: "Qwen3 MoE (30B-A3B, 235B-A22B)",
    ggufArchitecture: "qwen3moe",
    specifics:
      "q/k RMSNorm per head; mixture of SwiGLU experts through the parallel layer (softmax, then top-k, norm_topk_prob)",
  },
  hfArchitecture: "Qwen3MoeForCausalLM",
  permuteQk: false,
  fromHf(o, where) {
    const step = o.decoder_sparse_step ?? 1;
    const dense = o.mlp_only_layers;
    if (step !== 1 || (Array.isArray(dense) && dense.length > 0)) {
      throw new TypeError(
        `${where}: qwen3_moe with dense layers (decoder_sparse_step ${
          JSON.stringify(step)
        }, mlp_only_layers ${
          JSON.stringify(dense)
        }) is not supported; every block must be sparse`,
      );
    }
    const b = boolField(o, "attention_bias", where, false);
    const numExperts = intField(
      o,
      o.num_experts !== undefined ? "num_experts" : "num_local_experts",
      where,
    );
    return {
      qkNorm: "head",
      attentionBias: { q: b, k: b, v: b, o: b },
      slidingWindow: null,
      moe: {
        numExperts,
        topK: intField(o, "num_experts_per_tok", where),
        normalize: boolField(o, "norm_topk_prob", where, false),
        intermediateSize: intField(o, "moe_intermediate_size", where),
      },
    };
  },
  toHf: (cfg) => ({
    attention_bias: cfg.attentionBias.q,
    use_sliding_window: false,
    num_experts: cfg.moe!.numExperts,
    num_experts_per_tok: cfg.moe!.topK,
    norm_topk_prob: cfg.moe!.normalize,
    moe_intermediate_size: cfg.moe!.intermediateSize,
    decoder_sparse_step: 1,
    mlp_only_layers: [],
  }),
  fromGguf(get, names, where) {
    const norm = get("expert_weights_norm");
    return {
      qkNorm: names.has("blk.0.attn_q_norm.weight") ? "head" : undefined,
      moe: {
        numExperts: ggufInt(get, "expert_count", where),
        topK: ggufInt(get, "expert_used_count", where),
        normalize: norm === undefined ? true : norm === true,
        intermediateSize: ggufInt(get, "expert_feed_forward_length", where),
      },
    };
  },
  toGguf(cfg, put) {
    const m = cfg.moe!;
    put("expert_count", m.numExperts, "UINT32");
    put("expert_used_count", m.topK, "UINT32");
    put("expert_feed_forward_length", m.intermediateSize, "UINT32");
    if (!m.normalize) put("expert_weights_norm", false, "BOOL");
  },
};
