/**
 * The `rms_norm` layer: `x / √(mean(x²) + ε) · weight` over the last
 * dimension (Llama's RMSNorm). Parameter `weight` `[d]` (init ones). Fields:
 * `norm_size` (alias `input_size`; inferred), `epsilon` (default 1e-5).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { floatTensor } from "@modelhost/modelhost/core";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * import { rmsNormLayer } from "@modelhost/modelhost/layers";
 * const reg = createRegistry().use(rmsNormLayer);
 * const cfg = { input_size: 2, layers: [{ type: "rms_norm", epsilon: 0 }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 0));
 * const y = net.forward(floatTensor(new Float32Array([1, 1]), [1, 2]));
 * assert(y.data[0] === 1);
 * ```
 *
 * @module
 */

import type { LayerPlugin } from "../core/plugin.ts";
import { floatTensor } from "../core/tensor.ts";
import { rmsNorm } from "../kernels/norms.ts";
import { checkFeatures, rowsOf } from "./_fields.ts";
import { parseNorm } from "./_norm.ts";
import { rmsNormOnnx } from "./_onnx.ts";

/** Normalized config of an `rms_norm` layer. */
export interface RmsNormConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** Features normalized together (the last dimension). */
  size: number;
  /** Added to the mean square under the square root. */
  epsilon: number;
}

/**
 * The `rms_norm` layer plugin (alias `rmsnorm`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { rmsNormLayer } from "@modelhost/modelhost/layers";
 * assert(rmsNormLayer.type === "rms_norm");
 * ```
 */
export const rmsNormLayer: LayerPlugin<RmsNormConfig> = {
  kind: "layer",
  type: "rms_norm",
  aliases: ["rmsnorm"],
  description: "RMS normalization over the last dimension (weight)",
  parse: (json, ctx) => parseNorm(json, ctx, "rms_norm").base,
  inputSize: (cfg) => cfg.size,
  outputSize: (cfg) => cfg.size,
  toJSON: (cfg) => ({
    type: "rms_norm",
    norm_size: cfg.size,
    epsilon: cfg.epsilon,
  }),
  params: (cfg) => [{ name: "weight", shape: [cfg.size], init: "ones" }],
  build(cfg, weights) {
    const w = weights.getF32("weight", [cfg.size]);
    return {
      forward(x) {
        checkFeatures(x, cfg.size, cfg.path, "rms_norm");
        return floatTensor(
          rmsNorm(x.data, rowsOf(x), cfg.size, w, cfg.epsilon),
          x.shape.slice(),
        );
      },
    };
  },
  toOnnx(g, cfg, weights, input) {
    const w = g.weight(weights, "weight", { shape: [cfg.size] });
    return rmsNormOnnx(g, input, w, cfg.epsilon);
  },
};
