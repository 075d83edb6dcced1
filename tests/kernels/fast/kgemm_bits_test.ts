// Q4_K, Q6_K and Q5_0 weights times several x rows run as the integer GEMMs
// of kernels/wasm/_kernels_quant_kgemm.ts (relaxed module): every row must get
// exactly the bits it gets alone from the dot kernels (which the vectors of
// tests/vectors check against ggml), on one and two threads, for widths of
// 1 to 6 super-blocks (Q5_0: 1 to 18 blocks), output counts that leave partial panels and row
// counts that leave partial x panels; and the values must stay within the
// F32 rounding budget of the reference decode (`linearRef`).

import { assert, assertEquals } from "@std/assert";
import { state } from "../../../kernels/fast/_dispatch.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { linearRef } from "../../../kernels/linear.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";
import { cosines, makeWeight, quantDotBudget, worstRatio } from "./_helpers.ts";

const hasGemm = (): boolean => !!getEngine()?.fn.q4_k_kgemm;

function check(threads: number): void {
  const saved = { min: state.gemmMinRows, k: state.kGemm };
  try {
    for (const dtype of ["Q4_K", "Q6_K", "Q5_0"] as const) {
      // Q5_0: 1 to 9 blocks of 32 (groups of 4, 0 to 3 left over) and 18
      const widths = dtype === "Q5_0"
        ? [1, 2, 3, 4, 5, 6, 7, 8, 9, 18].map((b) => 32 * b)
        : [1, 2, 3, 6].map((b) => 256 * b);
      for (const inF of widths) {
        const nsb = inF / 32;
        for (const outF of [37, 8, 3]) {
          const w = makeWeight(dtype, outF, inF);
          for (
            const [amp, rows] of [[2, 5], [1e6, 7], [0.5, 13], [3, 2], [1, 4]]
          ) {
            const x = cosines(rows * inF, nsb, amp);
            state.gemmMinRows = 2;
            state.kGemm = true;
            const all = fastLinear(x, rows, w);
            state.gemmMinRows = Infinity;
            for (let r = 0; r < rows; r++) {
              const one = fastLinear(x.subarray(r * inF, (r + 1) * inF), 1, w);
              assertEquals(
                all.subarray(r * outF, (r + 1) * outF),
                one,
                `${dtype}, ${inF} inputs, ${outF} outputs, row ${r} of ${rows}, ${threads} thread(s)`,
              );
            }
            const ref = linearRef(x, rows, w);
            const worst = worstRatio(all, ref, quantDotBudget(w, x, rows));
            assert(worst <= 1, `${dtype} ${inF}: ${worst} of the budget`);
          }
        }
      }
    }
  } finally {
    state.gemmMinRows = saved.min;
    state.kGemm = saved.k;
  }
}

Deno.test("Q4_K / Q6_K / Q5_0 GEMM gives each row the dot kernels' bits, one thread", () => {
  if (!hasGemm()) {
    console.log(
      `  note: engine ${kernelInfo().backend} has no K-quant GEMM (relaxed SIMD only); skipped`,
    );
    return;
  }
  check(1);
});

Deno.test("Q4_K / Q6_K / Q5_0 GEMM, 300 rows (two chunks), matches the dot kernels", () => {
  if (!hasGemm()) return;
  const saved = state.gemmMinRows;
  try {
    for (const dtype of ["Q4_K", "Q6_K", "Q5_0"] as const) {
      const inF = 512, rows = 300;
      const w = makeWeight(dtype, 21, inF);
      const x = cosines(rows * inF, 7, 3);
      state.gemmMinRows = 2;
      const all = fastLinear(x, rows, w);
      state.gemmMinRows = Infinity;
      assertEquals(all, fastLinear(x, rows, w), dtype);
    }
  } finally {
    state.gemmMinRows = saved;
  }
});

Deno.test("Q4_K / Q6_K / Q5_0 GEMM, two threads sharing the panels", async () => {
  if (!hasGemm()) return;
  await configureKernels({ threads: 2, minParallelWork: 1 });
  try {
    check(2);
  } finally {
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});

Deno.test("Q4_K / Q6_K GEMM with subnormal f16 super-block scales (either sign) gives the dot kernels' bits", () => {
  if (!hasGemm()) return;
  const saved = state.gemmMinRows;
  try {
    for (const dtype of ["Q4_K", "Q6_K"] as const) {
      const inF = 768, outF = 19, rows = 6;
      const w = makeWeight(dtype, outF, inF);
      const b = w.bytes;
      const bb = dtype === "Q4_K" ? 144 : 210;
      for (let o = 0, k = 0; o < b.length; o += bb, k++) {
        // d (and Q4_K's dmin): zero exponent, 10-bit mantissa kept
        const at = dtype === "Q4_K" ? o : o + 208;
        b[at + 1] = (b[at + 1] & 0x03) | (k % 2 ? 0x80 : 0);
        if (dtype === "Q4_K") b[o + 3] &= 0x03;
      }
      const x = cosines(rows * inF, 5, 4);
      state.gemmMinRows = 2;
      const all = fastLinear(x, rows, w);
      state.gemmMinRows = Infinity;
      assertEquals(all, fastLinear(x, rows, w), dtype);
      const ref = linearRef(x, rows, w);
      const worst = worstRatio(all, ref, quantDotBudget(w, x, rows));
      assert(worst <= 1, `${dtype}: ${worst} of the budget`);
    }
  } finally {
    state.gemmMinRows = saved;
  }
});
