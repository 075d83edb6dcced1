/**
 * The many-row step of a pre-norm `transformer_block` with quantized
 * projections (a prefill of one sequence, or the next rows of one after an
 * existing cache): RMSNorm, the q/k/v job, RoPE, the KV append, attention,
 * the o job, the residual add, RMSNorm, the gate/up job, SwiGLU, the down
 * job and the residual add, all on one workspace of kernel memory shared
 * by every block. The layer-by-layer path copies each intermediate between
 * JavaScript arrays and the engine (a new array per op, the RoPE table
 * copied per call, the KV append one `set` per row and head), all of it on
 * the calling thread while the second thread waits; this step runs the
 * same kernels with the same arguments, splits and order, so its output is
 * the same bits (`tests/layers/block_prefill_test.ts` checks it against
 * the layer-by-layer path).
 *
 * Where a block does not qualify (as for the decode step of
 * `_block_decode.ts`, plus a batch of several sequences or a cache the
 * engine does not hold) the step returns null and the caller runs the
 * general path.
 *
 * @module
 */

import type { LayerState } from "../core/plugin.ts";
import {
  appendKv,
  createKvCache,
  type KvCache,
  kvCacheAddresses,
} from "../kernels/attention.ts";
import { observeLinearInputs } from "../kernels/linear.ts";
import { runSplit, state as kernelState } from "../kernels/fast/_dispatch.ts";
import { engineLinearInto } from "../kernels/fast/_linear_engine.ts";
import { rowBytes } from "../kernels/quant_ref.ts";
import type { FastDType } from "../kernels/quant_ref.ts";
import { type Engine, getEngine } from "../kernels/wasm/_engine.ts";
import { commonEngine } from "../kernels/wasm/_shards.ts";
import {
  type BlockDecodeParts,
  type BlockPieces,
  blockPieces,
} from "./_block_decode.ts";

/** Rows through the block, or null (run the general path). */
export type BlockPrefillStep = (
  x: Float32Array,
  rows: number,
  state: LayerState,
) => Float32Array | null;

/** The weight types the step runs (those of the decode step's jobs). */
const TYPES = new Set(["Q8_0", "Q4_0", "Q5_0", "Q4_K", "Q6_K"]);

/** One workspace per engine, grown to the largest call (never shrunk). */
interface Workspace {
  e: Engine;
  ptr: number;
  bytes: number;
}

let space: Workspace | undefined;

function workspace(e: Engine, bytes: number): number {
  if (space && space.e === e && space.bytes >= bytes) return space.ptr;
  if (space && space.e === e) e.free(space.ptr);
  const size = Math.max(bytes, 2 * (space?.e === e ? space.bytes : 0));
  space = { e, ptr: e.alloc(size), bytes: size };
  return space.ptr;
}

/** cos / sin rows of positions 0 … length − 1, per engine and RoPE setting. */
interface RopeRows {
  e: Engine;
  cos: number;
  sin: number;
  length: number;
}

const ROPE_ROWS = new Map<string, RopeRows>();

/**
 * The cos and sin rows of positions 0 … `need` − 1 in the RoPE kernels'
 * layout (`applyRope`'s): `[half]` per position each (neox), or `[2·half]`
 * with cos repeated per pair and (−sin, sin) (interleaved). The values are
 * `ropeTable`'s, F32 roundings of `cos(pos·freq[i])` and
 * `sin(pos·freq[i])`; every block with the same frequencies reads the same
 * rows, grown by doubling.
 */
