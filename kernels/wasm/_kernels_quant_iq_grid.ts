/**
 * The lattice weight formats IQ3_S and IQ2_XS for the quantized kernels
 * (`_kernels_quant.ts`), with Q8_K activations. Their values are grid
 * entries (magnitudes) with separate sign bits; the grids and the sign
 * masks lie in kernel memory at fixed addresses (`_kernels_tables.ts`), so
 * an entry is one load with the table as its constant offset. Each
 * 16-value half of a 32-value sub-block becomes one vector of signed bytes
 * (`(g ⊕ m) − m` with the 0/−1 sign mask `m`), dotted with the x codes as
 * IQ4_XS's levels are; the sub-block scales multiply the i32 lane sums, so
 * a super-block's sum stays an exact integer and takes one F32
 * multiply-add, as llama.cpp's x86 `ggml_vec_dot_iq3_s_q8_K` /
 * `ggml_vec_dot_iq2_xs_q8_K` (IQ2_XS with its final 1/8 folded into the
 * scale, a power of two).
 *
 * IQ3_S super-block (110 bytes): f16 d, 64 bytes of grid indices' low
 * bits, 8 bytes of their ninth bits, 32 bytes of signs (one bit per value),
 * 4 bytes of 4-bit scales (`2s + 1`). IQ2_XS (74 bytes): f16 d, 32 u16
 * (9-bit grid index of 8 values, 7-bit sign code into `ksigns_iq2xs`),
 * 8 bytes of two 4-bit scales per sub-block (one per 16 values).
 *
 * @module
 */

import {
  type Code,
  f32,
  get,
  i32,
  i32x4,
  i8x16,
  type Local,
  set,
  tee,
  v128,
} from "./_asm.ts";
import { c, f16ToF32NoSubnormal, zero } from "./_kernels_util.ts";
import {
  type Dot,
  dotI16,
  hsumI,
  metaPtr,
  type QuantFormat,
  widenEvenOdd,
} from "./_kernels_quant_util.ts";
import { TABLE } from "./_kernels_tables.ts";

/** The low 8 bytes of `a`, then the low 8 of `b`. */
function low2(a: Code, b: Code): Code {
  return i8x16.shuffle(a, b, [
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    16,
    17,
    18,
    19,
    20,
    21,
    22,
    23,
  ]);
}

/** The low 4 bytes of `a`, then of `b` (in the low 8 bytes). */
function low1(a: Code, b: Code): Code {
  return i8x16.shuffle(a, b, [
    0,
    1,
    2,
    3,
    16,
    17,
    18,
    19,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
  ]);
}

/** The 8 bytes of the table entry `i` (times 8 bytes) from `table`. */
function entry8(i: Code, table: number): Code {
  return v128.load64_zero(i32.shl(i, c(3)), table);
}

/** `magnitudes` with the sign mask `m` (in local `ml`) applied: `(g ⊕ m) − m`. */
function signed(g: Code, m: Code, ml: Local): Code {
  return i8x16.sub(v128.xor(g, tee(ml, m)), get(ml));
}

/**
 * i32 lane sums of the dot products of the two 16-value halves `codes` of
 * sub-block `j` with the x codes (as the 32-value blocks of Q8_0 weights
 * are dotted: relaxed SIMD with x split in two 7-bit parts, plain SIMD
 * widened to i16), one sum vector per half, into `dst`.
 */
function halfDots(
  d: Dot,
  codes: [Code, Code],
  j: number,
  dst: [Local, Local],
): Code[] {
  const out: Code[] = [set(d.v[0], codes[0]), set(d.v[1], codes[1])];
  const xo = 64 * j;
  for (let h = 0; h < 2; h++) {
    if (d.ctx.relaxed) {
      const dot = i32x4.relaxed_dot_i8x16_i7x16_add_s;
      out.push(
        set(
          dst[h],
          i32x4.sub(
            dot(get(d.v[h]), v128.load(get(d.x16), xo + 16 * h), zero),
            i32x4.shl(
              dot(get(d.v[h]), v128.load(get(d.x16), xo + 32 + 16 * h), zero),
              c(7),
            ),
          ),
        ),
      );
    } else {
      out.push(
        set(dst[h], dotI16(widenEvenOdd(get(d.v[h])), get(d.x16), xo + 32 * h)),
      );
    }
  }
  return out;
}

/** `accs += f32(Σ lanes of isum) · (d_w · d_x · k)`. */
function addSuper(d: Dot, isum: Local, k = 1): Code {
  let scale = f32.mul(
    f16ToF32NoSubnormal(() => i32.load16_u(get(d.wb))),
    f32.load(metaPtr(d, 0)),
  );
  if (k !== 1) scale = f32.mul(scale, f32.const(k));
  return set(
    d.accs,
    f32.add(
      get(d.accs),
      f32.mul(f32.convert_i32_s(hsumI(get(isum), d.t[0])), scale),
    ),
  );
}

