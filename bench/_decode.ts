// Llama decode benchmark inputs, shared by bench/compare.ts and
// bench/decode_bench.ts: a model of SmolLM-135M's shape with seeded random
// weights, written by our GGUF writer as Q8_0 with the metadata llama.cpp
// needs, read back and run as a network of registered layers
// (embedding → 30 × transformer_block → rms_norm → dense lm_head tied to the
// embedding), and llama.cpp's llama-bench on the same file.

import { memoryTensorIndex } from "../core/model.ts";
import { buildNetwork, type Network } from "../core/network.ts";
import { createRng } from "../core/rng.ts";
import { memorySource } from "../core/sources.ts";
import { floatTensor, type Tensor, tensorFromF32 } from "../core/tensor.ts";
import {
  type GgufMetadataEntry,
  GgufType,
  readGguf,
  writeGgufBytes,
} from "../formats/gguf/mod.ts";
import { defaultRegistry } from "../mod.ts";
import { keep } from "../models/transformer.ts";

/** The hyper-parameters of a Llama model of this benchmark. */
export interface Shape {
  vocab: number;
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediate: number;
  rmsEps: number;
  ropeTheta: number;
  context: number;
}

/** SmolLM-135M's hyper-parameters (HuggingFaceTB/SmolLM-135M config.json). */
export const SMOLLM_135M: Shape = {
  vocab: 49152,
  hidden: 576,
  layers: 30,
  heads: 9,
  kvHeads: 3,
  headDim: 64,
  intermediate: 1536,
  rmsEps: 1e-5,
  ropeTheta: 10000,
  context: 2048,
};

/** Seeded uniform values in ±bound (core/rng.ts, xoshiro128**). */
function uniform(n: number, bound: number, seed: number): Float32Array {
  const rng = createRng(seed);
  const out = new Float32Array(n);
  const scale = (2 * bound) / 4294967296;
  for (let i = 0; i < n; i++) out[i] = rng.u32() * scale - bound;
  return out;
}

/**
 * A SentencePiece-style (`tokenizer.ggml.model = "llama"`) vocabulary of
 * `n` pieces: `<unk>`, `<s>`, `</s>`, the 256 byte pieces `<0x00>`…`<0xFF>`
 * (llama.cpp looks up the newline byte), then filler pieces. llama.cpp
 * refuses a llama file without `tokenizer.ggml.tokens`, and sizes the
 * vocabulary from it (49152 here, the embedding's rows).
 */
export function vocabulary(n: number): GgufMetadataEntry[] {
  const tokens = ["<unk>", "<s>", "</s>"];
  const types = [2, 3, 3]; // unknown, control, control
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(6); // byte
  }
  for (let i = tokens.length; i < n; i++) {
    tokens.push(`\u2581p${i}`);
    types.push(1); // normal
  }
  const scores = Array.from({ length: n }, (_, i) => -i);
  const arr = (type: GgufType, items: unknown[]) => ({
    type: GgufType.ARRAY,
    value: { type, items },
  });
  return [
    { key: "tokenizer.ggml.model", type: GgufType.STRING, value: "llama" },
    {
      key: "tokenizer.ggml.tokens",
      ...arr(GgufType.STRING, tokens),
    },
    { key: "tokenizer.ggml.scores", ...arr(GgufType.FLOAT32, scores) },
    { key: "tokenizer.ggml.token_type", ...arr(GgufType.INT32, types) },
    { key: "tokenizer.ggml.bos_token_id", type: GgufType.UINT32, value: 1 },
    { key: "tokenizer.ggml.eos_token_id", type: GgufType.UINT32, value: 2 },
    { key: "tokenizer.ggml.unknown_token_id", type: GgufType.UINT32, value: 0 },
  ] as GgufMetadataEntry[];
}

/** llama.cpp's `llama` hyper-parameter keys for a shape. */
export function hparams(s: Shape, name: string): GgufMetadataEntry[] {
  const u32 = (key: string, value: number) => ({
    key,
    type: GgufType.UINT32,
    value,
  });
  const f32 = (key: string, value: number) => ({
    key,
    type: GgufType.FLOAT32,
    value,
  });
  return [
    { key: "general.architecture", type: GgufType.STRING, value: "llama" },
    { key: "general.name", type: GgufType.STRING, value: name },
    u32("llama.vocab_size", s.vocab),
    u32("llama.context_length", s.context),
    u32("llama.embedding_length", s.hidden),
    u32("llama.block_count", s.layers),
    u32("llama.feed_forward_length", s.intermediate),
    u32("llama.attention.head_count", s.heads),
    u32("llama.attention.head_count_kv", s.kvHeads),
    u32("llama.rope.dimension_count", s.headDim),
    f32("llama.rope.freq_base", s.ropeTheta),
    f32("llama.attention.layer_norm_rms_epsilon", s.rmsEps),
  ] as GgufMetadataEntry[];
}

