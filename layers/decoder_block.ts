/**
 * The `decoder_block` layer: one decoder layer of the families beyond
 * Llama (Gemma 1/2/3, Phi-2, Phi-3, GPT-2, StableLM, StarCoder2), each
 * difference a field:
 *
 * ```
 * sequential:  h = x + post(attention(norm(x)));  out = h + post(mlp(norm(h)))
 * parallel:    n = norm(x);  out = x + attention(n) + mlp(n)          (Phi-2)
 * ```
 *
 * - `norm`: `"rms"` (RMSNorm) or `"layer"` (LayerNorm, with a bias when
 *   `norm_bias`); `norm_eps`.
 * - `post_norms`: Gemma 2/3's sandwich norms on the attention and MLP outputs.
 * - `qk_norm`: `"head"` for an RMSNorm over each query and key head before
 *   RoPE (Gemma 3), the same field as `multi_head_attention`'s (whose
 *   `"full"` form this layer refuses); `qk_norm_eps` defaults to `norm_eps`.
 * - `rotary_dim`: rotary on the first `rotary_dim` values of each head
 *   (partial rotary; 0 for none, as GPT-2).
 * - `attention_scale`: the dot-product multiplier, as in
 *   `multi_head_attention` (Gemma's
 *   `query_pre_attn_scalar^-½`; default `head_dim^-½`); `attn_softcap`:
 *   Gemma 2's `c·tanh(s/c)` on the scores.
 * - `mlp`: `"gated"` (`down(act(gate(x)) · up(x))`: SwiGLU with `silu`,
 *   GeGLU with `gelu_tanh`) or `"plain"` (`down(act(up(x)))`);
 *   `activation` (`silu`, `gelu`, `gelu_tanh`); `mlp_bias`.
 * - `fused_qkv`, `fused_gate_up`: one projection for q/k/v (rows q, k, v)
 *   and for gate/up (rows gate, up), as Phi-3 and GPT-2 store them.
 *
 * Weights (relative names): `attn_norm.weight` (+`.bias`),
 * `self_attn.{q,k,v,o}_proj.weight` or `self_attn.qkv_proj.weight` and
 * `self_attn.o_proj.weight` (+ biases per the `*_bias` fields),
 * `self_attn.{q,k}_norm.weight`, `attn_post_norm.weight`,
 * `mlp_norm.weight` (+`.bias`; not with `parallel`),
 * `mlp.{gate,up,down}_proj.weight` or `mlp.gate_up_proj.weight` (+
 * biases), `mlp_post_norm.weight`. The state is the KV cache (`state.kv`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { decoderBlockLayer } from "@modelhost/modelhost/layers";
 * import { createRng, createScope, floatTensor, tensorFromF32 } from "@modelhost/modelhost/core";
 * const ctx = { path: "layers[1]", parseChild: () => { throw new Error(); } };
 * const cfg = decoderBlockLayer.parse({
 *   type: "decoder_block", d_model: 8, num_heads: 2, intermediate_size: 12,
 *   norm: "layer", parallel: true, rotary_dim: 2, mlp: "plain", activation: "gelu_tanh",
 * }, ctx);
 * const init = decoderBlockLayer.init!(cfg, createRng(3));
 * const tensors = new Map(decoderBlockLayer.params(cfg).map((s) => [s.name, tensorFromF32(s.name, init.get(s.name)!, s.shape)]));
 * const block = decoderBlockLayer.build(cfg, createScope(tensors));
 * const y = block.forward(floatTensor(new Float32Array(3 * 8).fill(0.5), [3, 8]), {});
 * assert(y.shape.join() === "3,8");
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
  ParamSpec,
  Scope,
} from "../core/plugin.ts";
import type { Rng } from "../core/rng.ts";
import { type FloatTensor, floatTensor, type Tensor } from "../core/tensor.ts";
import { activate, siluMul } from "../kernels/activations.ts";
import {
  appendKv,
  attend,
  createKvCache,
  type KvCache,
} from "../kernels/attention.ts";
import { linear, linearMany } from "../kernels/linear.ts";
import { layerNorm, rmsNorm } from "../kernels/norms.ts";
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
import {
  boolField,
  choiceField,
  fieldError,
  numberField,
  optPositiveInt,
  positiveInt,
} from "./_fields.ts";
import { decoderBlockOnnx } from "./_decoder_block_onnx.ts";

/** Activations of the block's MLP. */
export type DecoderActivation = "silu" | "gelu" | "gelu_tanh";

