// The sampler's vocabulary order (models/_sample_order.ts) is the order of
// the comparator sort it replaces, `(a, b) => v[b] - v[a] || a - b`, on
// values with ties, ±0, ±Infinity, subnormals and NaN, of lengths up to
// past 2²¹.

import { assertEquals } from "@std/assert";
import { createRng } from "../../core/rng.ts";
import { sortedIds } from "../../models/_sample_order.ts";

function byComparator(v: Float32Array): number[] {
  const ids = Array.from({ length: v.length }, (_, i) => i);
  return ids.sort((a, b) => v[b] - v[a] || a - b);
}

Deno.test("sortedIds: the comparator sort's order, for every kind of value", () => {
  const rng = createRng(5);
  const special = [0, -0, Infinity, -Infinity, 1e-45, -1e-45, 3.4e38, -3.4e38];
  for (const n of [1, 2, 7, 1000, 49152]) {
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const r = rng.int(10);
      v[i] = r === 0 ? special[rng.int(special.length)] : r < 4
        ? rng.int(5) - 2 // many ties
        : (rng.next() - 0.5) * 40;
    }
    const want = byComparator(v);
    assertEquals(sortedIds(v, n), want, `n ${n}`);
    assertEquals(
      sortedIds(v, Math.min(n, 40)),
      want.slice(0, 40),
      `top 40 of ${n}`,
    );
    // a view into a larger buffer
    const big = new Float32Array(n + 3);
    big.set(v, 3);
    assertEquals(sortedIds(big.subarray(3), n), want, `view, n ${n}`);
  }
  const withNan = new Float32Array([2, NaN, 1, 2, -1]);
  assertEquals(sortedIds(withNan, 5), byComparator(withNan));
  const huge = new Float32Array((1 << 21) + 5);
  huge[7] = 1;
  huge[(1 << 21) + 2] = 1;
  huge[9] = -1;
  const got = sortedIds(huge, 4);
  assertEquals(got, [7, (1 << 21) + 2, 0, 1]);
});
