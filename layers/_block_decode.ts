/**
 * The one-token decode step of a pre-norm `transformer_block` whose
 * projections are quantized (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K): RMSNorm, the
 * q/k/v job, RoPE, the KV append, attention, the o job, the residual add,
 * RMSNorm, the gate/up job, SwiGLU, the down job and the residual add, all
 * on one block of kernel memory. The layer-by-layer path copies every
 * intermediate between JavaScript arrays and the engine and allocates an
 * output array per call (about 45–60 µs of JavaScript per layer at width
 * 576, all of it on the calling thread while the second thread waits);
 * this step runs the same kernels with the same arguments in the same
 * order, so its output is the same bits (`tests/layers/block_decode_test.ts`
 * checks it against the layer-by-layer path).
 *
 * Where a block does not qualify (dense or mixed-memory weights, q/k
 * norms, a sliding window, no KV cache yet, a linear-input observer, no
 * engine) the step returns null and the caller runs the general path.
 *
 * @module
 */

import type { LayerState, Scope } from "../core/plugin.ts";
import type { Tensor } from "../core/tensor.ts";
import {
  appendKv,
  type KvCache,
  kvCacheAddresses,
} from "../kernels/attention.ts";
import { observeLinearInputs } from "../kernels/linear.ts";
import { ropeFrequencies } from "../kernels/rope.ts";
import { runSplit, state as kernelState } from "../kernels/fast/_dispatch.ts";
import {
  type DecodeGroup,
  decodeGroups,
  freeDecodeGroups,
  runDecodeGroups,
} from "../kernels/fast/_decode_engine.ts";
import { type Engine, getEngine } from "../kernels/wasm/_engine.ts";
import { commonEngine } from "../kernels/wasm/_shards.ts";
import type { AttentionConfig } from "./_attention_config.ts";

/** What the step needs of a block (see `transformer_block`'s build). */
export interface BlockDecodeParts {
  /** The attention fields. */
  cfg: AttentionConfig;
  /** The block's weights (attention under `self_attn.`, MLP under `mlp.`). */
  weights: Scope;
  /** Width of the MLP. */
  inter: number;
  /** Epsilon of both norms. */
  eps: number;
  /** Multiplier of the attention and MLP outputs. */
  rs: number;
  /** Input norm weights. */
  normIn: Float32Array;
  /** Post-attention norm weights. */
  normPost: Float32Array;
  /** Whether the MLP has biases. */
  mlpBias: boolean;
}

/** One token through the block, or null (run the general path). */
export type BlockDecodeStep = (
  x: Float32Array,
  state: LayerState,
) => Float32Array | null;

/** Kernel-memory layout of one block's step. */
interface Plan {
  e: Engine;
  /** Residual stream, d. */
  x: number;
  /** Norm output, d. */
  n: number;
  /** Norm weights, d each. */
  w1: number;
  w2: number;
  /** q | k | v, then the attention output. */
  qkv: number;
  att: number;
  /** o output, gate | up, SwiGLU output, down output. */
  o: number;
  gu: number;
  act: number;
  down: number;
  groups: {
    qkv: DecodeGroup[];
    o: DecodeGroup[];
    gu: DecodeGroup[];
    down: DecodeGroup[];
  };
  block: number;
}

const RELEASE = new FinalizationRegistry<Plan>((p) => {
  for (const g of Object.values(p.groups)) freeDecodeGroups(p.e, g);
  p.e.free(p.block);
});

/** Work the decode step reports for a small kernel (see `decodeSplitWork`). */
function splitWork(work: number): number {
  return work >= kernelState.decodeSplitWork
    ? Math.max(work, kernelState.minParallelWork)
    : work;
}

/** The cos/sin row of one position in kernel memory, per RoPE setting. */
interface RopeRow {
  e: Engine;
  cos: number;
  sin: number;
  pos: number;
}

const ROPE_ROWS = new Map<string, RopeRow>();

/**
 * The cos and sin of position `pos` in the layout of the RoPE kernels
 * (`applyRope`'s): `[half]` each (neox), or `[2·half]` with cos repeated per
 * pair and (−sin, sin) (interleaved); the values of `ropeTable`, F32
 * roundings of `cos(pos·freq[i])` and `sin(pos·freq[i])`. Every block with
 * the same frequencies shares the row, so a token computes it once.
 */
