/**
 * Encoder (BERT-family) configurations: what `config.json` of a `bert`,
 * `roberta`, `xlm-roberta` or `modernbert` checkpoint says, read into one
 * {@link EncoderConfig}, and the same facts as GGUF metadata under
 * llama.cpp's architecture names (`bert`, `modern-bert`). Tensor names are
 * mapped from Hugging Face's to llama.cpp's (`blk.0.attn_q.weight` …),
 * which the encoder uses inside.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encoderConfigFromHf } from "@modelhost/modelhost/models";
 * const c = encoderConfigFromHf({
 *   model_type: "bert", vocab_size: 30522, hidden_size: 384, num_hidden_layers: 6,
 *   num_attention_heads: 12, intermediate_size: 1536, max_position_embeddings: 512,
 * });
 * assert(c.family === "bert" && c.norm === "post" && c.positions === "absolute");
 * ```
 *
 * @module
 */

/** Encoder architectures that load. */
export type EncoderFamily =
  | "bert"
  | "roberta"
  | "xlm-roberta"
  | "modernbert"
  | "nomic_bert";

/**
 * The `model_type` values {@link encoderConfigFromHf} reads.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ENCODER_MODEL_TYPES } from "@modelhost/modelhost/models";
 * assert(ENCODER_MODEL_TYPES.includes("modernbert") && ENCODER_MODEL_TYPES.includes("nomic_bert"));
 * ```
 */
export const ENCODER_MODEL_TYPES: readonly EncoderFamily[] = [
  "bert",
  "roberta",
  "xlm-roberta",
  "modernbert",
  "nomic_bert",
];

/** Hyper-parameters of an encoder. */
export interface EncoderConfig {
  /** Architecture. */
  family: EncoderFamily;
  /** Token ids. */
  vocabSize: number;
  /** Width of a token vector. */
  hiddenSize: number;
  /** Blocks. */
  numLayers: number;
  /** Attention heads. */
  numHeads: number;
  /** Inner width of the feed-forward part (per branch for gated ones). */
  intermediateSize: number;
  /** Longest input in tokens. */
  maxPositions: number;
  /** Rows of the token-type table (0: none). */
  typeVocabSize: number;
  /** LayerNorm epsilon. */
  normEps: number;
  /** Whether LayerNorms have a bias. */
  normBias: boolean;
  /** `post`: LayerNorm after each residual add (BERT); `pre`: before each branch (ModernBERT). */
  norm: "post" | "pre";
  /** `absolute`: learned position table; `rotary`: RoPE on q and k (half-split). */
  positions: "absolute" | "rotary";
  /** First position id (RoBERTa counts from its padding id + 1). */
  positionOffset: number;
  /**
   * Feed-forward: `gelu` (up, act, down), `geglu` (one projection split
   * into input and gate, `act(input)·gate`), `swiglu` (separate up and
   * gate projections, `up·silu(gate)`).
   */
  mlp: "gelu" | "geglu" | "swiglu";
  /** `gelu` (erf) or `gelu_tanh`. */
  activation: "gelu" | "gelu_tanh";
  /** RoPE base of global layers. */
  ropeTheta: number;
  /** RoPE base of local (windowed) layers. */
  localRopeTheta: number;
  /** A query sees keys at distance ≤ this in local layers (0: no local layers). */
  localWindow: number;
  /** Every n-th layer (from 0) is global, the others local (1: all global). */
  globalEvery: number;
  /** Padding token id. */
  padTokenId: number;
  /** Classification outputs of a `…ForSequenceClassification` head (0: none). */
  numLabels: number;
}

/** A parsed `config.json` (only the fields read here are typed). */
export type EncoderHfConfig = Record<string, unknown>;

function num(
  cfg: EncoderHfConfig,
  key: string,
  fallback?: number,
): number {
  const v = cfg[key];
  if (v === undefined || v === null) {
    if (fallback !== undefined) return fallback;
    throw new TypeError(`Encoder config: "${key}" is missing`);
  }
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw new TypeError(
      `Encoder config: "${key}" must be a number, found ${JSON.stringify(v)}`,
    );
  }
  return v;
}

