/**
 * Closeness checks for float arrays against reference values.
 */

import { AssertionError } from "@std/assert";

/**
 * Asserts |actual − expected| ≤ rtol·|expected| + atol elementwise (the
 * absolute floor only matters for values near zero), and equal lengths.
 */
export function assertAllClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  what: string,
  rtol = 1e-5,
  atol = 1e-6,
): void {
  if (actual.length !== expected.length) {
    throw new AssertionError(
      `${what}: ${actual.length} values, expected ${expected.length}`,
    );
  }
  let worst = -1, worstErr = 0;
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i], e = expected[i];
    const err = Math.abs(a - e);
    if (!(err <= rtol * Math.abs(e) + atol) && !(a === e)) {
      if (worst < 0 || err > worstErr || Number.isNaN(err)) {
        worst = i;
        worstErr = err;
      }
    }
  }
  if (worst >= 0) {
    throw new AssertionError(
      `${what}: value ${worst} is ${actual[worst]}, expected ${
        expected[worst]
      } (error ${worstErr}, allowed ${rtol} relative + ${atol})`,
    );
  }
}
