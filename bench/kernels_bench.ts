/**
 * Deno.bench groups for the fast kernels, single-threaded (threads are
 * compared in `bench/compare.ts`). Each group's baseline is the scalar
 * reference or, for matvec, streaming the same bytes once.
 */

import { matmulTransposedRef } from "../kernels/linear.ts";
import {
  fastLinear,
  fastMatmulF32,
  linearRef,
} from "../kernels/fast/matmul.ts";
import {
  fastRmsNorm,
  fastRmsNormRef,
  fastSoftmax,
  fastSoftmaxRef,
  fastSwiglu,
  fastSwigluRef,
} from "../kernels/fast/ops.ts";
import {
  createKvCache,
  fastAttention,
  fastAttentionRef,
} from "../kernels/fast/attention.ts";
import { runSplit } from "../kernels/fast/_dispatch.ts";
import { getEngine } from "../kernels/wasm/_engine.ts";
import type { FastDType } from "../kernels/quant_ref.ts";
import { cosines, makeWeight } from "../tests/kernels/fast/_helpers.ts";

// ---- dense F32 matmul, 16 × 512 → 512
{
  const x = cosines(16 * 512), w = cosines(512 * 512, 1);
  fastMatmulF32(x, 16, 512, w, 512);
  Deno.bench({
    name: "JS reference",
    group: "f32 matmul 16×512→512",
    baseline: true,
    fn: () => void matmulTransposedRef(x, 16, 512, w, 512),
  });
  Deno.bench({
    name: "fast (wasm SIMD)",
    group: "f32 matmul 16×512→512",
    fn: () => void fastMatmulF32(x, 16, 512, w, 512),
  });
}

// ---- matvec 4096 × 4096 (decode), against streaming the bytes once
{
  const N = 4096;
  const e = getEngine()!;
  const x = cosines(N);
  const q8 = makeWeight("Q8_0", N, N);
  const p = e.alloc(q8.bytes.length), out = e.alloc(64);
  e.u8.set(q8.bytes, p);
  const chunks = Math.floor(q8.bytes.length / 64);
  Deno.bench({
    name: "stream Q8_0 bytes once",
    group: "matvec 4096×4096",
    baseline: true,
    fn: () => runSplit(e, "read_probe", 0, chunks, (a, b) => [p, out, a, b, 8]),
  });
  for (
    const dtype of [
      "Q8_0",
      "Q4_0",
      "Q4_K",
      "Q6_K",
      "F16",
      "BF16",
      "F32",
    ] as FastDType[]
  ) {
    const w = dtype === "Q8_0" ? q8 : makeWeight(dtype, N, N);
    fastLinear(x, 1, w);
    Deno.bench({
      name: dtype,
      group: "matvec 4096×4096",
      fn: () => void fastLinear(x, 1, w),
    });
  }
}

// ---- quantized prefill, 16 × 2048 → 2048: reference decodes rows to F32
{
  const x = cosines(16 * 2048);
  const w = makeWeight("Q4_K", 2048, 2048);
  fastLinear(x, 16, w);
  Deno.bench({
    name: "linearRef",
    group: "Q4_K 16×2048→2048",
    baseline: true,
    fn: () => void linearRef(x, 16, w),
  });
  Deno.bench({
    name: "fastLinear",
    group: "Q4_K 16×2048→2048",
    fn: () => void fastLinear(x, 16, w),
  });
}

// ---- element-wise, 8 rows of 4096
{
  const x = cosines(8 * 4096), w = cosines(4096, 2), u = cosines(8 * 4096, 3);
  Deno.bench({
    name: "softmax ref",
    group: "softmax 8×4096",
    baseline: true,
    fn: () => void fastSoftmaxRef(x, 4096),
  });
  Deno.bench({
    name: "softmax fast",
    group: "softmax 8×4096",
    fn: () => void fastSoftmax(x, 4096),
  });
  Deno.bench({
    name: "rmsnorm ref",
    group: "rmsnorm 8×4096",
    baseline: true,
    fn: () => void fastRmsNormRef(x, 4096, w, 1e-5),
  });
  Deno.bench({
    name: "rmsnorm fast",
    group: "rmsnorm 8×4096",
    fn: () => void fastRmsNorm(x, 4096, w, 1e-5),
  });
  Deno.bench({
    name: "swiglu ref",
    group: "swiglu 8×4096",
    baseline: true,
    fn: () => void fastSwigluRef(x, u),
  });
  Deno.bench({
    name: "swiglu fast",
    group: "swiglu 8×4096",
    fn: () => void fastSwiglu(x, u),
  });
}

// ---- attention decode step over 1024 cached positions (SmolLM-135M shape: 9 heads, 3 KV heads, 64)
{
  const [H, KV, HD, L] = [9, 3, 64, 1024];
  const fill = (fast: boolean) => {
    const c = createKvCache({
      kvHeads: KV,
      headDim: HD,
      capacity: L + 1,
      fast,
    });
    c.k.set(cosines(KV * (L + 1) * HD, 1));
    c.v.set(cosines(KV * (L + 1) * HD, 2));
    return c;
  };
  const cf = fill(true), cr = fill(false);
  const q = cosines(H * HD), k = cosines(KV * HD, 4), v = cosines(KV * HD, 5);
  Deno.bench({
    name: "ref",
    group: "attention decode @1024",
    baseline: true,
    fn: () => {
      cr.length = L - 1;
      fastAttentionRef(q, k, v, cr, { heads: H });
    },
  });
  Deno.bench({
    name: "fast",
    group: "attention decode @1024",
    fn: () => {
      cf.length = L - 1;
      fastAttention(q, k, v, cf, { heads: H });
    },
  });
}
