import { assertEquals, assertNotEquals, assertThrows } from "@std/assert";
import { multiHeadAttentionLayer } from "../../layers/attention.ts";
import type { LayerState } from "../../core/plugin.ts";
import { createRng } from "../../core/rng.ts";
import { createScope } from "../../core/scope.ts";
import { floatTensor, tensorFromF32 } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import {
  assertClose,
  buildCase,
  caseInput,
  caseTensors,
  ctx,
  type LayerCase,
  VECTORS,
} from "./_attention_vectors.ts";

const RTOL = 1e-5;

/** Runs the case's input through the layer in chunks of the given sizes, one state. */
function runChunks(c: LayerCase, chunks: number[]): Float32Array {
  const layer = buildCase(multiHeadAttentionLayer, c);
  const [B, T, d] = c.input.shape;
  const x = new Float32Array(c.input.data);
  const out = new Float32Array(B * T * d);
  const state: LayerState = {};
  let t0 = 0;
  for (const n of chunks) {
    const part = new Float32Array(B * n * d);
    for (let b = 0; b < B; b++) {
      part.set(
        x.subarray((b * T + t0) * d, (b * T + t0 + n) * d),
        b * n * d,
      );
    }
    const y = layer.forward(floatTensor(part, [B, n, d]), state).data;
    for (let b = 0; b < B; b++) {
      out.set(y.subarray(b * n * d, (b + 1) * n * d), (b * T + t0) * d);
    }
    t0 += n;
  }
  assertEquals(t0, T);
  return out;
}

for (const c of VECTORS.attention) {
  Deno.test(`mha ${c.name}: prefill matches PyTorch`, () => {
    const y = buildCase(multiHeadAttentionLayer, c).forward(caseInput(c));
    assertEquals(y.shape, c.output.shape);
    assertClose(y.data, c.output.data, RTOL, c.name);
  });

  if (c.config.causal === false) continue; // later tokens change earlier outputs
  Deno.test(`mha ${c.name}: T single-token steps equal the prefill`, () => {
    const T = c.input.shape[1];
    const prefill =
      buildCase(multiHeadAttentionLayer, c).forward(caseInput(c)).data;
    const steps = runChunks(c, Array(T).fill(1));
    assertEquals(steps, prefill);
    assertClose(steps, c.output.data, RTOL, c.name);
    const chunked = runChunks(c, [2, T - 2]);
    assertEquals(chunked, prefill);
  });
}

Deno.test("mha: a rank-2 input is one sequence", () => {
  const c = VECTORS.attention[0];
  const [, T, d] = c.input.shape;
  const x = floatTensor(new Float32Array(c.input.data.slice(0, T * d)), [T, d]);
  const y = buildCase(multiHeadAttentionLayer, c).forward(x);
  assertEquals(y.shape, [T, d]);
  assertClose(y.data, c.output.data.slice(0, T * d), RTOL, "rank 2");
});

Deno.test("mha: rewinding state.kv.length replays the same outputs", () => {
  const c = VECTORS.attention[0];
  const layer = buildCase(multiHeadAttentionLayer, c);
  const [B, T, d] = c.input.shape;
  const state: LayerState = {};
  const full = layer.forward(caseInput(c), state).data;
  (state.kv as { length: number }).length = 0;
  const again = layer.forward(caseInput(c), state).data;
  assertEquals(again, full);
  assertEquals((state.kv as { length: number }).length, T);
  assertThrows(
    () => layer.forward(floatTensor(new Float32Array(d), [1, 1, d]), state),
    TypeError,
    `it holds batch ${B}`,
  );
});

Deno.test("mha: the cache grows past its first capacity", () => {
  const c = VECTORS.attention[2]; // llama3 scaling, T = 6
  const layer = buildCase(multiHeadAttentionLayer, c);
  const [B, T, d] = c.input.shape;
  const state: LayerState = {};
  // 70 filler steps grow the cache past 16 positions and the RoPE table past 64.
  const x = new Float32Array(c.input.data);
  for (let i = 0; i < 70; i++) {
    layer.forward(floatTensor(x.slice(0, B * d), [B, 1, d]), state);
  }
  const kv = state.kv as { length: number; capacity: number };
  assertEquals(kv.length, 70);
  assertEquals(kv.capacity >= 70, true);
  kv.length = 0;
  const y = layer.forward(caseInput(c), state);
  assertClose(y.data, c.output.data, RTOL, "after growth");
  assertEquals(kv.length, T);
});

