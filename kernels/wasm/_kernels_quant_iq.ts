/**
 * The non-linear 4-bit weight format IQ4_NL for the quantized kernels
 * (`_kernels_quant.ts`): 18-byte blocks of an f16 scale and 16 bytes of
 * nibbles (low nibbles elements 0..15, high 16..31), each nibble an index
 * into ggml's 16 levels `kvalues_iq4nl` (−127 … 113). A swizzle turns the
 * nibbles into those signed levels, which are then dotted with the Q8_0
 * activation codes as Q8_0 weights are (llama.cpp's
 * `ggml_vec_dot_iq4_nl_q8_0`: exact integer dots, `d_w · d_x` per block).
 *
 * @module
 */

import {
  type Code,
  f32,
  get,
  i16x8,
  i8x16,
  type Local,
  set,
  v128,
} from "./_asm.ts";
import { c, i8x16c } from "./_kernels_util.ts";
import {
  addBlocks4,
  type Dot,
  dotI16,
  hsum4i,
  hsumI,
  loadScales,
  metaPtr,
  type QuantFormat,
  scale1,
  widenEvenOdd,
} from "./_kernels_quant_util.ts";
import { q8SplitDot } from "./_kernels_quant_q8_q4.ts";
import { KVALUES_IQ4NL } from "../../core/quants/_iq_tables.ts";

/** The 16 levels as a byte vector (pooled per function). */
function levels(): Code {
  return v128.pooled(new Uint8Array(KVALUES_IQ4NL.buffer.slice(0)));
}

/** The signed levels of the 16 code bytes held in `raw`: elements 0..15, 16..31. */
function iq4Levels(raw: Local): [Code, Code] {
  return [
    i8x16.swizzle(levels(), v128.and(get(raw), i8x16c(0x0f))),
    i8x16.swizzle(
      levels(),
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
    set(
      d.accs,
      f32.add(
        get(d.accs),
        f32.mul(
          f32.convert_i32_s(hsumI(get(d.p[0]), d.t[0])),
          f32.mul(scale1(d), f32.load(metaPtr(d, 0))),
        ),
      ),
    ),
  ],
};
