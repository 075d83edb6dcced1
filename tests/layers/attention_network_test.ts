import { assertEquals, assertThrows } from "@std/assert";
import {
  buildNetwork,
  checkNetworkTensors,
  initNetwork,
  parseNetwork,
} from "../../core/network.ts";
import { floatTensor } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";

const reg = defaultRegistry();

// A two-block Llama-family network: embedding → 2 × transformer_block → rms_norm → lm_head.
const LLAMA = {
  layers: [
    { type: "embedding", vocab_size: 40, embedding_dim: 16 },
    {
      type: "transformer_block",
      num_heads: 4,
      num_kv_heads: 2,
      intermediate_size: 24,
    },
    {
      type: "transformer_block",
      num_heads: 4,
      num_kv_heads: 1,
      intermediate_size: 24,
      rope_style: "interleaved",
      sliding_window: 3,
    },
    { type: "rms_norm" },
    { type: "dense", output_size: 40, bias: false },
  ],
};

Deno.test("network: a Llama-shaped network parses with d_model inferred and HF-style names", () => {
  const spec = parseNetwork(reg, LLAMA);
  assertEquals(spec.layers[1].inputSize, 16);
  const cfg1 = spec.config.layers[1];
  assertEquals([cfg1.d_model, cfg1.head_dim], [16, 4]);
  // The normalized config parses back to itself.
  assertEquals(parseNetwork(reg, spec.config).config, spec.config);
  const w = initNetwork(reg, LLAMA, 5);
  const check = checkNetworkTensors(reg, LLAMA, w);
  assertEquals([check.missing, check.extra, check.wrongShape], [[], [], []]);
  for (
    const n of [
      "layers.1.input_layernorm.weight",
      "layers.1.self_attn.k_proj.weight",
      "layers.2.mlp.down_proj.weight",
    ]
  ) assertEquals(w.has(n), true, n);
  assertEquals(w.get("layers.2.self_attn.k_proj.weight")!.shape, [4, 16]);
});

Deno.test("network: prefill and token-by-token decode through createState agree exactly", () => {
  const net = buildNetwork(reg, LLAMA, initNetwork(reg, LLAMA, 11));
  const B = 2, T = 7;
  const ids = new Float32Array(B * T).map((_, i) => (i * 7 + 3) % 40);
  const prefill = net.forward(floatTensor(ids, [B, T]));
  assertEquals(prefill.shape, [B, T, 40]);
  const state = net.createState();
  for (let t = 0; t < T; t++) {
    const step = new Float32Array([ids[t], ids[T + t]]);
    const y = net.forward(floatTensor(step, [B, 1]), state);
    for (let b = 0; b < B; b++) {
      assertEquals(
        y.data.subarray(b * 40, (b + 1) * 40),
        prefill.data.subarray((b * T + t) * 40, (b * T + t + 1) * 40),
        `b=${b} t=${t}`,
      );
    }
  }
  assertEquals((state.layers[1].kv as { length: number }).length, T);
  // A fresh state restarts at position 0; without one, so does every call.
  const again = net.forward(floatTensor(ids, [B, T]), net.createState());
  assertEquals(again.data, prefill.data);
});

Deno.test("network: a wrong attention field names the layer path", () => {
  const bad = structuredClone(LLAMA);
  (bad.layers[2] as Record<string, unknown>).num_kv_heads = 3;
  assertThrows(
    () => parseNetwork(reg, bad),
    TypeError,
    "layers[2].num_kv_heads: expected a divisor of num_heads (4), got 3",
  );
  const mismatch = structuredClone(LLAMA);
  (mismatch.layers[1] as Record<string, unknown>).d_model = 32;
  assertThrows(
    () => parseNetwork(reg, mismatch),
    TypeError,
    "layers[1].d_model: expected 16",
  );
});
