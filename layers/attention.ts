/**
 * The `multi_head_attention` layer (alias `mha`): q/k/v projections,
 * rotary position embeddings, grouped-query scaled dot-product attention
 * with a causal (optionally sliding-window) mask, and the output
 * projection. Input `[batch, seq, d_model]` (or `[seq, d_model]` for one
 * sequence); output of the same shape.
 *
 * With a {@link LayerState}, the layer keeps a KV cache in `state.kv`
 * ({@link KvCache}): each call appends its tokens at the next absolute
 * positions, so a prefill of T tokens and T single-token calls give the
 * same outputs. Without a state every call starts at position 0.
 *
 * Weights (names relative to the layer's scope, matrices `[out, in]`):
 * `q_proj.weight` `[num_heads·head_dim, d_model]`, `k_proj.weight` and
 * `v_proj.weight` `[num_kv_heads·head_dim, d_model]`, `o_proj.weight`
 * `[d_model, num_heads·head_dim]`, and `*.bias` where enabled.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { multiHeadAttentionLayer } from "@modelhost/modelhost/layers";
 * import { createRng, createScope, floatTensor, tensorFromF32 } from "@modelhost/modelhost/core";
 * const ctx = { path: "layers[0]", parseChild: () => { throw new Error(); } };
 * const cfg = multiHeadAttentionLayer.parse({ type: "mha", d_model: 8, num_heads: 2 }, ctx);
 * const init = multiHeadAttentionLayer.init!(cfg, createRng(1));
 * const tensors = new Map([...init].map(([n, v]) => {
 *   const spec = multiHeadAttentionLayer.params(cfg).find((p) => p.name === n)!;
 *   return [n, tensorFromF32(n, v, spec.shape)] as const;
 * }));
 * const layer = multiHeadAttentionLayer.build(cfg, createScope(tensors));
 * const y = layer.forward(floatTensor(new Float32Array(2 * 3 * 8).fill(0.5), [2, 3, 8]));
 * assert(y.shape.join() === "2,3,8");
 * ```
 *
 * @module
 */

import type { LayerConfig } from "../core/model.ts";
import type {
  ForwardContext,
  Layer,
  LayerPlugin,
  LayerState,
  OnnxBuilder,
  ParamSpec,
  Scope,
  SequenceRows,
} from "../core/plugin.ts";
import type { Rng } from "../core/rng.ts";
import { type FloatTensor, floatTensor, type Tensor } from "../core/tensor.ts";
import {
  appendKv,
  attend,
  createKvCache,
  type KvCache,
} from "../kernels/attention.ts";
import { linear, linearMany } from "../kernels/linear.ts";
import {
  applyRope,
  ropeFrequencies,
  type RopeTable,
  ropeTable,
} from "../kernels/rope.ts";
import {
  ATTENTION_FIELDS,
  type AttentionConfig,
  attentionFieldsToJSON,
  parseAttentionFields,
} from "./_attention_config.ts";
import { rmsNorm } from "../kernels/norms.ts";
import {
  ints,
  linearOnnx,
  maskScoresOnnx,
  rmsNormOnnx,
  scalar,
  sliceLast,
} from "./_onnx.ts";

export type { AttentionConfig } from "./_attention_config.ts";
export type { KvCache } from "../kernels/attention.ts";
export type { RopeScaling, RopeStyle } from "../kernels/rope.ts";

/** The four projections with their shapes and bias flags. */
function projections(
  cfg: AttentionConfig,
): { name: string; out: number; in: number; bias: boolean }[] {
  const qDim = cfg.num_heads * cfg.head_dim;
  const kvDim = cfg.num_kv_heads * cfg.head_dim;
  return [
    { name: "q_proj", out: qDim, in: cfg.d_model, bias: cfg.q_bias },
    { name: "k_proj", out: kvDim, in: cfg.d_model, bias: cfg.k_bias },
    { name: "v_proj", out: kvDim, in: cfg.d_model, bias: cfg.v_bias },
    { name: "o_proj", out: cfg.d_model, in: qDim, bias: cfg.o_bias },
  ];
}

