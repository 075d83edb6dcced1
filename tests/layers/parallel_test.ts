import { assertEquals, assertThrows } from "@std/assert";
import { buildNetwork, initNetwork, parseNetwork } from "../../core/network.ts";
import type { LayerPlugin } from "../../core/plugin.ts";
import { floatTensor, type Tensor, tensorFromF32 } from "../../core/tensor.ts";
import { LAYER_PLUGINS } from "../../layers/mod.ts";
import { defaultRegistry } from "../../mod.ts";
import { createRegistry } from "../../registry.ts";
import { assertAllClose } from "../_helpers/close.ts";

const reg = defaultRegistry();

/** An expert that outputs `value` in every feature and counts its calls and rows. */
function countingRegistry() {
  const calls: { id: number; rows: number }[] = [];
  const expert: LayerPlugin<{ id: number; size: number }> = {
    kind: "layer",
    type: "expert",
    parse: (json, ctx) => ({ id: json.id as number, size: ctx.inputSize! }),
    inputSize: (c) => c.size,
    outputSize: () => 2,
    toJSON: (c) => ({ type: "expert", id: c.id }),
    params: () => [],
    build: (c) => ({
      forward(x) {
        const rows = x.data.length / c.size;
        calls.push({ id: c.id, rows });
        return floatTensor(new Float32Array(rows * 2).fill(c.id), [rows, 2]);
      },
    }),
  };
  const r = createRegistry().use(LAYER_PLUGINS).use(
    expert as LayerPlugin<unknown>,
  );
  return { r, calls };
}

function gateWeights(logits: number[][]): Map<string, Tensor> {
  // Gate: dense 1 → n with weight 0 and the logits as biases, so every row
  // gets the same logits; rows differ through a second input feature.
  const n = logits[0].length;
  const w = new Float32Array(n * 2);
  const b = new Float32Array(n);
  for (let j = 0; j < n; j++) {
    b[j] = logits[0][j];
    w[j * 2 + 1] = logits[1][j] - logits[0][j];
  }
  return new Map([
    ["layers.0.gate.weight", tensorFromF32("layers.0.gate.weight", w, [n, 2])],
    ["layers.0.gate.bias", tensorFromF32("layers.0.gate.bias", b, [n])],
  ]);
}

Deno.test("parallel filter top_k: only the chosen experts run, on only their rows", () => {
  const { r, calls } = countingRegistry();
  const cfg = {
    input_size: 2,
    layers: [{
      type: "parallel",
      combine_mode: "filter",
      top_k: 1,
      filter_gate: { type: "dense" },
      branches: [1, 2, 3, 4].map((id) => ({ type: "expert", id })),
    }],
  };
  // Row [1, 0] prefers expert 3 (index 2); row [1, 1] prefers expert 1 (index 0).
  const net = buildNetwork(r, cfg, gateWeights([[0, 1, 5, 2], [9, 1, 5, 2]]));
  const y = net.forward(
    floatTensor(new Float32Array([1, 0, 1, 1, 1, 0]), [3, 2]),
  );
  // top_k = 1 renormalizes to weight 1: each row is its expert's output.
  assertEquals([...y.data], [3, 3, 1, 1, 3, 3]);
  assertEquals(calls, [{ id: 1, rows: 1 }, { id: 3, rows: 2 }]);

  calls.length = 0;
  const cfg2 = structuredClone(cfg);
  (cfg2.layers[0] as Record<string, unknown>).top_k = 2;
  buildNetwork(r, cfg2, gateWeights([[0, 1, 5, 2], [9, 1, 5, 2]])).forward(
    floatTensor(new Float32Array([1, 0, 1, 0]), [2, 2]),
  );
  assertEquals(calls.map((c) => c.id).sort(), [3, 4]);

  // Without top_k every expert runs on every row.
  calls.length = 0;
  const cfg3 = structuredClone(cfg);
  delete (cfg3.layers[0] as Record<string, unknown>).top_k;
  buildNetwork(r, cfg3, gateWeights([[0, 1, 5, 2], [9, 1, 5, 2]])).forward(
    floatTensor(new Float32Array([1, 0, 1, 1]), [2, 2]),
  );
  assertEquals(calls, [1, 2, 3, 4].map((id) => ({ id, rows: 2 })));
});

