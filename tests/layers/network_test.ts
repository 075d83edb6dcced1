import { assertEquals, assertThrows } from "@std/assert";
import {
  buildNetwork,
  checkNetworkTensors,
  initNetwork,
  parseNetwork,
} from "../../core/network.ts";
import type { LayerPlugin } from "../../core/plugin.ts";
import { floatTensor, type Tensor, tensorFromF32 } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import { createRegistry } from "../../registry.ts";
import { LAYER_PLUGINS } from "../../layers/mod.ts";

const reg = defaultRegistry();

function weights(entries: [string, number[], number[]][]): Map<string, Tensor> {
  return new Map(
    entries.map(([n, v, s]) => [n, tensorFromF32(n, new Float32Array(v), s)]),
  );
}

Deno.test("network: two dense layers, hand-computed", () => {
  const cfg = {
    input_size: 2,
    layers: [
      { type: "dense", output_size: 2, activation: "relu" },
      { type: "dense", output_size: 1, bias: false },
    ],
  };
  const w = weights([
    ["layers.0.weight", [1, 2, -1, 1], [2, 2]],
    ["layers.0.bias", [0.5, -10], [2]],
    ["layers.1.weight", [2, 3], [1, 2]],
  ]);
  const net = buildNetwork(reg, cfg, w);
  // row [1, 1]: h = relu([3.5, -10]) = [3.5, 0]; y = 7
  // row [2, -1]: h = relu([0.5, -13]) = [0.5, 0]; y = 1
  const y = net.forward(floatTensor(new Float32Array([1, 1, 2, -1]), [2, 2]));
  assertEquals(y.shape, [2, 1]);
  assertEquals([...y.data], [7, 1]);
});

Deno.test("network: sizes are inferred from the previous layer and the first layer", () => {
  const spec = parseNetwork(reg, {
    layers: [
      { type: "dense", input_size: 5, output_size: 7 },
      { type: "dense", output_size: 3 },
    ],
  });
  assertEquals(spec.inputSize, 5);
  assertEquals(spec.outputSize, 3);
  assertEquals(spec.layers[1].inputSize, 7);
  assertEquals(spec.config.input_size, 5);
  assertEquals(
    (spec.config.layers[1] as Record<string, unknown>).input_size,
    7,
  );
  assertEquals(
    spec.config.layers_per_cell,
    2,
  );
  // The normalized config round-trips.
  assertEquals(parseNetwork(reg, spec.config).config, spec.config);
});

Deno.test("network: config errors are TypeErrors naming the path and the field", () => {
  const bad = (layers: unknown[], extra: Record<string, unknown> = {}) => () =>
    parseNetwork(reg, { input_size: 4, layers, ...extra });
  assertThrows(
    bad([{ type: "dense", output_size: 3 }, { type: "dense", output_size: 2 }, {
      type: "dense",
      output_size: -3,
    }]),
    TypeError,
    "layers[2].output_size: expected a positive integer, got -3",
  );
  assertThrows(
    bad([{ type: "dense", input_size: 5, output_size: 3 }]),
    TypeError,
    "layers[0].input_size: expected 4 (the previous layer's output size), got 5",
  );
  assertThrows(
    () => parseNetwork(reg, { layers: [{ type: "dense", output_size: 3 }] }),
    TypeError,
    "layers[0].input_size: required",
  );
  assertThrows(
    bad([{ type: "dense", output_size: 3, activation: "swish" }]),
    TypeError,
    'layers[0].activation: expected one of linear, relu, leaky_relu, sigmoid, tanh, softplus, gelu, gelu_tanh, silu, softmax, got "swish"',
  );
  assertThrows(
    bad([{ type: "dense", output_size: 3, outputsize: 2 }]),
    TypeError,
    'layers[0].outputsize: unknown field for a "dense" layer',
  );
  assertThrows(
    bad([{ type: "dnse", output_size: 3 }]),
    TypeError,
    'layers[0].type: Unknown layer type "dnse"',
  );
  assertThrows(
    bad([{ type: "dense", output_size: 3 }], { grid_rows: 2 }),
    TypeError,
    "layers: expected a multiple of 2 entries (grid_rows 2 × grid_cols 1 × layers_per_cell ?), got 1",
  );
  assertThrows(
    bad([{ type: "dense", output_size: 3 }], { grid_cols: 0 }),
    TypeError,
    "grid_cols: expected a positive integer, got 0",
  );
  assertThrows(
    bad(
      [{ type: "dense", output_size: 3 }, { type: "dense", output_size: 3 }],
      {
        layers_per_cell: 1,
      },
    ),
    TypeError,
    "layers: expected 1 entries (grid_rows 1 × grid_cols 1 × layers_per_cell 1), got 2",
  );
  assertThrows(
    bad(["dense"]),
    TypeError,
    'layers[0]: expected a layer definition object, got "dense"',
  );
});

