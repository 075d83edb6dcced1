/**
 * The `position_embedding` layer: adds a learned position table to a
 * `[batch, seq, d_model]` (or `[seq, d_model]`) input, row `offset + t` to
 * the token at position t, as BERT's and RoBERTa's absolute positions
 * (RoBERTa counts from `padding_idx + 1`: `offset`).
 *
 * Fields: `max_positions` (required), `d_model` (the previous layer's size
 * when absent), `offset` (0). Weight `weight` `[max_positions, d_model]`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork, floatTensor, tensorFromF32 } from "@modelhost/modelhost/core";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * import { positionEmbeddingLayer } from "@modelhost/modelhost/layers";
 * const reg = createRegistry().use(positionEmbeddingLayer);
 * const w = tensorFromF32("layers.0.weight", new Float32Array([1, 2, 3, 4, 5, 6]), [3, 2]);
 * const net = buildNetwork(reg, { input_size: 2, layers: [{ type: "position_embedding", max_positions: 3 }] }, new Map([[w.name, w]]));
 * const y = net.forward(floatTensor(new Float32Array(4), [1, 2, 2]));
 * assert(y.data.join() === "1,2,3,4");
 * ```
 *
 * @module
 */

import type { LayerPlugin } from "../core/plugin.ts";
import { floatTensor } from "../core/tensor.ts";
import {
  checkFeatures,
  fieldError,
  layerFields,
  numberField,
  positiveInt,
  resolveSize,
} from "./_fields.ts";
import { ints } from "./_onnx.ts";

/** Normalized config of a `position_embedding` layer. */
export interface PositionEmbeddingConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** Rows of the table. */
  maxPositions: number;
  /** Width of a row (the input's features). */
  dModel: number;
  /** Table row of position 0. */
  offset: number;
}

/**
 * The `position_embedding` layer plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { positionEmbeddingLayer } from "@modelhost/modelhost/layers";
 * assert(positionEmbeddingLayer.type === "position_embedding");
 * ```
 */
export const positionEmbeddingLayer: LayerPlugin<PositionEmbeddingConfig> = {
  kind: "layer",
  type: "position_embedding",
  description:
    "Adds row offset + t of a learned [max_positions, d_model] table to the token at position t",
  parse(json, ctx) {
    const o = layerFields(json, ctx, "position_embedding", [
      "max_positions",
      "d_model",
      "offset",
    ]);
    const offset = numberField(o, "offset", ctx.path, 0, { min: 0 });
    if (!Number.isInteger(offset)) {
      throw fieldError(
        ctx.path,
        "offset",
        `expected an integer, got ${offset}`,
      );
    }
    const maxPositions = positiveInt(o, "max_positions", ctx.path);
    if (offset >= maxPositions) {
      throw fieldError(
        ctx.path,
        "offset",
        `expected less than max_positions (${maxPositions}), got ${offset}`,
      );
    }
    return {
      path: ctx.path,
      maxPositions,
      dModel: resolveSize(o, "d_model", ctx, ctx.inputSize),
      offset,
    };
  },
  inputSize: (cfg) => cfg.dModel,
  outputSize: (cfg) => cfg.dModel,
  toJSON: (cfg) => ({
    type: "position_embedding",
    max_positions: cfg.maxPositions,
    d_model: cfg.dModel,
    ...(cfg.offset !== 0 ? { offset: cfg.offset } : {}),
  }),
  params: (cfg) => [
    { name: "weight", shape: [cfg.maxPositions, cfg.dModel], init: "normal" },
  ],
  build(cfg, weights) {
    const table = weights.getF32("weight", [cfg.maxPositions, cfg.dModel]);
    return {
      forward(x) {
        checkFeatures(x, cfg.dModel, cfg.path, "position_embedding");
        const d = cfg.dModel;
        const seq = x.shape.length >= 2 ? x.shape[x.shape.length - 2] : 1;
        if (cfg.offset + seq > cfg.maxPositions) {
          throw new RangeError(
            `${cfg.path} (position_embedding): ${seq} positions from ${cfg.offset} pass the table's ${cfg.maxPositions} rows`,
          );
        }
        const out = new Float32Array(x.data);
        for (let r = 0; r < out.length / d; r++) {
          const t = cfg.offset + (r % seq);
          for (let j = 0; j < d; j++) out[r * d + j] += table[t * d + j];
        }
        return floatTensor(out, x.shape.slice());
      },
    };
  },
  toOnnx(g, cfg, weights, input) {
    const table = g.weight(weights, "weight", {
      shape: [cfg.maxPositions, cfg.dModel],
    });
    // rows offset … offset + seq − 1, seq from the input's second-last axis
    const shape = g.op("Shape", [input]);
    const seq = g.op("Slice", [shape, ints(g, [-2]), ints(g, [-1])]);
    const start = ints(g, [cfg.offset]);
    const rows = g.op("Slice", [
      table,
      start,
      g.op("Add", [seq, start]),
      ints(g, [0]),
    ]);
    return g.op("Add", [input, rows]);
  },
};