/** The q/k norm weights (`q_norm.weight`, `k_norm.weight`) and their lengths. */
function qkNorms(cfg: AttentionConfig): { name: string; size: number }[] {
  if (cfg.qk_norm === null) return [];
  const D = cfg.head_dim;
  return cfg.qk_norm === "head"
    ? [{ name: "q_norm", size: D }, { name: "k_norm", size: D }]
    : [
      { name: "q_norm", size: cfg.num_heads * D },
      { name: "k_norm", size: cfg.num_kv_heads * D },
    ];
}

/** Splits a `[batch, seq, d]` or `[seq, d]` input into batch and sequence length. */
function sequenceShape(
  x: FloatTensor,
  d: number,
  what: string,
): { batch: number; seq: number } {
  const s = x.shape;
  if ((s.length !== 2 && s.length !== 3) || s[s.length - 1] !== d) {
    throw new TypeError(
      `Cannot run ${what}: input has shape [${
        s.join(", ")
      }], expected [batch, seq, ${d}] or [seq, ${d}]`,
    );
  }
  return s.length === 3 ? { batch: s[0], seq: s[1] } : { batch: 1, seq: s[0] };
}

/**
 * The cache kept in `state.kv`, created on first use; throws when a state
 * made for another batch size or head layout is passed in.
 */
function cacheOf(
  state: LayerState,
  batch: number,
  cfg: AttentionConfig,
  seq: number,
): KvCache {
  const kv = state.kv as KvCache | undefined;
  if (kv === undefined) {
    const c = createKvCache(
      batch,
      cfg.num_kv_heads,
      cfg.head_dim,
      Math.max(16, seq),
    );
    state.kv = c;
    return c;
  }
  if (
    kv.batch !== batch || kv.kvHeads !== cfg.num_kv_heads ||
    kv.headDim !== cfg.head_dim
  ) {
    throw new TypeError(
      `Cannot continue the KV cache: it holds batch ${kv.batch} × ${kv.kvHeads} heads × ${kv.headDim}, the call has batch ${batch} × ${cfg.num_kv_heads} heads × ${cfg.head_dim} (use a fresh state per sequence batch)`,
    );
  }
  return kv;
}

function uniformInit(rng: Rng, n: number, fanIn: number): Float32Array {
  const bound = 1 / Math.sqrt(fanIn);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (2 * rng.next() - 1) * bound;
  return out;
}

/** Positions the exported RoPE tables cover unless `maxSequenceLength` says otherwise. */
export const ONNX_MAX_SEQUENCE = 2048;

/**
 * RoPE on `x` `[batch, seq, heads, head_dim]` for positions 0 … seq − 1:
 * `cos`/`sin` are `[seq, 1, half]` slices of the stored tables.
 */
function ropeOnnx(
  g: OnnxBuilder,
  x: string,
  cos: string,
  sin: string,
  half: number,
  style: "neox" | "interleaved",
): string {
  const rotate = (a: string, b: string, c: string, s: string) => [
    g.op("Sub", [g.op("Mul", [a, c]), g.op("Mul", [b, s])]),
    g.op("Add", [g.op("Mul", [b, c]), g.op("Mul", [a, s])]),
  ];
  if (style === "neox") {
    const [a, b] = rotate(
      sliceLast(g, x, 0, half),
      sliceLast(g, x, half, 2 * half),
      cos,
      sin,
    );
    return g.op("Concat", [a, b], { axis: -1 });
  }
  // Interleaved pairs (2i, 2i+1): view the head as [half, 2].
  const pairs = g.op("Reshape", [x, ints(g, [0, 0, 0, half, 2])]);
  const c = g.op("Unsqueeze", [cos, ints(g, [-1])]);
  const s = g.op("Unsqueeze", [sin, ints(g, [-1])]);
  const [a, b] = rotate(
    sliceLast(g, pairs, 0, 1),
    sliceLast(g, pairs, 1, 2),
    c,
    s,
  );
  return g.op("Reshape", [
    g.op("Concat", [a, b], { axis: -1 }),
    ints(g, [0, 0, 0, 2 * half]),
  ]);
}

