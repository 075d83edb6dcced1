// Every layer's forward pass against PyTorch / NumPy references computed by
// tests/vectors/gen/layers.py (vectors in tests/vectors/layers.json).

import { assertEquals } from "@std/assert";
import { buildNetwork, checkNetworkTensors } from "../../core/network.ts";
import { floatTensor, type Tensor, tensorFromF32 } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import { assertAllClose } from "../_helpers/close.ts";

interface Arr {
  shape: number[];
  data: number[];
}
interface Case {
  name: string;
  layer: string;
  config: Record<string, unknown>;
  weights: Record<string, Arr>;
  input: Arr;
  output: Arr;
}

const vectors = JSON.parse(
  await Deno.readTextFile(new URL("../vectors/layers.json", import.meta.url)),
) as { cases: Case[] };

const reg = defaultRegistry();

for (const c of vectors.cases) {
  Deno.test(`reference: ${c.name}`, () => {
    const tensors = new Map<string, Tensor>();
    for (const [name, a] of Object.entries(c.weights)) {
      tensors.set(name, tensorFromF32(name, new Float32Array(a.data), a.shape));
    }
    // The weights the reference used are exactly the network's parameters.
    assertEquals(checkNetworkTensors(reg, c.config, tensors), {
      missing: [],
      extra: [],
      wrongShape: [],
    });
    const net = buildNetwork(reg, c.config, tensors);
    const y = net.forward(
      floatTensor(new Float32Array(c.input.data), c.input.shape),
    );
    assertEquals(y.shape, c.output.shape);
    assertAllClose(y.data, c.output.data, c.name);
  });
}

// The layer types these vectors cover (attention layers have their own).
const COVERED = [
  "dense",
  "softmax",
  "layer_norm",
  "rms_norm",
  "embedding",
  "swiglu",
  "sequential",
  "residual",
  "kmeans",
  "parallel",
];

Deno.test("reference: every covered layer type has cases with batch > 1 and two shapes", () => {
  for (const type of COVERED) {
    reg.layer(type); // registered

    const cases = vectors.cases.filter((c) => c.layer === type);
    const shapes = new Set(cases.map((c) => c.input.shape.join("x")));
    assertEquals(shapes.size >= 2, true, `${type}: ${[...shapes]}`);
    assertEquals(
      cases.some((c) => c.input.shape.length >= 2 && c.input.shape[0] > 1),
      true,
      `${type}: no batch > 1`,
    );
  }
});
