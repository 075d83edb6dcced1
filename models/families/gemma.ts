/**
 * Gemma 1, 2 and 3 (text): GeGLU MLP (gelu tanh), RMSNorm with `1 + w`
 * (the network holds `1 + w`, as llama.cpp's converter writes it), token
 * embeddings scaled by `√hidden`, tied lm_head; Gemma 2 adds sandwich
 * norms, attention and final soft-capping, alternating sliding / global
 * layers and `query_pre_attn_scalar`; Gemma 3 adds q/k norms and a local
 * RoPE base on its sliding layers.
 *
 * @module
 */

import { familyInfo } from "./_info.ts";
import type { TransformerConfig } from "../config.ts";
import { baseFromHf, llamaLike, optNum, ropeOf, ropeToHf } from "./_read.ts";
import { intField, numField } from "./_spec.ts";
import type {
  DecoderFamily,
  DecoderFamilySpec,
  DecoderVariant,
  HfNames,
  LayerAttention,
} from "./_decoder_spec.ts";

type Json = Record<string, unknown>;

const NORMS = new Set([
  "attn_norm",
  "attn_post_norm",
  "mlp_norm",
  "mlp_post_norm",
  "self_attn.q_norm",
  "self_attn.k_norm",
  "final_norm",
]);

const plusOne = {
  applies: (stem: string) => NORMS.has(stem),
  toNetwork: (_: string, v: Float32Array) => v.map((x) => x + 1),
  fromNetwork: (_: string, v: Float32Array) => v.map((x) => x - 1),
};

function names(sandwich: boolean): HfNames {
  return {
    block: [
      "model.layers.{i}.",
      "model.language_model.layers.{i}.",
      "language_model.model.layers.{i}.",
    ],
    blockStems: {
      attn_norm: "input_layernorm",
      "self_attn.q_proj": "self_attn.q_proj",
      "self_attn.k_proj": "self_attn.k_proj",
      "self_attn.v_proj": "self_attn.v_proj",
      "self_attn.o_proj": "self_attn.o_proj",
      "self_attn.q_norm": "self_attn.q_norm",
      "self_attn.k_norm": "self_attn.k_norm",
      attn_post_norm: "post_attention_layernorm",
      mlp_norm: sandwich
        ? "pre_feedforward_layernorm"
        : "post_attention_layernorm",
      mlp_post_norm: "post_feedforward_layernorm",
      "mlp.gate_proj": "mlp.gate_proj",
      "mlp.up_proj": "mlp.up_proj",
      "mlp.down_proj": "mlp.down_proj",
    },
    embedding: [
      "model.embed_tokens",
      "model.language_model.embed_tokens",
      "language_model.model.embed_tokens",
    ],
    finalNorm: [
      "model.norm",
      "model.language_model.norm",
      "language_model.model.norm",
    ],
    lmHead: ["lm_head", "language_model.lm_head"],
  };
}

function gemmaBase(
  family: DecoderFamily,
  o: Json,
  where: string,
): TransformerConfig {
  const base = baseFromHf(family, o, where, { tied: true });
  const v: DecoderVariant = {
    ...llamaLike(
      base.numLayers,
      base.headDim,
      base.ropeTheta,
      base.ropeScaling,
    ),
    activation: "gelu_tanh",
    embedScale: Math.sqrt(base.hiddenSize),
  };
  return { ...base, attentionBias: attnBias(o), variant: v };
}

function attnBias(o: Json) {
  const b = o.attention_bias === true;
  return { q: b, k: b, v: b, o: b };
}

/** Which layers slide: `layer_types`, else every `pattern`-th layer is global. */
function slidingLayers(o: Json, n: number, pattern: number): boolean[] {
  const types = o.layer_types;
  if (Array.isArray(types) && types.length === n) {
    return types.map((t) => t === "sliding_attention");
  }
  return Array.from({ length: n }, (_, i) => (i + 1) % pattern !== 0);
}

/** The scale folded into q for llama.cpp, which uses `head_dim^-½`. */
function qFold(cfg: TransformerConfig): number {
  const s = cfg.variant!.attnScale;
  return s === null ? 1 : s * Math.sqrt(cfg.headDim);
}

function commonToHf(cfg: TransformerConfig): Json {
  return {
    head_dim: cfg.headDim,
    hidden_activation: "gelu_pytorch_tanh",
    rms_norm_eps: cfg.rmsNormEps,
    attention_bias: cfg.attentionBias.q,
    tie_word_embeddings: true,
  };
}

