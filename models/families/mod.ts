/**
 * Every model family beyond Llama / Mistral / Qwen2, listed in one place.
 * A family runs through one of two mechanisms:
 *
 * - **trunk options** ({@link FAMILY_SPECS}, spec type {@link FamilySpec},
 *   `_spec.ts`): the Llama network of `embedding → transformer_block … →
 *   rms_norm → dense` with options of those existing layers (q/k norm,
 *   post-norms, residual / embedding / attention scales, mixture of
 *   experts): qwen3, qwen3_moe, mixtral, olmo2, granite, smollm3.
 * - **decoder_block variants** ({@link DECODER_FAMILY_SPECS}, spec type
 *   {@link DecoderFamilySpec}, `_decoder_spec.ts`): a config with a
 *   `variant` runs as `decoder_embedding → decoder_block … → norm → dense`,
 *   for families whose block is not the Llama block (LayerNorm, GeGLU /
 *   GELU MLPs, fused projections, parallel residual, sandwich norms,
 *   soft-capping, learned positions): gemma, gemma2, gemma3_text (and the
 *   text part of gemma3), phi3, phi, gpt2, stablelm, starcoder2.
 *
 * `config.ts`, `gguf_config.ts`, `convert.ts`, `detect.ts` and the loaders
 * look a family up here.
 *
 * @module
 */

import { DECODER_FAMILY_SPECS } from "./_decoder.ts";
import type { DecoderFamilySpec } from "./_decoder_spec.ts";
import type { FamilySpec } from "./_spec.ts";
import { graniteFamily } from "./granite.ts";
import { mixtralFamily } from "./mixtral.ts";
import { olmo2Family } from "./olmo2.ts";
import { qwen3Family } from "./qwen3.ts";
import { qwen3MoeFamily } from "./qwen3_moe.ts";
import { smollm3Family } from "./smollm3.ts";

export type { FamilySpec } from "./_spec.ts";
export {
  applyMove,
  DECODER_FAMILY_SPECS,
  familyByGguf,
  familySpec,
  GGUF_EXTRA_TENSORS,
  ggufExtraValues,
  ggufNameOf,
  ggufToHfMoves,
  hfNamesOf,
  hfToGgufMoves,
  loadGgufTensors,
  loadHfTensors,
  type NetTensor,
  networkTensors,
  specOf,
  type TensorMove,
  variantNetwork,
  variantToHf,
} from "./_decoder.ts";
export type {
  DecoderFamily,
  DecoderFamilySpec,
  DecoderVariant,
  LayerAttention,
  LongRope,
} from "./_decoder_spec.ts";

/** The trunk-option families' specs, by Hugging Face `model_type`. */
export const FAMILY_SPECS: ReadonlyMap<string, FamilySpec> = new Map(
  [
    qwen3Family,
    qwen3MoeFamily,
    mixtralFamily,
    olmo2Family,
    graniteFamily,
    smollm3Family,
  ].map((s) => [s.info.modelType, s]),
);

/** A family of either kind: `spec.kind` says which mechanism runs it. */
export type AnyFamilySpec = FamilySpec | DecoderFamilySpec;

/**
 * Every family beyond Llama / Mistral / Qwen2, both kinds, in table order:
 * `FAMILIES` (config.ts) and `GGUF_ARCHITECTURES` (gguf_config.ts) list
 * these.
 */
export const ALL_FAMILY_SPECS: readonly AnyFamilySpec[] = [
  ...FAMILY_SPECS.values(),
  ...DECODER_FAMILY_SPECS,
];
