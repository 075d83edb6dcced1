/**
 * Tensor statistics for the page's tensor view: summary numbers, a
 * histogram that bins as NumPy's `histogram` does, and a down-sampled 2-D
 * slice for the heat map. Pure functions; the page runs them in its worker.
 *
 * @module
 */

/** Summary numbers of a tensor's values. */
export interface TensorStats {
  /** Number of values. */
  count: number;
  /** Smallest finite value (NaN when none is finite). */
  min: number;
  /** Largest finite value (NaN when none is finite). */
  max: number;
  /** Mean of the finite values, summed in double precision. */
  mean: number;
  /** Population standard deviation of the finite values (two passes). */
  std: number;
  /** Values equal to zero (either sign). */
  zeros: number;
  /** NaN values. */
  nan: number;
  /** Infinite values. */
  inf: number;
  /** Counts of the finite values in `bins` equal bins over `[min, max]`. */
  histogram: number[];
}

/** Options of {@link tensorStats}. */
export interface TensorStatsOptions {
  /** Histogram bins. @default {64} */
  bins?: number;
}

/** Defaults of {@link TensorStatsOptions}. */
export const tensorStatsDefaults = { bins: 64 } as const satisfies Required<
  TensorStatsOptions
>;

/**
 * Statistics of a tensor's values. The histogram places a value as NumPy
 * does (`numpy.histogram(x, bins, range=(min, max))`): equal bins whose
 * edges are `min + i * (max - min) / bins`, the last one closed.
 *
 * @param values The values (already widened to F32).
 * @param options Number of histogram bins.
 * @returns The statistics.
 * @throws {RangeError} When `bins` is not a positive integer.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { tensorStats } from "./_stats.ts";
 * const s = tensorStats(new Float32Array([0, 1, 2, NaN]), { bins: 2 });
 * assert(s.mean === 1 && s.zeros === 1 && s.nan === 1);
 * assert(s.histogram.join() === "1,2");
 * ```
 */
export function tensorStats(
  values: Float32Array,
  options: TensorStatsOptions = {},
): TensorStats {
  const bins = options.bins ?? tensorStatsDefaults.bins;
  if (!Number.isSafeInteger(bins) || bins < 1) {
    throw new RangeError(
      `Cannot bin a histogram into ${bins} bins: expected a positive integer`,
    );
  }
  let min = Infinity, max = -Infinity, sum = 0, finite = 0;
  let zeros = 0, nan = 0, inf = 0;
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (x !== x) {
      nan++;
      continue;
    }
    if (x === Infinity || x === -Infinity) {
      inf++;
      continue;
    }
    if (x === 0) zeros++;
    if (x < min) min = x;
    if (x > max) max = x;
    sum += x;
    finite++;
  }
  const histogram = new Array<number>(bins).fill(0);
  if (finite === 0) {
    return {
      count: values.length,
      min: NaN,
      max: NaN,
      mean: NaN,
      std: NaN,
      zeros,
      nan,
      inf,
      histogram,
    };
  }
  const mean = sum / finite;
  let sq = 0;
  // NumPy: a range of zero width is widened to [min - 0.5, max + 0.5].
  const lo = min === max ? min - 0.5 : min;
  const hi = min === max ? max + 0.5 : max;
  const norm = bins / (hi - lo);
  const edge = (i: number) => i === bins ? hi : lo + i * ((hi - lo) / bins);
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (x !== x || x === Infinity || x === -Infinity) continue;
    const d = x - mean;
    sq += d * d;
    let b = Math.floor((x - lo) * norm);
    if (b >= bins) b = bins - 1;
    // Rounding can put a value next to an edge in the neighbouring bin.
    if (b > 0 && x < edge(b)) b--;
    else if (b < bins - 1 && x >= edge(b + 1)) b++;
    histogram[b]++;
  }
  return {
    count: values.length,
    min,
    max,
    mean,
    std: Math.sqrt(sq / finite),
    zeros,
    nan,
    inf,
    histogram,
  };
}