function ropeRow(
  e: Engine,
  key: string,
  freq: Float64Array,
  neox: boolean,
  pos: number,
): RopeRow {
  let r = ROPE_ROWS.get(key);
  if (r && r.e === e && r.pos === pos) return r;
  const half = freq.length, width = neox ? half : 2 * half;
  if (!r || r.e !== e) {
    const cos = e.alloc(2 * width * 4 + 64);
    r = { e, cos, sin: cos + width * 4, pos: -1 };
    ROPE_ROWS.set(key, r);
  }
  const f = e.f32, c0 = r.cos >> 2, s0 = r.sin >> 2;
  for (let i = 0; i < half; i++) {
    const a = pos * freq[i];
    const cv = Math.fround(Math.cos(a)), sv = Math.fround(Math.sin(a));
    if (neox) {
      f[c0 + i] = cv;
      f[s0 + i] = sv;
    } else {
      f[c0 + 2 * i] = cv;
      f[c0 + 2 * i + 1] = cv;
      f[s0 + 2 * i] = -sv;
      f[s0 + 2 * i + 1] = sv;
    }
  }
  r.pos = pos;
  return r;
}

/**
 * The decode step of one block, or null when the block can never take it
 * (post-norms, an MoE, dense weights, q/k norms, a sliding window,
 * attention without RoPE where the kernel needs it).
 *
 * @param parts The block's pieces.
 * @returns The step, or null.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { blockDecodeStep } from "./_block_decode.ts";
 * import { transformerBlockLayer } from "@modelhost/modelhost/layers";
 * import { createScope } from "@modelhost/modelhost/core";
 * const cfg = transformerBlockLayer.parse(
 *   { type: "transformer_block", d_model: 8, num_heads: 2, intermediate_size: 16, qk_norm: "head" },
 *   { path: "b", parseChild: () => { throw new Error(); } },
 * );
 * const one = new Float32Array(8).fill(1);
 * const parts = { cfg, weights: createScope(new Map()), inter: 16, eps: 1e-6, rs: 1, normIn: one, normPost: one, mlpBias: false };
 * assert(blockDecodeStep(parts) === null); // q/k norms: the layer path
 * ```
 */
/** A block's weights and settings as the kernel-memory steps use them. */
export interface BlockPieces {
  d: number;
  H: number;
  KV: number;
  D: number;
  qDim: number;
  kvDim: number;
  q: Tensor;
  k: Tensor;
  v: Tensor;
  o: Tensor;
  gate: Tensor;
  up: Tensor;
  down: Tensor;
  qkvB: (Float32Array | undefined)[];
  oB: (Float32Array | undefined)[];
  guB: (Float32Array | undefined)[];
  downB: (Float32Array | undefined)[];
  /** Every projection weight. */
  all: Tensor[];
  /** RoPE frequencies, or undefined without RoPE. */
  freq: Float64Array | undefined;
  /** Rotated values per head (`2 · half`, 0 without RoPE). */
  rot: number;
  neox: boolean;
  /** Attention scale. */
  scale: number;
  /** Key of the RoPE setting (blocks with the same key share cos/sin rows). */
  ropeKey: string;
}

/**
 * The pieces of a block both kernel-memory steps (one token here, many
 * rows in `_block_prefill.ts`) run, or null when the block can never take
 * them (q/k norms, a sliding window, not causal, head sizes or RoPE
 * widths the kernels do not take).
 *
 * @param parts The block's parts.
 * @returns The pieces, or null.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { blockPieces } from "./_block_decode.ts";
 * import { transformerBlockLayer } from "@modelhost/modelhost/layers";
 * import { createScope } from "@modelhost/modelhost/core";
 * const cfg = transformerBlockLayer.parse(
 *   { type: "transformer_block", d_model: 8, num_heads: 2, intermediate_size: 16, sliding_window: 4 },
 *   { path: "b", parseChild: () => { throw new Error(); } },
 * );
 * const one = new Float32Array(8).fill(1);
 * const parts = { cfg, weights: createScope(new Map()), inter: 16, eps: 1e-6, rs: 1, normIn: one, normPost: one, mlpBias: false };
 * assert(blockPieces(parts) === null); // a sliding window: the layer path
 * ```
 */
