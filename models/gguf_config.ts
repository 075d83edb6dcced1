/**
 * Llama-family hyperparameters in GGUF metadata, both ways:
 * {@link configFromGguf} reads `general.architecture` = `llama` or `qwen2`
 * and the `<arch>.*` keys llama.cpp defines; {@link configToGguf} writes
 * them (with their GGUF value types) the way llama.cpp's converter does.
 *
 * In a GGUF `llama` file the q/k rows are permuted for adjacent-pair
 * rotary, so the config read from it says `ropeStyle: "interleaved"`;
 * `qwen2` files keep the half-split layout (`"neox"`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { configFromGguf } from "@modelhost/modelhost/models";
 * const cfg = configFromGguf({
 *   "general.architecture": "llama",
 *   "llama.embedding_length": 64, "llama.block_count": 5, "llama.feed_forward_length": 172,
 *   "llama.attention.head_count": 8, "llama.attention.head_count_kv": 4,
 *   "llama.attention.layer_norm_rms_epsilon": 1e-5, "llama.context_length": 2048,
 *   "tokenizer.ggml.tokens": new Array(512).fill("x"),
 * }, ["token_embd.weight", "output.weight"]);
 * assert(cfg.headDim === 8 && cfg.ropeStyle === "interleaved" && cfg.vocabSize === 512);
 * ```
 *
 * @module
 */

import type { RopeScaling } from "../kernels/rope.ts";
import {
  FAMILIES,
  type TransformerConfig,
  type TransformerFamily,
} from "./config.ts";
import { variantFromGguf, variantToGguf } from "./families/_decoder_gguf.ts";
import { ALL_FAMILY_SPECS, FAMILY_SPECS } from "./families/mod.ts";
import { llama3ScalingFromFactors } from "./rotary.ts";
import { describe, ggufFields } from "./_gguf_fields.ts";

/**
 * The `general.architecture` values {@link configFromGguf} accepts.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GGUF_ARCHITECTURES } from "@modelhost/modelhost/models";
 * assert(GGUF_ARCHITECTURES.includes("llama"));
 * ```
 */
export const GGUF_ARCHITECTURES: readonly string[] = [
  "llama",
  "qwen2",
  ...new Set(
    ALL_FAMILY_SPECS.map((s) => s.info.ggufArchitecture).filter((a) =>
      a !== "llama"
    ),
  ),
];

/** The family a GGUF architecture stands for (llama.cpp writes Mistral and Mixtral as `llama`). */
function familyOfArch(
  arch: string,
  get: (k: string) => unknown,
): TransformerFamily {
  if (arch === "llama") {
    const experts = get("expert_count");
    if (typeof experts === "number" && experts > 0) return "mixtral";
    const sw = get("attention.sliding_window");
    return typeof sw === "number" && sw > 0 ? "mistral" : "llama";
  }
  if (arch === "qwen2") return "qwen2";
  for (const s of FAMILY_SPECS.values()) {
    if (s.info.ggufArchitecture === arch) {
      return s.info.modelType as TransformerFamily;
    }
  }
  throw new TypeError(`No family for GGUF architecture ${arch}`);
}

/** Extra inputs of {@link configFromGguf}. */
export interface GgufConfigOptions {
  /** The values of `rope_freqs.weight`, when the file has that tensor. */
  ropeFreqs?: ArrayLike<number>;
  /** The embedding's row count, when the metadata does not give the vocabulary size. */
  embeddingRows?: number;
  /** Where the metadata came from, for messages. @default "GGUF file" */
  name?: string;
  /** Values of the non-network tensors a family reads (Phi-3's `rope_factors_*.weight`). */
  tensorValues?: ReadonlyMap<string, Float32Array>;
}

/**
 * Reads Llama-family hyperparameters from GGUF metadata (plain values, as
 * `readGguf` gives them).
 *
 * @param md The metadata.
 * @param tensorNames Names of the file's tensors (biases, a separate
 *   `output.weight` and `rope_freqs.weight` are found by name).
 * @param options `rope_freqs` values, the embedding size and a name.
 * @returns The hyperparameters.
 * @throws {TypeError} For another architecture (the message lists the
 * supported ones), a missing or wrong key, partial rotary, or rope scaling
 * other than linear / llama3.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { configFromGguf } from "@modelhost/modelhost/models";
 * assertThrows(
 *   () => configFromGguf({ "general.architecture": "mamba" }, []),
 *   TypeError,
 *   "supported: llama, qwen2",
 * );
 * ```
 */
