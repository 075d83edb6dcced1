// The kernels the layers call (rmsNorm, softmax, siluMul, applyRope, attend)
// dispatch to the WebAssembly SIMD kernels; each is checked here against its
// scalar `Ref` twin (which the PyTorch/NumPy vector tests check), on odd
// sizes, with and without worker threads, plus the property the layers rely
// on: a row's result does not depend on how many rows share the call.

import { assert, assertEquals, assertThrows } from "@std/assert";
import {
  appendKv,
  attend,
  attendRef,
  createKvCache,
  type KvCache,
} from "../../kernels/attention.ts";
import { siluMul, siluMulRef } from "../../kernels/activations.ts";
import { rmsNorm, rmsNormRef } from "../../kernels/norms.ts";
import {
  applyRope,
  applyRopeRef,
  ropeFrequencies,
  ropeTable,
} from "../../kernels/rope.ts";
import { softmax, softmaxRef } from "../../kernels/softmax.ts";
import {
  configureKernels,
  shutdownKernels,
} from "../../kernels/fast/runtime.ts";
import { getEngine } from "../../kernels/wasm/_engine.ts";
import { cosines, makeWeight } from "./fast/_helpers.ts";
import { linear } from "../../kernels/linear.ts";

/** Asserts |a − b| ≤ rel·|b| + abs element by element. */
function within(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  rel: number,
  abs: number,
  what: string,
): void {
  assertEquals(a.length, b.length, `${what}: lengths`);
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    assert(
      d <= rel * Math.abs(b[i]) + abs,
      `${what}: element ${i} is ${a[i]}, reference ${b[i]}`,
    );
  }
}

/** Counts calls of the engine's kernels while `f` runs. */
function calls(names: string[], f: () => void): Record<string, number> {
  const e = getEngine()!;
  const saved = names.map((n) => e.fn[n]);
  const count: Record<string, number> = Object.fromEntries(
    names.map((n) => [n, 0]),
  );
  names.forEach((n, i) => {
    e.fn[n] = (...a: number[]) => {
      count[n]++;
      saved[i](...a);
    };
  });
  try {
    f();
  } finally {
    names.forEach((n, i) => e.fn[n] = saved[i]);
  }
  return count;
}

Deno.test("rmsNorm and softmax run the SIMD kernels for rows of 16+ and match their twins", () => {
  for (const n of [15, 16, 17, 64, 576, 1001]) {
    const x = cosines(3 * n).map((v) => 4 * v);
    const w = cosines(n, 5);
    let y: Float32Array = new Float32Array(), p: Float32Array = y;
    const k = calls(["rmsnorm_rows", "softmax_rows"], () => {
      y = rmsNorm(x, 3, n, w, 1e-5);
      p = softmax(x, 3, n);
    });
    const fast = n >= 16 ? 1 : 0;
    assertEquals(k, { rmsnorm_rows: fast, softmax_rows: fast }, `n=${n}`);
    within(y, rmsNormRef(x, 3, n, w, 1e-5), 2e-6, 1e-7, `rmsNorm ${n}`);
    within(p, softmaxRef(x, 3, n), 2e-6, 1e-9, `softmax ${n}`);
    // a temperature other than 1 keeps the reference
    assertEquals(softmax(x, 3, n, 2), softmaxRef(x, 3, n, 2));
  }
});

Deno.test("siluMul matches its twin over both exp tails; lengths must agree", () => {
  const g = cosines(1003).map((v) => 30 * v);
  const u = cosines(1003, 2);
  within(siluMul(g, u), siluMulRef(g, u), 2e-6, 1e-30, "siluMul");
  assertThrows(
    () => siluMul(new Float32Array(3), new Float32Array(4)),
    RangeError,
    "gate has 3 values, up has 4",
  );
});

Deno.test("applyRope: SIMD rotation matches the F64 twin in both styles; unsupported head sizes fall back", () => {
  for (const style of ["neox", "interleaved"] as const) {
    for (const dim of [8, 12, 64, 6]) {
      const B = 2, T = 5, H = 3, start = 40;
      const table = ropeTable(ropeFrequencies(dim, 10000), start + T);
      const x = cosines(B * T * H * dim, 1);
      const a = x.slice(), b = x.slice();
      const k = calls(["rope_neox", "rope_interleaved"], () => {
        applyRope(a, B, T, H, table, style, start);
      });
      applyRopeRef(b, B, T, H, table, style, start);
      const simd = style === "neox" ? (dim / 2) % 4 === 0 : dim % 4 === 0;
      assertEquals(
        k[style === "neox" ? "rope_neox" : "rope_interleaved"],
        simd ? B : 0,
        `${style} ${dim}`,
      );
      within(a, b, 1e-6, 1e-6, `${style} ${dim}`);
    }
  }
});

Deno.test("applyRope: a token rotated alone equals the same token inside a prefill", () => {
  const dim = 64, H = 9, T = 7;
  const table = ropeTable(ropeFrequencies(dim), T);
  for (const style of ["neox", "interleaved"] as const) {
    const x = cosines(T * H * dim, 3);
    const all = x.slice();
    applyRope(all, 1, T, H, table, style, 0);
    for (let t = 0; t < T; t++) {
      const one = x.slice(t * H * dim, (t + 1) * H * dim);
      applyRope(one, 1, 1, H, table, style, t);
      assertEquals(one, all.subarray(t * H * dim, (t + 1) * H * dim));
    }
  }
});

