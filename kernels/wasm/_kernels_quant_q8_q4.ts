/**
 * The 32-element weight formats of the quantized kernels: Q8_0 (signed
 * codes; the relaxed variant's unsigned two-dot way `q8_0u` and its probe)
 * and Q4_0 (nibbles), each a `QuantFormat` whose body `dotFunction` in
 * `_kernels_quant.ts` wraps.
 *
 * @module
 */

import {
  type Code,
  f32x4,
  get,
  i16x8,
  i32x4,
  i8x16,
  type Local,
  type ModuleBuilder,
  set,
  T,
  v128,
} from "./_asm.ts";
import {
  c,
  F16_MASK,
  F16_SCALE,
  f32x4c,
  i32x4c,
  i8x16c,
  zero,
} from "./_kernels_util.ts";
import {
  addBlock1,
  addBlocks4,
  blend16,
  type Dot,
  dotI16,
  dropOffset1,
  dropOffset4,
  hsum4i,
  hsum4i16,
  hsumI,
  loadScales,
  metaPtr,
  type QuantFormat,
  rdot16,
  widenEvenOdd,
  widenSums,
} from "./_kernels_quant_util.ts";

const I = T.i32;

/**
 * Relaxed Q8_0: i32 lane sums of `Σ w·x` for the block at `wb + off` into
 * `dst`, from the split x codes at `x16 + xoff` (`x = x7 − 128·s`, both
 * 7-bit operands of the i8 × i7 dot; the signed weight codes are the i8
 * side). The i16 pair sums of its x86 lowering stay below 2^15 (|w·x7|
 * pairs ≤ 2·128·127 = 32512), so the sums are exact.
 */
export function q8SplitDot(
  d: Dot,
  codes: [Code, Code],
  xoff: number,
  dst: Local,
): Code[] {
  const dot = i32x4.relaxed_dot_i8x16_i7x16_add_s;
  return [
    set(d.v[0], codes[0]),
    set(d.v[1], codes[1]),
    set(
      dst,
      i32x4.sub(
        dot(
          get(d.v[0]),
          v128.load(get(d.x16), xoff),
          dot(get(d.v[1]), v128.load(get(d.x16), xoff + 16), zero),
        ),
        i32x4.shl(
          dot(
            get(d.v[0]),
            v128.load(get(d.x16), xoff + 32),
            dot(get(d.v[1]), v128.load(get(d.x16), xoff + 48), zero),
          ),
          c(7),
        ),
      ),
    ),
  ];
}

/**
 * The value {@link probeKernel} returns where the relaxed dot reads its
 * 7-bit operand as an unsigned byte and sums four products into i32
 * without saturating (x86 AVX-VNNI `vpdpbusd`): `4 · (−127 · 255)`.
 */
export const U8_DOT_PROBE = -129540;

/**
 * `probe_u8dot() → i32`: lane 0 of the relaxed dot of sixteen −127 (i8
 * operand) with sixteen 255 bytes (7-bit operand). Its result is
 * implementation-defined; {@link U8_DOT_PROBE} means the `q8_0u` kernels
 * give exact results here.
 */
export function probeKernel(m: ModuleBuilder): void {
  const f = m.func("probe_u8dot", [], [I]);
  f.body(
    i32x4.extract_lane(
      i32x4.relaxed_dot_i8x16_i7x16_add_s(i8x16c(-127), i8x16c(255), zero),
      0,
    ),
  );
}

/**
 * Q8_0 where the relaxed dot takes an unsigned byte as its 7-bit operand
 * (see {@link U8_DOT_PROBE}): lane sums of `Σ (w + 128)·x` for the block
 * codes `codes`, with the x codes at `x8 + xoff` as the signed operand;
 * `w + 128` is `w xor 0x80`. Each i32 lane sums eight products of at most
 * 255·127, so nothing saturates; the caller removes `128·Σx`. Two dots per
 * block instead of the four of {@link q8SplitDot}.
 */
