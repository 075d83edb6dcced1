/**
 * Scaled dot-product attention over a key/value cache: the reference
 * kernel that attention layers run for prefill (many queries) and decode
 * (one query per sequence). Grouped-query attention maps query head `h` to
 * key/value head `⌊h / (heads / kvHeads)⌋`; masks are causal and optionally
 * a sliding window. {@link attend} runs the WebAssembly SIMD attention
 * kernel of `kernels/fast` (split by heads across the kernel threads) when
 * the cache lives in kernel memory; {@link attendRef} is its scalar twin,
 * whose softmax subtracts the row maximum and accumulates in float64.
 *
 * @module
 */

import { runSplit } from "./fast/_dispatch.ts";
import { type Engine, getEngine } from "./wasm/_engine.ts";

/**
 * Keys and values of every position seen so far, per sequence and per
 * key/value head: `k` and `v` are `[batch, kvHeads, capacity, headDim]`,
 * of which positions `0 … length−1` are filled. Lowering `length` rewinds
 * the cache (later appends overwrite).
 */
export interface KvCache {
  /** Number of sequences. */
  readonly batch: number;
  /** Key/value heads. */
  readonly kvHeads: number;
  /** Size of one head. */
  readonly headDim: number;
  /** Filled positions. */
  length: number;
  /** Allocated positions; grows by doubling. */
  capacity: number;
  /** Keys, `[batch, kvHeads, capacity, headDim]`. */
  k: Float32Array;
  /** Values, same layout as `k`. */
  v: Float32Array;
}

/** Kernel-memory blocks held by a cache, freed when the cache is collected. */
interface Held {
  e: Engine;
  k: number;
  v: number;
}

const HELD = new WeakMap<KvCache, Held>();
const RELEASE = new FinalizationRegistry<Held>((h) => {
  h.e.free(h.k);
  h.e.free(h.v);
});

/**
 * Two zeroed arrays of `n` floats: views into kernel memory when the
 * kernels run on a shared memory (views of a shared memory survive its
 * growth), else plain arrays.
 */
function cacheArrays(
  n: number,
): { k: Float32Array; v: Float32Array; held?: Held } {
  const e = getEngine();
  if (!e || !e.shared || n === 0) {
    return { k: new Float32Array(n), v: new Float32Array(n) };
  }
  const pk = e.alloc(n * 4), pv = e.alloc(n * 4);
  const buf = e.memory.buffer;
  const k = new Float32Array(buf, pk, n), v = new Float32Array(buf, pv, n);
  k.fill(0);
  v.fill(0);
  return { k, v, held: { e, k: pk, v: pv } };
}

/** Swaps in new arrays, freeing the kernel-memory blocks they replace. */
function adopt(
  cache: KvCache,
  a: { k: Float32Array; v: Float32Array; held?: Held },
): void {
  const old = HELD.get(cache);
  if (old) {
    old.e.free(old.k);
    old.e.free(old.v);
    HELD.delete(cache);
    RELEASE.unregister(old);
  }
  cache.k = a.k;
  cache.v = a.v;
  if (a.held) {
    HELD.set(cache, a.held);
    RELEASE.register(cache, a.held, a.held);
  }
}

/**
 * Creates an empty cache. Where the fast kernels run on a shared memory
 * (Deno, Node, cross-origin-isolated pages), `k` and `v` are views into
 * kernel memory, so {@link attend} reads them in place; that memory is
 * freed when the cache is garbage collected.
 *
 * @param batch Number of sequences.
 * @param kvHeads Key/value heads.
 * @param headDim Size of one head.
 * @param capacity Positions to allocate up front (grows on demand). @default 16
 * @returns The cache, with `length` 0.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createKvCache } from "@modelhost/modelhost/kernels";
 * const c = createKvCache(2, 4, 8, 32);
 * assert(c.length === 0 && c.k.length === 2 * 4 * 32 * 8);
 * ```
 */
