import { assertEquals, assertThrows } from "@std/assert";
import { appendKv, attend, createKvCache } from "../../kernels/attention.ts";
import { assertClose } from "../layers/_attention_vectors.ts";

// Hand-computed cases: head size 1 and scale 1 make scores = q·k.

Deno.test("attend: causal softmax over the cache, by hand", () => {
  const c = createKvCache(1, 1, 1);
  appendKv(
    c,
    new Float32Array([0, Math.log(3)]),
    new Float32Array([10, 20]),
    2,
  );
  const out = attend(new Float32Array([1, 1]), c, {
    heads: 1,
    seq: 2,
    scale: 1,
  });
  // query 0 sees key 0 only; query 1 weighs keys 1 : 3.
  assertClose(out, [10, (10 * 1 + 20 * 3) / 4], 1e-7, "causal");
  const bi = attend(new Float32Array([1, 1]), c, {
    heads: 1,
    seq: 2,
    scale: 1,
    causal: false,
  });
  assertClose(bi, [17.5, 17.5], 1e-7, "bidirectional");
});

Deno.test("attend: a sliding window of 2 drops keys two positions back", () => {
  const c = createKvCache(1, 1, 1);
  appendKv(c, new Float32Array([0, 0, 0]), new Float32Array([3, 5, 7]), 3);
  const out = attend(new Float32Array([1, 1, 1]), c, {
    heads: 1,
    seq: 3,
    window: 2,
    scale: 1,
  });
  assertClose(out, [3, 4, 6], 1e-7, "window");
});

Deno.test("attend: grouped-query heads 0,1 read kv head 0 and heads 2,3 kv head 1", () => {
  const c = createKvCache(1, 2, 1);
  // one position; kv head 0 value 1, kv head 1 value 2
  appendKv(c, new Float32Array([0, 0]), new Float32Array([1, 2]), 1);
  const out = attend(new Float32Array(4), c, { heads: 4, seq: 1 });
  assertEquals(out, new Float32Array([1, 1, 2, 2]));
});

Deno.test("attend: huge scores stay finite (max subtracted)", () => {
  const c = createKvCache(1, 1, 1);
  appendKv(c, new Float32Array([1000, 999]), new Float32Array([1, 0]), 2);
  const out = attend(new Float32Array([1]), c, {
    heads: 1,
    seq: 1,
    start: 1,
    scale: 1,
  });
  assertClose(out, [1 / (1 + Math.exp(-1))], 1e-7, "stable");
});

Deno.test("appendKv: rows land in [batch, head, pos, dim] order and the cache grows", () => {
  const c = createKvCache(2, 2, 2, 1);
  // batch 2 × seq 1 rows of 2 heads × 2: value = 100b + 10h + i
  const first = new Float32Array([0, 1, 10, 11, 100, 101, 110, 111]);
  appendKv(c, first, first, 1);
  assertEquals([c.length, c.capacity], [1, 1]);
  const more = new Float32Array(2 * 2 * 4).fill(7);
  appendKv(c, more, more, 2);
  assertEquals([c.length, c.capacity], [3, 4]);
  const at = (b: number, h: number, p: number, i: number) =>
    c.k[((b * 2 + h) * c.capacity + p) * 2 + i];
  assertEquals(
    [at(0, 1, 0, 1), at(1, 0, 0, 0), at(1, 1, 0, 1), at(1, 1, 2, 0)],
    [11, 100, 111, 7],
  );
  assertThrows(
    () => appendKv(c, new Float32Array(3), new Float32Array(3), 1),
    RangeError,
    "expected 2×1×4",
  );
});

Deno.test("attend: size errors", () => {
  const c = createKvCache(1, 2, 2);
  appendKv(c, new Float32Array(4), new Float32Array(4), 1);
  assertThrows(
    () => attend(new Float32Array(6), c, { heads: 3, seq: 1 }),
    RangeError,
    "3 query heads do not split into 2",
  );
  assertThrows(
    () => attend(new Float32Array(16), c, { heads: 4, seq: 2 }),
    RangeError,
    "positions -1..0",
  );
  assertThrows(
    () => attend(new Float32Array(8), c, { heads: 4, seq: 1, start: 1 }),
    RangeError,
    "queries at positions 1..1 but the cache holds 1",
  );
  assertThrows(
    () => attend(new Float32Array(5), c, { heads: 2, seq: 1 }),
    RangeError,
    "expected 1×1×2×2",
  );
});
