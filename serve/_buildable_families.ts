// The served-model tensor check for the families beyond Llama / Mistral /
// Qwen2 (see models/families/mod.ts): decoder_block families are checked
// tensor by tensor against the network their config stands for; trunk-option
// families have their names mapped to the trunk's first, and the block roles
// they replace (MoE experts, the pre-norm of post-norm blocks) left out.

import type { TensorInfo } from "../core/model.ts";
import type { TransformerConfig } from "../models/config.ts";
import {
  decoderSpecOf,
  FAMILY_SPECS,
  ggufNameOf,
  hfNamesOf,
  networkTensors,
} from "../models/families/mod.ts";
import type { NameScheme, TensorRole } from "../models/names.ts";

function expectShape(
  infos: ReadonlyMap<string, TensorInfo>,
  name: string,
  shape: readonly number[],
  where: string,
): void {
  const info = infos.get(name)!;
  if (
    info.shape.length !== shape.length ||
    info.shape.some((d, i) => d !== shape[i])
  ) {
    throw new TypeError(
      `${where}: tensor ${name} is [${
        info.shape.join(", ")
      }] but the config makes it [${shape.join(", ")}]`,
    );
  }
}

/**
 * Checks a `decoder_block` family's tensors: every network tensor present
 * under one of its names with the shape the config makes, and no tensors of
 * a block past the declared count.
 */
export function checkVariantTensors(
  cfg: TransformerConfig,
  infos: ReadonlyMap<string, TensorInfo>,
  scheme: NameScheme,
  where: string,
): void {
  const spec = decoderSpecOf(cfg);
  for (const t of networkTensors(cfg)) {
    if (t.stem === "lm_head" && t.kind === "weight" && cfg.tieWordEmbeddings) {
      continue;
    }
    const names = scheme === "gguf" ? [ggufNameOf(t)] : hfNamesOf(spec, t);
    const name = names.find((n) => infos.has(n));
    if (name === undefined) {
      throw new TypeError(`${where}: tensor ${names[0]} is missing`);
    }
    const shape = scheme === "gguf"
      ? t.shape
      : spec.hfShape?.(t.stem, t.shape) ?? t.shape;
    expectShape(infos, name, shape, where);
    if (t.layer === cfg.numLayers - 1) {
      const past = { ...t, layer: cfg.numLayers };
      const extra = (scheme === "gguf" ? [ggufNameOf(past)] : hfNamesOf(
        spec,
        past,
      )).find((n) => infos.has(n));
      if (extra !== undefined) {
        throw new TypeError(
          `${where}: the config declares ${cfg.numLayers} blocks but the file has ${extra}`,
        );
      }
    }
  }
}

/**
 * A trunk-option family's tensor names mapped to the trunk's, and the block
 * roles it does not have; the identity and none for Llama / Mistral / Qwen2.
 */
export function trunkFamilyView(
  cfg: TransformerConfig,
  infos: ReadonlyMap<string, TensorInfo>,
  scheme: NameScheme,
): { infos: ReadonlyMap<string, TensorInfo>; skip: Set<TensorRole> } {
  const spec = FAMILY_SPECS.get(cfg.family);
  const skip = new Set<TensorRole>();
  if (cfg.moe) {
    for (const r of ["mlp_gate", "mlp_up", "mlp_down"] as const) skip.add(r);
  }
  if (cfg.normPlacement === "post") skip.add("attn_norm");
  const names = scheme === "gguf" ? spec?.ggufNames : spec?.hfNames;
  // base-model checkpoints (no `model.` prefix) load as the trunk's names
  const unprefixed = scheme === "hf" &&
    !infos.has("model.embed_tokens.weight") && infos.has("embed_tokens.weight");
  if (!names && !unprefixed) return { infos, skip };
  const rename = (n: string) => {
    const m = names ? names.fromFamily(n) : n;
    return unprefixed && !m.startsWith("lm_head.") ? `model.${m}` : m;
  };
  return {
    infos: new Map([...infos].map(([n, i]) => [rename(n), i])),
    skip,
  };
}
