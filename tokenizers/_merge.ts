/**
 * The merge loop shared by rank-driven BPE and score-driven SentencePiece
 * BPE: a sequence of symbol ids is merged pair by pair, always taking the
 * adjacent pair with the lowest cost, leftmost first on ties, until no
 * adjacent pair is mergeable. Private to `tokenizers/`.
 *
 * @module
 */

/** Most symbols (vocabulary plus merge results) a model may intern; a hostile-size limit. */
export const MAX_SYMBOLS = 1 << 26;

/**
 * An open-addressing hash table from a pair of symbol ids to an entry
 * index, stored in typed arrays (much faster than a `Map` with packed
 * 52-bit keys, which V8 stores as heap numbers).
 */
export class PairTable {
  #a: Int32Array;
  #b: Int32Array;
  #v: Int32Array;
  #mask: number;
  #size = 0;

  /** Creates a table sized for about `expected` pairs. */
  constructor(expected = 16) {
    let cap = 16;
    while (cap < expected * 2) cap *= 2;
    this.#a = new Int32Array(cap).fill(-1);
    this.#b = new Int32Array(cap);
    this.#v = new Int32Array(cap);
    this.#mask = cap - 1;
  }

  /** Number of pairs held. */
  get size(): number {
    return this.#size;
  }

  static #hash(a: number, b: number): number {
    let h = Math.imul(a ^ Math.imul(b, 0x85ebca77), 0x9e3779b1);
    h ^= h >>> 15;
    return h;
  }

  /** Adds (a, b) -> v unless the pair is present; returns whether it was added. */
  add(a: number, b: number, v: number): boolean {
    if ((this.#size + 1) * 2 > this.#a.length) this.#grow();
    const mask = this.#mask;
    let i = PairTable.#hash(a, b) & mask;
    for (;;) {
      const ka = this.#a[i];
      if (ka === -1) break;
      if (ka === a && this.#b[i] === b) return false;
      i = (i + 1) & mask;
    }
    this.#a[i] = a;
    this.#b[i] = b;
    this.#v[i] = v;
    this.#size++;
    return true;
  }

  /** The value of (a, b), or -1. */
  get(a: number, b: number): number {
    const mask = this.#mask;
    const ta = this.#a;
    let i = PairTable.#hash(a, b) & mask;
    for (;;) {
      const ka = ta[i];
      if (ka === -1) return -1;
      if (ka === a && this.#b[i] === b) return this.#v[i];
      i = (i + 1) & mask;
    }
  }

  #grow(): void {
    const [oa, ob, ov] = [this.#a, this.#b, this.#v];
    const cap = oa.length * 2;
    this.#a = new Int32Array(cap).fill(-1);
    this.#b = new Int32Array(cap);
    this.#v = new Int32Array(cap);
    this.#mask = cap - 1;
    this.#size = 0;
    for (let i = 0; i < oa.length; i++) {
      if (oa[i] !== -1) this.add(oa[i], ob[i], ov[i]);
    }
  }
}

/**
 * The pairs of UTF-16 code units that sit next to each other inside any of
 * `texts`. Between two characters whose pair is missing, no symbol can ever
 * span, so a long sequence can be merged piece by piece, cut at those
 * places, with the same result.
 */
export function adjacentUnits(texts: Iterable<string>): PairTable {
  const t = new PairTable(1024);
  for (const s of texts) {
    for (let i = 1; i < s.length; i++) {
      t.add(s.charCodeAt(i - 1), s.charCodeAt(i), 1);
    }
  }
  return t;
}

/**
 * Where `text` may be cut (see {@link adjacentUnits}): calls `segment` with
 * consecutive [start, end) ranges covering the text, never splitting a
 * surrogate pair.
 */
export function forEachSegment(
  text: string,
  joins: PairTable,
  segment: (start: number, end: number) => void,
): void {
  let start = 0;
  let prev = text.charCodeAt(0);
  for (let i = 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0xdc00 || c > 0xdfff) && joins.get(prev, c) === -1) {
      segment(start, i);
      start = i;
    }
    prev = c;
  }
  segment(start, text.length);
}

/** Words up to this many symbols use the plain quadratic scan (no heap). */
const SMALL_WORD = 24;

/**
 * Mergeable pairs: `pairs` maps a pair of symbol ids to an entry index;
 * `costs[entry]` orders merges (lower first), `results[entry]` is the symbol
 * the pair becomes.
 */
export class PairMerger {
  readonly pairs: PairTable;
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
    pairs: PairTable,
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
    return this.pairs.get(a, b);
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
    const results = this.results;
    // pe[i]: the entry for the pair (s[i], s[i + 1]), or -1
    const pe = this.#prev;
    for (let i = 0; i + 1 < n; i++) pe[i] = this.find(s[i], s[i + 1]);
    for (;;) {
      let best = -1;
      let bestCost = Infinity;
      for (let i = 0; i + 1 < n; i++) {
        const e = pe[i];
        if (e >= 0 && costs[e] < bestCost) {
          best = i;
          bestCost = costs[e];
        }
      }
      if (best < 0) return n;
      s[best] = results[pe[best]];
      s.copyWithin(best + 1, best + 2, n);
      pe.copyWithin(best + 1, best + 2, n - 1);
      n--;
      if (best > 0) pe[best - 1] = this.find(s[best - 1], s[best]);
      if (best + 1 < n) pe[best] = this.find(s[best], s[best + 1]);
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
