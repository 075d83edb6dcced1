/**
 * Text embeddings from a model: one vector per input. For a decoder-only
 * Llama-family model (no pooling of its own), the vector is the mean of
 * the last hidden states over the input's tokens (after the final norm,
 * before the lm_head), L2-normalized: what Ollama and llama.cpp's server
 * answer for such models with mean pooling.
 *
 * @example
 * ```ts
 * import { assert, assertAlmostEquals } from "@std/assert";
 * import { buildTransformer, configFromHf, embed, transformerNetwork } from "@modelhost/modelhost/models";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 16, hidden_size: 8, intermediate_size: 16,
 *   num_hidden_layers: 1, num_attention_heads: 2,
 * });
 * const model = buildTransformer(cfg, initNetwork(createRegistry().use(LAYER_PLUGINS), transformerNetwork(cfg), 7));
 * const { embeddings, promptTokens } = embed(model, [[1, 2, 3], [4]]);
 * assert(embeddings.length === 2 && embeddings[0].length === 8 && promptTokens === 4);
 * assertAlmostEquals(Math.hypot(...embeddings[1]), 1, 1e-6);
 * ```
 *
 * @module
 */

import type { Transformer } from "./transformer.ts";
import { embedSentences, type EncoderModel } from "./sentence.ts";

/** One input: text (encoded with the model's tokenizer) or token ids. */
export type EmbedInput = string | readonly number[];

/** How token vectors become one vector. */
export type Pooling = "mean" | "last";

/** Options of {@link embed}. */
export interface EmbedOptions {
  /** Scale each vector to unit length. @default {true} */
  normalize?: boolean;
  /** `mean` over the tokens, or the `last` token's vector. @default {"mean"} */
  pooling?: Pooling;
  /** Cut inputs longer than the context to fit instead of refusing them. @default {false} */
  truncate?: boolean;
  /** Prepend BOS to text inputs. @default {the tokenizer's setting} */
  addBos?: boolean;
}

/** What {@link embed} returns. */
export interface EmbedResult {
  /** One vector per input, in order. */
  embeddings: Float32Array[];
  /** Tokens read, over all inputs. */
  promptTokens: number;
  /** Each input's token count. */
  tokenCounts: number[];
}

/**
 * Embeds inputs with a model (see the module notes for how).
 *
 * @param model The model: a Llama-family model, or an encoder with its
 * sentence pipeline (`loadEncoderModel`), which pools as its
 * sentence-transformers configuration says unless `pooling` is given.
 * @param inputs One input or a list.
 * @param options Normalization, pooling, truncation.
 * @returns The vectors and token counts.
 * @throws {TypeError} When text meets a model without a tokenizer.
 * @throws {RangeError} For an empty input, or one longer than the context
 * without `truncate`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildTransformer, configFromHf, embed, transformerNetwork } from "@modelhost/modelhost/models";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 16, hidden_size: 8, intermediate_size: 16,
 *   num_hidden_layers: 1, num_attention_heads: 2,
 * });
 * const model = buildTransformer(cfg, initNetwork(createRegistry().use(LAYER_PLUGINS), transformerNetwork(cfg), 7));
 * const [a] = embed(model, [5, 6], { normalize: false, pooling: "last" }).embeddings;
 * const hidden = model.forward([5, 6], model.createState(), { output: "hidden" });
 * assert(a.every((v, i) => v === hidden[i]));
 * ```
 */
export function embed(
  model: Transformer | EncoderModel,
  inputs: EmbedInput | readonly EmbedInput[],
  options: EmbedOptions = {},
): EmbedResult {
  const list: readonly EmbedInput[] =
    typeof inputs === "string" || (inputs.length > 0 &&
        typeof (inputs as readonly unknown[])[0] === "number")
      ? [inputs as EmbedInput]
      : inputs as readonly EmbedInput[];
  if ("encoder" in model) {
    // an encoder pools as its sentence-transformers files say
    return embedSentences(model.encoder, model.pipeline, list, {
      normalize: options.normalize,
      pooling: options.pooling === "last" ? "lasttoken" : options.pooling,
      truncate: options.truncate,
    });
  }
  const pooling = options.pooling ?? "mean";
  const normalize = options.normalize ?? true;
  const limit = model.config.maxPositionEmbeddings;
  const d = model.config.hiddenSize;
  const embeddings: Float32Array[] = [];
  const tokenCounts: number[] = [];
  for (const [i, input] of list.entries()) {
    let ids: number[];
    if (typeof input === "string") {
      const tok = model.tokenizer;
      if (!tok) {
        throw new TypeError(
          `embed: ${model.name} has no tokenizer; pass token ids`,
        );
      }
      ids = tok.encode(input, {
        addSpecial: false,
        addBos: options.addBos ?? tok.addBos,
      });
    } else ids = [...input];
    if (ids.length === 0) {
      throw new RangeError(`embed: input ${i} has no tokens`);
    }
    if (ids.length > limit) {
      if (!options.truncate) {
        throw new RangeError(
          `embed: input ${i} has ${ids.length} tokens; the context holds ${limit}`,
        );
      }
      ids = ids.slice(0, limit);
    }
    const h = model.forward(ids, model.createState(), {
      output: "hidden",
      allPositions: true,
    });
    const v = new Float32Array(d);
    if (pooling === "last") v.set(h.subarray(h.length - d));
    else {
      const acc = new Float64Array(d);
      for (let t = 0; t < ids.length; t++) {
        for (let j = 0; j < d; j++) acc[j] += h[t * d + j];
      }
      for (let j = 0; j < d; j++) v[j] = acc[j] / ids.length;
    }
    if (normalize) {
      let s = 0;
      for (let j = 0; j < d; j++) s += v[j] * v[j];
      const n = Math.sqrt(s);
      if (n > 0) { for (let j = 0; j < d; j++) v[j] /= n; }
    }
    embeddings.push(v);
    tokenCounts.push(ids.length);
  }
  return {
    embeddings,
    promptTokens: tokenCounts.reduce((a, b) => a + b, 0),
    tokenCounts,
  };
}