/** IQ3_S × Q8_K: `f32(d · d_x) · Σ_j (2 s_j + 1) · Σ v·x8` per super-block. */
export const IQ3_S: QuantFormat = {
  name: "iq3_s",
  elems: 256,
  bytes: 110,
  act: "q8_k",
  group: 1,
  reads: () => ["x16"],
  main: (d) => {
    const isum = d.p[3];
    const out: Code[] = [set(isum, zero)];
    // grid entry k (0..7) of sub-block ib: 9-bit index, 4 magnitudes
    const grid = (ib: number, k: number): Code =>
      v128.load32_zero(
        i32.shl(
          i32.or(
            i32.load8_u(get(d.wb), 2 + 8 * ib + k),
            i32.and(i32.shl(i32.load8_u(get(d.wb), 66 + ib), c(8 - k)), c(256)),
          ),
          c(2),
        ),
        TABLE.IQ3S_GRID,
      );
    const mask = (ib: number, l: number): Code =>
      entry8(i32.load8_u(get(d.wb), 74 + 4 * ib + l), TABLE.SIGN_MASKS);
    for (let ib = 0; ib < 8; ib++) {
      const half = (h: number): Code =>
        signed(
          low2(
            low1(grid(ib, 4 * h), grid(ib, 4 * h + 1)),
            low1(grid(ib, 4 * h + 2), grid(ib, 4 * h + 3)),
          ),
          low2(mask(ib, 2 * h), mask(ib, 2 * h + 1)),
          d.v[2 + h],
        );
      const sc = i32.load8_u(get(d.wb), 106 + (ib >> 1));
      const s = ib & 1 ? i32.shr_u(sc, c(4)) : i32.and(sc, c(15));
      out.push(
        ...halfDots(d, [half(0), half(1)], ib, [d.p[0], d.p[1]]),
        set(
          isum,
          i32x4.add(
            get(isum),
            i32x4.mul(
              i32x4.add(get(d.p[0]), get(d.p[1])),
              i32x4.splat(i32.add(i32.shl(s, c(1)), c(1))),
            ),
          ),
        ),
      );
    }
    out.push(addSuper(d, isum));
    return out;
  },
};

/** IQ2_XS × Q8_K: `f32(d · d_x / 8) · Σ_j (2 s_j + 1) · Σ v·x8` per super-block. */
export const IQ2_XS: QuantFormat = {
  name: "iq2_xs",
  elems: 256,
  bytes: 74,
  act: "q8_k",
  group: 1,
  reads: () => ["x16"],
  main: (d) => {
    const isum = d.p[3];
    // both u16 of a 16-value half (n[0], n[1] are the driver's)
    const w = d.n[2];
    const out: Code[] = [set(isum, zero)];
    for (let ib = 0; ib < 8; ib++) {
      const codes: Code[] = [];
      for (let h = 0; h < 2; h++) {
        const l = 4 * ib + 2 * h;
        codes.push(
          set(w, i32.load(get(d.wb), 2 + 2 * l)),
          set(
            d.v[4 + h],
            signed(
              low2(
                entry8(i32.and(get(w), c(511)), TABLE.IQ2XS_GRID),
                entry8(
                  i32.and(i32.shr_u(get(w), c(16)), c(511)),
                  TABLE.IQ2XS_GRID,
                ),
              ),
              low2(
                entry8(
                  i32.and(i32.shr_u(get(w), c(9)), c(127)),
                  TABLE.KSIGN_MASKS,
                ),
                entry8(i32.shr_u(get(w), c(25)), TABLE.KSIGN_MASKS),
              ),
              d.v[2 + h],
            ),
          ),
        );
      }
      const sc = (h: number): Code => {
        const b = i32.load8_u(get(d.wb), 66 + ib);
        return i32x4.splat(
          i32.add(
            i32.shl(h ? i32.shr_u(b, c(4)) : i32.and(b, c(15)), c(1)),
            c(1),
          ),
        );
      };
      out.push(
        ...codes,
        ...halfDots(d, [get(d.v[4]), get(d.v[5])], ib, [d.p[0], d.p[1]]),
        set(
          isum,
          i32x4.add(
            get(isum),
            i32x4.add(
              i32x4.mul(get(d.p[0]), sc(0)),
              i32x4.mul(get(d.p[1]), sc(1)),
            ),
          ),
        ),
      );
    }
    out.push(addSuper(d, isum, 0.125));
    return out;
  },
};