Deno.test("network: init is deterministic per seed and differs across seeds", () => {
  const cfg = {
    input_size: 6,
    layers: [{ type: "dense", output_size: 4 }, {
      type: "dense",
      output_size: 3,
    }],
  };
  const a = initNetwork(reg, cfg, 11), b = initNetwork(reg, cfg, 11);
  const c = initNetwork(reg, cfg, 12);
  assertEquals([...a.keys()], [
    "layers.0.weight",
    "layers.0.bias",
    "layers.1.weight",
    "layers.1.bias",
  ]);
  for (const [k, t] of a) {
    assertEquals(t.dtype, "F32");
    assertEquals(t.bytes, b.get(k)!.bytes);
  }
  let differ = 0;
  for (const [k, t] of a) {
    if (t.bytes.some((v, i) => v !== c.get(k)!.bytes[i])) differ++;
  }
  assertEquals(differ, 4);
  // U(-1/sqrt(in), 1/sqrt(in)) bounds.
  const w0 = new Float32Array(a.get("layers.0.weight")!.bytes.slice().buffer);
  const bound = 1 / Math.sqrt(6);
  assertEquals(w0.every((v) => Math.abs(v) <= bound), true);
  // Changing layer 1 leaves layer 0's weights as they were.
  const d = initNetwork(reg, {
    input_size: 6,
    layers: [{ type: "dense", output_size: 4 }, {
      type: "dense",
      output_size: 9,
    }],
  }, 11);
  assertEquals(
    d.get("layers.0.weight")!.bytes,
    a.get("layers.0.weight")!.bytes,
  );
});

Deno.test("network: grid executes row, then column, then layer", () => {
  const order: number[] = [];
  const tag: LayerPlugin<{ id: number }> = {
    kind: "layer",
    type: "tag",
    parse: (json) => ({ id: json.id as number }),
    outputSize: (_c, n) => n,
    toJSON: (c) => ({ type: "tag", id: c.id }),
    params: () => [],
    build: (c) => ({
      forward(x) {
        order.push(c.id);
        // y = 10·x + id, so the composition also records the order.
        return floatTensor(x.data.map((v) => v * 10 + c.id), x.shape);
      },
    }),
  };
  const r = createRegistry().use(tag as LayerPlugin<unknown>);
  // 2 rows × 3 cols × 2 layers; id = row·100 + col·10 + layer
  const layers = [];
  for (let row = 0; row < 2; row++) {
    for (let col = 0; col < 3; col++) {
      for (let l = 0; l < 2; l++) {
        layers.push({ type: "tag", id: row * 100 + col * 10 + l });
      }
    }
  }
  const net = buildNetwork(r, {
    grid_rows: 2,
    grid_cols: 3,
    layers_per_cell: 2,
    input_size: 1,
    layers,
  }, new Map());
  net.forward(floatTensor(new Float32Array([0]), [1, 1]));
  assertEquals(order, [0, 1, 10, 11, 20, 21, 100, 101, 110, 111, 120, 121]);
});

Deno.test("network: missing and mis-shaped weights throw at build; checkNetworkTensors reports extras", () => {
  const cfg = { input_size: 3, layers: [{ type: "dense", output_size: 2 }] };
  const w = initNetwork(reg, cfg, 1);
  w.delete("layers.0.bias");
  assertThrows(
    () => buildNetwork(reg, cfg, w),
    TypeError,
    'Missing weight "layers.0.bias"',
  );
  w.set(
    "layers.0.bias",
    tensorFromF32("layers.0.bias", new Float32Array(3), [3]),
  );
  assertThrows(
    () => buildNetwork(reg, cfg, w),
    TypeError,
    'Weight "layers.0.bias" has shape [3], expected [2]',
  );
  w.set(
    "layers.9.weight",
    tensorFromF32("layers.9.weight", new Float32Array(1), [1]),
  );
  assertEquals(checkNetworkTensors(reg, cfg, w), {
    missing: [],
    extra: ["layers.9.weight"],
    wrongShape: [{ name: "layers.0.bias", expected: [2], actual: [3] }],
  });
});

Deno.test("network: a wrong input size names the layer and both sizes", () => {
  const cfg = { input_size: 3, layers: [{ type: "dense", output_size: 2 }] };
  const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 1));
  assertThrows(
    () => net.forward(floatTensor(new Float32Array(8), [2, 4])),
    TypeError,
    "layers[0] (dense): input has 4 features (shape [2, 4]), expected 3",
  );
});

Deno.test("network: createState gives each layer its own state; a foreign state is refused", () => {
  const cfg = {
    input_size: 3,
    layers: [{ type: "dense", output_size: 2 }, { type: "softmax" }],
  };
  const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 1));
  const st = net.createState();
  assertEquals(st.layers.length, 2);
  assertEquals(st.layers[0] === st.layers[1], false);
  const x = floatTensor(new Float32Array(3), [1, 3]);
  assertEquals(net.forward(x, st).data, net.forward(x).data);
  assertThrows(
    () => net.forward(x, { layers: [{}] }),
    TypeError,
    "Network state has 1 layer states, the network has 2 layers; use createState()",
  );
});

Deno.test("network: the default registry lists the built-in layers", () => {
  const types = defaultRegistry().layers().map((l) => l.type);
  for (const p of LAYER_PLUGINS) assertEquals(types.includes(p.type), true);
});
