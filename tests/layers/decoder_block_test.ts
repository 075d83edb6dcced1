// decoder_block and decoder_embedding on their own: a prefill and
// token-by-token decoding through the KV cache give the same outputs bit for
// bit (every variant the families use), continuous batching gives each
// sequence its own outputs, and bad configs and positions are refused with
// errors naming the field. Their values against transformers are checked in
// tests/models/decoder_families_test.ts, their ONNX lowering against ONNX
// Runtime in tests/formats/onnx_test.ts.

import { assertEquals, assertThrows } from "@std/assert";
import { createRng } from "../../core/rng.ts";
import { createScope } from "../../core/scope.ts";
import { floatTensor, tensorFromF32 } from "../../core/tensor.ts";
import { decoderBlockLayer, decoderEmbeddingLayer } from "../../layers/mod.ts";
import { loadTransformer } from "../../io/transformer.ts";
import { join } from "@std/path";
import { REPO_ROOT } from "../_helpers/fixtures.ts";

const ctx = {
  path: "layers[1]",
  parseChild: () => {
    throw new Error("no children");
  },
};

const VARIANTS: Record<string, Record<string, unknown>> = {
  gemma2: {
    head_dim: 6,
    post_norms: true,
    attention_scale: 0.3,
    attn_softcap: 1.5,
    sliding_window: 3,
    activation: "gelu_tanh",
  },
  gemma3: { qk_norm: "head", post_norms: true, activation: "gelu_tanh" },
  phi3: { fused_qkv: true, fused_gate_up: true, rotary_dim: 2 },
  phi2: {
    norm: "layer",
    parallel: true,
    mlp: "plain",
    activation: "gelu_tanh",
    bias: true,
    mlp_bias: true,
    rotary_dim: 2,
  },
  gpt2: {
    norm: "layer",
    mlp: "plain",
    activation: "gelu_tanh",
    fused_qkv: true,
    bias: true,
    rotary_dim: 0,
  },
};

function block(extra: Record<string, unknown>) {
  const cfg = decoderBlockLayer.parse({
    type: "decoder_block",
    d_model: 16,
    num_heads: 4,
    num_kv_heads: 2,
    intermediate_size: 20,
    ...extra,
  }, ctx);
  const init = decoderBlockLayer.init!(cfg, createRng(7));
  const tensors = new Map(
    decoderBlockLayer.params(cfg).map((
      s,
    ) => [s.name, tensorFromF32(s.name, init.get(s.name)!, s.shape)]),
  );
  return decoderBlockLayer.build(cfg, createScope(tensors));
}

function input(rows: number, seed: number): Float32Array {
  return Float32Array.from(
    { length: rows * 16 },
    (_, i) => Math.sin(0.37 * i + seed),
  );
}

for (const [name, extra] of Object.entries(VARIANTS)) {
  Deno.test(`decoder_block (${name}): prefill equals token-by-token decoding`, () => {
    const layer = block(extra);
    const x = input(7, 1);
    const whole = layer.forward(floatTensor(x, [7, 16]), {}).data;
    const state = {};
    for (let t = 0; t < 7; t++) {
      const y = layer.forward(
        floatTensor(x.slice(t * 16, (t + 1) * 16), [1, 16]),
        state,
      ).data;
      assertEquals(
        [...y],
        [...whole.subarray(t * 16, (t + 1) * 16)],
        `row ${t}`,
      );
    }
  });

  Deno.test(`decoder_block (${name}): batched sequences equal each alone`, () => {
    const layer = block(extra);
    const a = input(5, 2), b = input(3, 3);
    const sa = {}, sb = {};
    const ya = layer.forward(floatTensor(a, [5, 16]), sa).data;
    const yb = layer.forward(floatTensor(b, [3, 16]), sb).data;
    const both = new Float32Array(8 * 16);
    both.set(a);
    both.set(b, 5 * 16);
    const y = layer.forward(floatTensor(both, [8, 16]), undefined, {
      sequences: [{ rows: 5, state: {} }, { rows: 3, state: {} }],
    }).data;
    assertEquals([...y.subarray(0, 80)], [...ya]);
    assertEquals([...y.subarray(80)], [...yb]);
  });
}

Deno.test("decoder_block: bad fields are refused by name", () => {
  assertThrows(
    () => block({ rotary_dim: 3 }),
    TypeError,
    "layers[1].rotary_dim",
  );
  assertThrows(() => block({ norm: "batch" }), TypeError, "layers[1].norm");
  assertThrows(
    () => block({ attn_softcap: -1 }),
    TypeError,
    "layers[1].attn_softcap",
  );
  assertThrows(() => block({ flavour: 1 }), TypeError, "flavour");
});

Deno.test("decoder_embedding: positions continue per sequence and stop at the table's end", () => {
  const cfg = decoderEmbeddingLayer.parse({
    type: "decoder_embedding",
    vocab_size: 3,
    embedding_dim: 2,
    max_positions: 3,
    scale: 2,
  }, { ...ctx, path: "layers[0]" });
  const layer = decoderEmbeddingLayer.build(
    cfg,
    createScope(
      new Map([
        [
          "weight",
          tensorFromF32("weight", new Float32Array([0, 0, 1, 1, 2, 2]), [3, 2]),
        ],
        [
          "position.weight",
          tensorFromF32(
            "position.weight",
            new Float32Array([0, 0, 10, 20, 30, 40]),
            [3, 2],
          ),
        ],
      ]),
    ),
  );
  const s1 = {}, s2 = {};
  // one batched call: the first sequence at positions 0-1, the second at 0
  const y = layer.forward(
    floatTensor(new Float32Array([1, 2, 2]), [1, 3]),
    undefined,
    {
      sequences: [{ rows: 2, state: s1 }, { rows: 1, state: s2 }],
    },
  );
  assertEquals([...y.data], [2, 2, 14, 24, 4, 4]);
  assertEquals(
    [...layer.forward(floatTensor(new Float32Array([1]), [1, 1]), s1).data],
    [32, 42],
  );
  assertThrows(
    () => layer.forward(floatTensor(new Float32Array([1]), [1, 1]), s1),
    RangeError,
    "exceed the 3 learned positions",
  );
});

Deno.test("decoder families: forwardBatch equals forward for every family", async () => {
  for (
    const name of [
      "gemma2-gqa-window",
      "gemma3-six-layers-scaled",
      "phi3-gqa",
      "phi-partial",
      "gpt2-small",
      "stablelm-gqa",
      "starcoder2-mha-untied-window",
    ]
  ) {
    const m = await loadTransformer(
      join(REPO_ROOT, "tests/vectors/families", name),
    );
    const pa = [1, 5, 9, 13, 2, 7], pb = [1, 30, 4];
    const a = m.createState(), b = m.createState();
    const la = m.forward(pa, a).slice(), lb = m.forward(pb, b).slice();
    const a2 = m.createState(), b2 = m.createState();
    const [ba, bb] = m.forwardBatch([{ ids: pa, state: a2 }, {
      ids: pb,
      state: b2,
    }]);
    assertEquals([...ba], [...la], name);
    assertEquals([...bb], [...lb], name);
    // and one more step each, batched
    const na = m.forward([3], a).slice(), nb = m.forward([4], b).slice();
    const [ca, cb] = m.forwardBatch([{ ids: [3], state: a2 }, {
      ids: [4],
      state: b2,
    }]);
    assertEquals([...ca], [...na], `${name} step`);
    assertEquals([...cb], [...nb], `${name} step`);
  }
});
