/** Shared inputs and error measures for the fast-kernel tests. */

import { decodeBase64 } from "@std/encoding";
import { assert, assertEquals } from "@std/assert";
import type { Tensor } from "../../../core/tensor.ts";
import { appendKv, attendRef } from "../../../kernels/attention.ts";
import type {
  AttentionOptions,
  KvCache,
} from "../../../kernels/fast/attention.ts";
import type { RopeOptions } from "../../../kernels/fast/ops.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { linear, linearMany, linearRef } from "../../../kernels/linear.ts";
import { applyRopeRef, ropeFrequencies } from "../../../kernels/rope.ts";
import {
  activationBlocksOf,
  BLOCKS,
  dequantizeRowRef,
  type FastDType,
  quantizeActivationsRef,
  rowBytes,
} from "../../../kernels/quant_ref.ts";

/** The NumPy reference vectors (tests/vectors/gen/fast_kernels.py). */
// deno-lint-ignore no-explicit-any
export const VECTORS: any = JSON.parse(
  await Deno.readTextFile(
    new URL("../../vectors/fast_kernels.json", import.meta.url),
  ),
);

/** Bytes of a base64 string. */
export const bytesOf = (b64: string): Uint8Array => decodeBase64(b64);

/** Deterministic inputs `0.1 + amp·cos(i + shift)`. */
export function cosines(n: number, shift = 0, amp = 2): Float32Array {
  return Float32Array.from(
    { length: n },
    (_, i) => 0.1 + amp * Math.cos(i + shift),
  );
}

/** F16 bits of a number (round to nearest even, via the platform). */
export function f16Bits(v: number): number {
  return new Uint16Array(new Float16Array([v]).buffer)[0];
}

/**
 * A deterministic `[outF, inF]` weight in `dtype`: dense values
 * `0.5·sin(0.37·i)`, quantized blocks of pseudo-random codes (an LCG) with
 * small positive f16 scales.
 */
export function makeWeight(
  dtype: FastDType,
  outF: number,
  inF: number,
): Tensor {
  const n = outF * rowBytes(dtype, inF);
  const b = new Uint8Array(n);
  const setHalf = (o: number, v: number) => {
    const h = f16Bits(v);
    b[o] = h & 255;
    b[o + 1] = h >> 8;
  };
  const vals = Float32Array.from(
    { length: outF * inF },
    (_, i) => 0.5 * Math.sin(0.37 * i),
  );
  if (dtype === "F32") b.set(new Uint8Array(vals.buffer));
  else if (dtype === "F16") {
    for (let i = 0; i < vals.length; i++) setHalf(2 * i, vals[i]);
  } else if (dtype === "BF16") {
    const u = new Uint32Array(vals.buffer);
    for (let i = 0; i < vals.length; i++) {
      b[2 * i] = (u[i] >>> 16) & 255;
      b[2 * i + 1] = u[i] >>> 24;
    }
  } else {
    let s = 12345 + n;
    for (let i = 0; i < n; i++) {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      b[i] = s >>> 24;
    }
    const bb = BLOCKS[dtype].bytes;
    for (let o = 0, k = 0; o < n; o += bb, k++) {
      const v = 0.004 + 0.001 * (k % 5);
      if (dtype === "Q8_0" || dtype === "Q4_0" || dtype === "Q5_0") {
        setHalf(o, v * 4);
      }
      if (dtype === "Q4_K") {
        setHalf(o, v);
        setHalf(o + 2, v / 2);
      }
      if (dtype === "Q6_K") setHalf(o + 208, v / 4);
    }
  }
  return { name: `w_${dtype}`, dtype, shape: [outF, inF], bytes: b };
}

/** Dense decode of a whole weight (tests only). */
export function decodeAll(w: Tensor): Float32Array {
  const [outF, inF] = w.shape;
  const out = new Float32Array(outF * inF);
  for (let o = 0; o < outF; o++) {
    out.set(dequantizeRowRef(w.dtype, w.bytes, o, inF), o * inF);
  }
  return out;
}

/** Largest `|a − b| / scale[i]` over the elements. */
export function worstRatio(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  scale: ArrayLike<number>,
): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const r = Math.abs(a[i] - b[i]) / scale[i];
    if (!(r <= m)) m = r; // NaN propagates as a failure
  }
  return m;
}

/**
 * The F32 rounding budget of a quantized weight's kernel dots with `x`:
 * per output, 2e-6 of `Σ |w · x_q|` (x quantized by the weight's
 * activation rule) plus 1e-5.
 */