Deno.test("mha: forward refuses a wrong feature size", () => {
  const c = VECTORS.attention[0];
  const layer = buildCase(multiHeadAttentionLayer, c);
  assertThrows(
    () => layer.forward(floatTensor(new Float32Array(2 * 3 * 8), [2, 3, 8])),
    TypeError,
    "input has shape [2, 3, 8], expected [batch, seq, 16]",
  );
});

Deno.test("mha: config errors name the path and field", () => {
  const p = (json: Record<string, unknown>, inputSize?: number) => () =>
    multiHeadAttentionLayer.parse(
      { type: "multi_head_attention", ...json },
      ctx("layers[3].branches[1]", inputSize),
    );
  const at = "layers[3].branches[1]";
  const cases: [Record<string, unknown>, string, number?][] = [
    [{ d_model: 16 }, `${at}.num_heads: required: expected a positive integer`],
    [
      { d_model: 16, num_heads: 0 },
      `${at}.num_heads: expected a positive integer, got 0`,
    ],
    [
      { d_model: 16, num_heads: 4, num_kv_heads: 3 },
      `${at}.num_kv_heads: expected a divisor of num_heads (4), got 3`,
    ],
    [
      { num_heads: 4 },
      `${at}.d_model: required: no previous layer to infer it from`,
    ],
    [
      { d_model: 16, num_heads: 4 },
      `${at}.d_model: expected 32 (the previous layer's output size), got 16`,
      32,
    ],
    [
      { d_model: 18, num_heads: 4 },
      `${at}.head_dim: required: d_model 18 is not a multiple of num_heads 4`,
    ],
    [
      { d_model: 12, num_heads: 4 },
      `${at}.head_dim: expected an even size when use_rope is true, got 3`,
    ],
    [
      { d_model: 16, num_heads: 4, num_kv_head: 2 },
      `${at}.num_kv_head: unknown field for a "multi_head_attention" layer`,
    ],
    [
      { d_model: 16, num_heads: 4, rope_style: "gptj" },
      `${at}.rope_style: expected one of neox, interleaved, got "gptj"`,
    ],
    [
      { d_model: 16, num_heads: 4, causal: "yes" },
      `${at}.causal: expected true or false, got "yes"`,
    ],
    [
      { d_model: 16, num_heads: 4, rope_theta: -1 },
      `${at}.rope_theta: expected a number above 0, got -1`,
    ],
    [
      { d_model: 16, num_heads: 4, rope_scaling: 2 },
      `${at}.rope_scaling: expected null or an object, got 2`,
    ],
    [
      { d_model: 16, num_heads: 4, rope_scaling: { type: "yarn", factor: 4 } },
      `${at}.rope_scaling.rope_type: expected one of default, linear, llama3, got "yarn"`,
    ],
    [
      {
        d_model: 16,
        num_heads: 4,
        rope_scaling: { rope_type: "llama3", factor: 8 },
      },
      `${at}.rope_scaling.low_freq_factor: expected a number above 0, got nothing`,
    ],
    [
      {
        d_model: 16,
        num_heads: 4,
        rope_scaling: {
          rope_type: "llama3",
          factor: 8,
          low_freq_factor: 1,
          high_freq_factor: 4,
          original_max_position_embeddings: 0.5,
        },
      },
      `${at}.rope_scaling.original_max_position_embeddings: expected a positive integer, got 0.5`,
    ],
    [
      {
        d_model: 16,
        num_heads: 4,
        rope_scaling: {
          rope_type: "llama3",
          factor: 8,
          low_freq_factor: 4,
          high_freq_factor: 1,
          original_max_position_embeddings: 8192,
        },
      },
      `${at}.rope_scaling.high_freq_factor: expected a number above low_freq_factor (4), got 1`,
    ],
    [
      { d_model: 16, num_heads: 4, sliding_window: 2.5 },
      `${at}.sliding_window: expected a positive integer, got 2.5`,
    ],
    [
      { d_model: 16, num_heads: 4, q_bias: 1 },
      `${at}.q_bias: expected true or false, got 1`,
    ],
  ];
  for (const [json, msg, inputSize] of cases) {
    assertThrows(p(json, inputSize), TypeError, msg);
  }
});

