/**
 * The IQ4_NL WebAssembly kernels against their scalar reference
 * (`linearRef`, llama.cpp's rule in `kernels/_quant_ref_iq.ts`, itself checked
 * against ggml's vec_dot in `tests/core/iq_quants_test.ts`): both variants,
 * one thread and workers, odd block counts (the leftover-block path), rows 1
 * and > 1, several weights at once.
 */

import { assert, assertEquals } from "@std/assert";
import type { Tensor } from "../../../core/tensor.ts";
import { linear, linearMany, linearRef } from "../../../kernels/linear.ts";
import { quantizeIQ4_NL } from "../../../core/quants/iq_encode.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import {
  activationBlocksOf,
  quantizeActivationsRef,
} from "../../../kernels/quant_ref.ts";
import { cosines, decodeAll, worstRatio } from "./_helpers.ts";

function weight(outF: number, inF: number, seed: number): Tensor {
  const v = Float32Array.from(
    { length: outF * inF },
    (_, i) => 0.3 * Math.sin(0.37 * i + seed) + 0.05 * Math.cos(3.1 * i),
  );
  return {
    name: `w${seed}`,
    dtype: "IQ4_NL",
    shape: [outF, inF],
    bytes: quantizeIQ4_NL(v),
  };
}

/** F32 rounding of the kernels' block sums: 2e-6 of Σ|w·x_q| plus 1e-5. */
function budget(w: Tensor, x: Float32Array, rows: number): Float64Array {
  const [outF, inF] = w.shape;
  const wf = decodeAll(w);
  const q = quantizeActivationsRef(x, activationBlocksOf(w.dtype)!);
  const out = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let s = 0;
      for (let i = 0; i < inF; i++) {
        const xv = q.codes[r * inF + i] *
          q.scales[Math.floor((r * inF + i) / 32)];
        s += Math.abs(xv * wf[o * inF + i]);
      }
      out[r * outF + o] = 2e-6 * s + 1e-5;
    }
  }
  return out;
}

function checkAll(): void {
  for (
    const [rows, outF, inF] of [[1, 7, 32], [1, 13, 96], [3, 9, 160], [
      1,
      64,
      576,
    ], [5, 33, 256]]
  ) {
    const w = weight(outF, inF, rows + outF);
    const x = cosines(rows * inF);
    const bias = cosines(outF, 3, 0.5);
    const fast = fastLinear(x, rows, w, bias);
    const ref = linearRef(x, rows, w, bias);
    const r = worstRatio(fast, ref, budget(w, x, rows));
    assert(
      r <= 1,
      `IQ4_NL ${rows}×${inF} → ${outF}: ${r.toFixed(2)}× the budget`,
    );
    // linear() takes the same kernels
    assertEquals(linear(x, rows, w, bias), fast);
  }
  // several weights on one quantization of x
  const ws = [weight(11, 192, 1), weight(6, 192, 2), weight(9, 192, 3)];
  const x = cosines(2 * 192);
  const many = linearMany(x, 2, ws);
  ws.forEach((w, i) => {
    const r = worstRatio(many[i], linearRef(x, 2, w), budget(w, x, 2));
    assert(r <= 1, `linearMany weight ${i}: ${r.toFixed(2)}×`);
  });
}

Deno.test("IQ4_NL kernels match linearRef (relaxed and plain SIMD, 1 thread and workers)", async () => {
  assert(
    kernelInfo().backend.startsWith("wasm"),
    "WebAssembly SIMD backend expected",
  );
  try {
    checkAll();
    await configureKernels({ noRelaxedSimd: true });
    assertEquals(kernelInfo().backend, "wasm-simd");
    checkAll();
    await configureKernels({
      noRelaxedSimd: false,
      threads: 2,
      minParallelWork: 1,
    });
    checkAll();
  } finally {
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});
