/**
 * The decoder families beyond Llama (Gemma 1/2/3, Phi-2, Phi-3, GPT-2,
 * StableLM, StarCoder2): their registry, the network of registered layers
 * a variant config stands for (`decoder_embedding → N × decoder_block →
 * rms_norm | layer_norm → dense`), and tensor names between Hugging Face,
 * GGUF (llama.cpp's names) and the network. `config.ts`, `gguf_config.ts`,
 * `transformer.ts` and `convert.ts` hand a config with a `variant` here.
 *
 * @module
 */

import type {
  LayerConfig,
  NetworkConfig,
  TensorIndex,
} from "../../core/model.ts";
import { type Tensor, tensorFromF32, toFloat32 } from "../../core/tensor.ts";
import { decoderBlockLayer } from "../../layers/decoder_block.ts";
import type { TransformerConfig } from "../config.ts";
import type { DecoderFamilySpec } from "./_decoder_spec.ts";
import { gemma3Spec } from "./gemma.ts";
// the list lives in mod.ts (used here only inside functions)
import { DECODER_FAMILY_SPECS } from "./mod.ts";

/** The spec of a Hugging Face `model_type` (the multimodal `gemma3` reads its `text_config`). */
export function decoderFamilySpec(
  modelType: unknown,
): DecoderFamilySpec | undefined {
  if (modelType === "gemma3") return gemma3Spec;
  return DECODER_FAMILY_SPECS.find((s) => s.info.modelType === modelType);
}

/** The spec of a GGUF `general.architecture`. */
export function decoderFamilyByGguf(
  arch: unknown,
): DecoderFamilySpec | undefined {
  return DECODER_FAMILY_SPECS.find((s) => s.info.ggufArchitecture === arch);
}

/** The spec of a config (which must carry a variant). */
export function decoderSpecOf(cfg: TransformerConfig): DecoderFamilySpec {
  const s = decoderFamilySpec(cfg.family);
  if (!s || !cfg.variant) {
    throw new TypeError(`${cfg.family} is not a decoder_block family`);
  }
  return s;
}

/** The `config.json` of a variant config. */
export function variantToHf(
  cfg: TransformerConfig,
): Record<string, unknown> & { architectures: string[]; model_type: string } {
  const spec = decoderSpecOf(cfg);
  return {
    architectures: [spec.hfArchitecture],
    model_type: spec.info.modelType,
    vocab_size: cfg.vocabSize,
    hidden_size: cfg.hiddenSize,
    intermediate_size: cfg.intermediateSize,
    num_hidden_layers: cfg.numLayers,
    num_attention_heads: cfg.numHeads,
    num_key_value_heads: cfg.numKvHeads,
    max_position_embeddings: cfg.maxPositionEmbeddings,
    ...spec.toHf(cfg),
    ...(cfg.bosTokenId !== undefined ? { bos_token_id: cfg.bosTokenId } : {}),
    ...(cfg.eosTokenIds.length > 0
      ? {
        eos_token_id: cfg.eosTokenIds.length === 1
          ? cfg.eosTokenIds[0]
          : [...cfg.eosTokenIds],
      }
      : {}),
    torch_dtype: "float32",
  };
}

/** The `decoder_block` JSON of block `i`. */
function blockJson(cfg: TransformerConfig, i: number): LayerConfig {
  const v = cfg.variant!;
  const l = v.layers[i];
  return {
    type: "decoder_block",
    d_model: cfg.hiddenSize,
    num_heads: cfg.numHeads,
    num_kv_heads: cfg.numKvHeads,
    head_dim: cfg.headDim,
    rope_theta: l.ropeTheta,
    rope_style: "neox",
    rope_scaling: l.ropeScaling ? { ...l.ropeScaling } : null,
    rotary_dim: v.rotaryDim,
    sliding_window: l.window,
    q_bias: cfg.attentionBias.q,
    k_bias: cfg.attentionBias.k,
    v_bias: cfg.attentionBias.v,
    o_bias: cfg.attentionBias.o,
    intermediate_size: cfg.intermediateSize,
    norm: v.norm,
    norm_eps: cfg.rmsNormEps,
    mlp: v.mlp,
    activation: v.activation,
    mlp_bias: cfg.mlpBias,
    fused_qkv: v.fusedQkv,
    fused_gate_up: v.fusedGateUp,
    parallel: v.parallel,
    post_norms: v.postNorms,
    qk_norm: v.qkNorm ? "head" : null,
    qk_norm_eps: cfg.rmsNormEps,
    attention_scale: v.attnScale,
    attn_softcap: v.attnSoftcap,
    rope_factors: v.longrope ? [...v.longrope.short] : null,
    rope_attn_factor: v.longrope?.attnFactor ?? 1,
  };
}