/** Normalized `decoder_block` config. */
export interface DecoderBlockConfig extends AttentionConfig {
  /** Hidden width of the MLP. */
  intermediate_size: number;
  /** RMSNorm or LayerNorm. */
  norm: "rms" | "layer";
  /** Epsilon of every norm of the block. */
  norm_eps: number;
  /** Whether LayerNorms have a bias. */
  norm_bias: boolean;
  /** Gated (`act(gate)·up`) or plain (`act(up)`) MLP. */
  mlp: "gated" | "plain";
  /** The MLP's activation. */
  activation: DecoderActivation;
  /** Whether the MLP projections have biases. */
  mlp_bias: boolean;
  /** One `qkv_proj` instead of q/k/v. */
  fused_qkv: boolean;
  /** One `gate_up_proj` instead of gate/up. */
  fused_gate_up: boolean;
  /** Attention and MLP read the same normed input (Phi-2). */
  parallel: boolean;
  /** Norms on the attention and MLP outputs (Gemma 2/3). */
  post_norms: boolean;
  /** Rotary values per head (even; 0 = no rotary). */
  rotary_dim: number;
  /** Score soft-capping value, or null. */
  attn_softcap: number | null;
  /**
   * Per-pair divisors of the rotary frequencies (`rotary_dim / 2` values:
   * Phi-3's LongRoPE factors), or null.
   */
  rope_factors: number[] | null;
  /** Multiplier of the rotary cos/sin (LongRoPE's attention factor). */
  rope_attn_factor: number;
  /**
   * LongRoPE's long factors (`rotary_dim / 2` divisors), or null. A call
   * whose sequence reaches past `rope_long_after` positions (its last
   * position + 1, cache included) rotates its positions with these instead
   * of `rope_factors`, as transformers' `longrope` does; keys already in
   * the cache stay as they were rotated.
   */
  rope_long_factors: number[] | null;
  /** The length past which `rope_long_factors` run (LongRoPE's original context). */
  rope_long_after: number | null;
}

const BLOCK_FIELDS = [
  ...ATTENTION_FIELDS,
  "intermediate_size",
  "norm",
  "norm_eps",
  "norm_bias",
  "mlp",
  "activation",
  "mlp_bias",
  "fused_qkv",
  "fused_gate_up",
  "parallel",
  "post_norms",
  "rotary_dim",
  "attn_softcap",
  "rope_factors",
  "rope_attn_factor",
  "rope_long_factors",
  "rope_long_after",
];

function ropeFactorsField(
  o: Record<string, unknown>,
  path: string,
  rotary: number,
  key = "rope_factors",
): number[] | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  if (
    !Array.isArray(v) || v.length !== rotary / 2 ||
    !v.every((x) => typeof x === "number" && Number.isFinite(x) && x > 0)
  ) {
    throw fieldError(
      path,
      key,
      `expected ${rotary / 2} numbers above 0 (rotary_dim / 2), got ${
        JSON.stringify(v)?.slice(0, 60)
      }`,
    );
  }
  return [...v];
}

/**
 * Rotary frequencies of a block: the rule's, divided by `rope_factors` (or,
 * with `long`, by `rope_long_factors`).
 */
export function decoderRopeFrequencies(
  cfg: DecoderBlockConfig,
  long = false,
): Float64Array {
  const f = ropeFrequencies(cfg.rotary_dim, cfg.rope_theta, cfg.rope_scaling);
  const by = long && cfg.rope_long_factors
    ? cfg.rope_long_factors
    : cfg.rope_factors;
  if (by) {
    for (let i = 0; i < f.length; i++) f[i] /= by[i];
  }
  return f;
}