export function configFromGguf(
  md: Record<string, unknown>,
  tensorNames: readonly string[],
  options: GgufConfigOptions = {},
): TransformerConfig {
  const where = options.name ?? "GGUF file";
  const variant = variantFromGguf(
    md,
    tensorNames,
    where,
    options.embeddingRows,
    options.tensorValues,
  );
  if (variant) return variant;
  const arch = md["general.architecture"];
  if (typeof arch !== "string" || !GGUF_ARCHITECTURES.includes(arch)) {
    throw new TypeError(
      `${where}: general.architecture ${
        describe(arch)
      } is not supported; supported: ${GGUF_ARCHITECTURES.join(", ")} (${
        FAMILIES.map((f) => f.models).join("; ")
      })`,
    );
  }
  const { get, int, float } = ggufFields(md, arch, where);
  const hidden = int("embedding_length");
  const heads = int("attention.head_count");
  const kvHeads = int("attention.head_count_kv", heads);
  const keyLength = get("attention.key_length");
  const headDim = keyLength === undefined
    ? hidden / heads
    : int("attention.key_length");
  if (!Number.isInteger(headDim)) {
    throw new TypeError(
      `${where}: ${arch}.embedding_length ${hidden} is not a multiple of head_count ${heads} and no attention.key_length is given`,
    );
  }
  const rotDim = get("rope.dimension_count");
  if (rotDim !== undefined && rotDim !== headDim) {
    throw new TypeError(
      `${where}: ${arch}.rope.dimension_count ${
        describe(rotDim)
      } differs from the head size ${headDim}; partial rotary is not supported`,
    );
  }
  const theta = float("rope.freq_base", 10000);
  let ropeScaling: RopeScaling | null = null;
  const scalingType = get("rope.scaling.type");
  if (scalingType === "linear") {
    const factor = float("rope.scaling.factor", 1);
    ropeScaling = factor === 1 ? null : { rope_type: "linear", factor };
  } else if (scalingType !== undefined && scalingType !== "none") {
    throw new TypeError(
      `${where}: ${arch}.rope.scaling.type ${
        describe(scalingType)
      } is not supported (supported: none, linear, and llama3 via rope_freqs.weight)`,
    );
  }
  if (options.ropeFreqs) {
    const orig = get("rope.scaling.original_context_length");
    ropeScaling = llama3ScalingFromFactors(
      options.ropeFreqs,
      headDim,
      theta,
      typeof orig === "number" ? orig : 8192,
    ) ?? ropeScaling;
  }
  const names = new Set(tensorNames);
  const tokens = md["tokenizer.ggml.tokens"];
  const vocab = get("vocab_size") ??
    (Array.isArray(tokens) ? tokens.length : options.embeddingRows);
  if (typeof vocab !== "number" || !Number.isSafeInteger(vocab) || vocab <= 0) {
    throw new TypeError(
      `${where}: no vocabulary size (${arch}.vocab_size, tokenizer.ggml.tokens or token_embd.weight)`,
    );
  }
  const has = (n: string) => names.has(`blk.0.${n}`);
  const sw = get("attention.sliding_window");
  const eos = md["tokenizer.ggml.eos_token_id"];
  const bos = md["tokenizer.ggml.bos_token_id"];
  const ctx = get("context_length");
  const slidingWindow = typeof sw === "number" && sw > 0 ? sw : null;
  const family = familyOfArch(arch, get);
  const spec = FAMILY_SPECS.get(family);
  return {
    family,
    vocabSize: vocab,
    hiddenSize: hidden,
    numLayers: int("block_count"),
    numHeads: heads,
    numKvHeads: kvHeads,
    headDim,
    intermediateSize: int("feed_forward_length"),
    rmsNormEps: float("attention.layer_norm_rms_epsilon", 1e-5),
    ropeTheta: theta,
    ropeScaling,
    ropeStyle: (spec ? spec.permuteQk : arch === "llama")
      ? "interleaved"
      : "neox",
    slidingWindow,
    attentionBias: {
      q: has("attn_q.bias"),
      k: has("attn_k.bias"),
      v: has("attn_v.bias"),
      o: has("attn_output.bias"),
    },
    mlpBias: has("ffn_gate.bias"),
    tieWordEmbeddings: !names.has("output.weight"),
    maxPositionEmbeddings: typeof ctx === "number" && ctx > 0 ? ctx : 2048,
    ...(typeof bos === "number" ? { bosTokenId: bos } : {}),
    eosTokenIds: typeof eos === "number" ? [eos] : [],
    ...spec?.fromGguf(get, names, where),
  };
}