function q8uDot(d: Dot, codes: [Code, Code], xoff: number, dst: Local): Code {
  const dot = i32x4.relaxed_dot_i8x16_i7x16_add_s;
  return set(
    dst,
    dot(
      v128.load(get(d.x8), xoff),
      v128.xor(codes[0], i8x16c(0x80)),
      dot(
        v128.load(get(d.x8), xoff + 16),
        v128.xor(codes[1], i8x16c(0x80)),
        zero,
      ),
    ),
  );
}

/**
 * One way of dotting Q8_0 blocks with x, for {@link q8Format}: `block`
 * puts the i32 lane sums of block `j` of a group (codes `codes`) in
 * `dst`; `fix4` corrects four block totals in `t[0]` (their x code sums
 * at `is32 + off`) and `fix1` one block's total, where the way sums
 * something other than `Σ w·x`.
 */
export interface Q8Way {
  reads: QuantFormat["reads"];
  block(d: Dot, codes: [Code, Code], j: number, dst: Local): Code[];
  fix4(d: Dot, off: number): Code[];
  fix1(d: Dot, total: Code): Code;
}

/**
 * Signed codes times signed x: relaxed SIMD splits x ({@link q8SplitDot},
 * four dots per block); plain SIMD widens both to i16.
 */
const Q8_SIGNED: Q8Way = {
  reads: () => ["x16"],
  block: (d, codes, j, dst) =>
    d.ctx.relaxed ? q8SplitDot(d, codes, 64 * j, dst) : [
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
    ],
  fix4: () => [],
  fix1: (_, total) => total,
};

/**
 * The unsigned relaxed dot ({@link q8uDot}, two dots per block, relaxed
 * variant only): sums `Σ (w + 128)·x`, then removes `128·Σx`.
 */
const Q8_UNSIGNED: Q8Way = {
  reads: () => ["x8"],
  block: (d, codes, j, dst) => [q8uDot(d, codes, 32 * j, dst)],
  fix4: (d, off) => [dropOffset4(d, 7, off)], // 128·Σx
  fix1: (d, total) => dropOffset1(d, total, 7),
};

/**
 * Q8_0 blocks 4h..4h+3 of an 8-block group (272 bytes) held in seventeen
 * 16-byte vectors: block j's codes are the windows at bytes 34j+2 and
 * 34j+18, its scale halfword j of vector 2j.
 */
function q8Half(d: Dot, V: Local[], h: number, way: Q8Way): Code[] {
  const out: Code[] = [];
  for (let j = 4 * h; j < 4 * h + 4; j++) {
    out.push(
      ...way.block(
        d,
        [window16(V, 34 * j + 2), window16(V, 34 * j + 18)],
        j,
        d.p[j - 4 * h],
      ),
    );
  }
  out.push(
    hsum4i(d.p.slice(0, 4).map(get), d.t),
    ...way.fix4(d, 16 * h),
    ...addHalf(d, V, h, 2),
  );
  return out;
}

/** Q8_0 as stored: 34-byte blocks of an f16 scale and 32 i8 codes. Value `d·q`. */
export function q8Format(name: string, way: Q8Way): QuantFormat {
  return {
    name,
    elems: 32,
    bytes: 34,
    act: "q8_0",
    group: 4,
    reads: way.reads,
    main8: (d) => [
      // vectors 0..8 serve blocks 0..3, 8..16 blocks 4..7
      ...d.wv.slice(0, 9).map((v, k) => set(v, v128.load(get(d.wb), 16 * k))),
      ...q8Half(d, d.wv, 0, way),
      ...d.wv.slice(9).map((v, k) =>
        set(v, v128.load(get(d.wb), 16 * (k + 9)))
      ),
      ...q8Half(d, d.wv, 1, way),
    ],
    main: (d) => {
      const out: Code[] = loadScales(d, 34);
      for (let j = 0; j < 4; j++) {
        out.push(
          ...way.block(
            d,
            [
              v128.load(get(d.wb), 34 * j + 2),
              v128.load(get(d.wb), 34 * j + 18),
            ],
            j,
            d.p[j],
          ),
        );
      }
      out.push(
        hsum4i(d.p.slice(0, 4).map(get), d.t),
        ...way.fix4(d, 0),
        addBlocks4(d, get(d.t[0])),
      );
      return out;
    },
    single: (d) => [
      ...way.block(
        d,
        [v128.load(get(d.wb), 2), v128.load(get(d.wb), 18)],
        0,
        d.p[0],
      ),
      addBlock1(d, way.fix1(d, hsumI(get(d.p[0]), d.t[0]))),
    ],
  };
}

