/**
 * The softmax family as scalar reference kernels, each acting on every row
 * of a `rows × cols` row-major array and returning a new array: standard
 * (with temperature), masked, sparsemax, 1.5-entmax (exact, sort-based),
 * α-entmax (bisection), Gumbel-softmax (noise from caller-given uniforms).
 * Sums and thresholds are computed in double precision, except in
 * `softmax` itself, which runs the WebAssembly SIMD kernel of
 * `kernels/fast` where it applies (see {@link softmax}); its scalar twin is
 * {@link softmaxRef}, the one softmax reference (`fastSoftmax` is tested
 * against it too).
 *
 * @module
 */

import { engineSoftmax } from "./fast/_ops_engine.ts";
import { getEngine } from "./wasm/_engine.ts";

/**
 * Rows shorter than this run the scalar loop (the copy into kernel memory
 * would cost more). Depends on the row length only, so a row gives the same
 * result alone or in a batch.
 */
const FAST_MIN_COLS = 16;

function checkShape(x: Float32Array, rows: number, cols: number, what: string) {
  if (
    !Number.isSafeInteger(rows) || !Number.isSafeInteger(cols) || rows < 0 ||
    cols < 0 || x.length !== rows * cols
  ) {
    throw new RangeError(
      `Cannot apply ${what}: ${x.length} values do not form ${rows} rows × ${cols} columns`,
    );
  }
}

function checkTemperature(t: number, what: string) {
  if (!(t > 0) || !Number.isFinite(t)) {
    throw new RangeError(
      `Cannot apply ${what}: temperature must be a positive number, got ${t}`,
    );
  }
}

/**
 * Softmax of each row of `x / temperature`. With temperature 1 and rows of
 * 16 values or more it runs the WebAssembly SIMD kernel (`fastSoftmax`:
 * polynomial `exp`, F32 sums, relative error about 1e-6); otherwise, or
 * where WebAssembly SIMD is missing, {@link softmaxRef}.
 *
 * @param x Logits, row-major.
 * @param rows Number of rows.
 * @param cols Values per row.
 * @param temperature Divides the logits. @default {1}
 * @returns Probabilities; each row sums to 1.
 * @throws {RangeError} When the sizes disagree or the temperature is not positive.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { softmax } from "@modelhost/modelhost/kernels";
 * const p = softmax(new Float32Array([0, 0, 0, Math.log(3)]), 1, 4);
 * assert(Math.abs(p[3] - 0.5) < 1e-7);
 * ```
 */
export function softmax(
  x: Float32Array,
  rows: number,
  cols: number,
  temperature = 1,
): Float32Array {
  checkShape(x, rows, cols, "softmax");
  checkTemperature(temperature, "softmax");
  const e = temperature === 1 && cols >= FAST_MIN_COLS && rows > 0
    ? getEngine()
    : null;
  if (e) return engineSoftmax(e, x, cols);
  return softmaxRef(x, rows, cols, temperature);
}

/**
 * Reference softmax of each row of `x / temperature` (exponentials and sums
 * in double precision): the scalar twin of {@link softmax}.
 *
 * @param x Logits, row-major.
 * @param rows Number of rows.
 * @param cols Values per row.
 * @param temperature Divides the logits. @default {1}
 * @returns Probabilities; each row sums to 1.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { softmaxRef } from "@modelhost/modelhost/kernels";
 * const p = softmaxRef(new Float32Array([0, 0, 0, Math.log(3)]), 1, 4);
 * assert(Math.abs(p[3] - 0.5) < 1e-7);
 * ```
 */
export function softmaxRef(
  x: Float32Array,
  rows: number,
  cols: number,
  temperature = 1,
): Float32Array {
  checkShape(x, rows, cols, "softmax");
  checkTemperature(temperature, "softmax");
  const out = new Float32Array(x.length);
  const e = new Float64Array(cols);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let max = -Infinity;
    for (let i = 0; i < cols; i++) max = Math.max(max, x[o + i]);
    let sum = 0;
    for (let i = 0; i < cols; i++) {
      e[i] = Math.exp((x[o + i] - max) / temperature);
      sum += e[i];
    }
    for (let i = 0; i < cols; i++) out[o + i] = e[i] / sum;
  }
  return out;
}

/**
 * Softmax over the positions a mask keeps; masked positions get exactly 0.
 *
 * @param x Logits, row-major.
 * @param rows Number of rows.
 * @param cols Values per row.
 * @param mask One flag per column (truthy = keep), shared by every row; at least one kept.
 * @param temperature Divides the logits. @default {1}
 * @returns Probabilities; each row sums to 1 over the kept positions.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { maskedSoftmax } from "@modelhost/modelhost/kernels";
 * const p = maskedSoftmax(new Float32Array([5, 1, 1]), 1, 3, [false, true, true]);
 * assert(p[0] === 0 && p[1] === 0.5);
 * ```
 */
