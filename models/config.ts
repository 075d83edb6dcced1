/**
 * Llama-family hyperparameters: one {@link TransformerConfig} read from a
 * Hugging Face `config.json` ({@link configFromHf}) or from GGUF metadata
 * ({@link configFromGguf}), and the network of registered layers it stands
 * for ({@link transformerNetwork}): `embedding → N × transformer_block →
 * rms_norm → dense` (the lm_head).
 *
 * Families: `llama` (Llama 1/2/3 with llama3 rope scaling, TinyLlama,
 * SmolLM/SmolLM2 with tied embeddings and `head_dim`), `mistral` (sliding
 * window) and `qwen2` (Qwen2/2.5: q/k/v biases).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { configFromHf, transformerNetwork } from "@modelhost/modelhost/models";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 32, hidden_size: 16, intermediate_size: 40,
 *   num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2,
 *   tie_word_embeddings: true,
 * });
 * const net = transformerNetwork(cfg);
 * assert(cfg.headDim === 4 && net.layers.length === 5);
 * ```
 *
 * @module
 */

import type { LayerConfig, NetworkConfig } from "../core/model.ts";
import type { RopeScaling, RopeStyle } from "../kernels/rope.ts";
import { ropeScalingFromHf } from "./_rope_scaling_hf.ts";
import type {
  DecoderFamily,
  DecoderVariant,
} from "./families/_decoder_spec.ts";
import {
  ALL_FAMILY_SPECS,
  decoderFamilySpec,
  FAMILY_SPECS,
  variantNetwork,
  variantToHf,
} from "./families/mod.ts";

export { ropeScalingFromHf };

/** The architectures this module runs (Hugging Face `model_type` values). */
export type TransformerFamily =
  | "llama"
  | "mistral"
  | "qwen2"
  | "qwen3"
  | "qwen3_moe"
  | "mixtral"
  | "olmo2"
  | "granite"
  | "smollm3"
  | DecoderFamily;

/** One row of {@link FAMILIES}. */
export interface FamilyInfo {
  /** The Hugging Face `model_type`. */
  modelType: TransformerFamily;
  /** Model lines that use it. */
  models: string;
  /** The GGUF `general.architecture` llama.cpp writes for it. */
  ggufArchitecture: string;
  /** What sets it apart from plain Llama. */
  specifics: string;
}

/**
 * The supported families, for listings and error messages.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { FAMILIES } from "@modelhost/modelhost/models";
 * assert(FAMILIES.some((f) => f.modelType === "qwen2"));
 * ```
 */
export const FAMILIES: readonly FamilyInfo[] = [
  {
    modelType: "llama",
    models:
      "Llama 1/2/3 (3.1+ with llama3 rope scaling), TinyLlama, SmolLM/SmolLM2",
    ggufArchitecture: "llama",
    specifics:
      "grouped-query attention, optional tied embeddings, head_dim, attention_bias, mlp_bias",
  },
  {
    modelType: "mistral",
    models: "Mistral 7B and derivatives",
    ggufArchitecture: "llama",
    specifics: "sliding-window attention (sliding_window)",
  },
  {
    modelType: "qwen2",
    models: "Qwen2, Qwen2.5",
    ggufArchitecture: "qwen2",
    specifics:
      "q/k/v projection biases; rotary on half-split pairs in GGUF too",
  },
  ...ALL_FAMILY_SPECS.map((s) => s.info),
];

/**
 * The `model_type` values {@link configFromHf} accepts.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { SUPPORTED_MODEL_TYPES } from "@modelhost/modelhost/models";
 * assert(SUPPORTED_MODEL_TYPES.includes("llama") && SUPPORTED_MODEL_TYPES.includes("mistral"));
 * ```
 */
export const SUPPORTED_MODEL_TYPES: readonly TransformerFamily[] = [
  ...FAMILIES.map((f) => f.modelType),
  // multimodal Gemma 3 checkpoints: their language model runs as gemma3_text
  "gemma3",
];

