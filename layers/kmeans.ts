/**
 * The `kmeans` layer: soft clustering against learned centroids
 * (`centroids` `[num_clusters, d]`), optionally after an attached layer
 * (its parameters under `attached.`).
 *
 * With `dist` the distance of a row's features to each centroid and `T` the
 * temperature, the assignment probabilities are `p = softmax(−dist² / T)`.
 * `kmeans_output_mode` picks the output:
 *
 * - `probabilities` (default): `p` (`num_clusters` features);
 * - `features`: `Σ_k p_k · centroid_k` (`d` features);
 * - `reconstruction`: the nearest centroid (`d` features; the first on ties).
 *
 * Fields: `num_clusters` (required), `kmeans_output_mode`,
 * `kmeans_temperature` (default 1), `distance_metric` (`euclidean`
 * default, `cosine` = 1 − cosine similarity, `manhattan`), `attached_layer`
 * (any layer definition, applied before clustering), `cluster_dim`
 * (checked against the feature size when given), `input_size` (inferred),
 * `kmeans_learning_rate` (kept in the config for trainers; unused here).
 *
 * Network init draws centroids from N(0, 1); {@link fitKMeans} fits them to
 * data (seeded k-means++ then Lloyd iterations), and the result goes into the
 * tensor map as `layers.{i}.centroids`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork } from "@modelhost/modelhost/core";
 * import { floatTensor, tensorFromF32 } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * import { fitKMeans } from "@modelhost/modelhost/layers";
 * const data = new Float32Array([0, 0, 0, 1, 10, 10, 10, 11]);
 * const fit = fitKMeans(data, 4, 2, { numClusters: 2, seed: 1 });
 * const c = tensorFromF32("layers.0.centroids", fit.centroids, [2, 2]);
 * const cfg = { input_size: 2, layers: [{ type: "kmeans", num_clusters: 2, kmeans_output_mode: "reconstruction" }] };
 * const net = buildNetwork(defaultRegistry(), cfg, new Map([[c.name, c]]));
 * const y = net.forward(floatTensor(new Float32Array([9, 9]), [1, 2]));
 * assert(y.data[0] === 10 && y.data[1] === 10.5);
 * ```
 *
 * @module
 */

import { initLayer, layerParams, prefixParams } from "../core/network.ts";
import type { LayerPlugin, ParsedLayer } from "../core/plugin.ts";
import { floatTensor } from "../core/tensor.ts";
import {
  DISTANCE_METRICS,
  type DistanceMetric,
  distances,
} from "../kernels/kmeans.ts";
import { childState } from "./_chain.ts";
import { ints, reduce, scalar } from "./_onnx.ts";
import {
  checkFeatures,
  choiceField,
  fieldError,
  layerFields,
  numberField,
  optPositiveInt,
  positiveInt,
  rowsOf,
  withLastDim,
} from "./_fields.ts";

export {
  DISTANCE_METRICS,
  type DistanceMetric,
  fitKMeans,
  type FitOptions,
  type FitResult,
  kmeansPlusPlus,
} from "../kernels/kmeans.ts";

/**
 * What a kmeans layer outputs.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { KMEANS_OUTPUT_MODES } from "@modelhost/modelhost/layers";
 * assert(KMEANS_OUTPUT_MODES.includes("probabilities"));
 * ```
 */
export const KMEANS_OUTPUT_MODES = [
  "probabilities",
  "features",
  "reconstruction",
] as const;

/** One of {@link KMEANS_OUTPUT_MODES}. */
export type KMeansOutputMode = typeof KMEANS_OUTPUT_MODES[number];

/** Normalized config of a `kmeans` layer. */
export interface KMeansConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** Input features (before the attached layer). */
  inputSize: number;
  /** Features clustered (after the attached layer): the centroid width. */
  featureSize: number;
  /** Number of centroids. */
  numClusters: number;
  /** What the layer outputs. */
  outputMode: KMeansOutputMode;
  /** Divides −dist² before the softmax. */
  temperature: number;
  /** How distance is measured. */
  metric: DistanceMetric;
  /** The layer applied before clustering, when there is one. */
  attached?: ParsedLayer;
  /** Kept for trainers (`kmeans_learning_rate`); unused by the forward pass. */
  learningRate?: number;
}

/**
 * The `kmeans` layer plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { kmeansLayer } from "@modelhost/modelhost/layers";
 * assert(kmeansLayer.type === "kmeans");
 * ```
 */
