/**
 * The rotary encoders (`nomic_bert`, `modernbert`) as networks of layer
 * plugins, for {@link encoderNetwork} in `encoder_network.ts`.
 *
 * - nomic-bert: `embedding` (token-type row 0 folded into every token row),
 *   `layer_norm`, then per block `residual[multi_head_attention` (not
 *   causal, neox RoPE with `rotary_emb_base`)`]`, `layer_norm`,
 *   `residual[swiglu]` (`fc11`·silu(`fc12`)), `layer_norm` (post-norm).
 * - ModernBERT: `embedding`, `layer_norm`, then per block
 *   `residual[layer_norm` (absent in block 0)`, multi_head_attention]`
 *   (global blocks: the global RoPE base; local blocks: the local base and
 *   a window on both sides, `sliding_window` = `local_attention / 2 + 1`),
 *   `residual[layer_norm, swiglu` with `activation: "gelu"` (GeGLU)`]`,
 *   and a final `layer_norm` (pre-norm).
 *
 * Fused projections are split by rows: `attn_qkv` into q, k and v; ModernBERT's
 * `ffn_up` (`Wi`, `[2·inner, d]`) into the activated half (`gate_proj`)
 * and the multiplied half (`up_proj`). Rows are sliced in their stored
 * dtype (a row of a block-quantized matrix is whole blocks).
 *
 * @module
 */

import type { LayerConfig } from "../core/model.ts";
import { type Tensor, tensorFromF32, toFloat32 } from "../core/tensor.ts";
import { type EncoderConfig, isGlobalLayer } from "./encoder_config.ts";

/** The network config and tensors of a rotary encoder. */
export interface RotaryEncoderNetwork {
  /** The network config. */
  config: { layers: LayerConfig[] };
  /** Its tensors under the network's names. */
  tensors: Map<string, Tensor>;
}

/** Rows `[from, to)` of a matrix, in its stored dtype. */
function rowSlice(t: Tensor, from: number, to: number, name: string): Tensor {
  const rows = t.shape[0], cols = t.shape.slice(1);
  if (t.quant || t.bytes.length % rows !== 0) {
    const per = toFloat32(t).length / rows;
    return tensorFromF32(
      name,
      toFloat32(t).slice(from * per, to * per),
      [to - from, ...cols],
    );
  }
  const rb = t.bytes.length / rows;
  return {
    name,
    dtype: t.dtype,
    shape: [to - from, ...cols],
    bytes: t.bytes.subarray(from * rb, to * rb),
  };
}

/** Reads tensors by GGUF name and writes them under network names. */
function tensorMover(tensors: ReadonlyMap<string, Tensor>) {
  const out = new Map<string, Tensor>();
  const get = (n: string): Tensor => {
    const t = tensors.get(n);
    if (!t) throw new TypeError(`encoderNetwork: tensor "${n}" is missing`);
    return t;
  };
  const put = (to: string, from: string) => {
    out.set(to, { ...get(from), name: to });
  };
  /** Splits a fused matrix (and its bias, when present) into equal row blocks. */
  const split = (from: string, to: string[]) => {
    const w = get(`${from}.weight`);
    const n = w.shape[0] / to.length;
    to.forEach((name, i) =>
      out.set(
        `${name}.weight`,
        rowSlice(w, i * n, (i + 1) * n, `${name}.weight`),
      )
    );
    if (tensors.has(`${from}.bias`)) {
      const b = toFloat32(get(`${from}.bias`));
      to.forEach((name, i) =>
        out.set(
          `${name}.bias`,
          tensorFromF32(`${name}.bias`, b.slice(i * n, (i + 1) * n), [n]),
        )
      );
    }
  };
  return { out, get, put, split, has: (n: string) => tensors.has(n) };
}

