/**
 * ggml's scale searches for the K-quant encoders (`make_qx_quants`,
 * `make_q3_quants`, `make_qkx2_quants` of `ggml-quants.c`), with every float
 * operation rounded to F32 as C does. Used by `k_encode.ts` and
 * `k_encode_imatrix.ts`.
 *
 * @module
 */

import { nearestInt } from "./_common.ts";

const fround = Math.fround;

/**
 * ggml's `GROUP_MAX_EPS`: groups with a smaller absolute max are all zero.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GROUP_MAX_EPS } from "./_k_search.ts";
 * assert(GROUP_MAX_EPS === Math.fround(1e-15));
 * ```
 */
export const GROUP_MAX_EPS: number = Math.fround(1e-15);

/**
 * 0.1 rounded to F32, the step of ggml's candidate scales.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { F_0_1 } from "./_k_search.ts";
 * assert(F_0_1 === Math.fround(0.1));
 * ```
 */
export const F_0_1: number = Math.fround(0.1);

/**
 * ggml's `make_qx_quants` with `rmse_type = 1`: symmetric codes in
 * `[0, 2·nmax)` at `L[lo..lo+n)` and the scale that minimizes the weighted
 * error over 19 candidate scales. The weights are `qw[qo..qo+n)` when given
 * (an importance matrix), x² otherwise.
 *
 * @param n Values in the group.
 * @param nmax Half the code range (codes are `[0, 2·nmax)`).
 * @param x The values; the group starts at `s`.
 * @param s Start of the group in `x`.
 * @param L Receives the codes at `L[lo..lo+n)`.
 * @param lo Start of the group in `L`.
 * @param qw Optional weights, one per value; x² when absent.
 * @param qo Start of the group in `qw`.
 * @returns The scale (0 for an all-zero group).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { makeQxQuants } from "./_k_search.ts";
 * const L = new Int32Array(16);
 * const x = Float32Array.from({ length: 16 }, (_, i) => i - 8);
 * const d = makeQxQuants(16, 32, x, 0, L, 0);
 * assert(Math.abs(d * (L[0] - 32) - x[0]) < 0.2);
 * ```
 */
export function makeQxQuants(
  n: number,
  nmax: number,
  x: Float32Array,
  s: number,
  L: Int32Array,
  lo: number,
  qw?: Float32Array,
  qo = 0,
): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[s + i]);
    if (ax > amax) {
      amax = ax;
      max = x[s + i];
    }
  }
  if (amax < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    return 0;
  }
  let iscale = fround(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[s + i];
    let l = nearestInt(fround(iscale * xi));
    l = Math.max(-nmax, Math.min(nmax - 1, l));
    L[lo + i] = l + nmax;
    const w = qw ? qw[qo + i] : fround(xi * xi);
    sumlx = fround(sumlx + fround(fround(w * xi) * l));
    suml2 = fround(suml2 + fround(fround(w * l) * l));
  }
  let scale = suml2 ? fround(sumlx / suml2) : 0;
  let best = fround(scale * sumlx);
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    iscale = fround(-fround(nmax + fround(F_0_1 * is)) / max);
    sumlx = 0;
    suml2 = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[s + i];
      let l = nearestInt(fround(iscale * xi));
      l = Math.max(-nmax, Math.min(nmax - 1, l));
      const w = qw ? qw[qo + i] : fround(xi * xi);
      sumlx = fround(sumlx + fround(fround(w * xi) * l));
      suml2 = fround(suml2 + fround(fround(w * l) * l));
    }
    if (suml2 > 0 && fround(sumlx * sumlx) > fround(best * suml2)) {
      for (let i = 0; i < n; i++) {
        const l = nearestInt(fround(iscale * x[s + i]));
        L[lo + i] = nmax + Math.max(-nmax, Math.min(nmax - 1, l));
      }
      scale = fround(sumlx / suml2);
      best = fround(scale * sumlx);
    }
  }
  return scale;
}