/** Whether a call ending at `length` positions runs the long factors. */
export function decoderRopeIsLong(
  cfg: DecoderBlockConfig,
  length: number,
): boolean {
  return cfg.rope_long_factors !== null && cfg.rope_long_after !== null &&
    length > cfg.rope_long_after;
}

/** A cos/sin table of a block (times `rope_attn_factor`). */
export function decoderRopeTable(
  cfg: DecoderBlockConfig,
  freq: Float64Array,
  length: number,
): RopeTable {
  const t = ropeTable(freq, length);
  if (cfg.rope_attn_factor !== 1) {
    const a = cfg.rope_attn_factor;
    for (let i = 0; i < t.cos.length; i++) {
      t.cos[i] = Math.fround(t.cos[i] * a);
      t.sin[i] = Math.fround(t.sin[i] * a);
    }
  }
  return t;
}

function optPositive(
  o: Record<string, unknown>,
  key: string,
  path: string,
): number | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  return numberField(o, key, path, 1, { above: 0 });
}

interface Shapes {
  q: number;
  kv: number;
  d: number;
  f: number;
}

function shapes(cfg: DecoderBlockConfig): Shapes {
  return {
    q: cfg.num_heads * cfg.head_dim,
    kv: cfg.num_kv_heads * cfg.head_dim,
    d: cfg.d_model,
    f: cfg.intermediate_size,
  };
}

/** Every weight of a block, in order. */
function specs(cfg: DecoderBlockConfig): ParamSpec[] {
  const { q, kv, d, f } = shapes(cfg);
  const out: ParamSpec[] = [];
  const norm = (name: string, size: number) => {
    out.push({ name: `${name}.weight`, shape: [size], init: "ones" });
    if (cfg.norm === "layer" && cfg.norm_bias) {
      out.push({ name: `${name}.bias`, shape: [size], init: "zeros" });
    }
  };
  const proj = (name: string, o: number, i: number, bias: boolean) => {
    out.push({ name: `${name}.weight`, shape: [o, i], init: "uniform" });
    if (bias) out.push({ name: `${name}.bias`, shape: [o], init: "uniform" });
  };
  norm("attn_norm", d);
  if (cfg.fused_qkv) {
    proj("self_attn.qkv_proj", q + 2 * kv, d, cfg.q_bias);
  } else {
    proj("self_attn.q_proj", q, d, cfg.q_bias);
    proj("self_attn.k_proj", kv, d, cfg.k_bias);
    proj("self_attn.v_proj", kv, d, cfg.v_bias);
  }
  if (cfg.qk_norm) {
    out.push({
      name: "self_attn.q_norm.weight",
      shape: [cfg.head_dim],
      init: "ones",
    });
    out.push({
      name: "self_attn.k_norm.weight",
      shape: [cfg.head_dim],
      init: "ones",
    });
  }
  proj("self_attn.o_proj", d, q, cfg.o_bias);
  if (cfg.post_norms) norm("attn_post_norm", d);
  if (!cfg.parallel) norm("mlp_norm", d);
  if (cfg.mlp === "gated") {
    if (cfg.fused_gate_up) proj("mlp.gate_up_proj", 2 * f, d, cfg.mlp_bias);
    else {
      proj("mlp.gate_proj", f, d, cfg.mlp_bias);
      proj("mlp.up_proj", f, d, cfg.mlp_bias);
    }
  } else proj("mlp.up_proj", f, d, cfg.mlp_bias);
  proj("mlp.down_proj", d, f, cfg.mlp_bias);
  if (cfg.post_norms) norm("mlp_post_norm", d);
  return out;
}

function cacheOf(
  state: LayerState,
  batch: number,
  cfg: DecoderBlockConfig,
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
      `Cannot continue the KV cache: it holds batch ${kv.batch} × ${kv.kvHeads} heads × ${kv.headDim}, the call has batch ${batch} × ${cfg.num_kv_heads} heads × ${cfg.head_dim}`,
    );
  }
  return kv;
}

