/**
 * `mixtral` (Mixtral 8x7B / 8x22B): the Llama trunk with a mixture of
 * SwiGLU experts in every block: router `block_sparse_moe.gate`, experts
 * `block_sparse_moe.experts.{j}.w1` (gate), `w3` (up), `w2` (down);
 * softmax over the router logits, top `num_experts_per_tok`, rescaled to
 * sum 1 (the same as a softmax over the k kept logits). llama.cpp writes
 * it as `llama` with `llama.expert_count`, experts stacked in
 * `ffn_{gate,up,down}_exps`, q/k permuted like Llama.
 *
 * @module
 */

import { type FamilySpec, ggufInt, intField } from "./_spec.ts";

const W = { gate_proj: "w1", up_proj: "w3", down_proj: "w2" } as const;

/** The Mixtral family. */
export const mixtralFamily: FamilySpec = {
  kind: "trunk",
  info: {
    modelType: "mixtral",
    models: "Mixtral 8x7B, 8x22B",
    ggufArchitecture: "llama",
    specifics:
      "mixture of SwiGLU experts through the parallel layer (softmax, top-k, renormalized); GGUF as llama with expert_count",
  },
  hfArchitecture: "MixtralForCausalLM",
  permuteQk: true,
  fromHf(o, where) {
    const sw = o.sliding_window;
    return {
      slidingWindow: sw === null || sw === undefined
        ? null
        : intField(o, "sliding_window", where),
      moe: {
        numExperts: intField(o, "num_local_experts", where),
        topK: intField(o, "num_experts_per_tok", where),
        normalize: true,
        intermediateSize: intField(o, "intermediate_size", where),
      },
    };
  },
  toHf: (cfg) => ({
    num_local_experts: cfg.moe!.numExperts,
    num_experts_per_tok: cfg.moe!.topK,
    sliding_window: cfg.slidingWindow,
  }),
  fromGguf: (get, _names, where) => ({
    moe: {
      numExperts: ggufInt(get, "expert_count", where),
      topK: ggufInt(get, "expert_used_count", where),
      normalize: true,
      intermediateSize: ggufInt(get, "feed_forward_length", where),
    },
  }),
  toGguf(cfg, put) {
    put("expert_count", cfg.moe!.numExperts, "UINT32");
    put("expert_used_count", cfg.moe!.topK, "UINT32");
  },
  hfNames: {
    toFamily: (name) =>
      name
        .replace(/\.mlp\.gate\./, ".block_sparse_moe.gate.")
        .replace(
          /\.mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)\./,
          (_, j, p: keyof typeof W) =>
            `.block_sparse_moe.experts.${j}.${W[p]}.`,
        ),
    fromFamily: (name) =>
      name
        .replace(/\.block_sparse_moe\.gate\./, ".mlp.gate.")
        .replace(
          /\.block_sparse_moe\.experts\.(\d+)\.(w1|w2|w3)\./,
          (_, j, w: string) =>
            `.mlp.experts.${j}.${
              w === "w1" ? "gate_proj" : w === "w3" ? "up_proj" : "down_proj"
            }.`,
        ),
  },
};
