/**
 * The non-linear 4-bit weight formats IQ4_NL, MXFP4 and IQ4_XS for the
 * quantized kernels (`_kernels_quant.ts`). IQ4_NL: 18-byte blocks of an f16 scale and
 * 16 bytes of nibbles (low nibbles elements 0..15, high 16..31), each nibble
 * an index into ggml's 16 levels `kvalues_iq4nl` (−127 … 113). MXFP4:
 * 17-byte blocks of an E8M0 exponent and the same nibble layout into the
 * doubled E2M1 values (−12 … 12), scale `2^(e−128)`. A swizzle turns the
 * nibbles into the signed levels, which are then dotted with the Q8_0
 * activation codes as Q8_0 weights are (llama.cpp's
 * `ggml_vec_dot_iq4_nl_q8_0` / `_mxfp4_q8_0`: exact integer dots,
 * `d_w · d_x` per block).
 *
 * @module
 */

import {
  type Code,
  f32,
  f32x4,
  get,
  i16x8,
  i32,
  i8x16,
  type Local,
  select,
  set,
  tee,
  v128,
} from "./_asm.ts";
import { c, f16ToF32NoSubnormal, i8x16c } from "./_kernels_util.ts";
import {
  addBlock1,
  addBlocks4,
  type Dot,
  dotI16,
  hsum4i,
  hsumI,
  loadScales,
  metaPtr,
  type QuantFormat,
  widenEvenOdd,
} from "./_kernels_quant_util.ts";
import { q8SplitDot } from "./_kernels_quant_q8_q4.ts";
import { KVALUES_FP4, KVALUES_IQ4NL } from "../../core/quants/_iq_tables.ts";

/** A 16-level table as a byte vector (pooled per function). */
function levels(table: Int8Array): Code {
  return v128.pooled(new Uint8Array(table.buffer.slice(0)));
}

/** The signed levels of the 16 code bytes held in `raw`: elements 0..15, 16..31. */
function iq4Levels(raw: Local, table = KVALUES_IQ4NL): [Code, Code] {
  return [
    i8x16.swizzle(levels(table), v128.and(get(raw), i8x16c(0x0f))),
    i8x16.swizzle(
      levels(table),
      v128.and(i16x8.shr_u(get(raw), c(4)), i8x16c(0x0f)),
    ),
  ];
}

/**
 * i32 lane sums of `Σ v·x` for block `j` of a group (levels `codes`) into
 * `dst`, with the x codes as Q8_0 weights read them: relaxed SIMD splits x
 * (`q8SplitDot`; |v| ≤ 127 keeps its i16 pair sums exact), plain SIMD
 * widens both to i16.
 */
function signedBlock(
  d: Dot,
  codes: [Code, Code],
  j: number,
  dst: Local,
): Code[] {
  if (d.ctx.relaxed) return q8SplitDot(d, codes, 64 * j, dst);
  return [
    set(d.v[0], codes[0]),
    set(d.v[1], codes[1]),
    set(
      dst,
      dotI16(
        [...widenEvenOdd(get(d.v[0])), ...widenEvenOdd(get(d.v[1]))],
        get(d.x16),
        64 * j,
      ),
    ),
  ];
}

/** IQ4_NL as stored. Value `d · kvalues_iq4nl[q]`. */
export const IQ4_NL: QuantFormat = {
  name: "iq4_nl",
  elems: 32,
  bytes: 18,
  act: "q8_0",
  group: 4,
  reads: () => ["x16"],
  main: (d) => {
    const out: Code[] = loadScales(d, 18);
    for (let j = 0; j < 4; j++) {
      out.push(
        set(d.v[2], v128.load(get(d.wb), 18 * j + 2)),
        ...signedBlock(d, iq4Levels(d.v[2]), j, d.p[j]),
      );
    }
    out.push(
      hsum4i(d.p.slice(0, 4).map(get), d.t),
      addBlocks4(d, get(d.t[0])),
    );
    return out;
  },
  single: (d) => [
    set(d.v[2], v128.load(get(d.wb), 2)),
    ...signedBlock(d, iq4Levels(d.v[2]), 0, d.p[0]),
    addBlock1(d, hsumI(get(d.p[0]), d.t[0])),
  ],
};