export const Q8_0 = q8Format("q8_0", Q8_SIGNED);

/**
 * Q8_0 for engines that pass {@link U8_DOT_PROBE} (relaxed variant only):
 * same blocks and results as {@link Q8_0}, x read as plain i8 codes.
 */
export const Q8_0U = q8Format("q8_0u", Q8_UNSIGNED);

/**
 * Q8_0 for engines that pass `SIGN_DOT_PROBE` (relaxed variant only): the
 * same kernels as {@link Q8_0} for one x row; jobs of several x rows dot
 * prepared rows as magnitudes and signs (`q8_0s_pdot`, two dots per block
 * instead of four), with the same results.
 */
export const Q8_0S = q8Format("q8_0s", Q8_SIGNED);

/** Q4_0 codes 0..15 of the block loaded in `v[0]`: elements 0..15, 16..31. */
function q4Nibbles(d: Dot): [Code, Code] {
  return [
    v128.and(get(d.v[0]), i8x16c(0x0f)),
    v128.and(i16x8.shr_u(get(d.v[0]), c(4)), i8x16c(0x0f)),
  ];
}

/**
 * Partial sums of the Q4_0 block whose 16 code bytes `codes` loads into
 * `v[1]`: relaxed, i16 lanes of `Σ q·x` (q unsigned; the caller removes
 * `8·Σx`); plain SIMD, i32 lanes of `Σ (q − 8)·x`.
 */
function q4_0Block(
  d: Dot,
  codes: Code,
  xoff8: number,
  xoff16: number,
): Code[] {
  const [lo, hi] = q4Nibbles(d);
  if (d.ctx.relaxed) {
    return [
      set(d.v[0], codes),
      // i16 lanes: |Σ| ≤ 2·2·15·127 = 7620 (summed 4 at a time by hsum4i16)
      set(
        d.v[1],
        i16x8.add(
          rdot16(v128.load(get(d.x8), xoff8), lo),
          rdot16(v128.load(get(d.x8), xoff8 + 16), hi),
        ),
      ),
    ];
  }
  return [
    set(d.v[0], codes),
    set(d.v[2], i8x16.sub(lo, i8x16c(8))),
    set(d.v[3], i8x16.sub(hi, i8x16c(8))),
    set(
      d.v[1],
      dotI16(
        [...widenEvenOdd(get(d.v[2])), ...widenEvenOdd(get(d.v[3]))],
        get(d.x16),
        xoff16,
      ),
    ),
  ];
}

/** The 16 bytes at byte `at` of a group held in 16-byte vectors `V`. */
function window16(V: Local[], at: number): Code {
  const k = at >> 4, from = at & 15;
  return from === 0 ? get(V[k]) : i8x16.shuffle(
    get(V[k]),
    get(V[k + 1]),
    Array.from({ length: 16 }, (_, i) => from + i),
  );
}

/**
 * `acc += f32(t[0]) · (d_w · d_x)` for blocks 4h..4h+3 of an 8-block group
 * held in 16-byte vectors `V`, whose scale j sits in halfword j of vector
 * `stride·j` (both Q4_0, stride 1, and Q8_0, stride 2, place it so): three
 * blends gather the four scales.
 */