/** The attention fields of a block: biases as the tensors say. */
function attentionLayer(
  config: EncoderConfig,
  has: (n: string) => boolean,
  i: number,
  extra: Record<string, unknown>,
): LayerConfig {
  const p = `blk.${i}.`;
  const qkvBias = has(`${p}attn_qkv.bias`) || has(`${p}attn_q.bias`);
  return {
    type: "multi_head_attention",
    num_heads: config.numHeads,
    causal: false,
    use_rope: true,
    rope_style: "neox",
    q_bias: qkvBias,
    k_bias: qkvBias,
    v_bias: qkvBias,
    o_bias: has(`${p}attn_output.bias`),
    ...extra,
  };
}

/** q/k/v from a fused or split projection of block `i`. */
function moveQkv(
  m: ReturnType<typeof tensorMover>,
  i: number,
  to: string,
): void {
  const p = `blk.${i}.`;
  if (m.has(`${p}attn_qkv.weight`)) {
    m.split(`${p}attn_qkv`, ["q_proj", "k_proj", "v_proj"].map((n) => to + n));
  } else {
    for (const [n, g] of [["q", "q"], ["k", "k"], ["v", "v"]]) {
      m.put(`${to}${n}_proj.weight`, `${p}attn_${g}.weight`);
      if (m.has(`${p}attn_${g}.bias`)) {
        m.put(`${to}${n}_proj.bias`, `${p}attn_${g}.bias`);
      }
    }
  }
  m.put(`${to}o_proj.weight`, `${p}attn_output.weight`);
  if (m.has(`${p}attn_output.bias`)) {
    m.put(`${to}o_proj.bias`, `${p}attn_output.bias`);
  }
}

/** A `swiglu` layer's biases: all or none (a missing one is zeros). */
function mlpBiases(
  m: ReturnType<typeof tensorMover>,
  to: string,
  sizes: [string, number][],
): boolean {
  if (!sizes.some(([n]) => m.out.has(`${to}${n}.bias`))) return false;
  for (const [n, size] of sizes) {
    const name = `${to}${n}.bias`;
    if (!m.out.has(name)) {
      m.out.set(name, tensorFromF32(name, new Float32Array(size), [size]));
    }
  }
  return true;
}

/**
 * The network of layer plugins of a nomic-bert encoder.
 *
 * @param config Its configuration (`family: "nomic_bert"`).
 * @param tensors Its tensors by GGUF name; an empty map gives the config alone.
 * @returns The network config and tensors.
 */
export function nomicNetwork(
  config: EncoderConfig,
  tensors: ReadonlyMap<string, Tensor>,
): RotaryEncoderNetwork {
  const d = config.hiddenSize,
    eps = config.normEps,
    I = config.intermediateSize;
  const m = tensorMover(tensors);
  const empty = tensors.size === 0;
  const layers: LayerConfig[] = [
    { type: "embedding", vocab_size: config.vocabSize, embedding_dim: d },
    { type: "layer_norm", epsilon: eps },
  ];
  if (!empty) {
    // every token has type 0: its row joins each token row
    const tok = m.get("token_embd.weight");
    const table = toFloat32(tok).slice();
    if (m.has("token_types.weight")) {
      const type0 = toFloat32(m.get("token_types.weight")).subarray(0, d);
      for (let r = 0; r < table.length; r++) table[r] += type0[r % d];
    }
    m.out.set(
      "layers.0.weight",
      tensorFromF32("layers.0.weight", table, [...tok.shape]),
    );
    m.put("layers.1.weight", "token_embd_norm.weight");
    m.put("layers.1.bias", "token_embd_norm.bias");
  }
  for (let i = 0; i < config.numLayers; i++) {
    const b = 2 + 4 * i, p = `blk.${i}.`;
    const ffn = `layers.${b + 2}.layers.0.`;
    let bias = false;
    if (!empty) {
      moveQkv(m, i, `layers.${b}.layers.0.`);
      for (const s of ["weight", "bias"]) {
        m.put(`layers.${b + 1}.${s}`, `${p}attn_output_norm.${s}`);
        m.put(`layers.${b + 3}.${s}`, `${p}layer_output_norm.${s}`);
      }
      for (
        const [n, g] of [
          ["up_proj", "ffn_up"],
          ["gate_proj", "ffn_gate"],
          ["down_proj", "ffn_down"],
        ]
      ) {
        m.put(`${ffn}${n}.weight`, `${p}${g}.weight`);
        if (m.has(`${p}${g}.bias`)) m.put(`${ffn}${n}.bias`, `${p}${g}.bias`);
      }
      bias = mlpBiases(m, ffn, [["up_proj", I], ["gate_proj", I], [
        "down_proj",
        d,
      ]]);
    }
    layers.push(
      {
        type: "residual",
        layers: [
          attentionLayer(config, m.has, i, { rope_theta: config.ropeTheta }),
        ],
      },
      { type: "layer_norm", epsilon: eps },
      {
        type: "residual",
        layers: [{ type: "swiglu", intermediate_size: I, bias }],
      },
      { type: "layer_norm", epsilon: eps },
    );
  }
  return { config: { layers }, tensors: m.out };
}

