import { assertEquals, assertNotEquals, assertThrows } from "@std/assert";
import { transformerBlockLayer } from "../../layers/transformer_block.ts";
import type { LayerState } from "../../core/plugin.ts";
import { createRng } from "../../core/rng.ts";
import { createScope } from "../../core/scope.ts";
import { floatTensor, tensorFromF32 } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import {
  assertClose,
  caseInput,
  caseTensors,
  ctx,
  type LayerCase,
  VECTORS,
} from "./_attention_vectors.ts";

const RTOL = 1e-5;

/** Builds the case under `layers.4` (a prefix swap away from HF's `model.layers.4`). */
function build(c: LayerCase) {
  const cfg = transformerBlockLayer.parse(c.config, ctx("layers[4]"));
  return transformerBlockLayer.build(
    cfg,
    createScope(caseTensors(c, "layers.4.")).at("layers.4"),
  );
}

for (const c of VECTORS.block) {
  Deno.test(`transformer_block ${c.name}: prefill matches PyTorch`, () => {
    const y = build(c).forward(caseInput(c));
    assertEquals(y.shape, c.output.shape);
    assertClose(y.data, c.output.data, RTOL, c.name);
  });

  Deno.test(`transformer_block ${c.name}: single-token decode with a KV cache equals the prefill`, () => {
    const block = build(c);
    const prefill = block.forward(caseInput(c)).data;
    const [B, T, d] = c.input.shape;
    const x = new Float32Array(c.input.data);
    const out = new Float32Array(B * T * d);
    const state: LayerState = {};
    for (let t = 0; t < T; t++) {
      const step = new Float32Array(B * d);
      for (let b = 0; b < B; b++) {
        step.set(x.subarray((b * T + t) * d, (b * T + t + 1) * d), b * d);
      }
      const y = block.forward(floatTensor(step, [B, 1, d]), state).data;
      for (let b = 0; b < B; b++) {
        out.set(y.subarray(b * d, (b + 1) * d), (b * T + t) * d);
      }
    }
    assertEquals(out, prefill);
    assertClose(out, c.output.data, RTOL, c.name);
    assertEquals((state.kv as { length: number }).length, T);
  });
}

Deno.test("transformer_block: a rank-2 input is one sequence", () => {
  const c = VECTORS.block[1];
  const [, T, d] = c.input.shape;
  const x = floatTensor(new Float32Array(c.input.data.slice(0, T * d)), [T, d]);
  const y = build(c).forward(x);
  assertEquals(y.shape, [T, d]);
  assertClose(y.data, c.output.data.slice(0, T * d), RTOL, "rank 2");
});

Deno.test("transformer_block: params carry the Hugging Face Llama names", () => {
  const cfg = transformerBlockLayer.parse(
    {
      type: "transformer_block",
      d_model: 64,
      num_heads: 8,
      num_kv_heads: 4,
      intermediate_size: 172,
      q_bias: true,
    },
    ctx(),
  );
  assertEquals(
    transformerBlockLayer.params(cfg).map((p) => [p.name, p.shape]),
    [
      ["input_layernorm.weight", [64]],
      ["self_attn.q_proj.weight", [64, 64]],
      ["self_attn.q_proj.bias", [64]],
      ["self_attn.k_proj.weight", [32, 64]],
      ["self_attn.v_proj.weight", [32, 64]],
      ["self_attn.o_proj.weight", [64, 64]],
      ["post_attention_layernorm.weight", [64]],
      ["mlp.gate_proj.weight", [172, 64]],
      ["mlp.up_proj.weight", [172, 64]],
      ["mlp.down_proj.weight", [64, 172]],
    ],
  );
});

