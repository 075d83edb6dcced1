// decoder_block shares its attention fields with multi_head_attention (one
// name, one meaning): `qk_norm` is "head" or null ("full" is refused with an
// error naming the field), `qk_norm_eps` defaults to the block's `norm_eps`,
// and `attention_scale` is read (the old `attn_scale` is an unknown field).
// Values of the q/k norm and the scale against transformers: Gemma 2/3 in
// tests/models/decoder_families_test.ts.

import { assert, assertEquals, assertThrows } from "@std/assert";
import { createRng } from "../../core/rng.ts";
import { createScope } from "../../core/scope.ts";
import { floatTensor, tensorFromF32 } from "../../core/tensor.ts";
import { decoderBlockLayer } from "../../layers/mod.ts";

const ctx = {
  path: "layers[1]",
  parseChild: () => {
    throw new Error("no children");
  },
};
const base = {
  type: "decoder_block",
  d_model: 16,
  num_heads: 4,
  num_kv_heads: 2,
  intermediate_size: 20,
};

function run(extra: Record<string, unknown>): number[] {
  const cfg = decoderBlockLayer.parse({ ...base, ...extra }, ctx);
  const init = decoderBlockLayer.init!(cfg, createRng(3));
  const tensors = new Map(
    decoderBlockLayer.params(cfg).map((s) => [
      s.name,
      tensorFromF32(s.name, init.get(s.name)!, s.shape),
    ]),
  );
  const x = Float32Array.from({ length: 4 * 16 }, (_, i) => Math.cos(0.3 * i));
  return [
    ...decoderBlockLayer.build(cfg, createScope(tensors)).forward(
      floatTensor(x, [4, 16]),
      {},
    ).data,
  ];
}

Deno.test('decoder_block: qk_norm is multi_head_attention\'s field ("head" | null; "full" refused)', () => {
  const head = decoderBlockLayer.parse({ ...base, qk_norm: "head" }, ctx);
  assertEquals(head.qk_norm, "head");
  assert(
    decoderBlockLayer.params(head).some((p) =>
      p.name === "self_attn.q_norm.weight" && p.shape[0] === 4
    ),
  );
  assertEquals(decoderBlockLayer.parse(base, ctx).qk_norm, null);
  assertThrows(
    () => decoderBlockLayer.parse({ ...base, qk_norm: "full" }, ctx),
    TypeError,
    "qk_norm",
  );
  assertThrows(
    () => decoderBlockLayer.parse({ ...base, qk_norm: true }, ctx),
    TypeError,
    "qk_norm",
  );
});

Deno.test("decoder_block: qk_norm_eps defaults to norm_eps, survives toJSON", () => {
  const d = decoderBlockLayer.parse(
    { ...base, qk_norm: "head", norm_eps: 1e-5 },
    ctx,
  );
  assertEquals(d.qk_norm_eps, 1e-5);
  const e = decoderBlockLayer.parse(
    { ...base, qk_norm: "head", norm_eps: 1e-5, qk_norm_eps: 0.5 },
    ctx,
  );
  assertEquals(e.qk_norm_eps, 0.5);
  const back = decoderBlockLayer.parse(decoderBlockLayer.toJSON!(e), ctx);
  assertEquals(back, e);
  // a large epsilon changes the normalized q/k, so the output
  const a = run({ qk_norm: "head" }),
    b = run({ qk_norm: "head", qk_norm_eps: 10 });
  assert(a.some((v, i) => Math.abs(v - b[i]) > 1e-4));
});

Deno.test("decoder_block: attention_scale is read; attn_scale is an unknown field", () => {
  const cfg = decoderBlockLayer.parse({ ...base, attention_scale: 0.3 }, ctx);
  assertEquals(cfg.attention_scale, 0.3);
  const a = run({}), b = run({ attention_scale: 2 });
  assert(a.some((v, i) => Math.abs(v - b[i]) > 1e-4));
  // the default is head_dim^-½ (head_dim 4)
  const c = run({ attention_scale: 0.5 });
  assertEquals(c, a);
  assertThrows(
    () => decoderBlockLayer.parse({ ...base, attn_scale: 0.3 }, ctx),
    TypeError,
    "attn_scale",
  );
});
