/**
 * Sentence embeddings from an encoder, configured as sentence-transformers
 * configures them: `modules.json` lists the steps (the transformer, then
 * `Pooling` as `1_Pooling/config.json` says: CLS, mean, max, mean over
 * √length or last token; then `Normalize` when listed), and
 * `config_sentence_transformers.json` holds named prompts (`query: `)
 * put in front of the text. Inputs are embedded in batches; each batch
 * runs packed (no padding computed, see `buildEncoder`).
 *
 * @example
 * ```ts
 * import { assert, assertAlmostEquals } from "@std/assert";
 * import { cosineSimilarity, poolTokens } from "@modelhost/modelhost/models";
 * const v = poolTokens(new Float32Array([1, 2, 3, 4]), 2, 2, "mean");
 * assert(v[0] === 2 && v[1] === 3);
 * assertAlmostEquals(cosineSimilarity([1, 0], [1, 1]), Math.SQRT1_2, 1e-12);
 * ```
 *
 * @module
 */

import type { Encoder, EncoderRow } from "./encoder.ts";
import type { Transformer } from "./transformer.ts";

/** How token vectors become one vector. */
export type PoolingMode =
  | "cls"
  | "mean"
  | "max"
  | "mean_sqrt_len"
  | "lasttoken";

/** The steps after the transformer, as sentence-transformers' files give them. */
export interface SentencePipeline {
  /** Pooling. */
  pooling: PoolingMode;
  /** Whether the pooled vector is scaled to unit length. */
  normalize: boolean;
  /** Named prompts (prefixes). */
  prompts: Record<string, string>;
  /** The prompt used when none is named. */
  defaultPrompt: string | undefined;
  /** Longest input in tokens (sentence-transformers' `max_seq_length`). */
  maxSeqLength: number | undefined;
}

/** An encoder with its sentence pipeline (what `loadEncoderModel` returns). */
export interface EncoderModel {
  /** The encoder. */
  encoder: Encoder;
  /** Pooling, normalization, prompts (defaults: mean pooling, normalized, when the folder has no `modules.json`). */
  pipeline: SentencePipeline;
}

/** Reads a JSON file of a model folder; undefined when the file is absent. */
export type ReadJson = (path: string) => Promise<unknown>;

const MODES: Record<string, PoolingMode> = {
  pooling_mode_cls_token: "cls",
  pooling_mode_mean_tokens: "mean",
  pooling_mode_max_tokens: "max",
  pooling_mode_mean_sqrt_len_tokens: "mean_sqrt_len",
  pooling_mode_lasttoken: "lasttoken",
};

/**
 * Reads sentence-transformers' configuration of a folder (`modules.json`,
 * the pooling module's `config.json`, `config_sentence_transformers.json`,
 * `sentence_bert_config.json`) through `read`.
 *
 * @param read Reads a file by its path relative to the folder.
 * @returns The pipeline, or undefined when the folder has no `modules.json`.
 * @throws {TypeError} For a module it cannot run (Dense, …) or an unknown pooling mode.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readSentencePipeline } from "@modelhost/modelhost/models";
 * const files: Record<string, unknown> = {
 *   "modules.json": [
 *     { idx: 0, path: "", type: "sentence_transformers.models.Transformer" },
 *     { idx: 1, path: "1_Pooling", type: "sentence_transformers.models.Pooling" },
 *   ],
 *   "1_Pooling/config.json": { pooling_mode_cls_token: true },
 * };
 * const p = await readSentencePipeline((f) => Promise.resolve(files[f]));
 * assert(p?.pooling === "cls" && !p.normalize);
 * ```
 */
