/**
 * Bidirectional encoders (BERT, RoBERTa, XLM-RoBERTa, ModernBERT): token
 * vectors for a batch of inputs, and the scores of a cross-encoder
 * (`…ForSequenceClassification`) head.
 *
 * A batch runs packed: the inputs' tokens are laid end to end, so every
 * projection is one GEMM over all tokens of the batch (the fast kernels,
 * with F32, F16, BF16 or Q8_0 weights), and attention runs per input over
 * its own tokens only: the same result as a padded batch with an attention
 * mask over the padding, without computing the padding.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildEncoder, encoderConfigFromHf } from "@modelhost/modelhost/models";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const config = encoderConfigFromHf({
 *   model_type: "bert", vocab_size: 10, hidden_size: 4, num_hidden_layers: 1,
 *   num_attention_heads: 2, intermediate_size: 8, max_position_embeddings: 16,
 * });
 * const t = (name: string, ...shape: number[]) =>
 *   tensorFromF32(name, Float32Array.from({ length: shape.reduce((a, b) => a * b) }, (_, i) => Math.cos(i)), shape);
 * const tensors = new Map([
 *   t("token_embd.weight", 10, 4), t("position_embd.weight", 16, 4), t("token_types.weight", 2, 4),
 *   t("token_embd_norm.weight", 4), t("token_embd_norm.bias", 4),
 *   ...["attn_q", "attn_k", "attn_v", "attn_output"].flatMap((p) => [t(`blk.0.${p}.weight`, 4, 4), t(`blk.0.${p}.bias`, 4)]),
 *   t("blk.0.attn_output_norm.weight", 4), t("blk.0.attn_output_norm.bias", 4),
 *   t("blk.0.ffn_up.weight", 8, 4), t("blk.0.ffn_up.bias", 8), t("blk.0.ffn_down.weight", 4, 8), t("blk.0.ffn_down.bias", 4),
 *   t("blk.0.layer_output_norm.weight", 4), t("blk.0.layer_output_norm.bias", 4),
 * ].map((x) => [x.name, x]));
 * const enc = buildEncoder(config, tensors);
 * const [a, b] = enc.forward([{ ids: [1, 2, 3] }, { ids: [4] }]);
 * assert(a.length === 12 && b.length === 4);
 * ```
 *
 * @module
 */

import { type Tensor, toFloat32 } from "../core/tensor.ts";
import { activate } from "../kernels/activations.ts";
import { addLayerNorm } from "../kernels/add_norm.ts";
import { appendKv, attend, createKvCache } from "../kernels/attention.ts";
import { attendRowsGemm } from "../kernels/_attention_gemm.ts";
import { currentF32GemmBackend } from "../kernels/fast/backend.ts";
import { geluErfApprox, geluErfInPlace } from "../kernels/gelu.ts";
import { linear, linearMany } from "../kernels/linear.ts";
import { geluMlpGemm } from "../kernels/_mlp_gemm.ts";
import { postNormStackGemm } from "../kernels/_post_norm_gemm.ts";
import { layerNorm } from "../kernels/norms.ts";
import { applyRope, ropeFrequencies, ropeTable } from "../kernels/rope.ts";
import type { RopeTable } from "../kernels/rope.ts";
import type { Tokenizer } from "../tokenizers/tokenizer.ts";
import { type EncoderConfig, isGlobalLayer } from "./encoder_config.ts";

/** One input row: token ids and, optionally, their token types (segments). */
export interface EncoderRow {
  /** Token ids, special tokens included. */
  ids: readonly number[];
  /** Token type per id (0 for the first segment). @default {all 0} */
  types?: readonly number[];
}

/** A loaded encoder. */
export interface Encoder {
  /** Hyper-parameters. */
  readonly config: EncoderConfig;
  /** Display name. */
  readonly name: string;
  /** The tokenizer, when the checkpoint carries one. */
  readonly tokenizer: Tokenizer | undefined;
  /**
   * Token vectors of each row after the last block (and final norm).
   *
   * @param rows The inputs.
   * @returns Per row, `ids.length × hiddenSize` values.
   * @throws {RangeError} For an empty row, an id or type out of range, or a row longer than `maxPositions`.
   */
  forward(rows: readonly EncoderRow[]): Float32Array[];
  /**
   * Scores of the sequence-classification head (cross-encoders): per row,
   * `numLabels` logits of its first token's vector.
   *
   * @param rows The inputs.
   * @returns Per row, the logits.
   * @throws {TypeError} When the checkpoint has no classification head.
   */
  classify(rows: readonly EncoderRow[]): Float32Array[];
}