/**
 * GGUF bytes of a SmolLM-135M-shaped Llama with seeded uniform weights
 * (±1/√fan_in; norms 1), llama.cpp tensor names, tied embeddings (no
 * `output.weight`), every matrix quantized to `quantize` by our writer
 * (`Q4_K_M`: llama-quantize's preset, mostly Q4_K with Q6_K for the tied
 * output and some `attn_v` / `ffn_down` tensors).
 */
export async function smolLmShapeGguf(
  quantize: "Q8_0" | "Q4_0" | "Q4_K" | "Q4_K_M" | "F32" = "Q8_0",
  seed = 1,
  s: Shape = SMOLLM_135M,
): Promise<Uint8Array> {
  const d = s.hidden, f = s.intermediate;
  const q = s.heads * s.headDim, kv = s.kvHeads * s.headDim;
  const list: Tensor[] = [];
  let k = seed * 1000;
  const mat = (name: string, rows: number, cols: number) =>
    list.push(
      tensorFromF32(name, uniform(rows * cols, 1 / Math.sqrt(cols), k++), [
        rows,
        cols,
      ]),
    );
  const ones = (name: string) =>
    list.push(tensorFromF32(name, new Float32Array(d).fill(1), [d]));
  mat("token_embd.weight", s.vocab, d);
  for (let n = 0; n < s.layers; n++) {
    const p = `blk.${n}.`;
    ones(p + "attn_norm.weight");
    mat(p + "attn_q.weight", q, d);
    mat(p + "attn_k.weight", kv, d);
    mat(p + "attn_v.weight", kv, d);
    mat(p + "attn_output.weight", d, q);
    ones(p + "ffn_norm.weight");
    mat(p + "ffn_gate.weight", f, d);
    mat(p + "ffn_up.weight", f, d);
    mat(p + "ffn_down.weight", d, f);
  }
  ones("output_norm.weight");
  const metadata = [
    ...hparams(s, "SmolLM-135M shape, random weights"),
    ...vocabulary(s.vocab),
  ];
  return await writeGgufBytes(
    {
      models: [{
        id: "smollm-135m-shape",
        metadata: {},
        tensors: memoryTensorIndex(list),
      }],
    },
    {
      metadata,
      ...(quantize === "F32"
        ? {}
        : quantize === "Q4_K_M"
        ? { preset: quantize }
        : { quantize }),
    },
  );
}

/** GGUF (llama.cpp) tensor names → the network's names, for block `n` at layer index `n + 1`. */
const BLOCK_NAMES: Record<string, string> = {
  "attn_norm.weight": "input_layernorm.weight",
  "attn_q.weight": "self_attn.q_proj.weight",
  "attn_k.weight": "self_attn.k_proj.weight",
  "attn_v.weight": "self_attn.v_proj.weight",
  "attn_output.weight": "self_attn.o_proj.weight",
  "ffn_norm.weight": "post_attention_layernorm.weight",
  "ffn_gate.weight": "mlp.gate_proj.weight",
  "ffn_up.weight": "mlp.up_proj.weight",
  "ffn_down.weight": "mlp.down_proj.weight",
};

/**
 * The network of registered layers for a llama GGUF of this shape:
 * embedding → N × transformer_block (interleaved RoPE: llama.cpp's rotary
 * layout for `llama` files) → rms_norm → dense lm_head, which reads the
 * embedding tensor itself (tied). Weights stay in their stored dtype (views
 * into `bytes`).
 */
