/**
 * The `decoder_embedding` layer: token rows of a `[vocab_size, dim]` table,
 * optionally multiplied by `scale` (Gemma's `√hidden_size`) and plus a
 * learned absolute position row (GPT-2's `wpe`, `position.weight`
 * `[max_positions, dim]`). With a state, each call continues at the next
 * position (`state.position`), so a prefill and token-by-token decoding
 * agree; in a batched call each sequence counts its own positions.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { decoderEmbeddingLayer } from "@modelhost/modelhost/layers";
 * import { createScope, floatTensor, tensorFromF32 } from "@modelhost/modelhost/core";
 * const ctx = { path: "layers[0]", parseChild: () => { throw new Error(); } };
 * const cfg = decoderEmbeddingLayer.parse(
 *   { type: "decoder_embedding", vocab_size: 3, embedding_dim: 2, max_positions: 4, scale: 2 }, ctx);
 * const layer = decoderEmbeddingLayer.build(cfg, createScope(new Map([
 *   ["weight", tensorFromF32("weight", new Float32Array([0, 0, 1, 1, 2, 2]), [3, 2])],
 *   ["position.weight", tensorFromF32("position.weight", new Float32Array([0, 0, 10, 10, 20, 20, 30, 30]), [4, 2])],
 * ])));
 * const state = {};
 * layer.forward(floatTensor(new Float32Array([1]), [1, 1]), state);
 * const y = layer.forward(floatTensor(new Float32Array([2]), [1, 1]), state);
 * assert(y.data[0] === 14); // 2·2 + position 1
 * ```
 *
 * @module
 */

import type {
  ForwardContext,
  LayerPlugin,
  LayerState,
} from "../core/plugin.ts";
import { type FloatTensor, floatTensor } from "../core/tensor.ts";
import { layerFields, numberField, positiveInt } from "./_fields.ts";
import { embeddingLayer } from "./embedding.ts";
import { scalar } from "./_onnx.ts";

/** Normalized config of a `decoder_embedding` layer. */
export interface DecoderEmbeddingConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** Rows of the token table. */
  vocabSize: number;
  /** Width of a row. */
  embeddingDim: number;
  /** Multiplier of the token rows (1 for none). */
  scale: number;
  /** Rows of the learned position table (0 for none). */
  maxPositions: number;
}

/**
 * The `decoder_embedding` layer plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { decoderEmbeddingLayer } from "@modelhost/modelhost/layers";
 * const cfg = decoderEmbeddingLayer.parse({ type: "decoder_embedding", vocab_size: 5, embedding_dim: 4, max_positions: 8 },
 *   { path: "layers[0]", parseChild: () => { throw new Error(); } });
 * assert(decoderEmbeddingLayer.params(cfg)[1].name === "position.weight");
 * ```
 */
