/**
 * One product on packed weights for the system BLAS backend (io/blas.ts):
 * the descriptor written, the helper thread woken, x packed in tasks by
 * both threads while the calling thread allocates y (or takes the
 * caller's array), then the work items of io/_blas_packed.ts on both.
 *
 * @module
 */

import {
  blockK,
  markDone,
  outputRows,
  type PackedGemm,
  packedSoon,
  packRows,
  packSync,
  planPacked,
  runPackedItems,
  runPackTasks,
} from "./_blas_packed.ts";
import type { SgemmHelper } from "./_blas_threads.ts";

/** What a packed product needs from the backend that runs it. */
export interface PackedRunner {
  /** The library's packed routines and weights. */
  packed: PackedGemm;
  /** The helper thread (its address list holds the descriptor). */
  packer: SgemmHelper;
  /** BLAS threads (more than 1: the helper takes items too). */
  threads: number;
  /** Products with this many rows or more are not packed. */
  packedRows: number;
  /** Wake the helper before the descriptor is written (`packedEarlyWake`). */
  earlyWake: boolean;
  /** Most outputs per item (`packedGroup`). */
  group: number;
  /** Populate a new output's pages first (`packedPopulate`). */
  populate: boolean;
  /** Milliseconds the calling thread polls for the helper (`packedSpin`). */
  spin: number;
  /** Counts of products, items and the helper's items. */
  stats: { products: number; items: number; helperItems: number };
}

/**
 * The address of a float array's first value. Reading `buffer` first
 * moves a small typed array's values off the V8 heap, where the garbage
 * collector could move them mid-product.
 */
export function addressOf(v: Float32Array): number {
  if (!v.buffer) throw new TypeError("Cannot multiply: no buffer");
  return Number(Deno.UnsafePointer.value(Deno.UnsafePointer.of(v)));
}

/**
 * `y = x·Wᵀ + b` (with `relu`, then the ReLU) on packed W, into `into`
 * (zeroed by the items) or a new zeroed array; null where the packed path
 * does not take the product (rows past `packedRows`, an empty shape, no
 * room for W in the budget).
 *
 * @throws {RangeError} When x or the bias is shorter than its shape.
 */
export function runPackedProduct(
  r: PackedRunner,
  x: Float32Array,
  rows: number,
  inF: number,
  w: Float32Array,
  outF: number,
  bias: Float32Array | undefined,
  relu = false,
  into?: Float32Array,
): Float32Array | null {
  const { packed, packer, threads, packedRows, earlyWake, group } = r;
  const { populate, spin, stats } = r;
  if (rows >= packedRows || rows < 1 || inF < 1 || outF < 1) return null;
  const pw = packed.weight(w, outF, inF);
  if (!pw) return null;
  packed.check(x, rows, inF, bias, outF);
  const two = threads > 1 && !packer.broken;
  const fam = packed.family;
  const plan = planPacked(fam, rows, outF, group);
  const d = packer.addresses;
  // wake the helper first, so its wake-up overlaps y's allocation and
  // x's packing; it reads the descriptor after `go`
  let shared = two && earlyWake
    ? packer.start(null, 0, plan.count, true, true)
    : null;
  let mine = 0, ready = false, yReady = false;
  let y: Float32Array | undefined;
  const sync = packSync(d);
  try {
    const kc = blockK(fam, inF), pg = packRows(fam, rows);
    const groups = Math.ceil(rows / pg);
    const tasks = Math.ceil(inF / kc) * groups;
    Atomics.store(sync, 0, 0);
    Atomics.store(sync, 1, 0);
    Atomics.store(sync, 3, 0);
    d.set([
      pw.at,
      packed.xBuffer(rows * inF),
      0, // y's address, below
      outF,
      rows,
      inF,
      kc,
      fam.mc,
      plan.gm,
      plan.gn,
      plan.mItems,
      plan.count,
      ...packed.biasOnes(bias, outF, rows),
      relu ? 1 : 0,
      into ? 1 : 0,
      addressOf(x),
      tasks,
      pg,
      groups,
    ]);
    ready = true;
    if (shared) packer.go();
    else if (two) shared = packer.start(null, 0, plan.count, true);
    // the helper, once awake, packs x's tasks while y is allocated here
    const out = into
      ? { y: into, at: addressOf(into) }
      : outputRows(rows, outF, populate);
    y = out.y;
    d[2] = out.at;
    yReady = true;
    markDone(sync);
    runPackTasks(packed.oncopyAt, d, sync);
    // the helper's last task not done at once (its core taken away),
    // or failed (the helper then runs no item): all of x here, the
    // same values (the helper's task writes them too, before finish)
    if (!packedSoon(sync, tasks + 1) || Atomics.load(sync, 3) !== 0) {
      packed.packX(x, rows, inF);
    }
    const take = shared ?? ((k) => () => k++)(0);
    const next = () => {
      const i = take();
      if (i < plan.count) mine++;
      return i;
    };
    stats.products++;
    stats.items += plan.count;
    runPackedItems(packed.kernel, d, next, y);
  } finally {
    // on a throw before y's address was set, the helper is let go on
    // an empty job (after packing what it takes of x, whose count the
    // barrier waits for)
    if (!ready) d[17] = 0;
    if (!yReady) {
      d[11] = 0;
      markDone(sync);
    }
    const failed = two ? packer.finish(spin) : -1;
    if (ready) {
      stats.helperItems += plan.count - mine - (failed >= 0 ? 1 : 0);
    }
    if (failed >= 0) {
      let once = failed;
      runPackedItems(packed.kernel, d, () => {
        const i = once;
        once = plan.count;
        return i;
      }, y);
    }
  }
  return y;
}