export async function readSentencePipeline(
  read: ReadJson,
): Promise<SentencePipeline | undefined> {
  const modules = await read("modules.json");
  if (!Array.isArray(modules)) return undefined;
  let pooling: PoolingMode | undefined;
  let normalize = false;
  for (const m of modules as { type?: unknown; path?: unknown }[]) {
    const type = String(m.type ?? "");
    const kind = type.slice(type.lastIndexOf(".") + 1);
    if (kind === "Transformer") continue;
    if (kind === "Normalize") {
      normalize = true;
      continue;
    }
    if (kind !== "Pooling") {
      throw new TypeError(
        `modules.json: module ${
          JSON.stringify(type)
        } is not supported (Transformer, Pooling, Normalize)`,
      );
    }
    const path = typeof m.path === "string" && m.path !== ""
      ? `${m.path}/config.json`
      : "config.json";
    const cfg = (await read(path) ?? {}) as Record<string, unknown>;
    if (typeof cfg.pooling_mode === "string") {
      const mode = cfg.pooling_mode === "mean_sqrt_len_tokens"
        ? "mean_sqrt_len"
        : cfg.pooling_mode;
      if (
        !["cls", "mean", "max", "mean_sqrt_len", "lasttoken"].includes(mode)
      ) {
        throw new TypeError(
          `${path}: pooling_mode ${JSON.stringify(mode)} is not supported`,
        );
      }
      pooling = mode as PoolingMode;
    } else {
      const on = Object.keys(MODES).filter((k) => cfg[k] === true);
      if (on.length !== 1) {
        throw new TypeError(
          `${path}: expected exactly one pooling mode, found ${
            on.length === 0 ? "none" : on.join(", ")
          }`,
        );
      }
      pooling = MODES[on[0]];
    }
  }
  const st = (await read("config_sentence_transformers.json") ?? {}) as Record<
    string,
    unknown
  >;
  const prompts: Record<string, string> = {};
  if (st.prompts && typeof st.prompts === "object") {
    for (const [k, v] of Object.entries(st.prompts)) {
      if (typeof v === "string") prompts[k] = v;
    }
  }
  const def = typeof st.default_prompt_name === "string"
    ? prompts[st.default_prompt_name]
    : undefined;
  const sb = (await read("sentence_bert_config.json") ?? {}) as Record<
    string,
    unknown
  >;
  return {
    pooling: pooling ?? "mean",
    normalize,
    prompts,
    defaultPrompt: def,
    maxSeqLength: typeof sb.max_seq_length === "number"
      ? sb.max_seq_length
      : undefined,
  };
}

/**
 * Pools `T` token vectors of width `d` into one.
 *
 * @param h The token vectors, `T × d`.
 * @param T Tokens.
 * @param d Width.
 * @param mode The pooling.
 * @returns The pooled vector.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { poolTokens } from "@modelhost/modelhost/models";
 * const h = new Float32Array([1, 5, 3, 2]); // two tokens of width 2
 * assertEquals([...poolTokens(h, 2, 2, "max")], [3, 5]);
 * assertEquals([...poolTokens(h, 2, 2, "lasttoken")], [3, 2]);
 * ```
 */
export function poolTokens(
  h: Float32Array,
  T: number,
  d: number,
  mode: PoolingMode,
): Float32Array {
  const v = new Float32Array(d);
  if (mode === "cls") return h.slice(0, d);
  if (mode === "lasttoken") return h.slice((T - 1) * d, T * d);
  if (mode === "max") {
    v.fill(-Infinity);
    for (let t = 0; t < T; t++) {
      for (let j = 0; j < d; j++) v[j] = Math.max(v[j], h[t * d + j]);
    }
    return v;
  }
  const acc = new Float64Array(d);
  for (let t = 0; t < T; t++) {
    for (let j = 0; j < d; j++) acc[j] += h[t * d + j];
  }
  const div = mode === "mean" ? T : Math.sqrt(T);
  for (let j = 0; j < d; j++) v[j] = acc[j] / div;
  return v;
}

/**
 * Cosine similarity of two vectors (0 when either is all zeros).
 *
 * @param a A vector.
 * @param b A vector of the same length.
 * @returns `a·b / (|a| |b|)`.
 * @throws {RangeError} When the lengths differ.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { cosineSimilarity } from "@modelhost/modelhost/models";
 * assert(cosineSimilarity([1, 2], [2, 4]) > 0.9999999);
 * ```
 */