Deno.test("mha: defaults, inference and toJSON round trip", () => {
  const cfg = multiHeadAttentionLayer.parse(
    {
      type: "mha",
      num_heads: 4,
      bias: true,
      o_bias: false,
      rope_scaling: { type: "linear", factor: 2 },
    },
    ctx("layers[0]", 32),
  );
  assertEquals(cfg, {
    d_model: 32,
    num_heads: 4,
    num_kv_heads: 4,
    head_dim: 8,
    causal: true,
    use_rope: true,
    rope_theta: 10000,
    rope_style: "neox",
    rope_scaling: { rope_type: "linear", factor: 2 },
    sliding_window: null,
    q_bias: true,
    k_bias: true,
    v_bias: true,
    o_bias: false,
    qk_norm: null,
    qk_norm_eps: 1e-6,
    attention_scale: null,
  });
  const json = multiHeadAttentionLayer.toJSON(cfg);
  assertEquals(json.type, "multi_head_attention");
  assertEquals(
    multiHeadAttentionLayer.parse(JSON.parse(JSON.stringify(json)), ctx()),
    cfg,
  );
  assertEquals(multiHeadAttentionLayer.outputSize(cfg), 32);
  assertEquals(
    multiHeadAttentionLayer.parse({
      type: "mha",
      d_model: 8,
      num_heads: 2,
      rope_scaling: { rope_type: "default" },
    }, ctx()).rope_scaling,
    null,
  );
});

Deno.test("mha: params follow the naming convention", () => {
  const cfg = multiHeadAttentionLayer.parse(
    {
      type: "mha",
      d_model: 32,
      num_heads: 4,
      num_kv_heads: 2,
      head_dim: 16,
      q_bias: true,
      k_bias: true,
      v_bias: true,
    },
    ctx(),
  );
  assertEquals(
    multiHeadAttentionLayer.params(cfg).map((p) => [p.name, p.shape]),
    [
      ["q_proj.weight", [64, 32]],
      ["q_proj.bias", [64]],
      ["k_proj.weight", [32, 32]],
      ["k_proj.bias", [32]],
      ["v_proj.weight", [32, 32]],
      ["v_proj.bias", [32]],
      ["o_proj.weight", [32, 64]],
    ],
  );
});

Deno.test("mha: init is deterministic for a seed and fits params", () => {
  const cfg = multiHeadAttentionLayer.parse(
    { type: "mha", d_model: 16, num_heads: 4, num_kv_heads: 2, bias: true },
    ctx(),
  );
  const a = multiHeadAttentionLayer.init!(cfg, createRng(42));
  const b = multiHeadAttentionLayer.init!(cfg, createRng(42));
  const c = multiHeadAttentionLayer.init!(cfg, createRng(43));
  const specs = multiHeadAttentionLayer.params(cfg);
  assertEquals([...a.keys()], specs.map((s) => s.name));
  for (const s of specs) {
    const v = a.get(s.name)!;
    assertEquals(v.length, s.shape.reduce((x, y) => x * y, 1));
    assertEquals(
      new Uint8Array(v.buffer),
      new Uint8Array(b.get(s.name)!.buffer),
    );
    assertNotEquals(v, c.get(s.name));
    const bound = 1 / Math.sqrt(16);
    assertEquals(v.every((x) => Math.abs(x) <= bound), true);
  }
  // The initialized weights build and run.
  const tensors = new Map(
    specs.map((s) => [s.name, tensorFromF32(s.name, a.get(s.name)!, s.shape)]),
  );
  const y = multiHeadAttentionLayer.build(cfg, createScope(tensors)).forward(
    floatTensor(new Float32Array(3 * 16).fill(0.25), [3, 16]),
  );
  assertEquals(y.data.every(Number.isFinite), true);
});

Deno.test("mha: build names missing and misshapen weights by full path", () => {
  const c = VECTORS.attention[3]; // all biases
  const cfg = multiHeadAttentionLayer.parse(c.config, ctx());
  const tensors = caseTensors(c, "layers.2.");
  tensors.delete("layers.2.o_proj.bias");
  assertThrows(
    () =>
      multiHeadAttentionLayer.build(cfg, createScope(tensors).at("layers.2")),
    TypeError,
    'Missing weight "layers.2.o_proj.bias"',
  );
  tensors.set(
    "layers.2.o_proj.bias",
    tensorFromF32("layers.2.o_proj.bias", new Float32Array(8), [8]),
  );
  assertThrows(
    () =>
      multiHeadAttentionLayer.build(cfg, createScope(tensors).at("layers.2")),
    TypeError,
    'Weight "layers.2.o_proj.bias" has shape [8], expected [16]',
  );
});

Deno.test("mha: registered in the default registry with its alias", () => {
  const reg = defaultRegistry();
  assertEquals(reg.layer("mha"), multiHeadAttentionLayer);
  assertEquals(reg.layer("multi_head_attention"), multiHeadAttentionLayer);
});
