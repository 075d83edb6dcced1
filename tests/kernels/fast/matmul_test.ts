import {
  assert,
  assertAlmostEquals,
  assertEquals,
  assertThrows,
} from "@std/assert";
import type { Tensor } from "../../../core/tensor.ts";
import { tensorFromF32 } from "../../../core/tensor.ts";
import {
  linear,
  linearRef,
  matmulTransposedRef,
} from "../../../kernels/linear.ts";
import { state } from "../../../kernels/fast/_dispatch.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";
import {
  fastLinear,
  fastMatmulF32,
  forgetWeight,
} from "../../../kernels/fast/matmul.ts";
import {
  activationBlocksOf,
  type FastDType,
  quantizeActivationsRef,
} from "../../../kernels/quant_ref.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import {
  bytesOf,
  cosines,
  decodeAll,
  makeWeight,
  VECTORS,
  worstRatio,
} from "./_helpers.ts";

const DENSE: FastDType[] = ["F32", "F16", "BF16"];
const QUANT: FastDType[] = ["Q8_0", "Q4_0", "Q4_K", "Q6_K"];

/** Σ_i |w_i·x_i| per output: the scale of F32 rounding errors. */
function absDot(
  x: Float32Array,
  rows: number,
  wf: Float32Array,
  outF: number,
  inF: number,
): Float64Array {
  const out = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let s = 0;
      for (let i = 0; i < inF; i++) {
        s += Math.abs(x[r * inF + i] * wf[o * inF + i]);
      }
      out[r * outF + o] = s;
    }
  }
  return out;
}

/** The exact product `x · Wᵀ + b` of the decoded weights, in F64. */
function exactLinear(
  x: Float32Array,
  rows: number,
  wf: Float32Array,
  outF: number,
  inF: number,
  bias?: Float32Array,
): Float64Array {
  const out = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let s = bias ? bias[o] : 0;
      for (let i = 0; i < inF; i++) s += x[r * inF + i] * wf[o * inF + i];
      out[r * outF + o] = s;
    }
  }
  return out;
}

/**
 * Error budget of a quantized kernel against the exact product: the
 * activation rounding plus F32 rounding (1e-5 of `Σ|w·x|`). Per element,
 * with `d = max|x|/127` over its activation block (32 values for Q8_0 /
 * Q4_0 weights, 256 for Q4_K / Q6_K): Q8_K codes are within `d/2`; Q8_0
 * codes are taken against `127/max|x|` but scaled by `d` rounded to F16
 * (relative error ≤ 2^-11, ≤ 2^-25 absolute below F16's normal range), so
 * within `d/2 + 127·(d·2^-11 + 2^-25)`.
 */
function quantBudget(
  dtype: FastDType,
  x: Float32Array,
  rows: number,
  wf: Float32Array,
  outF: number,
  inF: number,
): Float64Array {
  const block = activationBlocksOf(dtype) === "Q8_0" ? 32 : 256;
  const d = new Float64Array(x.length / block);
  for (let b = 0; b < d.length; b++) {
    let amax = 0;
    for (let j = 0; j < block; j++) {
      amax = Math.max(amax, Math.abs(x[b * block + j]));
    }
    d[b] = amax / 127;
  }
  const perElem = (db: number) =>
    block === 32 ? db / 2 + 127 * (db * 2 ** -11 + 2 ** -25) : db / 2;
  const fp = absDot(x, rows, wf, outF, inF);
  const out = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let s = 0;
      for (let i = 0; i < inF; i++) {
        s += Math.abs(wf[o * inF + i]) *
          perElem(d[Math.floor((r * inF + i) / block)]);
      }
      out[r * outF + o] = s * 1.001 + 1e-5 * fp[r * outF + o] + 1e-6;
    }
  }
  return out;
}

/**
 * The F32 rounding budget of the quantized kernels against their rule
 * (`linearRef`): `2e-6·Σ|w·xq| + 1e-5`, `xq` the quantized activations.
 */
function ruleBudget(
  dtype: FastDType,
  x: Float32Array,
  rows: number,
  wf: Float32Array,
  outF: number,
  inF: number,
): Float64Array {
  const q = quantizeActivationsRef(x, activationBlocksOf(dtype)!);
  const xq = Float32Array.from(
    q.codes,
    (v, i) => v * q.scales[Math.floor(i / q.block)],
  );
  return absDot(xq, rows, wf, outF, inF).map((v) => 2e-6 * v + 1e-5);
}