/** Hyperparameters of a Llama-family decoder. */
export interface TransformerConfig {
  /** The architecture. */
  family: TransformerFamily;
  /** Rows of the embedding and of the lm_head. */
  vocabSize: number;
  /** Width of the residual stream. */
  hiddenSize: number;
  /** Number of transformer blocks. */
  numLayers: number;
  /** Query heads. */
  numHeads: number;
  /** Key/value heads (grouped-query attention). */
  numKvHeads: number;
  /** Size of one head. */
  headDim: number;
  /** Hidden width of the SwiGLU MLP. */
  intermediateSize: number;
  /** Epsilon of every RMS norm. */
  rmsNormEps: number;
  /** RoPE base. */
  ropeTheta: number;
  /** RoPE context-extension rule, or null. */
  ropeScaling: RopeScaling | null;
  /**
   * Pair layout of the q/k rows as stored: `neox` for Hugging Face
   * checkpoints (and GGUF qwen2), `interleaved` for GGUF llama files, whose
   * converter permuted the rows.
   */
  ropeStyle: RopeStyle;
  /** Mistral-style attention window, or null. */
  slidingWindow: number | null;
  /** Biases of the q, k, v and o projections. */
  attentionBias: { q: boolean; k: boolean; v: boolean; o: boolean };
  /** Whether gate/up/down have biases. */
  mlpBias: boolean;
  /** Whether the lm_head reuses the embedding matrix. */
  tieWordEmbeddings: boolean;
  /** Context length the model was trained for. */
  maxPositionEmbeddings: number;
  /** BOS id from the config, when it names one. */
  bosTokenId?: number;
  /** EOS ids from the config (several for Llama 3 instruct models). */
  eosTokenIds: number[];
  /** RMSNorm of queries and keys before RoPE: per head (Qwen3) or over the whole projection (OLMo 2). */
  qkNorm?: "head" | "full";
  /** `"post"`: norms after attention and MLP (OLMo 2); absent: before. */
  normPlacement?: "pre" | "post";
  /** Blocks that run without RoPE (SmolLM3), 0-based. */
  noRopeLayers?: number[];
  /** Multiplier of the embedding rows (Granite). */
  embeddingScale?: number;
  /** Multiplier of attention and MLP outputs before the residual adds (Granite). */
  residualScale?: number;
  /** Multiplier of q·kᵀ in place of 1/√head_dim (Granite). */
  attentionScale?: number;
  /** Divisor of the logits (Granite's `logits_scaling`). */
  logitsScaling?: number;
  /** A mixture of SwiGLU experts in place of each block's MLP. */
  moe?: {
    /** Number of experts. */
    numExperts: number;
    /** Experts each token goes through. */
    topK: number;
    /** Whether the k router weights are rescaled to sum 1. */
    normalize: boolean;
    /** Hidden width of each expert. */
    intermediateSize: number;
  };
  /**
   * What a family beyond Llama changes (Gemma, Phi, GPT-2 …): such a
   * config runs as `decoder_embedding → decoder_block … → norm → dense`.
   */
  variant?: DecoderVariant;
}

/** The parts of a Hugging Face `config.json` that {@link configFromHf} reads. */
export interface HfConfigJson {
  /** `llama`, `mistral` or `qwen2`. */
  model_type?: string;
  /** Other fields (sizes, rope, biases ...). */
  [field: string]: unknown;
}

type Json = Record<string, unknown>;

function describe(v: unknown): string {
  if (v === undefined) return "nothing";
  const s = JSON.stringify(v);
  return s === undefined
    ? String(v)
    : s.length > 60
    ? s.slice(0, 57) + "..."
    : s;
}

function int(
  o: Json,
  key: string,
  where: string,
  fallback?: number,
): number {
  const v = o[key] ?? fallback;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
    throw new TypeError(
      `${where}: "${key}" must be a positive integer, got ${describe(o[key])}`,
    );
  }
  return v;
}

function num(
  o: Json,
  key: string,
  where: string,
  fallback: number,
): number {
  const v = o[key] ?? fallback;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    throw new TypeError(
      `${where}: "${key}" must be a number above 0, got ${describe(o[key])}`,
    );
  }
  return v;
}

