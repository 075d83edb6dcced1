import { assert, assertEquals, assertRejects, assertThrows } from "@std/assert";
import { loadAllTensors } from "../../core/model.ts";
import { buildNetwork } from "../../core/network.ts";
import { floatTensor, toFloat32 } from "../../core/tensor.ts";
import { loadBundle, saveBundle, validate } from "../../formats/bundle/mod.ts";
import { convertLoomConfig, readLoomModel } from "../../formats/loom/mod.ts";
import { defaultRegistry } from "../../mod.ts";

// Loom bundles and their outputs, written by tests/vectors/gen/loom.py (NumPy).
interface Case {
  bundle: string;
  input: number[];
  input_shape: number[];
  output: number[];
}
interface Vectors {
  example: Case & { kernel0: number[] };
  activations: Case & { output_scaled_relu: number[] };
  norms: Case;
  experts: Case;
  tokens: Case;
  attention: Case;
  multi_precision: {
    input: number[];
    input_shape: number[];
    dtypes: Record<
      string,
      { bundle: string; kernel: number[]; bias: number[]; output: number[] }
    >;
  };
}
const V: Vectors = JSON.parse(
  await Deno.readTextFile(new URL("../vectors/loom.json", import.meta.url)),
);
const reg = defaultRegistry();

function close(
  actual: Float32Array,
  expected: number[],
  tol: number,
  what: string,
): void {
  assertEquals(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    const e = expected[i];
    assert(
      Math.abs(actual[i] - e) <= tol * Math.max(1, Math.abs(e)),
      `${what}: element ${i} is ${actual[i]}, expected ${e}`,
    );
  }
}

async function run(c: Case, options = {}): Promise<Float32Array> {
  const [m] = (await loadBundle(c.bundle, undefined, { loom: options })).models;
  const net = buildNetwork(reg, m.config, await loadAllTensors(m.tensors));
  return net.forward(floatTensor(new Float32Array(c.input), c.input_shape))
    .data;
}

Deno.test("Loom: its own test config (dense leaky_relu → sigmoid, jsonModelB64) runs as NumPy computed", async () => {
  close(await run(V.example), V.example.output, 1e-5, "example");
  const [m] = (await loadBundle(V.example.bundle)).models;
  assertEquals(m.config?.layers[0], {
    type: "dense",
    input_size: 8,
    output_size: 16,
    activation: "leaky_relu",
    negative_slope: 0.1,
  });
  assertEquals(m.metadata.converted_from, "loom");
  assertEquals(
    (m.metadata.loom as Record<string, unknown>).fmt,
    "jsonModelB64",
  );
  // The [in][out] kernel is stored transposed: weight[o][i] = kernel[i][o].
  const w = toFloat32(await m.tensors.load("layers.0.weight"));
  const k = V.example.kernel0;
  for (let i = 0; i < 8; i++) {
    for (let o = 0; o < 16; o++) {
      assertEquals(w[o * 8 + i], Math.fround(k[i * 16 + o]));
    }
  }
});

Deno.test("Loom: activation names map to exact functions; scaledRelu reproduces its ×1.1 ReLU", async () => {
  close(await run(V.activations), V.activations.output, 1e-5, "exact names");
  close(
    await run(V.activations, { scaledRelu: true }),
    V.activations.output_scaled_relu,
    1e-5,
    "scaled ReLU",
  );
  const cfg = convertLoomConfig(JSON.parse(V.activations.bundle).models[0].cfg);
  assertEquals(cfg.layers.map((l) => l.activation), [
    "relu",
    "tanh",
    "softplus",
    "linear",
    "gelu_tanh",
    "relu",
  ]);
  assertEquals([cfg.grid_rows, cfg.grid_cols, cfg.layers_per_cell], [2, 1, 3]);
});

Deno.test("Loom: layer_norm, residual, swiglu, rms_norm, temperature softmax", async () => {
  close(await run(V.norms), V.norms.output, 1e-5, "norms");
});

Deno.test("Loom: parallel (concat, gate-less filter, grid_scatter, add, avg), sequential, kmeans with attached layer", async () => {
  close(await run(V.experts), V.experts.output, 1e-5, "experts");
  const [m] = (await loadBundle(V.experts.bundle)).models;
  assert(m.tensors.has("layers.0.branches.1.layers.1.weight"));
  assert(m.tensors.has("layers.2.attached.weight"));
  assert(m.tensors.has("layers.2.centroids"));
  // Loom's T = 0.5 becomes our temperature 2·T² = 0.5; the mixture keeps "filter".
  assertEquals(m.config?.layers[2].kmeans_temperature, 0.5);
  assertEquals(m.config?.layers[1].combine_mode, "filter");
});

Deno.test("Loom: embedding and kmeans features mode", async () => {
  close(await run(V.tokens), V.tokens.output, 1e-5, "tokens");
});

const hasAttention = (() => {
  try {
    reg.layer("multi_head_attention");
    return true;
  } catch {
    return false;
  }
})();
if (!hasAttention) {
  console.error(
    "loom_test: skipping the attention case: no multi_head_attention layer is registered on this branch",
  );
}
Deno.test({
  name:
    "Loom: multi_head_attention (causal, half-split RoPE, [in][out] projections)",
  ignore: !hasAttention,
  fn: async () => {
    close(await run(V.attention), V.attention.output, 1e-4, "attention");
  },
});