function checkDtype(
  dtype: FastDType,
  rows: number,
  outF: number,
  inF: number,
): void {
  const w = makeWeight(dtype, outF, inF);
  const x = cosines(rows * inF);
  const bias = cosines(outF, 3, 0.5);
  const fast = fastLinear(x, rows, w, bias);
  const ref = linearRef(x, rows, w, bias);
  const wf = decodeAll(w);
  if (DENSE.includes(dtype)) {
    const fp = absDot(x, rows, wf, outF, inF).map((v) => 2e-6 * v + 1e-6);
    const r = worstRatio(fast, ref, fp);
    assert(
      r <= 1,
      `${dtype} ${rows}×${inF}→${outF}: error ${r.toFixed(2)}× the budget`,
    );
    return;
  }
  // against the exact product: within the activation rounding
  const exact = exactLinear(x, rows, wf, outF, inF, bias);
  const r = worstRatio(fast, exact, quantBudget(dtype, x, rows, wf, outF, inF));
  assert(
    r <= 1,
    `${dtype} ${rows}×${inF}→${outF}: error ${r.toFixed(2)}× the budget`,
  );
  // against the reference twin (the same llama.cpp rule): F32 rounding only
  const r2 = worstRatio(fast, ref, ruleBudget(dtype, x, rows, wf, outF, inF));
  assert(
    r2 <= 1,
    `${dtype} ${rows}×${inF}→${outF}: ${
      r2.toFixed(2)
    }× the F32 rounding budget off linearRef`,
  );
}

const SHAPES: Record<string, [number, number, number][]> = {
  // rows, outF, inF: odd sizes, not multiples of the 2×4 tile or of 4/8
  dense: [[1, 5, 37], [2, 9, 64], [3, 4, 8], [5, 13, 259], [1, 1, 3], [
    7,
    6,
    515,
  ]],
  // Q8_0/Q4_0: 1, 2, 3, 5, 7, 8, 13 and 18 blocks per row (8- and 4-block
  // groups, 1 to 3 leftover blocks)
  q32: [
    [1, 5, 32],
    [2, 6, 64],
    [3, 7, 96],
    [2, 3, 160],
    [1, 4, 224],
    [5, 9, 256],
    [1, 64, 256],
    [2, 5, 416],
    [1, 7, 576],
  ],
  q256: [[1, 5, 256], [3, 4, 512], [2, 9, 768]],
};

function runAll(): void {
  for (const dtype of [...DENSE, ...QUANT]) {
    const shapes = DENSE.includes(dtype)
      ? SHAPES.dense
      : dtype.endsWith("_K")
      ? SHAPES.q256
      : SHAPES.q32;
    for (const [rows, outF, inF] of shapes) checkDtype(dtype, rows, outF, inF);
  }
  // Q8_0 through the four-dot kernel too, where the two-dot one is the default
  if (getEngine()?.u8Dot) {
    state.u8Dot = false;
    try {
      for (const [rows, outF, inF] of SHAPES.q32) {
        checkDtype("Q8_0", rows, outF, inF);
      }
    } finally {
      state.u8Dot = true;
    }
  }
}

Deno.test("fastLinear matches linearRef for every dtype, odd sizes, rows 1 and > 1 (relaxed SIMD, 1 thread)", () => {
  assert(
    kernelInfo().backend.startsWith("wasm"),
    "WebAssembly SIMD backend expected",
  );
  runAll();
});

