// A synthetic Llama GGUF of real widths (256), deterministic from its
// parameters: the input of the preset, imatrix and perplexity references
// (`gguf_presets.sh` feeds it to llama.cpp's tools). Its bytes are checked
// by sha256 against the value recorded beside the references, so the
// tests see the very file llama.cpp saw.
//
//   deno run -A tests/vectors/gen/synthetic_llama.ts OUT.gguf [gqa4|mha]

import { encodeFromF32 } from "../../../core/dtypes.ts";
import { memoryTensorIndex } from "../../../core/model.ts";
import type { Tensor } from "../../../core/tensor.ts";
import { tensorFromF32 } from "../../../core/tensor.ts";
import {
  type GgufMetadataEntry,
  GgufType,
  writeGgufBytes,
} from "../../../formats/gguf/mod.ts";

/** The two variants: 4 heads sharing one KV head (GQA 4) with a 256-wide FFN, 8 layers and an output matrix, or 4 KV heads, a 288-wide FFN (rows that fit no 256-block), 4 layers and tied embeddings. */
export type SyntheticVariant = "gqa4" | "mha";

/** Shape of a variant. */
export function syntheticShape(variant: SyntheticVariant): {
  embd: number;
  ff: number;
  layers: number;
  heads: number;
  kvHeads: number;
  vocab: number;
  tied: boolean;
} {
  return variant === "gqa4"
    ? { embd: 256, ff: 256, layers: 8, heads: 4, kvHeads: 1, vocab: 259, tied: false }
    : { embd: 256, ff: 288, layers: 4, heads: 4, kvHeads: 4, vocab: 259, tied: true };
}

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Weights: near-normal (sum of four uniforms), a scale per row, a rare outlier. */
function weights(rows: number, cols: number, seed: number, scale: number): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < rows; i++) {
    const s = scale * (0.5 + r());
    for (let j = 0; j < cols; j++) {
      let v = (r() + r() + r() + r() - 2) * s;
      if (r() < 0.002) v *= 8;
      out[i * cols + j] = v;
    }
  }
  return out;
}

function f16(name: string, shape: number[], data: Float32Array): Tensor {
  const t = tensorFromF32(name, data, shape);
  return { ...t, dtype: "F16", bytes: encodeFromF32("F16", data) } as Tensor;
}

/**
 * The synthetic model's GGUF bytes: F16 matrices, F32 norms, a byte-level
 * SentencePiece-style vocabulary (`<unk>`, `<s>`, `</s>`, 256 byte tokens).
 */
export async function syntheticLlama(
  variant: SyntheticVariant,
  shape?: Partial<ReturnType<typeof syntheticShape>>,
): Promise<Uint8Array> {
  // `shape` overrides widths for benchmarks (bench/quantize_compare.ts)
  const s = { ...syntheticShape(variant), ...shape };
  const head = s.embd / s.heads, kv = head * s.kvHeads;
  const tensors: Tensor[] = [];
  let seed = variant === "gqa4" ? 1000 : 2000;
  const mat = (name: string, rows: number, cols: number, scale = 0.05) =>
    tensors.push(f16(name, [rows, cols], weights(rows, cols, seed++, scale)));
  const norm = (name: string) => {
    const r = rng(seed++);
    const d = new Float32Array(s.embd);
    for (let i = 0; i < d.length; i++) d[i] = 0.8 + 0.4 * r();
    tensors.push(tensorFromF32(name, d, [s.embd]));
  };
  mat("token_embd.weight", s.vocab, s.embd, 0.5);
  norm("output_norm.weight");
  if (!s.tied) mat("output.weight", s.vocab, s.embd, 0.1);
  for (let l = 0; l < s.layers; l++) {
    const p = `blk.${l}.`;
    norm(p + "attn_norm.weight");
    mat(p + "attn_q.weight", s.embd, s.embd);
    mat(p + "attn_k.weight", kv, s.embd);
    mat(p + "attn_v.weight", kv, s.embd);
    mat(p + "attn_output.weight", s.embd, s.embd);
    norm(p + "ffn_norm.weight");
    mat(p + "ffn_gate.weight", s.ff, s.embd);
    mat(p + "ffn_up.weight", s.ff, s.embd);
    mat(p + "ffn_down.weight", s.embd, s.ff);
  }
  const u32 = (key: string, value: number): GgufMetadataEntry => ({
    key,
    type: GgufType.UINT32,
    value,
  });
  const tokens = ["<unk>", "<s>", "</s>"];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
  }
  const metadata: GgufMetadataEntry[] = [
    { key: "general.architecture", type: GgufType.STRING, value: "llama" },
    { key: "general.name", type: GgufType.STRING, value: `synthetic-${variant}` },
    u32("general.file_type", 1),
    u32("llama.context_length", 512),
    u32("llama.embedding_length", s.embd),
    u32("llama.block_count", s.layers),
    u32("llama.feed_forward_length", s.ff),
    u32("llama.rope.dimension_count", head),
    u32("llama.attention.head_count", s.heads),
    u32("llama.attention.head_count_kv", s.kvHeads),
    {
      key: "llama.attention.layer_norm_rms_epsilon",
      type: GgufType.FLOAT32,
      value: 1e-5,
    },
    { key: "tokenizer.ggml.model", type: GgufType.STRING, value: "llama" },
    {
      key: "tokenizer.ggml.tokens",
      type: GgufType.ARRAY,
      value: { type: GgufType.STRING, items: tokens },
    },
    {
      key: "tokenizer.ggml.scores",
      type: GgufType.ARRAY,
      value: { type: GgufType.FLOAT32, items: tokens.map(() => 0) },
    },
    {
      key: "tokenizer.ggml.token_type",
      type: GgufType.ARRAY,
      value: {
        type: GgufType.INT32,
        items: tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : 6)),
      },
    },
    u32("tokenizer.ggml.bos_token_id", 1),
    u32("tokenizer.ggml.eos_token_id", 2),
    u32("tokenizer.ggml.unknown_token_id", 0),
  ];
  return await writeGgufBytes(
    { models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex(tensors) }] },
    { metadata },
  );
}

if (import.meta.main) {
  const [out, variant = "gqa4"] = Deno.args;
  const bytes = await syntheticLlama(variant as SyntheticVariant);
  await Deno.writeFile(out, bytes);
  const hash = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  console.log(
    `${out}: ${bytes.length} bytes, sha256 ${
      Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("")
    }`,
  );
}
