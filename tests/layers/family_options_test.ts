/**
 * The layer options the decoder families need (q/k RMSNorm, attention_scale,
 * norm_placement, residual_scale, moe, embedding and dense scale): config
 * round trips, refusals, and a prefill equal to token-by-token decoding.
 * Their values are checked against transformers through whole models in
 * tests/models/model_families_test.ts and against ONNX Runtime in
 * tests/formats/onnx_test.ts (tests/formats/_onnx_cases.ts).
 */

import { assertEquals, assertThrows } from "@std/assert";
import { buildNetwork, initNetwork, parseNetwork } from "../../core/network.ts";
import type { NetworkState } from "../../core/network.ts";
import { floatTensor } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";

const reg = defaultRegistry();

const BLOCK = {
  type: "transformer_block",
  d_model: 16,
  num_heads: 4,
  num_kv_heads: 2,
  head_dim: 6,
  intermediate_size: 20,
  qk_norm: "head",
  qk_norm_eps: 1e-5,
  attention_scale: 0.3,
  residual_scale: 0.5,
  moe: { num_experts: 4, top_k: 2, intermediate_size: 12 },
};

Deno.test("family options: a transformer_block with them parses, lists its weights and round-trips", () => {
  const net = {
    layers: [
      { type: "embedding", vocab_size: 20, embedding_dim: 16, scale: 2 },
      BLOCK,
      { ...BLOCK, norm_placement: "post", qk_norm: "full", moe: null },
      { type: "dense", output_size: 20, bias: false, scale: 0.25 },
    ],
  };
  const parsed = parseNetwork(reg, net);
  const json = parsed.layers.map((l) => l.plugin.toJSON(l.cfg));
  assertEquals(json[0].scale, 2);
  assertEquals(json[1].moe, {
    num_experts: 4,
    top_k: 2,
    top_k_normalize: true,
    intermediate_size: 12,
  });
  assertEquals(json[2].norm_placement, "post");
  assertEquals(json[3].scale, 0.25);
  const again = parseNetwork(reg, { layers: json });
  assertEquals(again.layers.map((l) => l.plugin.toJSON(l.cfg)), json);
  const names = [...initNetwork(reg, net, 1).keys()];
  for (
    const n of [
      "layers.1.self_attn.q_norm.weight",
      "layers.1.mlp.gate.weight",
      "layers.1.mlp.branches.3.down_proj.weight",
      "layers.2.post_feedforward_layernorm.weight",
    ]
  ) assertEquals(names.includes(n), true, n);
  assertEquals(names.includes("layers.2.input_layernorm.weight"), false);
});

Deno.test("family options: bad values are TypeErrors naming the field", () => {
  const parse = (extra: Record<string, unknown>) =>
    parseNetwork(reg, { layers: [{ ...BLOCK, ...extra }] });
  assertThrows(
    () => parse({ moe: { num_experts: 2, top_k: 3, intermediate_size: 4 } }),
    TypeError,
    "moe.top_k",
  );
  assertThrows(() => parse({ qk_norm: "both" }), TypeError, "qk_norm");
  assertThrows(
    () => parse({ norm_placement: "middle" }),
    TypeError,
    "norm_placement",
  );
  assertThrows(
    () => parse({ attention_scale: -1 }),
    TypeError,
    "attention_scale",
  );
});

Deno.test("family options: prefill equals token-by-token decoding (MoE, q/k norm, post-norms)", () => {
  const net = {
    layers: [
      { type: "embedding", vocab_size: 20, embedding_dim: 16, scale: 2 },
      BLOCK,
      {
        ...BLOCK,
        norm_placement: "post",
        qk_norm: "full",
        use_rope: false,
        moe: {
          num_experts: 3,
          top_k: 1,
          top_k_normalize: false,
          intermediate_size: 8,
        },
      },
      { type: "dense", output_size: 20, bias: false, scale: 0.25 },
    ],
  };
  const model = buildNetwork(reg, net, initNetwork(reg, net, 7));
  const ids = [3, 1, 4, 1, 5, 9, 2, 6];
  const all = model.forward(
    floatTensor(Float32Array.from(ids), [1, ids.length]),
    model.createState(),
  ).data;
  const state: NetworkState = model.createState();
  const steps: number[] = [];
  for (const id of ids) {
    steps.push(
      ...model.forward(floatTensor(Float32Array.of(id), [1, 1]), state).data,
    );
  }
  assertEquals(Float32Array.from(steps), all);
});
