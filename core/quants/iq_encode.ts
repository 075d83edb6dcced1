/**
 * Encoders of IQ4_NL, IQ4_XS and MXFP4, byte-identical to ggml's:
 * `quantize_iq4_nl` / `quantize_iq4_xs` (what `llama-quantize` writes, with
 * or without an importance matrix), `quantize_row_iq4_nl_ref` (the
 * reference row quantizer, no scale search) and `quantize_row_mxfp4_ref`.
 * Every float operation is rounded to F32 in C's order (see `_common.ts`).
 *
 * An importance matrix is given as llama.cpp takes it: one weight per column
 * of a row (`n_per_row` values), applied to every row.
 *
 * @module
 */

import { checkValues, nearestInt } from "./_common.ts";
import { QUANT_BLOCKS } from "./blocks.ts";
import { f32ToHalfBits } from "./f16.ts";
import { e8m0Half, KVALUES_FP4, KVALUES_IQ4NL } from "./_iq_tables.ts";

const fround = Math.fround;
const GROUP_MAX_EPS = fround(1e-15);

/** ggml's `best_index_int8`: the nearest of the sorted `values` to `x`. */
function bestIndex(values: Int8Array, x: number): number {
  if (x <= values[0]) return 0;
  if (x >= values[15]) return 15;
  let ml = 0;
  let mu = 15;
  while (mu - ml > 1) {
    const mav = (ml + mu) >> 1;
    if (x < values[mav]) mu = mav;
    else ml = mav;
  }
  return fround(x - values[mu - 1]) < fround(values[mu] - x) ? mu - 1 : mu;
}

/** Scratch shared by the IQ4 encoders (one super-block at a time). */
interface Scratch {
  L: Uint8Array;
  weight: Float32Array;
  scales: Float32Array;
}

function scratch(): Scratch {
  return {
    L: new Uint8Array(256),
    weight: new Float32Array(32),
    scales: new Float32Array(8),
  };
}

/**
 * ggml's `quantize_row_iq4_nl_impl` for one super-block of `sbs` values
 * (32 for IQ4_NL, 256 for IQ4_XS) at `x[xo]`, written at `out[oo]`.
 */
