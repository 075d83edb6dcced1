/**
 * The `residual` layer: adds a block's input to the block's output.
 *
 * - With `layers` (sub-layer definitions, run in order, parameters under
 *   `layers.{j}.`): `y = x + f(x)`; f must output as many features as it
 *   takes.
 * - Without: the block is the layer just before this one (the seed system's
 *   form): `y = x + (the previous layer's input)`, so `[dense, residual]`
 *   computes `x + dense(x)`. Shapes must match exactly; a mismatch is an
 *   error (never a silent pass-through).
 *
 * Fields: `layers` (optional; Loom's `branches` accepted too), `input_size`
 * (inferred).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { floatTensor } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * const cfg = { input_size: 2, layers: [{ type: "residual", layers: [{ type: "softmax" }] }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 0));
 * const y = net.forward(floatTensor(new Float32Array([3, 3]), [1, 2]));
 * assert(y.data[0] === 3.5);
 * ```
 *
 * @module
 */

import type { LayerPlugin, ParsedLayer } from "../core/plugin.ts";
import { type FloatTensor, floatTensor } from "../core/tensor.ts";
import {
  buildChain,
  chainInit,
  chainParams,
  childStates,
  lowerChain,
  parseChain,
  runChain,
} from "./_chain.ts";
import {
  checkFeatures,
  fieldError,
  layerFields,
  optPositiveInt,
} from "./_fields.ts";

/** Normalized config of a `residual` layer. */
export interface ResidualConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** Features in (and out), when known. */
  inputSize?: number;
  /** The wrapped sub-layers; empty means "add the previous layer's input". */
  layers: ParsedLayer[];
}

function sameShape(a: FloatTensor, b: FloatTensor): boolean {
  return a.shape.length === b.shape.length &&
    a.shape.every((d, i) => d === b.shape[i]);
}

/**
 * The `residual` layer plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { residualLayer } from "@modelhost/modelhost/layers";
 * assert(residualLayer.type === "residual");
 * ```
 */
export const residualLayer: LayerPlugin<ResidualConfig> = {
  kind: "layer",
  type: "residual",
  description:
    "x + f(x) over its sub-layers, or x + the previous layer's input when it has none",
  parse(json, ctx) {
    const o = layerFields(json, ctx, "residual", [
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
    let size = ctx.inputSize ?? given;
    const field = o.layers === undefined && o.branches !== undefined
      ? "branches"
      : "layers";
    let layers: ParsedLayer[] = [];
    if (o[field] !== undefined) {
      layers = parseChain(o[field], field, ctx, size, size);
      size ??= layers[0].inputSize;
      const out = layers[layers.length - 1].outputSize;
      if (size !== undefined && out !== undefined && out !== size) {
        throw fieldError(
          ctx.path,
          field,
          `the sub-layers output ${out} features; a residual needs its input size ${size}`,
        );
      }
      size ??= out;
    } else if (
      size !== undefined && ctx.previousInputSize !== undefined &&
      size !== ctx.previousInputSize
    ) {
      throw new TypeError(
        `${ctx.path}: a residual without layers adds the previous layer's input (${ctx.previousInputSize} features) to its own input (${size} features); the sizes must match`,
      );
    }
    return { path: ctx.path, inputSize: size, layers };
  },
  inputSize: (cfg) => cfg.inputSize,
  outputSize: (cfg, inputSize) => cfg.inputSize ?? inputSize,
  toJSON: (cfg) => ({
    type: "residual",
    ...(cfg.inputSize !== undefined ? { input_size: cfg.inputSize } : {}),
    ...(cfg.layers.length
      ? { layers: cfg.layers.map((l) => l.plugin.toJSON(l.cfg)) }
      : {}),
  }),
  params: (cfg) => chainParams("layers", cfg.layers),
  init: (cfg, rng) => chainInit("layers", cfg.layers, rng),
  build(cfg, weights) {
    const layers = buildChain("layers", cfg.layers, weights);
    return {
      forward(x, state, ctx) {
        if (cfg.inputSize !== undefined) {
          checkFeatures(x, cfg.inputSize, cfg.path, "residual");
        }
        let skip: FloatTensor;
        if (layers.length) {
          skip = runChain(
            layers,
            x,
            childStates(state, "layers", layers.length),
            ctx,
          );
          if (!sameShape(skip, x)) {
            throw new TypeError(
              `${cfg.path} (residual): the sub-layers returned shape [${
                skip.shape.join(", ")
              }], expected the input's [${x.shape.join(", ")}]`,
            );
          }
        } else {
          const prev = ctx?.previousInput;
          if (!prev) {
            throw new TypeError(
              `${cfg.path} (residual): has no layers and no layer ran before it; it adds the previous layer's input`,
            );
          }
          if (!sameShape(prev, x)) {
            throw new TypeError(
              `${cfg.path} (residual): the previous layer's input has shape [${
                prev.shape.join(", ")
              }], this layer's input [${x.shape.join(", ")}]; they must match`,
            );
          }
          skip = prev;
        }
        const y = new Float32Array(x.data.length);
        for (let i = 0; i < y.length; i++) y[i] = x.data[i] + skip.data[i];
        return floatTensor(y, x.shape.slice());
      },
    };
  },
  toOnnx(g, cfg, weights, input, ctx) {
    if (cfg.layers.length) {
      const f = lowerChain(
        g,
        "layers",
        "layers",
        cfg.layers,
        weights,
        input,
        ctx,
      );
      return g.op("Add", [input, f]);
    }
    if (ctx.previousInput === undefined) {
      throw g.refuse(
        cfg.path,
        "residual",
        "it has no layers and no layer runs before it, so there is nothing to add",
      );
    }
    return g.op("Add", [input, ctx.previousInput]);
  },
};

/**
 * Old name of {@link residualLayer}.
 *
 * @deprecated Use {@link residualLayer}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { residual, residualLayer } from "@modelhost/modelhost/layers";
 * assert(residual === residualLayer);
 * ```
 */
export const residual: LayerPlugin<ResidualConfig> = residualLayer;
