import { assert, assertEquals, assertThrows } from "@std/assert";
import { dtypeInfo } from "../../core/dtypes.ts";
import { tensorFromF32, toFloat32 } from "../../core/tensor.ts";
import {
  llama3RopeFactors,
  llama3ScalingFromFactors,
  parseTensorName,
  permuteToHalfSplit,
  permuteToInterleaved,
  renameTensor,
  tensorName,
} from "../../models/mod.ts";
import type { RopeScaling } from "../../kernels/rope.ts";

Deno.test("names: every role in all three schemes", () => {
  const N = 4;
  const table: [string, string, string][] = [
    ["model.embed_tokens.weight", "token_embd.weight", "layers.0.weight"],
    ["model.norm.weight", "output_norm.weight", "layers.5.weight"],
    ["lm_head.weight", "output.weight", "layers.6.weight"],
    [
      "model.layers.2.input_layernorm.weight",
      "blk.2.attn_norm.weight",
      "layers.3.input_layernorm.weight",
    ],
    [
      "model.layers.0.self_attn.q_proj.bias",
      "blk.0.attn_q.bias",
      "layers.1.self_attn.q_proj.bias",
    ],
    [
      "model.layers.3.self_attn.k_proj.weight",
      "blk.3.attn_k.weight",
      "layers.4.self_attn.k_proj.weight",
    ],
    [
      "model.layers.1.self_attn.v_proj.weight",
      "blk.1.attn_v.weight",
      "layers.2.self_attn.v_proj.weight",
    ],
    [
      "model.layers.1.self_attn.o_proj.weight",
      "blk.1.attn_output.weight",
      "layers.2.self_attn.o_proj.weight",
    ],
    [
      "model.layers.1.post_attention_layernorm.weight",
      "blk.1.ffn_norm.weight",
      "layers.2.post_attention_layernorm.weight",
    ],
    [
      "model.layers.0.mlp.gate_proj.weight",
      "blk.0.ffn_gate.weight",
      "layers.1.mlp.gate_proj.weight",
    ],
    [
      "model.layers.0.mlp.up_proj.weight",
      "blk.0.ffn_up.weight",
      "layers.1.mlp.up_proj.weight",
    ],
    [
      "model.layers.0.mlp.down_proj.weight",
      "blk.0.ffn_down.weight",
      "layers.1.mlp.down_proj.weight",
    ],
  ];
  for (const [hf, gguf, net] of table) {
    assertEquals(renameTensor(hf, "gguf"), gguf);
    assertEquals(renameTensor(gguf, "hf"), hf);
    assertEquals(renameTensor(hf, "network", N), net);
    assertEquals(renameTensor(net, "hf", N), hf);
    assertEquals(parseTensorName(net, N)?.scheme, "network");
  }
  // base-model checkpoints without the `model.` prefix
  assertEquals(parseTensorName("layers.0.mlp.up_proj.weight")?.scheme, "hf");
  assertEquals(parseTensorName("embed_tokens.weight")?.role, "embedding");
  assertEquals(parseTensorName("rope_freqs.weight")?.role, "rope_freqs");
  assertEquals(renameTensor("rope_freqs.weight", "network", N), undefined);
  assertEquals(parseTensorName("blk.0.attn_qkv.weight"), undefined);
  assertEquals(
    parseTensorName("model.layers.0.self_attn.rotary_emb.inv_freq"),
    undefined,
  );
  assertEquals(parseTensorName("layers.9.weight", N), undefined);
  assertThrows(
    () => tensorName("gguf", { role: "attn_q", kind: "weight" }),
    TypeError,
    "a block index is needed",
  );
});

/** llama.cpp's converter: reshape(heads, 2, d/2, …) → swapaxes(1, 2). */
function numpyPermute(rows: number[], heads: number): number[] {
  const d = rows.length / heads, half = d / 2;
  const out: number[] = [];
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) out.push(rows[h * d + j * half + i]);
    }
  }
  return out;
}

Deno.test("rotary: permutation matches llama.cpp's reshape/swapaxes and undoes itself", () => {
  const rows = 24, cols = 3, heads = 3;
  const w = Float32Array.from({ length: rows * cols }, (_, i) => i);
  const t = tensorFromF32("q", w, [rows, cols]);
  const p = toFloat32(permuteToInterleaved(t, heads));
  const order = numpyPermute(Array.from({ length: rows }, (_, r) => r), heads);
  assertEquals(order.slice(0, 8), [0, 4, 1, 5, 2, 6, 3, 7]);
  for (let r = 0; r < rows; r++) {
    assertEquals(
      Array.from(p.subarray(r * cols, r * cols + cols)),
      [0, 1, 2].map((c) => order[r] * cols + c),
    );
  }
  assertEquals(
    toFloat32(permuteToHalfSplit(permuteToInterleaved(t, heads), heads)),
    w,
  );
});

