/**
 * ggml's `make_qp_quants`, shared by the K encoders' scale codes (with an
 * importance matrix) and IQ2_XXS's group scales.
 *
 * @module
 */

import { nearestInt } from "./_common.ts";
import { F_0_1, GROUP_MAX_EPS } from "./_k_search.ts";

const f = Math.fround;

/**
 * `make_qp_quants`: non-negative codes up to `nmax` for the scales,
 * weighted. `L` is C's `uint8_t` array when given as a `Uint8Array`: a
 * negative code (IQ2_XXS passes values with one sign flipped) wraps as there.
 */
export function makeQp(
  n: number,
  nmax: number,
  x: Float32Array,
  L: Int32Array | Uint8Array,
  qw: Float32Array,
): number {
  let max = 0;
  for (let i = 0; i < n; i++) max = Math.max(max, x[i]);
  if (max < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) L[i] = 0;
    return 0;
  }
  let iscale = f(nmax / max);
  for (let i = 0; i < n; i++) L[i] = nearestInt(f(iscale * x[i]));
  const scale = f(1 / iscale);
  let bestMse = 0;
  for (let i = 0; i < n; i++) {
    const diff = f(x[i] - f(scale * L[i]));
    bestMse = f(bestMse + f(f(qw[i] * diff) * diff));
  }
  for (let is = -4; is <= 4; is++) {
    if (is === 0) continue;
    const iscaleIs = f(f(f(F_0_1 * is) + nmax) / max);
    const scaleIs = f(1 / iscaleIs);
    let mse = 0;
    for (let i = 0; i < n; i++) {
      let l = nearestInt(f(iscaleIs * x[i]));
      l = Math.min(nmax, l);
      const diff = f(x[i] - f(scaleIs * l));
      mse = f(mse + f(f(qw[i] * diff) * diff));
    }
    if (mse < bestMse) {
      bestMse = mse;
      iscale = iscaleIs;
    }
  }
  let sumlx = 0, suml2 = 0;
  for (let i = 0; i < n; i++) {
    let l = nearestInt(f(iscale * x[i]));
    l = Math.min(nmax, l);
    L[i] = l;
    sumlx = f(sumlx + f(f(qw[i] * x[i]) * l));
    suml2 = f(suml2 + f(f(qw[i] * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const w = qw[i];
      let slx = f(sumlx - f(f(w * x[i]) * L[i]));
      let sl2 = f(suml2 - f(f(w * L[i]) * L[i]));
      if (slx > 0 && sl2 > 0) {
        let nl = nearestInt(f(f(x[i] * sl2) / slx));
        nl = Math.min(nmax, nl);
        if (nl !== L[i]) {
          slx = f(slx + f(f(w * x[i]) * nl));
          sl2 = f(sl2 + f(f(w * nl) * nl));
          if (f(f(slx * slx) * suml2) > f(f(sumlx * sumlx) * sl2)) {
            L[i] = nl;
            sumlx = slx;
            suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (!changed) break;
  }
  return suml2 > 0 ? f(sumlx / suml2) : 0;
}