export function blockPieces(parts: BlockDecodeParts): BlockPieces | null {
  const { cfg, weights, inter, normIn, normPost } = parts;
  const d = cfg.d_model, H = cfg.num_heads, KV = cfg.num_kv_heads;
  const D = cfg.head_dim, qDim = H * D, kvDim = KV * D;
  if (
    cfg.qk_norm !== null || cfg.sliding_window !== null || !cfg.causal ||
    D % 4 !== 0 || d < 16 || normIn.length !== d || normPost.length !== d
  ) return null;
  const at = weights.at("self_attn"), mlp = weights.at("mlp");
  const w = (s: Scope, name: string, shape: number[]) =>
    s.get(name, shape) as Tensor;
  const b = (s: Scope, name: string, on: boolean, n: number) =>
    on ? s.getF32(name, [n]) : undefined;
  const q = w(at, "q_proj.weight", [qDim, d]);
  const k = w(at, "k_proj.weight", [kvDim, d]);
  const v = w(at, "v_proj.weight", [kvDim, d]);
  const o = w(at, "o_proj.weight", [d, qDim]);
  const gate = w(mlp, "gate_proj.weight", [inter, d]);
  const up = w(mlp, "up_proj.weight", [inter, d]);
  const down = w(mlp, "down_proj.weight", [d, inter]);
  const qkvB = [
    b(at, "q_proj.bias", cfg.q_bias, qDim),
    b(at, "k_proj.bias", cfg.k_bias, kvDim),
    b(at, "v_proj.bias", cfg.v_bias, kvDim),
  ];
  const oB = [b(at, "o_proj.bias", cfg.o_bias, d)];
  const guB = [
    b(mlp, "gate_proj.bias", parts.mlpBias, inter),
    b(mlp, "up_proj.bias", parts.mlpBias, inter),
  ];
  const downB = [b(mlp, "down_proj.bias", parts.mlpBias, d)];
  const all = [q, k, v, o, gate, up, down];
  const freq = cfg.use_rope
    ? ropeFrequencies(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling)
    : undefined;
  const half = freq?.length ?? 0, rot = 2 * half;
  const neox = cfg.rope_style === "neox";
  // applyRope's engine condition; else it runs its reference
  if (freq && (rot !== D || (neox ? half % 4 !== 0 : rot % 4 !== 0))) {
    return null;
  }
  return {
    d,
    H,
    KV,
    D,
    qDim,
    kvDim,
    q,
    k,
    v,
    o,
    gate,
    up,
    down,
    qkvB,
    oB,
    guB,
    downB,
    all,
    freq,
    rot,
    neox,
    scale: cfg.attention_scale ?? 1 / Math.sqrt(D),
    ropeKey: `${neox ? "neox" : "interleaved"}:${freq?.join(",")}`,
  };
}