/** GGUF tensors a family's files hold besides the network's, by name. */
export const GGUF_EXTRA_TENSORS: readonly string[] = [
  "rope_factors_short.weight",
  "rope_factors_long.weight",
];

/** The values of the {@link GGUF_EXTRA_TENSORS} a file holds. */
export async function ggufExtraValues(
  index: TensorIndex,
): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  for (const n of GGUF_EXTRA_TENSORS) {
    if (index.has(n)) out.set(n, toFloat32(await index.load(n)));
  }
  return out;
}

/**
 * The network a variant config stands for: layer 0 `decoder_embedding`,
 * layers 1 … N `decoder_block`, N+1 the final norm, N+2 the lm_head.
 */
export function variantNetwork(cfg: TransformerConfig): NetworkConfig {
  const v = cfg.variant!;
  const layers: LayerConfig[] = [{
    type: "decoder_embedding",
    vocab_size: cfg.vocabSize,
    embedding_dim: cfg.hiddenSize,
    scale: v.embedScale,
    max_positions: v.positions,
  }];
  for (let i = 0; i < cfg.numLayers; i++) layers.push(blockJson(cfg, i));
  layers.push(
    v.norm === "rms"
      ? { type: "rms_norm", norm_size: cfg.hiddenSize, epsilon: cfg.rmsNormEps }
      : {
        type: "layer_norm",
        norm_size: cfg.hiddenSize,
        epsilon: cfg.rmsNormEps,
        bias: true,
      },
  );
  layers.push({
    type: "dense",
    input_size: cfg.hiddenSize,
    output_size: cfg.vocabSize,
    bias: v.lmHeadBias,
  });
  return { "modelhost.family": cfg.family, layers };
}

/** One network tensor and where it sits. */
export interface NetTensor {
  /** Network name (`layers.3.self_attn.q_proj.weight`). */
  net: string;
  /** `embedding`, `positions`, `final_norm`, `lm_head` or a block stem. */
  stem: string;
  /** Block index, for block tensors. */
  layer?: number;
  /** Weight or bias. */
  kind: "weight" | "bias";
  /** Network shape. */
  shape: number[];
}

/** Every network tensor of a variant config, in order. */
export function networkTensors(cfg: TransformerConfig): NetTensor[] {
  const v = cfg.variant!;
  const n = cfg.numLayers, d = cfg.hiddenSize;
  const out: NetTensor[] = [{
    net: "layers.0.weight",
    stem: "embedding",
    kind: "weight",
    shape: [cfg.vocabSize, d],
  }];
  if (v.positions > 0) {
    out.push({
      net: "layers.0.position.weight",
      stem: "positions",
      kind: "weight",
      shape: [v.positions, d],
    });
  }
  const ctx = {
    path: "decoder_block",
    parseChild: () => {
      throw new TypeError("decoder_block has no children");
    },
  };
  for (let i = 0; i < n; i++) {
    const bc = decoderBlockLayer.parse(blockJson(cfg, i), ctx);
    for (const p of decoderBlockLayer.params(bc)) {
      const m = p.name.match(/^(.*)\.(weight|bias)$/)!;
      out.push({
        net: `layers.${i + 1}.${p.name}`,
        stem: m[1],
        layer: i,
        kind: m[2] as "weight" | "bias",
        shape: [...p.shape],
      });
    }
  }
  out.push({
    net: `layers.${n + 1}.weight`,
    stem: "final_norm",
    kind: "weight",
    shape: [d],
  });
  if (v.norm === "layer") {
    out.push({
      net: `layers.${n + 1}.bias`,
      stem: "final_norm",
      kind: "bias",
      shape: [d],
    });
  }
  out.push({
    net: `layers.${n + 2}.weight`,
    stem: "lm_head",
    kind: "weight",
    shape: [cfg.vocabSize, d],
  });
  if (v.lmHeadBias) {
    out.push({
      net: `layers.${n + 2}.bias`,
      stem: "lm_head",
      kind: "bias",
      shape: [cfg.vocabSize],
    });
  }
  return out;
}

