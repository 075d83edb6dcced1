/**
 * Scaled dot-product attention over a KV cache, for prefill (many query
 * rows) and decode (one), with grouped-query heads, on WebAssembly SIMD
 * split by heads across worker threads. Its scalar twin is `attendRef` of
 * `kernels/attention.ts`, the one attention reference, which it runs where
 * it cannot run itself; {@link fastAttentionRef} is that reference on this
 * module's caches.
 *
 * A call appends the new keys and values (already position-encoded) to
 * the cache, then lets each query row attend to the cache: query `i` of a
 * call made with `cache.length = L` sits at position `L + i` and, when
 * causal, sees keys `0..L+i`. The cache is passed in, never hidden in
 * module state; create one per layer with {@link createKvCache}.
 *
 * @module
 */

import { type Engine, getEngine } from "../wasm/_engine.ts";
import { runSplit } from "./_dispatch.ts";
import { attendRef } from "../attention.ts";

/** A key/value cache for one attention layer. */
export interface KvCache {
  /** Key/value heads. */
  readonly kvHeads: number;
  /** Values per head. */
  readonly headDim: number;
  /** Positions it can hold. */
  readonly capacity: number;
  /** Positions filled so far. */
  length: number;
  /** Keys, `[kvHeads][capacity][headDim]` (a view; re-read after calls). */
  readonly k: Float32Array;
  /** Values, same layout as `k`. */
  readonly v: Float32Array;
}

/** Options of {@link createKvCache}. */
export interface KvCacheOptions {
  /** Key/value heads. */
  kvHeads: number;
  /** Values per head. */
  headDim: number;
  /** Positions it can hold. */
  capacity: number;
  /**
   * Keep it in kernel memory (needed by {@link fastAttention}'s SIMD path);
   * `false` makes a plain-array cache (the reference path).
   * @default {true}
   */
  fast?: boolean;
}

/** A cache living in kernel memory; its arrays are views re-made on access. */
class EngineKvCache implements KvCache {
  readonly kvHeads: number;
  readonly headDim: number;
  readonly capacity: number;
  length = 0;
  readonly ptrK: number;
  readonly ptrV: number;
  readonly engine: Engine;
  constructor(e: Engine, kvHeads: number, headDim: number, capacity: number) {
    this.engine = e;
    this.kvHeads = kvHeads;
    this.headDim = headDim;
    this.capacity = capacity;
    const n = kvHeads * capacity * headDim * 4;
    this.ptrK = e.alloc(n);
    this.ptrV = e.alloc(n);
    e.u8.fill(0, this.ptrK, this.ptrK + n);
    e.u8.fill(0, this.ptrV, this.ptrV + n);
    FINALIZER.register(this, { e, k: this.ptrK, v: this.ptrV });
  }
  get k(): Float32Array {
    return new Float32Array(
      this.engine.memory.buffer,
      this.ptrK,
      this.kvHeads * this.capacity * this.headDim,
    );
  }
  get v(): Float32Array {
    return new Float32Array(
      this.engine.memory.buffer,
      this.ptrV,
      this.kvHeads * this.capacity * this.headDim,
    );
  }
}

const FINALIZER = new FinalizationRegistry<
  { e: Engine; k: number; v: number }
>(
  ({ e, k, v }) => {
    e.free(k);
    e.free(v);
  },
);

/**
 * Creates an empty KV cache.
 *
 * @param opts Heads, head size, capacity and where it lives.
 * @returns The cache (`length` 0). A fast cache's memory is freed when the
 * cache is garbage collected.
 * @throws {RangeError} When a size is not a positive integer.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createKvCache } from "@modelhost/modelhost/kernels/fast";
 * const cache = createKvCache({ kvHeads: 2, headDim: 8, capacity: 16 });
 * assert(cache.length === 0 && cache.k.length === 2 * 16 * 8);
 * ```
 */
export function createKvCache(opts: KvCacheOptions): KvCache {
  const { kvHeads, headDim, capacity } = opts;
  for (const [k, v] of Object.entries({ kvHeads, headDim, capacity })) {
    if (!Number.isInteger(v) || v <= 0) {
      throw new RangeError(
        `Cannot create a KV cache with ${k} = ${v}: expected a positive integer`,
      );
    }
  }
  const e = opts.fast === false ? null : getEngine();
  if (e) return new EngineKvCache(e, kvHeads, headDim, capacity);
  const n = kvHeads * capacity * headDim;
  return {
    kvHeads,
    headDim,
    capacity,
    length: 0,
    k: new Float32Array(n),
    v: new Float32Array(n),
  };
}

/** Options of {@link fastAttention} and {@link fastAttentionRef}. */
export interface AttentionOptions {
  /** Query heads. */
  heads: number;
  /** Scale of the scores. @default {1 / sqrt(headDim)} */
  scale?: number;
  /**
   * Whether query `i` sees only keys up to its own position (decoder
   * self-attention); otherwise every query sees all cached keys.
   * @default {true}
   */
  causal?: boolean;
}

interface Shape {
  seq: number;
  heads: number;
  kvH: number;
  hd: number;
  start: number;
  scale: number;
  causal: boolean;
}