function ropeRows(
  e: Engine,
  key: string,
  freq: Float64Array,
  neox: boolean,
  need: number,
): RopeRows {
  const r = ROPE_ROWS.get(key);
  if (r && r.e === e && r.length >= need) return r;
  const half = freq.length, width = neox ? half : 2 * half;
  const length = Math.max(need, 2 * (r?.e === e ? r.length : 0), 64);
  if (r && r.e === e) e.free(r.cos);
  const cos = e.alloc(2 * length * width * 4 + 64);
  const out = { e, cos, sin: cos + length * width * 4, length };
  const f = e.f32, c0 = out.cos >> 2, s0 = out.sin >> 2;
  for (let p = 0; p < length; p++) {
    for (let i = 0; i < half; i++) {
      const a = p * freq[i];
      const cv = Math.fround(Math.cos(a)), sv = Math.fround(Math.sin(a));
      const o = p * width;
      if (neox) {
        f[c0 + o + i] = cv;
        f[s0 + o + i] = sv;
      } else {
        f[c0 + o + 2 * i] = cv;
        f[c0 + o + 2 * i + 1] = cv;
        f[s0 + o + 2 * i] = -sv;
        f[s0 + o + 2 * i + 1] = sv;
      }
    }
  }
  ROPE_ROWS.set(key, out);
  return out;
}

/** Whether the block's weights can run as kernel-memory jobs. */
function quantized(p: BlockPieces): boolean {
  return p.all.every((w) => {
    const [outF, inF] = w.shape;
    return TYPES.has(w.dtype) && !w.quant && w.shape.length === 2 &&
      outF > 0 && inF % 32 === 0 &&
      ((w.dtype !== "Q4_K" && w.dtype !== "Q6_K") || inF % 256 === 0) &&
      w.bytes.byteLength >= outF * rowBytes(w.dtype as FastDType, inF);
  });
}

/**
 * The many-row step of one block, or null when the block can never take
 * it (as {@link blockPieces}, or weights that are not all Q8_0, Q4_0,
 * Q5_0, Q4_K or Q6_K).
 *
 * @param parts The block's pieces.
 * @returns The step, or null.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { blockPrefillStep } from "./_block_prefill.ts";
 * import { transformerBlockLayer } from "@modelhost/modelhost/layers";
 * import { createScope } from "@modelhost/modelhost/core";
 * const cfg = transformerBlockLayer.parse(
 *   { type: "transformer_block", d_model: 8, num_heads: 2, intermediate_size: 16, qk_norm: "head" },
 *   { path: "b", parseChild: () => { throw new Error(); } },
 * );
 * const one = new Float32Array(8).fill(1);
 * const parts = { cfg, weights: createScope(new Map()), inter: 16, eps: 1e-6, rs: 1, normIn: one, normPost: one, mlpBias: false };
 * assert(blockPrefillStep(parts) === null); // q/k norms: the layer path
 * ```
 */
