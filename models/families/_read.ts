/**
 * Helpers the family specs share to read Hugging Face configs: numbers
 * with aliases (`hidden_size` / `n_embd`), RoPE from `rope_parameters`
 * (transformers 5) or `rope_theta` / `rope_scaling` (older configs), and
 * the common part of a {@link TransformerConfig}.
 *
 * @module
 */

import type { RopeScaling } from "../../kernels/rope.ts";
import { ropeScalingFromHf } from "../_rope_scaling_hf.ts";
import type { TransformerConfig } from "../config.ts";
import type { DecoderFamily, DecoderVariant } from "./_decoder_spec.ts";
import { boolField, intField, numField } from "./_spec.ts";

type Json = Record<string, unknown>;

/** A number above 0, or null when absent / null. */
export function optNum(o: Json, key: string, where: string): number | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  return numField(o, key, where);
}

/** RoPE base, scaling and partial factor of a (sub-)config. */
export interface RopeRead {
  /** RoPE base. */
  theta: number;
  /** Scaling rule. */
  scaling: RopeScaling | null;
  /** Fraction of each head that rotates. */
  partial: number;
}

/**
 * RoPE settings: `rope_parameters` (transformers 5; for Gemma 3 keyed by
 * layer type) or the older `rope_theta`, `rope_scaling`,
 * `partial_rotary_factor` fields.
 */
export function ropeOf(
  o: Json,
  where: string,
  layerType?: string,
  fallbackTheta = 10000,
): RopeRead {
  let p = o.rope_parameters as Json | undefined | null;
  // Gemma 3 keys its RoPE by layer type; the model-wide values are the global layers'.
  const kind = layerType ?? "full_attention";
  if (p && typeof p[kind] === "object" && p[kind] !== null) {
    p = p[kind] as Json;
  }
  const src: Json = p && typeof p === "object" && !Array.isArray(p) ? p : {};
  const theta = numField(
    { ...o, ...src },
    ["rope_theta"],
    where,
    fallbackTheta,
  );
  const partial = numField(
    { ...o, ...src },
    ["partial_rotary_factor"],
    where,
    1,
  );
  const scaling = p ? ropeScalingFromHf(src, where) : ropeScalingFromHf(
    o.rope_scaling,
    where,
  );
  return { theta, scaling, partial };
}

/** The common fields of a config (Llama names with aliases). */
export function baseFromHf(
  family: DecoderFamily,
  o: Json,
  where: string,
  opts: {
    intermediateFallback?: (hidden: number) => number;
    epsKeys?: string[];
    tied?: boolean;
  } = {},
): Omit<TransformerConfig, "variant"> {
  const hiddenSize = intField(o, ["hidden_size", "n_embd"], where);
  const numHeads = intField(o, ["num_attention_heads", "n_head"], where);
  const numKvHeads = intField(
    o,
    ["num_key_value_heads"],
    where,
    numHeads,
  );
  const headDim = o.head_dim === undefined || o.head_dim === null
    ? hiddenSize / numHeads
    : intField(o, ["head_dim"], where);
  if (!Number.isInteger(headDim)) {
    throw new TypeError(
      `${where}: hidden_size ${hiddenSize} is not a multiple of num_attention_heads ${numHeads} and no head_dim is given`,
    );
  }
  const rope = ropeOf(o, where);
  const eos = o.eos_token_id;
  return {
    family,
    vocabSize: intField(o, ["vocab_size"], where),
    hiddenSize,
    numLayers: intField(o, ["num_hidden_layers", "n_layer"], where),
    numHeads,
    numKvHeads,
    headDim,
    intermediateSize: opts.intermediateFallback &&
        (o.intermediate_size ?? o.n_inner) == null
      ? opts.intermediateFallback(hiddenSize)
      : intField(o, ["intermediate_size", "n_inner"], where),
    rmsNormEps: numField(o, opts.epsKeys ?? ["rms_norm_eps"], where, 1e-6),
    ropeTheta: rope.theta,
    ropeScaling: rope.scaling,
    ropeStyle: "neox",
    slidingWindow: null,
    attentionBias: { q: false, k: false, v: false, o: false },
    mlpBias: false,
    tieWordEmbeddings: opts.tied ??
      boolField(o, "tie_word_embeddings", where, false),
    maxPositionEmbeddings: intField(
      o,
      ["max_position_embeddings", "n_positions"],
      where,
      2048,
    ),
    ...(typeof o.bos_token_id === "number"
      ? { bosTokenId: o.bos_token_id }
      : {}),
    eosTokenIds: typeof eos === "number"
      ? [eos]
      : Array.isArray(eos)
      ? eos.filter((x): x is number => Number.isInteger(x))
      : [],
  };
}

/** A variant with Llama's choices, to spread and override. */
export function llamaLike(
  numLayers: number,
  headDim: number,
  theta: number,
  scaling: RopeScaling | null,
  window: number | null = null,
): DecoderVariant {
  return {
    norm: "rms",
    mlp: "gated",
    activation: "silu",
    fusedQkv: false,
    fusedGateUp: false,
    parallel: false,
    postNorms: false,
    qkNorm: false,
    rotaryDim: headDim,
    attnScale: null,
    attnSoftcap: null,
    finalSoftcap: null,
    embedScale: 1,
    positions: 0,
    lmHeadBias: false,
    layers: Array.from({ length: numLayers }, () => ({
      window,
      ropeTheta: theta,
      ropeScaling: scaling ? { ...scaling } : null,
    })),
  };
}

/** Rotary size of a head for a partial factor (even, as transformers rounds). */
export function rotaryDimOf(headDim: number, partial: number): number {
  return Math.floor(headDim * partial);
}

/** `config.json` fields of RoPE in the transformers 5 form. */
export function ropeToHf(
  theta: number,
  scaling: RopeScaling | null,
  partial?: number,
): Record<string, unknown> {
  return {
    rope_theta: theta,
    ...(scaling ? { ...scaling } : { rope_type: "default" }),
    ...(partial !== undefined && partial !== 1
      ? { partial_rotary_factor: partial }
      : {}),
  };
}