function posInt(v: number, key: string): number {
  if (!Number.isInteger(v) || v < 1 || v > 1 << 24) {
    throw new RangeError(
      `Encoder config: "${key}" must be an integer in 1..${
        1 << 24
      }, found ${v}`,
    );
  }
  return v;
}

function gelu(act: unknown): "gelu" | "gelu_tanh" {
  if (act === undefined || act === "gelu") return "gelu";
  if (act === "gelu_new" || act === "gelu_pytorch_tanh") return "gelu_tanh";
  throw new TypeError(
    `Encoder config: activation ${
      JSON.stringify(act)
    } is not supported (gelu, gelu_new, gelu_pytorch_tanh)`,
  );
}

/**
 * Reads an encoder's Hugging Face `config.json`.
 *
 * @param cfg The parsed JSON.
 * @returns The configuration.
 * @throws {TypeError} For another `model_type` or a missing / mistyped field.
 * @throws {RangeError} For sizes out of range or heads that do not divide the width.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encoderConfigFromHf } from "@modelhost/modelhost/models";
 * const c = encoderConfigFromHf({
 *   model_type: "roberta", vocab_size: 50, hidden_size: 8, num_hidden_layers: 1,
 *   num_attention_heads: 2, intermediate_size: 16, max_position_embeddings: 34, pad_token_id: 1,
 * });
 * assert(c.positionOffset === 2 && c.maxPositions === 32);
 * ```
 */
export function encoderConfigFromHf(cfg: EncoderHfConfig): EncoderConfig {
  const type = cfg.model_type;
  if (!ENCODER_MODEL_TYPES.includes(type as EncoderFamily)) {
    throw new TypeError(
      `Encoder config: model_type ${JSON.stringify(type)} is not supported (${
        ENCODER_MODEL_TYPES.join(", ")
      })`,
    );
  }
  const family = type as EncoderFamily;
  if (family === "nomic_bert") return nomicConfig(cfg);
  const hiddenSize = posInt(num(cfg, "hidden_size"), "hidden_size");
  const numHeads = posInt(
    num(cfg, "num_attention_heads"),
    "num_attention_heads",
  );
  if (hiddenSize % numHeads !== 0) {
    throw new RangeError(
      `Encoder config: hidden_size ${hiddenSize} does not split into ${numHeads} heads`,
    );
  }
  const id2label = cfg.id2label;
  const numLabels = typeof cfg.num_labels === "number"
    ? cfg.num_labels
    : id2label && typeof id2label === "object"
    ? Object.keys(id2label).length
    : 0;
  const archs = Array.isArray(cfg.architectures) ? cfg.architectures : [];
  const classifier = archs.some((a) =>
    typeof a === "string" && a.endsWith("ForSequenceClassification")
  );
  const base = {
    family,
    vocabSize: posInt(num(cfg, "vocab_size"), "vocab_size"),
    hiddenSize,
    numLayers: posInt(num(cfg, "num_hidden_layers"), "num_hidden_layers"),
    numHeads,
    intermediateSize: posInt(
      num(cfg, "intermediate_size"),
      "intermediate_size",
    ),
    numLabels: classifier ? numLabels : 0,
  };
  const maxPos = posInt(
    num(cfg, "max_position_embeddings", 512),
    "max_position_embeddings",
  );
  if (family === "modernbert") {
    const rp = cfg.rope_parameters as
      | Record<string, { rope_theta?: number }>
      | undefined;
    const local = num(cfg, "local_attention", 128);
    return {
      ...base,
      maxPositions: maxPos,
      typeVocabSize: 0,
      normEps: num(cfg, "norm_eps", 1e-5),
      normBias: cfg.norm_bias === true,
      norm: "pre",
      positions: "rotary",
      positionOffset: 0,
      mlp: "geglu",
      activation: gelu(cfg.hidden_activation),
      ropeTheta: rp?.full_attention?.rope_theta ??
        num(cfg, "global_rope_theta", 160000),
      localRopeTheta: rp?.sliding_attention?.rope_theta ??
        num(cfg, "local_rope_theta", 10000),
      localWindow: Math.floor(local / 2),
      globalEvery: posInt(
        num(cfg, "global_attn_every_n_layers", 3),
        "global_attn_every_n_layers",
      ),
      padTokenId: num(cfg, "pad_token_id", 0),
    };
  }
  const pad = num(cfg, "pad_token_id", family === "bert" ? 0 : 1);
  const offset = family === "bert" ? 0 : pad + 1;
  if (maxPos <= offset) {
    throw new RangeError(
      `Encoder config: max_position_embeddings ${maxPos} leaves no positions after the offset ${offset}`,
    );
  }
  return {
    ...base,
    maxPositions: maxPos - offset,
    typeVocabSize: num(cfg, "type_vocab_size", 2),
    normEps: num(cfg, "layer_norm_eps", 1e-12),
    normBias: true,
    norm: "post",
    positions: "absolute",
    positionOffset: offset,
    mlp: "gelu",
    activation: gelu(cfg.hidden_act),
    ropeTheta: 10000,
    localRopeTheta: 10000,
    localWindow: 0,
    globalEvery: 1,
    padTokenId: pad,
  };
}

