/**
 * Forward-vs-ONNX check any layer plugin with a `toOnnx` lowering can run:
 * export a one-layer network, run it in an ONNX runtime the caller brings,
 * compare with the layer's own forward pass.
 *
 * @module
 */

import { assertEquals, AssertionError } from "@std/assert";
import type { LayerConfig } from "../core/model.ts";
import { buildNetwork, initNetwork } from "../core/network.ts";
import type { LayerPlugin } from "../core/plugin.ts";
import { type FloatTensor, floatTensor } from "../core/tensor.ts";
import { exportOnnx } from "../formats/onnx/mod.ts";
import { createRegistry, type Registry } from "../registry.ts";
import { cosineInput } from "./_layer.ts";

/**
 * Runs an ONNX model on one float input and returns its first output. Tests
 * pass one built on their runtime (`onnxruntime-node`, `onnxruntime-web`),
 * so these helpers do not depend on any.
 */
export type OnnxRunner = (
  model: Uint8Array,
  input: { name: string; data: Float32Array; shape: number[] },
) => Promise<{ data: ArrayLike<number>; shape: readonly number[] }>;

/** Options of {@link assertLayerMatchesOnnx}. */
export interface OnnxCheckOptions {
  /**
   * Input shape, feature dimension last: `[batch, features]`, or
   * `[batch, sequence, features]` (exported with `sequence: true`).
   */
  inputShape: number[];
  /** Runs the exported model. */
  run: OnnxRunner;
  /** The registry to parse with. @default {createRegistry().use(plugin)} */
  registry?: Registry;
  /** ONNX opset to export. @default {17} */
  opset?: number;
  /** Seed of the initial weights. @default {0} */
  seed?: number;
  /** Input values. @default {0.1 + 2 * cos(i)} */
  input?: Float32Array;
  /**
   * Largest allowed `|onnx − ours|`, as a fraction of the largest `|ours|`
   * (a relative error on the output's scale).
   * @default {1e-4}
   */
  tolerance?: number;
}

/** What {@link assertLayerMatchesOnnx} compared. */
export interface OnnxCheck {
  /** The exported model's bytes. */
  model: Uint8Array;
  /** The layer's own forward output. */
  expected: FloatTensor;
  /** The ONNX runtime's output. */
  actual: FloatTensor;
  /** Largest `|actual − expected|` over the largest `|expected|`. */
  maxRelativeError: number;
}

/**
 * Exports a one-layer network around `config` to ONNX, runs it with the
 * caller's runtime and asserts that the output has the forward pass's
 * shape and values (within `tolerance`, relative to the output's scale).
 *
 * @param plugin The layer plugin; needs `toOnnx`.
 * @param config One layer definition.
 * @param options Input shape, runtime, opset and tolerance.
 * @returns Both outputs and the error.
 * @throws {AssertionError} When the plugin has no lowering, the shapes
 * differ or an element is off by more than allowed.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { assertLayerMatchesOnnx, type OnnxRunner } from "@modelhost/modelhost/testing";
 * import { denseLayer } from "@modelhost/modelhost/layers";
 * import * as ort from "onnxruntime-node";
 *
 * const run: OnnxRunner = async (model, input) => {
 *   const session = await ort.InferenceSession.create(model);
 *   const out = await session.run({
 *     [input.name]: new ort.Tensor("float32", input.data, input.shape),
 *   });
 *   const y = out[session.outputNames[0]];
 *   await session.release();
 *   return { data: y.data as Float32Array, shape: y.dims };
 * };
 * const check = await assertLayerMatchesOnnx(
 *   denseLayer,
 *   { type: "dense", output_size: 3, activation: "gelu" },
 *   { inputShape: [2, 4], run },
 * );
 * assert(check.maxRelativeError < 1e-4);
 * ```
 */
export async function assertLayerMatchesOnnx(
  plugin: LayerPlugin<unknown>,
  config: LayerConfig,
  options: OnnxCheckOptions,
): Promise<OnnxCheck> {
  if (!plugin.toOnnx) {
    throw new AssertionError(`layer "${plugin.type}" has no toOnnx lowering`);
  }
  const rank = options.inputShape.length;
  if (rank !== 2 && rank !== 3) {
    throw new AssertionError(
      `inputShape must be [batch, features] or [batch, sequence, features], got [${
        options.inputShape.join(", ")
      }]`,
    );
  }
  const reg = options.registry ?? createRegistry().use(plugin);
  const netConfig = {
    input_size: options.inputShape[rank - 1],
    layers: [config],
  };
  const net = buildNetwork(
    reg,
    netConfig,
    initNetwork(reg, netConfig, options.seed ?? 0),
  );
  const input = options.input
    ? floatTensor(options.input, options.inputShape)
    : cosineInput(options.inputShape);
  const expected = net.forward(input);
  const model = exportOnnx(net, {
    opsetVersion: options.opset ?? 17,
    sequence: rank === 3,
  });
  const out = await options.run(model, {
    name: "input",
    data: input.data.slice(),
    shape: [...options.inputShape],
  });
  const actual = floatTensor(Float32Array.from(out.data), [...out.shape]);
  assertEquals(
    actual.shape,
    expected.shape,
    `layer "${plugin.type}": ONNX output shape vs forward`,
  );
  let scale = 0;
  for (const v of expected.data) scale = Math.max(scale, Math.abs(v));
  scale = scale || 1;
  let worst = 0, at = -1;
  for (let i = 0; i < expected.data.length; i++) {
    const e = Math.abs(actual.data[i] - expected.data[i]) / scale;
    if (Number.isNaN(e) || e > worst) {
      worst = Number.isNaN(e) ? Infinity : e;
      at = i;
    }
  }
  const tolerance = options.tolerance ?? 1e-4;
  if (!(worst <= tolerance)) {
    throw new AssertionError(
      `layer "${plugin.type}" (opset ${options.opset ?? 17}): ONNX gives ${
        actual.data[at]
      } at element ${at}, the forward pass ${expected.data[at]} (error ${
        worst.toExponential(2)
      } of the output scale ${scale}, allowed ${tolerance})`,
    );
  }
  return { model, expected, actual, maxRelativeError: worst };
}