Deno.test("parallel filter sparsemax: experts with weight exactly 0 are skipped", () => {
  const { r, calls } = countingRegistry();
  const cfg = {
    input_size: 2,
    layers: [{
      type: "parallel",
      combine_mode: "filter",
      filter_softmax: "sparsemax",
      filter_gate: { type: "dense" },
      branches: [1, 2, 3].map((id) => ({ type: "expert", id })),
    }],
  };
  // sparsemax([0, 0.2, 5]) = [0, 0, 1]
  const y = buildNetwork(r, cfg, gateWeights([[0, 0.2, 5], [0, 0.2, 5]]))
    .forward(
      floatTensor(new Float32Array([1, 0]), [1, 2]),
    );
  assertEquals([...y.data], [3, 3]);
  assertEquals(calls, [{ id: 3, rows: 1 }]);
});

Deno.test("parallel filter: the dense gate's output_size defaults to the number of branches", () => {
  const spec = parseNetwork(reg, {
    input_size: 3,
    layers: [{
      type: "parallel",
      combine_mode: "filter",
      filter_gate: { type: "dense", activation: "relu" },
      branches: [{ type: "dense", output_size: 2 }, {
        type: "dense",
        output_size: 5,
      }, {
        type: "softmax",
      }],
    }],
  });
  const l = spec.config.layers[0] as Record<string, Record<string, unknown>>;
  assertEquals(l.filter_gate.output_size, 3);
  assertEquals(spec.outputSize, 5);
});

Deno.test("parallel: the Loom seed examples parse verbatim from examples/configs and run", async () => {
  for (
    const [file, out] of [["loom_kmeans.json", 8], [
      "loom_parallel_filter.json",
      8,
    ]] as const
  ) {
    const text = await Deno.readTextFile(
      new URL(`../../examples/configs/${file}`, import.meta.url),
    );
    const cfg = JSON.parse(text);
    const spec = parseNetwork(reg, cfg);
    assertEquals(spec.inputSize, 16, file);
    assertEquals(spec.outputSize, out, file);
    const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 1));
    const y = net.forward(
      floatTensor(new Float32Array(5 * 16).fill(0.5), [5, 16]),
    );
    assertEquals(y.shape, [5, out]);
    assertEquals(y.data.every(Number.isFinite), true);
    // The normalized config round-trips.
    assertEquals(parseNetwork(reg, spec.config).config, spec.config);
  }
});

Deno.test("parallel filter: narrower branches are zero-padded to the widest", () => {
  const w = (name: string, v: number[], s: number[]) =>
    [name, tensorFromF32(name, new Float32Array(v), s)] as const;
  const tensors = new Map([
    w("layers.0.branches.0.weight", [1, 0, 0, 1, 1, 1], [3, 2]),
    w("layers.0.branches.1.weight", [2, 0], [1, 2]),
  ]);
  const net = buildNetwork(reg, {
    input_size: 2,
    layers: [{
      type: "parallel",
      combine_mode: "filter",
      branches: [
        { type: "dense", output_size: 3, bias: false },
        { type: "dense", output_size: 1, bias: false },
      ],
    }],
  }, tensors);
  // No gate: weights 1/2 each. x = [1, 2]: b0 = [1, 2, 3], b1 = [2, 0, 0] (padded)
  assertAllClose(
    net.forward(floatTensor(new Float32Array([1, 2]), [1, 2])).data,
    [1.5, 1, 1.5],
    "mix",
  );
});