Deno.test("transformer_block: defaults and toJSON round trip", () => {
  const cfg = transformerBlockLayer.parse(
    { type: "transformer_block", num_heads: 2, intermediate_size: 32 },
    ctx("layers[1]", 16),
  );
  assertEquals([cfg.d_model, cfg.head_dim, cfg.rms_norm_eps, cfg.mlp_bias], [
    16,
    8,
    1e-6,
    false,
  ]);
  const json = transformerBlockLayer.toJSON(cfg);
  assertEquals(json.type, "transformer_block");
  assertEquals(
    transformerBlockLayer.parse(JSON.parse(JSON.stringify(json)), ctx()),
    cfg,
  );
  assertEquals(transformerBlockLayer.outputSize(cfg), 16);
});

Deno.test("transformer_block: config errors name the path and field", () => {
  const p = (json: Record<string, unknown>) => () =>
    transformerBlockLayer.parse(
      { type: "transformer_block", ...json },
      ctx("layers[7]"),
    );
  assertThrows(
    p({ d_model: 16, num_heads: 2 }),
    TypeError,
    "layers[7].intermediate_size: required: expected a positive integer",
  );
  assertThrows(
    p({ d_model: 16, num_heads: 2, intermediate_size: 32, rms_norm_eps: 0 }),
    TypeError,
    "layers[7].rms_norm_eps: expected a number above 0, got 0",
  );
  assertThrows(
    p({ d_model: 16, num_heads: 2, intermediate_size: 32, hidden_act: "gelu" }),
    TypeError,
    'layers[7].hidden_act: unknown field for a "transformer_block" layer',
  );
  assertThrows(
    p({ d_model: 16, num_heads: 3, intermediate_size: 32 }),
    TypeError,
    "layers[7].head_dim: required: d_model 16 is not a multiple of num_heads 3",
  );
});

Deno.test("transformer_block: init is deterministic, fits params and runs", () => {
  const cfg = transformerBlockLayer.parse(
    {
      type: "transformer_block",
      d_model: 16,
      num_heads: 4,
      num_kv_heads: 2,
      intermediate_size: 24,
      mlp_bias: true,
      bias: true,
    },
    ctx(),
  );
  const specs = transformerBlockLayer.params(cfg);
  const a = transformerBlockLayer.init!(cfg, createRng(7));
  const b = transformerBlockLayer.init!(cfg, createRng(7));
  const c = transformerBlockLayer.init!(cfg, createRng(8));
  assertEquals([...a.keys()], specs.map((s) => s.name));
  for (const s of specs) {
    const v = a.get(s.name)!;
    assertEquals(v.length, s.shape.reduce((x, y) => x * y, 1), s.name);
    assertEquals(
      new Uint8Array(v.buffer),
      new Uint8Array(b.get(s.name)!.buffer),
    );
    if (s.init === "ones") assertEquals(v.every((x) => x === 1), true);
    else assertNotEquals(v, c.get(s.name));
  }
  const tensors = new Map(
    specs.map((s) => [s.name, tensorFromF32(s.name, a.get(s.name)!, s.shape)]),
  );
  const y = transformerBlockLayer.build(cfg, createScope(tensors)).forward(
    floatTensor(new Float32Array(2 * 3 * 16).fill(0.5), [2, 3, 16]),
  );
  assertEquals(y.data.every(Number.isFinite), true);
});

Deno.test("transformer_block: forward and build errors", () => {
  const c = VECTORS.block[0];
  assertThrows(
    () => build(c).forward(floatTensor(new Float32Array(10), [2, 5])),
    TypeError,
    'transformer_block at "layers.4": input has shape [2, 5], expected [batch, seq, 16]',
  );
  const cfg = transformerBlockLayer.parse(c.config, ctx());
  const tensors = caseTensors(c, "layers.4.");
  tensors.delete("layers.4.mlp.up_proj.weight");
  assertThrows(
    () => transformerBlockLayer.build(cfg, createScope(tensors).at("layers.4")),
    TypeError,
    'Missing weight "layers.4.mlp.up_proj.weight"',
  );
});

Deno.test("transformer_block: registered in the default registry", () => {
  assertEquals(
    defaultRegistry().layer("transformer_block"),
    transformerBlockLayer,
  );
});
