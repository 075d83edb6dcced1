/**
 * Fuzz targets for the JSON formats: modelhost bundles, Loom bundles and
 * tokenizer.json. Seeds are the repository's own vectors; mutations edit the
 * parsed JSON (and, for Loom, the JSON inside its base64 weights).
 *
 * @module
 */

import type { Rng } from "../../core/rng.ts";
import { loadAllTensors, memoryTensorIndex } from "../../core/model.ts";
import { buildNetwork, parseNetwork } from "../../core/network.ts";
import { floatTensor, tensorFromF32 } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import { loadBundle, saveBundle } from "../../formats/bundle/mod.ts";
import { createTokenizer } from "../../tokenizers/mod.ts";
import { type FuzzTarget, WrongAcceptance } from "./harness.ts";
import { checkModelFile } from "./targets.ts";
import {
  jsonText,
  mutateBytes,
  mutateJson,
  pick,
  text,
  utf8,
} from "./_mutate.ts";

const reg = defaultRegistry();

function once<T>(f: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () => (p ??= f());
}

async function checkBundle(input: Uint8Array, what: string): Promise<void> {
  const b = await loadBundle(text(input));
  await checkModelFile(b, what);
  for (const m of b.models) {
    if (!m.config) continue;
    const spec = parseNetwork(reg, m.config);
    const net = buildNetwork(reg, m.config, await loadAllTensors(m.tensors));
    const n = spec.inputSize;
    if (typeof n === "number" && n > 0 && n <= 4096) {
      const y = net.forward(floatTensor(new Float32Array(n), [1, n]));
      if (
        typeof spec.outputSize === "number" && spec.outputSize > 0 &&
        y.data.length % spec.outputSize !== 0
      ) {
        throw new WrongAcceptance(
          `${what}: model ${m.id} gave ${y.data.length} outputs, its config says rows of ${spec.outputSize}`,
        );
      }
    }
  }
}

// ---- modelhost bundles ----

const bundleSeeds = once(async () => {
  const cfg = {
    input_size: 3,
    layers: [
      { type: "dense", output_size: 4, activation: "relu" },
      { type: "dense", output_size: 2 },
    ],
  };
  const w = [
    tensorFromF32(
      "layers.0.weight",
      Float32Array.from({ length: 12 }, (_, i) => i / 10),
      [4, 3],
    ),
    tensorFromF32("layers.0.bias", new Float32Array(4), [4]),
    tensorFromF32(
      "layers.1.weight",
      Float32Array.from({ length: 8 }, (_, i) => -i / 10),
      [2, 4],
    ),
    tensorFromF32("layers.1.bias", new Float32Array(2), [2]),
  ];
  const q = {
    name: "q",
    dtype: "I8" as const,
    shape: [2, 2],
    bytes: Uint8Array.of(1, 2, 3, 4),
    quant: { scale: Float32Array.of(0.5, 0.25), axis: 0 },
  };
  return [
    await saveBundle([{
      id: "net",
      config: cfg,
      tensors: memoryTensorIndex(w),
    }]),
    await saveBundle([{
      id: "t",
      tensors: memoryTensorIndex([q]),
      metadata: { k: "v" },
    }], {
      dtype: "F16",
    }),
  ];
});

const bundleTarget: FuzzTarget = {
  name: "bundle",
  async generate(rng: Rng): Promise<Uint8Array> {
    const seed = pick(rng, await bundleSeeds());
    if (rng.next() < 0.75) {
      return utf8(jsonText(mutateJson(rng, JSON.parse(seed))));
    }
    return mutateBytes(rng, utf8(seed), 2000);
  },
  run: (input) => checkBundle(input, "bundle"),
};

// ---- Loom bundles ----

const loomSeeds = once(async () => {
  const v = JSON.parse(
    await Deno.readTextFile(
      new URL("../../tests/vectors/loom.json", import.meta.url),
    ),
  ) as Record<
    string,
    { bundle?: string; dtypes?: Record<string, { bundle: string }> }
  >;
  const out: string[] = [];
  for (const c of Object.values(v)) {
    if (c.bundle) out.push(c.bundle);
    for (const d of Object.values(c.dtypes ?? {})) out.push(d.bundle);
  }
  return out;
});

