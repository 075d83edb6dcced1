/**
 * What a decoder family beyond Llama is made of: a {@link DecoderVariant}
 * (the fields of the `decoder_block` / `decoder_embedding` layers it
 * needs, carried by `TransformerConfig.variant`) and a {@link DecoderFamilySpec}
 * (how its Hugging Face config and tensor names read, which GGUF
 * architecture llama.cpp calls it). The specs live one file per family
 * beside this one and are listed in `families/mod.ts`.
 *
 * @module
 */

import type { RopeScaling } from "../../kernels/rope.ts";
import type { DecoderActivation } from "../../layers/decoder_block.ts";
import type { TransformerConfig } from "../config.ts";
import type { DecoderFamilyInfo } from "./_info.ts";

/** The Hugging Face `model_type`s served by the `decoder_block` families. */
export type DecoderFamily =
  | "gemma"
  | "gemma2"
  | "gemma3_text"
  | "gemma3"
  | "phi3"
  | "phi"
  | "gpt2"
  | "stablelm"
  | "starcoder2";

/** Per-layer attention settings (Gemma 2/3 alternate them). */
export interface LayerAttention {
  /** Sliding window, or null for global attention. */
  window: number | null;
  /** RoPE base of the layer. */
  ropeTheta: number;
  /** RoPE scaling of the layer. */
  ropeScaling: RopeScaling | null;
}

/** Everything a family changes relative to a Llama decoder. */
export interface DecoderVariant {
  /** RMSNorm or LayerNorm (every norm of the model). */
  norm: "rms" | "layer";
  /** Gated (`act(gate)·up`) or plain (`act(up)`) MLP. */
  mlp: "gated" | "plain";
  /** The MLP activation. */
  activation: DecoderActivation;
  /** One `qkv_proj` (Phi-3, GPT-2). */
  fusedQkv: boolean;
  /** One `gate_up_proj` (Phi-3). */
  fusedGateUp: boolean;
  /** Attention and MLP read the same normed input (Phi-2). */
  parallel: boolean;
  /** Sandwich norms (Gemma 2/3). */
  postNorms: boolean;
  /** q/k RMSNorm per head (Gemma 3). */
  qkNorm: boolean;
  /** Rotary values per head (0: none). */
  rotaryDim: number;
  /** Attention dot-product multiplier, or null for `head_dim^-½`. */
  attnScale: number | null;
  /** Attention score soft-capping, or null. */
  attnSoftcap: number | null;
  /** Final logit soft-capping, or null. */
  finalSoftcap: number | null;
  /** Multiplier of the token embedding (Gemma: √hidden), 1 for none. */
  embedScale: number;
  /** Learned absolute positions (rows), 0 for none (GPT-2). */
  positions: number;
  /** Whether the lm_head has a bias (Phi-2). */
  lmHeadBias: boolean;
  /** Per-layer window and RoPE. */
  layers: LayerAttention[];
  /**
   * Phi-3's LongRoPE: per-pair frequency divisors for contexts up to
   * `original` (short) and beyond (long), and the cos/sin multiplier. The
   * model runs with the short factors (the long ones are kept for GGUF).
   */
  longrope?: LongRope;
}

/** LongRoPE (`rope_type` `longrope` / `su`) settings. */
export interface LongRope {
  /** Divisors used up to `original` positions. */
  short: number[];
  /** Divisors for longer contexts (not run here). */
  long: number[];
  /** `original_max_position_embeddings`. */
  original: number;
  /** cos/sin multiplier. */
  attnFactor: number;
}

/** Hugging Face names of a family's tensors, by network stem. */
export interface HfNames {
  /** Block prefixes tried in order, with `{i}` for the block index. */
  block: string[];
  /** Network stem in a block (`attn_norm`, `self_attn.q_proj` …) → HF stem. */
  blockStems: Record<string, string>;
  /** Token table. */
  embedding: string[];
  /** Position table, when the family has one. */
  positions?: string[];
  /** Final norm. */
  finalNorm: string[];
  /** lm_head. */
  lmHead: string[];
}

/** One family: config and tensor naming both ways. */
export interface DecoderFamilySpec {
  /** Which mechanism runs it (see `families/mod.ts`). */
  kind: "decoder_block";
  /** Its row of the family table (`model_type`, models, GGUF architecture). */
  info: DecoderFamilyInfo;
  /** `architectures[0]` of its `config.json`. */
  hfArchitecture: string;
  /** Reads the family's `config.json`. */
  fromHf(o: Record<string, unknown>, where: string): TransformerConfig;
  /** The family's `config.json` fields. */
  toHf(cfg: TransformerConfig): Record<string, unknown>;
  /** Family-specific GGUF keys (written after the common ones). */
  toGguf?(
    cfg: TransformerConfig,
    put: (key: string, value: unknown, type: string) => void,
  ): void;
  /** The variant of a GGUF file of this architecture. */
  fromGguf(
    get: (key: string) => unknown,
    base: TransformerConfig,
    names: ReadonlySet<string>,
    values: ReadonlyMap<string, Float32Array>,
  ): DecoderVariant;
  /** Tensors the GGUF file holds besides the network's (Phi-3's rope factors). */
  ggufExtraTensors?(
    cfg: TransformerConfig,
  ): { name: string; values: Float32Array }[];
  /** Whether llama.cpp needs `output.weight` even when tied (written as a copy of the embedding). */
  ggufOutputRequired?: boolean;
  /** Tensor names in Hugging Face checkpoints. */
  hf: HfNames;
  /** Value change from a Hugging Face tensor to the network one (and back). */
  hfValues?: {
    toNetwork(stem: string, v: Float32Array, shape: number[]): Float32Array;
    fromNetwork(stem: string, v: Float32Array, shape: number[]): Float32Array;
    /** Stems whose values change (others are copied as stored). */
    applies(stem: string, shape: readonly number[]): boolean;
  };
  /** Shape of a tensor in Hugging Face files, when it differs from the network's. */
  hfShape?(stem: string, netShape: number[]): number[] | undefined;
  /**
   * Value change of a network tensor written to GGUF (Gemma folds a
   * non-default attention scale into q, as llama.cpp has no key for it).
   */
  ggufValues?: {
    applies(stem: string, cfg: TransformerConfig): boolean;
    toGguf(stem: string, v: Float32Array, cfg: TransformerConfig): Float32Array;
  };
}