Deno.test("rotary: quantized rows move as whole blocks (Q8_0), no decoding", () => {
  const rows = 8, cols = 64;
  const w = Float32Array.from(
    { length: rows * cols },
    (_, i) => 0.1 + 2 * Math.cos(i),
  );
  const q8 = dtypeInfo("Q8_0");
  const t = {
    name: "k",
    dtype: "Q8_0" as const,
    shape: [rows, cols],
    bytes: q8.fromF32!(w),
  };
  const p = permuteToInterleaved(t, 2);
  assertEquals(p.bytes.length, t.bytes.length);
  const a = toFloat32(t), b = toFloat32(p);
  const order = numpyPermute(Array.from({ length: rows }, (_, r) => r), 2);
  for (let r = 0; r < rows; r++) {
    assertEquals(
      b.subarray(r * cols, (r + 1) * cols),
      a.subarray(order[r] * cols, (order[r] + 1) * cols),
    );
  }
});

Deno.test("rotary: bad head counts and partial blocks are refused", () => {
  const t = tensorFromF32(
    "model.layers.0.self_attn.q_proj.weight",
    new Float32Array(12),
    [6, 2],
  );
  assertThrows(
    () => permuteToInterleaved(t, 2),
    TypeError,
    "6 rows is not heads × an even head size",
  );
  const q = {
    name: "x",
    dtype: "Q8_0" as const,
    shape: [4, 16],
    bytes: new Uint8Array(4 * 34),
  };
  assertThrows(
    () => permuteToInterleaved(q, 2),
    TypeError,
    "a row of 16 Q8_0 values is not a whole number of 32-value blocks",
  );
});

/** llama.cpp's converter (LlamaModel.generate_extra_tensors) written out. */
function llamaCppFactors(
  dim: number,
  base: number,
  s: Extract<RopeScaling, { rope_type: "llama3" }>,
): number[] {
  const lowWl = s.original_max_position_embeddings / s.low_freq_factor;
  const highWl = s.original_max_position_embeddings / s.high_freq_factor;
  const out: number[] = [];
  for (let i = 0; i < dim; i += 2) {
    const freq = 1 / base ** (i / dim);
    const wl = 2 * Math.PI / freq;
    if (wl < highWl) out.push(1);
    else if (wl > lowWl) out.push(s.factor);
    else {
      const smooth =
        (s.original_max_position_embeddings / wl - s.low_freq_factor) /
        (s.high_freq_factor - s.low_freq_factor);
      out.push(1 / ((1 - smooth) / s.factor + smooth));
    }
  }
  return out;
}

Deno.test("rotary: llama3 rope_freqs match llama.cpp's converter and give the rule back", () => {
  const standard = {
    rope_type: "llama3" as const,
    factor: 8,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 8192,
  };
  const f = llama3RopeFactors(128, 500000, standard);
  const want = llamaCppFactors(128, 500000, standard);
  for (let i = 0; i < 64; i++) {
    assert(Math.abs(f[i] - want[i]) < 1e-5 * want[i], `pair ${i}`);
  }
  assertEquals(llama3ScalingFromFactors(f, 128, 500000), standard);

  // other constants: recovered by fitting the blend region
  const odd = {
    ...standard,
    factor: 16,
    low_freq_factor: 2,
    high_freq_factor: 8,
    original_max_position_embeddings: 4096,
  };
  const g = Float32Array.from(llamaCppFactors(128, 500000, odd));
  const back = llama3ScalingFromFactors(g, 128, 500000, 4096);
  if (back?.rope_type !== "llama3") throw new Error("expected a llama3 rule");
  assertEquals(back.factor, 16);
  assert(
    Math.abs(back.low_freq_factor - 2) < 1e-3 &&
      Math.abs(back.high_freq_factor - 8) < 1e-2,
  );

  assertEquals(
    llama3ScalingFromFactors(new Float32Array(64).fill(1), 128, 500000),
    null,
  );
  assertThrows(
    () =>
      llama3ScalingFromFactors(
        Float32Array.from({ length: 64 }, (_, i) => 1 + (i % 3)),
        128,
        500000,
      ),
    TypeError,
    "does not follow the llama3 rope scaling rule",
  );
  assertThrows(
    () => llama3ScalingFromFactors(new Float32Array(3), 128, 1e4),
    TypeError,
    "has 3 values, expected",
  );
});