function iq4Impl(
  sbs: number,
  x: Float32Array,
  xo: number,
  out: Uint8Array,
  oo: number,
  qw: Float32Array | undefined,
  qwo: number,
  ntry: number,
  s: Scratch,
): void {
  const values = KVALUES_IQ4NL;
  const { L, weight, scales } = s;
  let sigma2 = 0;
  for (let j = 0; j < sbs; j++) {
    sigma2 = fround(sigma2 + fround(x[xo + j] * x[xo + j]));
  }
  sigma2 = fround(sigma2 * fround(2 / sbs));
  const xs = sbs === 32; // IQ4_NL: d, qs; IQ4_XS: d, scales_h, scales_l[4], qs
  const q4 = oo + (xs ? 2 : 8);
  out.fill(0, q4, q4 + sbs / 2);
  let maxScale = 0;
  let amaxScale = 0;
  const nsub = sbs / 32;
  for (let ib = 0; ib < nsub; ib++) {
    const xb = xo + 32 * ib;
    if (qw) {
      const q = qwo + 32 * ib;
      for (let j = 0; j < 32; j++) {
        weight[j] = fround(
          qw[q + j] *
            fround(Math.sqrt(fround(sigma2 + fround(x[xb + j] * x[xb + j])))),
        );
      }
    } else {
      for (let j = 0; j < 32; j++) weight[j] = fround(x[xb + j] * x[xb + j]);
    }
    let amax = 0;
    let max = 0;
    for (let j = 0; j < 32; j++) {
      const ax = Math.abs(x[xb + j]);
      if (ax > amax) {
        amax = ax;
        max = x[xb + j];
      }
    }
    if (amax < GROUP_MAX_EPS) {
      scales[ib] = 0;
      continue;
    }
    let d = ntry > 0 ? fround(-max / values[0]) : fround(max / values[0]);
    let id = fround(1 / d);
    let sumqx = 0;
    let sumq2 = 0;
    for (let j = 0; j < 32; j++) {
      const l = bestIndex(values, fround(id * x[xb + j]));
      L[32 * ib + j] = l;
      const q = values[l];
      const wq = fround(weight[j] * q);
      sumqx = fround(sumqx + fround(wq * x[xb + j]));
      sumq2 = fround(sumq2 + fround(wq * q));
    }
    d = sumq2 > 0 ? fround(sumqx / sumq2) : 0;
    let best = fround(d * sumqx);
    for (let itry = -ntry; itry <= ntry; itry++) {
      id = fround((itry + values[0]) / max);
      sumqx = 0;
      sumq2 = 0;
      for (let j = 0; j < 32; j++) {
        const q = values[bestIndex(values, fround(id * x[xb + j]))];
        const wq = fround(weight[j] * q);
        sumqx = fround(sumqx + fround(wq * x[xb + j]));
        sumq2 = fround(sumq2 + fround(wq * q));
      }
      if (sumq2 > 0 && fround(sumqx * sumqx) > fround(best * sumq2)) {
        d = fround(sumqx / sumq2);
        best = fround(d * sumqx);
      }
    }
    scales[ib] = d;
    const absD = Math.abs(d);
    if (absD > amaxScale) {
      amaxScale = absD;
      maxScale = d;
    }
  }
  if (nsub > 1) {
    const d = fround(-maxScale / 32);
    const h = f32ToHalfBits(d);
    out[oo] = h & 0xff;
    out[oo + 1] = h >> 8;
    out[oo + 2] = 0;
    out[oo + 3] = 0;
    let scalesH = 0;
    const id = d ? fround(1 / d) : 0;
    for (let ib = 0; ib < nsub; ib++) {
      let l = nearestInt(fround(id * scales[ib]));
      l = Math.max(-32, Math.min(31, l));
      const dl = fround(d * l);
      const idl = dl ? fround(1 / dl) : 0;
      const xb = xo + 32 * ib;
      for (let j = 0; j < 32; j++) {
        L[32 * ib + j] = bestIndex(values, fround(idl * x[xb + j]));
      }
      l += 32;
      const lo = l & 0xf;
      if (ib % 2 === 0) out[oo + 4 + (ib >> 1)] = lo;
      else out[oo + 4 + (ib >> 1)] |= lo << 4;
      scalesH |= (l >> 4) << (2 * ib);
    }
    out[oo + 2] = scalesH & 0xff;
    out[oo + 3] = scalesH >> 8;
  } else {
    const h = f32ToHalfBits(scales[0]);
    out[oo] = h & 0xff;
    out[oo + 1] = h >> 8;
    if (ntry > 0) {
      const id = scales[0] ? fround(1 / scales[0]) : 0;
      for (let j = 0; j < 32; j++) {
        L[j] = bestIndex(values, fround(id * x[xo + j]));
      }
    }
  }
  for (let i = 0; i < sbs / 32; i++) {
    for (let j = 0; j < 16; j++) {
      out[q4 + 16 * i + j] = L[32 * i + j] | (L[32 * i + 16 + j] << 4);
    }
  }
}

function checkImatrix(
  name: string,
  x: Float32Array,
  nPerRow: number,
  imatrix: Float32Array | undefined,
  block: number,
): void {
  if (
    !Number.isSafeInteger(nPerRow) || nPerRow <= 0 || nPerRow % block !== 0 ||
    x.length % nPerRow !== 0
  ) {
    throw new RangeError(
      `Cannot encode ${x.length} values as ${name} in rows of ${nPerRow}: rows must be whole blocks of ${block} and the values whole rows`,
    );
  }
  if (imatrix && imatrix.length !== nPerRow) {
    throw new RangeError(
      `Cannot encode ${name} with an importance matrix of ${imatrix.length} values: a row has ${nPerRow}`,
    );
  }
}

/**
 * Encodes IQ4_NL as `llama-quantize` does (ggml's `quantize_iq4_nl`: a
 * search over 15 scales per block), optionally weighted by an importance
 * matrix.
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 32); defaults to all values.
 * @param imatrix One importance weight per column, or none.
 * @returns The blocks (18 bytes per 32 values).
 * @throws {RangeError} When the sizes do not fit.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ4_NL } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 64 }, (_, i) => Math.sin(i));
 * const imatrix = new Float32Array(32).fill(1); // one weight per column
 * const y = dequantizeGguf("IQ4_NL", quantizeIQ4_NL(x, 32, imatrix), 64);
 * assert(Math.abs(y[3] - x[3]) < 0.1);
 * ```
 */
export function quantizeIQ4_NL(
  x: Float32Array,
  nPerRow: number = x.length,
  imatrix?: Float32Array,
): Uint8Array {
  const nb = checkValues(QUANT_BLOCKS.IQ4_NL, x);
  if (x.length === 0) return new Uint8Array(0);
  checkImatrix("IQ4_NL", x, nPerRow, imatrix, 32);
  const out = new Uint8Array(nb * 18);
  const s = scratch();
  for (let i = 0; i < nb; i++) {
    iq4Impl(32, x, 32 * i, out, 18 * i, imatrix, (32 * i) % nPerRow, 7, s);
  }
  return out;
}