/** GGUF metadata with the GGUF value type of each key. */
export interface GgufMetadata {
  /** Plain values by key, in writing order. */
  values: Record<string, unknown>;
  /** Type descriptor of each key (`"UINT32"`, `"FLOAT32"`, `"ARRAY<STRING>"`). */
  types: Record<string, string>;
}

/**
 * The GGUF metadata llama.cpp reads for a config: `general.architecture`
 * (`llama` for the llama and mistral families, `qwen2` for qwen2) and the
 * `<arch>.*` hyperparameters. A llama3 rope scaling is not metadata: write
 * the `rope_freqs.weight` tensor (see `llama3RopeFactors`). A sliding
 * window is written as `<arch>.attention.sliding_window`.
 *
 * @param cfg The hyperparameters.
 * @param name `general.name`. @default "model"
 * @returns Values and their GGUF types.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { configToGguf } from "@modelhost/modelhost/models";
 * import { configFromHf } from "@modelhost/modelhost/models";
 * const { values, types } = configToGguf(configFromHf({
 *   model_type: "mistral", vocab_size: 8, hidden_size: 8, intermediate_size: 8,
 *   num_hidden_layers: 1, num_attention_heads: 2, sliding_window: 16,
 * }));
 * assert(values["general.architecture"] === "llama" && types["llama.block_count"] === "UINT32");
 * ```
 */
export function configToGguf(
  cfg: TransformerConfig,
  name = "model",
): GgufMetadata {
  if (cfg.variant) return variantToGguf(cfg, name);
  const spec = FAMILY_SPECS.get(cfg.family);
  const arch = spec
    ? spec.info.ggufArchitecture
    : cfg.family === "qwen2"
    ? "qwen2"
    : "llama";
  const values: Record<string, unknown> = {};
  const types: Record<string, string> = {};
  const put = (key: string, value: unknown, type: string) => {
    // The writer keeps a FLOAT32 type only for values exact in float32;
    // llama.cpp refuses FLOAT64 where it reads a float.
    values[key] = type === "FLOAT32" ? Math.fround(value as number) : value;
    types[key] = type;
  };
  put("general.architecture", arch, "STRING");
  put("general.name", name, "STRING");
  put(`${arch}.vocab_size`, cfg.vocabSize, "UINT32");
  put(`${arch}.context_length`, cfg.maxPositionEmbeddings, "UINT32");
  put(`${arch}.embedding_length`, cfg.hiddenSize, "UINT32");
  put(`${arch}.block_count`, cfg.numLayers, "UINT32");
  put(`${arch}.feed_forward_length`, cfg.intermediateSize, "UINT32");
  put(`${arch}.rope.dimension_count`, cfg.headDim, "UINT32");
  put(`${arch}.attention.head_count`, cfg.numHeads, "UINT32");
  put(`${arch}.attention.head_count_kv`, cfg.numKvHeads, "UINT32");
  put(
    `${arch}.attention.layer_norm_rms_epsilon`,
    cfg.rmsNormEps,
    "FLOAT32",
  );
  put(`${arch}.rope.freq_base`, cfg.ropeTheta, "FLOAT32");
  if (cfg.headDim * cfg.numHeads !== cfg.hiddenSize) {
    put(`${arch}.attention.key_length`, cfg.headDim, "UINT32");
    put(`${arch}.attention.value_length`, cfg.headDim, "UINT32");
  }
  if (cfg.ropeScaling?.rope_type === "linear") {
    put(`${arch}.rope.scaling.type`, "linear", "STRING");
    put(`${arch}.rope.scaling.factor`, cfg.ropeScaling.factor, "FLOAT32");
  } else if (cfg.ropeScaling?.rope_type === "llama3") {
    put(
      `${arch}.rope.scaling.original_context_length`,
      cfg.ropeScaling.original_max_position_embeddings,
      "UINT32",
    );
  }
  if (cfg.slidingWindow !== null) {
    put(`${arch}.attention.sliding_window`, cfg.slidingWindow, "UINT32");
  }
  spec?.toGguf(cfg, (k, v, t) => put(`${arch}.${k}`, v, t));
  return { values, types };
}
