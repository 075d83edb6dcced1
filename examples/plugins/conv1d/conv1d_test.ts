// Tests of the conv1d plugin. Forward outputs are checked against
// torch.nn.functional.conv1d (testdata/gen_vectors.py → vectors.json,
// float64 references from float32 inputs); the generic layer checks come
// from the package's testing helpers.

import { assertEquals, assertThrows } from "@std/assert";
import {
  buildNetwork,
  createRegistry,
  defaultRegistry,
  floatTensor,
  initNetwork,
  type LayerConfig,
  parseNetwork,
  type Tensor,
  tensorFromF32,
} from "@modelhost/modelhost";
import {
  assertLayerMatchesOnnx,
  assertLayerPlugin,
  type OnnxRunner,
} from "@modelhost/modelhost/testing";
import { exportOnnx } from "@modelhost/modelhost/formats/onnx";
import * as ort from "onnxruntime-node";
import { conv1dLayer } from "./mod.ts";

interface Case {
  name: string;
  config: LayerConfig;
  input_shape: number[];
  input: number[];
  weight_shape: number[];
  weight: number[];
  bias?: number[];
  output_shape: number[];
  output: number[];
}

const VECTORS: { cases: Case[] } = JSON.parse(
  await Deno.readTextFile(new URL("./testdata/vectors.json", import.meta.url)),
);

Deno.test("conv1d: forward matches torch.nn.functional.conv1d", () => {
  const reg = createRegistry().use(conv1dLayer);
  assertEquals(VECTORS.cases.length, 11);
  let worst = 0;
  for (const c of VECTORS.cases) {
    const config = { layers: [c.config] };
    const tensors = new Map<string, Tensor>([[
      "layers.0.weight",
      tensorFromF32(
        "layers.0.weight",
        Float32Array.from(c.weight),
        c.weight_shape,
      ),
    ]]);
    if (c.bias) {
      tensors.set(
        "layers.0.bias",
        tensorFromF32("layers.0.bias", Float32Array.from(c.bias), [
          c.bias.length,
        ]),
      );
    }
    const net = buildNetwork(reg, config, tensors);
    const y = net.forward(
      floatTensor(Float32Array.from(c.input), c.input_shape),
    );
    assertEquals(y.shape, c.output_shape, c.name);
    c.output.forEach((want, i) => {
      const err = Math.abs(y.data[i] - want) / Math.max(1, Math.abs(want));
      worst = Math.max(worst, err);
      if (!(err <= 1e-6)) {
        throw new Error(`${c.name}[${i}]: ${y.data[i]} vs torch ${want}`);
      }
    });
  }
  // Sums run in double precision and round once: within F32 rounding.
  assertEquals(worst < 1.2e-7, true, `worst relative error ${worst}`);
});

Deno.test("conv1d: the shared layer checks pass for every padding mode and groups", () => {
  const cases: [LayerConfig, number[], number[]][] = [
    [{ type: "conv1d", out_channels: 4, kernel_size: 3 }, [2, 7, 3], [2, 5, 4]],
    [{ type: "conv1d", out_channels: 2, kernel_size: 4, padding: "same" }, [
      3,
      6,
      3,
    ], [3, 6, 2]],
    [
      {
        type: "conv1d",
        out_channels: 6,
        kernel_size: 3,
        groups: 3,
        stride: 2,
        padding: 1,
      },
      [1, 9, 3],
      [1, 5, 6],
    ],
    [
      {
        type: "conv1d",
        out_channels: 2,
        kernel_size: 2,
        dilation: 2,
        bias: false,
      },
      [5, 2],
      [3, 2],
    ],
  ];
  for (const [config, inputShape, outputShape] of cases) {
    assertLayerPlugin(conv1dLayer, config, { inputShape, outputShape });
  }
});

Deno.test("conv1d: in_channels is inferred between other layers", () => {
  const reg = defaultRegistry().use(conv1dLayer);
  const config = {
    input_size: 3,
    layers: [
      { type: "dense", output_size: 4, activation: "relu" },
      { type: "conv1d", out_channels: 5, kernel_size: 3, padding: "same" },
      { type: "dense", output_size: 2 },
    ],
  };
  const spec = parseNetwork(reg, config);
  assertEquals(spec.layers[1].inputSize, 4);
  assertEquals(spec.outputSize, 2);
  const net = buildNetwork(reg, config, initNetwork(reg, config, 7));
  assertEquals(
    net.forward(floatTensor(new Float32Array(2 * 8 * 3), [2, 8, 3])).shape,
    [2, 8, 2],
  );
  assertEquals(net.config.layers[1], {
    type: "conv1d",
    in_channels: 4,
    out_channels: 5,
    kernel_size: 3,
    stride: 1,
    padding: "same",
    dilation: 1,
    groups: 1,
    bias: true,
  });
});

