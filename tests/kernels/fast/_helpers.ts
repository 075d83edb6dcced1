/** Shared inputs and error measures for the fast-kernel tests. */

import { decodeBase64 } from "@std/encoding";
import { assert } from "@std/assert";
import type { Tensor } from "../../../core/tensor.ts";
import { appendKv, attendRef } from "../../../kernels/attention.ts";
import type {
  AttentionOptions,
  KvCache,
} from "../../../kernels/fast/attention.ts";
import type { RopeOptions } from "../../../kernels/fast/ops.ts";
import { applyRopeRef, ropeFrequencies } from "../../../kernels/rope.ts";
import {
  BLOCKS,
  dequantizeRowRef,
  type FastDType,
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
