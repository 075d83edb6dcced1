/**
 * The IQ4_NL, MXFP4, IQ4_XS, IQ3_S and IQ2_XS WebAssembly kernels against
 * their scalar reference
 * (`linearRef`, llama.cpp's rule in `kernels/_quant_ref_iq.ts`, itself checked
 * against ggml's vec_dot in `tests/core/iq_quants_test.ts`): both variants,
 * one thread and workers, odd block counts (the leftover-block path), rows 1
 * and > 1, several weights at once. IQ3_S and IQ2_XS weights are seeded
 * random blocks (every byte pattern is a valid block) with small f16
 * scales, so every grid entry, sign code and sub-block scale occurs.
 */

import { assert } from "@std/assert";
import type { Tensor } from "../../../core/tensor.ts";
import { linearRef } from "../../../kernels/linear.ts";
import {
  quantizeIQ4_NL,
  quantizeIQ4_XS,
  quantizeMXFP4,
} from "../../../core/quants/iq_encode.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import { BLOCKS } from "../../../kernels/quant_ref.ts";
import {
  checkQuantLinear,
  cosines,
  onEveryKernelVariant,
  quantDotBudget,
  worstRatio,
} from "./_helpers.ts";

type Kind = "IQ4_NL" | "MXFP4" | "IQ4_XS" | "IQ3_S" | "IQ2_XS";

/** Seeded random IQ3_S / IQ2_XS blocks with f16 scales in [2^-8, 2^-6). */
function randomBlocks(blocks: number, bytes: number, seed: number): Uint8Array {
  const out = new Uint8Array(blocks * bytes);
  let s = seed >>> 0;
  for (let i = 0; i < out.length; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    out[i] = s >>> 24;
  }
  for (let b = 0; b < blocks; b++) {
    // exponent field 7..8 (2^-8 .. 2^-7 range), any mantissa, either sign
    out[b * bytes + 1] = (out[b * bytes + 1] & 0x83) | 0x1c;
  }
  return out;
}

function weight(
  outF: number,
  inF: number,
  seed: number,
  dtype: Kind = "IQ4_NL",
): Tensor {
  const v = Float32Array.from(
    { length: outF * inF },
    (_, i) => 0.3 * Math.sin(0.37 * i + seed) + 0.05 * Math.cos(3.1 * i),
  );
  if (dtype === "IQ3_S" || dtype === "IQ2_XS") {
    const bytes = dtype === "IQ3_S" ? 110 : 74;
    return {
      name: `w${seed}`,
      dtype,
      shape: [outF, inF],
      bytes: randomBlocks(outF * inF / 256, bytes, seed),
    };
  }
  return {
    name: `w${seed}`,
    dtype,
    shape: [outF, inF],
    bytes: dtype === "IQ4_NL"
      ? quantizeIQ4_NL(v)
      : dtype === "MXFP4"
      ? quantizeMXFP4(v)
      : quantizeIQ4_XS(v),
  };
}

function checkAll(dtype: Kind): void {
  const shapes = dtype.startsWith("IQ4_X") || dtype.startsWith("IQ3") ||
      dtype.startsWith("IQ2")
    ? [[1, 7, 256], [3, 9, 512], [1, 64, 768], [5, 33, 256], [2, 5, 1280]]
    : [[1, 7, 32], [1, 13, 96], [3, 9, 160], [1, 64, 576], [5, 33, 256]];
  if (dtype === "MXFP4") {
    // raw blocks: every nibble, exponents 0 and 1 (subnormal scales), 110..129
    const bytes = new Uint8Array(6 * 17 * 5);
    let seed = 7;
    for (let i = 0; i < bytes.length; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      const blk = i / 17;
      bytes[i] = i % 17 !== 0 ? seed >>> 24 : blk < 2 ? blk : 110 + (blk % 20);
    }
    const w: Tensor = { name: "raw", dtype, shape: [6, 160], bytes };
    const x = cosines(2 * 160);
    const r = worstRatio(
      fastLinear(x, 2, w),
      linearRef(x, 2, w),
      quantDotBudget(w, x, 2),
    );
    assert(r <= 1, `MXFP4 raw blocks: ${r.toFixed(2)}×`);
  }
  // several weights on one quantization of x
  const manyInF = BLOCKS[dtype].elems === 256 ? 512 : 192;
  checkQuantLinear(
    dtype,
    shapes,
    manyInF,
    (outF, inF, seed) => weight(outF, inF, seed, dtype),
  );
}

Deno.test("IQ4_NL, MXFP4, IQ4_XS, IQ3_S and IQ2_XS kernels match linearRef (relaxed and plain SIMD, 1 thread and workers)", async () => {
  await onEveryKernelVariant(() =>
    ["IQ4_NL", "MXFP4", "IQ4_XS", "IQ3_S", "IQ2_XS"].forEach((t) =>
      checkAll(t as Kind)
    )
  );
});
