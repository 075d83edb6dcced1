/**
 * Activation quantization for the quantized kernels (`quantize_x`,
 * `quantize_xk`): F32 rows to int8 / int16 codes and per-block metadata by
 * llama.cpp's Q8_0 and Q8_K rules (see `_kernels_quant.ts`).
 *
 * @module
 */

import {
  type Code,
  f32,
  f32x4,
  forLoop,
  get,
  i16x8,
  i32,
  i32x4,
  i8x16,
  if_,
  type Local,
  type ModuleBuilder,
  select,
  seq,
  set,
  T,
  v128,
} from "./_asm.ts";
import { c, type Ctx, i8x16c, lanes32, zero } from "./_kernels_util.ts";
import { hsumI, META_ARRAYS } from "./_kernels_quant_util.ts";

const I = T.i32;
const F = T.f32;
const V = T.v128;

/** Byte shuffle picking the even i16 lanes of two vectors. */
const EVENS = [0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29];

/** Byte shuffle picking the odd i16 lanes of two vectors. */
const ODDS = EVENS.map((b) => b + 2);

/**
 * `v` (an f32 ≥ 0 in F16's finite range) rounded to the nearest F16 value,
 * ties to even, as ggml's `GGML_FP32_TO_FP16` does: adding `M` = 2^(e+13)
 * (e = v's exponent; at least 2^-1, F16's subnormal spacing 2^-24 times
 * 2^23) leaves F16's last mantissa bit as the sum's last bit, so the F32
 * add rounds exactly there; subtracting `M` again is exact.
 */
function f16Round(v: Code, t: Local, m: Local): Code {
  const half = 0x3f000000; // 0.5
  return seq(
    set(t, v),
    set(
      m,
      i32.add(i32.and(i32.reinterpret_f32(get(t)), c(0x7f800000)), c(13 << 23)),
    ),
    set(m, select(get(m), c(half), i32.gt_s(get(m), c(half)))),
    f32.sub(
      f32.add(get(t), f32.reinterpret_i32(get(m))),
      f32.reinterpret_i32(get(m)),
    ),
  );
}

/**
 * Quantizes `rows` F32 rows of `kp` elements with one of llama.cpp's
 * activation rules, storing codes as i8 at `q8 + r·kp` and, at
 * `q16 + r·kp·2`, a second form: in the plain-SIMD module i16 codes (each
 * 16 elements as their 8 even-indexed codes, then the 8 odd ones), in the
 * relaxed one per 32 elements the codes' low 7 bits (32 bytes), then their
 * sign bits as 0/1 (32 bytes), so that `x = x7 − 128·s` puts signed Q8_0
 * weights through the i8 × i7 dot; metadata per {@link META_ARRAYS}:
 *
 * - `quantize_x` (Q8_0, `kp` a multiple of 32): per 32 values
 *   `d = f16(amax/127)`, codes `nearest(x·(127/amax))` (ties to even; 0
 *   when amax = 0), as ggml's x86 `quantize_row_q8_0`.
 * - `quantize_xk` (Q8_K, `kp` a multiple of 256): per 256 values
 *   `iscale = 127/amax`, codes `nearest(x·iscale)`, `d = 1/iscale` (F32;
 *   0 when amax = 0), as `quantize_row_q8_K_ref` (whose sign convention,
 *   `iscale = −127/max`, negates codes and `d` alike).
 */