export function blockDecodeStep(
  parts: BlockDecodeParts,
): BlockDecodeStep | null {
  const { inter, eps, rs, normIn, normPost } = parts;
  const pieces = blockPieces(parts);
  if (!pieces) return null;
  const { d, H, KV, D, qDim, kvDim, q, k, v, o, gate, up, down } = pieces;
  const { qkvB, oB, guB, downB, all, freq, rot, neox, scale } = pieces;
  let plan: Plan | null | undefined;
  const owner = {};

  const build = (e: Engine): Plan | null => {
    if (commonEngine(all.map((t) => t.bytes)) !== e) return null;
    const sizes = {
      x: d,
      n: d,
      w1: d,
      w2: d,
      qkv: qDim + 2 * kvDim,
      att: qDim,
      cos: Math.max(rot, 4),
      sin: Math.max(rot, 4),
      o: d,
      gu: 2 * inter,
      act: inter,
      down: d,
    };
    let bytes = 0;
    for (const n of Object.values(sizes)) bytes += (n * 4 + 63) & ~63;
    const block = e.alloc(bytes + 64);
    const at: Record<string, number> = {};
    let p = block;
    for (const [name, n] of Object.entries(sizes)) {
      at[name] = p;
      p += (n * 4 + 63) & ~63;
    }
    const made: DecodeGroup[][] = [];
    const group = (
      ws: Tensor[],
      bs: (Float32Array | undefined)[],
      y: number,
    ) => {
      const g = decodeGroups(e, ws, bs, y);
      if (g) made.push(g);
      return g;
    };
    const gq = group([q, k, v], qkvB, at.qkv);
    const go = group([o], oB, at.o);
    const ggu = group([gate, up], guB, at.gu);
    const gd = group([down], downB, at.down);
    if (!gq || !go || !ggu || !gd) {
      for (const g of made) freeDecodeGroups(e, g);
      e.free(block);
      return null;
    }
    const out: Plan = {
      e,
      x: at.x,
      n: at.n,
      w1: at.w1,
      w2: at.w2,
      qkv: at.qkv,
      att: at.att,
      o: at.o,
      gu: at.gu,
      act: at.act,
      down: at.down,
      groups: { qkv: gq, o: go, gu: ggu, down: gd },
      block,
    };
    RELEASE.register(owner, out);
    return out;
  };

  const ropeKey = pieces.ropeKey;
  return (xIn: Float32Array, st: LayerState): Float32Array | null => {
    if (!kernelState.decodeStep) return null;
    const cache = st.kv as KvCache | undefined;
    if (
      !cache || cache.batch !== 1 || cache.kvHeads !== KV ||
      cache.headDim !== D || kvCacheAddresses(cache) === undefined
    ) return null;
    const observer = observeLinearInputs(undefined);
    observeLinearInputs(observer);
    if (observer) return null;
    const e = getEngine();
    if (!e) return null;
    if (plan === undefined || (plan && plan.e !== e)) plan = build(e);
    if (!plan) return null;
    const pl = plan;
    const start = cache.length;
    // room for the new position first: growing the cache may grow memory
    if (start + 1 > cache.capacity) {
      const z = new Float32Array(kvDim);
      appendKv(cache, z, z, 1);
      cache.length = start;
    }
    const kvAt = kvCacheAddresses(cache);
    if (!kvAt) return null;
    const total = start + 1;
    const sc = e.scratch("attn_scores", H * total * 4 + 64);
    const r = freq ? ropeRow(e, ropeKey, freq, neox, start) : undefined;
    let f = e.f32;
    f.set(xIn, pl.x >> 2);
    f.set(normIn, pl.w1 >> 2);
    f.set(normPost, pl.w2 >> 2);
    e.fn.rmsnorm_rows(pl.x, pl.w1, pl.n, 1, d, eps);
    runDecodeGroups(e, pl.groups.qkv, pl.n);
    f = e.f32;
    const kp = pl.qkv + qDim * 4, vp = kp + kvDim * 4;
    if (r) {
      const name = neox ? "rope_neox" : "rope_interleaved";
      e.fn[name](pl.qkv, r.cos, r.sin, 1, H, D, rot);
      e.fn[name](kp, r.cos, r.sin, 1, KV, D, rot);
    }
    const cap = cache.capacity;
    for (let h = 0; h < KV; h++) {
      const dst = (h * cap + start) * D * 4;
      f.copyWithin(
        (kvAt.k + dst) >> 2,
        (kp >> 2) + h * D,
        (kp >> 2) + (h + 1) * D,
      );
      f.copyWithin(
        (kvAt.v + dst) >> 2,
        (vp >> 2) + h * D,
        (vp >> 2) + (h + 1) * D,
      );
    }
    cache.length = total;
    runSplit(e, "attention", splitWork(H * total * D * 2), H, (h0, h1) => [
      pl.qkv,
      kvAt.k,
      kvAt.v,
      pl.att,
      sc,
      1,
      H,
      KV,
      D,
      cap,
      start,
      scale,
      1,
      h0,
      h1,
    ]);
    runDecodeGroups(e, pl.groups.o, pl.att);
    f = e.f32;
    const x0 = pl.x >> 2, o0 = pl.o >> 2, d0 = pl.down >> 2;
    for (let i = 0; i < d; i++) f[x0 + i] = f[x0 + i] + rs * f[o0 + i];
    e.fn.rmsnorm_rows(pl.x, pl.w2, pl.n, 1, d, eps);
    runDecodeGroups(e, pl.groups.gu, pl.n);
    const g = pl.gu, u = pl.gu + inter * 4;
    runSplit(e, "swiglu", splitWork(inter * 24), Math.ceil(inter / 256), (
      a,
      b,
    ) => [
      g + a * 1024,
      u + a * 1024,
      pl.act + a * 1024,
      Math.min(b * 256, inter) - a * 256,
    ]);
    runDecodeGroups(e, pl.groups.down, pl.act);
    f = e.f32;
    for (let i = 0; i < d; i++) f[x0 + i] = f[x0 + i] + rs * f[d0 + i];
    return f.slice(x0, x0 + d);
  };
}