const loomTarget: FuzzTarget = {
  name: "loom",
  async generate(rng: Rng): Promise<Uint8Array> {
    const seed = pick(rng, await loomSeeds());
    const r = rng.next();
    if (r < 0.8) {
      const doc = JSON.parse(seed) as { models: Record<string, unknown>[] };
      const m = doc.models[0];
      const weights = m.weights as Record<string, unknown> | undefined;
      if (r < 0.4 && weights && typeof weights.data === "string") {
        // the JSON inside the base64 weights
        try {
          const inner = JSON.parse(
            text(Uint8Array.from(atob(weights.data), (c) => c.charCodeAt(0))),
          );
          const bytes = utf8(jsonText(mutateJson(rng, inner)));
          let s = "";
          for (let i = 0; i < bytes.length; i += 0x8000) {
            s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
          }
          weights.data = btoa(s);
          return utf8(JSON.stringify(doc));
        } catch {
          // not JSON inside: edit the outer document
        }
      }
      mutateJson(rng, m.cfg ?? doc);
      return utf8(jsonText(doc));
    }
    return mutateBytes(rng, utf8(seed), 1500);
  },
  run: (input) => checkBundle(input, "loom"),
};

// ---- tokenizer.json ----

const TOKENIZER_SEEDS = [
  "bpe_gpt2",
  "bpe_llama3",
  "bpe_spm_metaspace",
  "unigram_t5",
  "wordpiece_bert",
  "wordlevel",
  "n_precompiled_seq",
  "p_sequence",
  "post_template",
  "d_replace_fuse_strip",
];

const tokenizerSeeds = once(async () => {
  const out: string[] = [];
  for (const n of TOKENIZER_SEEDS) {
    const v = JSON.parse(
      await Deno.readTextFile(
        new URL(`../../tests/vectors/tokenizers/${n}.json`, import.meta.url),
      ),
    ) as { tokenizer: unknown };
    out.push(JSON.stringify(v.tokenizer));
  }
  return out;
});

const SAMPLES = [
  "Hello world",
  "  héllo\tWORLD 12345 ☃ 🤗",
  "<s>[MASK]</s>",
  "",
];

const tokenizerTarget: FuzzTarget = {
  name: "tokenizer-json",
  async generate(rng: Rng): Promise<Uint8Array> {
    const seed = pick(rng, await tokenizerSeeds());
    if (rng.next() < 0.85) {
      const j = JSON.parse(seed) as Record<string, unknown>;
      // aim at the pipeline parts more than at the (large) vocabulary
      const part = pick(rng, [
        "normalizer",
        "pre_tokenizer",
        "post_processor",
        "decoder",
        "model",
        "added_tokens",
        "",
      ]);
      if (
        part && j[part] !== null && typeof j[part] === "object" &&
        rng.next() < 0.7
      ) {
        mutateJson(rng, j[part]);
      } else mutateJson(rng, j);
      return utf8(jsonText(j));
    }
    return mutateBytes(rng, utf8(seed), 3000);
  },
  run(input: Uint8Array): Promise<void> {
    const json = JSON.parse(text(input));
    const tok = createTokenizer(json, { name: "fuzz tokenizer.json" });
    for (const s of SAMPLES) {
      const ids = tok.encode(s);
      for (const id of ids) {
        if (!Number.isInteger(id) || id < 0 || id >= tok.vocabSize) {
          throw new WrongAcceptance(
            `encode(${
              JSON.stringify(s)
            }) gave id ${id} outside the vocabulary of ${tok.vocabSize}`,
          );
        }
      }
      tok.decode(ids);
    }
    return Promise.resolve();
  },
};

/** The JSON-format targets. */
export const fuzzTargets: FuzzTarget[] = [
  bundleTarget,
  loomTarget,
  tokenizerTarget,
];
