/**
 * K-means kernels (scalar reference versions): distances from rows to
 * centroids, seeded k-means++ initialization and Lloyd iterations.
 * Distances are computed in double precision straight from their
 * definitions (no `|x|² − 2x·c + |c|²` shortcut, so nothing cancels).
 *
 * @module
 */

import { createRng, type Rng } from "../core/rng.ts";

/** How distance between a row and a centroid is measured. */
export type DistanceMetric = "euclidean" | "cosine" | "manhattan";

/**
 * The metrics {@link distances} knows.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { DISTANCE_METRICS } from "@modelhost/modelhost/kernels";
 * assert(DISTANCE_METRICS.includes("cosine"));
 * ```
 */
export const DISTANCE_METRICS: readonly DistanceMetric[] = [
  "euclidean",
  "cosine",
  "manhattan",
];

/**
 * Distance of one row to one centroid: Euclidean `√Σ(x−c)²`, cosine
 * `1 − x·c / (|x||c|)` (similarity 0 when either vector is zero) or
 * Manhattan `Σ|x−c|`.
 */
function distance(
  x: ArrayLike<number>,
  xo: number,
  c: ArrayLike<number>,
  co: number,
  dim: number,
  metric: DistanceMetric,
): number {
  if (metric === "euclidean") {
    let s = 0;
    for (let i = 0; i < dim; i++) {
      const d = x[xo + i] - c[co + i];
      s += d * d;
    }
    return Math.sqrt(s);
  }
  if (metric === "manhattan") {
    let s = 0;
    for (let i = 0; i < dim; i++) s += Math.abs(x[xo + i] - c[co + i]);
    return s;
  }
  let dot = 0, nx = 0, nc = 0;
  for (let i = 0; i < dim; i++) {
    dot += x[xo + i] * c[co + i];
    nx += x[xo + i] * x[xo + i];
    nc += c[co + i] * c[co + i];
  }
  return nx === 0 || nc === 0 ? 1 : 1 - dot / Math.sqrt(nx * nc);
}

/**
 * Distances from every row to every centroid.
 *
 * @param x Rows, `rows × dim`, row-major.
 * @param rows Number of rows.
 * @param centroids Centroids, `k × dim`, row-major.
 * @param k Number of centroids.
 * @param dim Features per row.
 * @param metric The distance. @default {"euclidean"}
 * @returns `rows × k` distances (double precision).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { distances } from "@modelhost/modelhost/kernels";
 * const d = distances(new Float32Array([0, 0]), 1, new Float32Array([3, 4, 0, 1]), 2, 2);
 * assert(d[0] === 5 && d[1] === 1);
 * ```
 */
export function distances(
  x: ArrayLike<number>,
  rows: number,
  centroids: ArrayLike<number>,
  k: number,
  dim: number,
  metric: DistanceMetric = "euclidean",
): Float64Array {
  if (x.length !== rows * dim || centroids.length !== k * dim) {
    throw new RangeError(
      `Cannot compute distances: x has ${x.length} values for ${rows} × ${dim}, centroids ${centroids.length} for ${k} × ${dim}`,
    );
  }
  const out = new Float64Array(rows * k);
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < k; j++) {
      out[r * k + j] = distance(x, r * dim, centroids, j * dim, dim, metric);
    }
  }
  return out;
}

/** Index of the smallest of `k` values at `o` (the first one on ties). */
function argmin(d: ArrayLike<number>, o: number, k: number): number {
  let best = 0;
  for (let j = 1; j < k; j++) if (d[o + j] < d[o + best]) best = j;
  return best;
}

/**
 * Seeded k-means++ initialization (Arthur & Vassilvitskii, 2007): the first
 * centroid is a uniformly drawn row, each next one a row drawn with
 * probability proportional to its squared distance to the nearest centroid
 * chosen so far.
 *
 * @param data Rows, `rows × dim`.
 * @param rows Number of rows (at least `k`).
 * @param dim Features per row.
 * @param k Number of centroids.
 * @param rng The generator (or a seed).
 * @param metric The distance. @default {"euclidean"}
 * @returns `k × dim` centroids, each a copy of a data row.
 * @throws {RangeError} When there are fewer rows than centroids.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { kmeansPlusPlus } from "@modelhost/modelhost/kernels";
 * const c = kmeansPlusPlus(new Float32Array([0, 0, 10, 10]), 2, 2, 2, 1);
 * assert(c[0] + c[2] === 10);
 * ```
 */