/**
 * Lowers attention over a whole `[batch, seq, d_model]` input (a prefill:
 * positions 0 … seq − 1, no cache): projections, RoPE from stored cos/sin
 * tables sliced to the sequence length, grouped-query scores (the key/value
 * heads are repeated by broadcasting a `[batch, kv_heads, group, seq, dim]`
 * view), the causal / sliding-window mask built from `Range`, `Softmax`,
 * and the output projection.
 *
 * @param g The builder.
 * @param cfg The attention config.
 * @param weights The layer's weights (`q_proj.weight`, …).
 * @param input The `[batch, seq, d_model]` input.
 * @returns The `[batch, seq, d_model]` output.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { attentionOnnx, multiHeadAttentionLayer } from "./attention.ts";
 * import { createRng, createScope, tensorFromF32 } from "@modelhost/modelhost/core";
 * import { GraphBuilder } from "../formats/onnx/_graph.ts";
 * const ctx = { path: "layers[0]", parseChild: () => { throw new Error(); } };
 * const cfg = multiHeadAttentionLayer.parse({ type: "mha", d_model: 8, num_heads: 2 }, ctx);
 * const init = multiHeadAttentionLayer.init!(cfg, createRng(1));
 * const specs = multiHeadAttentionLayer.params(cfg);
 * const tensors = new Map(specs.map((s) => [s.name, tensorFromF32(s.name, init.get(s.name)!, s.shape)]));
 * const g = new GraphBuilder({ opset: 17, weightDtype: "keep", options: { maxSequenceLength: 16 } });
 * const x = g.addInput("x", 1, ["batch", "sequence", 8]);
 * attentionOnnx(g, cfg, createScope(tensors), x);
 * assert(g.nodes.filter((n) => n.opType === "Softmax").length === 1);
 * ```
 */