/** Options of {@link buildEncoder}. */
export interface EncoderOptions {
  /** The tokenizer. */
  tokenizer?: Tokenizer;
  /** Display name. @default {the family} */
  name?: string;
}

interface LayerWeights {
  q?: Tensor;
  k?: Tensor;
  v?: Tensor;
  qkv?: Tensor;
  bqkv?: Float32Array;
  bq?: Float32Array;
  bk?: Float32Array;
  bv?: Float32Array;
  o: Tensor;
  bo?: Float32Array;
  attnNorm?: [Float32Array, Float32Array | undefined];
  ffnNorm?: [Float32Array, Float32Array | undefined];
  up: Tensor;
  bup?: Float32Array;
  gate?: Tensor;
  bgate?: Float32Array;
  down: Tensor;
  bdown?: Float32Array;
  global: boolean;
}

/**
 * Builds an encoder from tensors under llama.cpp's GGUF names
 * (`token_embd.weight`, `blk.0.attn_q.weight` …; see
 * `encoderTensorName`). Matrices stay in their dtype (the kernels read
 * F32/F16/BF16/Q8_0/Q4_0/Q4_K/Q6_K); tables, norms and biases are decoded to F32.
 *
 * @param config The configuration.
 * @param tensors The weights by GGUF name.
 * @param options Tokenizer and name.
 * @returns The encoder.
 * @throws {TypeError} For a missing or mis-shaped weight (the message names it).
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { buildEncoder, encoderConfigFromHf } from "@modelhost/modelhost/models";
 * const config = encoderConfigFromHf({
 *   model_type: "bert", vocab_size: 10, hidden_size: 4, num_hidden_layers: 1,
 *   num_attention_heads: 2, intermediate_size: 8,
 * });
 * assertThrows(() => buildEncoder(config, new Map()), TypeError, '"token_embd.weight" is missing');
 * ```
 */