Deno.test("parallel config errors name the path and the field", () => {
  const bad = (layer: Record<string, unknown>) => () =>
    parseNetwork(reg, {
      input_size: 4,
      layers: [{ type: "dense", output_size: 4 }, {
        type: "parallel",
        ...layer,
      }],
    });
  const two = [{ type: "dense", output_size: 3 }, {
    type: "dense",
    output_size: 2,
  }];
  assertThrows(
    bad({}),
    TypeError,
    "layers[1].branches: expected a non-empty array of layer definitions, got nothing",
  );
  assertThrows(
    bad({ combine_mode: "mul", branches: two }),
    TypeError,
    'layers[1].combine_mode: expected one of concat, add, avg, filter, grid_scatter, got "mul"',
  );
  assertThrows(
    bad({ combine_mode: "add", branches: two }),
    TypeError,
    'layers[1].branches[1]: outputs 2 features; combine_mode "add" needs every branch to output 3 (as branches[0] does)',
  );
  assertThrows(
    bad({
      branches: [{ type: "dense", output_size: 3 }, {
        type: "dense",
        output_size: -1,
      }],
    }),
    TypeError,
    "layers[1].branches[1].output_size: expected a positive integer, got -1",
  );
  assertThrows(
    bad({
      branches: [{
        type: "parallel",
        branches: [{ type: "dense", input_size: 5, output_size: 1 }],
      }],
    }),
    TypeError,
    "layers[1].branches[0].branches[0].input_size: expected 4 (the previous layer's output size), got 5",
  );
  assertThrows(
    bad({ combine_mode: "filter", top_k: 3, branches: two }),
    TypeError,
    "layers[1].top_k: expected at most the number of branches (2), got 3",
  );
  assertThrows(
    bad({ top_k: 1, branches: two }),
    TypeError,
    'layers[1].top_k: only applies to combine_mode "filter", not "concat"',
  );
  assertThrows(
    bad({ combine_mode: "filter", filter_softmax: "hardmax", branches: two }),
    TypeError,
    'layers[1].filter_softmax: expected one of standard, temperature, masked, sparsemax, entmax, gumbel, grid, got "hardmax"',
  );
  assertThrows(
    bad({ combine_mode: "filter", filter_temperature: -1, branches: two }),
    TypeError,
    "layers[1].filter_temperature: expected a number above 0, got -1",
  );
  assertThrows(
    bad({
      combine_mode: "filter",
      filter_gate: { type: "dense", output_size: 3 },
      branches: two,
    }),
    TypeError,
    "layers[1].filter_gate: outputs 3 features, expected 2",
  );
  assertThrows(
    bad({
      combine_mode: "grid_scatter",
      grid_output_rows: 1,
      grid_output_cols: 2,
      grid_positions: [{ branch_index: 0, target_row: 0, target_col: 1 }, {
        branch_index: 1,
        target_row: 0,
        target_col: 1,
      }],
      branches: two,
    }),
    TypeError,
    "layers[1].grid_positions[1]: cell (0, 1, 0) already holds branch 0",
  );
  assertThrows(
    bad({
      combine_mode: "grid_scatter",
      grid_output_rows: 1,
      grid_output_cols: 2,
      grid_positions: [{ branch_index: 0, target_row: 1, target_col: 0 }, {
        branch_index: 1,
        target_row: 0,
        target_col: 1,
      }],
      branches: two,
    }),
    TypeError,
    "layers[1].grid_positions[0].target_row: expected an integer in [0, 1), got 1",
  );
});

Deno.test("parallel: gumbel gate draws from a seeded generator; state continues it", () => {
  const cfg = {
    input_size: 3,
    layers: [{
      type: "parallel",
      combine_mode: "filter",
      filter_softmax: { softmax_variant: "gumbel", seed: 4 },
      filter_gate: { type: "dense" },
      branches: [{ type: "dense", output_size: 2 }, {
        type: "dense",
        output_size: 2,
      }],
    }],
  };
  const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 2));
  const x = floatTensor(new Float32Array([1, 2, 3]), [1, 3]);
  assertEquals(net.forward(x).data, net.forward(x).data);
  const st = net.createState();
  const a = net.forward(x, st), b = net.forward(x, st);
  assertEquals(a.data, net.forward(x).data);
  assertEquals(a.data.some((v, i) => v !== b.data[i]), true);
  const j = parseNetwork(reg, cfg).config.layers[0] as Record<string, unknown>;
  assertEquals(j.filter_softmax, {
    softmax_variant: "gumbel",
    temperature: 1,
    seed: 4,
  });
});