Deno.test("conv1d: wrong configs and inputs give errors naming the layer and field", () => {
  const reg = createRegistry().use(conv1dLayer);
  const parse = (layer: Record<string, unknown>) =>
    parseNetwork(reg, {
      input_size: 4,
      layers: [{ type: "conv1d", ...layer }],
    });
  assertThrows(
    () => parse({ kernel_size: 3 }),
    TypeError,
    "layers[0].out_channels: required",
  );
  assertThrows(
    () => parse({ out_channels: 2 }),
    TypeError,
    "layers[0].kernel_size: required",
  );
  assertThrows(
    () => parse({ out_channels: 2, kernel_size: 0 }),
    TypeError,
    "kernel_size: expected a positive integer, got 0",
  );
  assertThrows(
    () => parse({ out_channels: 3, kernel_size: 2, groups: 2 }),
    TypeError,
    "out_channels: 3 is not divisible by groups (2)",
  );
  assertThrows(
    () => parse({ out_channels: 2, kernel_size: 2, padding: -1 }),
    TypeError,
    'padding: expected a non-negative integer, "same" or "valid", got -1',
  );
  assertThrows(
    () =>
      parse({ out_channels: 2, kernel_size: 2, padding: "same", stride: 2 }),
    TypeError,
    '"same" needs stride 1',
  );
  assertThrows(
    () => parse({ out_channels: 2, kernel_size: 2, in_channels: 3 }),
    TypeError,
    "in_channels: 3 does not match the 4 features",
  );
  assertThrows(
    () => parse({ out_channels: 2, kernel_size: 2, bias: "yes" }),
    TypeError,
    'bias: expected true or false, got "yes"',
  );
  assertThrows(
    () => parse({ out_channels: 2, kernel_size: 2, kernel: 3 }),
    TypeError,
    'layers[0].kernel: unknown field for a "conv1d" layer',
  );

  const config = {
    input_size: 2,
    layers: [{ type: "conv1d", out_channels: 1, kernel_size: 3, dilation: 2 }],
  };
  const net = buildNetwork(reg, config, initNetwork(reg, config, 1));
  assertThrows(
    () => net.forward(floatTensor(new Float32Array(12), [2, 2, 3])),
    TypeError,
    "conv1d expects [batch, length, 2] or [length, 2], got [2, 2, 3]",
  );
  assertThrows(
    () => net.forward(floatTensor(new Float32Array(16), [2, 4, 2])),
    RangeError,
    "an input of length 4 is too short for conv1d (kernel_size 3, dilation 2, padding 0+0 need at least 5)",
  );
  const weights = initNetwork(reg, config, 1);
  weights.set(
    "layers.0.weight",
    tensorFromF32("layers.0.weight", new Float32Array(6), [1, 2, 3, 1]),
  );
  assertThrows(
    () => buildNetwork(reg, config, weights),
    TypeError,
    'Weight "layers.0.weight" has shape [1, 2, 3, 1], expected [1, 2, 3]',
  );
});

// ---------------------------------------------------------------------------
// ONNX export, run in ONNX Runtime.

const runOrt: OnnxRunner = async (model, input) => {
  const session = await ort.InferenceSession.create(model);
  try {
    const out = await session.run({
      [input.name]: new ort.Tensor("float32", input.data, input.shape),
    });
    const y = out[session.outputNames[0]];
    return { data: y.data as Float32Array, shape: y.dims };
  } finally {
    await session.release();
  }
};

Deno.test("conv1d: the ONNX export gives the forward pass's outputs in ONNX Runtime", async () => {
  const configs: LayerConfig[] = [
    { type: "conv1d", out_channels: 4, kernel_size: 3 },
    { type: "conv1d", out_channels: 5, kernel_size: 4, stride: 2, padding: 1 },
    { type: "conv1d", out_channels: 2, kernel_size: 4, padding: "same" },
    {
      type: "conv1d",
      out_channels: 6,
      kernel_size: 3,
      groups: 3,
      dilation: 2,
      bias: false,
    },
  ];
  for (const opset of [13, 17, 23]) {
    for (const config of configs) {
      const { maxRelativeError } = await assertLayerMatchesOnnx(
        conv1dLayer,
        config,
        {
          inputShape: [3, 11, 3],
          run: runOrt,
          opset,
        },
      );
      assertEquals(
        maxRelativeError < 1e-5,
        true,
        `${JSON.stringify(config)}: ${maxRelativeError}`,
      );
    }
  }
});

Deno.test("conv1d: ONNX Runtime on the exported torch-vector networks gives torch's outputs", async () => {
  const reg = defaultRegistry().use(conv1dLayer);
  for (const c of VECTORS.cases.filter((c) => c.input_shape.length === 3)) {
    const config = { layers: [c.config] };
    const tensors = new Map<string, Tensor>([[
      "layers.0.weight",
      tensorFromF32(
        "layers.0.weight",
        Float32Array.from(c.weight),
        c.weight_shape,
      ),
    ]]);
    if (c.bias) {
      tensors.set(
        "layers.0.bias",
        tensorFromF32("layers.0.bias", Float32Array.from(c.bias), [
          c.bias.length,
        ]),
      );
    }
    const model = exportOnnx(buildNetwork(reg, config, tensors), {
      sequence: true,
    });
    const y = await runOrt(model, {
      name: "input",
      data: Float32Array.from(c.input),
      shape: c.input_shape,
    });
    assertEquals([...y.shape], c.output_shape, c.name);
    let scale = 0;
    for (const v of c.output) scale = Math.max(scale, Math.abs(v));
    c.output.forEach((want, i) => {
      const err = Math.abs(y.data[i] - want) / scale;
      if (!(err <= 1e-5)) {
        throw new Error(`${c.name}[${i}]: ORT ${y.data[i]} vs torch ${want}`);
      }
    });
  }
});
