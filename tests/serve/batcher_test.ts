// The batcher on its own: rows of concurrent requests are concatenated in
// arrival order, split back, capped at maxBatch rows, grouped by shape, and
// a request that makes the batched forward throw fails alone.

import { assertEquals, assertRejects } from "@std/assert";
import type { FloatTensor } from "../../core/tensor.ts";
import { Batcher } from "../../serve/_batcher.ts";

/** A "network" that doubles every value and records the batch shapes it saw. */
function doubler(seen: number[][]) {
  return (x: FloatTensor): FloatTensor => {
    seen.push([...x.shape]);
    if (x.data.some((v) => v < 0)) throw new RangeError("negative input");
    return { data: x.data.map((v) => 2 * v), shape: [...x.shape] };
  };
}

const row = (v: number, n = 3): FloatTensor => ({
  data: new Float32Array(n).fill(v),
  shape: [1, n],
});

Deno.test("batcher: concurrent requests share one forward and get their own rows back", async () => {
  const seen: number[][] = [];
  const b = new Batcher(doubler(seen), { maxBatch: 8, maxWaitMs: 20 });
  const two: FloatTensor = {
    data: Float32Array.from([1, 1, 1, 2, 2, 2]),
    shape: [2, 3],
  };
  const ys = await Promise.all([
    b.submit(row(5)),
    b.submit(two),
    b.submit(row(7)),
  ]);
  assertEquals(seen, [[4, 3]]);
  assertEquals([...ys[0].data], [10, 10, 10]);
  assertEquals(ys[1].shape, [2, 3]);
  assertEquals([...ys[1].data], [2, 2, 2, 4, 4, 4]);
  assertEquals([...ys[2].data], [14, 14, 14]);
  b.close();
});

Deno.test("batcher: a full batch runs at once; the rest waits for the next", async () => {
  const seen: number[][] = [];
  const batches: [number, number][] = [];
  const b = new Batcher(doubler(seen), {
    maxBatch: 4,
    maxWaitMs: 10,
    onBatch: (rows, requests) => batches.push([rows, requests]),
  });
  const ps = [1, 2, 3, 4, 5, 6].map((v) => b.submit(row(v)));
  // Four rows filled the first batch synchronously.
  assertEquals(seen, [[4, 3]]);
  const ys = await Promise.all(ps);
  assertEquals(seen, [[4, 3], [2, 3]]);
  assertEquals(batches, [[4, 4], [2, 2]]);
  assertEquals(ys.map((y) => y.data[0]), [2, 4, 6, 8, 10, 12]);
  b.close();
});

Deno.test("batcher: shapes that do not stack run apart; maxBatch 1 turns batching off", async () => {
  const seen: number[][] = [];
  const b = new Batcher(doubler(seen), { maxBatch: 8, maxWaitMs: 5 });
  await Promise.all([
    b.submit(row(1, 3)),
    b.submit(row(1, 4)),
    b.submit(row(2, 3)),
  ]);
  assertEquals(seen.sort(), [[1, 4], [2, 3]]);
  const off: number[][] = [];
  const u = new Batcher(doubler(off), { maxBatch: 1, maxWaitMs: 5 });
  await Promise.all([u.submit(row(1)), u.submit(row(2))]);
  assertEquals(off, [[1, 3], [1, 3]]);
  b.close();
  u.close();
});

Deno.test("batcher: a request that breaks the batch fails alone", async () => {
  const seen: number[][] = [];
  const b = new Batcher(doubler(seen), { maxBatch: 8, maxWaitMs: 5 });
  const good = b.submit(row(3));
  const bad = b.submit(row(-1));
  await assertRejects(() => bad, RangeError, "negative input");
  assertEquals((await good).data[0], 6);
  assertEquals(seen, [[2, 3], [1, 3], [1, 3]]);
  b.close();
});

Deno.test("batcher: close fails what waits; flush runs it", async () => {
  const b = new Batcher(doubler([]), { maxBatch: 8, maxWaitMs: 1000 });
  const p = b.submit(row(1));
  b.close();
  await assertRejects(() => p, Error, "closing");
  const c = new Batcher(doubler([]), { maxBatch: 8, maxWaitMs: 1000 });
  const q = c.submit(row(4));
  c.flush();
  assertEquals((await q).data[0], 8);
  c.close();
});
