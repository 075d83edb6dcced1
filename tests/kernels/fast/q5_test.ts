/**
 * Q5_0 weights: the scalar rule of `kernels/quant_ref.ts` and the
 * WebAssembly kernels against ggml itself (`tests/vectors/q5_dots.json`,
 * written by `tests/vectors/gen/q5_dots.py`: rows quantized by
 * `ggml_quantize_chunk`, activations by ggml's CPU Q8_0 quantizer, and
 * ggml's CPU `vec_dot` of each row with them), then the kernels against
 * `linearRef` on both variants, one thread and workers, odd block counts
 * (the leftover-block path), several x rows and several weights at once.
 */

import { assert, assertEquals } from "@std/assert";
import type { Tensor } from "../../../core/tensor.ts";
import { quantizeQ5_0 } from "../../../core/quants/legacy.ts";
import { kernelInfo } from "../../../kernels/fast/runtime.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import {
  activationBlocksOf,
  isFastDType,
  quantizeActivationsRef,
  quantizedDotRef,
} from "../../../kernels/quant_ref.ts";
import { bytesOf, checkQuantLinear, onEveryKernelVariant } from "./_helpers.ts";

const GGML = JSON.parse(
  await Deno.readTextFile(
    new URL("../../vectors/q5_dots.json", import.meta.url),
  ),
);
const G = GGML.types.Q5_0;
const X = Float32Array.from(GGML.x as number[]);
const W: Tensor = {
  name: "ggml_q5_0",
  dtype: "Q5_0",
  shape: [GGML.rows, GGML.cols],
  bytes: bytesOf(G.w),
};

/** ggml's Q8_0 activation blocks (f16 d, 32 i8 codes) as codes and scales. */
function ggmlActivations(): {
  block: number;
  codes: Int8Array;
  scales: Float32Array;
} {
  const raw = bytesOf(G.xq);
  const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const nb = GGML.cols / 32;
  const codes = new Int8Array(GGML.cols);
  const scales = new Float32Array(nb);
  for (let b = 0; b < nb; b++) {
    scales[b] = dv.getFloat16(34 * b, true);
    for (let j = 0; j < 32; j++) codes[32 * b + j] = dv.getInt8(34 * b + 2 + j);
  }
  return { block: 32, codes, scales };
}

/** ggml sums its block products in F32 (8 lanes), the rule in F64. */
function closeToGgml(got: number, want: number): boolean {
  return Math.abs(got - want) <= 1e-5 * Math.max(1, Math.abs(want));
}

Deno.test("Q5_0: the scalar rule equals ggml's CPU vec_dot, on ggml's own Q8_0 activation blocks", () => {
  assert(isFastDType("Q5_0"));
  assertEquals(activationBlocksOf("Q5_0"), "Q8_0");
  assertEquals(G.activations, "Q8_0");
  const xq = ggmlActivations();
  // our activation quantizer (llama.cpp's x86 rule) gives ggml's blocks
  const ours = quantizeActivationsRef(X, "Q8_0");
  assertEquals(ours.scales, xq.scales);
  assertEquals(ours.codes, xq.codes);
  for (let r = 0; r < GGML.rows; r++) {
    const got = quantizedDotRef("Q5_0", W.bytes, r, GGML.cols, xq, 0);
    assert(
      closeToGgml(got, G.dots[r]),
      `row ${r}: ${got} vs ggml ${G.dots[r]}`,
    );
  }
  // a mutated rule (fifth bit ignored) is far from ggml
  const flipped = W.bytes.slice();
  flipped[2] ^= 0xff;
  const off = quantizedDotRef("Q5_0", flipped, 0, GGML.cols, xq, 0);
  assert(!closeToGgml(off, G.dots[0]), "the test sees the fifth bits");
});

function weight(outF: number, inF: number, seed: number): Tensor {
  const v = Float32Array.from(
    { length: outF * inF },
    (_, i) => 0.3 * Math.sin(0.37 * i + seed) + 0.05 * Math.cos(3.1 * i),
  );
  return {
    name: `w${seed}`,
    dtype: "Q5_0",
    shape: [outF, inF],
    bytes: quantizeQ5_0(v),
  };
}

function checkAll(): void {
  // ggml's rows and activations: the kernels give ggml's dots
  const y = fastLinear(X, 1, W);
  for (let r = 0; r < GGML.rows; r++) {
    assert(
      closeToGgml(y[r], G.dots[r]),
      `${kernelInfo().backend} row ${r}: ${y[r]} vs ggml ${G.dots[r]}`,
    );
  }
  checkQuantLinear(
    "Q5_0",
    [
      [1, 7, 32],
      [1, 13, 96],
      [3, 9, 160],
      [1, 64, 576],
      [2, 33, 1536],
      [5, 33, 256],
    ],
    192,
    weight,
  );
}

Deno.test("Q5_0 kernels give ggml's dots and match linearRef (relaxed and plain SIMD, 1 thread and workers)", async () => {
  await onEveryKernelVariant(checkAll);
});
