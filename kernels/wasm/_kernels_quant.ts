/**
 * Kernel source for the quantized dot products: activation quantization
 * (F32 rows → int8/int16 codes, llama.cpp's Q8_0 and Q8_K rules) and the
 * fused dequantize-dot of Q8_0, Q4_0, Q4_K and Q6_K weight rows. Weights
 * are read in ggml's block layout where they lie (no repacking, no copy
 * when they already live in kernel memory) and never widened to F32.
 *
 * Arithmetic follows llama.cpp's CPU path (ggml-cpu-quants.c, x86 SIMD
 * branch): activations of Q8_0/Q4_0 weights become Q8_0 blocks (per 32:
 * `d = f16(max|x|/127)`, codes `round(x·127/max|x|)`, ties to even), those
 * of Q4_K/Q6_K weights Q8_K blocks (per 256: `iscale = 127/max|x|`,
 * codes `round(x·iscale)`, `d = 1/iscale` in F32); products are exact
 * integer dot products per block (per super-block for the K-quants, with
 * their 6/8-bit sub-block scales and Q4_K's mins applied in integers), and
 * one F32 multiply-add per block (`d_w·d_x·dot`) accumulates the result.
 *
 * Four blocks (or sub-blocks) are dotted at a time: each gives an i32x4 of
 * partial sums, a transpose-add turns four of them into one vector of block
 * totals, and one multiply-add applies the four block scales at once.
 *
 * Integer products: weights with unsigned codes (Q4_0, Q4_K nibbles, Q6_K's
 * 6-bit codes before their −32 offset) use the relaxed-SIMD
 * `i16x8.relaxed_dot_i8x16_i7x16_s` (codes 0..63 are valid 7-bit
 * operands) with the offset removed through the integer code sums of x;
 * Q8_0 and the plain-SIMD variant widen to i16 and use `i32x4.dot_i16x8_s`.
 *
 * @module
 */

import {
  atomicAdd,
  atomicLoad,
  block,
  br,
  brIf,
  call,
  type Code,
  f32,
  f32x4,
  forLoop,
  type FuncBuilder,
  get,
  i16x8,
  i32,
  i32x4,
  i8x16,
  if_,
  type Local,
  loop,
  type ModuleBuilder,
  ret,
  select,
  seq,
  set,
  T,
  v128,
  type ValType,
} from "./_asm.ts";
import {
  c,
  type Ctx,
  F16_MASK,
  F16_SCALE,
  f16ToF32,
  f32x4c,
  hsum,
  i32x4c,
  i8x16c,
  lanes32,
  zero,
} from "./_kernels_util.ts";

const I = T.i32;
const F = T.f32;
const V = T.v128;

/**
 * Per-row metadata of quantized activations, in arrays of `nb` (blocks of
 * 32) 4-byte entries, `ms = nb·4` bytes apart: `xd` scales (f32; for Q8_K
 * activations every 32-block of a 256-block holds that block's scale) at
 * 0, `is32` code sums per 32 (i32) at `ms`, `is16` code sums per 16 (i32,
 * 2·nb entries) at `2·ms`. A row takes `4·ms`.
 */
export const META_ARRAYS = 4;

/** Lane sums of four i32x4 vectors as one vector (transpose-add). */
function hsum4i(p: Code[], t: Local[]): Code {
  return seq(
    set(t[0], p[0]),
    set(t[1], p[1]),
    set(t[2], p[2]),
    set(t[3], p[3]),
    set(
      t[0],
      i32x4.add(
        i8x16.shuffle(get(t[0]), get(t[1]), lanes32([0, 4, 1, 5])),
        i8x16.shuffle(get(t[0]), get(t[1]), lanes32([2, 6, 3, 7])),
      ),
    ),
    set(
      t[2],
      i32x4.add(
        i8x16.shuffle(get(t[2]), get(t[3]), lanes32([0, 4, 1, 5])),
        i8x16.shuffle(get(t[2]), get(t[3]), lanes32([2, 6, 3, 7])),
      ),
    ),
    set(
      t[0],
      i32x4.add(
        i8x16.shuffle(get(t[0]), get(t[2]), lanes32([0, 1, 4, 5])),
        i8x16.shuffle(get(t[0]), get(t[2]), lanes32([2, 3, 6, 7])),
      ),
    ),
  );
}

/**
 * Totals of four i16x8 vectors as one i32x4 `[Σq0, Σq1, Σq2, Σq3]`: adds
 * lanes pairwise at 16 bits (each |lane| must be ≤ 8191 so four of them fit
 * in an i16), then one `i32x4.extadd_pairwise_i16x8_s`.
 */
