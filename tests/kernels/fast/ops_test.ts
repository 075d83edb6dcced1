import {
  assert,
  assertAlmostEquals,
  assertEquals,
  assertThrows,
} from "@std/assert";
import {
  fastRmsNorm,
  fastRmsNormRef,
  fastRope,
  fastRopeRef,
  fastSoftmax,
  fastSoftmaxRef,
  fastSwiglu,
  fastSwigluRef,
  type RopeOptions,
} from "../../../kernels/fast/ops.ts";
import { configureKernels, kernelInfo } from "../../../kernels/fast/runtime.ts";
import { siluMulRef } from "../../../kernels/activations.ts";
import { rmsNormRef } from "../../../kernels/norms.ts";
import { softmaxRef } from "../../../kernels/softmax.ts";
import { cosines, ropeRef, VECTORS, worstRatio } from "./_helpers.ts";

/** Relative budget: |a − b| ≤ rel·|b| + abs. */
function within(
  a: Float32Array,
  b: ArrayLike<number>,
  rel: number,
  abs: number,
  what: string,
): void {
  const scale = Array.from(b, (v) => rel * Math.abs(v) + abs);
  const r = worstRatio(a, b, scale);
  assert(r <= 1, `${what}: ${r.toFixed(2)}× the budget`);
}

const SIZES = [1, 3, 4, 7, 64, 101];

function checkAll(): void {
  for (const n of SIZES) {
    const x = cosines(3 * n).map((v) => 8 * v);
    within(fastSoftmax(x, n), softmaxRef(x, 3, n), 1e-6, 1e-9, `softmax ${n}`);
    const w = cosines(n, 5);
    within(
      fastRmsNorm(x, n, w, 1e-5),
      rmsNormRef(x, 3, n, w, 1e-5),
      2e-6,
      1e-7,
      `rmsnorm ${n}`,
    );
    const g = x.map((v) => v * 3); // silu over ±50: exp far into both tails
    const u = cosines(3 * n, 9);
    within(fastSwiglu(g, u), siluMulRef(g, u), 2e-6, 1e-30, `swiglu ${n}`);
  }
  const cases: RopeOptions[] = [
    { heads: 3, headDim: 64, startPos: 7 },
    { heads: 2, headDim: 16, rotaryDim: 8, startPos: 100, base: 500000 },
    { heads: 3, headDim: 8, style: "interleaved", startPos: 3 },
    { heads: 1, headDim: 12, rotaryDim: 8, style: "interleaved" },
    { heads: 2, headDim: 6 }, // neox rot/2 = 3: runs the reference
  ];
  for (const o of cases) {
    const x = cosines(5 * o.heads * o.headDim, 1);
    within(
      fastRope(x, o),
      ropeRef(x, o),
      1e-5,
      1e-5,
      `rope ${JSON.stringify(o)}`,
    );
  }
}

Deno.test("softmax, RMSNorm, SwiGLU and RoPE match their op's one reference (relaxed and plain SIMD)", async () => {
  try {
    checkAll();
    await configureKernels({ noRelaxedSimd: true });
    assert(kernelInfo().backend === "wasm-simd");
    checkAll();
  } finally {
    await configureKernels({ noRelaxedSimd: false });
  }
});

Deno.test("the references reproduce NumPy", () => {
  const s = VECTORS.softmax;
  within(
    softmaxRef(Float32Array.from(s.x), s.x.length / s.n, s.n),
    s.y,
    1e-6,
    1e-9,
    "softmax",
  );
  within(
    fastSoftmax(Float32Array.from(s.x), s.n),
    s.y,
    2e-6,
    1e-9,
    "fast softmax",
  );
  const r = VECTORS.rmsnorm;
  const rx = Float32Array.from(r.x), rw = Float32Array.from(r.w);
  within(
    rmsNormRef(rx, rx.length / r.n, r.n, rw, r.eps),
    r.y,
    1e-6,
    1e-7,
    "rmsnorm",
  );
  within(fastRmsNorm(rx, r.n, rw, r.eps), r.y, 2e-6, 1e-7, "fast rmsnorm");
  const g = VECTORS.swiglu;
  const gg = Float32Array.from(g.gate), gu = Float32Array.from(g.up);
  within(siluMulRef(gg, gu), g.y, 1e-6, 1e-7, "swiglu");
  within(fastSwiglu(gg, gu), g.y, 2e-6, 1e-7, "fast swiglu");
  const p = VECTORS.rope;
  const px = Float32Array.from(p.x);
  const neox: RopeOptions = { heads: 2, headDim: 8, startPos: 5 };
  const inter: RopeOptions = {
    heads: 2,
    headDim: 8,
    rotaryDim: 4,
    startPos: 5,
    base: 500,
    style: "interleaved",
  };
  within(ropeRef(px, neox), p.neox, 1e-6, 1e-6, "rope neox");
  within(fastRope(px, neox), p.neox, 1e-5, 1e-5, "fast rope neox");
  within(ropeRef(px, inter), p.interleaved, 1e-6, 1e-6, "rope interleaved");
  within(
    fastRope(px, inter),
    p.interleaved,
    1e-5,
    1e-5,
    "fast rope interleaved",
  );
});

Deno.test("softmax of extreme rows stays finite and exact where it must", () => {
  const y = fastSoftmax(new Float32Array([1000, -1000, 0, -Infinity, 3, 3]), 3);
  assertAlmostEquals(y[0], 1, 1e-7);
  assertAlmostEquals(y[1], 0, 1e-30);
  assertAlmostEquals(y[3], 0, 0);
  assertAlmostEquals(y[4], 0.5, 1e-7);
});

Deno.test("ops errors", () => {
  assertThrows(
    () => fastSoftmax(new Float32Array(5), 2),
    TypeError,
    "Cannot split 5 values into rows of 2 for softmax",
  );
  assertThrows(
    () => fastRmsNorm(new Float32Array(4), 2, new Float32Array(3), 1e-5),
    TypeError,
    "weight has 3 values, rows have 2",
  );
  assertThrows(
    () => fastSwiglu(new Float32Array(4), new Float32Array(3)),
    TypeError,
    "gate has 4 values, up has 3",
  );
  assertThrows(
    () => fastRope(new Float32Array(8), { heads: 1, headDim: 8, rotaryDim: 5 }),
    TypeError,
    "rotaryDim must be even",
  );
  assertThrows(
    () => fastRope(new Float32Array(8), { heads: 1, headDim: 8, invFreq: [1] }),
    TypeError,
    "expected rotaryDim/2 = 4",
  );
});

Deno.test("the deprecated fast…Ref names are the ops' one references, bit for bit", () => {
  const n = 37;
  const x = cosines(3 * n).map((v) => 8 * v);
  const w = cosines(n, 5);
  assertEquals(fastSoftmaxRef(x, n), softmaxRef(x, 3, n));
  assertEquals(fastRmsNormRef(x, n, w, 1e-5), rmsNormRef(x, 3, n, w, 1e-5));
  const u = cosines(3 * n, 9);
  assertEquals(fastSwigluRef(x, u), siluMulRef(x, u));
  const o: RopeOptions = { heads: 2, headDim: 12, rotaryDim: 6, startPos: 9 };
  const r = cosines(4 * 24, 2);
  assertEquals(fastRopeRef(r, o), ropeRef(r, o));
  // the reference takes over where the SIMD kernel cannot (rotaryDim/2 = 3)
  assertEquals(fastRope(r, o), ropeRef(r, o));
  assertThrows(() => fastSoftmaxRef(x, 4), TypeError, "rows of 4");
});
