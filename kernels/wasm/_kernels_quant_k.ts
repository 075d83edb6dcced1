/**
 * The 256-element K-quant weight formats of the quantized kernels: Q4_K
 * (nibbles with 6-bit sub-block scales and mins) and Q6_K (6-bit codes with
 * i8 sub-block scales), on Q8_K activations (see `_kernels_quant.ts`).
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
  i32x4,
  i8x16,
  type Local,
  set,
  v128,
} from "./_asm.ts";
import {
  c,
  f16ToF32NoSubnormal,
  i32x4c,
  i8x16c,
  zero,
} from "./_kernels_util.ts";
import {
  bytesToI32,
  type Dot,
  dotI16,
  hsum4i,
  hsum4i16,
  metaPtr,
  type QuantFormat,
  rdot16,
  widenEvenOdd,
} from "./_kernels_quant_util.ts";

/**
 * Q4_K super-block: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, then
 * 4 × 32 bytes of nibbles (sub-block 2c in the low nibbles of the c-th 32
 * bytes, 2c+1 in the high ones). With Q8_K activations (one scale `d_x`
 * per 256) the super-block contributes, as in ggml's
 * `ggml_vec_dot_q4_K_q8_K`, `(d_x·d)·Σ_j sc_j·Σ q·x8 − (d_x·dmin)·Σ_j
 * m_j·Σ x8` with both sums over j in integers (`x8` the codes).
 */
export const Q4_K: QuantFormat = {
  name: "q4_k",
  elems: 256,
  bytes: 144,
  act: "q8_k",
  group: 1,
  mins: true,
  reads: (ctx) => [ctx.relaxed ? "x8" : "x16"],
  main: (d) => {
    const [A, B, Cc, S] = d.v.slice(8, 12);
    const [isum, imin] = d.v.slice(12, 14);
    const [dx] = d.s;
    const out: Code[] = [
      set(dx, f32.load(metaPtr(d, 0))),
      set(S, v128.load(get(d.wb), 4)),
      set(A, bytesToI32(get(S), 0)),
      set(B, bytesToI32(get(S), 4)),
      set(Cc, bytesToI32(get(S), 8)),
      set(isum, zero),
      set(imin, zero),
    ];
    // sub-block j: low nibbles of chunk j>>1 when j is even, high when odd
    const sub = (j: number): Code[] => {
      const ch = j >> 1;
      const nib = (src: Code) =>
        j & 1
          ? v128.and(i16x8.shr_u(src, c(4)), i8x16c(0x0f))
          : v128.and(src, i8x16c(0x0f));
      const qa = v128.load(get(d.wb), 16 + 32 * ch);
      const qb = v128.load(get(d.wb), 16 + 32 * ch + 16);
      if (d.ctx.relaxed) {
        return [
          set(
            d.p[j & 3],
            i16x8.add(
              rdot16(v128.load(get(d.x8), 32 * j), nib(qa)),
              rdot16(v128.load(get(d.x8), 32 * j + 16), nib(qb)),
            ),
          ),
        ];
      }
      return [
        set(d.v[0], nib(qa)),
        set(d.v[1], nib(qb)),
        set(
          d.p[j & 3],
          dotI16(
            [...widenEvenOdd(get(d.v[0])), ...widenEvenOdd(get(d.v[1]))],
            get(d.x16),
            64 * j,
          ),
        ),
      ];
    };
    for (let half = 0; half < 2; half++) {
      for (let j = 4 * half; j < 4 * half + 4; j++) out.push(...sub(j));
      // scales of sub-blocks 4h..4h+3: low 6 bits of A (h = 0) or the
      // low nibble of C with A's top two bits (h = 1); mins likewise.
      const scale = half === 0 ? v128.and(get(A), i32x4c(63)) : v128.or(
        v128.and(get(Cc), i32x4c(15)),
        i32x4.shl(i32x4.shr_u(get(A), c(6)), c(4)),
      );
      const min = half === 0 ? v128.and(get(B), i32x4c(63)) : v128.or(
        i32x4.shr_u(get(Cc), c(4)),
        i32x4.shl(i32x4.shr_u(get(B), c(6)), c(4)),
      );
      out.push(
        // relaxed: i16 lanes |Σ| ≤ 7620, summed 4 at a time
        d.ctx.relaxed
          ? hsum4i16(d.p.slice(0, 4).map(get), d.t)
          : hsum4i(d.p.slice(0, 4).map(get), d.t),
        set(isum, i32x4.add(get(isum), i32x4.mul(get(d.t[0]), scale))),
        set(
          imin,
          i32x4.add(
            get(imin),
            i32x4.mul(min, v128.load(metaPtr(d, 1), 16 * half)),
          ),
        ),
      );
    }
    out.push(
      set(
        d.acc,
        d.ctx.madd(
          f32x4.convert_i32x4_s(get(isum)),
          f32x4.splat(
            f32.mul(
              get(dx),
              f16ToF32NoSubnormal(() => i32.load16_u(get(d.wb))),
            ),
          ),
          get(d.acc),
        ),
      ),
      // the min term is subtracted at the end (accm holds its total)
      set(
        d.accm,
        d.ctx.madd(
          f32x4.convert_i32x4_s(get(imin)),
          f32x4.splat(
            f32.mul(
              get(dx),
              f16ToF32NoSubnormal(() => i32.load16_u(get(d.wb), 2)),
            ),
          ),
          get(d.accm),
        ),
      ),
    );
    return out;
  },
};

