/**
 * The `layer_norm` layer: `(x − mean) / √(var + ε) · weight + bias` over the
 * last dimension. Parameters `weight` `[d]` (init ones) and `bias` `[d]`
 * (init zeros). Fields: `norm_size` (alias `input_size`; inferred),
 * `epsilon` (default 1e-5), `bias` (default true).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { floatTensor } from "@modelhost/modelhost/core";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * import { layerNormLayer } from "@modelhost/modelhost/layers";
 * const reg = createRegistry().use(layerNormLayer);
 * const cfg = { input_size: 2, layers: [{ type: "layer_norm", epsilon: 0 }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 0));
 * const y = net.forward(floatTensor(new Float32Array([1, 3]), [1, 2]));
 * assert(y.data[0] === -1 && y.data[1] === 1);
 * ```
 *
 * @module
 */

import type { LayerPlugin } from "../core/plugin.ts";
import { floatTensor } from "../core/tensor.ts";
import { layerNorm } from "../kernels/norms.ts";
import { boolField, checkFeatures, rowsOf } from "./_fields.ts";
import { parseNorm } from "./_norm.ts";
import { layerNormOnnx } from "./_onnx.ts";

/** Normalized config of a `layer_norm` layer. */
export interface LayerNormConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** Features normalized together (the last dimension). */
  size: number;
  /** Added to the variance under the square root. */
  epsilon: number;
  /** Whether the layer adds a learned `bias`. */
  bias: boolean;
}

/**
 * The `layer_norm` layer plugin (alias `layernorm`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { layerNormLayer } from "@modelhost/modelhost/layers";
 * assert(layerNormLayer.type === "layer_norm");
 * ```
 */
export const layerNormLayer: LayerPlugin<LayerNormConfig> = {
  kind: "layer",
  type: "layer_norm",
  aliases: ["layernorm"],
  description: "Layer normalization over the last dimension (weight, bias)",
  parse(json, ctx) {
    const { base, fields } = parseNorm(json, ctx, "layer_norm", ["bias"]);
    return { ...base, bias: boolField(fields, "bias", ctx.path, true) };
  },
  inputSize: (cfg) => cfg.size,
  outputSize: (cfg) => cfg.size,
  toJSON: (cfg) => ({
    type: "layer_norm",
    norm_size: cfg.size,
    epsilon: cfg.epsilon,
    bias: cfg.bias,
  }),
  params: (cfg) => [
    { name: "weight", shape: [cfg.size], init: "ones" },
    ...(cfg.bias
      ? [{ name: "bias", shape: [cfg.size], init: "zeros" as const }]
      : []),
  ],
  build(cfg, weights) {
    const w = weights.getF32("weight", [cfg.size]);
    const b = cfg.bias ? weights.getF32("bias", [cfg.size]) : undefined;
    return {
      forward(x) {
        checkFeatures(x, cfg.size, cfg.path, "layer_norm");
        return floatTensor(
          layerNorm(x.data, rowsOf(x), cfg.size, w, b, cfg.epsilon),
          x.shape.slice(),
        );
      },
    };
  },
  toOnnx(g, cfg, weights, input) {
    const w = g.weight(weights, "weight", { shape: [cfg.size] });
    const b = cfg.bias
      ? g.weight(weights, "bias", { shape: [cfg.size] })
      : undefined;
    return layerNormOnnx(g, input, w, b, cfg.epsilon);
  },
};
