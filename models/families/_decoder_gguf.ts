/**
 * GGUF metadata of the `decoder_block` families, both ways: the keys
 * llama.cpp reads for `gemma`, `gemma2`, `gemma3`, `phi3`, `phi2`, `gpt2`,
 * `stablelm` and `starcoder2` (`<arch>.embedding_length` …, LayerNorm
 * families' `attention.layer_norm_epsilon`, partial rotary's
 * `rope.dimension_count`), plus each family's own keys.
 *
 * @module
 */

import type { RopeScaling } from "../../kernels/rope.ts";
import type { TransformerConfig } from "../config.ts";
import { decoderFamilyByGguf, decoderSpecOf } from "./_decoder.ts";
import { describe, ggufFields } from "../_gguf_fields.ts";

/**
 * Reads a config from the metadata of a GGUF file of a `decoder_block`
 * architecture, or returns undefined for another architecture.
 */
export function variantFromGguf(
  md: Record<string, unknown>,
  tensorNames: readonly string[],
  where: string,
  embeddingRows?: number,
  values: ReadonlyMap<string, Float32Array> = new Map(),
): TransformerConfig | undefined {
  const arch = md["general.architecture"];
  const spec = decoderFamilyByGguf(arch);
  if (!spec) return undefined;
  const { get, int, float } = ggufFields(md, arch as string, where);
  const names = new Set(tensorNames);
  const hidden = int("embedding_length");
  const heads = int("attention.head_count");
  const headDim = get("attention.key_length") === undefined
    ? hidden / heads
    : int("attention.key_length");
  if (!Number.isInteger(headDim)) {
    throw new TypeError(
      `${where}: ${arch}.embedding_length ${hidden} is not a multiple of head_count ${heads}`,
    );
  }
  const tokens = md["tokenizer.ggml.tokens"];
  const vocab = get("vocab_size") ??
    (Array.isArray(tokens) ? tokens.length : embeddingRows);
  if (typeof vocab !== "number" || !Number.isSafeInteger(vocab) || vocab <= 0) {
    throw new TypeError(`${where}: no vocabulary size`);
  }
  let ropeScaling: RopeScaling | null = null;
  const st = get("rope.scaling.type");
  if (st === "linear") {
    const factor = float("rope.scaling.factor", 1);
    ropeScaling = factor === 1 ? null : { rope_type: "linear", factor };
  } else if (st !== undefined && st !== "none") {
    throw new TypeError(
      `${where}: ${arch}.rope.scaling.type ${describe(st)} is not supported`,
    );
  }
  const has = (n: string) => names.has(`blk.0.${n}`);
  const layerNorm = names.has("output_norm.bias");
  const eos = md["tokenizer.ggml.eos_token_id"];
  const bos = md["tokenizer.ggml.bos_token_id"];
  const ctx = get("context_length");
  const qkvBias = has("attn_qkv.bias");
  const base: TransformerConfig = {
    family: spec.info.modelType,
    vocabSize: vocab,
    hiddenSize: hidden,
    numLayers: int("block_count"),
    numHeads: heads,
    numKvHeads: int("attention.head_count_kv", heads),
    headDim,
    intermediateSize: int("feed_forward_length"),
    rmsNormEps: layerNorm
      ? float("attention.layer_norm_epsilon", 1e-5)
      : float("attention.layer_norm_rms_epsilon", 1e-6),
    ropeTheta: float("rope.freq_base", 10000),
    ropeScaling,
    ropeStyle: "neox",
    slidingWindow: null,
    attentionBias: {
      q: has("attn_q.bias") || qkvBias,
      k: has("attn_k.bias") || qkvBias,
      v: has("attn_v.bias") || qkvBias,
      o: has("attn_output.bias"),
    },
    mlpBias: has("ffn_up.bias"),
    tieWordEmbeddings: !names.has("output.weight"),
    maxPositionEmbeddings: typeof ctx === "number" && ctx > 0 ? ctx : 2048,
    ...(typeof bos === "number" ? { bosTokenId: bos } : {}),
    eosTokenIds: typeof eos === "number" ? [eos] : [],
  };
  const variant = spec.fromGguf(get, base, names, values);
  const window = variant.layers.find((l) => l.window !== null)?.window ?? null;
  return { ...base, slidingWindow: window, variant };
}

/** The GGUF metadata (values and their types) of a variant config. */
export function variantToGguf(
  cfg: TransformerConfig,
  name: string,
): { values: Record<string, unknown>; types: Record<string, string> } {
  const spec = decoderSpecOf(cfg);
  const v = cfg.variant!;
  const arch = spec.info.ggufArchitecture;
  const values: Record<string, unknown> = {};
  const types: Record<string, string> = {};
  const put = (key: string, value: unknown, type: string) => {
    values[key] = type === "FLOAT32" ? Math.fround(value as number) : value;
    types[key] = type;
  };
  put("general.architecture", arch, "STRING");
  put("general.name", name, "STRING");
  put(`${arch}.vocab_size`, cfg.vocabSize, "UINT32");
  put(
    `${arch}.context_length`,
    v.positions > 0 ? v.positions : cfg.maxPositionEmbeddings,
    "UINT32",
  );
  put(`${arch}.embedding_length`, cfg.hiddenSize, "UINT32");
  put(`${arch}.block_count`, cfg.numLayers, "UINT32");
  put(`${arch}.feed_forward_length`, cfg.intermediateSize, "UINT32");
  put(`${arch}.attention.head_count`, cfg.numHeads, "UINT32");
  put(`${arch}.attention.head_count_kv`, cfg.numKvHeads, "UINT32");
  if (v.norm === "rms") {
    put(`${arch}.attention.layer_norm_rms_epsilon`, cfg.rmsNormEps, "FLOAT32");
  } else {
    put(`${arch}.attention.layer_norm_epsilon`, cfg.rmsNormEps, "FLOAT32");
  }
  if (v.rotaryDim > 0) {
    put(`${arch}.rope.dimension_count`, v.rotaryDim, "UINT32");
    put(`${arch}.rope.freq_base`, cfg.ropeTheta, "FLOAT32");
  }
  if (
    cfg.headDim * cfg.numHeads !== cfg.hiddenSize || arch.startsWith("gemma")
  ) {
    put(`${arch}.attention.key_length`, cfg.headDim, "UINT32");
    put(`${arch}.attention.value_length`, cfg.headDim, "UINT32");
  }
  if (cfg.ropeScaling?.rope_type === "linear" && arch !== "gemma3") {
    put(`${arch}.rope.scaling.type`, "linear", "STRING");
    put(`${arch}.rope.scaling.factor`, cfg.ropeScaling.factor, "FLOAT32");
  } else if (cfg.ropeScaling && arch !== "gemma3") {
    throw new TypeError(
      `Cannot write ${cfg.family} as GGUF: rope scaling ${cfg.ropeScaling.rope_type} is not supported for it`,
    );
  }
  spec.toGguf?.(cfg, put);
  return { values, types };
}
