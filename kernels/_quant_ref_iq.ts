/**
 * llama.cpp's dot-product rules for the non-linear and lattice weight types
 * (its CPU `ggml_vec_dot_*` in the x86 form: exact integer dots, one F32
 * scale product per block), the scalar references of `quant_ref.ts`
 * `quantizedDotRef` for them:
 *
 * - IQ4_NL, MXFP4 × Q8_0 blocks: per 32 values `d_w · d_x · Σ v(q)·x`,
 *   `v` the type's 16-value table (MXFP4: doubled E2M1, `d_w` half the
 *   E8M0 scale).
 * - IQ4_XS × Q8_K: per 256 values `f32(d_w · d_x) · Σ_j (ls_j − 32) · dot_j`.
 * - IQ3_S × Q8_K: `f32(d_w · d_x) · Σ_j (2·s_j + 1) · dot_j` over the
 *   signed grid magnitudes.
 * - IQ2_XS × Q8_K: the same with the IQ2_XS grid, times 1/8.
 *
 * Blocks are summed in F64 (the exact value of the rule), as the other
 * rules of `quant_ref.ts`.
 *
 * @module
 */

import {
  e8m0Half,
  IQ2XS_GRID,
  IQ3S_GRID,
  KSIGNS,
  KVALUES_FP4,
  KVALUES_IQ4NL,
} from "../core/quants/_iq_tables.ts";
import { halfToFloat } from "../core/quants/f16.ts";

/** The activation blocks of the types here; `undefined` for others. */
export function iqActivationBlocks(dtype: string): "Q8_0" | "Q8_K" | undefined {
  if (dtype === "IQ4_NL" || dtype === "MXFP4") return "Q8_0";
  if (dtype === "IQ4_XS" || dtype === "IQ3_S" || dtype === "IQ2_XS") {
    return "Q8_K";
  }
  return undefined;
}

interface Activations {
  codes: Int8Array;
  scales: Float32Array;
}

/**
 * The dot product of one weight row (`b`: its bytes, `cols` values) with
 * quantized activations from element `at` on.
 */
export function iqDotRef(
  dtype: string,
  b: Uint8Array,
  cols: number,
  xq: Activations,
  at: number,
): number {
  const q = xq.codes, f = Math.fround;
  const u16 = (i: number) => b[i] | (b[i + 1] << 8);
  let s = 0;
  switch (dtype) {
    case "IQ4_NL":
    case "MXFP4": {
      const bb = dtype === "IQ4_NL" ? 18 : 17;
      const table = dtype === "IQ4_NL" ? KVALUES_IQ4NL : KVALUES_FP4;
      const qs = dtype === "IQ4_NL" ? 2 : 1;
      for (let blk = 0; blk < cols / 32; blk++) {
        const o = blk * bb, x0 = at + blk * 32;
        let dot = 0;
        for (let j = 0; j < 16; j++) {
          const w = b[o + qs + j];
          dot += table[w & 15] * q[x0 + j] + table[w >> 4] * q[x0 + 16 + j];
        }
        const dw = dtype === "IQ4_NL" ? halfToFloat(u16(o)) : e8m0Half(b[o]);
        s += f(dw * xq.scales[x0 / 32]) * dot;
      }
      break;
    }
    case "IQ4_XS":
      for (let blk = 0; blk < cols / 256; blk++) {
        const o = blk * 136, x0 = at + blk * 256;
        const sh = u16(o + 2);
        let isum = 0;
        for (let ib = 0; ib < 8; ib++) {
          const ls = ((b[o + 4 + (ib >> 1)] >> (4 * (ib & 1))) & 15) |
            (((sh >> (2 * ib)) & 3) << 4);
          const qs = o + 8 + 16 * ib, xo = x0 + 32 * ib;
          let dot = 0;
          for (let j = 0; j < 16; j++) {
            dot += KVALUES_IQ4NL[b[qs + j] & 15] * q[xo + j] +
              KVALUES_IQ4NL[b[qs + j] >> 4] * q[xo + 16 + j];
          }
          isum += (ls - 32) * dot;
        }
        s += f(halfToFloat(u16(o)) * xq.scales[x0 / 256]) * isum;
      }
      break;
    case "IQ3_S":
      for (let blk = 0; blk < cols / 256; blk++) {
        const o = blk * 110, x0 = at + blk * 256;
        let isum = 0;
        for (let ib = 0; ib < 8; ib++) {
          const sc = b[o + 106 + (ib >> 1)];
          const ls = 2 * (ib & 1 ? sc >> 4 : sc & 15) + 1;
          const qh = b[o + 66 + ib];
          let dot = 0;
          for (let l = 0; l < 4; l++) {
            const signs = b[o + 74 + 4 * ib + l];
            const g1 =
              (b[o + 2 + 8 * ib + 2 * l] | ((qh << (8 - 2 * l)) & 256)) * 4;
            const g2 =
              (b[o + 3 + 8 * ib + 2 * l] | ((qh << (7 - 2 * l)) & 256)) * 4;
            const xo = x0 + 32 * ib + 8 * l;
            for (let j = 0; j < 4; j++) {
              const a = IQ3S_GRID[g1 + j] * q[xo + j];
              const c = IQ3S_GRID[g2 + j] * q[xo + 4 + j];
              dot += (signs >> j) & 1 ? -a : a;
              dot += (signs >> (j + 4)) & 1 ? -c : c;
            }
          }
          isum += ls * dot;
        }
        s += f(halfToFloat(u16(o)) * xq.scales[x0 / 256]) * isum;
      }
      break;
    case "IQ2_XS":
      for (let blk = 0; blk < cols / 256; blk++) {
        const o = blk * 74, x0 = at + blk * 256;
        let isum = 0;
        for (let ib = 0; ib < 8; ib++) {
          const sc = b[o + 66 + ib];
          for (let half = 0; half < 2; half++) {
            let dot = 0;
            for (let l = 2 * half; l < 2 * half + 2; l++) {
              const w = u16(o + 2 + 2 * (4 * ib + l));
              const g = (w & 511) * 8, signs = KSIGNS[w >> 9];
              const xo = x0 + 32 * ib + 8 * l;
              for (let j = 0; j < 8; j++) {
                const a = IQ2XS_GRID[g + j] * q[xo + j];
                dot += (signs >> j) & 1 ? -a : a;
              }
            }
            isum += (2 * (half ? sc >> 4 : sc & 15) + 1) * dot;
          }
        }
        s += f(halfToFloat(u16(o)) * xq.scales[x0 / 256]) * isum;
      }
      s *= 0.125;
      break;
  }
  return s;
}