export function buildEncoder(
  config: EncoderConfig,
  tensors: ReadonlyMap<string, Tensor>,
  options: EncoderOptions = {},
): Encoder {
  const d = config.hiddenSize;
  const get = (name: string, shape: number[]): Tensor => {
    const t = tensors.get(name);
    if (!t) throw new TypeError(`Encoder: weight "${name}" is missing`);
    if (
      t.shape.length !== shape.length || t.shape.some((s, i) => s !== shape[i])
    ) {
      throw new TypeError(
        `Encoder: weight "${name}" has shape [${
          t.shape.join(", ")
        }], expected [${shape.join(", ")}]`,
      );
    }
    return t;
  };
  const vec = (name: string, n: number): Float32Array =>
    toFloat32(get(name, [n]));
  const opt = (name: string, n: number): Float32Array | undefined =>
    tensors.has(name) ? vec(name, n) : undefined;
  const norm = (
    name: string,
  ): [Float32Array, Float32Array | undefined] => [
    vec(`${name}.weight`, d),
    opt(`${name}.bias`, d),
  ];
  const tokEmb = toFloat32(get("token_embd.weight", [config.vocabSize, d]));
  const posEmb = config.positions === "absolute"
    ? toFloat32(
      get("position_embd.weight", [
        tensors.get("position_embd.weight")?.shape[0] ?? 0,
        d,
      ]),
    )
    : undefined;
  const posRows = posEmb ? posEmb.length / d : 0;
  if (posEmb && posRows < config.positionOffset + config.maxPositions) {
    throw new TypeError(
      `Encoder: "position_embd.weight" has ${posRows} rows, positions need ${
        config.positionOffset + config.maxPositions
      }`,
    );
  }
  const typeEmb = config.typeVocabSize > 0 && tensors.has("token_types.weight")
    ? toFloat32(get("token_types.weight", [config.typeVocabSize, d]))
    : undefined;
  const embNorm = norm("token_embd_norm");
  const outNorm = config.norm === "pre" ? norm("output_norm") : undefined;
  const I = config.intermediateSize;
  const layers: LayerWeights[] = [];
  for (let i = 0; i < config.numLayers; i++) {
    const p = `blk.${i}.`;
    const fused = tensors.has(`${p}attn_qkv.weight`);
    const gated = config.mlp === "geglu";
    layers.push({
      ...(fused
        ? {
          qkv: get(`${p}attn_qkv.weight`, [3 * d, d]),
          bqkv: opt(`${p}attn_qkv.bias`, 3 * d),
        }
        : {
          q: get(`${p}attn_q.weight`, [d, d]),
          k: get(`${p}attn_k.weight`, [d, d]),
          v: get(`${p}attn_v.weight`, [d, d]),
          bq: opt(`${p}attn_q.bias`, d),
          bk: opt(`${p}attn_k.bias`, d),
          bv: opt(`${p}attn_v.bias`, d),
        }),
      o: get(`${p}attn_output.weight`, [d, d]),
      bo: opt(`${p}attn_output.bias`, d),
      ...(config.norm === "post"
        ? {
          attnNorm: norm(`${p}attn_output_norm`),
          ffnNorm: norm(`${p}layer_output_norm`),
        }
        : {
          attnNorm: tensors.has(`${p}attn_norm.weight`)
            ? norm(`${p}attn_norm`)
            : undefined,
          ffnNorm: norm(`${p}ffn_norm`),
        }),
      up: get(`${p}ffn_up.weight`, [gated ? 2 * I : I, d]),
      bup: opt(`${p}ffn_up.bias`, gated ? 2 * I : I),
      ...(config.mlp === "swiglu"
        ? {
          gate: get(`${p}ffn_gate.weight`, [I, d]),
          bgate: opt(`${p}ffn_gate.bias`, I),
        }
        : {}),
      down: get(`${p}ffn_down.weight`, [d, I]),
      bdown: opt(`${p}ffn_down.bias`, d),
      global: isGlobalLayer(config, i),
    });
  }
  const head = config.numLabels > 0
    ? {
      dense: get("cls.weight", [d, d]),
      bias: opt("cls.bias", d),
      out: get("cls.output.weight", [config.numLabels, d]),
      outBias: opt("cls.output.bias", config.numLabels),
    }
    : undefined;
  const heads = config.numHeads, hd = d / heads;
  const ropes = new Map<number, RopeTable>();
  const rope = (theta: number): RopeTable => {
    let r = ropes.get(theta);
    if (!r) {
      r = ropeTable(ropeFrequencies(hd, theta), config.maxPositions);
      ropes.set(theta, r);
    }
    return r;
  };
  const gelu = config.activation === "gelu"
    ? geluErfApprox
    : (x: number) => activate("gelu_tanh", x);

  /** The rows' token + position + type embeddings (before their norm) into `x`. */
  function sumEmbeddings(rows: readonly EncoderRow[], x: Float32Array): void {
    let t = 0;
    for (const [r, row] of rows.entries()) {
      if (row.ids.length === 0) {
        throw new RangeError(`Encoder: row ${r} has no tokens`);
      }
      if (row.ids.length > config.maxPositions) {
        throw new RangeError(
          `Encoder: row ${r} has ${row.ids.length} tokens; the model takes ${config.maxPositions}`,
        );
      }
      for (const [j, id] of row.ids.entries()) {
        if (!Number.isInteger(id) || id < 0 || id >= config.vocabSize) {
          throw new RangeError(
            `Encoder: row ${r} token ${j} is id ${id}, outside 0..${
              config.vocabSize - 1
            }`,
          );
        }
        const o = (t + j) * d;
        x.set(tokEmb.subarray(id * d, id * d + d), o);
        if (posEmb) {
          const po = (config.positionOffset + j) * d;
          for (let c = 0; c < d; c++) x[o + c] += posEmb[po + c];
        }
        if (typeEmb) {
          const ty = row.types?.[j] ?? 0;
          if (!Number.isInteger(ty) || ty < 0 || ty >= config.typeVocabSize) {
            throw new RangeError(
              `Encoder: row ${r} token ${j} has type ${ty}, outside 0..${
                config.typeVocabSize - 1
              }`,
            );
          }
          const yo = ty * d;
          for (let c = 0; c < d; c++) x[o + c] += typeEmb[yo + c];
        }
      }
      t += row.ids.length;
    }
  }

  function embedRows(rows: readonly EncoderRow[], total: number): Float32Array {
    const x = new Float32Array(total * d);
    sumEmbeddings(rows, x);
    return layerNorm(x, total, d, embNorm[0], embNorm[1], config.normEps);
  }

  function attention(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    lens: number[],
    global: boolean,
  ): Float32Array {
    // a native BLAS takes the per-head products where one is installed
    const blas = global ? currentF32GemmBackend() : null;
    if (blas?.sgemm) return attendRowsGemm(blas, q, k, v, lens, heads, hd);
    const out = new Float32Array(q.length);
    const longest = Math.max(...lens);
    const cache = global ? createKvCache(1, heads, hd, longest) : undefined;
    let t = 0;
    for (const T of lens) {
      const a = t * d, b = (t + T) * d;
      const qs = q.subarray(a, b), ks = k.subarray(a, b), vs = v.subarray(a, b);
      if (cache) {
        cache.length = 0;
        appendKv(cache, ks, vs, T);
        out.set(attend(qs, cache, { heads, seq: T, causal: false }), a);
      } else {
        out.set(
          windowAttention(qs, ks, vs, T, heads, hd, config.localWindow),
          a,
        );
      }
      t += T;
    }
    return out;
  }

  const postNorm = config.norm === "post" && config.positions !== "rotary" &&
    config.mlp !== "geglu" && config.activation === "gelu" &&
    layers.every((L) => L.global && !L.gate);
  const postDims = {
    hidden: d,
    heads,
    inner: I,
    eps: config.normEps,
    inputNorm: embNorm,
  };

  function run(rows: readonly EncoderRow[]): Float32Array {
    const lens = rows.map((r) => r.ids.length);
    const N = lens.reduce((a, b) => a + b, 0);
    // BERT-style stacks on a native BLAS: every activation in kernel memory
    const stack = postNorm &&
      postNormStackGemm((x) => sumEmbeddings(rows, x), lens, layers, postDims);
    if (stack) return stack;
    let x = embedRows(rows, N);
    for (const L of layers) {
      const h = config.norm === "pre" && L.attnNorm
        ? layerNorm(x, N, d, L.attnNorm[0], L.attnNorm[1], config.normEps)
        : x;
      let q: Float32Array, k: Float32Array, v: Float32Array;
      if (L.qkv) {
        const qkv = linear(h, N, L.qkv, L.bqkv);
        q = new Float32Array(N * d);
        k = new Float32Array(N * d);
        v = new Float32Array(N * d);
        for (let t = 0; t < N; t++) {
          const o = t * 3 * d;
          q.set(qkv.subarray(o, o + d), t * d);
          k.set(qkv.subarray(o + d, o + 2 * d), t * d);
          v.set(qkv.subarray(o + 2 * d, o + 3 * d), t * d);
        }
      } else {
        [q, k, v] = linearMany(h, N, [L.q!, L.k!, L.v!], [L.bq, L.bk, L.bv]);
      }
      if (config.positions === "rotary") {
        const table = rope(L.global ? config.ropeTheta : config.localRopeTheta);
        let t = 0;
        for (const T of lens) {
          const a = t * d, b = (t + T) * d;
          applyRope(q.subarray(a, b), 1, T, heads, table, "neox", 0);
          applyRope(k.subarray(a, b), 1, T, heads, table, "neox", 0);
          t += T;
        }
      }
      const ctx = attention(q, k, v, lens, L.global);
      const o = linear(ctx, N, L.o, L.bo);
      x = config.norm === "post"
        ? addLayerNorm(
          o,
          x,
          N,
          d,
          L.attnNorm![0],
          L.attnNorm![1],
          config.normEps,
        )
        : addInPlace(o, x);
      const f = config.norm === "pre"
        ? layerNorm(x, N, d, L.ffnNorm![0], L.ffnNorm![1], config.normEps)
        : x;
      // GELU MLP on a native BLAS, hidden activations in kernel memory
      const fused = !L.gate && config.mlp !== "geglu" &&
          config.activation === "gelu"
        ? geluMlpGemm(f, N, L.up, L.bup, L.down, L.bdown)
        : null;
      if (fused) {
        x = config.norm === "post"
          ? addLayerNorm(
            fused,
            x,
            N,
            d,
            L.ffnNorm![0],
            L.ffnNorm![1],
            config.normEps,
          )
          : addInPlace(fused, x);
        continue;
      }
      let g: Float32Array;
      const [u, gt] = L.gate
        ? linearMany(f, N, [L.up, L.gate], [L.bup, L.bgate])
        : [linear(f, N, L.up, L.bup)];
      if (gt) {
        g = u;
        for (let i = 0; i < g.length; i++) {
          const z = gt[i];
          g[i] *= z / (1 + Math.exp(-z));
        }
      } else if (config.mlp === "geglu") {
        g = new Float32Array(N * I);
        for (let t = 0; t < N; t++) {
          const src = t * 2 * I, dst = t * I;
          for (let c = 0; c < I; c++) {
            g[dst + c] = gelu(u[src + c]) * u[src + I + c];
          }
        }
      } else {
        if (config.activation === "gelu") geluErfInPlace(u);
        else for (let i = 0; i < u.length; i++) u[i] = gelu(u[i]);
        g = u;
      }
      const y = linear(g, N, L.down, L.bdown);
      x = config.norm === "post"
        ? addLayerNorm(y, x, N, d, L.ffnNorm![0], L.ffnNorm![1], config.normEps)
        : addInPlace(y, x);
    }
    if (outNorm) x = layerNorm(x, N, d, outNorm[0], outNorm[1], config.normEps);
    return x;
  }

  function forward(rows: readonly EncoderRow[]): Float32Array[] {
    if (rows.length === 0) return [];
    const x = run(rows);
    const out: Float32Array[] = [];
    let t = 0;
    for (const r of rows) {
      out.push(x.slice(t * d, (t + r.ids.length) * d));
      t += r.ids.length;
    }
    return out;
  }

  function classify(rows: readonly EncoderRow[]): Float32Array[] {
    if (!head) {
      throw new TypeError(
        `Encoder ${name}: no sequence-classification head (a cross-encoder's config names …ForSequenceClassification)`,
      );
    }
    if (rows.length === 0) return [];
    const x = run(rows);
    const first = new Float32Array(rows.length * d);
    let t = 0;
    for (const [i, r] of rows.entries()) {
      first.set(x.subarray(t * d, t * d + d), i * d);
      t += r.ids.length;
    }
    const p = linear(first, rows.length, head.dense, head.bias);
    for (let i = 0; i < p.length; i++) p[i] = Math.tanh(p[i]);
    const logits = linear(p, rows.length, head.out, head.outBias);
    const n = config.numLabels;
    return rows.map((_, i) => logits.slice(i * n, i * n + n));
  }

  const name = options.name ?? config.family;
  return {
    config,
    name,
    tokenizer: options.tokenizer,
    forward,
    classify,
  };
}