export function kmeansPlusPlus(
  data: ArrayLike<number>,
  rows: number,
  dim: number,
  k: number,
  rng: Rng | number,
  metric: DistanceMetric = "euclidean",
): Float32Array {
  if (rows < k) {
    throw new RangeError(
      `Cannot pick ${k} centroids from ${rows} rows: k-means++ needs at least as many rows as clusters`,
    );
  }
  const g = typeof rng === "number" ? createRng(rng) : rng;
  const out = new Float32Array(k * dim);
  const near = new Float64Array(rows).fill(Infinity);
  let pick = g.int(rows);
  for (let j = 0; j < k; j++) {
    for (let i = 0; i < dim; i++) out[j * dim + i] = data[pick * dim + i];
    if (j === k - 1) break;
    let total = 0;
    for (let r = 0; r < rows; r++) {
      const d = distance(data, r * dim, out, j * dim, dim, metric);
      near[r] = Math.min(near[r], d * d);
      total += near[r];
    }
    if (total === 0) {
      pick = g.int(rows);
      continue;
    }
    let target = g.next() * total;
    pick = rows - 1;
    for (let r = 0; r < rows; r++) {
      target -= near[r];
      if (target < 0 && near[r] > 0) {
        pick = r;
        break;
      }
    }
  }
  return out;
}

/** Options of {@link fitKMeans}. */
export interface FitOptions {
  /** Number of clusters (k). */
  numClusters: number;
  /** Seed of the k-means++ draws. @default {0} */
  seed?: number;
  /** Start from these `k × dim` centroids instead of k-means++. */
  initialCentroids?: ArrayLike<number>;
  /** Most Lloyd iterations. @default {100} */
  maxIterations?: number;
  /** The distance rows are assigned by. @default {"euclidean"} */
  metric?: DistanceMetric;
}

/** What {@link fitKMeans} found. */
export interface FitResult {
  /** `k × dim` centroids. */
  centroids: Float32Array;
  /** The cluster of each row. */
  assignments: Int32Array;
  /** Lloyd iterations run. */
  iterations: number;
  /** Whether the assignments stopped changing before `maxIterations`. */
  converged: boolean;
  /** Sum over rows of the squared distance to their centroid. */
  inertia: number;
}

/**
 * Fits k-means centroids to data: k-means++ initialization (seeded) unless
 * centroids are given, then Lloyd iterations (assign each row to its nearest
 * centroid, move each centroid to the mean of its rows) until no assignment
 * changes. A cluster that loses all its rows keeps its centroid.
 *
 * @param data Rows, `rows × dim`, row-major.
 * @param rows Number of rows.
 * @param dim Features per row.
 * @param options Cluster count, seed, limits, metric.
 * @returns Centroids, assignments and fit statistics.
 * @throws {RangeError} When sizes disagree or there are fewer rows than clusters.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fitKMeans } from "@modelhost/modelhost/kernels";
 * const data = new Float32Array([0, 0, 0, 1, 10, 10, 10, 11]);
 * const fit = fitKMeans(data, 4, 2, { numClusters: 2, seed: 3 });
 * assert(fit.converged && fit.inertia === 1);
 * ```
 */
export function fitKMeans(
  data: ArrayLike<number>,
  rows: number,
  dim: number,
  options: FitOptions,
): FitResult {
  const k = options.numClusters;
  const metric = options.metric ?? "euclidean";
  const maxIt = options.maxIterations ?? 100;
  if (!Number.isSafeInteger(k) || k <= 0) {
    throw new RangeError(
      `Cannot fit k-means: numClusters must be a positive integer, got ${k}`,
    );
  }
  if (data.length !== rows * dim) {
    throw new RangeError(
      `Cannot fit k-means: data has ${data.length} values, expected ${rows} rows × ${dim}`,
    );
  }
  let centroids: Float32Array;
  if (options.initialCentroids) {
    if (options.initialCentroids.length !== k * dim) {
      throw new RangeError(
        `Cannot fit k-means: initialCentroids has ${options.initialCentroids.length} values, expected ${k} × ${dim}`,
      );
    }
    centroids = Float32Array.from(options.initialCentroids);
  } else {
    centroids = kmeansPlusPlus(data, rows, dim, k, options.seed ?? 0, metric);
  }
  const assign = new Int32Array(rows).fill(-1);
  const sums = new Float64Array(k * dim), counts = new Float64Array(k);
  let iterations = 0, converged = false;
  while (iterations < maxIt) {
    const d = distances(data, rows, centroids, k, dim, metric);
    let changed = false;
    for (let r = 0; r < rows; r++) {
      const a = argmin(d, r * k, k);
      if (a !== assign[r]) {
        assign[r] = a;
        changed = true;
      }
    }
    if (!changed) {
      converged = true;
      break;
    }
    iterations++;
    sums.fill(0);
    counts.fill(0);
    for (let r = 0; r < rows; r++) {
      const a = assign[r];
      counts[a]++;
      for (let i = 0; i < dim; i++) sums[a * dim + i] += data[r * dim + i];
    }
    for (let j = 0; j < k; j++) {
      if (counts[j] === 0) continue;
      for (let i = 0; i < dim; i++) {
        centroids[j * dim + i] = sums[j * dim + i] / counts[j];
      }
    }
  }
  const d = distances(data, rows, centroids, k, dim, metric);
  if (!converged) {
    for (let r = 0; r < rows; r++) assign[r] = argmin(d, r * k, k);
  }
  let inertia = 0;
  for (let r = 0; r < rows; r++) inertia += d[r * k + assign[r]] ** 2;
  return { centroids, assignments: assign, iterations, converged, inertia };
}