function addHalf(d: Dot, V: Local[], h: number, stride: number): Code[] {
  const [a, b] = [d.v[13], d.v[0]];
  const j0 = 4 * h;
  const vec = (j: number) => get(V[stride * j]);
  const halves = i32x4[h === 0 ? "extend_low_i16x8_u" : "extend_high_i16x8_u"];
  return [
    set(a, blend16(vec(j0), vec(j0 + 1), [j0 + 1])),
    set(b, blend16(vec(j0 + 2), vec(j0 + 3), [j0 + 3])),
    set(
      d.acc,
      d.ctx.madd(
        f32x4.convert_i32x4_s(get(d.t[0])),
        f32x4.mul(
          f32x4.mul(
            v128.and(
              i32x4.shr_s(
                i32x4.shl(
                  halves(blend16(get(a), get(b), [j0 + 2, j0 + 3])),
                  c(16),
                ),
                c(3),
              ),
              i32x4c(F16_MASK),
            ),
            f32x4c(F16_SCALE),
          ),
          v128.load(metaPtr(d, 0), 16 * h),
        ),
        get(d.acc),
      ),
    ),
  ];
}

/**
 * Q4_0 blocks 4h..4h+3 of an 8-block group (144 bytes) held in nine
 * 16-byte vectors `V[0..8]` (`V[k]` = bytes 16k..16k+15): block j's codes
 * are bytes 18j+2..18j+17, a byte window across `V[k]` and `V[k+1]` (an
 * align shuffle; block 7's are exactly `V[8]`), and its scale, bytes
 * 18j..18j+1, is halfword j of `V[j]`, so three blends gather four scales.
 */
function q4_0Half(d: Dot, V: Local[], h: number): Code[] {
  const out: Code[] = [];
  for (let j = 4 * h; j < 4 * h + 4; j++) {
    out.push(
      ...q4_0Block(d, window16(V, 18 * j + 2), 32 * j, 64 * j),
      set(d.p[j - 4 * h], get(d.v[1])),
    );
  }
  out.push(
    d.ctx.relaxed
      ? hsum4i16(d.p.slice(0, 4).map(get), d.t)
      : hsum4i(d.p.slice(0, 4).map(get), d.t),
  );
  // Σ (q − 8)·x = Σ q·x − 8·Σ x
  if (d.ctx.relaxed) out.push(dropOffset4(d, 3, 16 * h));
  out.push(...addHalf(d, V, h, 1));
  return out;
}

/**
 * Q4_0 as stored: 18-byte blocks of an f16 scale and 16 bytes of nibbles
 * (low nibbles are elements 0..15, high 16..31). Value `d·(q − 8)`.
 */
export const Q4_0: QuantFormat = {
  name: "q4_0",
  elems: 32,
  bytes: 18,
  act: "q8_0",
  group: 4,
  reads: (ctx) => [ctx.relaxed ? "x8" : "x16"],
  main8: (d) => [
    ...d.wv.map((v, k) => set(v, v128.load(get(d.wb), 16 * k))),
    ...q4_0Half(d, d.wv, 0),
    ...q4_0Half(d, d.wv, 1),
  ],
  main: (d) => {
    const out: Code[] = loadScales(d, 18);
    for (let j = 0; j < 4; j++) {
      out.push(
        ...q4_0Block(d, v128.load(get(d.wb), 18 * j + 2), 32 * j, 64 * j),
        set(d.p[j], get(d.v[1])),
      );
    }
    out.push(
      d.ctx.relaxed
        ? hsum4i16(d.p.slice(0, 4).map(get), d.t)
        : hsum4i(d.p.slice(0, 4).map(get), d.t),
    );
    // Σ (q − 8)·x = Σ q·x − 8·Σ x
    if (d.ctx.relaxed) out.push(dropOffset4(d, 3));
    out.push(addBlocks4(d, get(d.t[0])));
    return out;
  },
  single: (d) => [
    ...q4_0Block(d, v128.load(get(d.wb), 2), 0, 0),
    addBlock1(
      d,
      d.ctx.relaxed
        ? dropOffset1(d, hsumI(widenSums(get(d.v[1])), d.t[0]), 3)
        : hsumI(get(d.v[1]), d.t[0]),
    ),
  ],
};