/**
 * The network of layer plugins of a ModernBERT encoder.
 *
 * @param config Its configuration (`family: "modernbert"`).
 * @param tensors Its tensors by GGUF name; an empty map gives the config alone.
 * @returns The network config and tensors.
 */
export function modernBertNetwork(
  config: EncoderConfig,
  tensors: ReadonlyMap<string, Tensor>,
): RotaryEncoderNetwork {
  const d = config.hiddenSize, I = config.intermediateSize;
  const m = tensorMover(tensors);
  const empty = tensors.size === 0;
  const norm = (
    to: string,
    from: string,
  ): LayerConfig => {
    if (!empty) {
      m.put(`${to}.weight`, `${from}.weight`);
      if (config.normBias) m.put(`${to}.bias`, `${from}.bias`);
    }
    return {
      type: "layer_norm",
      epsilon: config.normEps,
      bias: config.normBias,
    };
  };
  if (!empty) m.put("layers.0.weight", "token_embd.weight");
  const layers: LayerConfig[] = [
    { type: "embedding", vocab_size: config.vocabSize, embedding_dim: d },
    norm("layers.1", "token_embd_norm"),
  ];
  for (let i = 0; i < config.numLayers; i++) {
    const b = 2 + 2 * i, p = `blk.${i}.`;
    const global = isGlobalLayer(config, i);
    // block 0 has no attention norm (ModernBERT's Identity)
    const preNorm = i > 0 && (empty || m.has(`${p}attn_norm.weight`));
    const attn = `layers.${b}.layers.`;
    const attnLayers: LayerConfig[] = preNorm
      ? [norm(`${attn}0`, `${p}attn_norm`)]
      : [];
    if (!empty) moveQkv(m, i, `${attn}${attnLayers.length}.`);
    attnLayers.push(
      attentionLayer(
        config,
        m.has,
        i,
        global ? { rope_theta: config.ropeTheta } : {
          rope_theta: config.localRopeTheta,
          sliding_window: config.localWindow + 1,
        },
      ),
    );
    const ffn = `layers.${b + 1}.layers.1.`;
    let bias = false;
    if (!empty) {
      m.split(`${p}ffn_up`, [`${ffn}gate_proj`, `${ffn}up_proj`]);
      m.put(`${ffn}down_proj.weight`, `${p}ffn_down.weight`);
      if (m.has(`${p}ffn_down.bias`)) {
        m.put(`${ffn}down_proj.bias`, `${p}ffn_down.bias`);
      }
      bias = mlpBiases(m, ffn, [["gate_proj", I], ["up_proj", I], [
        "down_proj",
        d,
      ]]);
    }
    layers.push(
      { type: "residual", layers: attnLayers },
      {
        type: "residual",
        layers: [
          norm(`layers.${b + 1}.layers.0`, `${p}ffn_norm`),
          {
            type: "swiglu",
            intermediate_size: I,
            bias,
            activation: config.activation,
          },
        ],
      },
    );
  }
  layers.push(norm(`layers.${2 + 2 * config.numLayers}`, "output_norm"));
  return { config: { layers }, tensors: m.out };
}