export function attentionOnnx(
  g: OnnxBuilder,
  cfg: AttentionConfig,
  weights: Scope,
  input: string,
): string {
  const [qp, kp, vp, op] = projections(cfg);
  const proj = (p: ReturnType<typeof projections>[number], x: string) =>
    linearOnnx(
      g,
      weights,
      x,
      `${p.name}.weight`,
      p.bias ? `${p.name}.bias` : undefined,
      [p.out, p.in],
    );
  const H = cfg.num_heads, KV = cfg.num_kv_heads, D = cfg.head_dim;
  const heads = (x: string, n: number) =>
    g.op("Reshape", [x, ints(g, [0, 0, n, D])]);
  let qFlat = proj(qp, input), kFlat = proj(kp, input);
  if (cfg.qk_norm === "full") {
    const [qn, kn] = qkNorms(cfg);
    const w = (n: { name: string; size: number }) =>
      g.weight(weights, `${n.name}.weight`, { shape: [n.size] });
    qFlat = rmsNormOnnx(g, qFlat, w(qn), cfg.qk_norm_eps);
    kFlat = rmsNormOnnx(g, kFlat, w(kn), cfg.qk_norm_eps);
  }
  let q = heads(qFlat, H);
  let k = heads(kFlat, KV);
  if (cfg.qk_norm === "head") {
    const w = (n: string) => g.weight(weights, `${n}.weight`, { shape: [D] });
    q = rmsNormOnnx(g, q, w("q_norm"), cfg.qk_norm_eps);
    k = rmsNormOnnx(g, k, w("k_norm"), cfg.qk_norm_eps);
  }
  const v = heads(proj(vp, input), KV);
  const shape = g.op("Shape", [input]);
  if (cfg.use_rope) {
    const limit = g.options.maxSequenceLength ?? ONNX_MAX_SEQUENCE;
    const half = D / 2;
    const table = ropeTable(
      ropeFrequencies(D, cfg.rope_theta, cfg.rope_scaling),
      limit as number,
    );
    const seqLen = g.op("Slice", [shape, ints(g, [1]), ints(g, [2])]);
    const rows = (t: Float32Array) =>
      g.op("Unsqueeze", [
        g.op("Slice", [
          g.constant("F32", [table.length, half], t),
          ints(g, [0]),
          seqLen,
          ints(g, [0]),
        ]),
        ints(g, [1]),
      ]);
    const cos = rows(table.cos), sin = rows(table.sin);
    q = ropeOnnx(g, q, cos, sin, half, cfg.rope_style);
    k = ropeOnnx(g, k, cos, sin, half, cfg.rope_style);
  }
  // [batch, heads, seq, dim]; with groups, queries viewed as [batch, kv, group, seq, dim].
  const group = H / KV;
  let qh = g.op("Transpose", [q], { perm: [0, 2, 1, 3] });
  let kt = g.op("Transpose", [k], { perm: [0, 2, 3, 1] });
  let vh = g.op("Transpose", [v], { perm: [0, 2, 1, 3] });
  if (group > 1) {
    qh = g.op("Reshape", [qh, ints(g, [0, KV, group, -1, D])]);
    kt = g.op("Unsqueeze", [kt, ints(g, [2])]);
    vh = g.op("Unsqueeze", [vh, ints(g, [2])]);
  }
  let scores = g.op("Mul", [
    g.op("MatMul", [qh, kt]),
    scalar(g, cfg.attention_scale ?? 1 / Math.sqrt(D)),
  ]);
  scores = maskScoresOnnx(g, shape, scores, cfg.causal, cfg.sliding_window);
  const masked = g.options.attentionMask === true;
  if (masked) {
    if (!g.sharedInput) {
      throw g.refuse("attention", "multi_head_attention", "no graph inputs");
    }
    // [batch, seq] → [batch, 1, (1,) 1, seq]: padded keys hidden from all queries
    const mask = g.sharedInput("attention_mask", 7, ["batch", "sequence"]);
    const pad = g.op("Equal", [mask, g.constant("I64", [], [0])]);
    const axes = group > 1 ? [1, 2, 3] : [1, 2];
    const hidden = g.op("Unsqueeze", [pad, ints(g, axes)]);
    scores = g.op("Where", [hidden, scalar(g, -Infinity), scores]);
  }
  let p = g.op("Softmax", [scores], { axis: -1 });
  // a query that sees no key: zeros (Softmax of all −∞ is NaN)
  if (masked) p = g.op("Where", [g.op("IsNaN", [p]), scalar(g, 0), p]);
  let ctx = g.op("MatMul", [p, vh]);
  if (group > 1) ctx = g.op("Reshape", [ctx, ints(g, [0, H, -1, D])]);
  const merged = g.op("Reshape", [
    g.op("Transpose", [ctx], { perm: [0, 2, 1, 3] }),
    ints(g, [0, 0, H * D]),
  ]);
  return proj(op, merged);
}

/**
 * The attention layer plugin. Config fields (README has the table):
 * `d_model` (inferred from the previous layer when absent), `num_heads`,
 * `num_kv_heads` (default `num_heads`), `head_dim` (default
 * `d_model / num_heads`), `causal` (true), `use_rope` (true), `rope_theta`
 * (10000), `rope_style` (`"neox"` | `"interleaved"`), `rope_scaling` (null,
 * `{rope_type: "linear", factor}` or Hugging Face's llama3 object),
 * `sliding_window` (null), `bias` and per-projection `q_bias`, `k_bias`,
 * `v_bias`, `o_bias` (false).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { multiHeadAttentionLayer } from "@modelhost/modelhost/layers";
 * const ctx = { path: "layers[0]", parseChild: () => { throw new Error(); } };
 * const cfg = multiHeadAttentionLayer.parse(
 *   { type: "multi_head_attention", d_model: 64, num_heads: 8, num_kv_heads: 2 },
 *   ctx,
 * );
 * assert(multiHeadAttentionLayer.params(cfg)[1].shape.join() === "16,64");
 * ```
 */
