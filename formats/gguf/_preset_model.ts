/**
 * The shape facts llama-quantize's rules read, taken from a model's GGUF
 * metadata as llama.cpp's loader reads them.
 *
 * @module
 */

import type { GgufMetadataEntry } from "./types.ts";
import type { GgufPresetModel } from "./presets.ts";

function first(v: unknown): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  if (v && typeof v === "object" && "items" in v) {
    const items = (v as { items: unknown[] }).items;
    return items.length ? first(items[0]) : undefined;
  }
  return undefined;
}

/**
 * Architecture, layer, head and expert counts from GGUF metadata.
 *
 * @param metadata Typed metadata entries.
 * @returns The facts; counts that are absent are 0 (head_count_kv defaults to head_count).
 * @throws {TypeError} Without `general.architecture` or `<arch>.block_count`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { presetModel } from "./_preset_model.ts";
 * import { GgufType } from "@modelhost/modelhost/formats/gguf";
 * const m = presetModel([
 *   { key: "general.architecture", type: GgufType.STRING, value: "llama" },
 *   { key: "llama.block_count", type: GgufType.UINT32, value: 2 },
 * ]);
 * assert(m.nLayer === 2 && m.nExpert === 0);
 * ```
 */
export function presetModel(metadata: GgufMetadataEntry[]): GgufPresetModel {
  const get = (k: string) => metadata.find((e) => e.key === k)?.value;
  const arch = get("general.architecture");
  if (typeof arch !== "string") {
    throw new TypeError(
      "Cannot apply a quantization preset: the model has no general.architecture",
    );
  }
  const nLayer = first(get(`${arch}.block_count`));
  if (nLayer === undefined) {
    throw new TypeError(
      `Cannot apply a quantization preset: the model has no ${arch}.block_count`,
    );
  }
  const nHead = first(get(`${arch}.attention.head_count`)) ?? 0;
  return {
    arch,
    nLayer,
    nHead,
    nHeadKv: first(get(`${arch}.attention.head_count_kv`)) ?? nHead,
    nExpert: first(get(`${arch}.expert_count`)) ?? 0,
  };
}
