/**
 * GELU with erf, `x·Φ(x) = ½x(1 + erf(x/√2))`, the activation of BERT-family
 * MLPs, over whole arrays: the WebAssembly SIMD kernel (split over the
 * kernel threads) where available, {@link geluErfApprox} per value
 * otherwise. Both use Abramowitz and Stegun's formula 7.1.26 for erf
 * (absolute error below 1.5e-7); the exact reference is
 * `activate(x, "gelu")` of `./activations.ts`, which the tests compare
 * both against, as they do Python's `math.erf`.
 *
 * @module
 */

import { engineGeluErf } from "./fast/_ops_engine.ts";
import { getEngine } from "./wasm/_engine.ts";

/**
 * GELU with erf of one value, through Abramowitz and Stegun's 7.1.26
 * rational approximation of erf (absolute error below 1.5e-7), in double
 * precision.
 *
 * @param x The value.
 * @returns `x·Φ(x)`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { geluErfApprox } from "@modelhost/modelhost/kernels";
 * assert(Math.abs(geluErfApprox(1) - 0.8413447460685429) < 2e-7);
 * ```
 */
export function geluErfApprox(x: number): number {
  const z = Math.abs(x) * Math.SQRT1_2;
  const t = 1 / (1 + 0.3275911 * z);
  const y = 1 -
    ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t -
            0.284496736) * t + 0.254829592) * t * Math.exp(-z * z);
  return 0.5 * x * (1 + (x < 0 ? -y : y));
}

/**
 * Applies GELU with erf to every value of `x`, in place: the WebAssembly
 * SIMD kernel (F32, split over the kernel threads configured with
 * `configureKernels`) where available, {@link geluErfApprox} otherwise.
 * Values differ from the exact GELU by less than `2e-7·(1 + |x|)`.
 *
 * @param x The values; overwritten.
 * @returns `x`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { geluErfInPlace } from "@modelhost/modelhost/kernels";
 * const x = geluErfInPlace(new Float32Array([-1, 0, 1, 2, 3]));
 * assert(Math.abs(x[2] - 0.8413447) < 1e-6 && Math.abs(x[0] + 0.1586553) < 1e-6);
 * ```
 */
export function geluErfInPlace(x: Float32Array): Float32Array {
  const e = x.length >= 64 ? getEngine() : null;
  let i = 0;
  if (e) {
    engineGeluErf(e, x);
    i = x.length & ~3;
  }
  for (; i < x.length; i++) x[i] = geluErfApprox(x[i]);
  return x;
}
