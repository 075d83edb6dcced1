/**
 * Scaled dot-product attention over a key/value cache: the reference
 * kernel that attention layers run for prefill (many queries) and decode
 * (one query per sequence). Grouped-query attention maps query head `h` to
 * key/value head `⌊h / (heads / kvHeads)⌋`; masks are causal and optionally
 * a sliding window; the softmax subtracts the row maximum and accumulates
 * in float64.
 *
 * @module
 */

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

/**
 * Creates an empty cache.
 *
 * @param batch Number of sequences.
 * @param kvHeads Key/value heads.
 * @param headDim Size of one head.
 * @param capacity Positions to allocate up front (grows on demand). @default 16
 * @returns The cache, with `length` 0.
 *
 * @example
 * ```ts
 * import { createKvCache } from "./attention.ts";
 * const c = createKvCache(2, 4, 8, 32);
 * console.assert(c.length === 0 && c.k.length === 2 * 4 * 32 * 8);
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
  return {
    batch,
    kvHeads,
    headDim,
    length: 0,
    capacity: cap,
    k: new Float32Array(n),
    v: new Float32Array(n),
  };
}

function grow(cache: KvCache, need: number): void {
  let cap = cache.capacity;
  while (cap < need) cap *= 2;
  const { batch, kvHeads, headDim } = cache;
  const k = new Float32Array(batch * kvHeads * cap * headDim);
  const v = new Float32Array(k.length);
  const used = cache.length * headDim;
  for (let bh = 0; bh < batch * kvHeads; bh++) {
    const from = bh * cache.capacity * headDim;
    const to = bh * cap * headDim;
    k.set(cache.k.subarray(from, from + used), to);
    v.set(cache.v.subarray(from, from + used), to);
  }
  cache.k = k;
  cache.v = v;
  cache.capacity = cap;
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
 * import { appendKv, createKvCache } from "./attention.ts";
 * const c = createKvCache(1, 1, 2, 1);
 * appendKv(c, new Float32Array([1, 2, 3, 4]), new Float32Array(4), 2);
 * console.assert(c.length === 2 && c.k[3] === 4);
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
}

/**
 * Softmax attention of `seq` queries per sequence against every cached
 * position: `out = softmax(q·kᵀ·scale + mask)·v` per head.
 *
 * @param q Queries, `[batch, seq, heads·headDim]` (RoPE applied).
 * @param cache Keys and values; positions `0 … length−1` are attended.
 * @param opts Heads, query count, masking.
 * @returns `[batch, seq, heads·headDim]`, ready for the output projection.
 * @throws {RangeError} On inconsistent sizes.
 *
 * @example
 * ```ts
 * import { appendKv, attend, createKvCache } from "./attention.ts";
 * const c = createKvCache(1, 1, 1);
 * appendKv(c, new Float32Array([0, 0]), new Float32Array([2, 4]), 2);
 * const out = attend(new Float32Array([1, 1]), c, { heads: 1, seq: 2 });
 * console.assert(out[0] === 2 && out[1] === 3); // second query averages both
 * ```
 */
export function attend(
  q: Float32Array,
  cache: KvCache,
  opts: AttendOptions,
): Float32Array {
  const { batch, kvHeads, headDim: dim, length: len, capacity: cap } = cache;
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