/** Columns `[from, from + n)` of `rows` rows of width `w`. */
function columns(
  x: Float32Array,
  rows: number,
  w: number,
  from: number,
  n: number,
): Float32Array {
  const out = new Float32Array(rows * n);
  for (let r = 0; r < rows; r++) {
    out.set(x.subarray(r * w + from, r * w + from + n), r * n);
  }
  return out;
}

/**
 * The decoder-block layer plugin (see the module doc for its fields).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { decoderBlockLayer } from "@modelhost/modelhost/layers";
 * const ctx = { path: "layers[1]", inputSize: 16, parseChild: () => { throw new Error(); } };
 * const cfg = decoderBlockLayer.parse(
 *   { type: "decoder_block", num_heads: 2, intermediate_size: 24, fused_qkv: true, post_norms: true },
 *   ctx,
 * );
 * assert(decoderBlockLayer.params(cfg).some((p) => p.name === "self_attn.qkv_proj.weight"));
 * ```
 */
export const decoderBlockLayer: LayerPlugin<DecoderBlockConfig> = {
  kind: "layer",
  type: "decoder_block",
  description:
    "Decoder layer with configurable norms (RMS/Layer, sandwich, q/k), partial rotary, attention scale and soft-capping, gated or plain MLP, parallel residual",
  parse(json: LayerConfig, ctx): DecoderBlockConfig {
    const o = json as Record<string, unknown>;
    const path = ctx.path;
    const attn = parseAttentionFields(
      { ...json, use_rope: false },
      ctx,
      "decoder_block",
      BLOCK_FIELDS,
    );
    if (!attn.causal && attn.sliding_window !== null) {
      throw fieldError(
        path,
        "sliding_window",
        `expected null when causal is false, got ${attn.sliding_window}`,
      );
    }
    const rotary = o.rotary_dim === undefined
      ? (o.use_rope === false ? 0 : attn.head_dim)
      : o.rotary_dim === 0
      ? 0
      : positiveInt(o, "rotary_dim", path);
    if (rotary % 2 !== 0 || rotary > attn.head_dim) {
      throw fieldError(
        path,
        "rotary_dim",
        `expected an even number up to head_dim ${attn.head_dim}, got ${rotary}`,
      );
    }
    const norm = choiceField(o, "norm", path, ["rms", "layer"] as const, "rms");
    if (attn.qk_norm === "full") {
      throw fieldError(
        path,
        "qk_norm",
        'expected "head" or null (decoder_block normalizes each head), got "full"',
      );
    }
    const norm_eps = numberField(o, "norm_eps", path, 1e-6, { above: 0 });
    return {
      ...attn,
      qk_norm_eps: o.qk_norm_eps === undefined ? norm_eps : attn.qk_norm_eps,
      use_rope: rotary > 0,
      intermediate_size: positiveInt(o, "intermediate_size", path),
      norm,
      norm_eps,
      norm_bias: boolField(o, "norm_bias", path, norm === "layer"),
      mlp: choiceField(o, "mlp", path, ["gated", "plain"] as const, "gated"),
      activation: choiceField(
        o,
        "activation",
        path,
        ["silu", "gelu", "gelu_tanh"] as const,
        "silu",
      ),
      mlp_bias: boolField(o, "mlp_bias", path, false),
      fused_qkv: boolField(o, "fused_qkv", path, false),
      fused_gate_up: boolField(o, "fused_gate_up", path, false),
      parallel: boolField(o, "parallel", path, false),
      post_norms: boolField(o, "post_norms", path, false),
      rotary_dim: rotary,
      attn_softcap: optPositive(o, "attn_softcap", path),
      rope_factors: ropeFactorsField(o, path, rotary),
      rope_attn_factor: numberField(o, "rope_attn_factor", path, 1, {
        above: 0,
      }),
      rope_long_factors: ropeFactorsField(
        o,
        path,
        rotary,
        "rope_long_factors",
      ),
      rope_long_after: o.rope_long_after === null
        ? null
        : optPositiveInt(o, "rope_long_after", path) ?? null,
    };
  },
  inputSize: (cfg) => cfg.d_model,
  outputSize: (cfg) => cfg.d_model,
  toJSON: (cfg) => ({
    type: "decoder_block",
    ...attentionFieldsToJSON(cfg),
    intermediate_size: cfg.intermediate_size,
    norm: cfg.norm,
    norm_eps: cfg.norm_eps,
    norm_bias: cfg.norm_bias,
    mlp: cfg.mlp,
    activation: cfg.activation,
    mlp_bias: cfg.mlp_bias,
    fused_qkv: cfg.fused_qkv,
    fused_gate_up: cfg.fused_gate_up,
    parallel: cfg.parallel,
    post_norms: cfg.post_norms,
    rotary_dim: cfg.rotary_dim,
    attn_softcap: cfg.attn_softcap,
    rope_factors: cfg.rope_factors ? [...cfg.rope_factors] : null,
    rope_attn_factor: cfg.rope_attn_factor,
    rope_long_factors: cfg.rope_long_factors
      ? [...cfg.rope_long_factors]
      : null,
    rope_long_after: cfg.rope_long_after,
  }),
  params: specs,
  init(cfg, rng: Rng): Map<string, Float32Array> {
    const out = new Map<string, Float32Array>();
    for (const s of specs(cfg)) {
      const n = s.shape.reduce((a, b) => a * b, 1);
      const v = new Float32Array(n);
      if (s.init === "ones") v.fill(1);
      else if (s.init === "uniform") {
        const bound = 1 / Math.sqrt(s.shape[s.shape.length - 1]);
        for (let i = 0; i < n; i++) v[i] = (2 * rng.next() - 1) * bound;
      }
      out.set(s.name, v);
    }
    return out;
  },
  build(cfg, weights: Scope): Layer {
    const { q: qDim, kv: kvDim, d, f } = shapes(cfg);
    const H = cfg.num_heads, KV = cfg.num_kv_heads, D = cfg.head_dim;
    const w = (name: string, shape: number[]): Tensor =>
      weights.get(name, shape);
    const b = (name: string, size: number, on: boolean) =>
      on ? weights.getF32(name, [size]) : undefined;
    const normOf = (name: string) => ({
      w: weights.getF32(`${name}.weight`, [d]),
      b: cfg.norm === "layer" && cfg.norm_bias
        ? weights.getF32(`${name}.bias`, [d])
        : undefined,
    });
    const norm = (x: Float32Array, n: { w: Float32Array; b?: Float32Array }) =>
      cfg.norm === "rms"
        ? rmsNorm(x, x.length / d, d, n.w, cfg.norm_eps)
        : layerNorm(x, x.length / d, d, n.w, n.b, cfg.norm_eps);
    const attnNorm = normOf("attn_norm");
    const attnPost = cfg.post_norms ? normOf("attn_post_norm") : undefined;
    const mlpNorm = cfg.parallel ? undefined : normOf("mlp_norm");
    const mlpPost = cfg.post_norms ? normOf("mlp_post_norm") : undefined;
    const qkv = cfg.fused_qkv
      ? {
        w: w("self_attn.qkv_proj.weight", [qDim + 2 * kvDim, d]),
        b: b("self_attn.qkv_proj.bias", qDim + 2 * kvDim, cfg.q_bias),
      }
      : undefined;
    const sep = cfg.fused_qkv ? undefined : (["q", "k", "v"] as const).map(
      (p, i) => ({
        w: w(`self_attn.${p}_proj.weight`, [i === 0 ? qDim : kvDim, d]),
        b: b(
          `self_attn.${p}_proj.bias`,
          i === 0 ? qDim : kvDim,
          i === 0 ? cfg.q_bias : i === 1 ? cfg.k_bias : cfg.v_bias,
        ),
      }),
    );
    const qNorm = cfg.qk_norm
      ? weights.getF32("self_attn.q_norm.weight", [D])
      : undefined;
    const kNorm = cfg.qk_norm
      ? weights.getF32("self_attn.k_norm.weight", [D])
      : undefined;
    const o = {
      w: w("self_attn.o_proj.weight", [d, qDim]),
      b: b("self_attn.o_proj.bias", d, cfg.o_bias),
    };
    const gated = cfg.mlp === "gated";
    const gateUp = gated && cfg.fused_gate_up
      ? {
        w: w("mlp.gate_up_proj.weight", [2 * f, d]),
        b: b("mlp.gate_up_proj.bias", 2 * f, cfg.mlp_bias),
      }
      : undefined;
    const gate = gated && !cfg.fused_gate_up
      ? {
        w: w("mlp.gate_proj.weight", [f, d]),
        b: b("mlp.gate_proj.bias", f, cfg.mlp_bias),
      }
      : undefined;
    const up = !gateUp
      ? {
        w: w("mlp.up_proj.weight", [f, d]),
        b: b("mlp.up_proj.bias", f, cfg.mlp_bias),
      }
      : undefined;
    const down = {
      w: w("mlp.down_proj.weight", [d, f]),
      b: b("mlp.down_proj.bias", d, cfg.mlp_bias),
    };
    const R = cfg.rotary_dim;
    // cos/sin tables, short (or only) and LongRoPE's long one, each grown
    // (doubling) when a call goes past it.
    const freqs = R > 0
      ? [decoderRopeFrequencies(cfg), decoderRopeFrequencies(cfg, true)]
      : undefined;
    const tables: (RopeTable | undefined)[] = [undefined, undefined];
    const tableFor = (positions: number): RopeTable => {
      const k = decoderRopeIsLong(cfg, positions) ? 1 : 0;
      const t = tables[k];
      if (!t || t.length < positions) {
        tables[k] = decoderRopeTable(
          cfg,
          freqs![k],
          Math.max(positions, 2 * (t?.length ?? 0), 64),
        );
      }
      return tables[k]!;
    };
    const scale = cfg.attention_scale ?? 1 / Math.sqrt(D);
    const what = `decoder_block at "${weights.prefix}"`;

    /** RoPE on the first R values of each head of `heads` heads per row. */
    const rope = (
      x: Float32Array,
      batch: number,
      seq: number,
      heads: number,
      start: number,
    ) => {
      const t = tableFor(start + seq);
      if (R === D) {
        applyRope(x, batch, seq, heads, t, cfg.rope_style, start);
        return;
      }
      const n = batch * seq * heads;
      const part = new Float32Array(n * R);
      for (let i = 0; i < n; i++) {
        part.set(x.subarray(i * D, i * D + R), i * R);
      }
      applyRope(part, batch, seq, heads, t, cfg.rope_style, start);
      for (let i = 0; i < n; i++) {
        x.set(part.subarray(i * R, (i + 1) * R), i * D);
      }
    };

    const project = (n: Float32Array, rows: number): Float32Array[] => {
      let qs: Float32Array, ks: Float32Array, vs: Float32Array;
      if (qkv) {
        const all = linear(n, rows, qkv.w, qkv.b);
        const width = qDim + 2 * kvDim;
        qs = columns(all, rows, width, 0, qDim);
        ks = columns(all, rows, width, qDim, kvDim);
        vs = columns(all, rows, width, qDim + kvDim, kvDim);
      } else {
        [qs, ks, vs] = linearMany(
          n,
          rows,
          sep!.map((p) => p.w),
          sep!.map((p) => p.b),
        );
      }
      if (qNorm) qs = rmsNorm(qs, rows * H, D, qNorm, cfg.qk_norm_eps);
      if (kNorm) ks = rmsNorm(ks, rows * KV, D, kNorm, cfg.qk_norm_eps);
      return [qs, ks, vs];
    };

    const attendRows = (
      qs: Float32Array,
      ks: Float32Array,
      vs: Float32Array,
      cache: KvCache,
      batch: number,
      seq: number,
    ): Float32Array => {
      const start = cache.length;
      if (R > 0) {
        rope(qs, batch, seq, H, start);
        rope(ks, batch, seq, KV, start);
      }
      appendKv(cache, ks, vs, seq);
      return attend(qs, cache, {
        heads: H,
        seq,
        start,
        causal: cfg.causal,
        window: cfg.sliding_window,
        scale,
        softcap: cfg.attn_softcap,
      });
    };

    const mlpOf = (n: Float32Array, rows: number): Float32Array => {
      let hidden: Float32Array;
      if (gated) {
        let g: Float32Array, u: Float32Array;
        if (gateUp) {
          const both = linear(n, rows, gateUp.w, gateUp.b);
          g = columns(both, rows, 2 * f, 0, f);
          u = columns(both, rows, 2 * f, f, f);
        } else {
          [g, u] = linearMany(n, rows, [gate!.w, up!.w], [gate!.b, up!.b]);
        }
        if (cfg.activation === "silu") hidden = siluMul(g, u);
        else {
          hidden = new Float32Array(g.length);
          for (let i = 0; i < g.length; i++) {
            hidden[i] = activate(cfg.activation, g[i]) * u[i];
          }
        }
      } else {
        hidden = linear(n, rows, up!.w, up!.b);
        for (let i = 0; i < hidden.length; i++) {
          hidden[i] = activate(cfg.activation, hidden[i]);
        }
      }
      return linear(hidden, rows, down.w, down.b);
    };

    /** The block on `rows` rows, attention done by `attention`. */
    const run = (
      x: Float32Array,
      rows: number,
      attention: (
        qs: Float32Array,
        ks: Float32Array,
        vs: Float32Array,
      ) => Float32Array,
    ): Float32Array => {
      const n = norm(x, attnNorm);
      const [qs, ks, vs] = project(n, rows);
      let a = linear(attention(qs, ks, vs), rows, o.w, o.b);
      if (attnPost) a = norm(a, attnPost);
      const h = new Float32Array(x.length);
      for (let i = 0; i < h.length; i++) h[i] = x[i] + a[i];
      let m = mlpOf(cfg.parallel ? n : norm(h, mlpNorm!), rows);
      if (mlpPost) m = norm(m, mlpPost);
      for (let i = 0; i < h.length; i++) h[i] += m[i];
      return h;
    };

    return {
      forward(
        x: FloatTensor,
        state?: LayerState,
        context?: ForwardContext,
      ): FloatTensor {
        const s = x.shape;
        if ((s.length !== 2 && s.length !== 3) || s[s.length - 1] !== d) {
          throw new TypeError(
            `Cannot run ${what}: input has shape [${
              s.join(", ")
            }], expected [batch, seq, ${d}] or [seq, ${d}]`,
          );
        }
        const rows = x.data.length / d;
        const sequences = context?.sequences;
        if (sequences) {
          if (sequences.reduce((a, q) => a + q.rows, 0) !== rows) {
            throw new TypeError(
              `Cannot run ${what} on sequences of ${
                sequences.map((q) => q.rows).join(" + ")
              } rows: the input has ${rows}`,
            );
          }
          const out = run(x.data, rows, (qs, ks, vs) => {
            const heads = new Float32Array(rows * qDim);
            let r = 0;
            for (const q of sequences) {
              if (q.rows === 0) continue;
              heads.set(
                attendRows(
                  qs.subarray(r * qDim, (r + q.rows) * qDim),
                  ks.subarray(r * kvDim, (r + q.rows) * kvDim),
                  vs.subarray(r * kvDim, (r + q.rows) * kvDim),
                  cacheOf(q.state, 1, cfg, q.rows),
                  1,
                  q.rows,
                ),
                r * qDim,
              );
              r += q.rows;
            }
            return heads;
          });
          return floatTensor(out, [...s]);
        }
        const batch = s.length === 3 ? s[0] : 1;
        const seq = rows / batch;
        const out = run(x.data, rows, (qs, ks, vs) => {
          const cache = state
            ? cacheOf(state, batch, cfg, seq)
            : createKvCache(batch, KV, D, seq);
          return attendRows(qs, ks, vs, cache, batch, seq);
        });
        return floatTensor(out, [...s]);
      },
    };
  },
  toOnnx: (g, cfg, weights, input) => decoderBlockOnnx(g, cfg, weights, input),
};