/** The attention fields Gemma 2 and 3 write to config.json alike. */
function attentionToHf(cfg: TransformerConfig): Json {
  const v = cfg.variant!;
  return {
    query_pre_attn_scalar: v.attnScale === null
      ? cfg.headDim
      : 1 / (v.attnScale * v.attnScale),
    attn_logit_softcapping: v.attnSoftcap,
    final_logit_softcapping: v.finalSoftcap,
    sliding_window: cfg.slidingWindow ?? cfg.maxPositionEmbeddings,
    layer_types: v.layers.map((l) =>
      l.window === null ? "full_attention" : "sliding_attention"
    ),
  };
}

/** Gemma (1). */
export const gemmaSpec: DecoderFamilySpec = {
  kind: "decoder_block",
  info: familyInfo("gemma"),
  hfArchitecture: "GemmaForCausalLM",
  fromHf: (o, where) => gemmaBase("gemma", o, where),
  toHf: (cfg) => ({
    ...commonToHf(cfg),
    rope_parameters: ropeToHf(cfg.ropeTheta, cfg.ropeScaling),
  }),
  fromGguf: (_get, base) => ({
    ...llamaLike(
      base.numLayers,
      base.headDim,
      base.ropeTheta,
      base.ropeScaling,
    ),
    activation: "gelu_tanh",
    embedScale: Math.sqrt(base.hiddenSize),
  }),
  hf: names(false),
  hfValues: plusOne,
};

function gemma2Layers(
  o: Json,
  base: TransformerConfig,
  where: string,
): LayerAttention[] {
  const window = intField(o, ["sliding_window"], where, 4096);
  const slide = slidingLayers(o, base.numLayers, 2);
  return slide.map((s) => ({
    window: s ? window : null,
    ropeTheta: base.ropeTheta,
    ropeScaling: base.ropeScaling ? { ...base.ropeScaling } : null,
  }));
}

/** Gemma 2. */
export const gemma2Spec: DecoderFamilySpec = {
  kind: "decoder_block",
  info: familyInfo("gemma2"),
  hfArchitecture: "Gemma2ForCausalLM",
  fromHf(o, where) {
    const c = gemmaBase("gemma2", o, where);
    const qpas = numField(o, ["query_pre_attn_scalar"], where, c.headDim);
    c.variant = {
      ...c.variant!,
      postNorms: true,
      attnScale: 1 / Math.sqrt(qpas),
      attnSoftcap: optNum(o, "attn_logit_softcapping", where),
      finalSoftcap: optNum(o, "final_logit_softcapping", where),
      layers: gemma2Layers(o, c, where),
    };
    c.slidingWindow = c.variant.layers.find((l) => l.window !== null)
      ?.window ?? null;
    return c;
  },
  toHf(cfg) {
    return {
      ...commonToHf(cfg),
      rope_parameters: ropeToHf(cfg.ropeTheta, cfg.ropeScaling),
      ...attentionToHf(cfg),
    };
  },
  toGguf(cfg, put) {
    const v = cfg.variant!;
    if (cfg.slidingWindow !== null) {
      put("gemma2.attention.sliding_window", cfg.slidingWindow, "UINT32");
    }
    if (v.attnSoftcap !== null) {
      put("gemma2.attn_logit_softcapping", v.attnSoftcap, "FLOAT32");
    }
    if (v.finalSoftcap !== null) {
      put("gemma2.final_logit_softcapping", v.finalSoftcap, "FLOAT32");
    }
  },
  fromGguf(get, base) {
    const sw = get("attention.sliding_window");
    const window = typeof sw === "number" && sw > 0 ? sw : 4096;
    const cap = (k: string) => {
      const x = get(k);
      return typeof x === "number" && x > 0 ? Number(x.toPrecision(7)) : null;
    };
    return {
      ...llamaLike(
        base.numLayers,
        base.headDim,
        base.ropeTheta,
        base.ropeScaling,
      ),
      activation: "gelu_tanh",
      embedScale: Math.sqrt(base.hiddenSize),
      postNorms: true,
      attnSoftcap: cap("attn_logit_softcapping"),
      finalSoftcap: cap("final_logit_softcapping"),
      layers: Array.from({ length: base.numLayers }, (_, i) => ({
        window: i % 2 === 0 ? window : null,
        ropeTheta: base.ropeTheta,
        ropeScaling: base.ropeScaling ? { ...base.ropeScaling } : null,
      })),
    };
  },
  hf: names(true),
  hfValues: plusOne,
  ggufValues: {
    applies: (stem, cfg) => qFold(cfg) !== 1 && stem === "self_attn.q_proj",
    toGguf: (_, v, cfg) => v.map((x) => x * qFold(cfg)),
  },
};