export function cosineSimilarity(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
): number {
  if (a.length !== b.length) {
    throw new RangeError(
      `cosineSimilarity: vectors of ${a.length} and ${b.length} values`,
    );
  }
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return aa === 0 || bb === 0 ? 0 : ab / Math.sqrt(aa * bb);
}

/** Options of {@link embedSentences}. */
export interface EmbedSentencesOptions {
  /** Name of a prompt of the pipeline to put in front of each text. */
  promptName?: string;
  /** A prefix to put in front of each text (wins over `promptName`). */
  prompt?: string;
  /** Scale each vector to unit length. @default {the pipeline's Normalize} */
  normalize?: boolean;
  /** Pooling. @default {the pipeline's} */
  pooling?: PoolingMode;
  /** Inputs per forward pass. @default {32} */
  batchSize?: number;
  /** Cut inputs longer than the model takes instead of refusing them. @default {true} */
  truncate?: boolean;
}

/** What {@link embedSentences} returns. */
export interface SentenceEmbeddings {
  /** One vector per input. */
  embeddings: Float32Array[];
  /** Each input's token count. */
  tokenCounts: number[];
  /** Tokens over all inputs. */
  promptTokens: number;
}

/**
 * Token ids of one text as the encoder takes it: special tokens from the
 * tokenizer's post-processor, cut to `limit` tokens keeping the final one.
 */
function encodeText(
  enc: Encoder | Transformer,
  text: string,
  limit: number,
  truncate: boolean,
  index: number,
): number[] {
  const tok = enc.tokenizer;
  if (!tok) {
    throw new TypeError(`embed: ${enc.name} has no tokenizer; pass token ids`);
  }
  let ids = tok.encode(text);
  if (ids.length > limit) {
    if (!truncate) {
      throw new RangeError(
        `embed: input ${index} has ${ids.length} tokens; the model takes ${limit}`,
      );
    }
    ids = [...ids.slice(0, limit - 1), ids[ids.length - 1]];
  }
  return ids;
}

/**
 * Embeds texts (or token-id lists) with an encoder and a sentence
 * pipeline: prompt, tokenize (with the tokenizer's special tokens),
 * forward in batches, pool, normalize. A decoder (a Llama-family model
 * saved with sentence-transformers' files, such as a Qwen2 embedding
 * model with last-token pooling) runs the same steps on its last hidden
 * states (after the final norm).
 *
 * @param enc The encoder, or a decoder.
 * @param pipeline Pooling, normalization and prompts ({@link readSentencePipeline}).
 * @param inputs Texts or token ids.
 * @param options Prompt, batch size, overrides.
 * @returns The vectors and token counts.
 * @throws {TypeError} For text without a tokenizer, or an unknown prompt name.
 * @throws {RangeError} For an empty input, or one too long without `truncate`.
 *
 * @example
 * ```ts ignore
 * import { loadEncoderModel } from "@modelhost/modelhost/io";
 * import { cosineSimilarity, embedSentences } from "@modelhost/modelhost/models";
 * const { encoder, pipeline } = await loadEncoderModel("bge-small-en-v1.5");
 * const [q, d] = embedSentences(encoder, pipeline, ["what is a cat?", "A cat is a small pet."]).embeddings;
 * console.log(cosineSimilarity(q, d));
 * ```
 */