export async function networkFromGguf(
  bytes: Uint8Array,
  s: Shape = SMOLLM_135M,
): Promise<Network> {
  const file = await readGguf(memorySource(bytes));
  const index = file.models[0].tensors;
  const tensors = new Map<string, Tensor>();
  const put = (name: string, t: Tensor) => tensors.set(name, { ...t, name });
  // Kept as the Llama loaders keep them: quantized weights go into kernel
  // memory, in file order, where the kernels read them in place.
  const load = async (name: string): Promise<Tensor> =>
    keep(await index.load(name));
  const embd = await load("token_embd.weight");
  put("layers.0.weight", embd);
  for (let n = 0; n < s.layers; n++) {
    for (const [from, to] of Object.entries(BLOCK_NAMES)) {
      put(`layers.${n + 1}.${to}`, await load(`blk.${n}.${from}`));
    }
  }
  put(`layers.${s.layers + 1}.weight`, await load("output_norm.weight"));
  put(`layers.${s.layers + 2}.weight`, embd);
  const block = {
    type: "transformer_block",
    d_model: s.hidden,
    num_heads: s.heads,
    num_kv_heads: s.kvHeads,
    head_dim: s.headDim,
    intermediate_size: s.intermediate,
    rms_norm_eps: s.rmsEps,
    rope_theta: s.ropeTheta,
    rope_style: "interleaved",
  };
  const config = {
    layers: [
      { type: "embedding", vocab_size: s.vocab, embedding_dim: s.hidden },
      ...Array.from({ length: s.layers }, () => block),
      { type: "rms_norm", epsilon: s.rmsEps },
      { type: "dense", output_size: s.vocab, bias: false },
    ],
  };
  return buildNetwork(defaultRegistry(), config, tensors);
}

/** The index of the largest logit (the first on ties): greedy decoding. */
export function argmax(x: Float32Array): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
  return best;
}

/**
 * Decodes `n` tokens one at a time from an empty KV cache (as
 * `llama-bench -p 0 -n N` does), each step feeding back the argmax of the
 * previous logits, starting from token 1 (BOS). Returns tokens/s and the ids.
 */
export function decode(
  net: Network,
  n: number,
): { tokensPerSecond: number; ids: number[] } {
  const state = net.createState();
  const ids: number[] = [];
  let tok = 1;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const logits = net.forward(
      floatTensor(new Float32Array([tok]), [1, 1]),
      state,
    );
    tok = argmax(logits.data);
    ids.push(tok);
  }
  return { tokensPerSecond: (n * 1000) / (performance.now() - t0), ids };
}

/** Greedy ids after `prompt` (one prefill, then one token per step). */
export function greedy(
  net: Network,
  prompt: number[],
  n: number,
  V = SMOLLM_135M.vocab,
): number[] {
  const state = net.createState();
  let logits = net.forward(
    floatTensor(Float32Array.from(prompt), [1, prompt.length]),
    state,
  ).data;
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const tok = argmax(logits.subarray(logits.length - V));
    ids.push(tok);
    if (i + 1 < n) {
      logits = net.forward(floatTensor(new Float32Array([tok]), [1, 1]), state)
        .data;
    }
  }
  return ids;
}

/**
 * llama.cpp's greedy ids for the same prompt, from `bench/llama_cpp_greedy.cpp`
 * built as `llama-cpp-greedy` beside llama-bench (DEVELOPERS.md), if present.
 */
export async function llamaCppGreedy(
  bench: string,
  file: string,
  prompt: number[],
  n: number,
): Promise<number[] | undefined> {
  const bin = bench.replace(/llama-bench$/, "llama-cpp-greedy");
  try {
    if (!Deno.statSync(bin).isFile) return undefined;
  } catch {
    return undefined;
  }
  const out = await new Deno.Command(bin, {
    args: [file, String(n), ...prompt.map(String)],
    stdout: "piped",
    stderr: "null",
  }).output();
  if (!out.success) return undefined;
  return new TextDecoder().decode(out.stdout).trim().split(/\s+/).map(Number);
}

/** The llama-bench binary under `LLAMA_CPP_BIN` (a folder, or the binary), if any. */
export function llamaBenchPath(): string | undefined {
  const bin = Deno.env.get("LLAMA_CPP_BIN");
  if (!bin) return undefined;
  for (const p of [bin, `${bin}/llama-bench`, `${bin}/bin/llama-bench`]) {
    try {
      if (Deno.statSync(p).isFile && p.endsWith("llama-bench")) return p;
    } catch { /* next */ }
  }
  return undefined;
}

/** llama.cpp's decode tokens/s: `llama-bench -m file -t T -p 0 -n N -r R`. */
export async function llamaBenchDecode(
  bench: string,
  file: string,
  threads: number,
  n: number,
  reps: number,
): Promise<{ tokensPerSecond: number; build: string }> {
  const out = await new Deno.Command(bench, {
    args: [
      "-m",
      file,
      "-t",
      String(threads),
      "-p",
      "0",
      "-n",
      String(n),
      "-r",
      String(reps),
      "-o",
      "json",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(
      `llama-bench failed: ${new TextDecoder().decode(out.stderr).trim()}`,
    );
  }
  const rows = JSON.parse(text) as {
    avg_ts: number;
    build_commit: string;
    n_gen: number;
  }[];
  const row = rows.find((r) => r.n_gen === n)!;
  return { tokensPerSecond: row.avg_ts, build: row.build_commit };
}
