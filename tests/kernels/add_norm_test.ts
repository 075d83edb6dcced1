/**
 * addLayerNorm (kernels/add_norm.ts): the WebAssembly kernel, on one thread
 * and split over two, against the sum followed by `layerNorm` (F64 sums,
 * the reference the layer tests check against PyTorch), and its errors.
 */

import { assert, assertThrows } from "@std/assert";
import { addLayerNorm } from "../../kernels/add_norm.ts";
import { layerNorm } from "../../kernels/norms.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../../kernels/fast/runtime.ts";
import { createRng } from "../../core/rng.ts";

function uniform(n: number, seed: number, scale = 1): Float32Array {
  const rng = createRng(seed);
  return Float32Array.from(
    { length: n },
    () => (rng.u32() / 2 ** 31 - 1) * scale,
  );
}

Deno.test("addLayerNorm equals layerNorm of the sum (1 and 2 threads, with and without bias, odd sizes)", async () => {
  try {
    for (const threads of [1, 2]) {
      await configureKernels({ threads, minParallelWork: 1 });
      for (const [rows, cols] of [[37, 384], [5, 20], [3, 6]]) {
        const a = uniform(rows * cols, 1, 3), b = uniform(rows * cols, 2);
        // a row offset far from zero, where a one-pass variance would fail
        for (let c = 0; c < cols; c++) a[c] += 1000;
        const w = uniform(cols, 3), bias = uniform(cols, 4);
        for (const bb of [bias, undefined]) {
          const s = Float32Array.from(a, (v, i) => v + b[i]);
          const want = layerNorm(s, rows, cols, w, bb, 1e-12);
          // twice: the second call runs with the workers started by the first
          addLayerNorm(a, b, rows, cols, w, bb, 1e-12);
          const got = addLayerNorm(a, b, rows, cols, w, bb, 1e-12);
          // row 0 (offset 1000: F32 sums lose 2^-24 of it) and the others
          let worst = 0, first = 0;
          for (let i = 0; i < got.length; i++) {
            const d = Math.abs(got[i] - want[i]);
            if (i < cols) first = Math.max(first, d);
            else worst = Math.max(worst, d);
          }
          assert(
            first <= 2e-4 && worst <= 2e-6,
            `${rows}×${cols}, ${threads} thread(s): max |diff| ${first} (row 0), ${worst}`,
          );
          if (rows === 37 && bb) {
            console.log(
              `${rows}×${cols}, ${kernelInfo().threads} thread(s), ${kernelInfo().backend}: max |diff| ${
                worst.toExponential(2)
              }`,
            );
          }
        }
      }
    }
  } finally {
    await shutdownKernels();
  }
});

Deno.test("addLayerNorm refuses mismatched sizes with a RangeError", () => {
  const x = new Float32Array(8), w = new Float32Array(4);
  assertThrows(
    () => addLayerNorm(x, new Float32Array(4), 2, 4, w, undefined, 1e-5),
    RangeError,
    "8 and 4 values for 2×4",
  );
  assertThrows(
    () => addLayerNorm(x, x, 2, 4, new Float32Array(3), undefined, 1e-5),
    RangeError,
    "weight 3",
  );
});
