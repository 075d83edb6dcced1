import { assert, assertEquals, assertThrows } from "@std/assert";
import {
  createKvCache,
  fastAttention,
  fastAttentionRef,
} from "../../../kernels/fast/attention.ts";
import {
  configureKernels,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { attentionRef, cosines, maxDiff, VECTORS } from "./_helpers.ts";

function steps(
  heads: number,
  kvHeads: number,
  headDim: number,
  seqs: number[],
  causal = true,
): void {
  const fast = createKvCache({ kvHeads, headDim, capacity: 64 });
  const ref = createKvCache({ kvHeads, headDim, capacity: 64, fast: false });
  for (const seq of seqs) {
    const at = fast.length;
    const q = cosines(seq * heads * headDim, at);
    const k = cosines(seq * kvHeads * headDim, at + 0.3);
    const v = cosines(seq * kvHeads * headDim, at + 0.7);
    const a = fastAttention(q, k, v, fast, { heads, causal });
    const b = attentionRef(q, k, v, ref, { heads, causal });
    // values are averages of |v| ≤ 2.1: absolute budget from F32 rounding
    const d = maxDiff(a, b);
    assert(
      d <= 2e-5,
      `heads ${heads}/${kvHeads}×${headDim} seq ${seq} at ${at}: |diff| ${d}`,
    );
    assertEquals(fast.length, ref.length);
  }
}

function checkAll(): void {
  // prefill then decode steps; GQA groups; head sizes with and without the
  // 32-wide value path; a head size that is not a multiple of 4 (reference)
  steps(4, 2, 8, [5, 1, 1, 7]);
  steps(3, 3, 64, [9, 1, 2]);
  steps(6, 2, 36, [1, 1, 1, 1, 3]);
  steps(2, 1, 6, [4, 1]);
  steps(4, 4, 16, [6, 2], false);
}

Deno.test("fastAttention matches attendRef for prefill and decode, with and without workers", async () => {
  checkAll();
  try {
    await configureKernels({ threads: 2, minParallelWork: 1 });
    checkAll();
  } finally {
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});

Deno.test("attention reproduces NumPy over a prefill of 3 and one decode step (GQA)", () => {
  const A = VECTORS.attention;
  for (const fastCache of [true, false]) {
    const cache = createKvCache({
      kvHeads: A.kvHeads,
      headDim: A.headDim,
      capacity: 8,
      fast: fastCache,
    });
    const run = fastCache ? fastAttention : attentionRef;
    for (const step of [A.prefill, A.decode]) {
      const y = run(
        Float32Array.from(step.q),
        Float32Array.from(step.k),
        Float32Array.from(step.v),
        cache,
        { heads: A.heads },
      );
      const d = maxDiff(y, step.y);
      assert(d <= 1e-6, `${fastCache ? "fast" : "ref"}: |diff| ${d}`);
    }
    assertEquals(cache.length, 4);
  }
});

Deno.test("attention errors", () => {
  const cache = createKvCache({ kvHeads: 2, headDim: 4, capacity: 2 });
  const q = new Float32Array(4 * 4), kv = new Float32Array(2 * 4);
  assertThrows(
    () => fastAttention(q, kv, kv, cache, { heads: 3 }),
    TypeError,
    "3 query heads over 2 key/value heads",
  );
  assertThrows(
    () => fastAttention(q, new Float32Array(3), kv, cache, { heads: 4 }),
    TypeError,
    "need keys and values of 8 values, got 3 and 8",
  );
  fastAttention(q, kv, kv, cache, { heads: 4 });
  fastAttention(q, kv, kv, cache, { heads: 4 });
  assertThrows(
    () => fastAttention(q, kv, kv, cache, { heads: 4 }),
    RangeError,
    "Cannot append 1 positions to a KV cache holding 2 of 2",
  );
  assertThrows(
    () => createKvCache({ kvHeads: 0, headDim: 4, capacity: 2 }),
    RangeError,
    "kvHeads = 0",
  );
});

Deno.test("the deprecated fastAttentionRef is attendRef after the append, bit for bit", () => {
  for (const causal of [true, false]) {
    const a = createKvCache({
      kvHeads: 2,
      headDim: 6,
      capacity: 16,
      fast: false,
    });
    const b = createKvCache({
      kvHeads: 2,
      headDim: 6,
      capacity: 16,
      fast: false,
    });
    for (const [seq, at] of [[3, 0], [1, 3], [2, 4]]) {
      const q = cosines(seq * 4 * 6, at), k = cosines(seq * 2 * 6, at + 0.5);
      const v = cosines(seq * 2 * 6, at + 0.9);
      assertEquals(
        fastAttentionRef(q, k, v, a, { heads: 4, causal }),
        attentionRef(q, k, v, b, { heads: 4, causal }),
      );
      assertEquals(a.length, b.length);
    }
    // a head size the SIMD kernel does not take: fastAttention is the reference
    const c = createKvCache({ kvHeads: 2, headDim: 6, capacity: 16 });
    const d = createKvCache({
      kvHeads: 2,
      headDim: 6,
      capacity: 16,
      fast: false,
    });
    const q = cosines(2 * 4 * 6), kv = cosines(2 * 2 * 6, 1);
    assertEquals(
      fastAttention(q, kv, kv, c, { heads: 4, causal }),
      attentionRef(q, kv, kv, d, { heads: 4, causal }),
    );
  }
});