export function blockPrefillStep(
  parts: BlockDecodeParts,
): BlockPrefillStep | null {
  const pieces = blockPieces(parts);
  if (!pieces || !quantized(pieces)) return null;
  const { inter, eps, rs, normIn, normPost } = parts;
  const { d, H, KV, D, qDim, kvDim, q, k, v, o, gate, up, down } = pieces;
  const { qkvB, oB, guB, downB, all, freq, rot, neox, scale } = pieces;
  const qkvDim = qDim + 2 * kvDim;
  const fit = (n: number) => (n * 4 + 63) & ~63;

  return (xIn: Float32Array, rows: number, st: LayerState) => {
    if (!kernelState.prefillStep || rows < 2) return null;
    const observer = observeLinearInputs(undefined);
    observeLinearInputs(observer);
    if (observer) return null;
    const e = getEngine();
    if (!e || commonEngine(all.map((t) => t.bytes)) !== e) return null;
    let cache = st.kv as KvCache | undefined;
    if (cache === undefined) {
      // what the attention layer makes for a first call
      cache = createKvCache(1, KV, D, Math.max(16, rows));
      st.kv = cache;
    }
    if (
      cache.batch !== 1 || cache.kvHeads !== KV || cache.headDim !== D ||
      kvCacheAddresses(cache) === undefined
    ) return null;
    const start = cache.length, total = start + rows;
    // room for the new positions first: growing the cache may grow memory
    if (total > cache.capacity) {
      // appendKv's growth (doubling to the same capacity as the layer
      // path's append), then the positions given back
      const z = new Float32Array(rows * kvDim);
      appendKv(cache, z, z, rows);
      cache.length = start;
    }
    const kvAt = kvCacheAddresses(cache);
    if (!kvAt) return null;
    const r = freq ? ropeRows(e, pieces.ropeKey, freq, neox, total) : undefined;
    const sc = e.scratch("attn_scores", H * total * 4 + 64);
    const sizes = [
      d, // norm weights (input, post-attention)
      d,
      rows * d, // residual stream
      rows * d, // norm output
      rows * qkvDim, // q | k | v
      rows * qDim, // attention output
      rows * d, // o / down output
      rows * 2 * inter, // gate | up
      rows * inter, // SwiGLU output
    ];
    const base = workspace(e, sizes.reduce((a, n) => a + fit(n), 0) + 64);
    const at: number[] = [];
    let p = base;
    for (const n of sizes) {
      at.push(p);
      p += fit(n);
    }
    const [w1, w2, x, n, qkv, att, proj, gu, act] = at;
    let f = e.f32;
    f.set(normIn, w1 >> 2);
    f.set(normPost, w2 >> 2);
    f.set(xIn.subarray(0, rows * d), x >> 2);
    const norm = (w: number) =>
      runSplit(e, "rmsnorm_rows", rows * d * 8, rows, (a, b) => [
        x + a * d * 4,
        w,
        n + a * d * 4,
        b - a,
        d,
        eps,
      ]);
    const residual = () => {
      f = e.f32;
      const x0 = x >> 2, p0 = proj >> 2, m = rows * d;
      for (let i = 0; i < m; i++) f[x0 + i] = f[x0 + i] + rs * f[p0 + i];
    };
    norm(w1);
    const kp = qkv + rows * qDim * 4, vp = kp + rows * kvDim * 4;
    engineLinearInto(e, [q, k, v], qkvB, n, rows, [qkv, kp, vp]);
    if (r) {
      const name = neox ? "rope_neox" : "rope_interleaved";
      const width = neox ? rot / 2 : rot;
      for (const [ptr, heads] of [[qkv, H], [kp, KV]]) {
        const tok = heads * D * 4;
        runSplit(e, name, rows * heads * rot * 4, rows, (t0, t1) => [
          ptr + t0 * tok,
          r.cos + (start + t0) * width * 4,
          r.sin + (start + t0) * width * 4,
          t1 - t0,
          heads,
          D,
          rot,
        ]);
      }
    }
    f = e.f32;
    const cap = cache.capacity;
    const k0 = kp >> 2, v0 = vp >> 2, ck = kvAt.k >> 2, cv = kvAt.v >> 2;
    // element by element: a third faster than a copyWithin per row and head
    for (let t = 0; t < rows; t++) {
      for (let h = 0; h < KV; h++) {
        const dst = (h * cap + start + t) * D, src = t * kvDim + h * D;
        for (let j = 0; j < D; j++) {
          f[ck + dst + j] = f[k0 + src + j];
          f[cv + dst + j] = f[v0 + src + j];
        }
      }
    }
    cache.length = total;
    runSplit(e, "attention", rows * H * total * D * 2, H, (h0, h1) => [
      qkv,
      kvAt.k,
      kvAt.v,
      att,
      sc,
      rows,
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
    engineLinearInto(e, [o], oB, att, rows, [proj]);
    residual();
    norm(w2);
    const up0 = gu + rows * inter * 4;
    engineLinearInto(e, [gate, up], guB, n, rows, [gu, up0]);
    const m = rows * inter;
    runSplit(e, "swiglu", m * 24, Math.ceil(m / 256), (a, b) => [
      gu + a * 1024,
      up0 + a * 1024,
      act + a * 1024,
      Math.min(b * 256, m) - a * 256,
    ]);
    engineLinearInto(e, [down], downB, act, rows, [proj]);
    // the last residual add straight into the output array (the stream in
    // kernel memory is not read again)
    f = e.f32;
    const out = new Float32Array(rows * d);
    const x0 = x >> 2, p0 = proj >> 2;
    for (let i = 0; i < out.length; i++) out[i] = f[x0 + i] + rs * f[p0 + i];
    return out;
  };
}
