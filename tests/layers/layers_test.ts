import { assertEquals, assertThrows } from "@std/assert";
import { encodeFromF32 } from "../../core/dtypes.ts";
import {
  buildNetwork,
  initNetwork,
  networkParams,
  parseNetwork,
} from "../../core/network.ts";
import { floatTensor, type Tensor, tensorFromF32 } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import { assertAllClose } from "../_helpers/close.ts";

const reg = defaultRegistry();
const vectors = JSON.parse(
  await Deno.readTextFile(new URL("../vectors/layers.json", import.meta.url)),
) as { cases: { name: string; config: Record<string, unknown> }[] };

Deno.test("every reference config: init is deterministic, covers every parameter, and the config round-trips", () => {
  for (const c of vectors.cases) {
    const spec = parseNetwork(reg, c.config);
    assertEquals(parseNetwork(reg, spec.config).config, spec.config, c.name);
    assertEquals(
      parseNetwork(reg, JSON.parse(JSON.stringify(spec.config))).config,
      spec.config,
      c.name,
    );
    const a = initNetwork(reg, c.config, 123),
      b = initNetwork(reg, spec.config, 123);
    assertEquals(
      [...a.keys()],
      networkParams(spec).map((p) => p.name),
      c.name,
    );
    for (const [k, t] of a) {
      assertEquals(t.shape, b.get(k)!.shape, `${c.name} ${k}`);
      assertEquals(t.bytes, b.get(k)!.bytes, `${c.name} ${k}`);
    }
  }
});

Deno.test("init: norms start at weight 1 and bias 0; embedding rows are N(0, 1)", () => {
  const w = initNetwork(reg, {
    input_size: 4,
    layers: [{ type: "layer_norm" }, { type: "rms_norm" }],
  }, 1);
  const f = (t: Tensor) => [...new Float32Array(t.bytes.slice().buffer)];
  assertEquals(f(w.get("layers.0.weight")!), [1, 1, 1, 1]);
  assertEquals(f(w.get("layers.0.bias")!), [0, 0, 0, 0]);
  assertEquals(f(w.get("layers.1.weight")!), [1, 1, 1, 1]);
  const e = f(
    initNetwork(reg, {
      layers: [{ type: "embedding", vocab_size: 100, embedding_dim: 50 }],
    }, 2)
      .get("layers.0.weight")!,
  );
  const mean = e.reduce((a, b) => a + b) / e.length;
  const sd = Math.sqrt(e.reduce((a, b) => a + (b - mean) ** 2, 0) / e.length);
  assertEquals(
    Math.abs(mean) < 0.05 && Math.abs(sd - 1) < 0.05,
    true,
    `${mean} ${sd}`,
  );
});

Deno.test("embedding: ids out of range or not integers throw RangeError", () => {
  const cfg = {
    layers: [{ type: "embedding", vocab_size: 5, embedding_dim: 2 }],
  };
  const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 0));
  assertThrows(
    () => net.forward(floatTensor(new Float32Array([1, 5]), [1, 2])),
    RangeError,
    "layers[0] (embedding): token id 5 at index 1 is out of range; ids must be integers in [0, 5) (vocab_size 5)",
  );
  assertThrows(
    () => net.forward(floatTensor(new Float32Array([-1]), [1])),
    RangeError,
    "token id -1 at index 0 is out of range",
  );
  assertThrows(
    () => net.forward(floatTensor(new Float32Array([0, 1.5]), [2])),
    RangeError,
    "token id 1.5 at index 1 is not an integer",
  );
  assertThrows(
    () => parseNetwork(reg, { layers: [{ type: "embedding", vocab_size: 5 }] }),
    TypeError,
    "layers[0].embedding_dim: required: expected a positive integer",
  );
});

Deno.test("embedding and dense read F16 / BF16 weights (rows widened on demand)", () => {
  const table = new Float32Array([0.5, -1, 2, 0.25, 3, -4]);
  for (const dtype of ["F16", "BF16"] as const) {
    const t: Tensor = {
      name: "layers.0.weight",
      dtype,
      shape: [3, 2],
      bytes: encodeFromF32(dtype, table),
    };
    const emb = buildNetwork(reg, {
      layers: [{ type: "embedding", vocab_size: 3, embedding_dim: 2 }],
    }, new Map([[t.name, t]]));
    assertEquals([
      ...emb.forward(floatTensor(new Float32Array([2, 0]), [2])).data,
    ], [3, -4, 0.5, -1]);
    const dense = buildNetwork(reg, {
      input_size: 2,
      layers: [{ type: "dense", output_size: 3, bias: false }],
    }, new Map([[t.name, t]]));
    assertEquals([
      ...dense.forward(floatTensor(new Float32Array([1, 2]), [1, 2])).data,
    ], [-1.5, 2.5, -5]);
  }
});