/** Gemma 3 (text; the multimodal `gemma3` checkpoints' language model). */
export const gemma3Spec: DecoderFamilySpec = {
  kind: "decoder_block",
  info: familyInfo("gemma3_text"),
  hfArchitecture: "Gemma3ForCausalLM",
  fromHf(json, where) {
    const o =
      json.model_type === "gemma3" && typeof json.text_config === "object"
        ? { ...(json.text_config as Json), model_type: "gemma3_text" }
        : json;
    const c = gemmaBase("gemma3_text", o, where);
    const global = ropeOf(o, where, "full_attention", 1000000);
    const local = o.rope_local_base_freq !== undefined
      ? {
        theta: numField(o, ["rope_local_base_freq"], where, 10000),
        scaling: null,
      }
      : ropeOf(o, where, "sliding_attention", 10000);
    const window = intField(o, ["sliding_window"], where, 4096);
    const qpas = numField(o, ["query_pre_attn_scalar"], where, c.headDim);
    const slide = slidingLayers(o, c.numLayers, 6);
    c.ropeTheta = global.theta;
    c.ropeScaling = global.scaling;
    c.variant = {
      ...c.variant!,
      postNorms: true,
      qkNorm: true,
      attnScale: 1 / Math.sqrt(qpas),
      attnSoftcap: optNum(o, "attn_logit_softcapping", where),
      finalSoftcap: optNum(o, "final_logit_softcapping", where),
      layers: slide.map((s) =>
        s ? { window, ropeTheta: local.theta, ropeScaling: local.scaling } : {
          window: null,
          ropeTheta: global.theta,
          ropeScaling: global.scaling ? { ...global.scaling } : null,
        }
      ),
    };
    c.slidingWindow = slide.some((s) => s) ? window : null;
    return c;
  },
  toHf(cfg) {
    const v = cfg.variant!;
    const local = v.layers.find((l) => l.window !== null);
    return {
      ...commonToHf(cfg),
      rope_parameters: {
        full_attention: ropeToHf(cfg.ropeTheta, cfg.ropeScaling),
        sliding_attention: ropeToHf(local?.ropeTheta ?? 10000, null),
      },
      ...attentionToHf(cfg),
    };
  },
  toGguf(cfg, put) {
    if (cfg.slidingWindow !== null) {
      put("gemma3.attention.sliding_window", cfg.slidingWindow, "UINT32");
    }
    if (cfg.ropeScaling?.rope_type === "linear") {
      put("gemma3.rope.scaling.type", "linear", "STRING");
      put("gemma3.rope.scaling.factor", cfg.ropeScaling.factor, "FLOAT32");
    }
  },
  fromGguf(get, base) {
    const sw = get("attention.sliding_window");
    const window = typeof sw === "number" && sw > 0 ? sw : 4096;
    const swaBase = get("rope.freq_base_swa");
    const local = typeof swaBase === "number" ? swaBase : 10000;
    return {
      ...llamaLike(
        base.numLayers,
        base.headDim,
        base.ropeTheta,
        base.ropeScaling,
      ),
      activation: "gelu_tanh",
      embedScale: Math.sqrt(base.hiddenSize),
      postNorms: true,
      qkNorm: true,
      // llama.cpp: 5 sliding layers, then a global one
      layers: Array.from(
        { length: base.numLayers },
        (_, i) =>
          i % 6 < 5 ? { window, ropeTheta: local, ropeScaling: null } : {
            window: null,
            ropeTheta: base.ropeTheta,
            ropeScaling: base.ropeScaling ? { ...base.ropeScaling } : null,
          },
      ),
    };
  },
  hf: names(true),
  hfValues: plusOne,
  ggufValues: {
    applies: (stem, cfg) => qFold(cfg) !== 1 && stem === "self_attn.q_norm",
    toGguf: (_, v, cfg) => v.map((x) => x * qFold(cfg)),
  },
};
