/**
 * `smollm3` (SmolLM3): the Llama trunk where some blocks run without RoPE
 * (`no_rope_layers[i] = 0`; by default every 4th block). llama.cpp's
 * `smollm3` has no metadata for it and always skips RoPE in blocks
 * `i` with `(i + 1) % 4 == 0`, so only that pattern is written to GGUF.
 *
 * @module
 */

import { type FamilySpec, intField } from "./_spec.ts";

/** llama.cpp's fixed SmolLM3 rule: every 4th block has no RoPE. */
const LLAMA_CPP_STEP = 4;

function stepPattern(layers: number, step: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < layers; i++) if ((i + 1) % step === 0) out.push(i);
  return out;
}

/** The SmolLM3 family. */
export const smollm3Family: FamilySpec = {
  kind: "trunk",
  info: {
    modelType: "smollm3",
    models: "SmolLM3",
    ggufArchitecture: "smollm3",
    specifics:
      "blocks without RoPE (no_rope_layers; per-layer use_rope: false); GGUF: every 4th block, llama.cpp's fixed rule",
  },
  hfArchitecture: "SmolLM3ForCausalLM",
  permuteQk: true,
  fromHf(o, where) {
    const layers = intField(o, "num_hidden_layers", where);
    const list = o.no_rope_layers;
    let noRope: number[];
    if (Array.isArray(list)) {
      if (list.length !== layers || list.some((v) => v !== 0 && v !== 1)) {
        throw new TypeError(
          `${where}: "no_rope_layers" must list 0 or 1 for each of the ${layers} layers, got ${
            JSON.stringify(list).slice(0, 60)
          }`,
        );
      }
      noRope = list.flatMap((v, i) => v === 0 ? [i] : []);
    } else {
      noRope = stepPattern(
        layers,
        intField(o, "no_rope_layer_interval", where, LLAMA_CPP_STEP),
      );
    }
    return { noRopeLayers: noRope, slidingWindow: null };
  },
  toHf: (cfg) => {
    const off = new Set(cfg.noRopeLayers ?? []);
    return {
      no_rope_layers: Array.from(
        { length: cfg.numLayers },
        (_, i) => off.has(i) ? 0 : 1,
      ),
      use_sliding_window: false,
      // transformers' SmolLM3 config defaults to pad id 128004, past small vocabularies
      pad_token_id: null,
    };
  },
  fromGguf(get, _names, where) {
    const n = get("block_count");
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n <= 0) {
      throw new TypeError(`${where}: smollm3.block_count is missing`);
    }
    return { noRopeLayers: stepPattern(n, LLAMA_CPP_STEP) };
  },
  toGguf(cfg) {
    const want = stepPattern(cfg.numLayers, LLAMA_CPP_STEP).join();
    if ((cfg.noRopeLayers ?? []).join() !== want) {
      throw new TypeError(
        `Cannot write smollm3 as GGUF: its blocks without RoPE (${
          (cfg.noRopeLayers ?? []).join(", ") || "none"
        }) are not llama.cpp's fixed rule (every 4th: ${want || "none"})`,
      );
    }
  },
};
