// A tiny Llama-family GGUF built in memory (2 blocks, hidden 8, 2 heads,
// vocabulary 16), with hyperparameters that a test may override: what the
// hostile-model tests of the server upload. Weights are seeded and small;
// nothing here is compared with a reference, only whether a file builds.

import { memoryTensorIndex } from "../../core/model.ts";
import { type Tensor, tensorFromF32 } from "../../core/tensor.ts";
import { writeGgufBytes } from "../../formats/gguf/mod.ts";

/** The tiny model's shape. */
export const TINY = {
  blocks: 2,
  hidden: 8,
  heads: 2,
  kvHeads: 1,
  ffn: 16,
  vocab: 16,
} as const;

function seeded(seed: number, n: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = ((s >>> 0) / 2 ** 32 - 0.5) * 0.2;
  }
  return out;
}

/**
 * The tiny model as GGUF bytes; `md` overrides (or, with `undefined`,
 * removes) metadata keys, `blocks` writes tensors for another block count.
 */
export function tinyLlamaGguf(
  md: Record<string, unknown> = {},
  blocks: number = TINY.blocks,
): Promise<Uint8Array> {
  const { hidden: h, heads, kvHeads, ffn: f, vocab } = TINY;
  const hd = h / heads;
  let seed = 1;
  const t = (name: string, shape: number[]): Tensor =>
    tensorFromF32(
      name,
      shape.length === 1
        ? new Float32Array(shape[0]).fill(1)
        : seeded(seed++, shape.reduce((a, b) => a * b, 1)),
      shape,
    );
  const tensors: Tensor[] = [t("token_embd.weight", [vocab, h])];
  for (let b = 0; b < blocks; b++) {
    tensors.push(
      t(`blk.${b}.attn_norm.weight`, [h]),
      t(`blk.${b}.attn_q.weight`, [heads * hd, h]),
      t(`blk.${b}.attn_k.weight`, [kvHeads * hd, h]),
      t(`blk.${b}.attn_v.weight`, [kvHeads * hd, h]),
      t(`blk.${b}.attn_output.weight`, [h, heads * hd]),
      t(`blk.${b}.ffn_norm.weight`, [h]),
      t(`blk.${b}.ffn_gate.weight`, [f, h]),
      t(`blk.${b}.ffn_up.weight`, [f, h]),
      t(`blk.${b}.ffn_down.weight`, [h, f]),
    );
  }
  tensors.push(t("output_norm.weight", [h]));
  const tokens = [
    "<unk>",
    "<s>",
    "</s>",
    ...Array.from(
      { length: vocab - 3 },
      (_, i) => String.fromCharCode(97 + i),
    ),
  ];
  const metadata: Record<string, unknown> = {
    "general.architecture": "llama",
    "general.name": "tiny",
    "llama.context_length": 64,
    "llama.embedding_length": h,
    "llama.feed_forward_length": f,
    "llama.attention.head_count": heads,
    "llama.attention.head_count_kv": kvHeads,
    "llama.block_count": TINY.blocks,
    "llama.rope.dimension_count": hd,
    "llama.attention.layer_norm_rms_epsilon": 1e-5,
    "tokenizer.ggml.model": "llama",
    "tokenizer.ggml.tokens": tokens,
    "tokenizer.ggml.scores": tokens.map((_, i) => -i),
    "tokenizer.ggml.token_type": tokens.map((_, i) => i < 3 ? 3 : 1),
    "tokenizer.ggml.bos_token_id": 1,
    "tokenizer.ggml.eos_token_id": 2,
  };
  for (const [k, v] of Object.entries(md)) {
    if (v === undefined) delete metadata[k];
    else metadata[k] = v;
  }
  const types: Record<string, string> = {};
  for (const [k, v] of Object.entries(metadata)) {
    if (typeof v === "number") {
      types[k] =
        Number.isInteger(v) && k !== "llama.attention.layer_norm_rms_epsilon"
          ? "UINT32"
          : "FLOAT32";
    }
  }
  types["tokenizer.ggml.scores"] = "ARRAY<FLOAT32>";
  types["tokenizer.ggml.token_type"] = "ARRAY<INT32>";
  metadata["gguf.types"] = types;
  return writeGgufBytes({
    models: [{ id: "tiny", metadata, tensors: memoryTensorIndex(tensors) }],
  });
}