export function quantDotBudget(
  w: Tensor,
  x: Float32Array,
  rows: number,
): Float64Array {
  const [outF, inF] = w.shape;
  const wf = decodeAll(w);
  const q = quantizeActivationsRef(x, activationBlocksOf(w.dtype)!);
  const out = new Float64Array(rows * outF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      let s = 0;
      for (let i = 0; i < inF; i++) {
        const xv = q.codes[r * inF + i] *
          q.scales[Math.floor((r * inF + i) / q.block)];
        s += Math.abs(xv * wf[o * inF + i]);
      }
      out[r * outF + o] = 2e-6 * s + 1e-5;
    }
  }
  return out;
}

/**
 * A quantized weight's kernels against `linearRef` within
 * {@link quantDotBudget}: `fastLinear` (with a bias) for each
 * `[rows, outF, inF]` of `shapes`, `linear` equal to it, then
 * `linearMany` over three weights of `manyInF` columns sharing x.
 *
 * @param label Names the weight in messages.
 * @param shapes The `[rows, outF, inF]` to try.
 * @param manyInF Columns of the `linearMany` weights.
 * @param weight Makes a weight of `outF × inF` from a seed.
 */
export function checkQuantLinear(
  label: string,
  shapes: number[][],
  manyInF: number,
  weight: (outF: number, inF: number, seed: number) => Tensor,
): void {
  for (const [rows, outF, inF] of shapes) {
    const w = weight(outF, inF, rows + outF);
    const x = cosines(rows * inF);
    const bias = cosines(outF, 3, 0.5);
    const fast = fastLinear(x, rows, w, bias);
    const ref = linearRef(x, rows, w, bias);
    const r = worstRatio(fast, ref, quantDotBudget(w, x, rows));
    assert(
      r <= 1,
      `${label} ${rows}×${inF} → ${outF}: ${r.toFixed(2)}× the budget`,
    );
    // linear() takes the same kernels
    assertEquals(linear(x, rows, w, bias), fast);
  }
  const ws = [1, 2, 3].map((k) => weight(5 + 3 * k, manyInF, k));
  const x = cosines(2 * manyInF);
  const many = linearMany(x, 2, ws);
  ws.forEach((w, i) => {
    const r = worstRatio(many[i], linearRef(x, 2, w), quantDotBudget(w, x, 2));
    assert(r <= 1, `${label} linearMany weight ${i}: ${r.toFixed(2)}×`);
  });
}

/**
 * Runs `check` on the relaxed-SIMD kernels, on plain SIMD, then relaxed
 * with two worker threads; afterwards one thread again, workers shut down.
 */
export async function onEveryKernelVariant(check: () => void): Promise<void> {
  assert(
    kernelInfo().backend.startsWith("wasm"),
    "WebAssembly SIMD backend expected",
  );
  try {
    check();
    await configureKernels({ noRelaxedSimd: true });
    assertEquals(kernelInfo().backend, "wasm-simd");
    check();
    await configureKernels({
      noRelaxedSimd: false,
      threads: 2,
      minParallelWork: 1,
    });
    check();
  } finally {
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
}

/** Largest absolute difference. */
export function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = d;
  }
  return m;
}

/**
 * The RoPE reference for `fastRope`'s options: `applyRopeRef` given the
 * frequencies (angles, cos and sin in F64), on a copy.
 */
export function ropeRef(x: Float32Array, o: RopeOptions): Float32Array {
  const rot = o.rotaryDim ?? o.headDim;
  const freq = o.invFreq
    ? Float64Array.from(o.invFreq)
    : ropeFrequencies(rot, o.base ?? 10000);
  const out = x.slice();
  const rows = x.length / (o.heads * o.headDim);
  applyRopeRef(
    out,
    1,
    rows,
    o.heads,
    freq,
    o.style ?? "neox",
    o.startPos ?? 0,
    {
      headDim: o.headDim,
    },
  );
  return out;
}

/**
 * The attention reference for one `fastAttention` step: appends the keys
 * and values to `cache` (`appendKv`), then `attendRef` over it as one
 * sequence.
 */
export function attentionRef(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  cache: KvCache,
  opts: AttentionOptions,
): Float32Array {
  const seq = q.length / (opts.heads * cache.headDim);
  const view = {
    batch: 1,
    kvHeads: cache.kvHeads,
    headDim: cache.headDim,
    length: cache.length,
    capacity: cache.capacity,
    k: cache.k,
    v: cache.v,
  };
  appendKv(view, k, v, seq);
  assert(view.k === cache.k && view.v === cache.v, "the cache did not grow");
  cache.length = view.length;
  return attendRef(q, view, {
    heads: opts.heads,
    seq,
    causal: opts.causal,
    scale: opts.scale,
  });
}