/** nomic-bert's GPT-2-style config (`n_embd`, `n_layer` …): post-norm, rotary, SwiGLU. */
function nomicConfig(cfg: EncoderHfConfig): EncoderConfig {
  const d = posInt(num(cfg, "n_embd"), "n_embd");
  const heads = posInt(num(cfg, "n_head"), "n_head");
  if (d % heads !== 0) {
    throw new RangeError(
      `Encoder config: n_embd ${d} does not split into ${heads} heads`,
    );
  }
  if (num(cfg, "rotary_emb_fraction", 1) !== 1) {
    throw new TypeError(
      `Encoder config: nomic_bert with rotary_emb_fraction ${cfg.rotary_emb_fraction} is not supported (1.0)`,
    );
  }
  if (cfg.rotary_emb_interleaved === true || cfg.prenorm === true) {
    throw new TypeError(
      "Encoder config: nomic_bert with interleaved rotary or prenorm is not supported",
    );
  }
  const act = cfg.activation_function;
  if (act !== undefined && act !== "swiglu") {
    throw new TypeError(
      `Encoder config: nomic_bert activation ${
        JSON.stringify(act)
      } is not supported (swiglu)`,
    );
  }
  // the gated MLP rounds its width up to a multiple of 256
  const inner = num(cfg, "n_inner", Math.floor((8 * d) / 3));
  return {
    family: "nomic_bert",
    vocabSize: posInt(num(cfg, "vocab_size"), "vocab_size"),
    hiddenSize: d,
    numLayers: posInt(num(cfg, "n_layer"), "n_layer"),
    numHeads: heads,
    intermediateSize: posInt(Math.ceil(inner / 256) * 256, "n_inner"),
    maxPositions: posInt(num(cfg, "n_positions", 2048), "n_positions"),
    typeVocabSize: num(cfg, "type_vocab_size", 2),
    normEps: num(cfg, "layer_norm_epsilon", 1e-12),
    normBias: true,
    norm: "post",
    positions: "rotary",
    positionOffset: 0,
    mlp: "swiglu",
    activation: "gelu",
    ropeTheta: num(cfg, "rotary_emb_base", 10000),
    localRopeTheta: num(cfg, "rotary_emb_base", 10000),
    localWindow: 0,
    globalEvery: 1,
    padTokenId: num(cfg, "pad_token_id", 0),
    numLabels: 0,
  };
}