Deno.test("fastLinear matches linearRef with plain SIMD and with worker threads", async () => {
  try {
    await configureKernels({ noRelaxedSimd: true });
    assertEquals(kernelInfo().backend, "wasm-simd");
    runAll();
    await configureKernels({
      noRelaxedSimd: false,
      threads: 2,
      minParallelWork: 1,
    });
    const info = kernelInfo();
    assertEquals(info.backend, "wasm-relaxed-simd");
    assertEquals(info.workers, 1, info.note);
    runAll();
  } finally {
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});

Deno.test("linearRef and fastLinear reproduce NumPy on decoded weights of every dtype", () => {
  const L = VECTORS.linear;
  const [rows, inF, outF] = L.shape;
  const x = Float32Array.from(L.x);
  const bias = Float32Array.from(L.bias);
  for (const dtype of [...DENSE, ...QUANT]) {
    const w: Tensor = {
      name: dtype,
      dtype,
      shape: [outF, inF],
      bytes: bytesOf(VECTORS.blocks[dtype].bytes),
    };
    const exact: number[] = L[dtype];
    // quantized weights: linearRef follows llama.cpp's rule, as NumPy's
    // linear_quantized does; dense ones are exact products
    const expected: number[] = DENSE.includes(dtype)
      ? exact
      : VECTORS.linear_quantized[dtype];
    const ref = linearRef(x, rows, w, bias);
    for (let i = 0; i < expected.length; i++) {
      assertAlmostEquals(
        ref[i],
        expected[i],
        1e-5 * (1 + Math.abs(expected[i])),
        `${dtype} ref[${i}]`,
      );
    }
    const fast = fastLinear(x, rows, w, bias);
    const wf = decodeAll(w);
    const budget = DENSE.includes(dtype)
      ? absDot(x, rows, wf, outF, inF).map((v) => 2e-6 * v + 1e-5)
      : ruleBudget(dtype, x, rows, wf, outF, inF);
    const r = worstRatio(fast, expected, budget);
    assert(r <= 1, `${dtype}: ${r.toFixed(2)}× the budget against NumPy`);
    if (!DENSE.includes(dtype)) {
      const re = worstRatio(
        fast,
        exact,
        quantBudget(dtype, x, rows, wf, outF, inF),
      );
      assert(re <= 1, `${dtype}: ${re.toFixed(2)}× the budget against exact`);
    }
  }
});

Deno.test("roundF16Activations: F16 weights times F16-rounded activations, as NumPy computes them", async () => {
  const L = VECTORS.linear;
  const [rows, inF, outF] = L.shape;
  const x = Float32Array.from(L.x);
  const bias = Float32Array.from(L.bias);
  const w: Tensor = {
    name: "F16",
    dtype: "F16",
    shape: [outF, inF],
    bytes: bytesOf(VECTORS.blocks.F16.bytes),
  };
  const expected: number[] = VECTORS.linear_f16_activations;
  const budget = absDot(x, rows, decodeAll(w), outF, inF).map((v) =>
    2e-6 * v + 1e-5
  );
  const off = fastLinear(x, rows, w, bias);
  try {
    await configureKernels({ roundF16Activations: true });
    for (
      const y of [fastLinear(x, rows, w, bias), linearRef(x, rows, w, bias)]
    ) {
      const r = worstRatio(y, expected, budget);
      assert(r <= 1, `${r.toFixed(2)}× the budget against NumPy`);
    }
    // other dtypes are unaffected
    const q = makeWeight("Q8_0", 3, 64), xq = cosines(64);
    await configureKernels({ roundF16Activations: false });
    const before = fastLinear(xq, 1, q);
    await configureKernels({ roundF16Activations: true });
    assertEquals(fastLinear(xq, 1, q), before);
  } finally {
    await configureKernels({ roundF16Activations: false });
  }
  // off: F32 activations, the exact product (the rounding is visible)
  assert(worstRatio(off, L.F16, budget) <= 1);
  assert(worstRatio(off, expected, budget) > 1);
  // the reference takes the rule as an option, whatever the setting
  const on = linearRef(x, rows, w, bias, { roundF16Activations: true });
  assert(worstRatio(on, expected, budget) <= 1);
  assert(worstRatio(on, L.F16, budget) > 1);
  await configureKernels({ roundF16Activations: true });
  try {
    const exact = linearRef(x, rows, w, bias, { roundF16Activations: false });
    assert(worstRatio(exact, L.F16, budget) <= 1);
    // without the option it follows the setting
    assertEquals(linearRef(x, rows, w, bias), on);
  } finally {
    await configureKernels({ roundF16Activations: false });
  }
});

Deno.test("quantizeActivationsRef reproduces NumPy's Q8_0 and Q8_K activation blocks exactly, and the kernels agree on them", async () => {
  const A = VECTORS.activations;
  const x = Float32Array.from(A.x);
  for (const [rule, blocks] of [["q8_0", "Q8_0"], ["q8_k", "Q8_K"]] as const) {
    const q = quantizeActivationsRef(x, blocks);
    assertEquals(Array.from(q.codes), A[rule].codes, rule);
    assertEquals(
      Array.from(q.scales),
      Array.from(Float32Array.from(A[rule].scales)),
      rule,
    );
  }
  // the kernels quantize the same way: ties, zero blocks, tiny scales
  for (const noRelaxedSimd of [false, true]) {
    await configureKernels({ noRelaxedSimd });
    for (const dtype of QUANT) {
      const w = makeWeight(dtype, 5, x.length);
      const fast = fastLinear(x, 1, w), ref = linearRef(x, 1, w);
      const r = worstRatio(
        fast,
        ref,
        ruleBudget(dtype, x, 1, decodeAll(w), 5, x.length),
      );
      assert(r <= 1, `${dtype} (relaxed ${!noRelaxedSimd}): ${r.toFixed(2)}×`);
    }
  }
  await configureKernels({ noRelaxedSimd: false });
  // hand-checked: 127/127 = 1, so x·id = 0.5, 1.5, 2.5 … tie to even
  const q = quantizeActivationsRef(x.subarray(288, 320), "Q8_0");
  assertEquals(Array.from(q.codes.subarray(0, 10)), [
    127,
    0,
    2,
    2,
    0,
    -2,
    -2,
    4,
    126,
    -126,
  ]);
  assertEquals(q.scales[0], 1);
  assertThrows(
    () => quantizeActivationsRef(new Float32Array(48), "Q8_0"),
    RangeError,
    "multiple of the block size 32",
  );
});

Deno.test("linear() dispatches to the fast kernels and keeps the reference path for other dtypes", () => {
  const w = makeWeight("Q8_0", 6, 64);
  const x = cosines(2 * 64);
  assertEquals(linear(x, 2, w), fastLinear(x, 2, w));
  // I8 with a scale: widened and run by the reference loop
  const codes = new Int8Array([1, -2, 3, -4, 5, -6]);
  const i8: Tensor = {
    name: "q",
    dtype: "I8",
    shape: [3, 2],
    bytes: new Uint8Array(codes.buffer),
    quant: { scale: 0.5 },
  };
  assertEquals(Array.from(linear(new Float32Array([1, 2]), 1, i8)), [
    -1.5,
    -2.5,
    -3.5,
  ]);
  // F32 agrees with matmulTransposedRef
  const wf = cosines(5 * 7, 1);
  const xf = cosines(3 * 7, 2);
  const y = linear(xf, 3, tensorFromF32("w", wf, [5, 7]));
  const ref = matmulTransposedRef(xf, 3, 7, wf, 5);
  for (let i = 0; i < y.length; i++) assertAlmostEquals(y[i], ref[i], 1e-5);
});

Deno.test("fastMatmulF32 matches matmulTransposedRef and notices in-place weight edits", () => {
  const w = cosines(9 * 33, 4);
  const x = cosines(4 * 33, 5);
  const b = cosines(9, 6);
  const y = fastMatmulF32(x, 4, 33, w, 9, b);
  const ref = matmulTransposedRef(x, 4, 33, w, 9, b);
  for (let i = 0; i < y.length; i++) assertAlmostEquals(y[i], ref[i], 1e-5);
  // the resident copy follows edits: small weights are compared in full
  w[100] += 1;
  const y2 = fastMatmulF32(x, 4, 33, w, 9, b);
  const ref2 = matmulTransposedRef(x, 4, 33, w, 9, b);
  for (let i = 0; i < y2.length; i++) assertAlmostEquals(y2[i], ref2[i], 1e-5);
  // large weights are sampled; forgetWeight covers edits between samples
  const big = tensorFromF32("big", cosines(64 * 128, 7), [64, 128]);
  const xb = cosines(128, 8);
  const before = fastLinear(xb, 1, big);
  new Float32Array(big.bytes.buffer)[1] += 10; // between samples
  forgetWeight(big);
  const after = fastLinear(xb, 1, big);
  assertAlmostEquals(after[0] - before[0], 10 * xb[1], 1e-4);
});

Deno.test("fastLinear on empty shapes: no rows, no outputs, no inputs (bias only)", () => {
  assertEquals(
    fastLinear(new Float32Array(0), 0, makeWeight("F32", 3, 4)).length,
    0,
  );
  const none = {
    name: "w",
    dtype: "F32" as const,
    shape: [3, 0],
    bytes: new Uint8Array(0),
  };
  assertEquals(
    Array.from(
      fastLinear(new Float32Array(0), 2, none, new Float32Array([1, 2, 3])),
    ),
    [1, 2, 3, 1, 2, 3],
  );
});

Deno.test("fastLinear errors name the weight and the sizes", () => {
  const w = makeWeight("Q4_0", 4, 64);
  assertThrows(
    () => fastLinear(new Float32Array(63), 1, w),
    TypeError,
    "input has 63 values, expected 1 × 64",
  );
  assertThrows(
    () => fastLinear(new Float32Array(64), 1, w, new Float32Array(3)),
    TypeError,
    "bias has 3 values, expected 4",
  );
  assertThrows(
    () =>
      fastLinear(new Float32Array(64), 1, {
        ...w,
        bytes: w.bytes.subarray(0, 140),
      }),
    RangeError,
    "Q4_0 [4, 64] needs 144 bytes, has 140",
  );
  assertThrows(
    () =>
      fastLinear(new Float32Array(48), 1, {
        ...makeWeight("F32", 2, 48),
        dtype: "Q4_0",
      }),
    RangeError,
    "multiple of the block size 32",
  );
  assertThrows(
    () =>
      fastLinear(new Float32Array(2), 1, {
        name: "w",
        dtype: "I8",
        shape: [1, 2],
        bytes: new Uint8Array(2),
      }),
    TypeError,
    'No fast kernel for weight "w" of dtype I8',
  );
  assertThrows(
    () =>
      fastLinear(new Float32Array(2), 1, {
        name: "v",
        dtype: "F32",
        shape: [2],
        bytes: new Uint8Array(8),
      }),
    TypeError,
    "must be 2-D",
  );
});