export function maskedSoftmax(
  x: Float32Array,
  rows: number,
  cols: number,
  mask: ArrayLike<boolean | number>,
  temperature = 1,
): Float32Array {
  checkShape(x, rows, cols, "masked softmax");
  checkTemperature(temperature, "masked softmax");
  if (mask.length !== cols) {
    throw new RangeError(
      `Cannot apply masked softmax: mask has ${mask.length} entries, rows have ${cols}`,
    );
  }
  let kept = 0;
  for (let i = 0; i < cols; i++) if (mask[i]) kept++;
  if (kept === 0 && cols > 0) {
    throw new RangeError("Cannot apply masked softmax: the mask keeps nothing");
  }
  const out = new Float32Array(x.length);
  const e = new Float64Array(cols);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let max = -Infinity;
    for (let i = 0; i < cols; i++) if (mask[i]) max = Math.max(max, x[o + i]);
    let sum = 0;
    for (let i = 0; i < cols; i++) {
      e[i] = mask[i] ? Math.exp((x[o + i] - max) / temperature) : 0;
      sum += e[i];
    }
    for (let i = 0; i < cols; i++) out[o + i] = e[i] / sum;
  }
  return out;
}

/** Row `r` of `x / temperature`, sorted descending, in doubles. */
function sortedRow(
  x: Float32Array,
  o: number,
  cols: number,
  temperature: number,
  z: Float64Array,
  s: Float64Array,
): void {
  for (let i = 0; i < cols; i++) z[i] = x[o + i] / temperature;
  s.set(z);
  s.sort();
  s.reverse();
}

/**
 * Sparsemax (Martins & Astudillo, 2016): the Euclidean projection of
 * `x / temperature` onto the probability simplex, computed exactly by
 * sorting. Outputs can be exactly 0; each row sums to 1.
 *
 * @param x Logits, row-major.
 * @param rows Number of rows.
 * @param cols Values per row.
 * @param temperature Divides the logits. @default {1}
 * @returns Probabilities.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { sparsemax } from "@modelhost/modelhost/kernels";
 * const p = sparsemax(new Float32Array([1, 0]), 1, 2);
 * assert(p[0] === 1 && p[1] === 0);
 * ```
 */
export function sparsemax(
  x: Float32Array,
  rows: number,
  cols: number,
  temperature = 1,
): Float32Array {
  checkShape(x, rows, cols, "sparsemax");
  checkTemperature(temperature, "sparsemax");
  const out = new Float32Array(x.length);
  const z = new Float64Array(cols), s = new Float64Array(cols);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    sortedRow(x, o, cols, temperature, z, s);
    // Support size k: the largest k with 1 + k·s_k > Σ_{j≤k} s_j.
    let cum = 0, k = 0, cumK = 0;
    for (let j = 0; j < cols; j++) {
      cum += s[j];
      if (1 + (j + 1) * s[j] > cum) {
        k = j + 1;
        cumK = cum;
      }
    }
    const tau = (cumK - 1) / k;
    for (let i = 0; i < cols; i++) out[o + i] = Math.max(z[i] - tau, 0);
  }
  return out;
}

/**
 * 1.5-entmax (Peters, Niculae & Martins, 2019), exact by sorting:
 * `p = [z/2 − τ]₊²` with τ chosen so each row sums to 1, where
 * `z = x / temperature`. Sparse like sparsemax, smoother like softmax.
 *
 * @param x Logits, row-major.
 * @param rows Number of rows.
 * @param cols Values per row.
 * @param temperature Divides the logits. @default {1}
 * @returns Probabilities.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { entmax15 } from "@modelhost/modelhost/kernels";
 * const p = entmax15(new Float32Array([3, 0, 0]), 1, 3);
 * assert(p[0] === 1 && p[1] === 0);
 * ```
 */
export function entmax15(
  x: Float32Array,
  rows: number,
  cols: number,
  temperature = 1,
): Float32Array {
  checkShape(x, rows, cols, "1.5-entmax");
  checkTemperature(temperature, "1.5-entmax");
  const out = new Float32Array(x.length);
  const z = new Float64Array(cols), s = new Float64Array(cols);
  const taus = new Float64Array(cols);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    sortedRow(x, o, cols, temperature * 2, z, s);
    // Shift by the max so the sums below stay well conditioned.
    // For each prefix k of the sorted values, τ_k solves Σ_{j≤k} (s_j − τ)² = 1;
    // the support is the number of k with τ_k ≤ s_k, and τ* is τ at that k.
    const top = s[0];
    let sum = 0, sumSq = 0, support = 0;
    for (let j = 0; j < cols; j++) {
      const v = s[j] - top;
      sum += v;
      sumSq += v * v;
      const k = j + 1;
      const mean = sum / k;
      const ss = sumSq - k * mean * mean;
      const tau = mean - Math.sqrt(Math.max((1 - ss) / k, 0));
      taus[j] = tau + top;
      if (tau <= v) support++;
    }
    const tauStar = taus[support - 1];
    for (let i = 0; i < cols; i++) {
      const d = Math.max(z[i] - tauStar, 0);
      out[o + i] = d * d;
    }
  }
  return out;
}

