/**
 * The `sequential` layer: runs its sub-layers one after another, as one
 * layer (a multi-layer expert inside a parallel layer, a block inside a
 * grid cell). Sub-layer j's parameters live under `layers.{j}.`.
 *
 * Fields: `layers` (the sub-layer definitions; Loom's name `branches` is
 * accepted too), `input_size` (inferred).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseNetwork } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const spec = parseNetwork(defaultRegistry(), {
 *   input_size: 4,
 *   layers: [{ type: "sequential", layers: [{ type: "dense", output_size: 8 }, { type: "dense", output_size: 2 }] }],
 * });
 * assert(spec.outputSize === 2);
 * ```
 *
 * @module
 */

import type { LayerPlugin, ParsedLayer } from "../core/plugin.ts";
import {
  buildChain,
  chainInit,
  chainParams,
  childStates,
  lowerChain,
  parseChain,
  runChain,
} from "./_chain.ts";
import { fieldError, layerFields, optPositiveInt } from "./_fields.ts";

/** Normalized config of a `sequential` layer. */
export interface SequentialConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** Input features, when known. */
  inputSize?: number;
  /** The sub-layers, in order. */
  layers: ParsedLayer[];
}

/**
 * The `sequential` layer plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { sequentialLayer } from "@modelhost/modelhost/layers";
 * assert(sequentialLayer.type === "sequential");
 * ```
 */
export const sequentialLayer: LayerPlugin<SequentialConfig> = {
  kind: "layer",
  type: "sequential",
  description: "Sub-layers run one after another, as one layer",
  parse(json, ctx) {
    const o = layerFields(json, ctx, "sequential", [
      "layers",
      "branches",
      "input_size",
    ]);
    if (o.layers !== undefined && o.branches !== undefined) {
      throw fieldError(
        ctx.path,
        "branches",
        "give layers or branches, not both",
      );
    }
    const field = o.layers === undefined && o.branches !== undefined
      ? "branches"
      : "layers";
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
    const layers = parseChain(
      o[field],
      field,
      ctx,
      ctx.inputSize ?? given,
      ctx.expectedOutputSize,
    );
    return {
      path: ctx.path,
      inputSize: ctx.inputSize ?? given ?? layers[0].inputSize,
      layers,
    };
  },
  inputSize: (cfg) => cfg.inputSize,
  outputSize: (cfg) => cfg.layers[cfg.layers.length - 1].outputSize,
  toJSON: (cfg) => ({
    type: "sequential",
    ...(cfg.inputSize !== undefined ? { input_size: cfg.inputSize } : {}),
    layers: cfg.layers.map((l) => l.plugin.toJSON(l.cfg)),
  }),
  params: (cfg) => chainParams("layers", cfg.layers),
  init: (cfg, rng) => chainInit("layers", cfg.layers, rng),
  build(cfg, weights) {
    const layers = buildChain("layers", cfg.layers, weights);
    return {
      forward: (x, state, ctx) =>
        runChain(layers, x, childStates(state, "layers", layers.length), ctx),
    };
  },
  toOnnx: (g, cfg, weights, input, ctx) =>
    lowerChain(g, "layers", "layers", cfg.layers, weights, input, ctx),
};

/**
 * Old name of {@link sequentialLayer}.
 *
 * @deprecated Use {@link sequentialLayer}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { sequential, sequentialLayer } from "@modelhost/modelhost/layers";
 * assert(sequential === sequentialLayer);
 * ```
 */
export const sequential: LayerPlugin<SequentialConfig> = sequentialLayer;