Deno.test("residual: configs and runtime checks", () => {
  assertThrows(
    () =>
      parseNetwork(reg, {
        input_size: 4,
        layers: [{ type: "dense", output_size: 3 }, { type: "residual" }],
      }),
    TypeError,
    "layers[1]: a residual without layers adds the previous layer's input (4 features) to its own input (3 features); the sizes must match",
  );
  assertThrows(
    () =>
      parseNetwork(reg, {
        input_size: 4,
        layers: [{
          type: "residual",
          layers: [{ type: "dense", output_size: 3 }],
        }],
      }),
    TypeError,
    "layers[0].layers[0]: outputs 3 features, expected 4",
  );
  const first = buildNetwork(reg, {
    input_size: 2,
    layers: [{ type: "residual" }],
  }, new Map());
  assertThrows(
    () => first.forward(floatTensor(new Float32Array(2), [1, 2])),
    TypeError,
    "layers[0] (residual): has no layers and no layer ran before it",
  );
  // Inside a sequential, the first sub-layer's "previous layer" is the one before the sequential.
  const w = new Map([
    [
      "layers.0.weight",
      tensorFromF32("layers.0.weight", new Float32Array([2, 0, 0, 2]), [2, 2]),
    ],
  ]);
  const net = buildNetwork(reg, {
    input_size: 2,
    layers: [{ type: "dense", output_size: 2, bias: false }, {
      type: "sequential",
      layers: [{ type: "residual" }],
    }],
  }, w);
  assertEquals([
    ...net.forward(floatTensor(new Float32Array([1, 3]), [1, 2])).data,
  ], [3, 9]);
});

Deno.test("sequential: Loom's 'branches' name for sub-layers is accepted and normalized to 'layers'", () => {
  const spec = parseNetwork(reg, {
    input_size: 3,
    layers: [{
      type: "sequential",
      branches: [{ type: "dense", output_size: 2 }, { type: "softmax" }],
    }],
  });
  assertEquals(spec.config.layers[0], {
    type: "sequential",
    input_size: 3,
    layers: [
      {
        type: "dense",
        input_size: 3,
        output_size: 2,
        bias: true,
        activation: "linear",
      },
      {
        type: "softmax",
        softmax_variant: "standard",
        input_size: 2,
        temperature: 1,
      },
    ],
  });
  assertEquals(networkParams(spec).map((p) => p.name), [
    "layers.0.layers.0.weight",
    "layers.0.layers.0.bias",
  ]);
  assertThrows(
    () =>
      parseNetwork(reg, {
        input_size: 3,
        layers: [{ type: "sequential", layers: [] }],
      }),
    TypeError,
    "layers[0].layers: expected a non-empty array of layer definitions, got []",
  );
});

Deno.test("norms, swiglu, dense: config errors name the path and the field", () => {
  const bad = (layer: Record<string, unknown>) => () =>
    parseNetwork(reg, { input_size: 4, layers: [layer] });
  assertThrows(
    bad({ type: "layer_norm", epsilon: -1 }),
    TypeError,
    "layers[0].epsilon: expected a number ≥ 0, got -1",
  );
  assertThrows(
    bad({ type: "rms_norm", norm_size: 5 }),
    TypeError,
    "layers[0].norm_size: expected 4 (the previous layer's output size), got 5",
  );
  assertThrows(
    bad({ type: "swiglu" }),
    TypeError,
    "layers[0].intermediate_size: required: expected a positive integer",
  );
  assertThrows(
    bad({ type: "dense", output_size: 2, bias: "yes" }),
    TypeError,
    'layers[0].bias: expected true or false, got "yes"',
  );
  assertThrows(
    bad({ type: "dense", output_size: 2, negative_slope: 0.1 }),
    TypeError,
    'layers[0].negative_slope: only applies to activation "leaky_relu", not "linear"',
  );
  assertThrows(
    bad({ type: "dense", output_size: 2.5 }),
    TypeError,
    "layers[0].output_size: expected a positive integer, got 2.5",
  );
});

Deno.test("swiglu and norms keep leading dims; sequence-shaped input works", () => {
  const cfg = {
    input_size: 4,
    layers: [{ type: "rms_norm" }, { type: "swiglu", intermediate_size: 6 }, {
      type: "layer_norm",
    }],
  };
  const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 3));
  const x = floatTensor(
    new Float32Array(2 * 3 * 4).map((_, i) => Math.sin(i)),
    [2, 3, 4],
  );
  const y = net.forward(x);
  assertEquals(y.shape, [2, 3, 4]);
  // Row-wise layers: running rows one at a time gives the same values.
  const one = net.forward(floatTensor(x.data.slice(4, 8), [1, 4]));
  assertAllClose(y.data.slice(4, 8), one.data, "row 1", 0, 0);
});
