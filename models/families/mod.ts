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

import type { DecoderFamilySpec } from "./_decoder_spec.ts";
import type { FamilySpec } from "./_spec.ts";
import { gemma2Spec, gemma3Spec, gemmaSpec } from "./gemma.ts";
import { gpt2Spec } from "./gpt2.ts";
import { graniteFamily } from "./granite.ts";
import { mixtralFamily } from "./mixtral.ts";
import { olmo2Family } from "./olmo2.ts";
import { phiSpec } from "./phi.ts";
import { phi3Spec } from "./phi3.ts";
import { qwen3Family } from "./qwen3.ts";
import { qwen3MoeFamily } from "./qwen3_moe.ts";
import { smollm3Family } from "./smollm3.ts";
import { stablelmSpec } from "./stablelm.ts";
import { starcoder2Spec } from "./starcoder2.ts";

export type { FamilySpec } from "./_spec.ts";
export {
  applyMove,
  decoderFamilyByGguf,
  decoderFamilySpec,
  decoderSpecOf,
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

/** A family of either kind: `spec.kind` says which mechanism runs it. */
export type AnyFamilySpec = FamilySpec | DecoderFamilySpec;

/**
 * Every family beyond Llama / Mistral / Qwen2, both kinds, in table order:
 * `FAMILIES` (config.ts) and `GGUF_ARCHITECTURES` (gguf_config.ts) list
 * these. A new family is one line here.
 */
export const ALL_FAMILY_SPECS: readonly AnyFamilySpec[] = [
  // trunk options: embedding → transformer_block … → rms_norm → dense
  qwen3Family,
  qwen3MoeFamily,
  mixtralFamily,
  olmo2Family,
  graniteFamily,
  smollm3Family,
  // decoder_block variants: decoder_embedding → decoder_block … → norm → dense
  gemmaSpec,
  gemma2Spec,
  gemma3Spec,
  phi3Spec,
  phiSpec,
  gpt2Spec,
  stablelmSpec,
  starcoder2Spec,
];

/** The trunk-option families' specs, by Hugging Face `model_type`. */
export const FAMILY_SPECS: ReadonlyMap<string, FamilySpec> = new Map(
  ALL_FAMILY_SPECS.filter((s): s is FamilySpec => s.kind === "trunk").map((
    s,
  ) => [s.info.modelType, s]),
);

/** The `decoder_block` families' specs. */
export const DECODER_FAMILY_SPECS: readonly DecoderFamilySpec[] =
  ALL_FAMILY_SPECS.filter((s): s is DecoderFamilySpec =>
    s.kind === "decoder_block"
  );
