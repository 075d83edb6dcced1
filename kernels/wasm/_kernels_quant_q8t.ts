/**
 * Q8_0 times one x row on engines whose relaxed dot reads its 7-bit operand
 * as an unsigned byte and saturates its i16 pair sums (x86 without
 * AVX-VNNI: `pmaddubsw`; `kernelInfo().signDot` and not `unsignedDot`).
 *
 * The weight codes go in unsigned, `u = w + 128` (`w xor 0x80`, 0..255),
 * and x in two signed parts, `x = x5 + 32·xh` with `x5 = x & 31` (0..31)
 * and `xh = x >> 5` (−4..3), which `q8_split5` writes per 32-block (32
 * bytes of `x5`, then 32 of `xh`) from the i8 codes. Per 16 bytes the
 * i16-lane dot (`i16x8.relaxed_dot_i8x16_i7x16_s`, one `pmaddubsw`) of
 * `u` with each part: a pair sum of `u·x5` is at most 2·255·31 = 15810, so
 * a block's two halves add to at most 31620 in an i16 lane, and `u·xh`
 * pairs to at most 2·255·4 = 2040 (4080 for two): nothing saturates or
 * wraps. `i32x4.dot_i16x8_s` with ones and with 32 widens both parts
 * (`Σ u·x5 + 32·Σ u·xh`), and the group's total loses `128·Σx` (the x code
 * sums of the metadata) as for `q8_0u`. Eleven instructions per block
 * against fourteen for the four-dot split (`q8SplitDot`); the integer
 * totals are exact either way, and the F32 steps are `q8Format`'s, so the
 * outputs are the bits of the `q8_0` / `q8_0s` kernels.
 *
 * @module
 */

import {
  type Code,
  forLoop,
  get,
  i16x8,
  i32,
  i32x4,
  i8x16,
  type Local,
  type ModuleBuilder,
  set,
  T,
  v128,
} from "./_asm.ts";
import { c, i32x4c, i8x16c } from "./_kernels_util.ts";
import {
  type Dot,
  dropOffset1,
  dropOffset4,
  rdot16,
} from "./_kernels_quant_util.ts";
import { q8Format, type Q8Way } from "./_kernels_quant_q8_q4.ts";

const I = T.i32;

/** i16 lanes of 1 and of 32. */
const ONES16 = 0x00010001;
const THIRTY_TWO16 = 0x00200020;

/** Lane sums of `Σ (w + 128)·x` for one block, from the `x5` / `xh` parts at `x16 + xoff`. */
function q8tBlock(
  d: Dot,
  codes: [Code, Code],
  xoff: number,
  dst: Local,
): Code[] {
  const x = (k: number) => v128.load(get(d.x16), xoff + 16 * k);
  return [
    set(d.v[0], v128.xor(codes[0], i8x16c(0x80))),
    set(d.v[1], v128.xor(codes[1], i8x16c(0x80))),
    set(
      dst,
      i32x4.add(
        i32x4.dot_i16x8_s(
          i16x8.add(rdot16(x(0), get(d.v[0])), rdot16(x(1), get(d.v[1]))),
          i32x4c(ONES16),
        ),
        i32x4.dot_i16x8_s(
          i16x8.add(rdot16(x(2), get(d.v[0])), rdot16(x(3), get(d.v[1]))),
          i32x4c(THIRTY_TWO16),
        ),
      ),
    ),
  ];
}

/** The way of {@link Q8_0T}: unsigned codes, x in two parts, `128·Σx` removed. */
const Q8_SPLIT5: Q8Way = {
  reads: () => ["x16"],
  block: (d, codes, j, dst) => q8tBlock(d, codes, 64 * j, dst),
  fix4: (d, off) => [dropOffset4(d, 7, off)], // 128·Σx
  fix1: (d, total) => dropOffset1(d, total, 7),
};

/**
 * Q8_0 for one x row on `signDot` engines (relaxed variant only): the
 * same blocks and results as the `q8_0` kernels, x read as the parts that
 * `q8_split5` writes in place of the relaxed quantizer's second form.
 */
export const Q8_0T = q8Format("q8_0t", Q8_SPLIT5);

/**
 * `q8_split5(q8, q16, n)`: for the `n` i8 codes at `q8` (n a multiple of
 * 32), per 32-block the 32 bytes `x & 31` then the 32 bytes `x >> 5`
 * (arithmetic) at `q16` (2·n bytes), the x form the {@link Q8_0T} kernels
 * read.
 */
export function split5Kernel(m: ModuleBuilder): void {
  const f = m.func("q8_split5", [["q8", I], ["q16", I], ["n", I]]);
  const { q8, q16, n } = f.params;
  const [i] = f.locals(I, 1);
  const [a, b] = f.locals(T.v128, 2);
  const src = (k: number) => v128.load(i32.add(get(q8), get(i)), 16 * k);
  const dst = i32.add(get(q16), i32.shl(get(i), c(1)));
  // x >> 5 (arithmetic) as ((x + 128) >> 5, unsigned) − 4
  const xh = (v: Code) =>
    i8x16.sub(
      i8x16.shr_u(v128.xor(v, i8x16c(0x80)), c(5)),
      i8x16c(4),
    );
  f.body(
    forLoop(
      "s5",
      i,
      c(0),
      get(n),
      c(32),
      set(a, src(0)),
      set(b, src(1)),
      v128.store(dst, v128.and(get(a), i8x16c(31))),
      v128.store(
        i32.add(get(q16), i32.shl(get(i), c(1))),
        v128.and(get(b), i8x16c(31)),
        16,
      ),
      v128.store(
        i32.add(get(q16), i32.shl(get(i), c(1))),
        xh(get(a)),
        32,
      ),
      v128.store(
        i32.add(get(q16), i32.shl(get(i), c(1))),
        xh(get(b)),
        48,
      ),
    ),
  );
}