export function createKvCache(
  batch: number,
  kvHeads: number,
  headDim: number,
  capacity = 16,
): KvCache {
  const cap = Math.max(1, capacity);
  const n = batch * kvHeads * cap * headDim;
  const cache: KvCache = {
    batch,
    kvHeads,
    headDim,
    length: 0,
    capacity: cap,
    k: new Float32Array(0),
    v: new Float32Array(0),
  };
  adopt(cache, cacheArrays(n));
  return cache;
}

function grow(cache: KvCache, need: number): void {
  let cap = cache.capacity;
  while (cap < need) cap *= 2;
  const { batch, kvHeads, headDim } = cache;
  const inKernel = HELD.has(cache);
  const n = batch * kvHeads * cap * headDim;
  const a = inKernel
    ? cacheArrays(n)
    : { k: new Float32Array(n), v: new Float32Array(n) };
  const used = cache.length * headDim;
  for (let bh = 0; bh < batch * kvHeads; bh++) {
    const from = bh * cache.capacity * headDim;
    const to = bh * cap * headDim;
    a.k.set(cache.k.subarray(from, from + used), to);
    a.v.set(cache.v.subarray(from, from + used), to);
  }
  adopt(cache, a);
  cache.capacity = cap;
}

/**
 * Kernel-memory byte addresses of a cache's keys and values in the
 * realm's WebAssembly engine, for callers that run the `attention` kernel
 * on it directly (the one-token decode step of `transformer_block`); undefined
 * when the cache lives in plain arrays (no shared kernel memory). The
 * addresses change when {@link appendKv} grows the cache.
 *
 * @param cache The cache.
 * @returns `{ k, v }` byte addresses, or undefined.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createKvCache, kvCacheAddresses } from "@modelhost/modelhost/kernels";
 * const c = createKvCache(1, 2, 4);
 * const a = kvCacheAddresses(c);
 * if (a) assert(a.k === c.k.byteOffset && a.v === c.v.byteOffset);
 * ```
 */
export function kvCacheAddresses(
  cache: KvCache,
): { k: number; v: number } | undefined {
  const held = HELD.get(cache);
  if (
    !held || held.e !== getEngine() || cache.k.byteOffset !== held.k ||
    cache.v.byteOffset !== held.v
  ) return undefined;
  return { k: held.k, v: held.v };
}

/**
 * Appends `seq` positions to every sequence of the cache. `k` and `v` hold
 * `batch × seq` rows of `kvHeads × headDim` values (projection outputs,
 * RoPE already applied to `k`).
 *
 * @param cache The cache; grows when full.
 * @param k New keys, `[batch, seq, kvHeads·headDim]`.
 * @param v New values, same layout.
 * @param seq Positions per sequence.
 * @throws {RangeError} When `k` or `v` has the wrong length.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { appendKv, createKvCache } from "@modelhost/modelhost/kernels";
 * const c = createKvCache(1, 1, 2, 1);
 * appendKv(c, new Float32Array([1, 2, 3, 4]), new Float32Array(4), 2);
 * assert(c.length === 2 && c.k[3] === 4);
 * ```
 */
export function appendKv(
  cache: KvCache,
  k: Float32Array,
  v: Float32Array,
  seq: number,
): void {
  const { batch, kvHeads, headDim } = cache;
  const rowLen = kvHeads * headDim;
  if (k.length !== batch * seq * rowLen || v.length !== k.length) {
    throw new RangeError(
      `Cannot append to the KV cache: keys have ${k.length} and values ${v.length} values, expected ${batch}×${seq}×${rowLen}`,
    );
  }
  const start = cache.length;
  if (start + seq > cache.capacity) grow(cache, start + seq);
  const cap = cache.capacity;
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < seq; t++) {
      const src = (b * seq + t) * rowLen;
      for (let h = 0; h < kvHeads; h++) {
        const dst = ((b * kvHeads + h) * cap + start + t) * headDim;
        const s = src + h * headDim;
        cache.k.set(k.subarray(s, s + headDim), dst);
        cache.v.set(v.subarray(s, s + headDim), dst);
      }
    }
  }
  cache.length = start + seq;
}