export function embedSentences(
  enc: Encoder | Transformer,
  pipeline: SentencePipeline,
  inputs: readonly (string | readonly number[])[],
  options: EmbedSentencesOptions = {},
): SentenceEmbeddings {
  let prefix = options.prompt ?? pipeline.defaultPrompt ?? "";
  if (options.prompt === undefined && options.promptName !== undefined) {
    const p = pipeline.prompts[options.promptName];
    if (p === undefined) {
      throw new TypeError(
        `embed: no prompt named ${JSON.stringify(options.promptName)} (${
          Object.keys(pipeline.prompts).join(", ") || "none"
        })`,
      );
    }
    prefix = p;
  }
  const isEncoder = "classify" in enc;
  const limit = Math.min(
    pipeline.maxSeqLength ?? Infinity,
    isEncoder ? enc.config.maxPositions : enc.config.maxPositionEmbeddings,
  );
  const truncate = options.truncate ?? true;
  const rows: EncoderRow[] = inputs.map((x, i) => {
    const ids = typeof x === "string"
      ? encodeText(enc, prefix + x, limit, truncate, i)
      : [...x];
    if (ids.length === 0) {
      throw new RangeError(`embed: input ${i} has no tokens`);
    }
    if (ids.length > limit) {
      if (!truncate) {
        throw new RangeError(
          `embed: input ${i} has ${ids.length} tokens; the model takes ${limit}`,
        );
      }
      ids.length = limit;
    }
    return { ids };
  });
  const pooling = options.pooling ?? pipeline.pooling;
  const normalize = options.normalize ?? pipeline.normalize;
  const bs = Math.max(1, options.batchSize ?? 32);
  const d = enc.config.hiddenSize;
  const embeddings: Float32Array[] = [];
  for (let b = 0; b < rows.length; b += bs) {
    const batch = rows.slice(b, b + bs);
    // an encoder runs the batch packed; a decoder one input at a time
    const hs = isEncoder
      ? enc.forward(batch)
      : batch.map((r) =>
        enc.forward(r.ids, enc.createState(), {
          output: "hidden",
          allPositions: true,
        })
      );
    for (const [i, h] of hs.entries()) {
      const v = poolTokens(h, batch[i].ids.length, d, pooling);
      if (normalize) {
        let s = 0;
        for (let j = 0; j < d; j++) s += v[j] * v[j];
        const n = Math.max(Math.sqrt(s), 1e-12);
        for (let j = 0; j < d; j++) v[j] /= n;
      }
      embeddings.push(v);
    }
  }
  const tokenCounts = rows.map((r) => r.ids.length);
  return {
    embeddings,
    tokenCounts,
    promptTokens: tokenCounts.reduce((a, b) => a + b, 0),
  };
}

/**
 * Scores (query, document) pairs with a cross-encoder: each pair is
 * tokenized as the model's tokenizer joins two segments (`[CLS] a [SEP] b
 * [SEP]` with token types 0 and 1 for BERT; `<s> a </s></s> b </s>` for
 * RoBERTa), and the classification head's first logit is the score.
 *
 * @param enc An encoder with a classification head.
 * @param query The query.
 * @param documents The documents.
 * @returns One score per document (raw logits, as transformers gives them).
 * @throws {TypeError} Without a tokenizer or a classification head.
 *
 * @example
 * ```ts ignore
 * import { loadEncoderModel } from "@modelhost/modelhost/io";
 * import { rerankScores } from "@modelhost/modelhost/models";
 * const { encoder } = await loadEncoderModel("ms-marco-MiniLM-L-6-v2");
 * console.log(rerankScores(encoder, "capital of France", ["Paris is in France.", "Cats purr."]));
 * ```
 */
export function rerankScores(
  enc: Encoder,
  query: string,
  documents: readonly string[],
): number[] {
  const tok = enc.tokenizer;
  if (!tok) throw new TypeError(`rerank: ${enc.name} has no tokenizer`);
  const a = tok.encode(query);
  const sep = a[a.length - 1];
  const roberta = enc.config.family === "roberta" ||
    enc.config.family === "xlm-roberta";
  const rows: EncoderRow[] = documents.map((doc) => {
    const b = tok.encode(doc, { addSpecial: false });
    const ids = roberta ? [...a, sep, ...b, sep] : [...a, ...b, sep];
    const types = roberta || enc.config.typeVocabSize < 2
      ? undefined
      : ids.map((_, i) => (i < a.length ? 0 : 1));
    let cut = ids;
    if (ids.length > enc.config.maxPositions) {
      cut = [...ids.slice(0, enc.config.maxPositions - 1), sep];
    }
    return { ids: cut, types: types?.slice(0, cut.length) };
  });
  return enc.classify(rows).map((l) => l[0]);
}
