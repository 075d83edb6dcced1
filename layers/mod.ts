/**
 * Networks and the built-in layer plugins. {@link LAYER_PLUGINS} lists every
 * built-in layer (the default registry holds them all); the network API
 * (`parseNetwork`, `initNetwork`, `buildNetwork`, ...) is re-exported from
 * `core/network.ts`.
 *
 * @example
 * ```ts
 * import { buildNetwork, initNetwork, LAYER_PLUGINS } from "./mod.ts";
 * import { createRegistry } from "../registry.ts";
 * import { floatTensor } from "../core/tensor.ts";
 * const reg = createRegistry().use(LAYER_PLUGINS);
 * const cfg = { input_size: 4, layers: [{ type: "dense", output_size: 2, activation: "softmax" }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 42));
 * const y = net.forward(floatTensor(new Float32Array(4).fill(1), [1, 4]));
 * console.assert(Math.abs(y.data[0] + y.data[1] - 1) < 1e-6);
 * ```
 *
 * @module
 */

import type { LayerPlugin } from "../core/plugin.ts";
import { dense } from "./dense.ts";

export * from "../core/network.ts";
export {
  type ActivationName,
  ACTIVATIONS,
  dense,
  type DenseConfig,
} from "./dense.ts";

/**
 * Every built-in layer plugin, in listing order.
 *
 * @example
 * ```ts
 * import { LAYER_PLUGINS } from "./mod.ts";
 * console.assert(LAYER_PLUGINS.some((p) => p.type === "dense"));
 * ```
 */
export const LAYER_PLUGINS: readonly LayerPlugin<unknown>[] = [
  dense,
] as LayerPlugin<unknown>[];
