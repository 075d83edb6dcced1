// Inputs and the exact-product check shared by the native F32 GEMM tests
// (tests/io/blas_test.ts, blas_layout_test.ts, blas_packed_test.ts).

import { assert, assertEquals } from "@std/assert";
import { createRng } from "../../core/rng.ts";

/** `n` values uniform in [-1, 1) from seed `seed`. */
export function uniformF32(n: number, seed: number): Float32Array {
  const rng = createRng(seed);
  return Float32Array.from({ length: n }, () => rng.u32() / 2 ** 31 - 1);
}

/**
 * Asserts each output of `y` (`rows × outF`) is within
 * `limit·ε_f32·Σ|terms|` of the F64 sum of `x · Wᵀ + b` (W `outF × inF`,
 * b optional); any order of F32 additions stays within `in·ε·Σ|terms|`.
 *
 * @returns The worst error in units of `ε·Σ|terms|`.
 */
export function checkF32Product(
  y: Float32Array,
  x: Float32Array,
  w: Float32Array,
  b: Float32Array | undefined,
  rows: number,
  inF: number,
  outF: number,
  what: string,
  limit: number,
): number {
  const eps = 2 ** -24;
  let worst = 0;
  assertEquals(y.length, rows * outF, what);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let exact = b ? b[o] : 0, mag = Math.abs(exact);
      for (let i = 0; i < inF; i++) {
        const t = x[r * inF + i] * w[o * inF + i];
        exact += t;
        mag += Math.abs(t);
      }
      const err = Math.abs(y[r * outF + o] - exact);
      worst = Math.max(worst, err / (mag * eps || 1));
      assert(
        err <= limit * eps * mag,
        `${what}: row ${r} output ${o}: ${y[r * outF + o]} vs exact ${exact}`,
      );
    }
  }
  return worst;
}