/**
 * Half the E8M0 scale of the MXFP4 block at `wb + off`, as f32 (ggml's
 * `ggml_e8m0_to_fp32_half`: `(e − 1) << 23`, subnormal for e < 2).
 */
function e8m0Half(d: Dot, off: number): Code {
  const e = d.n[2];
  return f32.reinterpret_i32(
    select(
      i32.shl(i32.sub(tee(e, i32.load8_u(get(d.wb), off)), c(1)), c(23)),
      i32.shl(c(0x00200000), get(e)),
      i32.gt_u(get(e), c(1)),
    ),
  );
}

/** MXFP4 as stored. Value `2^(e−128) · kvalues_mxfp4[q]`. */
export const MXFP4: QuantFormat = {
  name: "mxfp4",
  elems: 32,
  bytes: 17,
  act: "q8_0",
  group: 4,
  reads: () => ["x16"],
  main: (d) => {
    const out: Code[] = [];
    for (let j = 0; j < 4; j++) {
      out.push(
        set(d.v[2], v128.load(get(d.wb), 17 * j + 1)),
        ...signedBlock(d, iq4Levels(d.v[2], KVALUES_FP4), j, d.p[j]),
      );
    }
    let scales = f32x4.splat(e8m0Half(d, 0));
    for (let j = 1; j < 4; j++) {
      scales = f32x4.replace_lane(scales, j, e8m0Half(d, 17 * j));
    }
    out.push(
      hsum4i(d.p.slice(0, 4).map(get), d.t),
      set(
        d.acc,
        d.ctx.madd(
          f32x4.convert_i32x4_s(get(d.t[0])),
          f32x4.mul(scales, v128.load(metaPtr(d, 0))),
          get(d.acc),
        ),
      ),
    );
    return out;
  },
  single: (d) => [
    set(d.v[2], v128.load(get(d.wb), 1)),
    ...signedBlock(d, iq4Levels(d.v[2], KVALUES_FP4), 0, d.p[0]),
    addBlock1(d, hsumI(get(d.p[0]), d.t[0]), e8m0Half(d, 0)),
  ],
};

/**
 * IQ4_XS super-block (136 bytes): f16 d, u16 `scales_h` (2 high bits per
 * sub-block), 4 bytes `scales_l` (a nibble per sub-block), then 8 × 16
 * bytes of IQ4_NL nibbles. With Q8_K activations it contributes, as
 * llama.cpp's x86 `ggml_vec_dot_iq4_xs_q8_K`,
 * `f32(d · d_x) · Σ_j (ls_j − 32) · Σ v·x8` with the sums in integers.
 */
export const IQ4_XS: QuantFormat = {
  name: "iq4_xs",
  elems: 256,
  bytes: 136,
  act: "q8_k",
  group: 1,
  reads: () => ["x16"],
  main: (d) => {
    const isum = d.n[2];
    const out: Code[] = [set(isum, c(0))];
    for (let ib = 0; ib < 8; ib++) {
      const low = i32.load8_u(get(d.wb), 4 + (ib >> 1));
      const ls = i32.or(
        ib & 1 ? i32.shr_u(low, c(4)) : i32.and(low, c(15)),
        i32.shl(
          i32.and(i32.shr_u(i32.load16_u(get(d.wb), 2), c(2 * ib)), c(3)),
          c(4),
        ),
      );
      out.push(
        set(d.v[2], v128.load(get(d.wb), 8 + 16 * ib)),
        ...signedBlock(d, iq4Levels(d.v[2]), ib, d.p[0]),
        set(
          isum,
          i32.add(
            get(isum),
            i32.mul(hsumI(get(d.p[0]), d.t[0]), i32.sub(ls, c(32))),
          ),
        ),
      );
    }
    out.push(
      set(
        d.accs,
        f32.add(
          get(d.accs),
          f32.mul(
            f32.convert_i32_s(get(isum)),
            f32.mul(
              f16ToF32NoSubnormal(() => i32.load16_u(get(d.wb))),
              f32.load(metaPtr(d, 0)),
            ),
          ),
        ),
      ),
    );
    return out;
  },
};
