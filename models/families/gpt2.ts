/**
 * GPT-2: learned absolute positions (`wpe`), LayerNorm, fused `c_attn`
 * (q, k, v), plain GELU (tanh) MLP, biases everywhere, no rotary, tied
 * lm_head. Its projections are `Conv1D` modules that store weights
 * `[in, out]`: they are transposed to `[out, in]` on the way in (as
 * llama.cpp's converter does) and back on the way out.
 *
 * @module
 */

import { baseFromHf, llamaLike } from "./_read.ts";
import { numField } from "./_spec.ts";
import { familyInfo } from "./_info.ts";
import type { DecoderFamilySpec, DecoderVariant } from "./_decoder_spec.ts";
import type { TransformerConfig } from "../config.ts";

const TOP = new Set(["embedding", "positions", "final_norm", "lm_head"]);

function transpose(v: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(v.length);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[c * rows + r] = v[r * cols + c];
  }
  return out;
}

function variant(base: TransformerConfig, positions: number): DecoderVariant {
  return {
    ...llamaLike(base.numLayers, base.headDim, 10000, null),
    norm: "layer",
    mlp: "plain",
    activation: "gelu_tanh",
    fusedQkv: true,
    rotaryDim: 0,
    positions,
  };
}

/** GPT-2. */
export const gpt2Spec: DecoderFamilySpec = {
  kind: "decoder_block",
  info: familyInfo("gpt2"),
  hfArchitecture: "GPT2LMHeadModel",
  fromHf(o, where) {
    const act = o.activation_function ?? "gelu_new";
    if (act !== "gelu_new" && act !== "gelu_pytorch_tanh") {
      throw new TypeError(
        `${where}: gpt2 activation_function ${
          JSON.stringify(act)
        } is not supported (gelu_new)`,
      );
    }
    if (
      o.scale_attn_by_inverse_layer_idx === true ||
      o.reorder_and_upcast_attn === true
    ) {
      throw new TypeError(
        `${where}: gpt2 scale_attn_by_inverse_layer_idx / reorder_and_upcast_attn are not supported`,
      );
    }
    const base = baseFromHf("gpt2", o, where, {
      epsKeys: ["layer_norm_epsilon"],
      intermediateFallback: (d) => 4 * d,
      tied: true,
    });
    const positions = numField(
      o,
      ["n_positions", "max_position_embeddings"],
      where,
      1024,
    );
    return {
      ...base,
      maxPositionEmbeddings: positions,
      attentionBias: { q: true, k: true, v: true, o: true },
      mlpBias: true,
      variant: variant(base, positions),
    };
  },
  toHf: (cfg) => ({
    n_embd: cfg.hiddenSize,
    n_layer: cfg.numLayers,
    n_head: cfg.numHeads,
    n_inner: cfg.intermediateSize,
    n_positions: cfg.variant!.positions,
    activation_function: "gelu_new",
    layer_norm_epsilon: cfg.rmsNormEps,
    tie_word_embeddings: true,
  }),
  fromGguf(_get, base) {
    return variant(base, base.maxPositionEmbeddings);
  },
  hf: {
    block: ["transformer.h.{i}.", "h.{i}."],
    blockStems: {
      attn_norm: "ln_1",
      "self_attn.qkv_proj": "attn.c_attn",
      "self_attn.o_proj": "attn.c_proj",
      mlp_norm: "ln_2",
      "mlp.up_proj": "mlp.c_fc",
      "mlp.down_proj": "mlp.c_proj",
    },
    embedding: ["transformer.wte", "wte"],
    positions: ["transformer.wpe", "wpe"],
    finalNorm: ["transformer.ln_f", "ln_f"],
    lmHead: ["lm_head"],
  },
  hfShape: (
    stem,
    s,
  ) => (!TOP.has(stem) && s.length === 2 ? [s[1], s[0]] : undefined),
  hfValues: {
    applies: (stem, shape) => !TOP.has(stem) && shape.length === 2,
    toNetwork: (_, v, shape) => transpose(v, shape[0], shape[1]),
    fromNetwork: (_, v, shape) => transpose(v, shape[0], shape[1]),
  },
};