function bool(o: Json, key: string, where: string, fallback: boolean): boolean {
  const v = o[key] ?? fallback;
  if (typeof v !== "boolean") {
    throw new TypeError(
      `${where}: "${key}" must be true or false, got ${describe(o[key])}`,
    );
  }
  return v;
}

function idList(v: unknown): number[] {
  if (typeof v === "number" && Number.isInteger(v) && v >= 0) return [v];
  if (Array.isArray(v)) {
    return v.filter((x): x is number => Number.isInteger(x) && x >= 0);
  }
  return [];
}

/**
 * Reads a Hugging Face `config.json`.
 *
 * @param json The parsed `config.json`.
 * @param where Name of the file, for messages. @default "config.json"
 * @returns The hyperparameters (rotary layout `neox`, as HF stores q/k).
 * @throws {TypeError} For an unsupported `model_type` (the message lists the
 * supported ones), a missing or wrong size, a non-SiLU activation or an
 * unsupported rope scaling.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { configFromHf } from "@modelhost/modelhost/models";
 * const cfg = configFromHf({
 *   model_type: "qwen2", vocab_size: 64, hidden_size: 32, intermediate_size: 48,
 *   num_hidden_layers: 1, num_attention_heads: 4, num_key_value_heads: 2,
 * });
 * assert(cfg.attentionBias.q && !cfg.attentionBias.o);
 * ```
 */
export function configFromHf(
  json: HfConfigJson,
  where = "config.json",
): TransformerConfig {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new TypeError(`${where}: expected a JSON object`);
  }
  const o = json as Json;
  const type = o.model_type;
  const decoderSpec = decoderFamilySpec(type);
  if (decoderSpec) return decoderSpec.fromHf(o, where);
  if (!SUPPORTED_MODEL_TYPES.includes(type as TransformerFamily)) {
    throw new TypeError(
      `${where}: model_type ${describe(type)} is not supported; supported: ${
        FAMILIES.map((f) => `${f.modelType} (${f.models})`).join(", ")
      }`,
    );
  }
  const family = type as TransformerFamily;
  const act = o.hidden_act ?? "silu";
  if (act !== "silu" && act !== "swish") {
    throw new TypeError(
      `${where}: hidden_act ${
        describe(act)
      } is not supported (the transformer_block MLP is SwiGLU: silu)`,
    );
  }
  const hiddenSize = int(o, "hidden_size", where);
  const numHeads = int(o, "num_attention_heads", where);
  const numKvHeads = int(o, "num_key_value_heads", where, numHeads);
  const headDim = o.head_dim === null || o.head_dim === undefined
    ? hiddenSize / numHeads
    : int(o, "head_dim", where);
  if (!Number.isInteger(headDim)) {
    throw new TypeError(
      `${where}: hidden_size ${hiddenSize} is not a multiple of num_attention_heads ${numHeads} and no head_dim is given`,
    );
  }
  const attnBias = family === "llama"
    ? bool(o, "attention_bias", where, false)
    : false;
  let slidingWindow: number | null = null;
  if (family === "mistral" && o.sliding_window !== null) {
    slidingWindow = o.sliding_window === undefined
      ? null
      : int(o, "sliding_window", where);
  }
  if (family === "qwen2" && o.use_sliding_window === true) {
    slidingWindow = int(o, "sliding_window", where);
  }
  const spec = FAMILY_SPECS.get(family);
  return {
    family,
    vocabSize: int(o, "vocab_size", where),
    hiddenSize,
    numLayers: int(o, "num_hidden_layers", where),
    numHeads,
    numKvHeads,
    headDim,
    intermediateSize: int(o, "intermediate_size", where),
    rmsNormEps: num(o, "rms_norm_eps", where, 1e-6),
    ropeTheta: num(o, "rope_theta", where, ropeParam(o, "rope_theta") ?? 10000),
    ropeScaling: ropeScalingFromHf(
      o.rope_scaling ?? ropeParametersScaling(o.rope_parameters),
      where,
    ),
    ropeStyle: "neox",
    slidingWindow,
    attentionBias: family === "qwen2"
      ? { q: true, k: true, v: true, o: false }
      : { q: attnBias, k: attnBias, v: attnBias, o: attnBias },
    mlpBias: family === "llama" ? bool(o, "mlp_bias", where, false) : false,
    tieWordEmbeddings: bool(o, "tie_word_embeddings", where, false),
    maxPositionEmbeddings: int(o, "max_position_embeddings", where, 2048),
    ...(typeof o.bos_token_id === "number"
      ? { bosTokenId: o.bos_token_id }
      : {}),
    eosTokenIds: idList(o.eos_token_id),
    ...spec?.fromHf(o, where),
  };
}