/** A 2-D slice of a tensor, averaged down to fit the heat map. */
export interface Heatmap {
  /** Rows of `values`. */
  rows: number;
  /** Columns of `values`. */
  cols: number;
  /** Row-major cell values (each the mean of the finite values it covers; NaN when none). */
  values: Float32Array;
  /** Rows of the full slice. */
  sliceRows: number;
  /** Columns of the full slice. */
  sliceCols: number;
  /** Which slice (index over the leading dimensions flattened). */
  slice: number;
  /** How many slices the tensor has. */
  slices: number;
  /** Smallest cell value. */
  min: number;
  /** Largest cell value. */
  max: number;
}

/** Options of {@link heatmapSlice}. */
export interface HeatmapOptions {
  /** Which 2-D slice of a tensor of rank 3 or more. @default {0} */
  slice?: number;
  /** Most cells along each side; larger slices are averaged down. @default {256} */
  maxSide?: number;
}

/** Defaults of {@link HeatmapOptions}. */
export const heatmapDefaults = {
  slice: 0,
  maxSide: 256,
} as const satisfies Required<HeatmapOptions>;

/**
 * The 2-D slice of a tensor a heat map shows: the last two dimensions (a
 * vector is one row), slice `slice` of the leading ones, averaged in
 * blocks down to at most `maxSide` cells per side.
 *
 * @param values The tensor's values, row-major.
 * @param shape The tensor's shape.
 * @param options Slice index and size limit.
 * @returns The cells.
 * @throws {RangeError} When the slice index is out of range or the values do not fill the shape.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { heatmapSlice } from "./_stats.ts";
 * const h = heatmapSlice(new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]), [2, 2, 2], { slice: 1 });
 * assert(h.rows === 2 && h.values[3] === 8 && h.slices === 2);
 * const small = heatmapSlice(new Float32Array(16).fill(1), [4, 4], { maxSide: 2 });
 * assert(small.rows === 2 && small.values[0] === 1);
 * ```
 */
export function heatmapSlice(
  values: Float32Array,
  shape: readonly number[],
  options: HeatmapOptions = {},
): Heatmap {
  const maxSide = Math.max(1, options.maxSide ?? heatmapDefaults.maxSide);
  const slice = options.slice ?? heatmapDefaults.slice;
  const n = shape.reduce((a, b) => a * b, 1);
  if (n !== values.length) {
    throw new RangeError(
      `Cannot slice ${values.length} values as shape [${shape.join(", ")}]`,
    );
  }
  const sliceCols = shape.length === 0 ? 1 : shape[shape.length - 1];
  const sliceRows = shape.length < 2 ? 1 : shape[shape.length - 2];
  const per = sliceRows * sliceCols;
  const slices = per === 0 ? 0 : n / per;
  if (
    !Number.isSafeInteger(slice) || slice < 0 || slice >= Math.max(1, slices)
  ) {
    throw new RangeError(
      `Cannot show slice ${slice}: the tensor has ${slices} slices of ${sliceRows}×${sliceCols}`,
    );
  }
  const fy = Math.max(1, Math.ceil(sliceRows / maxSide));
  const fx = Math.max(1, Math.ceil(sliceCols / maxSide));
  const rows = Math.ceil(sliceRows / fy), cols = Math.ceil(sliceCols / fx);
  const out = new Float32Array(rows * cols);
  const base = slice * per;
  let min = Infinity, max = -Infinity;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      let s = 0, k = 0;
      for (let y = r * fy; y < Math.min(sliceRows, (r + 1) * fy); y++) {
        const row = base + y * sliceCols;
        for (let x = c * fx; x < Math.min(sliceCols, (c + 1) * fx); x++) {
          const v = values[row + x];
          if (Number.isFinite(v)) {
            s += v;
            k++;
          }
        }
      }
      const m = k === 0 ? NaN : s / k;
      out[r * cols + c] = m;
      if (m < min) min = m;
      if (m > max) max = m;
    }
  }
  return {
    rows,
    cols,
    values: out,
    sliceRows,
    sliceCols,
    slice,
    slices,
    min: min === Infinity ? NaN : min,
    max: max === -Infinity ? NaN : max,
  };
}