Deno.test("Loom: multiPrecisionB64 (version 2) decodes every Loom dtype as Loom's decoder does", async () => {
  const mp = V.multi_precision;
  const names = Object.keys(mp.dtypes);
  assertEquals(names.length, 15);
  for (const dt of names) {
    const c = mp.dtypes[dt];
    const file = await loadBundle(c.bundle);
    assertEquals(file.version, 2);
    const [m] = file.models;
    const w = toFloat32(await m.tensors.load("layers.0.weight"));
    const b = toFloat32(await m.tensors.load("layers.0.bias"));
    for (let i = 0; i < 6; i++) {
      for (let o = 0; o < 4; o++) {
        assertEquals(
          w[o * 6 + i],
          Math.fround(c.kernel[i * 4 + o]),
          `${dt} kernel[${i}][${o}]`,
        );
      }
    }
    assertEquals([...b], c.bias.map(Math.fround), `${dt} bias`);
    const net = buildNetwork(reg, m.config, await loadAllTensors(m.tensors));
    const y = net.forward(
      floatTensor(new Float32Array(mp.input), mp.input_shape),
    );
    close(y.data, c.output, 1e-5, `${dt} forward`);
    assertEquals((m.metadata.loom as Record<string, unknown>).dtype, dt);
  }
});

Deno.test("Loom: a converted model saves as a modelhost bundle and reloads to the same outputs", async () => {
  const loom = await loadBundle(V.experts.bundle);
  const text = await saveBundle(loom);
  const again = (await loadBundle(text)).models[0];
  const net = buildNetwork(
    reg,
    again.config,
    await loadAllTensors(again.tensors),
  );
  const y = net.forward(
    floatTensor(new Float32Array(V.experts.input), V.experts.input_shape),
  );
  close(y.data, V.experts.output, 1e-5, "re-saved");
  assertEquals(JSON.parse(text).models[0].metadata.loom.fmt, "jsonModelB64");
});

function loomEntry(
  layers: unknown[],
  weights: unknown[],
  fmt = "jsonModelB64",
) {
  const data = btoa(
    JSON.stringify({ type: "float32", dtype: "", layers: weights }),
  );
  return {
    id: "m",
    cfg: { grid_rows: 1, grid_cols: 1, layers_per_cell: layers.length, layers },
    weights: { fmt, data },
  };
}

Deno.test("Loom: what does not map fails with a TypeError naming the layer", () => {
  assertThrows(
    () =>
      readLoomModel(
        loomEntry([{
          type: "conv2d",
          input_channels: 3,
          filters: 4,
          kernel_size: 3,
        }], [{}]),
        "m",
      ),
    TypeError,
    'Cannot convert Loom model "m": layers[0] is a "conv2d" layer, which modelhost has no layer for',
  );
  assertThrows(
    () =>
      readLoomModel(
        loomEntry([{
          type: "dense",
          activation: "swish",
          input_height: 2,
          output_height: 2,
        }], [{}]),
        "m",
      ),
    TypeError,
    'layers[0].activation: "swish" has no exact equivalent',
  );
  assertThrows(
    () =>
      readLoomModel(
        loomEntry([{ type: "softmax", softmax_variant: "hierarchical" }], [{}]),
        "m",
      ),
    TypeError,
    'layers[0].softmax_variant: "hierarchical" has no modelhost equivalent',
  );
  assertThrows(
    () =>
      readLoomModel(
        loomEntry(
          [{ type: "dense", input_height: 2, output_height: 2 }],
          [{}],
          "protobuf",
        ),
        "m",
      ),
    TypeError,
    'unknown weights.fmt "protobuf"',
  );
});

Deno.test("Loom: wrong array lengths, bad blobs and layer-count mismatches are typed errors", async () => {
  assertThrows(
    () =>
      readLoomModel(
        loomEntry([{ type: "dense", input_height: 2, output_height: 3 }], [{
          kernel: [1, 2, 3],
          biases: [0, 0, 0],
        }]),
        "m",
      ),
    RangeError,
    'Cannot read Loom tensor "layers.0.weight" of model "m": "kernel" needs 6 values, got 3',
  );
  assertThrows(
    () =>
      readLoomModel(
        loomEntry([{ type: "dense", input_height: 2, output_height: 3 }], []),
        "m",
      ),
    TypeError,
    "the weights have 0 layer entries, the config has 1",
  );
  const bad = {
    ...loomEntry([], []),
    weights: { fmt: "jsonModelB64", data: "%%%" },
  };
  assertThrows(
    () => readLoomModel(bad, "m"),
    SyntaxError,
    "weights.data is not valid base64",
  );
  const doc = JSON.parse(V.example.bundle);
  doc.models[0].cfg.layers[1].type = "lstm";
  await assertRejects(
    () => loadBundle(JSON.stringify(doc)),
    TypeError,
    'layers[1] is a "lstm" layer',
  );
});

Deno.test("Loom: converted models pass validate()", async () => {
  for (const c of [V.example, V.norms, V.experts, V.tokens]) {
    const [m] = (await loadBundle(c.bundle)).models;
    const r = await validate(m);
    assertEquals(r.problems, [], m.id);
  }
});