export const decoderEmbeddingLayer: LayerPlugin<DecoderEmbeddingConfig> = {
  kind: "layer",
  type: "decoder_embedding",
  description:
    "Token rows, optionally scaled, plus learned absolute positions (decoder inputs)",
  parse(json, ctx) {
    const o = layerFields(json, ctx, "decoder_embedding", [
      "vocab_size",
      "embedding_dim",
      "scale",
      "max_positions",
    ]);
    return {
      path: ctx.path,
      vocabSize: positiveInt(o, "vocab_size", ctx.path),
      embeddingDim: positiveInt(o, "embedding_dim", ctx.path),
      scale: numberField(o, "scale", ctx.path, 1, { above: 0 }),
      maxPositions: o.max_positions === undefined || o.max_positions === 0
        ? 0
        : positiveInt(o, "max_positions", ctx.path),
    };
  },
  inputSize: () => undefined,
  outputSize: (cfg) => cfg.embeddingDim,
  toJSON: (cfg) => ({
    type: "decoder_embedding",
    vocab_size: cfg.vocabSize,
    embedding_dim: cfg.embeddingDim,
    scale: cfg.scale,
    max_positions: cfg.maxPositions,
  }),
  params: (cfg) => [
    {
      name: "weight",
      shape: [cfg.vocabSize, cfg.embeddingDim],
      init: "normal",
    },
    ...(cfg.maxPositions > 0
      ? [{
        name: "position.weight",
        shape: [cfg.maxPositions, cfg.embeddingDim],
        init: "normal" as const,
      }]
      : []),
  ],
  init(cfg, rng) {
    const out = new Map<string, Float32Array>();
    for (const s of decoderEmbeddingLayer.params(cfg)) {
      const w = new Float32Array(s.shape[0] * s.shape[1]);
      for (let i = 0; i < w.length; i++) w[i] = rng.normal();
      out.set(s.name, w);
    }
    return out;
  },
  build(cfg, weights) {
    const tokens = embeddingLayer.build(
      {
        path: cfg.path,
        vocabSize: cfg.vocabSize,
        embeddingDim: cfg.embeddingDim,
        scale: 1, // this layer applies its own scale (after the lookup)
      },
      weights,
    );
    const d = cfg.embeddingDim;
    const pos = cfg.maxPositions > 0
      ? weights.getF32("position.weight", [cfg.maxPositions, d])
      : undefined;
    // Gemma scales in the activations' dtype: the multiplier as float32.
    const scale = Math.fround(cfg.scale);
    const addRows = (
      out: Float32Array,
      from: number,
      rows: number,
      start: number,
    ) => {
      if (pos) {
        if (start + rows > cfg.maxPositions) {
          throw new RangeError(
            `${cfg.path} (decoder_embedding): positions ${start}..${
              start + rows - 1
            } exceed the ${cfg.maxPositions} learned positions`,
          );
        }
        for (let r = 0; r < rows; r++) {
          const o = (from + r) * d, p = (start + r) * d;
          for (let i = 0; i < d; i++) out[o + i] += pos[p + i];
        }
      }
    };
    const startOf = (state?: LayerState): number =>
      (state?.position as number | undefined) ?? 0;
    return {
      forward(
        x: FloatTensor,
        state?: LayerState,
        context?: ForwardContext,
      ): FloatTensor {
        const y = tokens.forward(x);
        const out = y.data;
        if (scale !== 1) {
          for (let i = 0; i < out.length; i++) {
            out[i] = Math.fround(out[i] * scale);
          }
        }
        if (context?.sequences) {
          let r = 0;
          for (const s of context.sequences) {
            const start = startOf(s.state);
            addRows(out, r, s.rows, start);
            s.state.position = start + s.rows;
            r += s.rows;
          }
        } else {
          // ids are [batch, seq]; every sequence starts at the same position
          const batch = x.shape.length === 2 ? x.shape[0] : 1;
          const rows = x.data.length / batch;
          const start = startOf(state);
          for (let b = 0; b < batch; b++) addRows(out, b * rows, rows, start);
          if (state) state.position = start + rows;
        }
        return floatTensor(out, y.shape);
      },
    };
  },
  toOnnx(g, cfg, weights, input, ctx) {
    let y = embeddingLayer.toOnnx!(
      g,
      {
        path: cfg.path,
        vocabSize: cfg.vocabSize,
        embeddingDim: cfg.embeddingDim,
        scale: 1, // this layer applies its own scale (after the lookup)
      },
      weights,
      input,
      ctx,
    );
    if (cfg.scale !== 1) y = g.op("Mul", [y, scalar(g, cfg.scale)]);
    if (cfg.maxPositions > 0) {
      const table = g.weight(weights, "position.weight", {
        shape: [cfg.maxPositions, cfg.embeddingDim],
      });
      const shape = g.op("Shape", [input]);
      const t = g.op("Gather", [shape, g.constant("I64", [], [1])], {
        axis: 0,
      });
      const ids = g.op("Range", [
        g.constant("I64", [], [0]),
        t,
        g.constant("I64", [], [1]),
      ]);
      y = g.op("Add", [y, g.op("Gather", [table, ids], { axis: 0 })]);
    }
    return y;
  },
};
