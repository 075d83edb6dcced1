/**
 * An encoder as a network of layer plugins. BERT, RoBERTa and XLM-R:
 * `embedding`, `position_embedding` (the token-type row 0
 * folded into it), `layer_norm`, then per block a `residual` around a
 * bidirectional `multi_head_attention` (biases, no RoPE), `layer_norm`, a
 * `residual` around the GELU MLP (`dense` → `dense`) and `layer_norm` (BERT's
 * post-norm). nomic-bert and ModernBERT: `embedding`, `layer_norm`, blocks
 * of `residual[multi_head_attention` (rotary, not causal; ModernBERT's local
 * blocks with a `sliding_window` on both sides)`]` and `residual[swiglu]`
 * (SwiGLU; GeGLU for ModernBERT) with `layer_norm`s after (nomic) or
 * before (ModernBERT) them. Such a network runs through `buildNetwork` and exports to ONNX
 * (`exportOnnx(net, { attentionMask: true })` for padded batches); its
 * output is the last hidden states, before pooling.
 *
 * The token-type table enters as its row 0 (every token of type 0, as for a
 * single text); inputs with two segments (cross-encoder pairs) need the
 * {@link buildEncoder} path.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encoderConfigFromHf, encoderNetwork } from "@modelhost/modelhost/models";
 * const c = encoderConfigFromHf({
 *   model_type: "bert", vocab_size: 10, hidden_size: 8, num_hidden_layers: 1,
 *   num_attention_heads: 2, intermediate_size: 16, max_position_embeddings: 12,
 * });
 * assert(encoderNetwork(c, new Map()).config.layers.length === 7);
 * ```
 *
 * @module
 */

import type { LayerConfig } from "../core/model.ts";
import { type Tensor, tensorFromF32, toFloat32 } from "../core/tensor.ts";
import type { EncoderConfig } from "./encoder_config.ts";
import { modernBertNetwork, nomicNetwork } from "./_encoder_network_rotary.ts";

/** What {@link encoderNetwork} returns. */
export interface EncoderNetwork {
  /** The network config (`{ layers: [...] }`). */
  config: { layers: LayerConfig[] };
  /** Its tensors under the network's names (`layers.3.layers.0.q_proj.weight`). */
  tensors: Map<string, Tensor>;
}

/**
 * The network of layer plugins that computes an encoder's last hidden
 * states (every encoder family).
 *
 * @param config The encoder's configuration.
 * @param tensors Its tensors under llama.cpp's GGUF names
 * (`token_embd.weight`, `blk.0.attn_q.weight`, … as
 * {@link encoderTensorName} gives them); an empty map gives the config alone.
 * @returns The network config and its tensors.
 * @throws {TypeError} For a missing tensor.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encoderConfigFromHf, encoderNetwork } from "@modelhost/modelhost/models";
 * const c = encoderConfigFromHf({
 *   model_type: "roberta", vocab_size: 10, hidden_size: 8, num_hidden_layers: 2,
 *   num_attention_heads: 2, intermediate_size: 16, max_position_embeddings: 12, pad_token_id: 1,
 * });
 * const { config } = encoderNetwork(c, new Map());
 * assert(config.layers[1].offset === 2 && config.layers.length === 11);
 * ```
 */
export function encoderNetwork(
  config: EncoderConfig,
  tensors: ReadonlyMap<string, Tensor>,
): EncoderNetwork {
  if (config.family === "nomic_bert") return nomicNetwork(config, tensors);
  if (config.family === "modernbert") {
    return modernBertNetwork(config, tensors);
  }
  const d = config.hiddenSize, eps = config.normEps;
  const layers: LayerConfig[] = [
    { type: "embedding", vocab_size: config.vocabSize, embedding_dim: d },
    {
      type: "position_embedding",
      max_positions: config.maxPositions + config.positionOffset,
      d_model: d,
      ...(config.positionOffset ? { offset: config.positionOffset } : {}),
    },
    { type: "layer_norm", epsilon: eps },
  ];
  for (let i = 0; i < config.numLayers; i++) {
    layers.push(
      {
        type: "residual",
        layers: [{
          type: "multi_head_attention",
          num_heads: config.numHeads,
          causal: false,
          use_rope: false,
          bias: true,
        }],
      },
      { type: "layer_norm", epsilon: eps },
      {
        type: "residual",
        layers: [
          {
            type: "dense",
            output_size: config.intermediateSize,
            activation: config.activation,
          },
          { type: "dense", output_size: d },
        ],
      },
      { type: "layer_norm", epsilon: eps },
    );
  }
  const out = new Map<string, Tensor>();
  if (tensors.size === 0) return { config: { layers }, tensors: out };
  const get = (n: string): Tensor => {
    const t = tensors.get(n);
    if (!t) throw new TypeError(`encoderNetwork: tensor "${n}" is missing`);
    return t;
  };
  const put = (to: string, from: string) => {
    const t = get(from);
    out.set(to, { ...t, name: to });
  };
  put("layers.0.weight", "token_embd.weight");
  // every token has type 0: its row joins each position row
  const pos = get("position_embd.weight");
  const table = toFloat32(pos).slice();
  if (tensors.has("token_types.weight")) {
    const type0 = toFloat32(get("token_types.weight")).subarray(0, d);
    for (let r = 0; r < table.length; r++) table[r] += type0[r % d];
  }
  out.set(
    "layers.1.weight",
    tensorFromF32("layers.1.weight", table, [...pos.shape]),
  );
  put("layers.2.weight", "token_embd_norm.weight");
  put("layers.2.bias", "token_embd_norm.bias");
  for (let i = 0; i < config.numLayers; i++) {
    const b = 3 + 4 * i, blk = `blk.${i}`;
    for (
      const [p, g] of [
        ["q_proj", "attn_q"],
        ["k_proj", "attn_k"],
        ["v_proj", "attn_v"],
        ["o_proj", "attn_output"],
      ]
    ) {
      put(`layers.${b}.layers.0.${p}.weight`, `${blk}.${g}.weight`);
      put(`layers.${b}.layers.0.${p}.bias`, `${blk}.${g}.bias`);
    }
    for (const s of ["weight", "bias"]) {
      put(`layers.${b + 1}.${s}`, `${blk}.attn_output_norm.${s}`);
      put(`layers.${b + 2}.layers.0.${s}`, `${blk}.ffn_up.${s}`);
      put(`layers.${b + 2}.layers.1.${s}`, `${blk}.ffn_down.${s}`);
      put(`layers.${b + 3}.${s}`, `${blk}.layer_output_norm.${s}`);
    }
  }
  return { config: { layers }, tensors: out };
}