/** llama.cpp's tensor names by network stem. */
const GGUF_STEMS: Record<string, string> = {
  attn_norm: "attn_norm",
  "self_attn.q_proj": "attn_q",
  "self_attn.k_proj": "attn_k",
  "self_attn.v_proj": "attn_v",
  "self_attn.qkv_proj": "attn_qkv",
  "self_attn.o_proj": "attn_output",
  "self_attn.q_norm": "attn_q_norm",
  "self_attn.k_norm": "attn_k_norm",
  attn_post_norm: "post_attention_norm",
  mlp_norm: "ffn_norm",
  "mlp.gate_proj": "ffn_gate",
  "mlp.up_proj": "ffn_up",
  "mlp.gate_up_proj": "ffn_up",
  "mlp.down_proj": "ffn_down",
  mlp_post_norm: "post_ffw_norm",
};
const GGUF_TOP: Record<string, string> = {
  embedding: "token_embd",
  positions: "position_embd",
  final_norm: "output_norm",
  lm_head: "output",
};

/** The GGUF name of a network tensor. */
export function ggufNameOf(t: NetTensor): string {
  if (t.layer === undefined) return `${GGUF_TOP[t.stem]}.${t.kind}`;
  return `blk.${t.layer}.${GGUF_STEMS[t.stem]}.${t.kind}`;
}

/** The Hugging Face names a network tensor may have (first is the one written). */
export function hfNamesOf(spec: DecoderFamilySpec, t: NetTensor): string[] {
  const h = spec.hf;
  const top = t.stem === "embedding"
    ? h.embedding
    : t.stem === "positions"
    ? h.positions ?? []
    : t.stem === "final_norm"
    ? h.finalNorm
    : t.stem === "lm_head"
    ? h.lmHead
    : undefined;
  if (top) return top.map((s) => `${s}.${t.kind}`);
  const stem = h.blockStems[t.stem];
  if (stem === undefined) {
    throw new TypeError(
      `${spec.info.modelType}: no Hugging Face name for block tensor ${t.stem}`,
    );
  }
  return h.block.map((b) =>
    `${b.replace("{i}", String(t.layer))}${stem}.${t.kind}`
  );
}

/** Whether the lm_head is the embedding (no separate tensor to read). */
function tiedHead(cfg: TransformerConfig, t: NetTensor): boolean {
  return t.stem === "lm_head" && t.kind === "weight" && cfg.tieWordEmbeddings;
}

function changed(t: Tensor, name: string, v: Float32Array): Tensor {
  return tensorFromF32(name, v, [...t.shape]);
}

/**
 * Loads a Hugging Face checkpoint's tensors under network names, with the
 * family's value changes (Gemma's `1 + w` norms, GPT-2's Conv1D
 * transposes).
 */
export async function loadHfTensors(
  cfg: TransformerConfig,
  index: TensorIndex,
  keep: (t: Tensor) => Tensor,
): Promise<Map<string, Tensor>> {
  const spec = decoderSpecOf(cfg);
  const out = new Map<string, Tensor>();
  for (const t of networkTensors(cfg)) {
    if (tiedHead(cfg, t)) continue;
    const from = hfNamesOf(spec, t).find((n) => index.has(n));
    if (from === undefined) continue; // reported as missing by buildTransformer
    let x = await index.load(from);
    const hv = spec.hfValues;
    if (hv?.applies(t.stem, x.shape)) {
      const v = hv.toNetwork(t.stem, toFloat32(x), [...x.shape]);
      x = tensorFromF32(t.net, v, t.shape);
    }
    out.set(t.net, { ...keep(x), name: t.net });
  }
  return out;
}

