// Where each tensor of a checkpoint goes in the network, decided from names
// and shapes alone. The loaders (models/transformer.ts) follow the plan to
// load bytes; the build check (models/check.ts) follows the same plan to
// compare shapes before anything is read, so the two cannot disagree about
// a family's names or GGUF's stacked experts.

import type { TensorIndex } from "../core/model.ts";
import { parseStackedExperts } from "./families/_experts.ts";
import { FAMILY_SPECS } from "./families/mod.ts";
import { parseTensorName, tensorName, type TensorRole } from "./names.ts";

/** One network tensor the plan fills, and where its bytes come from. */
export interface PlannedTensor {
  /** The tensor's name in the file. */
  from: string;
  /** Its name in the network. */
  to: string;
  /** Its shape in the network. */
  shape: readonly number[];
  /** The block it belongs to, when it belongs to one. */
  layer?: number;
  /** The role it plays. */
  role: TensorRole;
  /** For one expert cut out of a stacked GGUF tensor: which one. */
  expert?: number;
}

/** The part of a tensor index a plan reads. */
export type TensorNames = Pick<TensorIndex, "names" | "info">;

/** The name mapping a family adds before the shared names apply. */
export function familyRename(
  family: string,
  scheme: "hf" | "gguf",
): ((name: string) => string) | undefined {
  const spec = FAMILY_SPECS.get(family);
  return scheme === "gguf"
    ? spec?.ggufNames?.fromFamily
    : spec?.hfNames?.fromFamily;
}

/**
 * Maps a checkpoint's tensors to network names: the family's own names
 * first (`rename`), then the shared HF / GGUF names; a stacked GGUF expert
 * tensor `[experts, rows, cols]` becomes one `[rows, cols]` entry per
 * expert. Tensors without a network role, past `numLayers`, or refused by
 * `skip` are left out. Reads names and shapes only.
 */
export function planTensors(
  index: TensorNames,
  numLayers: number,
  skip: (role: TensorRole) => boolean,
  rename: (name: string) => string = (n) => n,
): PlannedTensor[] {
  const out: PlannedTensor[] = [];
  for (const name of index.names()) {
    const stacked = parseStackedExperts(name);
    if (stacked) {
      if (stacked.layer >= numLayers) continue;
      const shape = index.info(name).shape;
      const experts = shape.length === 3 ? shape[0] : 1;
      for (let j = 0; j < experts; j++) {
        out.push({
          from: name,
          to: tensorName("network", {
            role: stacked.role,
            layer: stacked.layer,
            kind: "weight",
            expert: j,
          }, numLayers),
          shape: shape.length === 3 ? shape.slice(1) : shape,
          layer: stacked.layer,
          role: stacked.role,
          expert: j,
        });
      }
      continue;
    }
    const p = parseTensorName(rename(name));
    if (!p || p.scheme === "network" || skip(p.role)) continue;
    if (p.layer !== undefined && p.layer >= numLayers) continue;
    out.push({
      from: name,
      to: tensorName("network", p, numLayers),
      shape: index.info(name).shape,
      layer: p.layer,
      role: p.role,
    });
  }
  return out;
}

/**
 * How many blocks a checkpoint's tensor names speak of (one more than the
 * highest block index), after the family's renames; 0 without any.
 */
export function blocksNamed(
  index: Pick<TensorIndex, "names">,
  rename: (name: string) => string = (n) => n,
): number {
  let blocks = 0;
  for (const name of index.names()) {
    const p = parseTensorName(rename(name));
    const layer = parseStackedExperts(name)?.layer ??
      (p && p.scheme !== "network" && p.role !== "rope_freqs"
        ? p.layer
        : undefined);
    if (layer !== undefined && layer + 1 > blocks) blocks = layer + 1;
  }
  return blocks;
}