export const kmeansLayer: LayerPlugin<KMeansConfig> = {
  kind: "layer",
  type: "kmeans",
  description:
    "Soft clustering against learned centroids (probabilities, features or reconstruction)",
  parse(json, ctx) {
    const o = layerFields(json, ctx, "kmeans", [
      "num_clusters",
      "kmeans_output_mode",
      "kmeans_temperature",
      "distance_metric",
      "attached_layer",
      "cluster_dim",
      "input_size",
      "kmeans_learning_rate",
    ]);
    const given = optPositiveInt(o, "input_size", ctx.path);
    if (
      given !== undefined && ctx.inputSize !== undefined &&
      given !== ctx.inputSize
    ) {
      throw fieldError(
        ctx.path,
        "input_size",
        `expected ${ctx.inputSize} (the previous layer's output size), got ${given}`,
      );
    }
    let inputSize = ctx.inputSize ?? given;
    let attached: ParsedLayer | undefined;
    if (o.attached_layer !== undefined) {
      attached = ctx.parseChild(
        o.attached_layer,
        `${ctx.path}.attached_layer`,
        inputSize,
        { previousInputSize: ctx.previousInputSize },
      );
      inputSize ??= attached.inputSize;
    }
    if (inputSize === undefined) {
      throw fieldError(
        ctx.path,
        "input_size",
        "required: no previous layer or attached layer to infer it from",
      );
    }
    const featureSize = attached ? attached.outputSize : inputSize;
    if (featureSize === undefined) {
      throw fieldError(
        ctx.path,
        "attached_layer",
        "its output size is unknown, so the centroid width is too",
      );
    }
    const clusterDim = optPositiveInt(o, "cluster_dim", ctx.path);
    if (clusterDim !== undefined && clusterDim !== featureSize) {
      throw fieldError(
        ctx.path,
        "cluster_dim",
        `expected ${featureSize} (the ${
          attached ? "attached layer's output" : "input"
        } size), got ${clusterDim}`,
      );
    }
    const lr = o.kmeans_learning_rate === undefined
      ? undefined
      : numberField(o, "kmeans_learning_rate", ctx.path, 0);
    return {
      path: ctx.path,
      inputSize,
      featureSize,
      numClusters: positiveInt(o, "num_clusters", ctx.path),
      outputMode: choiceField(
        o,
        "kmeans_output_mode",
        ctx.path,
        KMEANS_OUTPUT_MODES,
        "probabilities",
      ),
      temperature: numberField(o, "kmeans_temperature", ctx.path, 1, {
        above: 0,
      }),
      metric: choiceField(
        o,
        "distance_metric",
        ctx.path,
        DISTANCE_METRICS,
        "euclidean",
      ),
      attached,
      learningRate: lr,
    };
  },
  inputSize: (cfg) => cfg.inputSize,
  outputSize: (cfg) =>
    cfg.outputMode === "probabilities" ? cfg.numClusters : cfg.featureSize,
  toJSON: (cfg) => ({
    type: "kmeans",
    input_size: cfg.inputSize,
    num_clusters: cfg.numClusters,
    cluster_dim: cfg.featureSize,
    kmeans_output_mode: cfg.outputMode,
    kmeans_temperature: cfg.temperature,
    distance_metric: cfg.metric,
    ...(cfg.learningRate !== undefined
      ? { kmeans_learning_rate: cfg.learningRate }
      : {}),
    ...(cfg.attached
      ? { attached_layer: cfg.attached.plugin.toJSON(cfg.attached.cfg) }
      : {}),
  }),
  params: (cfg) => [
    {
      name: "centroids",
      shape: [cfg.numClusters, cfg.featureSize],
      init: "normal",
    },
    ...(cfg.attached
      ? prefixParams("attached", layerParams(cfg.attached))
      : []),
  ],
  init(cfg, rng) {
    const c = new Float32Array(cfg.numClusters * cfg.featureSize);
    for (let i = 0; i < c.length; i++) c[i] = rng.normal();
    const out = new Map<string, Float32Array>([["centroids", c]]);
    if (cfg.attached) {
      for (const [k, v] of initLayer(cfg.attached, rng)) {
        out.set(`attached.${k}`, v);
      }
    }
    return out;
  },
  build(cfg, weights) {
    const k = cfg.numClusters, d = cfg.featureSize;
    const centroids = weights.getF32("centroids", [k, d]);
    const attached = cfg.attached?.plugin.build(
      cfg.attached.cfg,
      weights.at("attached"),
    );
    return {
      forward(x, state, ctx) {
        checkFeatures(x, cfg.inputSize, cfg.path, "kmeans");
        const feats = attached
          ? attached.forward(x, childState(state, "attached"), ctx)
          : x;
        checkFeatures(feats, d, `${cfg.path}.attached_layer`, "output");
        const rows = rowsOf(feats);
        const dist = distances(feats.data, rows, centroids, k, d, cfg.metric);
        if (cfg.outputMode === "reconstruction") {
          const out = new Float32Array(rows * d);
          for (let r = 0; r < rows; r++) {
            let best = 0;
            for (let j = 1; j < k; j++) {
              if (dist[r * k + j] < dist[r * k + best]) best = j;
            }
            out.set(centroids.subarray(best * d, (best + 1) * d), r * d);
          }
          return floatTensor(out, withLastDim(feats, d));
        }
        // p = softmax(−dist² / T), computed in doubles.
        const p = new Float64Array(rows * k);
        for (let r = 0; r < rows; r++) {
          let max = -Infinity;
          for (let j = 0; j < k; j++) {
            const v = -(dist[r * k + j] ** 2) / cfg.temperature;
            p[r * k + j] = v;
            if (v > max) max = v;
          }
          let sum = 0;
          for (let j = 0; j < k; j++) {
            p[r * k + j] = Math.exp(p[r * k + j] - max);
            sum += p[r * k + j];
          }
          for (let j = 0; j < k; j++) p[r * k + j] /= sum;
        }
        if (cfg.outputMode === "probabilities") {
          return floatTensor(Float32Array.from(p), withLastDim(feats, k));
        }
        const out = new Float32Array(rows * d);
        const acc = new Float64Array(d);
        for (let r = 0; r < rows; r++) {
          acc.fill(0);
          for (let j = 0; j < k; j++) {
            const w = p[r * k + j];
            for (let i = 0; i < d; i++) acc[i] += w * centroids[j * d + i];
          }
          out.set(acc, r * d);
        }
        return floatTensor(out, withLastDim(feats, d));
      },
    };
  },
  toOnnx(g, cfg, weights, input, ctx) {
    const k = cfg.numClusters, d = cfg.featureSize;
    const feats = cfg.attached
      ? g.lower(cfg.attached, weights.at("attached"), input, {
        path: cfg.attached.path ?? `${cfg.path}.attached_layer`,
        previousInput: ctx.previousInput,
      })
      : input;
    const c = g.weight(weights, "centroids", { shape: [k, d] });
    // dist² (Euclidean) or dist (the others), shape [..., k]; the Euclidean
    // and Manhattan ones from the differences, without the |x|² − 2x·c + |c|²
    // shortcut, so nothing cancels.
    let dist: string, squared: boolean;
    if (cfg.metric === "cosine") {
      const dot = g.op("MatMul", [
        feats,
        g.weight(weights, "centroids", { shape: [k, d], transpose: true }),
      ]);
      const nx = reduce(
        g,
        "ReduceSum",
        g.op("Mul", [feats, feats]),
        [-1],
        true,
      );
      const nc = reduce(g, "ReduceSum", g.op("Mul", [c, c]), [-1], false);
      const denom = g.op("Sqrt", [g.op("Mul", [nx, nc])]);
      const one = scalar(g, 1);
      dist = g.op("Where", [
        g.op("Equal", [denom, scalar(g, 0)]),
        one,
        g.op("Sub", [one, g.op("Div", [dot, denom])]),
      ]);
      squared = false;
    } else {
      const diff = g.op("Sub", [g.op("Unsqueeze", [feats, ints(g, [-2])]), c]);
      dist = cfg.metric === "euclidean"
        ? reduce(g, "ReduceSum", g.op("Mul", [diff, diff]), [-1], false)
        : reduce(g, "ReduceSum", g.op("Abs", [diff]), [-1], false);
      squared = cfg.metric === "euclidean";
    }
    if (cfg.outputMode === "reconstruction") {
      const best = g.op("ArgMin", [dist], {
        axis: -1,
        keepdims: 0,
        select_last_index: 0,
      });
      return g.op("Gather", [c, best], { axis: 0 });
    }
    const sq = squared ? dist : g.op("Mul", [dist, dist]);
    const logits = g.op("Div", [g.op("Neg", [sq]), scalar(g, cfg.temperature)]);
    const p = g.op("Softmax", [logits], { axis: -1 });
    return cfg.outputMode === "probabilities" ? p : g.op("MatMul", [p, c]);
  },
};

/**
 * Old name of {@link kmeansLayer}.
 *
 * @deprecated Use {@link kmeansLayer}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { kmeans, kmeansLayer } from "@modelhost/modelhost/layers";
 * assert(kmeans === kmeansLayer);
 * ```
 */
export const kmeans: LayerPlugin<KMeansConfig> = kmeansLayer;
