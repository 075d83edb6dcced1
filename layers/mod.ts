/**
 * Networks and the built-in layer plugins, each exported as `<type>Layer`
 * (`denseLayer`, `swigluLayer`, `rmsNormLayer`, ...; the names without the
 * suffix are deprecated aliases kept for one release). {@link LAYER_PLUGINS}
 * lists every built-in layer (the default registry holds them all); the network API
 * (`parseNetwork`, `initNetwork`, `buildNetwork`, ...) is re-exported from
 * `core/network.ts`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork, initNetwork, LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * import { floatTensor } from "@modelhost/modelhost/core";
 * const reg = createRegistry().use(LAYER_PLUGINS);
 * const cfg = { input_size: 4, layers: [{ type: "dense", output_size: 2, activation: "softmax" }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 42));
 * const y = net.forward(floatTensor(new Float32Array(4).fill(1), [1, 4]));
 * assert(Math.abs(y.data[0] + y.data[1] - 1) < 1e-6);
 * ```
 *
 * @module
 */

import type { LayerPlugin } from "../core/plugin.ts";
import { denseLayer } from "./dense.ts";
import { embeddingLayer } from "./embedding.ts";
import { layerNormLayer } from "./layer_norm.ts";
import { rmsNormLayer } from "./rms_norm.ts";
import { softmaxLayer } from "./softmax.ts";
import { swigluLayer } from "./swiglu.ts";
import { sequentialLayer } from "./sequential.ts";
import { residualLayer } from "./residual.ts";
import { kmeansLayer } from "./kmeans.ts";
import { parallelLayer } from "./parallel.ts";
import { multiHeadAttentionLayer } from "./attention.ts";
import { transformerBlockLayer } from "./transformer_block.ts";
import { decoderBlockLayer } from "./decoder_block.ts";
import { decoderEmbeddingLayer } from "./decoder_embedding.ts";
import { positionEmbeddingLayer } from "./position_embedding.ts";

export * from "../core/network.ts";
export {
  type ActivationName,
  ACTIVATIONS,
  dense,
  type DenseConfig,
  denseLayer,
} from "./dense.ts";
export {
  applySoftmax,
  parseSoftmaxFields,
  SOFTMAX_VARIANTS,
  type SoftmaxConfig,
  softmaxFieldsJSON,
  softmaxLayer,
  type SoftmaxVariant,
} from "./softmax.ts";
export { type LayerNormConfig, layerNormLayer } from "./layer_norm.ts";
export {
  type DecoderActivation,
  type DecoderBlockConfig,
  decoderBlockLayer,
} from "./decoder_block.ts";
export {
  type DecoderEmbeddingConfig,
  decoderEmbeddingLayer,
} from "./decoder_embedding.ts";
export {
  type PositionEmbeddingConfig,
  positionEmbeddingLayer,
} from "./position_embedding.ts";
export { type RmsNormConfig, rmsNormLayer } from "./rms_norm.ts";
export {
  embedding,
  type EmbeddingConfig,
  embeddingLayer,
} from "./embedding.ts";
export {
  swiglu,
  type SwigluActivation,
  type SwigluConfig,
  swigluLayer,
} from "./swiglu.ts";
export {
  sequential,
  type SequentialConfig,
  sequentialLayer,
} from "./sequential.ts";
export { residual, type ResidualConfig, residualLayer } from "./residual.ts";
export {
  DISTANCE_METRICS,
  type DistanceMetric,
  fitKMeans,
  type FitOptions,
  type FitResult,
  kmeans,
  KMEANS_OUTPUT_MODES,
  type KMeansConfig,
  kmeansLayer,
  type KMeansOutputMode,
  kmeansPlusPlus,
} from "./kmeans.ts";
export {
  COMBINE_MODES,
  type CombineMode,
  type GridPosition,
  parallel,
  type ParallelConfig,
  parallelLayer,
} from "./parallel.ts";
export {
  type AttentionConfig,
  type KvCache,
  multiHeadAttention,
  multiHeadAttentionLayer,
  type RopeScaling,
  type RopeStyle,
} from "./attention.ts";
export {
  type BlockMoeConfig,
  transformerBlock,
  type TransformerBlockConfig,
  transformerBlockLayer,
} from "./transformer_block.ts";

/**
 * Every built-in layer plugin, in listing order.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * assert(LAYER_PLUGINS.some((p) => p.type === "dense"));
 * ```
 */
export const LAYER_PLUGINS: readonly LayerPlugin<unknown>[] = [
  denseLayer,
  softmaxLayer,
  layerNormLayer,
  rmsNormLayer,
  embeddingLayer,
  swigluLayer,
  sequentialLayer,
  residualLayer,
  kmeansLayer,
  parallelLayer,
  multiHeadAttentionLayer,
  transformerBlockLayer,
  decoderBlockLayer,
  decoderEmbeddingLayer,
  positionEmbeddingLayer,
] as LayerPlugin<unknown>[];