export function quantizeX(
  m: ModuleBuilder,
  ctx: Ctx,
  rule: "q8_0" | "q8_k",
): void {
  const per = rule === "q8_0" ? 1 : 8; // 32-blocks per scale
  const f = m.func(rule === "q8_0" ? "quantize_x" : "quantize_xk", [
    ["x", I],
    ["rows", I],
    ["kp", I],
    ["q8", I],
    ["q16", I],
    ["meta", I],
  ]);
  const { x, rows, kp, q8, q16, meta } = f.params;
  const [r, b, nb, ms, src, mrow, s0, s1, b2, mi] = f.locals(I, 10);
  const [amax, d, id, ft] = f.locals(F, 4);
  const [va, t, vid] = f.locals(V, 3);
  const cv = f.locals(V, 4);
  const code = (j: number) =>
    i16x8.narrow_i32x4_s(
      i32x4.trunc_sat_f32x4_s(
        f32x4.nearest(f32x4.mul(v128.load(get(src), j * 32), get(vid))),
      ),
      i32x4.trunc_sat_f32x4_s(
        f32x4.nearest(f32x4.mul(v128.load(get(src), j * 32 + 16), get(vid))),
      ),
    );
  /** Element offset of 32-block `blk` of row r. */
  const at = (blk: Local) =>
    i32.add(i32.mul(get(r), get(kp)), i32.shl(get(blk), c(5)));
  const metaAt = (array: number, idx: Code) =>
    i32.add(
      i32.add(get(mrow), i32.mul(get(ms), c(array))),
      i32.shl(idx, c(2)),
    );
  // max |x| over the 32-blocks [b, b + per) into amax
  const absMax: Code[] = [
    set(va, zero),
    forLoop(
      "a",
      b2,
      get(b),
      i32.add(get(b), c(per)),
      c(1),
      set(src, i32.add(get(x), i32.shl(at(b2), c(2)))),
      ...Array.from(
        { length: 8 },
        (_, j) =>
          set(va, f32x4.max(get(va), f32x4.abs(v128.load(get(src), j * 16)))),
      ),
    ),
    set(
      va,
      f32x4.max(
        get(va),
        i8x16.shuffle(get(va), get(va), lanes32([2, 3, 0, 1])),
      ),
    ),
    set(
      amax,
      f32.max(f32x4.extract_lane(get(va), 0), f32x4.extract_lane(get(va), 1)),
    ),
  ];
  const scales: Code[] = rule === "q8_0"
    ? [
      set(d, f16Round(f32.div(get(amax), f32.const(127)), ft, mi)),
      set(id, f32.const(0)),
      if_(f32.gt(get(amax), f32.const(0)), [
        set(id, f32.div(f32.const(127), get(amax))),
      ]),
    ]
    : [
      set(id, f32.const(0)),
      set(d, f32.const(0)),
      if_(f32.gt(get(amax), f32.const(0)), [
        set(id, f32.div(f32.const(127), get(amax))),
        set(d, f32.div(f32.const(1), get(id))),
      ]),
    ];
  // codes, i16 copies and code sums of 32-block b2
  const encode: Code[] = [
    set(src, i32.add(get(x), i32.shl(at(b2), c(2)))),
    ...cv.map((v, j) => set(v, code(j))),
    set(t, i8x16.narrow_i16x8_s(get(cv[0]), get(cv[1]))),
    set(va, i8x16.narrow_i16x8_s(get(cv[2]), get(cv[3]))),
    v128.store(i32.add(get(q8), at(b2)), get(t)),
    v128.store(i32.add(get(q8), at(b2)), get(va), 16),
    ...(ctx.relaxed
      // the split codes of Q8_0's relaxed dot: low 7 bits, then sign bits
      ? [
        v128.store(
          i32.add(get(q16), i32.shl(at(b2), c(1))),
          v128.and(get(t), i8x16c(0x7f)),
        ),
        v128.store(
          i32.add(get(q16), i32.shl(at(b2), c(1))),
          v128.and(get(va), i8x16c(0x7f)),
          16,
        ),
        v128.store(
          i32.add(get(q16), i32.shl(at(b2), c(1))),
          i8x16.shr_u(get(t), c(7)),
          32,
        ),
        v128.store(
          i32.add(get(q16), i32.shl(at(b2), c(1))),
          i8x16.shr_u(get(va), c(7)),
          48,
        ),
      ]
      // i16 codes per 16 elements: evens, then odds (see widenEvenOdd)
      : [0, 1].flatMap((h) => [
        v128.store(
          i32.add(get(q16), i32.shl(at(b2), c(1))),
          i8x16.shuffle(get(cv[2 * h]), get(cv[2 * h + 1]), EVENS),
          h * 32,
        ),
        v128.store(
          i32.add(get(q16), i32.shl(at(b2), c(1))),
          i8x16.shuffle(get(cv[2 * h]), get(cv[2 * h + 1]), ODDS),
          h * 32 + 16,
        ),
      ])),
    f32.store(metaAt(0, get(b2)), get(d)),
    set(
      s0,
      hsumI(
        i32x4.extadd_pairwise_i16x8_s(i16x8.add(get(cv[0]), get(cv[1]))),
        t,
      ),
    ),
    set(
      s1,
      hsumI(
        i32x4.extadd_pairwise_i16x8_s(i16x8.add(get(cv[2]), get(cv[3]))),
        t,
      ),
    ),
    i32.store(metaAt(1, get(b2)), i32.add(get(s0), get(s1))),
    i32.store(metaAt(2, i32.shl(get(b2), c(1))), get(s0)),
    i32.store(metaAt(2, i32.shl(get(b2), c(1))), get(s1), 4),
  ];
  f.body(
    set(nb, i32.shr_u(get(kp), c(5))),
    set(ms, i32.shl(get(nb), c(2))),
    forLoop(
      "r",
      r,
      c(0),
      get(rows),
      c(1),
      set(
        mrow,
        i32.add(get(meta), i32.mul(get(r), i32.mul(get(ms), c(META_ARRAYS)))),
      ),
      forLoop(
        "b",
        b,
        c(0),
        get(nb),
        c(per),
        ...absMax,
        ...scales,
        set(vid, f32x4.splat(get(id))),
        forLoop("e", b2, get(b), i32.add(get(b), c(per)), c(1), ...encode),
      ),
    ),
  );
}

// ------------------------------------------------------------ weights
