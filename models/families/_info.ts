/**
 * The rows the families beyond Llama add to `FAMILIES` (plain data, so
 * `config.ts` can list them without loading the specs).
 *
 * @module
 */

import type { DecoderFamily } from "./_decoder_spec.ts";

/** One family's listing. */
export interface DecoderFamilyInfo {
  /** Hugging Face `model_type`. */
  modelType: DecoderFamily;
  /** Model lines that use it. */
  models: string;
  /** llama.cpp's `general.architecture`. */
  ggufArchitecture: string;
  /** What it needed beyond Llama. */
  specifics: string;
}

/** Rows by `model_type`. */
export const DECODER_FAMILY_INFO: readonly DecoderFamilyInfo[] = [
  {
    modelType: "gemma",
    models: "Gemma 2B/7B, CodeGemma",
    ggufArchitecture: "gemma",
    specifics:
      "GeGLU MLP (gelu tanh), RMSNorm with 1 + w (GGUF stores 1 + w), embeddings scaled by √hidden, tied lm_head, head_dim",
  },
  {
    modelType: "gemma2",
    models: "Gemma 2 2B/9B/27B",
    ggufArchitecture: "gemma2",
    specifics:
      "Gemma's GeGLU, 1 + w norms and embedding scale; sandwich norms (before and after attention and MLP); attention and final logit soft-capping; sliding window on even layers; attention scale query_pre_attn_scalar^-½ (folded into q_proj in GGUF, where llama.cpp uses head_dim^-½)",
  },
  {
    modelType: "gemma3_text",
    models:
      "Gemma 3 1B/4B/12B/27B (text), the language model of multimodal gemma3 checkpoints",
    ggufArchitecture: "gemma3",
    specifics:
      "Gemma 2's sandwich norms and attention scale (folded into q_norm in GGUF), q/k RMSNorm (1 + w); sliding layers use the local RoPE base (10000), global layers rope_theta and its linear scaling; layer_types (5 sliding : 1 global)",
  },
  {
    modelType: "phi3",
    models: "Phi-3, Phi-3.5-mini, Phi-4-mini",
    ggufArchitecture: "phi3",
    specifics:
      "fused qkv_proj and gate_up_proj (GGUF attn_qkv, ffn_up), optional sliding window and partial rotary, LongRoPE (longrope/su: short factors and attention factor; GGUF rope_factors_short/long)",
  },
  {
    modelType: "phi",
    models: "Phi-1, Phi-1.5, Phi-2",
    ggufArchitecture: "phi2",
    specifics:
      "parallel attention + MLP after one LayerNorm, partial rotary, GELU (tanh) fc1/fc2 MLP, biases on every projection and the lm_head",
  },
  {
    modelType: "gpt2",
    models: "GPT-2, DistilGPT2",
    ggufArchitecture: "gpt2",
    specifics:
      "learned absolute positions, LayerNorm, Conv1D weights stored [in, out] (transposed), fused c_attn, GELU (tanh) MLP, biases, no rotary",
  },
  {
    modelType: "stablelm",
    models: "StableLM-2 1.6B/12B, StableLM-3B-4E1T, Stable Code 3B",
    ggufArchitecture: "stablelm",
    specifics:
      "LayerNorm with bias, partial rotary (partial_rotary_factor), optional q/k/v biases",
  },
  {
    modelType: "starcoder2",
    models: "StarCoder2 3B/7B/15B",
    ggufArchitecture: "starcoder2",
    specifics:
      "LayerNorm with bias, biases on q/k/v/o and the MLP (use_bias), GELU (tanh) c_fc/c_proj MLP, optional sliding window",
  },
];

/** The row of a family. */
export function familyInfo(t: DecoderFamily): DecoderFamilyInfo {
  return DECODER_FAMILY_INFO.find((f) => f.modelType === t)!;
}