/**
 * Whether layer `i` attends to every position (else to a local window).
 *
 * @param config The configuration.
 * @param i Layer index.
 * @returns True for a global layer.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encoderConfigFromHf, isGlobalLayer } from "@modelhost/modelhost/models";
 * const c = encoderConfigFromHf({
 *   model_type: "modernbert", vocab_size: 50, hidden_size: 8, num_hidden_layers: 3,
 *   num_attention_heads: 2, intermediate_size: 16, global_attn_every_n_layers: 3, local_attention: 8,
 * });
 * assert(isGlobalLayer(c, 0) && !isGlobalLayer(c, 1) && c.localWindow === 4);
 * ```
 */
export function isGlobalLayer(config: EncoderConfig, i: number): boolean {
  return config.localWindow === 0 || i % config.globalEvery === 0;
}

/**
 * The GGUF architecture name llama.cpp gives a family (`bert` for BERT and
 * the RoBERTa kinds, `modern-bert`).
 *
 * @param family The family.
 * @returns The architecture name.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encoderGgufArchitecture } from "@modelhost/modelhost/models";
 * assert(encoderGgufArchitecture("xlm-roberta") === "bert");
 * ```
 */
export function encoderGgufArchitecture(family: EncoderFamily): string {
  return family === "modernbert"
    ? "modern-bert"
    : family === "nomic_bert"
    ? "nomic-bert"
    : "bert";
}

/**
 * GGUF metadata of an encoder (llama.cpp's keys, plus `modelhost.encoder.*`
 * for what it has none of); {@link encoderConfigFromGguf} reads it back.
 *
 * @param config The configuration.
 * @returns Metadata values by key.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { encoderConfigFromGguf, encoderConfigFromHf, encoderConfigToGguf } from "@modelhost/modelhost/models";
 * const c = encoderConfigFromHf({
 *   model_type: "modernbert", vocab_size: 50, hidden_size: 8, num_hidden_layers: 3,
 *   num_attention_heads: 2, intermediate_size: 16, global_attn_every_n_layers: 3, local_attention: 8,
 * });
 * const back = encoderConfigFromGguf(encoderConfigToGguf(c), 0, 50);
 * assertEquals(back, c);
 * ```
 */
export function encoderConfigToGguf(
  config: EncoderConfig,
): Record<string, unknown> {
  const a = encoderGgufArchitecture(config.family);
  const md: Record<string, unknown> = {
    "general.architecture": a,
    [`${a}.context_length`]: config.maxPositions,
    [`${a}.embedding_length`]: config.hiddenSize,
    [`${a}.feed_forward_length`]: config.intermediateSize,
    [`${a}.block_count`]: config.numLayers,
    [`${a}.attention.head_count`]: config.numHeads,
    [`${a}.attention.layer_norm_epsilon`]: config.normEps,
    [`${a}.attention.causal`]: false,
    "modelhost.encoder.family": config.family,
    "modelhost.encoder.activation": config.activation,
    "modelhost.encoder.pad_token_id": config.padTokenId,
  };
  if (config.numLabels > 0) {
    md["modelhost.encoder.num_labels"] = config.numLabels;
  }
  if (config.positions === "rotary") {
    md[`${a}.rope.freq_base`] = config.ropeTheta;
    md[`${a}.rope.freq_base_swa`] = config.localRopeTheta;
    md[`${a}.attention.sliding_window`] = config.localWindow * 2;
    md["modelhost.encoder.global_every"] = config.globalEvery;
    if (config.family === "modernbert") {
      md[`${a}.attention.sliding_window_pattern`] = config.globalEvery;
    }
    md["modelhost.encoder.norm_bias"] = config.normBias;
  }
  return md;
}

/**
 * Reads an encoder's configuration from GGUF metadata written by
 * {@link encoderConfigToGguf} (or llama.cpp's converter for `bert`).
 *
 * @param md The metadata.
 * @param typeRows Rows of `token_types.weight` (0 when absent).
 * @param vocabRows Rows of `token_embd.weight`.
 * @returns The configuration.
 * @throws {TypeError} For another architecture or a missing key.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encoderConfigFromGguf } from "@modelhost/modelhost/models";
 * const c = encoderConfigFromGguf({
 *   "general.architecture": "bert", "bert.embedding_length": 8, "bert.block_count": 1,
 *   "bert.attention.head_count": 2, "bert.feed_forward_length": 16, "bert.context_length": 32,
 *   "bert.attention.layer_norm_epsilon": 1e-12,
 * }, 2, 100);
 * assert(c.family === "bert" && c.vocabSize === 100 && c.typeVocabSize === 2);
 * ```
 */