/** A field of transformers 5's `rope_parameters` object. */
function ropeParam(o: Json, key: string): number | undefined {
  const p = o.rope_parameters;
  if (p === null || typeof p !== "object" || Array.isArray(p)) return undefined;
  const v = (p as Json)[key];
  return typeof v === "number" ? v : undefined;
}

/** transformers 5's `rope_parameters` as a `rope_scaling` object (null for the default rule). */
function ropeParametersScaling(p: unknown): unknown {
  if (p === null || typeof p !== "object" || Array.isArray(p)) return undefined;
  const o = p as Json;
  const kind = o.rope_type ?? o.type;
  return kind === undefined || kind === "default" ? undefined : o;
}

/**
 * The Hugging Face `config.json` of a config (what {@link configFromHf}
 * reads back to the same hyperparameters, rotary layout aside).
 *
 * @param cfg The hyperparameters.
 * @returns The JSON object.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { configFromHf, configToHf } from "@modelhost/modelhost/models";
 * const j = configToHf(configFromHf({
 *   model_type: "mistral", vocab_size: 8, hidden_size: 8, intermediate_size: 8,
 *   num_hidden_layers: 1, num_attention_heads: 2, sliding_window: 16,
 * }));
 * assert(j.sliding_window === 16 && j.architectures[0] === "MistralForCausalLM");
 * ```
 */
export function configToHf(
  cfg: TransformerConfig,
): HfConfigJson & { architectures: string[] } {
  if (cfg.variant) return variantToHf(cfg);
  const spec = FAMILY_SPECS.get(cfg.family);
  const arch = spec
    ? spec.hfArchitecture
    : cfg.family === "qwen2"
    ? "Qwen2ForCausalLM"
    : cfg.family === "mistral"
    ? "MistralForCausalLM"
    : "LlamaForCausalLM";
  const out: HfConfigJson & { architectures: string[] } = {
    architectures: [arch],
    model_type: cfg.family,
    vocab_size: cfg.vocabSize,
    hidden_size: cfg.hiddenSize,
    intermediate_size: cfg.intermediateSize,
    num_hidden_layers: cfg.numLayers,
    num_attention_heads: cfg.numHeads,
    num_key_value_heads: cfg.numKvHeads,
    head_dim: cfg.headDim,
    hidden_act: "silu",
    max_position_embeddings: cfg.maxPositionEmbeddings,
    rms_norm_eps: cfg.rmsNormEps,
    rope_theta: cfg.ropeTheta,
    rope_scaling: cfg.ropeScaling ? { ...cfg.ropeScaling } : null,
    tie_word_embeddings: cfg.tieWordEmbeddings,
    torch_dtype: "float32",
  };
  if (cfg.family === "llama") {
    out.attention_bias = cfg.attentionBias.q;
    out.mlp_bias = cfg.mlpBias;
  }
  if (cfg.family === "mistral") out.sliding_window = cfg.slidingWindow;
  if (cfg.family === "qwen2") {
    out.use_sliding_window = cfg.slidingWindow !== null;
    out.sliding_window = cfg.slidingWindow ?? cfg.maxPositionEmbeddings;
  }
  if (spec) Object.assign(out, spec.toHf(cfg));
  if (cfg.bosTokenId !== undefined) out.bos_token_id = cfg.bosTokenId;
  if (cfg.eosTokenIds.length > 0) {
    out.eos_token_id = cfg.eosTokenIds.length === 1
      ? cfg.eosTokenIds[0]
      : [...cfg.eosTokenIds];
  }
  return out;
}