/** `y += x`, returning `y`. */
function addInPlace(y: Float32Array, x: Float32Array): Float32Array {
  for (let i = 0; i < y.length; i++) y[i] += x[i];
  return y;
}

/** Bidirectional attention within a window: a query sees keys at distance ≤ `window`. */
function windowAttention(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  T: number,
  heads: number,
  hd: number,
  window: number,
): Float32Array {
  const d = heads * hd;
  const out = new Float32Array(T * d);
  const scale = 1 / Math.sqrt(hd);
  const s = new Float64Array(T);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < T; i++) {
      const lo = Math.max(0, i - window), hi = Math.min(T - 1, i + window);
      let max = -Infinity;
      for (let j = lo; j <= hi; j++) {
        let dot = 0;
        for (let c = 0; c < hd; c++) {
          dot += q[i * d + h * hd + c] * k[j * d + h * hd + c];
        }
        s[j] = dot * scale;
        if (s[j] > max) max = s[j];
      }
      let sum = 0;
      for (let j = lo; j <= hi; j++) {
        s[j] = Math.exp(s[j] - max);
        sum += s[j];
      }
      const o = i * d + h * hd;
      for (let j = lo; j <= hi; j++) {
        const w = s[j] / sum;
        for (let c = 0; c < hd; c++) out[o + c] += w * v[j * d + h * hd + c];
      }
    }
  }
  return out;
}
