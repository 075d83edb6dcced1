/**
 * Q5_0 for the quantized kernels (`_kernels_quant.ts`): 22-byte blocks of an
 * f16 scale `d`, a little-endian u32 `qh` whose bit j is the fifth bit of
 * element j, and 16 bytes of nibbles (low nibbles elements 0..15, high
 * 16..31); value `d·(q − 16)`. llama-quantize stores the matrices of a
 * Q4_K_M model whose rows are not whole 256-blocks (SmolLM-135M's width 576)
 * as Q5_0. With Q8_0 activations a block contributes, as ggml's
 * `ggml_vec_dot_q5_0_q8_0`, `d_w·d_x·Σ (q − 16)·x8` with the sum exact in
 * integers.
 *
 * The fifth bits become bytes as in ggml's `bytes_from_bits_32`: a byte
 * shuffle (the relaxed swizzle, one `pshufb`, in the relaxed variant)
 * copies qh byte k to lanes 8k..8k+7 (two vectors of 16 lanes), an AND with
 * the lane's bit and a compare give 0xff where the bit is set.
 *
 * @module
 */

import {
  type Code,
  get,
  i16x8,
  i32x4,
  i8x16,
  type Local,
  set,
  v128,
} from "./_asm.ts";
import { c, i8x16c } from "./_kernels_util.ts";
import {
  addBlock1,
  addBlocks4,
  type Dot,
  dotI16,
  dropOffset1,
  dropOffset4,
  hsum4i,
  hsumI,
  loadScales,
  type QuantFormat,
  rdot16,
  widenEvenOdd,
} from "./_kernels_quant_util.ts";

/** Bit `i & 7` in lane i: the bit of qh each lane tests. */
const BITS = v128.pooled(
  Array.from({ length: 16 }, (_, i) => 1 << (i & 7)),
);

/**
 * 0xff in lane i where fifth bit `16·half + i` is set (qh in the low four
 * bytes of `qh`), else 0.
 */
function fifthBits(d: Dot, qh: Local, half: number): Code {
  const lanes = Array.from({ length: 16 }, (_, i) => 2 * half + (i >> 3));
  // V8 builds a shuffle's byte mask inline at every use (four scalar
  // instructions); the relaxed swizzle takes it from a pooled local
  const spread = d.ctx.relaxed
    ? i8x16.relaxed_swizzle(get(qh), v128.pooled(lanes))
    : i8x16.shuffle(get(qh), get(qh), lanes);
  return i8x16.eq(v128.and(spread, BITS), BITS);
}

/**
 * i32 lane sums of block `j`'s dot with x into `dst`; the block's qh is at
 * `wb + off`, its nibbles at `wb + off + 4`. Relaxed SIMD: the unsigned
 * codes 0..31 are the 7-bit operand of the relaxed dot (`Σ q·x`; the caller
 * removes `16·Σx`), each i16 lane at most 2·2·31·127 = 15748 before the
 * widening. Plain SIMD: the signed codes `q − 16` (`0xf0` or'ed into the
 * nibble where the fifth bit is clear) widened to i16 (`Σ (q − 16)·x`).
 */
function q5Block(
  d: Dot,
  off: number,
  j: number,
  dst: Local,
): Code[] {
  const [qh, qs] = [d.v[2], d.v[3]];
  const lo = v128.and(get(qs), i8x16c(0x0f));
  const hi = v128.and(i16x8.shr_u(get(qs), c(4)), i8x16c(0x0f));
  const out: Code[] = [
    set(qh, v128.load(get(d.wb), off)),
    set(qs, v128.load(get(d.wb), off + 4)),
  ];
  if (d.ctx.relaxed) {
    const code = (nib: Code, half: number) =>
      v128.or(nib, v128.and(fifthBits(d, qh, half), i8x16c(0x10)));
    out.push(
      set(
        dst,
        // i16 pairs → i32 (as widenSums, with the ones from a pooled local:
        // V8 loads extadd_pairwise's constant through an absolute address)
        i32x4.dot_i16x8_s(
          i16x8.add(
            rdot16(v128.load(get(d.x8), 32 * j), code(lo, 0)),
            rdot16(v128.load(get(d.x8), 32 * j + 16), code(hi, 1)),
          ),
          v128.pooled([1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]),
        ),
      ),
    );
    return out;
  }
  const code = (nib: Code, half: number) =>
    v128.or(nib, v128.andnot(i8x16c(0xf0), fifthBits(d, qh, half)));
  out.push(
    set(d.v[0], code(lo, 0)),
    set(d.v[1], code(hi, 1)),
    set(
      dst,
      dotI16(
        [...widenEvenOdd(get(d.v[0])), ...widenEvenOdd(get(d.v[1]))],
        get(d.x16),
        64 * j,
      ),
    ),
  );
  return out;
}

/** Q5_0 as stored (see the module comment). */
export const Q5_0: QuantFormat = {
  name: "q5_0",
  elems: 32,
  bytes: 22,
  act: "q8_0",
  group: 4,
  reads: (ctx) => [ctx.relaxed ? "x8" : "x16"],
  main: (d) => {
    const out: Code[] = loadScales(d, 22);
    for (let j = 0; j < 4; j++) out.push(...q5Block(d, 22 * j + 2, j, d.p[j]));
    out.push(hsum4i(d.p.slice(0, 4).map(get), d.t));
    // Σ (q − 16)·x = Σ q·x − 16·Σ x
    if (d.ctx.relaxed) out.push(dropOffset4(d, 4));
    out.push(addBlocks4(d, get(d.t[0])));
    return out;
  },
  single: (d) => [
    ...q5Block(d, 2, 0, d.p[0]),
    addBlock1(
      d,
      d.ctx.relaxed
        ? dropOffset1(d, hsumI(get(d.p[0]), d.t[0]), 4)
        : hsumI(get(d.p[0]), d.t[0]),
    ),
  ],
};