function hsum4i16(q: Code[], t: Local[]): Code {
  const pair = (a: Local, b: Local) =>
    i16x8.add(
      i8x16.shuffle(get(a), get(b), lanes32([0, 4, 1, 5])),
      i8x16.shuffle(get(a), get(b), lanes32([2, 6, 3, 7])),
    );
  return seq(
    set(t[0], q[0]),
    set(t[1], q[1]),
    set(t[2], q[2]),
    set(t[3], q[3]),
    // i32 lanes of t0 hold [q0, q1, q0, q1] pair sums; of t2, q2 and q3
    set(t[0], pair(t[0], t[1])),
    set(t[2], pair(t[2], t[3])),
    set(
      t[0],
      i32x4.extadd_pairwise_i16x8_s(
        i16x8.add(
          i8x16.shuffle(get(t[0]), get(t[2]), lanes32([0, 1, 4, 5])),
          i8x16.shuffle(get(t[0]), get(t[2]), lanes32([2, 3, 6, 7])),
        ),
      ),
    ),
  );
}

/** The sum of the four i32 lanes of a vector. */
function hsumI(v: Code, t: Local): Code {
  return seq(
    set(t, v),
    set(
      t,
      i32x4.add(get(t), i8x16.shuffle(get(t), get(t), lanes32([2, 3, 0, 1]))),
    ),
    i32.add(i32x4.extract_lane(get(t), 0), i32x4.extract_lane(get(t), 1)),
  );
}

/** Bytes 4k..4k+3 of `v` widened (unsigned) into the four i32 lanes. */
function bytesToI32(v: Code, first: number): Code {
  const z = 16; // index of a zero byte (from the second operand)
  const lanes: number[] = [];
  for (let i = 0; i < 4; i++) lanes.push(first + i, z, z, z);
  return i8x16.shuffle(v, zero, lanes);
}

/**
 * Widens 16 signed bytes to two i16x8 vectors with shifts (no shuffles):
 * the even-indexed bytes, then the odd-indexed ones. The i16 activation
 * codes are stored in the same order (per 16 elements: evens, then odds).
 */
function widenEvenOdd(v: Code): [Code, Code] {
  return [i16x8.shr_s(i16x8.shl(v, c(8)), c(8)), i16x8.shr_s(v, c(8))];
}

/** `Σ` of the i16x8 dot products of `w[j]` with x at `xp + off + 16j`. */
function dotI16(w: Code[], xp: Code, off: number): Code {
  let sum: Code | null = null;
  w.forEach((wv, j) => {
    const d = i32x4.dot_i16x8_s(wv, v128.load(xp, off + j * 16));
    sum = sum ? i32x4.add(sum, d) : d;
  });
  return sum!;
}

/**
 * Relaxed `Σ x8·q` over 16 bytes as i16 pair sums (`q` in 0..127; the
 * caller keeps each lane's total below 2^15).
 */
function rdot16(x: Code, q: Code): Code {
  return i16x8.relaxed_dot_i8x16_i7x16_s(x, q);
}

/** i16 pair sums → i32 lane sums. */
function widenSums(v: Code): Code {
  return i32x4.extadd_pairwise_i16x8_s(v);
}

