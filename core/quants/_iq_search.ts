/**
 * The steps the lattice encoders (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S) have in common: the super-block's variance and the
 * per-value weights, the split of a group into magnitudes and sign bits,
 * ggml's scale search over grid-rounded groups and its final refit, and
 * the packing of a group's levels into its grid index. Every float
 * operation is rounded to F32 in C's order.
 *
 * @module
 */

import { nearestInt } from "./_common.ts";
import { bestNeighbour, type Lattice } from "./_iq_lattice.ts";

const fround = Math.fround;

/**
 * The sum of squares of `n` values from `xo`, accumulated in order.
 *
 * @param x The values.
 * @param xo The first.
 * @param n How many.
 * @returns The sum.
 */
export function sumSquares(x: Float32Array, xo: number, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) s = fround(s + fround(x[xo + i] * x[xo + i]));
  return s;
}

/**
 * The largest of `n` values from `xo` (NaN if any is).
 *
 * @param x The values.
 * @param xo The first.
 * @param n How many.
 * @returns The maximum.
 */
export function maxOf(x: Float32Array, xo: number, n: number): number {
  let max = x[xo];
  for (let i = 1; i < n; i++) max = Math.max(max, x[xo + i]);
  return max;
}

/**
 * The largest magnitude of `n` values from `xo` (NaN if any is).
 *
 * @param x The values.
 * @param xo The first.
 * @param n How many.
 * @returns The maximum of `|x|`.
 */
export function absMaxOf(x: Float32Array, xo: number, n: number): number {
  let max = Math.abs(x[xo]);
  for (let i = 1; i < n; i++) max = Math.max(max, Math.abs(x[xo + i]));
  return max;
}

/**
 * The weights of `n` values from `xb`: with an importance matrix
 * `qw[qo + i] * sqrt(sigma2 + x²)`, without one `c * sigma2 + x²` (just
 * `x²` when `c` is 0). With `waux`, also their square roots there.
 *
 * @param x The values.
 * @param xb The first.
 * @param n How many.
 * @param qw The importance matrix, or none.
 * @param qo Where the values' columns start in `qw`.
 * @param sigma2 The super-block's variance term.
 * @param c The variance's share without a matrix.
 * @param weight Receives the weights.
 * @param waux Receives their square roots, when given.
 */
export function groupWeights(
  x: Float32Array,
  xb: number,
  n: number,
  qw: Float32Array | undefined,
  qo: number,
  sigma2: number,
  c: number,
  weight: Float32Array,
  waux?: Float32Array,
): void {
  for (let i = 0; i < n; i++) {
    const v = x[xb + i];
    weight[i] = qw
      ? fround(qw[qo + i] * fround(Math.sqrt(fround(sigma2 + fround(v * v)))))
      : c
      ? fround(fround(c * sigma2) + fround(v * v))
      : fround(v * v);
    if (waux) waux[i] = fround(Math.sqrt(weight[i]));
  }
}

/**
 * Splits the 8 values at `x[xb + at]` into magnitudes (`xval[at..]`) and
 * sign bits. With `even`, an odd count of negatives is made even by
 * flipping the value of least weighted square (ggml's 7-bit sign codes).
 *
 * @param x The values.
 * @param xb The sub-block's first value.
 * @param at The group's offset in the sub-block (and in `weight`, `xval`).
 * @param weight The sub-block's weights.
 * @param xval Receives the magnitudes.
 * @param even Whether to flip one sign for an even count.
 * @returns The sign bits (bit i: value i is negative).
 */
export function splitSigns(
  x: Float32Array,
  xb: number,
  at: number,
  weight: Float32Array,
  xval: Float32Array,
  even: boolean,
): number {
  let nflip = 0, s = 0;
  for (let i = 0; i < 8; i++) {
    const v = x[xb + at + i];
    if (v >= 0) xval[at + i] = v;
    else {
      xval[at + i] = -v;
      nflip++;
      s |= 1 << i;
    }
  }
  if (even && nflip % 2) {
    let imin = 0;
    let min = fround(fround(weight[at] * x[xb + at]) * x[xb + at]);
    for (let i = 1; i < 8; i++) {
      const v = x[xb + at + i];
      const ax = fround(fround(weight[at + i] * v) * v);
      if (ax < min) {
        min = ax;
        imin = i;
      }
    }
    xval[at + imin] = -xval[at + imin];
    s ^= 1 << imin;
  }
  return s;
}

/**
 * The level `l` in `0..max` whose odd value `2l + 1` is nearest to `id * v`
 * (ggml's `nearest_int(0.5f*(id*v - 1))`, clamped).
 *
 * @param id The inverse scale.
 * @param v The value.
 * @param max The highest level.
 * @returns The level.
 */
export function oddLevel(id: number, v: number, max: number): number {
  const l = nearestInt(fround(0.5 * fround(fround(id * v) - 1)));
  return Math.max(0, Math.min(max, l));
}

/** The scratch of one sub-block's grid search. */
export interface GridSearch {
  /** The lattice. */
  g: Lattice;
  /** Values per sub-block. */
  n: number;
  /** Levels per coordinate. */
  kMaxQ: number;
  /** The weights. */
  weight: Float32Array;
  /** Their square roots (the neighbour search's weights). */
  waux: Float32Array;
  /** The magnitudes. */
  xval: Float32Array;
  /** The best levels so far. */
  L: Int8Array;
  /** The levels of the trial scale. */
  Laux: Int8Array;
  /** Per group: whether the best levels were on the grid as rounded. */
  onGrid: boolean[];
  /** The same for the trial scale. */
  onGridAux: boolean[];
  /** The last weighted sums (see `weightedSums`). */
  sumqx: number;
  /** The last weighted sum of squares. */
  sumq2: number;
}

