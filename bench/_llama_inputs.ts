// Inputs shared by bench/llama_bench.ts and bench/llama_compare.ts: the
// stories260K fixtures and a generated model of SmolLM-135M's shape (random
// weights), written as GGUF so that llama.cpp can run the very same weights.

import { fromFileUrl, join, resolve } from "@std/path";
import { memoryTensorIndex } from "../core/model.ts";
import { memorySource } from "../core/sources.ts";
import { tensorFromF32 } from "../core/tensor.ts";
import { readGguf, writeGgufBytes } from "../formats/gguf/mod.ts";
import {
  configFromHf,
  hfToGguf,
  type Transformer,
  transformerFromGguf,
} from "../models/mod.ts";

/** Fixture folder (MODELHOST_FIXTURES, else ../shared/fixtures beside the checkout). */
export function fixturesDir(): string | undefined {
  const root = resolve(fromFileUrl(new URL("..", import.meta.url)));
  const dir = Deno.env.get("MODELHOST_FIXTURES") ??
    join(root, "..", "shared", "fixtures");
  try {
    return Deno.statSync(dir).isDirectory ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** The stories260K files: F32 in gguf/, F16/Q8_0/Q4_0 made by llama.cpp. */
export const STORIES = {
  F32: "gguf/stories260K.gguf",
  F16: "reference/llama-logits/stories260K-F16.gguf",
  Q8_0: "reference/llama-logits/stories260K-Q8_0.gguf",
  Q4_0: "reference/llama-logits/stories260K-Q4_0.gguf",
} as const;

/** SmolLM-135M's config.json (HuggingFaceTB/SmolLM-135M), weights aside. */
export const SMOLLM_135M = {
  model_type: "llama",
  vocab_size: 49152,
  hidden_size: 576,
  intermediate_size: 1536,
  num_hidden_layers: 30,
  num_attention_heads: 9,
  num_key_value_heads: 3,
  max_position_embeddings: 2048,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  tie_word_embeddings: true,
  hidden_act: "silu",
};

/** Uniform values in ±bound from a 32-bit LCG (fast; 135 M values in well under a second). */
function fill(n: number, bound: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = (s / 4294967296 * 2 - 1) * bound;
  }
  return out;
}

/** A SentencePiece-style vocabulary of n tokens, so that llama.cpp can load the file. */
function syntheticVocab(n: number): Record<string, unknown> {
  const tokens = ["<unk>", "<s>", "</s>"];
  const types = [2, 3, 3];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(6);
  }
  while (tokens.length < n) {
    tokens.push(`▁t${tokens.length}`);
    types.push(1);
  }
  return {
    "tokenizer.ggml.model": "llama",
    "tokenizer.ggml.tokens": tokens,
    "tokenizer.ggml.scores": new Float32Array(n),
    "tokenizer.ggml.token_type": Int32Array.from(types),
    "tokenizer.ggml.bos_token_id": 1,
    "tokenizer.ggml.eos_token_id": 2,
  };
}

/**
 * GGUF bytes of a model with SmolLM-135M's shape and random weights
 * (uniform ±1/√fan_in, norms 1), F32 or quantized on write.
 */
export async function smolLmGguf(
  quantize?: "Q8_0" | "Q4_0",
): Promise<Uint8Array> {
  const cfg = configFromHf(SMOLLM_135M);
  const d = cfg.hiddenSize, f = cfg.intermediateSize;
  const q = cfg.numHeads * cfg.headDim, kv = cfg.numKvHeads * cfg.headDim;
  const list = [];
  let seed = 1;
  const mat = (name: string, rows: number, cols: number) =>
    tensorFromF32(name, fill(rows * cols, 1 / Math.sqrt(cols), seed++), [
      rows,
      cols,
    ]);
  const ones = (name: string) =>
    tensorFromF32(name, new Float32Array(d).fill(1), [d]);
  list.push(mat("model.embed_tokens.weight", cfg.vocabSize, d));
  for (let n = 0; n < cfg.numLayers; n++) {
    const p = `model.layers.${n}.`;
    list.push(ones(p + "input_layernorm.weight"));
    list.push(mat(p + "self_attn.q_proj.weight", q, d));
    list.push(mat(p + "self_attn.k_proj.weight", kv, d));
    list.push(mat(p + "self_attn.v_proj.weight", kv, d));
    list.push(mat(p + "self_attn.o_proj.weight", d, q));
    list.push(ones(p + "post_attention_layernorm.weight"));
    list.push(mat(p + "mlp.gate_proj.weight", f, d));
    list.push(mat(p + "mlp.up_proj.weight", f, d));
    list.push(mat(p + "mlp.down_proj.weight", d, f));
  }
  list.push(ones("model.norm.weight"));
  const file = hfToGguf({
    config: SMOLLM_135M,
    model: {
      models: [{
        id: "smollm-135m-shape",
        metadata: {},
        tensors: memoryTensorIndex(list),
      }],
    },
  }, { name: "SmolLM-135M shape, random weights" });
  Object.assign(file.models[0].metadata, syntheticVocab(cfg.vocabSize));
  const types = file.models[0].metadata["gguf.types"] as Record<string, string>;
  Object.assign(types, {
    "tokenizer.ggml.model": "STRING",
    "tokenizer.ggml.tokens": "ARRAY<STRING>",
    "tokenizer.ggml.scores": "ARRAY<FLOAT32>",
    "tokenizer.ggml.token_type": "ARRAY<INT32>",
    "tokenizer.ggml.bos_token_id": "UINT32",
    "tokenizer.ggml.eos_token_id": "UINT32",
  });
  return await writeGgufBytes(file, quantize ? { quantize } : {});
}

/** Our model over GGUF bytes (zero-copy views into them). */
export async function modelFromGguf(bytes: Uint8Array): Promise<Transformer> {
  return await transformerFromGguf(await readGguf(memorySource(bytes)));
}

/** Prompt ids: a fixed pseudo-random sequence after BOS. */
export function promptOf(n: number, vocab: number): number[] {
  const out = [1];
  let s = 12345;
  while (out.length < n) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    out.push(3 + (s >>> 8) % (vocab - 3));
  }
  return out;
}

/** Tokens/s of a prefill of `ids` (fresh state, logits of the last position only). */
export function prefillRate(
  model: Transformer,
  ids: number[],
  minMs = 1000,
): number {
  let n = 0;
  const t0 = performance.now();
  do {
    model.forward(ids, model.createState());
    n++;
  } while (performance.now() - t0 < minMs);
  return (n * ids.length * 1000) / (performance.now() - t0);
}

/** Tokens/s of one-token decode steps after a prompt of `ctx` tokens. */
export function decodeRate(
  model: Transformer,
  prompt: number[],
  steps: number,
): number {
  const state = model.createState();
  let logits = model.forward(prompt, state);
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) {
    let best = 0;
    for (let j = 1; j < logits.length; j++) {
      if (logits[j] > logits[best]) best = j;
    }
    logits = model.forward([best], state);
  }
  return (steps * 1000) / (performance.now() - t0);
}