/**
 * Encodes IQ4_NL with ggml's reference row quantizer
 * (`quantize_row_iq4_nl_ref`: the weighted least-squares scale of the
 * initial rounding, no search). A block whose values are all below 1e-15 in
 * magnitude gets scale 0 and the codes of the block before it, as in C
 * (codes 0 for a first block).
 *
 * @param x The values (whole blocks of 32).
 * @returns The blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { quantizeIQ4_NLRef } from "@modelhost/modelhost/formats/gguf";
 * assert(quantizeIQ4_NLRef(new Float32Array(64)).length === 36);
 * ```
 */
export function quantizeIQ4_NLRef(x: Float32Array): Uint8Array {
  const nb = checkValues(QUANT_BLOCKS.IQ4_NL, x);
  const out = new Uint8Array(nb * 18);
  const s = scratch();
  for (let i = 0; i < nb; i++) {
    iq4Impl(32, x, 32 * i, out, 18 * i, undefined, 0, -1, s);
  }
  return out;
}

/**
 * Encodes IQ4_XS as `llama-quantize` and `quantize_row_iq4_xs_ref` do
 * (ggml's `quantize_iq4_xs`), optionally weighted by an importance matrix.
 *
 * @param x The values (whole rows).
 * @param nPerRow Values per row (a multiple of 256); defaults to all values.
 * @param imatrix One importance weight per column, or none.
 * @returns The super-blocks (136 bytes per 256 values).
 * @throws {RangeError} When the sizes do not fit.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeIQ4_XS } from "@modelhost/modelhost/formats/gguf";
 * const x = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i));
 * const y = dequantizeGguf("IQ4_XS", quantizeIQ4_XS(x), 256);
 * assert(Math.abs(y[3] - x[3]) < 0.1);
 * ```
 */
export function quantizeIQ4_XS(
  x: Float32Array,
  nPerRow: number = x.length,
  imatrix?: Float32Array,
): Uint8Array {
  const nb = checkValues(QUANT_BLOCKS.IQ4_XS, x);
  if (x.length === 0) return new Uint8Array(0);
  checkImatrix("IQ4_XS", x, nPerRow, imatrix, 256);
  const out = new Uint8Array(nb * 136);
  const s = scratch();
  for (let i = 0; i < nb; i++) {
    iq4Impl(256, x, 256 * i, out, 136 * i, imatrix, (256 * i) % nPerRow, 7, s);
  }
  return out;
}

/** ggml's `best_index_mxfp4`: the first E2M1 code nearest to `x` at scale `e`. */
function bestIndexFp4(x: number, e: number): number {
  let best = 0;
  let bestErr = Math.abs(fround(fround(KVALUES_FP4[0] * e) - x));
  for (let i = 1; i < 16; i++) {
    const err = Math.abs(fround(fround(KVALUES_FP4[i] * e) - x));
    if (err < bestErr) {
      best = i;
      bestErr = err;
    }
  }
  return best;
}

/**
 * Encodes MXFP4 as ggml's `quantize_row_mxfp4_ref` (what `llama-quantize`
 * writes; ggml ignores an importance matrix for this type): the shared
 * exponent `floor(log2(amax)) − 2`, then the nearest E2M1 value of each
 * element.
 *
 * @param x The values (whole blocks of 32).
 * @returns The blocks (17 bytes per 32 values).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dequantizeGguf, quantizeMXFP4 } from "@modelhost/modelhost/formats/gguf";
 * const x = new Float32Array(32).fill(1.5); x[0] = 6;
 * const y = dequantizeGguf("MXFP4", quantizeMXFP4(x), 32);
 * assert(y[0] === 6 && y[1] === 1.5);
 * ```
 */
export function quantizeMXFP4(x: Float32Array): Uint8Array {
  const nb = checkValues(QUANT_BLOCKS.MXFP4, x);
  const out = new Uint8Array(nb * 17);
  for (let i = 0; i < nb; i++) {
    const xo = 32 * i;
    let amax = 0;
    for (let j = 0; j < 32; j++) {
      const a = Math.abs(x[xo + j]);
      if (amax < a) amax = a;
    }
    // floorf(log2f(amax)) − 2 + 127 in float, converted to uint8_t as x86 does
    const e = amax > 0 ? (Math.floor(fround(Math.log2(amax))) + 125) & 0xff : 0;
    const d = e8m0Half(e);
    const o = 17 * i;
    out[o] = e;
    for (let j = 0; j < 16; j++) {
      out[o + 1 + j] = bestIndexFp4(x[xo + j], d) |
        (bestIndexFp4(x[xo + 16 + j], d) << 4);
    }
  }
  return out;
}
