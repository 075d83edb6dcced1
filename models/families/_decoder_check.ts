// The build check of a decoder_block family (models/families/mod.ts):
// every network tensor present under one of its names with the shape the
// config makes, and no block past the declared count. models/check.ts calls
// it for configs with a variant; names and shapes only.

import type { TensorInfo } from "../../core/model.ts";
import type { TransformerConfig } from "../config.ts";
import type { NameScheme } from "../names.ts";
import { decoderSpecOf, ggufNameOf, hfNamesOf, networkTensors } from "./mod.ts";

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