/** Shape and masking of one {@link attend} call. */
export interface AttendOptions {
  /** Query heads (a multiple of the cache's `kvHeads`). */
  heads: number;
  /** Queries per sequence. */
  seq: number;
  /** Position of the first query. @default cache.length − seq */
  start?: number;
  /** Whether a query sees only keys at or before its position. @default true */
  causal?: boolean;
  /** When set, a query at `p` sees only keys at `p − window + 1 … p`. */
  window?: number | null;
  /** Multiplier of the dot products. @default 1/√headDim */
  scale?: number;
  /** Gemma 2's logit soft-capping: scores become `c·tanh(s / c)` (runs the reference path). */
  softcap?: number | null;
}

interface AttendShape {
  heads: number;
  seq: number;
  start: number;
  causal: boolean;
  window: number;
  scale: number;
  softcap: number;
}

function attendShape(
  q: Float32Array,
  cache: KvCache,
  opts: AttendOptions,
): AttendShape {
  const { batch, kvHeads, headDim: dim, length: len } = cache;
  const { heads, seq } = opts;
  const start = opts.start ?? len - seq;
  const causal = opts.causal ?? true;
  const window = opts.window ?? 0;
  const scale = opts.scale ?? 1 / Math.sqrt(dim);
  if (heads % kvHeads !== 0) {
    throw new RangeError(
      `Cannot attend: ${heads} query heads do not split into ${kvHeads} key/value groups`,
    );
  }
  if (q.length !== batch * seq * heads * dim) {
    throw new RangeError(
      `Cannot attend: queries have ${q.length} values, expected ${batch}×${seq}×${heads}×${dim}`,
    );
  }
  if (start < 0 || (causal && start + seq > len)) {
    throw new RangeError(
      `Cannot attend: queries at positions ${start}..${
        start + seq - 1
      } but the cache holds ${len}`,
    );
  }
  const softcap = opts.softcap ?? 0;
  return { heads, seq, start, causal, window, scale, softcap };
}

/**
 * Softmax attention of `seq` queries per sequence against every cached
 * position: `out = softmax(q·kᵀ·scale + mask)·v` per head.
 *
 * When the cache lives in kernel memory (see {@link createKvCache}), the
 * head size is a multiple of 4 and no sliding window is set, this runs the
 * WebAssembly SIMD kernel of `fastAttention` on the cache in place (F32
 * dot products and sums, polynomial `exp`; relative error about 1e-6),
 * split by heads across the kernel threads. Otherwise, and for
 * non-causal calls whose queries are not the last cached positions, it
 * runs {@link attendRef}. A query's result depends only on its position
 * and the cache, not on how many queries share the call, so a prefill and
 * token-by-token decoding give identical outputs.
 *
 * @param q Queries, `[batch, seq, heads·headDim]` (RoPE applied).
 * @param cache Keys and values; positions `0 … length−1` are attended.
 * @param opts Heads, query count, masking.
 * @returns `[batch, seq, heads·headDim]`, ready for the output projection.
 * @throws {RangeError} On inconsistent sizes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { appendKv, attend, createKvCache } from "@modelhost/modelhost/kernels";
 * const c = createKvCache(1, 1, 4);
 * appendKv(c, new Float32Array(8), new Float32Array([2, 2, 2, 2, 4, 4, 4, 4]), 2);
 * const out = attend(new Float32Array(8).fill(1), c, { heads: 1, seq: 2 });
 * assert(out[0] === 2 && Math.abs(out[4] - 3) < 1e-6); // second query averages both
 * ```
 */
