/**
 * The families beyond Llama / Mistral / Qwen2, one file each; the shared
 * tables (`FAMILIES`, the HF and GGUF readers and writers, the converters)
 * find them here.
 *
 * @module
 */

import type { FamilySpec } from "./_spec.ts";
import { graniteFamily } from "./granite.ts";
import { mixtralFamily } from "./mixtral.ts";
import { olmo2Family } from "./olmo2.ts";
import { qwen3Family } from "./qwen3.ts";
import { qwen3MoeFamily } from "./qwen3_moe.ts";
import { smollm3Family } from "./smollm3.ts";

export type { FamilySpec } from "./_spec.ts";

/** Every family spec, by Hugging Face `model_type`. */
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