export const multiHeadAttentionLayer: LayerPlugin<AttentionConfig> = {
  kind: "layer",
  type: "multi_head_attention",
  aliases: ["mha"],
  description:
    "Multi-head / grouped-query self-attention with RoPE, causal or sliding-window mask and a KV cache",
  parse(json: LayerConfig, ctx): AttentionConfig {
    return parseAttentionFields(
      json,
      ctx,
      "multi_head_attention",
      ATTENTION_FIELDS,
    );
  },
  inputSize: (cfg) => cfg.d_model,
  outputSize: (cfg) => cfg.d_model,
  toJSON: (cfg) => ({
    type: "multi_head_attention",
    ...attentionFieldsToJSON(cfg),
  }),
  params(cfg): ParamSpec[] {
    const out: ParamSpec[] = [];
    for (const p of projections(cfg)) {
      out.push({
        name: `${p.name}.weight`,
        shape: [p.out, p.in],
        init: "uniform",
      });
      if (p.bias) {
        out.push({ name: `${p.name}.bias`, shape: [p.out], init: "uniform" });
      }
    }
    for (const n of qkNorms(cfg)) {
      out.push({ name: `${n.name}.weight`, shape: [n.size], init: "ones" });
    }
    return out;
  },
  init(cfg, rng): Map<string, Float32Array> {
    // PyTorch's nn.Linear default: U(−1/√fan_in, 1/√fan_in) for weight and bias.
    const out = new Map<string, Float32Array>();
    for (const p of projections(cfg)) {
      out.set(`${p.name}.weight`, uniformInit(rng, p.out * p.in, p.in));
      if (p.bias) out.set(`${p.name}.bias`, uniformInit(rng, p.out, p.in));
    }
    for (const n of qkNorms(cfg)) {
      out.set(`${n.name}.weight`, new Float32Array(n.size).fill(1));
    }
    return out;
  },
  build(cfg, weights: Scope): Layer {
    const bound = projections(cfg).map((p) => ({
      w: weights.get(`${p.name}.weight`, [p.out, p.in]) as Tensor,
      b: p.bias ? weights.getF32(`${p.name}.bias`, [p.out]) : undefined,
    }));
    const [q, k, v, o] = bound;
    const [qNorm, kNorm] = qkNorms(cfg).map((n) =>
      weights.getF32(`${n.name}.weight`, [n.size])
    );
    /** The q/k RMSNorm, in place on `rows` projected rows. */
    const normQk = (qs: Float32Array, ks: Float32Array) => {
      if (!qNorm) return;
      const D = cfg.head_dim, eps = cfg.qk_norm_eps;
      const [qw, kw] = cfg.qk_norm === "head"
        ? [D, D]
        : [cfg.num_heads * D, cfg.num_kv_heads * D];
      qs.set(rmsNorm(qs, qs.length / qw, qw, qNorm, eps));
      ks.set(rmsNorm(ks, ks.length / kw, kw, kNorm, eps));
    };
    const freq = cfg.use_rope
      ? ropeFrequencies(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling)
      : undefined;
    // cos/sin for positions seen so far; regrown (doubling) when a call goes past it.
    let table: RopeTable | undefined;
    const tableFor = (positions: number): RopeTable => {
      if (!table || table.length < positions) {
        table = ropeTable(
          freq!,
          Math.max(positions, 2 * (table?.length ?? 0), 64),
        );
      }
      return table;
    };
    const what = `multi_head_attention at "${weights.prefix}"`;
    // a window on both sides runs on the masked path (the kernel's window is causal)
    const windowedBothWays = !cfg.causal && cfg.sliding_window !== null;
    /**
     * RoPE, cache append and attention for `seq` rows of one sequence
     * (or `batch` sequences of `seq` rows sharing one cache).
     */
    const attendRows = (
      qs: Float32Array,
      ks: Float32Array,
      vs: Float32Array,
      cache: KvCache,
      batch: number,
      seq: number,
    ): Float32Array => {
      if (windowedBothWays) {
        throw new TypeError(
          `Cannot run ${what} with a KV cache or per-sequence states: a sliding window that is not causal runs on whole sequences (call forward without a state)`,
        );
      }
      const start = cache.length;
      normQk(qs, ks);
      if (freq) {
        const t = tableFor(start + seq);
        applyRope(qs, batch, seq, cfg.num_heads, t, cfg.rope_style, start);
        applyRope(ks, batch, seq, cfg.num_kv_heads, t, cfg.rope_style, start);
      }
      appendKv(cache, ks, vs, seq);
      return attend(qs, cache, {
        heads: cfg.num_heads,
        seq,
        start,
        causal: cfg.causal,
        window: cfg.sliding_window,
        ...(cfg.attention_scale !== null ? { scale: cfg.attention_scale } : {}),
      });
    };
    const qDim = cfg.num_heads * cfg.head_dim;
    const kvDim = cfg.num_kv_heads * cfg.head_dim;
    /** Rows of several sequences, each against its own state (continuous batching). */
    const forwardSequences = (
      x: FloatTensor,
      sequences: readonly SequenceRows[],
    ): FloatTensor => {
      const rows = x.data.length / cfg.d_model;
      if (
        x.shape.length !== 2 && !(x.shape.length === 3 && x.shape[0] === 1) ||
        !Number.isInteger(rows) ||
        sequences.reduce((a, s) => a + s.rows, 0) !== rows
      ) {
        throw new TypeError(
          `Cannot run ${what} on sequences of ${
            sequences.map((s) => s.rows).join(" + ")
          } rows: the input has shape [${x.shape.join(", ")}]`,
        );
      }
      const [qs, ks, vs] = linearMany(
        x.data,
        rows,
        [q.w, k.w, v.w],
        [q.b, k.b, v.b],
      );
      const heads = new Float32Array(rows * qDim);
      let r = 0;
      for (const s of sequences) {
        if (s.rows === 0) continue;
        const out = attendRows(
          qs.subarray(r * qDim, (r + s.rows) * qDim),
          ks.subarray(r * kvDim, (r + s.rows) * kvDim),
          vs.subarray(r * kvDim, (r + s.rows) * kvDim),
          cacheOf(s.state, 1, cfg, s.rows),
          1,
          s.rows,
        );
        heads.set(out, r * qDim);
        r += s.rows;
      }
      return floatTensor(linear(heads, rows, o.w, o.b), [...x.shape]);
    };
    /** A padded batch with a key-padding mask (no cache: positions from 0). */
    const forwardMasked = (
      x: FloatTensor,
      batch: number,
      seq: number,
      mask: ArrayLike<number>,
      state: LayerState | undefined,
    ): FloatTensor => {
      if (mask.length !== batch * seq) {
        throw new TypeError(
          `Cannot run ${what}: the attention mask has ${mask.length} entries for a [${batch}, ${seq}] batch`,
        );
      }
      if (state) {
        throw new TypeError(
          `Cannot run ${what} with an attention mask and a KV cache (the mask is for whole padded batches)`,
        );
      }
      const rows = batch * seq;
      const [qs, ks, vs] = linearMany(
        x.data,
        rows,
        [q.w, k.w, v.w],
        [q.b, k.b, v.b],
      );
      normQk(qs, ks);
      if (freq) {
        const t = tableFor(seq);
        applyRope(qs, batch, seq, cfg.num_heads, t, cfg.rope_style, 0);
        applyRope(ks, batch, seq, cfg.num_kv_heads, t, cfg.rope_style, 0);
      }
      const heads = maskedAttention(qs, ks, vs, batch, seq, mask, cfg);
      return floatTensor(linear(heads, rows, o.w, o.b), [...x.shape]);
    };
    return {
      forward(
        x: FloatTensor,
        state?: LayerState,
        context?: ForwardContext,
      ): FloatTensor {
        if (context?.sequences) return forwardSequences(x, context.sequences);
        const { batch, seq } = sequenceShape(x, cfg.d_model, what);
        if (context?.attentionMask) {
          return forwardMasked(x, batch, seq, context.attentionMask, state);
        }
        if (windowedBothWays && !state) {
          const all = new Uint8Array(batch * seq).fill(1);
          return forwardMasked(x, batch, seq, all, undefined);
        }
        const rows = batch * seq;
        const [qs, ks, vs] = linearMany(
          x.data,
          rows,
          [q.w, k.w, v.w],
          [q.b, k.b, v.b],
        );
        const cache = state
          ? cacheOf(state, batch, cfg, seq)
          : createKvCache(batch, cfg.num_kv_heads, cfg.head_dim, seq);
        const heads = attendRows(qs, ks, vs, cache, batch, seq);
        return floatTensor(linear(heads, rows, o.w, o.b), [...x.shape]);
      },
    };
  },
  toOnnx: (g, cfg, weights, input) => attentionOnnx(g, cfg, weights, input),
};