/**
 * α-entmax for any 1 < α < 2, by bisection on the threshold τ of
 * `p = [(α−1)z − τ]₊^{1/(α−1)}` (60 halvings: τ to double precision), then
 * an exact renormalization. α = 1.5 has the sort-based {@link entmax15}.
 *
 * @param x Logits, row-major.
 * @param rows Number of rows.
 * @param cols Values per row.
 * @param alpha The entmax α, in (1, 2).
 * @param temperature Divides the logits. @default {1}
 * @returns Probabilities.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { entmaxBisect } from "@modelhost/modelhost/kernels";
 * const p = entmaxBisect(new Float32Array([1, 0.5, -3]), 1, 3, 1.25);
 * assert(Math.abs(p[0] + p[1] + p[2] - 1) < 1e-6 && p[2] === 0);
 * ```
 */
export function entmaxBisect(
  x: Float32Array,
  rows: number,
  cols: number,
  alpha: number,
  temperature = 1,
): Float32Array {
  checkShape(x, rows, cols, "entmax");
  checkTemperature(temperature, "entmax");
  if (!(alpha > 1 && alpha < 2)) {
    throw new RangeError(
      `Cannot apply entmax by bisection: alpha must be in (1, 2), got ${alpha}`,
    );
  }
  const am1 = alpha - 1, inv = 1 / am1;
  const out = new Float32Array(x.length);
  const z = new Float64Array(cols), p = new Float64Array(cols);
  const mass = (tau: number): number => {
    let m = 0;
    for (let i = 0; i < cols; i++) {
      const d = z[i] - tau;
      p[i] = d > 0 ? Math.pow(d, inv) : 0;
      m += p[i];
    }
    return m;
  };
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let max = -Infinity;
    for (let i = 0; i < cols; i++) {
      z[i] = (am1 * x[o + i]) / temperature;
      max = Math.max(max, z[i]);
    }
    // mass(lo) ≥ 1 (the top entry alone gives 1), mass(hi) ≤ 1.
    let lo = max - 1, hi = max - Math.pow(1 / cols, am1);
    for (let it = 0; it < 60; it++) {
      const mid = (lo + hi) / 2;
      if (mass(mid) >= 1) lo = mid;
      else hi = mid;
    }
    const m = mass(lo);
    for (let i = 0; i < cols; i++) out[o + i] = p[i] / m;
  }
  return out;
}

/**
 * Gumbel-softmax: `softmax((x + g) / temperature)` with Gumbel noise
 * `g = −log(−log(u))` from caller-given uniforms `u` in (0, 1), one per
 * value, so the caller controls the randomness (a seeded generator).
 *
 * @param x Logits, row-major.
 * @param rows Number of rows.
 * @param cols Values per row.
 * @param uniforms One uniform draw in (0, 1) per value.
 * @param temperature Divides the noisy logits. @default {1}
 * @returns Probabilities.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { gumbelSoftmax } from "@modelhost/modelhost/kernels";
 * const u = Math.exp(-1); // gives g = 0
 * const p = gumbelSoftmax(new Float32Array([0, 0]), 1, 2, [u, u]);
 * assert(p[0] === 0.5);
 * ```
 */
export function gumbelSoftmax(
  x: Float32Array,
  rows: number,
  cols: number,
  uniforms: ArrayLike<number>,
  temperature = 1,
): Float32Array {
  checkShape(x, rows, cols, "Gumbel-softmax");
  checkTemperature(temperature, "Gumbel-softmax");
  if (uniforms.length < x.length) {
    throw new RangeError(
      `Cannot apply Gumbel-softmax: ${uniforms.length} uniforms for ${x.length} values`,
    );
  }
  const noisy = new Float64Array(cols);
  const out = new Float32Array(x.length);
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let max = -Infinity;
    for (let i = 0; i < cols; i++) {
      const u = uniforms[o + i];
      if (!(u > 0 && u < 1)) {
        throw new RangeError(
          `Cannot apply Gumbel-softmax: uniform ${
            o + i
          } is ${u}, expected a value in (0, 1)`,
        );
      }
      noisy[i] = (x[o + i] - Math.log(-Math.log(u))) / temperature;
      max = Math.max(max, noisy[i]);
    }
    let sum = 0;
    for (let i = 0; i < cols; i++) {
      noisy[i] = Math.exp(noisy[i] - max);
      sum += noisy[i];
    }
    for (let i = 0; i < cols; i++) out[o + i] = noisy[i] / sum;
  }
  return out;
}
