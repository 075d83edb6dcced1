import {
  assert,
  assertAlmostEquals,
  assertEquals,
  assertThrows,
} from "@std/assert";
import type { Tensor } from "../../../core/tensor.ts";
import { tensorFromF32 } from "../../../core/tensor.ts";
import { linear, matmulTransposedRef } from "../../../kernels/linear.ts";
import {
  fastLinear,
  fastMatmulF32,
  forgetWeight,
  linearRef,
} from "../../../kernels/fast/matmul.ts";
import { type FastDType, rowBytes } from "../../../kernels/fast/quant_ref.ts";
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
  quantizeActivations,
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

/**
 * Error budget of a quantized kernel against the exact reference: the
 * activation rounding, at most `Σ_i |w_i|·d_i/2` (`d_i` the scale of x_i's
 * block), plus F32 rounding (1e-5 of `Σ|w·x|`).
 */
function quantBudget(
  x: Float32Array,
  rows: number,
  wf: Float32Array,
  outF: number,
  inF: number,
): Float64Array {
  const { d } = quantizeActivations(x);
  const fp = absDot(x, rows, wf, outF, inF);
  const out = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let s = 0;
      for (let i = 0; i < inF; i++) {
        s += Math.abs(wf[o * inF + i]) * d[(r * inF + i) >> 5] / 2;
      }
      out[r * outF + o] = s * 1.001 + 1e-5 * fp[r * outF + o] + 1e-6;
    }
  }
  return out;
}

/** What the quantized kernels compute exactly (activation codes, exact Q4_K min sums). */
function emulate(x: Float32Array, rows: number, w: Tensor): Float64Array {
  const [outF, inF] = w.shape;
  const wf = decodeAll(w);
  const { xq } = quantizeActivations(x);
  const out = new Float64Array(rows * outF);
  if (w.dtype !== "Q4_K") {
    for (let r = 0; r < rows; r++) {
      for (let o = 0; o < outF; o++) {
        let s = 0;
        for (let i = 0; i < inF; i++) s += xq[r * inF + i] * wf[o * inF + i];
        out[r * outF + o] = s;
      }
    }
    return out;
  }
  // Q4_K: a value is v = d·sc·q − dmin·m; the kernel dots d·sc·q with the
  // codes but takes the min term with the exact Σx, so it computes
  // Σ v·xq + dmin·m·(Σ xq − Σ x) per sub-block of 32.
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let s = 0;
      for (let sb = 0; sb < inF / 32; sb++) {
        let sumX = 0, sumXq = 0;
        for (let j = 0; j < 32; j++) {
          const i = sb * 32 + j;
          s += wf[o * inF + i] * xq[r * inF + i];
          sumX += x[r * inF + i];
          sumXq += xq[r * inF + i];
        }
        s += minOf(w, o, sb) * (sumXq - sumX);
      }
      out[r * outF + o] = s;
    }
  }
  return out;
}

/** Q4_K: the `dmin·m` of sub-block `sb` in row `o`. */
function minOf(w: Tensor, o: number, sb: number): number {
  const inF = w.shape[1];
  const off = o * rowBytes("Q4_K", inF) + Math.floor(sb / 8) * 144;
  const b = w.bytes;
  const dmin = new Float16Array(
    new Uint16Array([b[off + 2] | (b[off + 3] << 8)]).buffer,
  )[0];
  const j = sb % 8;
  const s = (k: number) => b[off + 4 + k];
  const m = j < 4 ? s(j + 4) & 63 : (s(j + 4) >> 4) | ((s(j) >> 6) << 4);
  return dmin * m;
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
  const r = worstRatio(fast, ref, quantBudget(x, rows, wf, outF, inF));
  assert(
    r <= 1,
    `${dtype} ${rows}×${inF}→${outF}: error ${r.toFixed(2)}× the budget`,
  );
  // and exactly what the kernel means to compute, up to F32 rounding
  const em = emulate(x, rows, w);
  const scale = absDot(quantizeActivations(x).xq, rows, wf, outF, inF).map((
    v,
  ) => 2e-6 * v + 1e-5);
  const withBias = em.map((v, i) => v + bias[i % outF]);
  const r2 = worstRatio(fast, withBias, scale);
  assert(
    r2 <= 1,
    `${dtype} ${rows}×${inF}→${outF}: ${
      r2.toFixed(2)
    }× off the activation-code emulation`,
  );
}

const SHAPES: Record<string, [number, number, number][]> = {
  // rows, outF, inF: odd sizes, not multiples of the 2×4 tile or of 4/8
  dense: [[1, 5, 37], [2, 9, 64], [3, 4, 8], [5, 13, 259], [1, 1, 3], [
    7,
    6,
    515,
  ]],
  // Q8_0/Q4_0: 1, 3, 5 and 8 blocks per row (tails of the 4-block groups)
  q32: [[1, 5, 32], [3, 7, 96], [2, 3, 160], [5, 9, 256], [1, 64, 256]],
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
    const expected: number[] = L[dtype];
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
    const budget = DENSE.includes(dtype)
      ? absDot(x, rows, decodeAll(w), outF, inF).map((v) => 2e-6 * v + 1e-5)
      : quantBudget(x, rows, decodeAll(w), outF, inF);
    const r = worstRatio(fast, expected, budget);
    assert(r <= 1, `${dtype}: ${r.toFixed(2)}× the budget against NumPy`);
  }
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