/** Fills a cache through appendKv with deterministic keys and values. */
function filled(
  B: number,
  kvH: number,
  dim: number,
  len: number,
  cap = 4,
): KvCache {
  const c = createKvCache(B, kvH, dim, cap);
  const k = cosines(B * len * kvH * dim, 7);
  const v = cosines(B * len * kvH * dim, 11);
  appendKv(c, k, v, len);
  return c;
}

function attendCases(): void {
  const cases = [
    { B: 1, heads: 9, kvH: 3, dim: 64, len: 37, seq: 1 }, // decode, GQA
    { B: 2, heads: 4, kvH: 2, dim: 8, len: 13, seq: 13 }, // prefill, batch 2
    { B: 1, heads: 2, kvH: 2, dim: 12, len: 21, seq: 5 }, // chunk after a prefix
    { B: 1, heads: 4, kvH: 1, dim: 16, len: 300, seq: 300 }, // big: split across threads
  ];
  for (const c of cases) {
    const cache = filled(c.B, c.kvH, c.dim, c.len);
    assert(cache.capacity >= c.len);
    const q = cosines(c.B * c.seq * c.heads * c.dim, 5);
    for (const causal of [true, false]) {
      let out: Float32Array = new Float32Array();
      const k = calls(["attention"], () => {
        out = attend(q, cache, { heads: c.heads, seq: c.seq, causal });
      });
      assertEquals(k.attention > 0, true, JSON.stringify(c));
      const ref = attendRef(q, cache, { heads: c.heads, seq: c.seq, causal });
      within(out, ref, 2e-6, 2e-6, `${JSON.stringify(c)} causal ${causal}`);
    }
  }
}

Deno.test("attend: the SIMD kernel on a kernel-memory cache matches the twin (decode, prefill, batch, GQA)", () => {
  attendCases();
});

Deno.test("attend: same results with two kernel threads", async () => {
  await configureKernels({ threads: 2, minParallelWork: 1 });
  try {
    attendCases();
  } finally {
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});

Deno.test("attend: a sliding window, an odd head size or a plain-array cache runs the twin", () => {
  const cache = filled(1, 1, 8, 9);
  const q = cosines(8 * 3, 1);
  const o = { heads: 1, seq: 3, window: 4 };
  const k = calls(["attention"], () => {
    assertEquals(attend(q, cache, o), attendRef(q, cache, o));
    const odd = filled(1, 1, 6, 5);
    const q6 = cosines(6, 2);
    assertEquals(
      attend(q6, odd, { heads: 1, seq: 1 }),
      attendRef(q6, odd, { heads: 1, seq: 1 }),
    );
    const plain = filled(1, 1, 8, 9);
    plain.k = plain.k.slice();
    plain.v = plain.v.slice();
    assertEquals(
      attend(q, plain, { heads: 1, seq: 3 }),
      attendRef(q, plain, { heads: 1, seq: 3 }),
    );
  });
  assertEquals(k.attention, 0);
});

Deno.test("attend: one query at a time equals the prefill exactly, across cache growth", () => {
  const H = 6, kvH = 2, dim = 16, T = 40;
  const k = cosines(T * kvH * dim, 1), v = cosines(T * kvH * dim, 2);
  const q = cosines(T * H * dim, 3);
  const whole = createKvCache(1, kvH, dim, 1);
  appendKv(whole, k, v, T);
  const prefill = attend(q, whole, { heads: H, seq: T });
  const step = createKvCache(1, kvH, dim, 1);
  for (let t = 0; t < T; t++) {
    const kv = (a: Float32Array) =>
      a.subarray(t * kvH * dim, (t + 1) * kvH * dim);
    appendKv(step, kv(k), kv(v), 1);
    const y = attend(q.subarray(t * H * dim, (t + 1) * H * dim), step, {
      heads: H,
      seq: 1,
    });
    assertEquals(y, prefill.subarray(t * H * dim, (t + 1) * H * dim), `t=${t}`);
  }
  assertEquals(step.capacity, 64);
  // the grown cache still lives in kernel memory
  assert(getEngine()!.owns(new Uint8Array(step.k.buffer)));
});

Deno.test("linear: a row's output is the same alone or in any batch (F32 both kernels, Q8_0, Q4_0)", () => {
  for (
    const [dtype, inF] of [
      ["F32", 64],
      ["F32", 300],
      ["Q8_0", 320],
      ["Q4_0", 96],
    ] as const
  ) {
    const w = makeWeight(dtype, 21, inF);
    const rows = 11; // 2 full 5-row GEMM tiles + 1 row; 5 two-row panels + 1
    const x = cosines(rows * inF, 3);
    const all = linear(x, rows, w);
    for (let r = 0; r < rows; r++) {
      const one = linear(x.subarray(r * inF, (r + 1) * inF), 1, w);
      assertEquals(
        one,
        all.subarray(r * 21, (r + 1) * 21),
        `${dtype} ${inF} row ${r}`,
      );
    }
    const three = linear(x.subarray(4 * inF, 7 * inF), 3, w);
    assertEquals(
      three,
      all.subarray(4 * 21, 7 * 21),
      `${dtype} ${inF} rows 4..6`,
    );
  }
});
