import { assertEquals, assertRejects, assertThrows } from "@std/assert";
import { memoryTensorIndex } from "../../core/model.ts";
import { buildNetwork, initNetwork } from "../../core/network.ts";
import { exportOnnx, exportOnnxFiles } from "../../formats/onnx/mod.ts";
import { LAYER_PLUGINS } from "../../layers/mod.ts";
import { denseLayer } from "../../layers/dense.ts";
import { defaultRegistry } from "../../mod.ts";
import { createRegistry } from "../../registry.ts";
import { assertAllClose } from "../_helpers/close.ts";
import { caseNetwork, CASES, inputFor, SEQUENCE_CASES } from "./_onnx_cases.ts";
import { openOrt } from "./_ort.ts";

const OPSETS = [13, 17, 23];
const BATCHES = [1, 4];

for (const c of [...CASES, ...SEQUENCE_CASES]) {
  Deno.test(`onnx: ORT equals our forward: ${c.name}`, async () => {
    const net = caseNetwork(c);
    for (const opset of OPSETS) {
      if (opset < (c.minOpset ?? 13) || opset > (c.maxOpset ?? 23)) continue;
      const bytes = exportOnnx(net, { ...c.options, opsetVersion: opset });
      const session = await openOrt(bytes);
      try {
        for (const batch of BATCHES) {
          const x = inputFor(c, net.spec.inputSize, batch);
          const expected = net.forward(x.ours);
          const got = await session.run(
            x.ids ? "input_ids" : "input",
            x.ids ?? x.ours.data,
            x.shape,
          );
          assertEquals(
            got.shape,
            expected.shape,
            `opset ${opset} batch ${batch} shape`,
          );
          assertAllClose(
            got.data,
            expected.data,
            `${c.name}, opset ${opset}, batch ${batch}`,
            1e-4,
            1e-6,
          );
        }
      } finally {
        await session.close();
      }
    }
  });
}

Deno.test("onnx: the same network and options give the same bytes", () => {
  for (const c of CASES.slice(0, 40)) {
    const a = exportOnnx(caseNetwork(c), { ...c.options, opsetVersion: 17 });
    const b = exportOnnx(caseNetwork(c), { ...c.options, opsetVersion: 17 });
    assertEquals(a, b, c.name);
  }
});

Deno.test("onnx: linear and logistic regression export to MatMul + Add (+ Sigmoid)", () => {
  for (
    const [activation, ops] of [
      ["linear", ["MatMul", "Add"]],
      ["sigmoid", ["MatMul", "Add", "Sigmoid"]],
    ] as const
  ) {
    const net = caseNetwork({
      name: activation,
      config: {
        input_size: 5,
        layers: [{ type: "dense", output_size: 1, activation }],
      },
    });
    for (const opset of [13, 17, 23]) {
      assertEquals(
        exportOnnxFiles(net, { opsetVersion: opset }).ops,
        [...ops],
      );
    }
  }
});

Deno.test("onnx: opset out of range is a RangeError", () => {
  const net = caseNetwork(CASES[0]);
  assertThrows(
    () => exportOnnx(net, { opsetVersion: 12 }),
    RangeError,
    "supported opsets are 13 to 23",
  );
});

Deno.test("onnx: a layer without a lowering is refused by path and type, never skipped", () => {
  const noOnnx = { ...denseLayer, type: "opaque", toOnnx: undefined };
  const reg = createRegistry().use(LAYER_PLUGINS).use(noOnnx);
  const cfg = {
    input_size: 3,
    layers: [
      { type: "dense", output_size: 3 },
      {
        type: "sequential",
        layers: [{ type: "dense", output_size: 2 }, {
          type: "opaque",
          output_size: 2,
        }],
      },
    ],
  };
  const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 1));
  assertThrows(
    () => exportOnnx(net),
    TypeError,
    "Cannot export layers[1].layers[1] (opaque) to ONNX: its layer plugin has no ONNX lowering",
  );
  // A residual with nothing before it has nothing to add.
  const lone = caseNetwork({
    name: "lone residual",
    config: { input_size: 2, layers: [{ type: "residual" }] },
  });
  assertThrows(
    () => exportOnnx(lone),
    TypeError,
    "Cannot export layers[0] (residual) to ONNX: it has no layers and no layer runs before it",
  );
});

Deno.test("onnx: opset picks the operators (LayerNormalization 17+, Gelu 20+, RMSNormalization 23)", () => {
  const net = caseNetwork({
    name: "ops",
    config: {
      input_size: 4,
      layers: [
        { type: "dense", output_size: 4, activation: "gelu" },
        { type: "layer_norm" },
        { type: "rms_norm" },
      ],
    },
  });
  const ops = (opset: number) =>
    exportOnnxFiles(net, { opsetVersion: opset }).ops;
  const has = (opset: number, op: string) => ops(opset).includes(op);
  assertEquals([13, 16, 17, 23].map((o) => has(o, "LayerNormalization")), [
    false,
    false,
    true,
    true,
  ]);
  assertEquals([13, 19, 20, 23].map((o) => has(o, "Gelu")), [
    false,
    false,
    true,
    true,
  ]);
  assertEquals([13, 17, 22, 23].map((o) => has(o, "RMSNormalization")), [
    false,
    false,
    false,
    true,
  ]);
  assertEquals([13, 19].map((o) => has(o, "Erf")), [true, true]);
});

Deno.test("onnx: the format plugin exports a model file's network (registry write)", async () => {
  const reg = defaultRegistry();
  const plugin = reg.formatForPath("model.onnx");
  assertEquals(plugin.name, "onnx");
  assertEquals(plugin.read, undefined);
  const config = {
    input_size: 5,
    layers: [{ type: "dense", output_size: 1, activation: "sigmoid" }],
  };
  const tensors = initNetwork(reg, config, 4);
  const file = {
    models: [{
      id: "m",
      config,
      metadata: {},
      tensors: memoryTensorIndex(tensors.values()),
    }],
  };
  const bytes = await plugin.write!(file, { opsetVersion: 13 }) as Uint8Array;
  assertEquals(
    bytes,
    exportOnnx(buildNetwork(reg, config, tensors), { opsetVersion: 13 }),
  );
  await assertRejects(
    () =>
      plugin.write!({
        models: [{ ...file.models[0], config: undefined }],
      }) as Promise<Uint8Array>,
    TypeError,
    'Cannot export model "m" to ONNX: it carries no network config',
  );
  await assertRejects(
    () =>
      plugin.write!({
        models: [file.models[0], { ...file.models[0], id: "n" }],
      }) as Promise<Uint8Array>,
    TypeError,
    "the file holds 2 models (m, n)",
  );
});
