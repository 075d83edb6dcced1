/**
 * The `embedding` layer: looks up one row of `weight` `[vocab_size,
 * embedding_dim]` per token id. The input holds token ids stored as floats
 * (shape `[batch, seq]` or `[seq]`); the output appends `embedding_dim`.
 * An id that is not an integer in [0, vocab_size) throws `RangeError`.
 *
 * Fields: `vocab_size`, `embedding_dim` (both required). Init draws the
 * weights from N(0, 1), as PyTorch's `Embedding` does.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork } from "@modelhost/modelhost/core";
 * import { floatTensor, tensorFromF32 } from "@modelhost/modelhost/core";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * import { embeddingLayer } from "@modelhost/modelhost/layers";
 * const reg = createRegistry().use(embedding);
 * const w = tensorFromF32("layers.0.weight", new Float32Array([0, 0, 1, 2, 3, 4]), [3, 2]);
 * const net = buildNetwork(reg, { layers: [{ type: "embedding", vocab_size: 3, embedding_dim: 2 }] }, new Map([[w.name, w]]));
 * const y = net.forward(floatTensor(new Float32Array([2, 1]), [2]));
 * assert(y.shape.join() === "2,2" && y.data[0] === 3 && y.data[3] === 2);
 * ```
 *
 * @module
 */

import { dtypeInfo } from "../core/dtypes.ts";
import type { LayerPlugin } from "../core/plugin.ts";
import { floatTensor, type Tensor } from "../core/tensor.ts";
import { layerFields, numberField, positiveInt } from "./_fields.ts";
import { INT64, scalar } from "./_onnx.ts";

/** Normalized config of an `embedding` layer. */
export interface EmbeddingConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** Number of rows (token ids 0 … vocab_size − 1). */
  vocabSize: number;
  /** Width of one row. */
  embeddingDim: number;
  /** Multiplier of every looked-up row (Granite's `embedding_multiplier`). */
  scale: number;
}

/** Reads row `id` of a `[vocab, dim]` table in any dtype, widening only that row. */
function rowReader(
  t: Tensor,
  dim: number,
  widenAll: () => Float32Array,
): (id: number) => Float32Array {
  const info = dtypeInfo(t.dtype);
  if (
    t.quant || !info.toF32 || dim % info.blockSize !== 0 ||
    (t.dtype === "F32" && t.bytes.byteOffset % 4 === 0)
  ) {
    const all = widenAll();
    return (id) => all.subarray(id * dim, (id + 1) * dim);
  }
  const rowBytes = (dim / info.blockSize) * info.blockBytes;
  return (id) =>
    info.toF32!(t.bytes.subarray(id * rowBytes, (id + 1) * rowBytes), dim);
}

/**
 * The `embedding` layer plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { embeddingLayer } from "@modelhost/modelhost/layers";
 * assert(embeddingLayer.type === "embedding");
 * ```
 */
export const embeddingLayer: LayerPlugin<EmbeddingConfig> = {
  kind: "layer",
  type: "embedding",
  description: "Token id → row of a [vocab_size, embedding_dim] table",
  parse(json, ctx) {
    const o = layerFields(json, ctx, "embedding", [
      "vocab_size",
      "embedding_dim",
      "scale",
    ]);
    return {
      path: ctx.path,
      vocabSize: positiveInt(o, "vocab_size", ctx.path),
      embeddingDim: positiveInt(o, "embedding_dim", ctx.path),
      scale: numberField(o, "scale", ctx.path, 1),
    };
  },
  // The input holds ids, not features: its size says nothing about the layer.
  inputSize: () => undefined,
  outputSize: (cfg) => cfg.embeddingDim,
  toJSON: (cfg) => ({
    type: "embedding",
    vocab_size: cfg.vocabSize,
    embedding_dim: cfg.embeddingDim,
    ...(cfg.scale !== 1 ? { scale: cfg.scale } : {}),
  }),
  params: (cfg) => [
    {
      name: "weight",
      shape: [cfg.vocabSize, cfg.embeddingDim],
      init: "normal",
    },
  ],
  init(cfg, rng) {
    const w = new Float32Array(cfg.vocabSize * cfg.embeddingDim);
    for (let i = 0; i < w.length; i++) w[i] = rng.normal();
    return new Map([["weight", w]]);
  },
  build(cfg, weights) {
    const shape = [cfg.vocabSize, cfg.embeddingDim];
    const t = weights.get("weight", shape);
    const row = rowReader(
      t,
      cfg.embeddingDim,
      () => weights.getF32("weight", shape),
    );
    return {
      forward(x) {
        const n = x.data.length, d = cfg.embeddingDim;
        const out = new Float32Array(n * d);
        for (let i = 0; i < n; i++) {
          const id = x.data[i];
          if (!Number.isInteger(id) || id < 0 || id >= cfg.vocabSize) {
            throw new RangeError(
              `${cfg.path} (embedding): token id ${id} at index ${i} is ${
                Number.isInteger(id) ? "out of range" : "not an integer"
              }; ids must be integers in [0, ${cfg.vocabSize}) (vocab_size ${cfg.vocabSize})`,
            );
          }
          out.set(row(id), i * d);
        }
        if (cfg.scale !== 1) {
          for (let i = 0; i < out.length; i++) out[i] *= cfg.scale;
        }
        return floatTensor(out, [...x.shape, d]);
      },
    };
  },
  toOnnx(g, cfg, weights, input) {
    const table = g.weight(weights, "weight", {
      shape: [cfg.vocabSize, cfg.embeddingDim],
    });
    // Float ids are cast (truncating); the exporter feeds INT64 ids directly.
    const ids = g.elemType(input) === INT64
      ? input
      : g.op("Cast", [input], { to: INT64 });
    const rows = g.op("Gather", [table, ids], { axis: 0 });
    return cfg.scale === 1 ? rows : g.op("Mul", [rows, scalar(g, cfg.scale)]);
  },
};

/**
 * Old name of {@link embeddingLayer}.
 *
 * @deprecated Use {@link embeddingLayer}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { embedding, embeddingLayer } from "@modelhost/modelhost/layers";
 * assert(embedding === embeddingLayer);
 * ```
 */
export const embedding: LayerPlugin<EmbeddingConfig> = embeddingLayer;