export function encoderConfigFromGguf(
  md: Record<string, unknown>,
  typeRows: number,
  vocabRows: number,
): EncoderConfig {
  const a = md["general.architecture"];
  if (a !== "bert" && a !== "modern-bert" && a !== "nomic-bert") {
    throw new TypeError(
      `GGUF encoder: general.architecture ${
        JSON.stringify(a)
      } is not an encoder (bert, modern-bert, nomic-bert)`,
    );
  }
  const get = (k: string, fallback?: unknown): unknown => {
    const v = md[k];
    if (v === undefined) {
      if (fallback !== undefined) return fallback;
      throw new TypeError(`GGUF encoder: metadata "${k}" is missing`);
    }
    return typeof v === "bigint" ? Number(v) : v;
  };
  const n = (k: string, fallback?: number) => {
    const v = get(k, fallback);
    if (typeof v !== "number") {
      throw new TypeError(`GGUF encoder: "${k}" must be a number`);
    }
    return v;
  };
  const fam = get(
    "modelhost.encoder.family",
    a === "bert" ? "bert" : a === "nomic-bert" ? "nomic_bert" : "modernbert",
  );
  if (fam === "nomic_bert") {
    return nomicConfig({
      vocab_size: vocabRows,
      n_embd: n(`${a}.embedding_length`),
      n_layer: n(`${a}.block_count`),
      n_head: n(`${a}.attention.head_count`),
      n_inner: n(`${a}.feed_forward_length`),
      n_positions: n(`${a}.context_length`),
      type_vocab_size: typeRows,
      layer_norm_epsilon: n(`${a}.attention.layer_norm_epsilon`),
      rotary_emb_base: n(`${a}.rope.freq_base`, 1000),
      pad_token_id: n("modelhost.encoder.pad_token_id", 0),
    });
  }
  // llama.cpp's converter stores ModernBERT's LayerNorm epsilon under the
  // RMS key, and its activation as hidden_activation
  const eps = n(
    `${a}.attention.layer_norm_epsilon`,
    md[`${a}.attention.layer_norm_epsilon`] === undefined
      ? n(`${a}.attention.layer_norm_rms_epsilon`)
      : undefined,
  );
  const act = get(
    "modelhost.encoder.activation",
    get(`${a}.hidden_activation`, "gelu"),
  );
  const cfg = encoderConfigFromHf({
    model_type: fam,
    vocab_size: vocabRows,
    hidden_size: n(`${a}.embedding_length`),
    num_hidden_layers: n(`${a}.block_count`),
    num_attention_heads: n(`${a}.attention.head_count`),
    intermediate_size: n(`${a}.feed_forward_length`),
    max_position_embeddings: n(`${a}.context_length`),
    pad_token_id: 0,
    type_vocab_size: typeRows,
    layer_norm_eps: eps,
    norm_eps: eps,
    hidden_act: act,
    hidden_activation: act,
    global_rope_theta: n(`${a}.rope.freq_base`, 160000),
    local_rope_theta: n(`${a}.rope.freq_base_swa`, 10000),
    local_attention: n(`${a}.attention.sliding_window`, 128),
    global_attn_every_n_layers: n(
      "modelhost.encoder.global_every",
      n(`${a}.attention.sliding_window_pattern`, 3),
    ),
    norm_bias: get("modelhost.encoder.norm_bias", false),
    ...(md["modelhost.encoder.num_labels"] !== undefined
      ? {
        num_labels: n("modelhost.encoder.num_labels"),
        architectures: ["EncoderForSequenceClassification"],
      }
      : {}),
  });
  // GGUF position tables start at position 0 (llama.cpp drops RoBERTa's
  // padding rows when converting)
  return {
    ...cfg,
    maxPositions: n(`${a}.context_length`),
    positionOffset: 0,
    padTokenId: n("modelhost.encoder.pad_token_id", 0),
  };
}

