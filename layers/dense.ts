/**
 * The `dense` layer: `y = activation(x · Wᵀ + b)` with `weight` `[out, in]`
 * and `bias` `[out]`.
 *
 * Config fields: `input_size` (inferred from the previous layer when left
 * out), `output_size`, `bias` (default true), `activation` (default
 * `linear`; one of {@link ACTIVATIONS}), `negative_slope` (leaky_relu only,
 * default 0.01).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { floatTensor } from "@modelhost/modelhost/core";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * import { denseLayer } from "@modelhost/modelhost/layers";
 * const reg = createRegistry().use(denseLayer);
 * const cfg = { input_size: 3, layers: [{ type: "dense", output_size: 2, activation: "tanh" }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 0));
 * const y = net.forward(floatTensor(new Float32Array(6), [2, 3]));
 * assert(y.shape.join() === "2,2");
 * ```
 *
 * @module
 */

import type { LayerPlugin } from "../core/plugin.ts";
import { type FloatTensor, floatTensor } from "../core/tensor.ts";
import {
  type ActivationName,
  ACTIVATIONS,
  applyActivation,
} from "../kernels/activations.ts";
import { linear } from "../kernels/linear.ts";
import { linearInto } from "../kernels/_linear_into.ts";
import { activationOnnx, linearOnnx, scalar } from "./_onnx.ts";
import {
  boolField,
  checkFeatures,
  choiceField,
  fieldError,
  layerFields,
  numberField,
  positiveInt,
  resolveSize,
  rowsOf,
  withLastDim,
} from "./_fields.ts";

export { type ActivationName, ACTIVATIONS };

/** Normalized config of a `dense` layer. */
export interface DenseConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** Input features. */
  inputSize: number;
  /** Output features. */
  outputSize: number;
  /** Whether the layer has a bias. */
  bias: boolean;
  /** The activation applied to `x · Wᵀ + b`. */
  activation: ActivationName;
  /** Slope below zero for `leaky_relu`. */
  negativeSlope: number;
  /** Multiplier of `x·Wᵀ + b` before the activation (Granite's lm_head: 1 / `logits_scaling`). */
  scale: number;
}

const FIELDS = [
  "input_size",
  "output_size",
  "bias",
  "activation",
  "negative_slope",
  "scale",
];

/**
 * The `dense` layer plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { denseLayer } from "@modelhost/modelhost/layers";
 * assert(denseLayer.type === "dense");
 * ```
 */
export const denseLayer: LayerPlugin<DenseConfig> = {
  kind: "layer",
  type: "dense",
  description: "Fully connected layer with an activation: y = act(x·Wᵀ + b)",
  parse(json, ctx) {
    const o = layerFields(json, ctx, "dense", FIELDS);
    const inputSize = resolveSize(o, "input_size", ctx, ctx.inputSize);
    const outputSize = positiveInt(
      o,
      "output_size",
      ctx.path,
      ctx.expectedOutputSize,
    );
    const activation = choiceField(
      o,
      "activation",
      ctx.path,
      ACTIVATIONS,
      "linear",
    );
    if (o.negative_slope !== undefined && activation !== "leaky_relu") {
      throw fieldError(
        ctx.path,
        "negative_slope",
        `only applies to activation "leaky_relu", not "${activation}"`,
      );
    }
    return {
      path: ctx.path,
      inputSize,
      outputSize,
      bias: boolField(o, "bias", ctx.path, true),
      activation,
      negativeSlope: numberField(o, "negative_slope", ctx.path, 0.01),
      scale: numberField(o, "scale", ctx.path, 1),
    };
  },
  inputSize: (cfg) => cfg.inputSize,
  outputSize: (cfg) => cfg.outputSize,
  toJSON: (cfg) => ({
    type: "dense",
    input_size: cfg.inputSize,
    output_size: cfg.outputSize,
    bias: cfg.bias,
    activation: cfg.activation,
    ...(cfg.activation === "leaky_relu"
      ? { negative_slope: cfg.negativeSlope }
      : {}),
    ...(cfg.scale !== 1 ? { scale: cfg.scale } : {}),
  }),
  params: (cfg) => [
    { name: "weight", shape: [cfg.outputSize, cfg.inputSize], init: "uniform" },
    ...(cfg.bias
      ? [{ name: "bias", shape: [cfg.outputSize], init: "uniform" as const }]
      : []),
  ],
  init(cfg, rng) {
    // PyTorch's Linear default: U(−1/√in, 1/√in) for weight and bias.
    const bound = 1 / Math.sqrt(cfg.inputSize);
    const draw = (n: number) => {
      const a = new Float32Array(n);
      for (let i = 0; i < n; i++) a[i] = (2 * rng.next() - 1) * bound;
      return a;
    };
    const out = new Map([["weight", draw(cfg.outputSize * cfg.inputSize)]]);
    if (cfg.bias) out.set("bias", draw(cfg.outputSize));
    return out;
  },
  build(cfg, weights) {
    const w = weights.get("weight", [cfg.outputSize, cfg.inputSize]);
    const b = cfg.bias ? weights.getF32("bias", [cfg.outputSize]) : undefined;
    // the scale and the activation on the product `y` of input `x`
    // (`activated`: the product's threads already applied the ReLU)
    const finish = (x: FloatTensor, y: Float32Array, activated: boolean) => {
      if (cfg.scale !== 1) {
        for (let i = 0; i < y.length; i++) y[i] *= cfg.scale;
      }
      if (!activated) {
        applyActivation(y, cfg.outputSize, cfg.activation, cfg.negativeSlope);
      }
      return floatTensor(y, withLastDim(x, cfg.outputSize));
    };
    return {
      forward(x) {
        checkFeatures(x, cfg.inputSize, cfg.path, "dense");
        return finish(x, linear(x.data, rowsOf(x), w, b), false);
      },
      forwardInto(x, scratch) {
        checkFeatures(x, cfg.inputSize, cfg.path, "dense");
        // the ReLU in the product's threads, where nothing comes between
        const fused = cfg.activation === "relu" && cfg.scale === 1;
        const y = linearInto(x.data, rowsOf(x), w, b, fused, scratch);
        return y ? finish(x, y, fused) : null;
      },
    };
  },
  toOnnx(g, cfg, weights, input) {
    let y = linearOnnx(
      g,
      weights,
      input,
      "weight",
      cfg.bias ? "bias" : undefined,
      [cfg.outputSize, cfg.inputSize],
    );
    if (cfg.scale !== 1) y = g.op("Mul", [y, scalar(g, cfg.scale)]);
    return activationOnnx(g, cfg.activation, y, cfg.negativeSlope);
  },
};

/**
 * Old name of {@link denseLayer}.
 *
 * @deprecated Use {@link denseLayer}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dense, denseLayer } from "@modelhost/modelhost/layers";
 * assert(dense === denseLayer);
 * ```
 */
export const dense: LayerPlugin<DenseConfig> = denseLayer;