/**
 * Q6_K super-block: ql[128] (low 4 bits), qh[64] (high 2 bits), 16 i8
 * scales, f16 d. In each half of 128 elements, element l + 32·i (l < 32,
 * quarter i) takes ql[l + 32·(i & 1)] (low nibble for i < 2, high for
 * i ≥ 2) and bits 2i..2i+1 of qh[l]; group g = e / 16 has scale sc[g];
 * value `d·sc·(q − 32)`. With Q8_K activations the super-block contributes
 * `(d_x·d)·Σ_g sc_g·Σ (q − 32)·x8`, the sums in integers (as ggml's
 * `ggml_vec_dot_q6_K_q8_K`). Relaxed SIMD: {@link q6kRelaxed}; plain SIMD
 * widens the signed codes to i16 and sums four groups at a time.
 */
export const Q6_K: QuantFormat = {
  name: "q6_k",
  elems: 256,
  bytes: 210,
  act: "q8_k",
  group: 1,
  reads: (ctx) => [ctx.relaxed ? "x8" : "x16", "is16"],
  main: (d) => {
    if (d.ctx.relaxed) return q6kRelaxed(d);
    const SC = d.v[13];
    const isum = d.v[12];
    const out: Code[] = [
      set(SC, v128.load(get(d.wb), 192)),
      set(isum, zero),
    ];
    for (let h = 0; h < 2; h++) {
      const ql = d.v.slice(6, 10);
      const qh = d.v.slice(10, 12);
      out.push(...q6LoadHalf(d, ql, qh, h));
      for (let k = 0; k < 2; k++) {
        for (let gq = 0; gq < 4; gq++) {
          const g = 4 * k + gq; // group within the half
          const grp = 8 * h + g;
          out.push(set(d.v[0], q6Codes(ql, qh, g)));
          out.push(
            set(d.v[0], i8x16.sub(get(d.v[0]), i8x16c(32))),
            set(
              d.p[gq],
              dotI16(
                widenEvenOdd(get(d.v[0])),
                get(d.x16),
                32 * grp,
              ),
            ),
          );
        }
        const grp0 = 8 * h + 4 * k;
        out.push(hsum4i(d.p.slice(0, 4).map(get), d.t));
        // scales sc[grp0..grp0+3] (i8) as i32 lanes
        const sc = i32x4.extend_low_i16x8_s(
          i16x8.extend_low_i8x16_s(
            i8x16.shuffle(get(SC), get(SC), [
              grp0,
              grp0 + 1,
              grp0 + 2,
              grp0 + 3,
              ...new Array(12).fill(0),
            ]),
          ),
        );
        out.push(
          set(isum, i32x4.add(get(isum), i32x4.mul(get(d.t[0]), sc))),
        );
      }
    }
    out.push(q6AddSuper(d, isum));
    return out;
  },
};

/** Loads half `h` of a Q6_K super-block: its 64 ql bytes into `ql[0..3]`, its 32 qh bytes into `qh[0..1]`. */
function q6LoadHalf(d: Dot, ql: Local[], qh: Local[], h: number): Code[] {
  return [
    ...ql.map((v, k) => set(v, v128.load(get(d.wb), h * 64 + k * 16))),
    ...qh.map((v, k) => set(v, v128.load(get(d.wb), 128 + h * 32 + k * 16))),
  ];
}