/**
 * A search scratch for sub-blocks of `n` values on lattice `g`.
 *
 * @param g The lattice.
 * @param n Values per sub-block.
 * @param kMaxQ Levels per coordinate.
 * @returns The scratch.
 */
export function gridSearch(g: Lattice, n: number, kMaxQ: number): GridSearch {
  const groups = n / g.dim;
  return {
    g,
    n,
    kMaxQ,
    weight: new Float32Array(n),
    waux: new Float32Array(n),
    xval: new Float32Array(n),
    L: new Int8Array(n),
    Laux: new Int8Array(n),
    onGrid: new Array<boolean>(groups).fill(true),
    onGridAux: new Array<boolean>(groups).fill(true),
    sumqx: 0,
    sumq2: 0,
  };
}

/** `sumqx = Σ w·x·q` and `sumq2 = Σ w·q²` with `q = 2L + 1`, into `s`. */
function weightedSums(s: GridSearch, L: Int8Array): void {
  const { weight, xval } = s;
  let sumqx = 0, sumq2 = 0;
  for (let i = 0; i < s.n; i++) {
    const w = weight[i], q = 2 * L[i] + 1;
    sumqx = fround(sumqx + fround(fround(w * xval[i]) * q));
    sumq2 = fround(sumq2 + fround(fround(w * q) * q));
  }
  s.sumqx = sumqx;
  s.sumq2 = sumq2;
}

/**
 * Group `k` of the magnitudes rounded at `1/id` to levels (written into
 * `out` when given), packed as the lattice's map key.
 */
function roundGroup(
  s: GridSearch,
  id: number,
  k: number,
  out?: Int8Array,
): number {
  const dim = s.g.dim, bits = s.g.bits, xval = s.xval, max = s.kMaxQ - 1;
  let u = 0;
  for (let i = 0; i < dim; i++) {
    const l = oddLevel(id, xval[dim * k + i], max);
    if (out) out[dim * k + i] = l;
    u |= l << (bits * i);
  }
  return u;
}

/**
 * ggml's scale search: for each trial `id = (2·kMaxQ − 1 + is·step) / max`
 * (`is` from −isMax to isMax) rounds every group to the lattice (an
 * off-grid point to its best neighbour at `1/id`) and keeps the levels (in
 * `L`, with `onGrid`) and the scale of the best weighted fit.
 *
 * @param s The scratch, its weights and magnitudes set.
 * @param max The value the trial scales are spread over.
 * @param isMax How many trial steps each side.
 * @param step The trial step.
 * @param scale The scale when no trial fits.
 * @returns The best scale.
 */
export function searchScale(
  s: GridSearch,
  max: number,
  isMax: number,
  step: number,
  scale: number,
): number {
  const { g, xval, waux, Laux, onGridAux, kMaxQ } = s;
  const dim = g.dim, groups = s.n / dim;
  let best = 0;
  for (let is = -isMax; is <= isMax; is++) {
    const id = fround(fround(2 * kMaxQ - 1 + fround(is * step)) / max);
    const thisScale = fround(1 / id);
    for (let k = 0; k < groups; k++) {
      const u = roundGroup(s, id, k, Laux);
      onGridAux[k] = true;
      if (g.map[u] < 0) {
        onGridAux[k] = false;
        bestNeighbour(g, u, xval, dim * k, waux, thisScale, Laux);
      }
    }
    weightedSums(s, Laux);
    const { sumqx, sumq2 } = s;
    if (sumq2 > 0 && fround(sumqx * sumqx) > fround(best * sumq2)) {
      scale = fround(sumqx / sumq2);
      best = fround(scale * sumqx);
      s.L.set(Laux);
      for (let k = 0; k < groups; k++) s.onGrid[k] = onGridAux[k];
    }
  }
  return scale;
}

/**
 * ggml's last pass: rounds the groups again at `scale` (all of them, or
 * with `offGridOnly` those whose best levels were off the grid), takes
 * the best neighbour of an off-grid point, and refits the scale.
 *
 * @param s The scratch after `searchScale`.
 * @param scale The scale (positive).
 * @param offGridOnly Whether to keep the groups that were on the grid.
 * @returns The refitted scale.
 */
export function refineScale(
  s: GridSearch,
  scale: number,
  offGridOnly: boolean,
): number {
  const { g, xval, waux, L, onGrid } = s;
  const dim = g.dim, groups = s.n / dim;
  const id = fround(1 / scale);
  for (let k = 0; k < groups; k++) {
    if (offGridOnly && onGrid[k]) continue;
    const u = roundGroup(s, id, k);
    let index = g.map[u];
    if (index < 0) index = bestNeighbour(g, u, xval, dim * k, waux, scale, L);
    for (let i = 0; i < dim; i++) {
      L[dim * k + i] = (g.pos[dim * index + i] - 1) >> 1;
    }
  }
  weightedSums(s, L);
  return s.sumq2 > 0 ? fround(s.sumqx / s.sumq2) : scale;
}

/**
 * The grid index of group `k`'s levels in `L`.
 *
 * @param type The type, for the message.
 * @param g The lattice.
 * @param L The levels.
 * @param k The group.
 * @returns The index.
 * @throws {RangeError} When the levels are not on the grid.
 */
export function gridIndex(
  type: string,
  g: Lattice,
  L: Int8Array,
  k: number,
): number {
  const dim = g.dim, bits = g.bits;
  let u = 0;
  for (let i = 0; i < dim; i++) u |= L[dim * k + i] << (bits * i);
  const index = g.map[u];
  if (index < 0) {
    throw new RangeError(`${type}: levels ${u} are not on the grid`);
  }
  return index;
}