/** Loads a GGUF file's tensors under network names. */
export async function loadGgufTensors(
  cfg: TransformerConfig,
  index: TensorIndex,
  keep: (t: Tensor) => Tensor,
): Promise<Map<string, Tensor>> {
  const out = new Map<string, Tensor>();
  for (const t of networkTensors(cfg)) {
    if (tiedHead(cfg, t)) continue;
    const from = ggufNameOf(t);
    if (!index.has(from)) continue;
    const x = keep(await index.load(from));
    out.set(t.net, { ...x, name: t.net });
  }
  return out;
}

/** A network tensor written as GGUF: its name and how to make it from the source. */
export interface TensorMove {
  /** Source name. */
  from: string;
  /** Target name. */
  to: string;
  /** The network tensor. */
  t: NetTensor;
  /** Value change, or undefined to copy the stored bytes. */
  values?: (v: Float32Array, shape: number[]) => Float32Array;
  /** Shape of the target. */
  shape: number[];
}

/** How each Hugging Face tensor becomes a GGUF tensor. */
export function hfToGgufMoves(
  cfg: TransformerConfig,
  index: TensorIndex,
): TensorMove[] {
  const spec = decoderSpecOf(cfg);
  const moves: TensorMove[] = [];
  for (const t of networkTensors(cfg)) {
    if (tiedHead(cfg, t) && !spec.ggufOutputRequired) continue;
    // a tied head llama.cpp insists on is written as a copy of the embedding
    const names = hfNamesOf(
      spec,
      tiedHead(cfg, t) ? { ...t, stem: "embedding", layer: undefined } : t,
    );
    const from = names.find((n) => index.has(n));
    if (from === undefined) {
      throw new TypeError(
        `Cannot convert to GGUF: the ${cfg.family} checkpoint has no ${
          names[0]
        }`,
      );
    }
    const shape = [...index.info(from).shape];
    const hv = spec.hfValues?.applies(t.stem, shape)
      ? spec.hfValues
      : undefined;
    const gv = spec.ggufValues?.applies(t.stem, cfg)
      ? spec.ggufValues
      : undefined;
    moves.push({
      from,
      to: ggufNameOf(t),
      t,
      shape: t.shape,
      values: hv || gv
        ? (v, s) => {
          let x = hv ? hv.toNetwork(t.stem, v, s) : v;
          if (gv) x = gv.toGguf(t.stem, x, cfg);
          return x;
        }
        : undefined,
    });
  }
  return moves;
}

/** How each GGUF tensor becomes a Hugging Face tensor. */
export function ggufToHfMoves(
  cfg: TransformerConfig,
  index: TensorIndex,
): TensorMove[] {
  const spec = decoderSpecOf(cfg);
  const moves: TensorMove[] = [];
  for (const t of networkTensors(cfg)) {
    if (tiedHead(cfg, t)) continue;
    const from = ggufNameOf(t);
    if (!index.has(from)) continue;
    const to = hfNamesOf(spec, t)[0];
    const hv = spec.hfValues;
    const hfShape = spec.hfShape?.(t.stem, t.shape) ?? t.shape;
    moves.push({
      from,
      to,
      t,
      shape: hfShape,
      values: hv?.applies(t.stem, hfShape)
        ? (v) => hv.fromNetwork(t.stem, v, [...t.shape])
        : undefined,
    });
  }
  return moves;
}

/** Applies a move to a loaded tensor. */
export function applyMove(m: TensorMove, x: Tensor): Tensor {
  if (!m.values) return { ...x, name: m.to };
  return changed(
    { ...x, shape: m.shape },
    m.to,
    m.values(toFloat32(x), [...x.shape]),
  );
}
