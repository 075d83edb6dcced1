/**
 * The merge loop shared by rank-driven BPE and score-driven SentencePiece
 * BPE: a sequence of symbol ids is merged pair by pair, always taking the
 * adjacent pair with the lowest cost, leftmost first on ties, until no
 * adjacent pair is mergeable. Private to `tokenizers/`.
 *
 * @module
 */

/** Symbol ids must stay below this so that a pair packs into one number. */
export const MAX_SYMBOLS = 1 << 26;

/** The packed key of the pair (a, b); both must be in [0, MAX_SYMBOLS). */
export function pairKey(a: number, b: number): number {
  return a * MAX_SYMBOLS + b;
}

/** Words up to this many symbols use the plain quadratic scan (no heap). */
const SMALL_WORD = 10;

/**
 * Mergeable pairs: `pairs` maps a {@link pairKey} to an entry index;
 * `costs[entry]` orders merges (lower first), `results[entry]` is the symbol
 * the pair becomes.
 */
export class PairMerger {
  readonly pairs: Map<number, number>;
  readonly costs: Float64Array;
  readonly results: Int32Array;

  // scratch, reused across calls (encode is synchronous, so never shared)
  #next = new Int32Array(64);
  #prev = new Int32Array(64);
  #hCost = new Float64Array(64);
  #hLeft = new Int32Array(64);
  #hRight = new Int32Array(64);
  #hLsym = new Int32Array(64);
  #hRsym = new Int32Array(64);
  #hRes = new Int32Array(64);
  #hSize = 0;

  constructor(
    pairs: Map<number, number>,
    costs: Float64Array,
    results: Int32Array,
  ) {
    this.pairs = pairs;
    this.costs = costs;
    this.results = results;
  }

  /** The entry index for the pair (a, b), or -1. Negative ids never merge. */
  find(a: number, b: number): number {
    if (a < 0 || b < 0) return -1;
    const e = this.pairs.get(a * MAX_SYMBOLS + b);
    return e === undefined ? -1 : e;
  }

  /**
   * Merges `syms[0, n)` in place and returns the new length.
   */
  merge(syms: Int32Array, n: number): number {
    if (n < 2) return n;
    return n <= SMALL_WORD
      ? this.#mergeSmall(syms, n)
      : this.#mergeHeap(syms, n);
  }

  #mergeSmall(s: Int32Array, n: number): number {
    const costs = this.costs;
    for (;;) {
      let best = -1;
      let bestCost = Infinity;
      let bestEntry = -1;
      for (let i = 0; i + 1 < n; i++) {
        const e = this.find(s[i], s[i + 1]);
        if (e >= 0 && costs[e] < bestCost) {
          best = i;
          bestCost = costs[e];
          bestEntry = e;
        }
      }
      if (best < 0) return n;
      s[best] = this.results[bestEntry];
      s.copyWithin(best + 1, best + 2, n);
      n--;
    }
  }

  #mergeHeap(s: Int32Array, n: number): number {
    if (this.#next.length < n) {
      this.#next = new Int32Array(n * 2);
      this.#prev = new Int32Array(n * 2);
    }
    const next = this.#next;
    const prev = this.#prev;
    for (let i = 0; i < n; i++) {
      next[i] = i + 1 < n ? i + 1 : -1;
      prev[i] = i - 1;
    }
    this.#hSize = 0;
    for (let i = 0; i + 1 < n; i++) this.#offer(s, i, i + 1);
    while (this.#hSize > 0) {
      const left = this.#hLeft[0];
      const right = this.#hRight[0];
      const lsym = this.#hLsym[0];
      const rsym = this.#hRsym[0];
      const res = this.#hRes[0];
      this.#pop();
      // stale entry: a side was merged away or changed since it was queued
      if (next[left] !== right || s[left] !== lsym || s[right] !== rsym) {
        continue;
      }
      s[left] = res;
      s[right] = -2147483648; // dead
      const after = next[right];
      next[left] = after;
      next[right] = -1;
      if (after >= 0) prev[after] = left;
      if (prev[left] >= 0) this.#offer(s, prev[left], left);
      if (after >= 0) this.#offer(s, left, after);
    }
    let m = 0;
    for (let i = 0; i !== -1; i = next[i]) s[m++] = s[i];
    return m;
  }

  #offer(s: Int32Array, left: number, right: number): void {
    const e = this.find(s[left], s[right]);
    if (e < 0) return;
    if (this.#hSize === this.#hCost.length) this.#grow();
    const cost = this.costs[e];
    // sift up
    let i = this.#hSize++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pc = this.#hCost[p];
      if (pc < cost || (pc === cost && this.#hLeft[p] < left)) break;
      this.#move(p, i);
      i = p;
    }
    this.#hCost[i] = cost;
    this.#hLeft[i] = left;
    this.#hRight[i] = right;
    this.#hLsym[i] = s[left];
    this.#hRsym[i] = s[right];
    this.#hRes[i] = this.results[e];
  }

  #pop(): void {
    const last = --this.#hSize;
    if (last === 0) return;
    const cost = this.#hCost[last];
    const left = this.#hLeft[last];
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= last) break;
      const r = c + 1;
      if (
        r < last &&
        (this.#hCost[r] < this.#hCost[c] ||
          (this.#hCost[r] === this.#hCost[c] &&
            this.#hLeft[r] < this.#hLeft[c]))
      ) c = r;
      const cc = this.#hCost[c];
      if (cost < cc || (cost === cc && left < this.#hLeft[c])) break;
      this.#move(c, i);
      i = c;
    }
    this.#move(last, i);
  }

  #move(from: number, to: number): void {
    this.#hCost[to] = this.#hCost[from];
    this.#hLeft[to] = this.#hLeft[from];
    this.#hRight[to] = this.#hRight[from];
    this.#hLsym[to] = this.#hLsym[from];
    this.#hRsym[to] = this.#hRsym[from];
    this.#hRes[to] = this.#hRes[from];
  }

  #grow(): void {
    const cap = this.#hCost.length * 2;
    const f = (a: Int32Array) => {
      const b = new Int32Array(cap);
      b.set(a);
      return b;
    };
    const c = new Float64Array(cap);
    c.set(this.#hCost);
    this.#hCost = c;
    this.#hLeft = f(this.#hLeft);
    this.#hRight = f(this.#hRight);
    this.#hLsym = f(this.#hLsym);
    this.#hRsym = f(this.#hRsym);
    this.#hRes = f(this.#hRes);
  }
}