/**
 * ggml's `make_q3_quants` with `do_rmse`: symmetric codes in `[0, 2·nmax)`
 * refined one element at a time (up to 5 passes) to minimize the
 * x²-weighted error.
 *
 * @param n Values in the group.
 * @param nmax Half the code range (codes are `[0, 2·nmax)`).
 * @param x The values; the group starts at `s`.
 * @param s Start of the group in `x`.
 * @param L Receives the codes at `L[lo..lo+n)`.
 * @param lo Start of the group in `L`.
 * @returns The scale (0 for an all-zero group).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { makeQ3Quants } from "./_k_search.ts";
 * const L = new Int32Array(16);
 * const x = Float32Array.from({ length: 16 }, (_, i) => (i - 8) / 4);
 * const d = makeQ3Quants(16, 4, x, 0, L, 0);
 * assert(Math.abs(d * (L[0] - 4) - x[0]) < 0.3);
 * ```
 */
export function makeQ3Quants(
  n: number,
  nmax: number,
  x: Float32Array,
  s: number,
  L: Int32Array,
  lo: number,
): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[s + i]);
    if (ax > amax) {
      amax = ax;
      max = x[s + i];
    }
  }
  if (amax < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    return 0;
  }
  const iscale = fround(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[s + i];
    let l = nearestInt(fround(iscale * xi));
    l = Math.max(-nmax, Math.min(nmax - 1, l));
    L[lo + i] = l;
    const w = fround(xi * xi);
    sumlx = fround(sumlx + fround(fround(w * xi) * l));
    suml2 = fround(suml2 + fround(fround(w * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[s + i];
      const li = L[lo + i];
      const w = fround(xi * xi);
      let slx = fround(sumlx - fround(fround(w * xi) * li));
      if (slx > 0) {
        let sl2 = fround(suml2 - fround(fround(w * li) * li));
        let nl = nearestInt(fround(fround(xi * sl2) / slx));
        nl = Math.max(-nmax, Math.min(nmax - 1, nl));
        if (nl !== li) {
          slx = fround(slx + fround(fround(w * xi) * nl));
          sl2 = fround(sl2 + fround(fround(w * nl) * nl));
          if (
            sl2 > 0 &&
            fround(fround(slx * slx) * suml2) >
              fround(fround(sumlx * sumlx) * sl2)
          ) {
            L[lo + i] = nl;
            sumlx = slx;
            suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (!changed) break;
  }
  for (let i = 0; i < n; i++) L[lo + i] += nmax;
  return suml2 > 0 ? fround(sumlx / suml2) : 0;
}

/**
 * ggml's `make_qkx2_quants`: asymmetric codes in `[0, nmax]` with a scale
 * and a (non-positive) min, searched over `nstep + 1` candidate scales by
 * weighted least squares. Returns the scale; the negated min goes to
 * `mins[mi]`.
 *
 * @param n Values in the group.
 * @param nmax Largest code.
 * @param x The values; the group starts at `s`.
 * @param s Start of the group in `x`.
 * @param weights One weight per value of the group.
 * @param L Receives the codes at `L[lo..lo+n)`.
 * @param lo Start of the group in `L`.
 * @param mins Receives the negated min at `mins[mi]`.
 * @param mi Index into `mins`.
 * @param Laux Scratch codes, length ≥ n.
 * @param xm Scratch values, length ≥ n.
 * @param rmin First candidate's offset from `nmax`.
 * @param rdelta Step between candidates.
 * @param nstep Number of candidate steps.
 * @param useMad Weigh absolute errors instead of squared ones.
 * @returns The scale.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { makeQkx2Quants } from "./_k_search.ts";
 * const x = Float32Array.from({ length: 32 }, (_, i) => i / 8);
 * const mins = new Float32Array(1);
 * const L = new Int32Array(32);
 * const d = makeQkx2Quants(32, 15, x, 0, new Float32Array(32).fill(1), L, 0,
 *   mins, 0, new Int32Array(32), new Float32Array(32), -1, 0.1, 20, false);
 * assert(Math.abs(d * L[31] - mins[0] - x[31]) < 0.2);
 * ```
 */
export function makeQkx2Quants(
  n: number,
  nmax: number,
  x: Float32Array,
  s: number,
  weights: Float32Array,
  L: Int32Array,
  lo: number,
  mins: Float32Array,
  mi: number,
  Laux: Int32Array,
  xm: Float32Array,
  rmin: number,
  rdelta: number,
  nstep: number,
  useMad: boolean,
): number {
  let min = x[s];
  let max = x[s];
  let sumW = weights[0];
  let sumX = fround(sumW * x[s]);
  for (let i = 1; i < n; i++) {
    const xi = x[s + i];
    if (xi < min) min = xi;
    if (xi > max) max = xi;
    const w = weights[i];
    sumW = fround(sumW + w);
    sumX = fround(sumX + fround(w * xi));
  }
  if (min > 0) min = 0;
  if (max === min) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    mins[mi] = -min;
    return 0;
  }
  // Note: `min` changes inside the search below and later candidates use the
  // updated value, as in ggml. `xm` caches x - min for the current min.
  for (let i = 0; i < n; i++) xm[i] = x[s + i] - min;
  let iscale = fround(nmax / fround(max - min));
  let scale = fround(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[s + i];
    const l = nearestInt(fround(iscale * xm[i]));
    const li = l < 0 ? 0 : l > nmax ? nmax : l;
    L[lo + i] = li;
    let diff = fround(fround(fround(scale * li) + min) - xi);
    diff = useMad ? Math.abs(diff) : fround(diff * diff);
    bestError = fround(bestError + fround(weights[i] * diff));
  }
  if (nstep < 1) {
    mins[mi] = -min;
    return scale;
  }
  for (let is = 0; is <= nstep; is++) {
    iscale = fround(
      fround(fround(rmin + fround(rdelta * is)) + nmax) / fround(max - min),
    );
    let sumL = 0;
    let sumL2 = 0;
    let sumXL = 0;
    for (let i = 0; i < n; i++) {
      const v = fround(iscale * xm[i]);
      // nearestInt, inlined for the common range.
      let l = v <= 4194303 && v >= -4194303
        ? fround(v + 12582912) - 12582912
        : nearestInt(v);
      l = l < 0 ? 0 : l > nmax ? nmax : l;
      Laux[i] = l;
      const wl = fround(weights[i] * l);
      sumL = fround(sumL + wl);
      sumL2 = fround(sumL2 + fround(wl * l));
      sumXL = fround(sumXL + fround(wl * x[s + i]));
    }
    const D = fround(fround(sumW * sumL2) - fround(sumL * sumL));
    if (D > 0) {
      let thisScale = fround(
        fround(fround(sumW * sumXL) - fround(sumX * sumL)) / D,
      );
      let thisMin = fround(
        fround(fround(sumL2 * sumX) - fround(sumL * sumXL)) / D,
      );
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = fround(sumXL / sumL2);
      }
      let curError = 0;
      if (useMad) {
        for (let i = 0; i < n; i++) {
          const diff = fround(
            fround(fround(thisScale * Laux[i]) + thisMin) - x[s + i],
          );
          curError = fround(curError + fround(weights[i] * Math.abs(diff)));
        }
      } else {
        for (let i = 0; i < n; i++) {
          const diff = fround(
            fround(fround(thisScale * Laux[i]) + thisMin) - x[s + i],
          );
          curError = fround(
            curError + fround(weights[i] * fround(diff * diff)),
          );
        }
      }
      if (curError < bestError) {
        for (let i = 0; i < n; i++) L[lo + i] = Laux[i];
        bestError = curError;
        scale = thisScale;
        if (thisMin !== min) {
          min = thisMin;
          for (let i = 0; i < n; i++) xm[i] = x[s + i] - min;
        }
      }
    }
  }
  mins[mi] = -min;
  return scale;
}
