import { assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import { buildNetwork, parseNetwork } from "../../core/network.ts";
import { floatTensor } from "../../core/tensor.ts";
import {
  entmax15,
  entmaxBisect,
  gumbelSoftmax,
  maskedSoftmax,
  softmax,
  sparsemax,
} from "../../kernels/softmax.ts";
import { defaultRegistry } from "../../mod.ts";

const reg = defaultRegistry();

function sm(layer: Record<string, unknown>, shape: number[]) {
  const cfg = {
    input_size: shape[shape.length - 1],
    layers: [{ type: "softmax", ...layer }],
  };
  return buildNetwork(reg, cfg, new Map());
}

Deno.test("sparsemax: exact on hand cases; rows sum to 1", () => {
  assertEquals([...sparsemax(new Float32Array([1, 0]), 1, 2)], [1, 0]);
  // z = [0.5, 0.2]: tau = (0.7 - 1) / 2 = -0.15 → [0.65, 0.35]
  const p = sparsemax(new Float32Array([0.5, 0.2]), 1, 2);
  assertAlmostEquals(p[0], 0.65, 1e-7);
  assertAlmostEquals(p[1], 0.35, 1e-7);
  // Equal logits → uniform.
  assertEquals([...sparsemax(new Float32Array([3, 3, 3, 3]), 1, 4)], [
    0.25,
    0.25,
    0.25,
    0.25,
  ]);
  const x = new Float32Array(40).map((_, i) => Math.sin(i * 1.7) * 3);
  const y = sparsemax(x, 5, 8);
  for (let r = 0; r < 5; r++) {
    let s = 0;
    for (let i = 0; i < 8; i++) s += y[r * 8 + i];
    assertAlmostEquals(s, 1, 1e-6);
  }
  assertEquals(y.some((v) => v === 0), true);
});

Deno.test("entmax 1.5: exact sort-based equals bisection; sparse; hand case", () => {
  // [3, 0, 0]: z/2 = [1.5, 0, 0], τ = 0.5 → p = [1, 0, 0] exactly.
  assertEquals([...entmax15(new Float32Array([3, 0, 0]), 1, 3)], [1, 0, 0]);
  // Two equal logits share the mass.
  assertEquals([...entmax15(new Float32Array([1, 1]), 1, 2)], [0.5, 0.5]);
  const x = new Float32Array(60).map((_, i) => Math.cos(i * 0.9) * 2.5);
  const a = entmax15(x, 6, 10);
  const b = entmaxBisect(x, 6, 10, 1.5);
  for (let i = 0; i < a.length; i++) assertAlmostEquals(a[i], b[i], 1e-6);
  assertEquals(a.some((v) => v === 0), true);
  // 1.5-entmax is not a blend of softmax and sparsemax.
  const s = softmax(x, 6, 10), m = sparsemax(x, 6, 10);
  const blend = s.map((v, i) => 0.5 * v + 0.5 * m[i]);
  assertEquals(blend.some((v, i) => Math.abs(v - a[i]) > 1e-3), true);
});

Deno.test("masked softmax: masked positions are exactly 0", () => {
  const p = maskedSoftmax(new Float32Array([9, 0, 0, 9, 0, 0]), 2, 3, [
    0,
    1,
    1,
  ]);
  assertEquals([...p], [0, 0.5, 0.5, 0, 0.5, 0.5]);
  assertThrows(
    () => maskedSoftmax(new Float32Array(2), 1, 2, [0, 0]),
    RangeError,
    "the mask keeps nothing",
  );
});

Deno.test("gumbel: seeded; same seed and no state → same output; a state continues the stream", () => {
  const net = sm({ softmax_variant: "gumbel", seed: 5 }, [2, 4]);
  const x = floatTensor(new Float32Array([1, 2, 3, 4, 0, 0, 0, 0]), [2, 4]);
  const a = net.forward(x), b = net.forward(x);
  assertEquals(a.data, b.data);
  const st = net.createState();
  const c = net.forward(x, st), d = net.forward(x, st);
  assertEquals(c.data, a.data);
  assertEquals(c.data.some((v, i) => v !== d.data[i]), true);
  const other = sm({ softmax_variant: "gumbel", seed: 6 }, [2, 4]).forward(
    x,
  );
  assertEquals(other.data.some((v, i) => v !== a.data[i]), true);
  // The kernel with the noise that cancels (u = e^{-1} gives g = 0) is softmax.
  const u = new Array(8).fill(Math.exp(-1));
  const g = gumbelSoftmax(x.data, 2, 4, u);
  const s = softmax(x.data, 2, 4);
  for (let i = 0; i < 8; i++) assertAlmostEquals(g[i], s[i], 1e-7);
});

Deno.test("grid softmax: each row of the view sums to 1", () => {
  const net = sm({ softmax_variant: "grid", softmax_rows: 3 }, [1, 6]);
  const y = net.forward(
    floatTensor(new Float32Array([1, 2, 3, 4, 5, 6]), [1, 6]),
  );
  for (let r = 0; r < 3; r++) {
    assertAlmostEquals(y.data[2 * r] + y.data[2 * r + 1], 1, 1e-7);
  }
  assertEquals(
    (parseNetwork(reg, net.config).config.layers[0] as Record<string, unknown>)
      .softmax_cols,
    2,
  );
});

Deno.test("softmax config errors name the path and the field", () => {
  const bad = (layer: Record<string, unknown>, n = 4) => () =>
    parseNetwork(reg, {
      input_size: n,
      layers: [{ type: "softmax", ...layer }],
    });
  assertThrows(
    bad({ softmax_variant: "hardmax" }),
    TypeError,
    'layers[0].softmax_variant: expected one of standard, temperature, masked, sparsemax, entmax, gumbel, grid, got "hardmax"',
  );
  assertThrows(
    bad({ temperature: 0 }),
    TypeError,
    "layers[0].temperature: expected a number above 0, got 0",
  );
  assertThrows(
    bad({ softmax_variant: "masked" }),
    TypeError,
    'layers[0].mask: required for softmax_variant "masked"',
  );
  assertThrows(
    bad({ softmax_variant: "masked", mask: [true, false] }),
    TypeError,
    "layers[0].mask: expected 4 (the input size; one entry per feature), got 2",
  );
  assertThrows(
    bad({ softmax_variant: "grid", softmax_rows: 3 }),
    TypeError,
    'layers[0].softmax_cols: required for softmax_variant "grid" (input size 4 does not divide evenly)',
  );
  assertThrows(
    bad({ mask: [true] }),
    TypeError,
    'layers[0].mask: only applies to softmax_variant "masked", not "standard"',
  );
  assertThrows(
    bad({ softmax_variant: "entmax", entmax_alpha: 2.5 }),
    TypeError,
    "layers[0].entmax_alpha: expected a number in [1, 2], got 2.5",
  );
  assertThrows(
    bad({ softmax_variant: "sparsemax", softmax_type: "standard" }),
    TypeError,
    "layers[0].softmax_type: give softmax_variant or softmax_type, not both",
  );
});

Deno.test("softmax: Loom's variant name 'sparse' and field 'softmax_type' are accepted", () => {
  const spec = parseNetwork(reg, {
    input_size: 3,
    layers: [{ type: "softmax", softmax_type: "sparse" }],
  });
  assertEquals(
    (spec.config.layers[0] as Record<string, unknown>).softmax_variant,
    "sparsemax",
  );
});