function shapeOf(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  cache: KvCache,
  o: AttentionOptions,
): Shape {
  const { kvHeads: kvH, headDim: hd } = cache;
  const heads = o.heads;
  if (!Number.isInteger(heads) || heads <= 0 || heads % kvH !== 0) {
    throw new TypeError(
      `Cannot attend with ${heads} query heads over ${kvH} key/value heads: query heads must be a positive multiple`,
    );
  }
  if (q.length % (heads * hd) !== 0) {
    throw new TypeError(
      `Cannot attend: queries have ${q.length} values, not a multiple of heads × headDim = ${
        heads * hd
      }`,
    );
  }
  const seq = q.length / (heads * hd);
  if (k.length !== seq * kvH * hd || v.length !== k.length) {
    throw new TypeError(
      `Cannot attend: ${seq} query rows need keys and values of ${
        seq * kvH * hd
      } values, got ${k.length} and ${v.length}`,
    );
  }
  if (cache.length + seq > cache.capacity) {
    throw new RangeError(
      `Cannot append ${seq} positions to a KV cache holding ${cache.length} of ${cache.capacity}`,
    );
  }
  return {
    seq,
    heads,
    kvH,
    hd,
    start: cache.length,
    scale: o.scale ?? 1 / Math.sqrt(hd),
    causal: o.causal ?? true,
  };
}

function append(
  dk: Float32Array,
  dv: Float32Array,
  k: Float32Array,
  v: Float32Array,
  s: Shape,
  capacity: number,
): void {
  for (let t = 0; t < s.seq; t++) {
    for (let h = 0; h < s.kvH; h++) {
      const from = (t * s.kvH + h) * s.hd;
      const to = (h * capacity + s.start + t) * s.hd;
      dk.set(k.subarray(from, from + s.hd), to);
      dv.set(v.subarray(from, from + s.hd), to);
    }
  }
}

/**
 * The reference step: appends to `cache`, then `attendRef` (the one
 * attention reference) on the cache seen as one sequence.
 */
function referenceStep(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  cache: KvCache,
  s: Shape,
): Float32Array {
  append(cache.k, cache.v, k, v, s, cache.capacity);
  cache.length += s.seq;
  return attendRef(q, {
    batch: 1,
    kvHeads: s.kvH,
    headDim: s.hd,
    length: cache.length,
    capacity: cache.capacity,
    k: cache.k,
    v: cache.v,
  }, {
    heads: s.heads,
    seq: s.seq,
    start: s.start,
    causal: s.causal,
    scale: s.scale,
  });
}

/**
 * Reference attention step on a cache of this module (F64 accumulation;
 * appends to `cache`): the append, then `attendRef` of
 * `kernels/attention.ts`, the one attention reference, over the cache as
 * one sequence. Not a second implementation: the face of `attendRef` for
 * the caches {@link createKvCache} makes.
 *
 * @param q Queries, `[seq][heads][headDim]`.
 * @param k New keys, `[seq][kvHeads][headDim]`.
 * @param v New values, like `k`.
 * @param cache The layer's cache; `length` grows by `seq`.
 * @param opts Heads, scale, causality.
 * @returns The attended values, `[seq][heads][headDim]`.
 * @throws {TypeError} When shapes disagree.
 * @throws {RangeError} When the cache is full.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createKvCache, fastAttentionRef } from "@modelhost/modelhost/kernels/fast";
 * const cache = createKvCache({ kvHeads: 1, headDim: 2, capacity: 4, fast: false });
 * const out = fastAttentionRef(new Float32Array([1, 0]), new Float32Array([1, 0]), new Float32Array([5, 6]), cache, { heads: 1 });
 * assert(out[0] === 5 && out[1] === 6 && cache.length === 1);
 * ```
 */
export function fastAttentionRef(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  cache: KvCache,
  opts: AttentionOptions,
): Float32Array {
  return referenceStep(q, k, v, cache, shapeOf(q, k, v, cache, opts));
}

/**
 * Attention (WebAssembly SIMD, heads split across worker threads), the
 * fast twin of `attendRef` (`kernels/attention.ts`). Needs a cache from
 * {@link createKvCache} in kernel memory and `headDim` a multiple of 4;
 * otherwise it appends and runs `attendRef`.
 *
 * @param q Queries, `[seq][heads][headDim]` (seq > 1: prefill, 1: decode).
 * @param k New keys, `[seq][kvHeads][headDim]`.
 * @param v New values, like `k`.
 * @param cache The layer's cache; `length` grows by `seq`.
 * @param opts Heads, scale, causality.
 * @returns The attended values, `[seq][heads][headDim]`.
 * @throws {TypeError} When shapes disagree.
 * @throws {RangeError} When the cache is full.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createKvCache, fastAttention } from "@modelhost/modelhost/kernels/fast";
 * const cache = createKvCache({ kvHeads: 1, headDim: 4, capacity: 8 });
 * const q = new Float32Array([1, 0, 0, 0, 0, 1, 0, 0]); // two positions
 * const k = q.slice(), v = new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]);
 * const out = fastAttention(q, k, v, cache, { heads: 1 });
 * assert(out[0] === 1 && cache.length === 2); // position 0 sees only itself
 * ```
 */
export function fastAttention(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  cache: KvCache,
  opts: AttentionOptions,
): Float32Array {
  const s = shapeOf(q, k, v, cache, opts);
  if (!(cache instanceof EngineKvCache) || s.hd % 4 !== 0) {
    return referenceStep(q, k, v, cache, s);
  }
  const e = cache.engine;
  append(cache.k, cache.v, k, v, s, cache.capacity);
  const total = s.start + s.seq;
  const qp = e.scratch("x", q.byteLength + 64);
  e.f32.set(q, qp >> 2);
  const op = e.scratch("y", q.byteLength + 64);
  const sc = e.scratch("scores", s.heads * total * 4 + 64);
  const work = s.seq * s.heads * total * s.hd * 2;
  runSplit(e, "attention", work, s.heads, (h0, h1) => [
    qp,
    cache.ptrK,
    cache.ptrV,
    op,
    sc,
    s.seq,
    s.heads,
    s.kvH,
    s.hd,
    cache.capacity,
    s.start,
    s.scale,
    s.causal ? 1 : 0,
    h0,
    h1,
  ]);
  cache.length += s.seq;
  return e.f32.slice(op >> 2, (op >> 2) + q.length);
}