/**
 * The network of registered layers a config stands for: layer 0
 * `embedding`, layers 1 … N `transformer_block`, layer N+1 `rms_norm`,
 * layer N+2 `dense` without bias (the lm_head). The config also carries
 * `"modelhost.family"`.
 *
 * @param cfg The hyperparameters.
 * @returns A network config for `buildNetwork`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { configFromHf, transformerNetwork } from "@modelhost/modelhost/models";
 * const net = transformerNetwork(configFromHf({
 *   model_type: "llama", vocab_size: 10, hidden_size: 8, intermediate_size: 16,
 *   num_hidden_layers: 1, num_attention_heads: 2,
 * }));
 * assert(net.layers[1].type === "transformer_block" && net.layers[3].output_size === 10);
 * ```
 */
export function transformerNetwork(cfg: TransformerConfig): NetworkConfig {
  if (cfg.variant) return variantNetwork(cfg);
  const block: LayerConfig = {
    type: "transformer_block",
    d_model: cfg.hiddenSize,
    num_heads: cfg.numHeads,
    num_kv_heads: cfg.numKvHeads,
    head_dim: cfg.headDim,
    rope_theta: cfg.ropeTheta,
    rope_style: cfg.ropeStyle,
    rope_scaling: cfg.ropeScaling ? { ...cfg.ropeScaling } : null,
    sliding_window: cfg.slidingWindow,
    q_bias: cfg.attentionBias.q,
    k_bias: cfg.attentionBias.k,
    v_bias: cfg.attentionBias.v,
    o_bias: cfg.attentionBias.o,
    intermediate_size: cfg.intermediateSize,
    rms_norm_eps: cfg.rmsNormEps,
    mlp_bias: cfg.mlpBias,
    ...familyBlockFields(cfg),
  };
  const layers: LayerConfig[] = [
    {
      type: "embedding",
      vocab_size: cfg.vocabSize,
      embedding_dim: cfg.hiddenSize,
      ...(cfg.embeddingScale !== undefined && cfg.embeddingScale !== 1
        ? { scale: cfg.embeddingScale }
        : {}),
    },
  ];
  const noRope = new Set(cfg.noRopeLayers ?? []);
  for (let i = 0; i < cfg.numLayers; i++) {
    layers.push({
      ...block,
      rope_scaling: cfg.ropeScaling ? { ...cfg.ropeScaling } : null,
      ...(noRope.has(i) ? { use_rope: false } : {}),
    });
  }
  layers.push({
    type: "rms_norm",
    norm_size: cfg.hiddenSize,
    epsilon: cfg.rmsNormEps,
  });
  layers.push({
    type: "dense",
    input_size: cfg.hiddenSize,
    output_size: cfg.vocabSize,
    bias: false,
    ...(cfg.logitsScaling !== undefined && cfg.logitsScaling !== 1
      ? { scale: 1 / cfg.logitsScaling }
      : {}),
  });
  return { "modelhost.family": cfg.family, layers };
}

/** The transformer_block fields the family extras set (q/k norm, norm placement, multipliers, MoE). */
function familyBlockFields(cfg: TransformerConfig): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (cfg.qkNorm) {
    out.qk_norm = cfg.qkNorm;
    out.qk_norm_eps = cfg.rmsNormEps;
  }
  if (cfg.normPlacement === "post") out.norm_placement = "post";
  if (cfg.attentionScale !== undefined) {
    out.attention_scale = cfg.attentionScale;
  }
  if (cfg.residualScale !== undefined && cfg.residualScale !== 1) {
    out.residual_scale = cfg.residualScale;
  }
  if (cfg.moe) {
    out.moe = {
      num_experts: cfg.moe.numExperts,
      top_k: cfg.moe.topK,
      top_k_normalize: cfg.moe.normalize,
      intermediate_size: cfg.moe.intermediateSize,
    };
  }
  return out;
}