const BERT_LAYER: [RegExp, string][] = [
  [/^attention\.self\.query\./, "attn_q."],
  [/^attention\.self\.key\./, "attn_k."],
  [/^attention\.self\.value\./, "attn_v."],
  [/^attention\.output\.dense\./, "attn_output."],
  [/^attention\.output\.LayerNorm\./, "attn_output_norm."],
  [/^intermediate\.dense\./, "ffn_up."],
  [/^output\.dense\./, "ffn_down."],
  [/^output\.LayerNorm\./, "layer_output_norm."],
];

const NOMIC_LAYER: [RegExp, string][] = [
  [/^attn\.out_proj\./, "attn_output."],
  [/^mlp\.fc11\./, "ffn_up."],
  [/^mlp\.fc12\./, "ffn_gate."],
  [/^mlp\.fc2\./, "ffn_down."],
  [/^norm1\./, "attn_output_norm."],
  [/^norm2\./, "layer_output_norm."],
];

const MODERNBERT_LAYER: [RegExp, string][] = [
  [/^attn\.Wqkv\./, "attn_qkv."],
  [/^attn\.Wo\./, "attn_output."],
  [/^attn_norm\./, "attn_norm."],
  [/^mlp_norm\./, "ffn_norm."],
  [/^mlp\.Wi\./, "ffn_up."],
  [/^mlp\.Wo\./, "ffn_down."],
];

const TOP: [RegExp, string][] = [
  [/^classifier\.dense\./, "cls."],
  [/^classifier\.out_proj\./, "cls.output."],
  [/^embeddings\.word_embeddings\./, "token_embd."],
  [/^embeddings\.tok_embeddings\./, "token_embd."],
  [/^embeddings\.token_type_embeddings\./, "token_types."],
  [/^embeddings\.position_embeddings\./, "position_embd."],
  [/^embeddings\.LayerNorm\./, "token_embd_norm."],
  [/^emb_ln\./, "token_embd_norm."],
  [/^embeddings\.norm\./, "token_embd_norm."],
  [/^final_norm\./, "output_norm."],
  [/^pooler\.dense\./, "cls."],
  [/^classifier\./, "cls.output."],
  [/^head\.dense\./, "cls."],
  [/^head\.norm\./, "cls.norm."],
];

/**
 * llama.cpp's GGUF name of an encoder tensor stored under its Hugging Face
 * name (`bert.encoder.layer.0.attention.self.query.weight` →
 * `blk.0.attn_q.weight`); undefined for tensors the encoder does not use
 * (masked-LM heads, position-id buffers).
 *
 * @param name The Hugging Face name.
 * @returns The GGUF name, or undefined.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encoderTensorName } from "@modelhost/modelhost/models";
 * assert(encoderTensorName("encoder.layer.1.output.LayerNorm.bias") === "blk.1.layer_output_norm.bias");
 * assert(encoderTensorName("model.layers.0.mlp.Wi.weight") === "blk.0.ffn_up.weight");
 * ```
 */
export function encoderTensorName(name: string): string | undefined {
  let n = name.replace(/^(bert|roberta|model|encoder_model)\./, "");
  const layer = /^(?:encoder\.layers?|layers)\.(\d+)\.(.*)$/.exec(n);
  if (layer) {
    for (
      const [re, to] of [...BERT_LAYER, ...MODERNBERT_LAYER, ...NOMIC_LAYER]
    ) {
      if (re.test(layer[2])) {
        return `blk.${layer[1]}.${layer[2].replace(re, to)}`;
      }
    }
    return undefined;
  }
  for (const [re, to] of TOP) {
    if (re.test(n)) {
      n = n.replace(re, to);
      return n;
    }
  }
  return undefined;
}