// ------------------------------------------------------------ activations

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
function quantizeX(
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

/** The locals a dot-product body works with. */
interface Dot {
  f: FuncBuilder;
  ctx: Ctx;
  /** Current weight block, as stored. */
  wb: Local;
  /** Current x codes (i8) and (i16) for this block. */
  x8: Local;
  x16: Local;
  /** Current x metadata (xd entry of this block). */
  xm: Local;
  /** Bytes between metadata arrays. */
  ms: Local;
  /** Current entry of the per-16 code sums (advances twice as fast as `xm`). */
  is16: Local;
  /** f32x4 accumulator (lanes summed at the end). */
  acc: Local;
  /** f32 scalar accumulator. */
  accs: Local;
  v: Local[];
  /** The 16-byte vectors of an 8-block group (`main8`). */
  wv: Local[];
  p: Local[];
  t: Local[];
  s: Local[];
  n: Local[];
}

/** One weight format's dot product: its block size and loop body emitter. */
interface QuantFormat {
  name: string;
  /** Elements per (super-)block. */
  elems: number;
  /** Bytes per (super-)block as stored (and as read). */
  bytes: number;
  /** Which activation rule its x codes follow. */
  act: "q8_0" | "q8_k";
  /** Blocks handled per main-loop iteration (4 for the 32-element formats). */
  group: number;
  /** Which x arrays (besides the metadata at `xm`) the variant reads. */
  reads(ctx: Ctx): ("x8" | "x16" | "is16")[];
  /** Code for `group` blocks; pointers advance outside. */
  main(d: Dot): Code[];
  /** Code for one leftover block (formats with `group > 1`). */
  single?(d: Dot): Code[];
  /**
   * Code for 8 blocks, run before `main` where given (for formats whose 8
   * blocks are a whole number of 16-byte vectors, so its loads stay
   * aligned when the row is).
   */
  main8?(d: Dot): Code[];
  /** Whether `main` sums a min term into `v[14]`, subtracted at the end (Q4_K). */
  mins?: boolean;
}

/** Address of metadata array `a` (see {@link META_ARRAYS}) at the current block. */
function metaPtr(d: Dot, array: number): Code {
  return array === 0
    ? get(d.xm)
    : i32.add(get(d.xm), i32.mul(get(d.ms), c(array)));
}

/**
 * Loads the f16 scales of four consecutive stored blocks of `bytes` bytes
 * (each block starts with its scale) into `v[8..11]`: the 16-byte load
 * for scale j starts at `bytes·j − 4j − 2`, which puts the scale in
 * halfword 2j + 1 — the upper half of i32 lane j — so three blends (see
 * {@link gatherScales}) collect them without lane inserts or widening. The
 * first load starts 2 bytes before the block: weights lie at 64 KiB or
 * above in kernel memory, so it stays inside.
 */
function loadScales(d: Dot, bytes: number): Code[] {
  const sp = d.n[2];
  return [
    set(sp, i32.sub(get(d.wb), c(2))),
    ...d.v.slice(8, 12).map((v, j) =>
      set(v, v128.load(get(sp), (bytes - 4) * j))
    ),
  ];
}

/** Lanes of `a`, but halfwords `fromB` of `b` (a blend). */
function blend16(a: Code, b: Code, fromB: number[]): Code {
  return i8x16.shuffle(
    a,
    b,
    Array.from({ length: 16 }, (_, i) => fromB.includes(i >> 1) ? 16 + i : i),
  );
}

/**
 * The four scales loaded by {@link loadScales}, times x's four block
 * scales, as f32x4: the products of two f16 values are exact in F32.
 */
function gatherScales(d: Dot): Code {
  const S = d.v.slice(8, 12);
  return seq(
    set(S[0], blend16(get(S[0]), get(S[1]), [3])),
    set(S[2], blend16(get(S[2]), get(S[3]), [7])),
    f32x4.mul(
      f32x4.mul(
        v128.and(
          i32x4.shr_s(blend16(get(S[0]), get(S[2]), [5, 7]), c(3)),
          i32x4c(F16_MASK),
        ),
        f32x4c(F16_SCALE),
      ),
      v128.load(metaPtr(d, 0)),
    ),
  );
}

/** The f16 scale of the current stored block as f32. */
function scale1(d: Dot): Code {
  return f16ToF32(i32.load16_u(get(d.wb)));
}

/**
 * `acc += f32(dots) · (d_w · d_x)` for four blocks (scales loaded by
 * {@link loadScales}): one rounding per block, as in ggml's `d_w·d_x·dot`
 * multiply-add.
 */
function addBlocks4(d: Dot, dots: Code): Code {
  return set(
    d.acc,
    d.ctx.madd(f32x4.convert_i32x4_s(dots), gatherScales(d), get(d.acc)),
  );
}

/**
 * Relaxed Q8_0: i32 lane sums of `Σ w·x` for the block at `wb + off` into
 * `dst`, from the split x codes at `x16 + xoff` (`x = x7 − 128·s`, both
 * 7-bit operands of the i8 × i7 dot; the signed weight codes are the i8
 * side). The i16 pair sums of its x86 lowering stay below 2^15 (|w·x7|
 * pairs ≤ 2·128·127 = 32512), so the sums are exact.
 */
function q8SplitDot(
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
function probeKernel(m: ModuleBuilder): void {
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

/** `t[0] −= 128·Σx` for four blocks whose code sums lie at `is32 + off`. */
function q8uOffset(d: Dot, off: number): Code {
  return set(
    d.t[0],
    i32x4.sub(
      get(d.t[0]),
      i32x4.shl(v128.load(metaPtr(d, 1), off), c(7)),
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
interface Q8Way {
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
  fix4: (d, off) => [q8uOffset(d, off)],
  fix1: (d, total) => i32.sub(total, i32.shl(i32.load(metaPtr(d, 1)), c(7))),
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
function q8Format(name: string, way: Q8Way): QuantFormat {
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
      set(
        d.accs,
        f32.add(
          get(d.accs),
          f32.mul(
            f32.convert_i32_s(way.fix1(d, hsumI(get(d.p[0]), d.t[0]))),
            f32.mul(scale1(d), f32.load(metaPtr(d, 0))),
          ),
        ),
      ),
    ],
  };
}

const Q8_0 = q8Format("q8_0", Q8_SIGNED);

/**
 * Q8_0 for engines that pass {@link U8_DOT_PROBE} (relaxed variant only):
 * same blocks and results as {@link Q8_0}, x read as plain i8 codes.
 */
const Q8_0U = q8Format("q8_0u", Q8_UNSIGNED);

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

/**
 * Q4_0 as stored: 18-byte blocks of an f16 scale and 16 bytes of nibbles
 * (low nibbles are elements 0..15, high 16..31). Value `d·(q − 8)`.
 */
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
  if (d.ctx.relaxed) {
    // Σ (q − 8)·x = Σ q·x − 8·Σ x
    out.push(
      set(
        d.t[0],
        i32x4.sub(
          get(d.t[0]),
          i32x4.shl(v128.load(metaPtr(d, 1), 16 * h), c(3)),
        ),
      ),
    );
  }
  out.push(...addHalf(d, V, h, 1));
  return out;
}

const Q4_0: QuantFormat = {
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
    if (d.ctx.relaxed) {
      // Σ (q − 8)·x = Σ q·x − 8·Σ x
      out.push(
        set(
          d.t[0],
          i32x4.sub(get(d.t[0]), i32x4.shl(v128.load(metaPtr(d, 1)), c(3))),
        ),
      );
    }
    out.push(addBlocks4(d, get(d.t[0])));
    return out;
  },
  single: (d) => [
    ...q4_0Block(d, v128.load(get(d.wb), 2), 0, 0),
    set(
      d.accs,
      f32.add(
        get(d.accs),
        f32.mul(
          f32.convert_i32_s(
            d.ctx.relaxed
              ? i32.sub(
                hsumI(widenSums(get(d.v[1])), d.t[0]),
                i32.shl(i32.load(metaPtr(d, 1)), c(3)),
              )
              : hsumI(get(d.v[1]), d.t[0]),
          ),
          f32.mul(scale1(d), f32.load(metaPtr(d, 0))),
        ),
      ),
    ),
  ],
};

/**
 * Q4_K super-block: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, then
 * 4 × 32 bytes of nibbles (sub-block 2c in the low nibbles of the c-th 32
 * bytes, 2c+1 in the high ones). With Q8_K activations (one scale `d_x`
 * per 256) the super-block contributes, as in ggml's
 * `ggml_vec_dot_q4_K_q8_K`, `(d_x·d)·Σ_j sc_j·Σ q·x8 − (d_x·dmin)·Σ_j
 * m_j·Σ x8` with both sums over j in integers (`x8` the codes).
 */
const Q4_K: QuantFormat = {
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
          f32x4.splat(f32.mul(get(dx), f16ToF32(i32.load16_u(get(d.wb))))),
          get(d.acc),
        ),
      ),
      // the min term is subtracted at the end (v[14] holds its total)
      set(
        d.v[14],
        d.ctx.madd(
          f32x4.convert_i32x4_s(get(imin)),
          f32x4.splat(
            f32.mul(get(dx), f16ToF32(i32.load16_u(get(d.wb), 2))),
          ),
          get(d.v[14]),
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
 * `ggml_vec_dot_q6_K_q8_K`).
 */
const Q6_K: QuantFormat = {
  name: "q6_k",
  elems: 256,
  bytes: 210,
  act: "q8_k",
  group: 1,
  reads: (ctx) => [ctx.relaxed ? "x8" : "x16", "is16"],
  main: (d) => {
    const SC = d.v[13];
    const isum = d.v[12];
    const out: Code[] = [
      set(SC, v128.load(get(d.wb), 192)),
      set(isum, zero),
    ];
    for (let h = 0; h < 2; h++) {
      const ql = d.v.slice(6, 10);
      const qh = d.v.slice(10, 12);
      for (let i = 0; i < 4; i++) {
        out.push(set(ql[i], v128.load(get(d.wb), h * 64 + i * 16)));
      }
      for (let i = 0; i < 2; i++) {
        out.push(set(qh[i], v128.load(get(d.wb), 128 + h * 32 + i * 16)));
      }
      for (let k = 0; k < 2; k++) {
        for (let gq = 0; gq < 4; gq++) {
          const g = 4 * k + gq; // group within the half
          const i = g >> 1;
          const lo = g & 1;
          const grp = 8 * h + g;
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
          out.push(set(d.v[0], v128.or(low4, high2)));
          if (d.ctx.relaxed) {
            out.push(
              // |Σ| ≤ 2·63·127 < 2^15 per i16 lane
              set(
                d.p[gq],
                widenSums(rdot16(v128.load(get(d.x8), 16 * grp), get(d.v[0]))),
              ),
            );
          } else {
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
        }
        const grp0 = 8 * h + 4 * k;
        out.push(hsum4i(d.p.slice(0, 4).map(get), d.t));
        if (d.ctx.relaxed) {
          // Σ (q − 32)·x = Σ q·x − 32·Σ x, per group of 16
          out.push(
            set(
              d.t[0],
              i32x4.sub(
                get(d.t[0]),
                i32x4.shl(v128.load(get(d.is16), 4 * grp0), c(5)),
              ),
            ),
          );
        }
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
    out.push(
      set(
        d.acc,
        d.ctx.madd(
          f32x4.convert_i32x4_s(get(isum)),
          f32x4.splat(
            f32.mul(
              f32.load(metaPtr(d, 0)),
              f16ToF32(i32.load16_u(get(d.wb), 208)),
            ),
          ),
          get(d.acc),
        ),
      ),
    );
    return out;
  },
};

const FORMATS: QuantFormat[] = [Q8_0, Q4_0, Q4_K, Q6_K];

/**
 * The activation rule (`"q8_0"`: Q8_0 blocks of 32, `"q8_k"`: Q8_K blocks
 * of 256) whose quantizer (`quantize_x` / `quantize_xk`) a weight format's
 * kernels read.
 */
export function activationRule(name: string): "q8_0" | "q8_k" {
  return [...FORMATS, Q8_0U].find((x) => x.name === name)!.act;
}

/**
 * Bytes ahead of the block being read at which the dot products touch the
 * weights (one 4-byte load per 64-byte line). WebAssembly has no prefetch
 * instruction, and the integer arithmetic per weight byte is heavy enough
 * that the core's own look-ahead covers few cache lines, so without these
 * loads reading from memory and computing take turns instead of
 * overlapping: a 4096 × 4096 Q8_0 matvec measured 1.67 ms without them and
 * 1.04 ms with them, against 0.84 ms to stream its bytes
 * (`deno task bench:compare --only matvec`). Since jobs read their rows in
 * several streams (`name_mm`'s `streams`) the gain is smaller (1.15 →
 * 1.10 ms) and small jobs run faster without them, so kernels/fast turns
 * them on for large jobs only.
 */
export const PREFETCH_BYTES = 1024;

/**
 * `name_dot(w0, nblk, x8, x16, xm, ms, lim) → f32`: one weight row · one x
 * row; with `nr` > 1, `name_dotN(w0, …, wN−1, nblk, …) → N × f32`: `nr`
 * weight rows (anywhere) · one x row, for the formats of 32-element
 * blocks, with the same arithmetic on each row. The rows' 8- and 4-block
 * groups alternate, so a core reads several rows' bytes at once:
 * `name_mm` takes `NR` rows at a time from as many of its weight streams,
 * and SmolLM-135M Q8_0 decode on 2 threads went from 77–84 to 91 tok/s
 * with pairs (alternating builds), while from cache a 576-wide row costs
 * the same either way (39 ns). Touch loads (see {@link PREFETCH_BYTES})
 * stay below `lim`.
 */
function dotFunction(
  m: ModuleBuilder,
  ctx: Ctx,
  q: QuantFormat,
  nr = 1,
): FuncBuilder {
  if (nr > 1 && !(q.main8 && q.single)) {
    throw new Error(`No ${nr}-row dot for ${q.name}`);
  }
  const f = m.func(nr === 1 ? `${q.name}_dot` : `${q.name}_dot${nr}`, [
    ...Array.from({ length: nr }, (_, i) => [`w${i}`, I] as [string, ValType]),
    ["nblk", I],
    ["x8", I],
    ["x16", I],
    ["xm", I],
    ["ms", I],
    ["lim", I],
  ], Array.from({ length: nr }, () => F));
  const P = f.params;
  const [touch, ahead] = f.locals(I, 2);
  const shared = {
    f,
    ctx,
    x8: P.x8,
    x16: P.x16,
    xm: P.xm,
    ms: P.ms,
    is16: f.local(I),
    v: f.locals(V, 15),
    wv: q.main8 ? f.locals(V, (q.bytes * 8) / 16) : [],
    p: f.locals(V, 4),
    t: f.locals(V, 4),
    s: f.locals(F, 4),
    n: f.locals(I, 3),
  };
  const rows: Dot[] = Array.from({ length: nr }, (_, i) => ({
    ...shared,
    wb: P[`w${i}`],
    acc: f.local(V),
    accs: f.local(F),
  }));
  const [b, i] = shared.n;
  // One load per 64-byte line of the `bytes` row `d` reads per iteration,
  // at PREFETCH_BYTES ahead (or at the block itself near the end of
  // memory). Their sum joins the results times zero, so the loads stay.
  const prefetch = (d: Dot, bytes: number): Code[] => [
    set(ahead, i32.add(get(d.wb), c(PREFETCH_BYTES))),
    set(ahead, select(get(ahead), get(d.wb), i32.lt_u(get(ahead), get(P.lim)))),
    ...Array.from(
      { length: Math.ceil(bytes / 64) },
      (_, k) => set(touch, i32.add(get(touch), i32.load(get(ahead), k * 64))),
    ),
  ];
  const xBlocks = q.elems / 32;
  // only the pointers this format's variant reads move
  const reads = q.reads(ctx);
  const advance = (blocks: number): Code[] => [
    ...rows.map((d) => set(d.wb, i32.add(get(d.wb), c(q.bytes * blocks)))),
    ...(reads.includes("x8")
      ? [set(P.x8, i32.add(get(P.x8), c(q.elems * blocks)))]
      : []),
    ...(reads.includes("x16")
      ? [set(P.x16, i32.add(get(P.x16), c(q.elems * 2 * blocks)))]
      : []),
    set(P.xm, i32.add(get(P.xm), c(4 * xBlocks * blocks))),
    ...(reads.includes("is16")
      ? [
        set(shared.is16, i32.add(get(shared.is16), c(8 * xBlocks * blocks))),
      ]
      : []),
  ];
  const each = (code: (d: Dot) => Code[]): Code[] => rows.flatMap(code);
  const result = (d: Dot): Code => {
    const sum = f32.add(hsum(get(d.acc), shared.t[0]), get(d.accs));
    return f32.add(
      q.mins ? f32.sub(sum, hsum(get(shared.v[14]), shared.t[1])) : sum,
      f32.mul(f32.convert_i32_s(get(touch)), f32.const(0)),
    );
  };
  f.body(
    set(touch, c(0)),
    set(shared.is16, i32.add(get(P.xm), i32.mul(get(P.ms), c(2)))),
    ...each((d) => [set(d.acc, zero), set(d.accs, f32.const(0))]),
    ...(q.mins ? [set(shared.v[14], zero)] : []),
    set(b, get(P.nblk)),
    ...(q.main8
      ? [
        forLoop(
          "g8",
          i,
          c(8),
          i32.add(get(b), c(1)),
          c(8),
          ...each((d) => [...prefetch(d, q.bytes * 8), ...q.main8!(d)]),
          ...advance(8),
        ),
        if_(i32.and(get(b), c(4)), [...each((d) => q.main(d)), ...advance(4)]),
      ]
      : [
        if_(i32.ge_s(get(b), c(q.group)), [
          forLoop(
            "g",
            i,
            c(q.group),
            i32.add(get(b), c(1)),
            c(q.group),
            ...(q.group === 1 ? prefetch(rows[0], q.bytes) : []),
            ...q.main(rows[0]),
            ...advance(q.group),
          ),
        ]),
      ]),
    ...(q.single
      ? [
        forLoop(
          "s",
          i,
          c(0),
          i32.and(get(b), c(q.group - 1)),
          c(1),
          ...each((d) => q.single!(d)),
          ...advance(1),
        ),
      ]
      : []),
    ...rows.map(result),
  );
  return f;
}

/** Bytes {@link touchKernel} reads between two looks at the job sequence word. */
export const TOUCH_STEP = 4096;

/**
 * `touch(list, n, seqAddr, seq, lim) → i32`: reads one i32 per 64-byte
 * line of `n` byte ranges (pairs of i32 `ptr, bytes` at `list`), each from
 * its end down to its start, so that a thread with nothing to do pulls the
 * weights the next job will probably read into its caches. It stops once
 * the i32 at `seqAddr` differs from `seq` (a new job was posted), looking
 * every {@link TOUCH_STEP} bytes, and reads only below `lim`. Returns the
 * sum of what it read (so the loads stay).
 */
function touchKernel(m: ModuleBuilder): void {
  const f = m.func("touch", [
    ["list", I],
    ["n", I],
    ["seqAddr", I],
    ["seq", I],
    ["lim", I],
  ], [I]);
  const P = f.params;
  const [r, lo, p, stop, acc] = f.locals(I, 5);
  const at = (k: number) =>
    i32.load(i32.add(get(P.list), i32.shl(get(r), c(3))), k);
  f.body(
    set(acc, c(0)),
    forLoop(
      "range",
      r,
      c(0),
      get(P.n),
      c(1),
      set(lo, at(0)),
      set(p, i32.add(get(lo), at(4))),
      // a range that wraps or passes lim is cut at lim
      set(p, select(get(P.lim), get(p), i32.lt_u(get(p), get(lo)))),
      set(p, select(get(P.lim), get(p), i32.gt_u(get(p), get(P.lim)))),
      // (the last line read may start up to 63 bytes below the range)
      set(lo, select(get(lo), get(p), i32.ge_u(get(lo), c(4096)))),
      block(
        "whole",
        loop(
          "step",
          brIf("whole", i32.ge_u(get(lo), get(p))),
          if_(i32.ne(atomicLoad(get(P.seqAddr)), get(P.seq)), [
            get(acc),
            ret,
          ]),
          set(stop, i32.sub(get(p), c(TOUCH_STEP))),
          set(
            stop,
            select(
              get(lo),
              get(stop),
              i32.or(
                i32.gt_u(get(stop), get(p)),
                i32.lt_u(get(stop), get(lo)),
              ),
            ),
          ),
          loop(
            "line",
            set(p, i32.sub(get(p), c(64))),
            set(acc, i32.add(get(acc), i32.load(get(p)))),
            brIf("line", i32.gt_u(get(p), get(stop))),
          ),
          br("step"),
        ),
      ),
    ),
    get(acc),
  );
}

/** Bytes readable past `lim` that the quantized kernels may read (see `name_mm`). */
export const READ_MARGIN = 4096;

/**
 * Rows per `name_dotN` call in `name_mm` (the formats of 32-element
 * blocks). SmolLM-135M Q8_0 decode measured 90–95 tok/s with 2, 94 with 3,
 * 95–97 with 4 (alternating builds: no clear gain past 2, and each row
 * count adds a function to the module).
 */
const NR = 2;

/** Bytes of one segment descriptor of a `name_mm` job. */
export const SEGMENT_BYTES = 16;

/**
 * Adds activation quantization (`quantize_x`, `quantize_xk`), `touch`,
 * `probe_u8dot` (relaxed variant) and, per weight format (and `q8_0u` in
 * the relaxed variant), `name_dot`, `name_dot2` (32-element blocks; see
 * `NR`) and
 * the threaded driver
 * `name_mm(desc, nseg, q8, q16, meta, rows, kp, counter, chunk, total, lim,
 * top, streams)`.
 *
 * A job multiplies one quantized x (`rows` rows of `kp` inputs) by `nseg`
 * weights whose output rows, concatenated, number `total`. Segment `s` is
 * described at `desc + 16·s` by four i32: the weight (ggml layout), its
 * output `y` (`rows × outF` f32), its bias (`outF` f32) and `outF`. Every
 * thread of the job runs the same call but for `top`: the output rows are
 * cut into chunks of `chunk` rows (fewer than 2^16 − threads of them), and
 * each thread takes one chunk at a time until none are left, from the
 * bottom (`top` = 0) or from the top (`top` = 1). The shared i32 `counter`
 * (the caller zeroes it) counts chunks taken from the bottom in its low
 * half and from the top in its high half; one atomic add takes a chunk,
 * and the chunk exists while the two counts together stay below the
 * number of chunks. A thread that starts late or runs slow takes fewer.
 * Workers take from the top, where the idle worker's touch list (see
 * `touchAfter` in kernels/fast/_dispatch.ts) has pulled the rows into its
 * caches; the caller from the bottom. Within a chunk (within each
 * segment it spans) a thread reads rows from `streams` (≥ 1) evenly spaced
 * places in turn, so that the core's prefetchers follow that many streams
 * of weight bytes; formats with a `name_dot2` take those rows `NR`
 * at a time. `lim`: touch loads (see {@link PREFETCH_BYTES}) read only below it, so
 * it must be at most the memory's size less {@link READ_MARGIN} (0 turns
 * them off).
 */
export function quantKernels(m: ModuleBuilder, ctx: Ctx): void {
  touchKernel(m);
  if (ctx.relaxed) probeKernel(m);
  quantizeX(m, ctx, "q8_0");
  quantizeX(m, ctx, "q8_k");
  for (const q of ctx.relaxed ? [...FORMATS, Q8_0U] : FORMATS) {
    const dot = dotFunction(m, ctx, q);
    const dotN = q.main8 && q.single && q.elems === 32
      ? dotFunction(m, ctx, q, NR)
      : undefined;
    const f = m.func(`${q.name}_mm`, [
      ["desc", I],
      ["nseg", I],
      ["q8", I],
      ["q16", I],
      ["meta", I],
      ["rows", I],
      ["kp", I],
      ["counter", I],
      ["chunk", I],
      ["total", I],
      ["lim", I],
      ["top", I],
      ["streams", I],
    ]);
    const P = f.params;
    const [o, r, nblk, rowBytes, ms, start, end, seg, base, stop] = f
      .locals(I, 10);
    const [nch, old, taken, s0, nn, hh, k, row] = f.locals(I, 8);
    const [w, y, bp, outF] = f.locals(I, 4);
    const segField = (k: number) =>
      i32.load(i32.add(get(P.desc), i32.shl(get(seg), c(4))), 4 * k);
    const kEnd = f.local(I);
    const rowsN = f.locals(I, NR);
    const resN = f.locals(F, NR);
    // the i-th row of a group exists (in the span)
    const exists = (l: Local, i: number): Code =>
      i32.and(
        i32.lt_u(i32.add(get(k), c(i)), get(kEnd)),
        i32.lt_u(get(l), get(nn)),
      );
    // an empty operand: `set(l, nothing)` pops a value a call left on the
    // stack (dotN returns NR results; the last comes off first)
    const nothing: Code = () => {};
    // the k-th row of the span in stream order: streams take turns
    const perm = (kk: Code): Code =>
      i32.add(
        i32.mul(i32.rem_u(kk, get(P.streams)), get(hh)),
        i32.div_u(kk, get(P.streams)),
      );
    const rowAddr = (l: Local): Code =>
      i32.add(get(w), i32.mul(i32.sub(get(l), get(base)), get(rowBytes)));
    const xArgs = (): Code[] => [
      get(nblk),
      i32.add(get(P.q8), i32.mul(get(r), get(P.kp))),
      i32.add(get(P.q16), i32.shl(i32.mul(get(r), get(P.kp)), c(1))),
      i32.add(
        get(P.meta),
        i32.mul(get(r), i32.mul(get(ms), c(META_ARRAYS))),
      ),
      get(ms),
      get(P.lim),
    ];
    // y[r, l] = v + bias[l]
    const store = (l: Local, v: Code): Code =>
      f32.store(
        i32.add(
          get(y),
          i32.shl(
            i32.add(
              i32.mul(get(r), get(outF)),
              i32.sub(get(l), get(base)),
            ),
            c(2),
          ),
        ),
        f32.add(
          v,
          f32.load(
            i32.add(get(bp), i32.shl(i32.sub(get(l), get(base)), c(2))),
          ),
        ),
      );
    const oneRow = (l: Local): Code =>
      forLoop(
        "r",
        r,
        c(0),
        get(P.rows),
        c(1),
        store(l, call(dot, rowAddr(l), ...xArgs())),
      );
    f.body(
      set(nblk, i32.div_u(get(P.kp), c(q.elems))),
      set(ms, i32.shl(i32.shr_u(get(P.kp), c(5)), c(2))),
      set(rowBytes, i32.mul(get(nblk), c(q.bytes))),
      set(
        nch,
        i32.div_u(
          i32.add(get(P.total), i32.sub(get(P.chunk), c(1))),
          get(P.chunk),
        ),
      ),
      block(
        "done",
        loop(
          "grab",
          // low half: chunks taken from the bottom, high half: from the top
          set(
            old,
            atomicAdd(
              get(P.counter),
              select(c(0x10000), c(1), get(P.top)),
            ),
          ),
          brIf(
            "done",
            i32.ge_u(
              i32.add(
                i32.and(get(old), c(0xffff)),
                i32.shr_u(get(old), c(16)),
              ),
              get(nch),
            ),
          ),
          set(
            taken,
            select(
              i32.sub(i32.sub(get(nch), c(1)), i32.shr_u(get(old), c(16))),
              i32.and(get(old), c(0xffff)),
              get(P.top),
            ),
          ),
          set(start, i32.mul(get(taken), get(P.chunk))),
          set(end, i32.add(get(start), get(P.chunk))),
          set(
            end,
            select(get(P.total), get(end), i32.gt_s(get(end), get(P.total))),
          ),
          // the segment holding `start`
          set(seg, c(0)),
          set(base, c(0)),
          block(
            "found",
            loop(
              "find",
              set(outF, segField(3)),
              brIf(
                "found",
                i32.lt_s(get(start), i32.add(get(base), get(outF))),
              ),
              set(base, i32.add(get(base), get(outF))),
              set(seg, i32.add(get(seg), c(1))),
              br("find"),
            ),
          ),
          // rows [start, end), one segment at a time
          set(o, get(start)),
          loop(
            "span",
            set(w, segField(0)),
            set(y, segField(1)),
            set(bp, segField(2)),
            set(outF, segField(3)),
            set(stop, i32.add(get(base), get(outF))),
            set(
              stop,
              select(get(end), get(stop), i32.lt_s(get(end), get(stop))),
            ),
            // rows from the two halves of the span in turn: two streams
            // of weight bytes for the core's prefetchers instead of one
            set(s0, get(o)),
            set(nn, i32.sub(get(stop), get(o))),
            set(
              hh,
              i32.div_u(
                i32.add(get(nn), i32.sub(get(P.streams), c(1))),
                get(P.streams),
              ),
            ),
            set(kEnd, i32.mul(get(hh), get(P.streams))),
            dotN
              ? forLoop(
                "o",
                k,
                c(0),
                get(kEnd),
                c(NR),
                ...rowsN.map((l, i) => set(l, perm(i32.add(get(k), c(i))))),
                // all NR rows exist: one dotN call; else those that do
                if_(
                  rowsN.map((l, i) => exists(l, i)).reduce((x, y) =>
                    i32.and(x, y)
                  ),
                  [
                    ...rowsN.map((l) => set(l, i32.add(get(l), get(s0)))),
                    forLoop(
                      "r",
                      r,
                      c(0),
                      get(P.rows),
                      c(1),
                      call(dotN, ...rowsN.map(rowAddr), ...xArgs()),
                      ...resN.slice().reverse().map((l) => set(l, nothing)),
                      ...rowsN.map((l, i) => store(l, get(resN[i]))),
                    ),
                  ],
                  rowsN.map((l, i) =>
                    if_(exists(l, i), [
                      set(row, i32.add(get(l), get(s0))),
                      oneRow(row),
                    ])
                  ),
                ),
              )
              : forLoop(
                "o",
                k,
                c(0),
                get(kEnd),
                c(1),
                set(row, perm(get(k))),
                if_(i32.lt_u(get(row), get(nn)), [
                  set(row, i32.add(get(row), get(s0))),
                  oneRow(row),
                ]),
              ),
            set(o, get(stop)),
            // next segment, if the chunk goes on
            set(base, i32.add(get(base), get(outF))),
            set(seg, i32.add(get(seg), c(1))),
            brIf("span", i32.lt_s(get(o), get(end))),
          ),
          br("grab"),
        ),
      ),
    );
  }
}