export function attend(
  q: Float32Array,
  cache: KvCache,
  opts: AttendOptions,
): Float32Array {
  const s = attendShape(q, cache, opts);
  const { batch, kvHeads, headDim: dim, length: len, capacity: cap } = cache;
  const held = HELD.get(cache);
  const e = getEngine();
  if (
    !held || held.e !== e || dim % 4 !== 0 || s.window > 0 || s.softcap > 0 ||
    (!s.causal && s.start + s.seq !== len) || s.seq === 0 ||
    cache.k.byteOffset !== held.k || cache.v.byteOffset !== held.v
  ) {
    return attendRef(q, cache, opts);
  }
  const { heads, seq, start } = s;
  const total = start + seq;
  const per = seq * heads * dim; // values of one sequence's queries
  const qp = e.scratch("attn_q", per * 4 + 64);
  const op = e.scratch("attn_out", per * 4 + 64);
  const sc = e.scratch("attn_scores", heads * total * 4 + 64);
  const out = new Float32Array(q.length);
  const work = seq * heads * total * dim * 2;
  const seqBytes = kvHeads * cap * dim * 4;
  for (let b = 0; b < batch; b++) {
    e.f32.set(q.subarray(b * per, (b + 1) * per), qp >> 2);
    runSplit(e, "attention", work, heads, (h0, h1) => [
      qp,
      held.k + b * seqBytes,
      held.v + b * seqBytes,
      op,
      sc,
      seq,
      heads,
      kvHeads,
      dim,
      cap,
      start,
      s.scale,
      s.causal ? 1 : 0,
      h0,
      h1,
    ]);
    out.set(e.f32.subarray(op >> 2, (op >> 2) + per), b * per);
  }
  return out;
}

/**
 * Reference softmax attention of `seq` queries per sequence against every
 * cached position, `out = softmax(q·kᵀ·scale + mask)·v` per head, in float64
 * (the scalar twin of {@link attend}).
 *
 * @param q Queries, `[batch, seq, heads·headDim]` (RoPE applied).
 * @param cache Keys and values; positions `0 … length−1` are attended.
 * @param opts Heads, query count, masking.
 * @returns `[batch, seq, heads·headDim]`, ready for the output projection.
 * @throws {RangeError} On inconsistent sizes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { appendKv, attendRef, createKvCache } from "@modelhost/modelhost/kernels";
 * const c = createKvCache(1, 1, 1);
 * appendKv(c, new Float32Array([0, 0]), new Float32Array([2, 4]), 2);
 * const out = attendRef(new Float32Array([1, 1]), c, { heads: 1, seq: 2 });
 * assert(out[0] === 2 && out[1] === 3); // second query averages both
 * ```
 */
export function attendRef(
  q: Float32Array,
  cache: KvCache,
  opts: AttendOptions,
): Float32Array {
  const { batch, kvHeads, headDim: dim, length: len, capacity: cap } = cache;
  const { heads, seq, start, causal, window, scale, softcap } = attendShape(
    q,
    cache,
    opts,
  );
  const group = heads / kvHeads;
  const { k, v } = cache;
  const out = new Float32Array(q.length);
  const scores = new Float64Array(len);
  const acc = new Float64Array(dim);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < heads; h++) {
      const kv = ((b * kvHeads + Math.floor(h / group)) * cap) * dim;
      for (let t = 0; t < seq; t++) {
        const pos = start + t;
        const hi = causal ? pos : len - 1;
        const lo = window > 0 ? Math.max(0, pos - window + 1) : 0;
        const qo = ((b * seq + t) * heads + h) * dim;
        let max = -Infinity;
        for (let s = lo; s <= hi; s++) {
          const ko = kv + s * dim;
          let dot = 0;
          for (let i = 0; i < dim; i++) dot += q[qo + i] * k[ko + i];
          dot *= scale;
          if (softcap > 0) dot = softcap * Math.tanh(dot / softcap);
          scores[s] = dot;
          if (dot > max) max = dot;
        }
        acc.fill(0);
        let sum = 0;
        for (let s = lo; s <= hi; s++) {
          const p = Math.exp(scores[s] - max);
          sum += p;
          const vo = kv + s * dim;
          for (let i = 0; i < dim; i++) acc[i] += p * v[vo + i];
        }
        const inv = 1 / sum;
        for (let i = 0; i < dim; i++) out[qo + i] = acc[i] * inv;
      }
    }
  }
  return out;
}