/**
 * Old name of {@link multiHeadAttentionLayer}.
 *
 * @deprecated Use {@link multiHeadAttentionLayer}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { multiHeadAttention, multiHeadAttentionLayer } from "@modelhost/modelhost/layers";
 * assert(multiHeadAttention === multiHeadAttentionLayer);
 * ```
 */
export const multiHeadAttention: LayerPlugin<AttentionConfig> =
  multiHeadAttentionLayer;

/**
 * Scaled dot-product attention over a padded batch: `qs` `[batch, seq,
 * heads, dim]`, `ks`/`vs` `[batch, seq, kv_heads, dim]`; key j of row b is
 * visible to query i when `mask[b·seq + j]` is nonzero and, for causal
 * attention, j ≤ i; with a sliding window W, i − j < W (causal) or
 * |i − j| < W (not causal). A query without a visible key gets zeros.
 */
function maskedAttention(
  qs: Float32Array,
  ks: Float32Array,
  vs: Float32Array,
  batch: number,
  seq: number,
  mask: ArrayLike<number>,
  cfg: AttentionConfig,
): Float32Array {
  const H = cfg.num_heads, KV = cfg.num_kv_heads, D = cfg.head_dim;
  const group = H / KV;
  const scale = cfg.attention_scale ?? 1 / Math.sqrt(D);
  const out = new Float32Array(batch * seq * H * D);
  const w = new Float64Array(seq);
  const acc = new Float64Array(D);
  for (let b = 0; b < batch; b++) {
    for (let i = 0; i < seq; i++) {
      const W = cfg.sliding_window;
      const last = cfg.causal
        ? i
        : W !== null
        ? Math.min(seq - 1, i + W - 1)
        : seq - 1;
      const first = W !== null ? Math.max(0, i - W + 1) : 0;
      for (let h = 0; h < H; h++) {
        const qo = ((b * seq + i) * H + h) * D;
        const kh = Math.floor(h / group);
        let max = -Infinity;
        for (let j = first; j <= last; j++) {
          if (!mask[b * seq + j]) {
            w[j] = -Infinity;
            continue;
          }
          const ko = ((b * seq + j) * KV + kh) * D;
          let dot = 0;
          for (let d = 0; d < D; d++) dot += qs[qo + d] * ks[ko + d];
          w[j] = dot * scale;
          if (w[j] > max) max = w[j];
        }
        if (max === -Infinity) continue; // no visible key: zeros
        let sum = 0;
        acc.fill(0);
        for (let j = first; j <= last; j++) {
          if (w[j] === -Infinity) continue;
          const e = Math.exp(w[j] - max);
          sum += e;
          const vo = ((b * seq + j) * KV + kh) * D;
          for (let d = 0; d < D; d++) acc[d] += e * vs[vo + d];
        }
        for (let d = 0; d < D; d++) out[qo + d] = acc[d] / sum;
      }
    }
  }
  return out;
}