/** `acc += f32(isum) · (d_x · d)` for a Q6_K super-block (d the f16 at byte 208). */
function q6AddSuper(d: Dot, isum: Local): Code {
  return set(
    d.acc,
    d.ctx.madd(
      f32x4.convert_i32x4_s(get(isum)),
      f32x4.splat(
        f32.mul(
          f32.load(metaPtr(d, 0)),
          f16ToF32NoSubnormal(() => i32.load16_u(get(d.wb), 208)),
        ),
      ),
      get(d.acc),
    ),
  );
}

/**
 * The six-bit codes (0..63) of Q6_K group `g` (16 elements, 0..7) of a half
 * whose ql vectors are `ql[0..3]` and qh vectors `qh[0..1]`.
 */
function q6Codes(ql: Local[], qh: Local[], g: number): Code {
  const i = g >> 1, lo = g & 1;
  const src = ql[(i & 1) * 2 + lo];
  const low4 = i < 2
    ? v128.and(get(src), i8x16c(0x0f))
    : v128.and(i16x8.shr_u(get(src), c(4)), i8x16c(0x0f));
  const shift = 2 * i - 4; // move qh bits 2i..2i+1 to bits 4..5
  const high2 = shift < 0
    ? v128.and(i16x8.shl(get(qh[lo]), c(-shift)), i8x16c(0x30))
    : shift === 0
    ? v128.and(get(qh[lo]), i8x16c(0x30))
    : v128.and(i16x8.shr_u(get(qh[lo]), c(shift)), i8x16c(0x30));
  return v128.or(low4, high2);
}

/**
 * Relaxed Q6_K, as llama.cpp's AVX2 loop arranges it: each group's i16
 * pair sums `Σ q·x8` (codes 0..63 as the 7-bit operand, |lane| ≤ 2·63·127)
 * are multiplied by the group's scale with one `i32x4.dot_i16x8_s`
 * against that scale in every i16 lane, and accumulate in i32 lanes over
 * the whole super-block, with no horizontal sums per group; the offset
 * `32·Σ_g sc_g·Σx_g` comes from the per-16 code sums (narrowed to i16,
 * |Σ| ≤ 2032) dotted with the scales, twice per super-block. The integer
 * total is the same as the four-group way's; only its spread over the four
 * i32 lanes (so the F32 rounding of their sum) differs.
 */
function q6kRelaxed(d: Dot): Code[] {
  const [scLo, scHi, isum] = d.v.slice(12, 15);
  const ql = d.v.slice(6, 10), qh = d.v.slice(10, 12);
  const out: Code[] = [
    set(d.v[0], v128.load(get(d.wb), 192)),
    set(scLo, i16x8.extend_low_i8x16_s(get(d.v[0]))),
    set(scHi, i16x8.extend_high_i8x16_s(get(d.v[0]))),
    // the offset term first: 32·Σ_g sc_g·Σx_g, subtracted
    set(
      isum,
      i32x4.sub(
        zero,
        i32x4.shl(
          i32x4.add(
            i32x4.dot_i16x8_s(
              i16x8.narrow_i32x4_s(
                v128.load(get(d.is16)),
                v128.load(get(d.is16), 16),
              ),
              get(scLo),
            ),
            i32x4.dot_i16x8_s(
              i16x8.narrow_i32x4_s(
                v128.load(get(d.is16), 32),
                v128.load(get(d.is16), 48),
              ),
              get(scHi),
            ),
          ),
          c(5),
        ),
      ),
    ),
  ];
  for (let h = 0; h < 2; h++) {
    const sc = h === 0 ? scLo : scHi;
    out.push(...q6LoadHalf(d, ql, qh, h));
    for (let g = 0; g < 8; g++) {
      const grp = 8 * h + g;
      out.push(
        set(
          isum,
          i32x4.add(
            get(isum),
            i32x4.dot_i16x8_s(
              rdot16(v128.load(get(d.x8), 16 * grp), q6Codes(ql, qh, g)),
              // scale g of this half in every i16 lane
              i8x16.shuffle(
                get(sc),
                get(sc),
                Array.from({ length: 16 }, (_, b) => 2 * g + (b & 1)),
              ),
            ),
          ),
        ),
      );
    }
  }
  out.push(q6AddSuper(d, isum));
  return out;
}
