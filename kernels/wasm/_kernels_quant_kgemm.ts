/**
 * Kernel source for Q4_K and Q6_K weights times many x rows (prefill,
 * batches) as an integer outer-product GEMM (relaxed variant), in the
 * manner of `_kernels_quant_igemm.ts` for Q4_0: the x rows' Q8_K codes are
 * packed once per job (panels of {@link QK_MR} rows, per 4 consecutive
 * codes one i32 per row), each weight panel of {@link QK_NR} outputs is
 * unpacked once into codes (0..15 for Q4_K, 0..63 for Q6_K, both valid
 * 7-bit operands of `i16x8.relaxed_dot_i8x16_i7x16_s`) and scales, and
 * every x panel runs over it: one broadcast of four x codes times four
 * outputs' four codes per instruction.
 *
 * Bits: the K-quant dot kernels (`_kernels_quant_k.ts`, relaxed) keep four
 * i32 lanes per super-block and four F32 lanes across the row, summed at
 * the end as `(l0 + l2) + (l1 + l3)`. Here each output keeps the same four
 * lanes (four running F32 sums per output, in scratch) and each lane gets
 * the same integer per super-block:
 *
 * - Q4_K: lane i holds sub-blocks i and i + 4, `sc·Σq·x` of both, and the
 *   min term `m·Σx` of both in a second set of four sums, subtracted at the
 *   end (as `q4_k_dot`'s `accm`).
 * - Q6_K: lane i holds quarter i (codes 4i..4i+3) of every group of 16, each
 *   times its group's scale, less `32·Σ sc·Σx` of groups 2i, 2i+1, 8+2i,
 *   9+2i (as `q6kRelaxed` spreads them).
 *
 * The F32 steps are the same operations in the same order (one fused
 * multiply-add per super-block and lane, the lane sums, the +0 terms and
 * the bias), so every row's results are bit for bit those of the dot
 * kernels, whatever the number of rows.
 *
 * @module
 */

import {
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
  type ModuleBuilder,
  select,
  set,
  T,
  v128,
} from "./_asm.ts";
import {
  c,
  type Ctx,
  f16ToF32NoSubnormal,
  i32x4c,
  i8x16c,
  lanes32,
  zero,
} from "./_kernels_util.ts";
import {
  bytesToI32,
  MICRO_PARAMS,
  quantGemmDriver,
} from "./_kernels_quant_util.ts";

/** x rows per packed panel (the microkernels' rows). */
export const QK_MR = 4;
/** Outputs per unpacked weight panel. */
export const QK_NR = 8;

/** Panel scale bytes per super-block, Q4_K: sc (8 × 8 i16 pairs), m (4 × 8 i16 pairs), d, dmin (8 f32). */
const Q4K_META = 448;
/** Panel scale bytes per super-block, Q6_K: scales as i16 pairs (16 × 8 and 8 × 8 i32), d (8 f32). */
const Q6K_META = 800;
/**
 * Microkernel scratch: four F32 lane sums (and four min sums) per row and
 * output, one i32 vector pair per row, and (Q4_K) per row x's paired code
 * sums and the scales times d_x.
 */
const MICRO_SCRATCH = 9 * QK_MR * 32 + QK_MR * 16 + QK_MR * 64;

const I = T.i32;
const V = T.v128;

/** Scratch bytes one thread needs for inputs of `inF` (a multiple of 256). */
export function kquantGemmScratchBytes(inF: number): number {
  return inF * QK_NR + (inF / 256) * Q6K_META + MICRO_SCRATCH + 64;
}

/** Bytes of x packed for the K-quant GEMM (`rows × inF` codes, whole panels). */
export function kquantGemmPackedXBytes(rows: number, inF: number): number {
  return Math.ceil(rows / QK_MR) * QK_MR * inF;
}

/** Stores the 4 × 4 transpose (by i32 words) of `a[0..3]` at `to + off + 32j`, j = 0..3. */
export function transpose4(
  a: Local[],
  t: Local[],
  to: Local,
  off: number,
): Code[] {
  return [
    set(t[0], i8x16.shuffle(get(a[0]), get(a[1]), lanes32([0, 4, 1, 5]))),
    set(t[1], i8x16.shuffle(get(a[0]), get(a[1]), lanes32([2, 6, 3, 7]))),
    set(t[2], i8x16.shuffle(get(a[2]), get(a[3]), lanes32([0, 4, 1, 5]))),
    set(t[3], i8x16.shuffle(get(a[2]), get(a[3]), lanes32([2, 6, 3, 7]))),
    ...([[0, 2, [0, 1, 4, 5]], [0, 2, [2, 3, 6, 7]], [1, 3, [0, 1, 4, 5]], [
      1,
      3,
      [2, 3, 6, 7],
    ]] as [number, number, number[]][]).map(([x, y, l], j) =>
      v128.store(
        get(to),
        i8x16.shuffle(get(t[x]), get(t[y]), lanes32(l)),
        off + 32 * j,
      )
    ),
  ];
}

/** The row addresses of a panel's 8 outputs for the current super-block (rows past `n` read row 0). */
export function rowAddrs(
  rows: Local[],
  blk: Local,
  rowBytes: Local,
  n: Local,
): Code[] {
  return rows.map((l, r) =>
    set(
      l,
      i32.add(
        get(blk),
        select(i32.mul(get(rowBytes), c(r)), c(0), i32.lt_s(c(r), get(n))),
      ),
    )
  );
}

/** Parameters of the panel kernels: `(w, rowBytes, n, nsb, dst, dm)`. */
export const PANEL_PARAMS: [string, typeof I][] = [
  ["w", I],
  ["rowBytes", I],
  ["n", I],
  ["nsb", I],
  ["dst", I],
  ["dm", I],
];

/**
 * `q4_k_kpanel(w, rowBytes, n, nsb, dst, dm)`: Q4_K rows (n ≤ 8) as one
 * panel: per super-block, per sub-block j and step s (codes 4s..4s+3), 8
 * outputs × 4 codes at `dst` (2048 bytes per super-block); at `dm`
 * ({@link Q4K_META} bytes per super-block) the scales sc[j] as an i16 pair
 * `[sc, sc]` per output (so that one `i32x4.dot_i16x8_s` of a tile's i16
 * pair sums both adds the pairs and scales them), the mins as i16 pairs
 * `[m[i], m[i+4]]` per output (i = 0..3, dotted with x's code sums of the
 * same two sub-blocks), then d and dmin as F32 (`f16ToF32NoSubnormal`, as
 * the dot kernel).
 */
function q4kPanel(m: ModuleBuilder): FuncBuilder {
  const f = m.func("q4_k_kpanel", PANEL_PARAMS);
  const P = f.params;
  const [sb, blk, to, dmp, o, src] = f.locals(I, 6);
  const rows = f.locals(I, 8);
  const raw = f.locals(V, 4), a = f.locals(V, 4), t = f.locals(V, 4);
  const [A, B, C] = f.locals(V, 3);
  const codes: Code[] = [];
  for (let v = 0; v < 2; v++) {
    for (let ch = 0; ch < 4; ch++) {
      for (let p = 0; p < 2; p++) {
        codes.push(
          ...raw.map((l, r) =>
            set(l, v128.load(get(rows[4 * v + r]), 16 + 32 * ch + 16 * p))
          ),
          ...a.map((l, r) => set(l, v128.and(get(raw[r]), i8x16c(0x0f)))),
          ...transpose4(a, t, to, (2 * ch) * 256 + 4 * p * 32 + 16 * v),
          ...a.map((l, r) =>
            set(l, v128.and(i16x8.shr_u(get(raw[r]), c(4)), i8x16c(0x0f)))
          ),
          ...transpose4(a, t, to, (2 * ch + 1) * 256 + 4 * p * 32 + 16 * v),
        );
      }
    }
  }
  const lanesTo = (vec: Code, base: number): Code[] => [
    set(A, vec),
    ...[0, 1, 2, 3].map((k) =>
      i32.store(
        i32.add(get(dmp), i32.shl(get(o), c(2))),
        i32x4.extract_lane(get(A), k),
        base + 32 * k,
      )
    ),
  ];
  f.body(
    set(blk, get(P.w)),
    set(to, get(P.dst)),
    set(dmp, get(P.dm)),
    forLoop(
      "sb",
      sb,
      c(0),
      get(P.nsb),
      c(1),
      ...rowAddrs(rows, blk, P.rowBytes, P.n),
      ...codes,
      forLoop(
        "o",
        o,
        c(0),
        c(QK_NR),
        c(1),
        set(
          src,
          i32.add(
            get(blk),
            select(
              i32.mul(get(P.rowBytes), get(o)),
              c(0),
              i32.lt_s(get(o), get(P.n)),
            ),
          ),
        ),
        set(C, v128.load(get(src), 4)),
        set(A, bytesToI32(get(C), 0)),
        set(B, bytesToI32(get(C), 4)),
        set(C, bytesToI32(get(C), 8)),
        set(raw[0], v128.and(get(A), i32x4c(63))),
        set(
          raw[1],
          v128.or(
            v128.and(get(C), i32x4c(15)),
            i32x4.shl(i32x4.shr_u(get(A), c(6)), c(4)),
          ),
        ),
        set(raw[2], v128.and(get(B), i32x4c(63))),
        set(
          raw[3],
          v128.or(
            i32x4.shr_u(get(C), c(4)),
            i32x4.shl(i32x4.shr_u(get(B), c(6)), c(4)),
          ),
        ),
        // scales as i16 pairs [sc, sc] (for i32x4.dot_i16x8_s), mins as i32
        ...lanesTo(v128.or(get(raw[0]), i32x4.shl(get(raw[0]), c(16))), 0),
        ...lanesTo(v128.or(get(raw[1]), i32x4.shl(get(raw[1]), c(16))), 128),
        ...lanesTo(v128.or(get(raw[2]), i32x4.shl(get(raw[3]), c(16))), 256),
        f32.store(
          i32.add(get(dmp), i32.shl(get(o), c(2))),
          f16ToF32NoSubnormal(() => i32.load16_u(get(src))),
          384,
        ),
        f32.store(
          i32.add(get(dmp), i32.shl(get(o), c(2))),
          f16ToF32NoSubnormal(() => i32.load16_u(get(src), 2)),
          416,
        ),
      ),
      set(blk, i32.add(get(blk), c(144))),
      set(to, i32.add(get(to), c(2048))),
      set(dmp, i32.add(get(dmp), c(Q4K_META))),
    ),
  );
  return f;
}

/**
 * `q6_k_kpanel(w, rowBytes, n, nsb, dst, dm)`: Q6_K rows (n ≤ 8) as one
 * panel: per super-block and step s = 4·group + quarter, 8 outputs × 4
 * codes (0..63) at `dst`; at `dm` ({@link Q6K_META} bytes per super-block)
 * per group g the scale as an i16 pair per output (`[sc, sc]`), per pair
 * of groups k the i16 pair `[sc[2k], sc[2k+1]]` per output, then d as F32.
 */
function q6kPanel(m: ModuleBuilder): FuncBuilder {
  const f = m.func("q6_k_kpanel", PANEL_PARAMS);
  const P = f.params;
  const [sb, blk, to, dmp, o, src, s0, s1] = f.locals(I, 8);
  const rows = f.locals(I, 8);
  const a = f.locals(V, 4), t = f.locals(V, 4);
  // the 16 codes of group g (0..7) of half h of the row at `row`
  const groupCodes = (row: Local, h: number, g: number): Code => {
    const i = g >> 1, lo = g & 1;
    const ql = v128.load(get(row), 64 * h + 16 * ((i & 1) * 2 + lo));
    const qh = v128.load(get(row), 128 + 32 * h + 16 * lo);
    const low4 = i < 2
      ? v128.and(ql, i8x16c(0x0f))
      : v128.and(i16x8.shr_u(ql, c(4)), i8x16c(0x0f));
    const shift = 2 * i - 4;
    const high2 = shift < 0
      ? v128.and(i16x8.shl(qh, c(-shift)), i8x16c(0x30))
      : shift === 0
      ? v128.and(qh, i8x16c(0x30))
      : v128.and(i16x8.shr_u(qh, c(shift)), i8x16c(0x30));
    return v128.or(low4, high2);
  };
  const codes: Code[] = [];
  for (let v = 0; v < 2; v++) {
    for (let h = 0; h < 2; h++) {
      for (let g = 0; g < 8; g++) {
        codes.push(
          ...a.map((l, r) => set(l, groupCodes(rows[4 * v + r], h, g))),
          ...transpose4(a, t, to, 4 * (8 * h + g) * 32 + 16 * v),
        );
      }
    }
  }
  const at = (): Code => i32.add(get(dmp), i32.shl(get(o), c(2)));
  const pair = (lo: Code, hi: Code): Code =>
    i32.or(i32.and(lo, c(0xffff)), i32.shl(hi, c(16)));
  const scales: Code[] = [];
  for (let g = 0; g < 16; g++) {
    scales.push(
      set(s0, i32.load8_s(get(src), 192 + g)),
      i32.store(at(), pair(get(s0), get(s0)), 32 * g),
    );
  }
  for (let k = 0; k < 8; k++) {
    scales.push(
      set(s0, i32.load8_s(get(src), 192 + 2 * k)),
      set(s1, i32.load8_s(get(src), 193 + 2 * k)),
      i32.store(at(), pair(get(s0), get(s1)), 512 + 32 * k),
    );
  }
  f.body(
    set(blk, get(P.w)),
    set(to, get(P.dst)),
    set(dmp, get(P.dm)),
    forLoop(
      "sb",
      sb,
      c(0),
      get(P.nsb),
      c(1),
      ...rowAddrs(rows, blk, P.rowBytes, P.n),
      ...codes,
      forLoop(
        "o",
        o,
        c(0),
        c(QK_NR),
        c(1),
        set(
          src,
          i32.add(
            get(blk),
            select(
              i32.mul(get(P.rowBytes), get(o)),
              c(0),
              i32.lt_s(get(o), get(P.n)),
            ),
          ),
        ),
        ...scales,
        f32.store(
          at(),
          f16ToF32NoSubnormal(() => i32.load16_u(get(src), 208)),
          768,
        ),
      ),
      set(blk, i32.add(get(blk), c(210))),
      set(to, i32.add(get(to), c(2048))),
      set(dmp, i32.add(get(dmp), c(Q6K_META))),
    ),
  );
  return f;
}

/** Scratch address of F32 lane sum `lane` (0..3; 4..7: Q4_K's min sums) of row r, outputs 4h..4h+3. */
function laneSum(sp: Local, lane: Code, r: number, h: number): Code {
  return i32.add(
    get(sp),
    i32.add(i32.mul(lane, c(QK_MR * 32)), c(r * 32 + h * 16)),
  );
}

/**
 * Emits the end of row r: per half h, `((l0 + l2) + (l1 + l3)) + 0`, less
 * the min lanes' sum likewise (Q4_K), `+ 0`, plus the bias, stored at
 * `yp + r·ystride` (the first `ncols` outputs).
 */
function storeRow(
  P: Readonly<Record<string, Local>>,
  t: Local,
  r: number,
  mins: boolean,
): Code[] {
  const row = i32.add(get(P.yp), i32.mul(get(P.ystride), c(r)));
  const lane = (h: number, l: number) =>
    f32.store(row, f32x4.extract_lane(get(t), l), 16 * h + 4 * l);
  const parts: Code[] = [];
  const fz = f32x4.splat(f32.const(0));
  for (let h = 0; h < 2; h++) {
    const s = (q: number) => v128.load(laneSum(P.sp, c(q), r, h));
    const total = (q: number) =>
      f32x4.add(f32x4.add(s(q), s(q + 2)), f32x4.add(s(q + 1), s(q + 3)));
    let v = f32x4.add(total(0), fz);
    if (mins) v = f32x4.sub(v, total(4));
    parts.push(
      set(
        t,
        f32x4.add(f32x4.add(v, fz), v128.load(get(P.bp), 16 * h)),
      ),
      if_(i32.ge_s(get(P.ncols), c(4 * h + 4)), [
        v128.store(row, get(t), 16 * h),
      ], [
        if_(i32.gt_s(get(P.ncols), c(4 * h)), [lane(h, 0)]),
        if_(i32.gt_s(get(P.ncols), c(4 * h + 1)), [lane(h, 1)]),
        if_(i32.gt_s(get(P.ncols), c(4 * h + 2)), [lane(h, 2)]),
      ]),
    );
  }
  return parts;
}

/**
 * `qk4_micro_R(xp, wp, dm, xm, mstride, nsb, yp, ystride, bp, ncols, sp)`:
 * the `R × 8` tile of y for one x panel and one Q4_K weight panel (`wp`
 * codes, `dm` scales); x's Q8_K metadata of row r at `xm + r·mstride`.
 */
function q4kMicro(m: ModuleBuilder, ctx: Ctx, R: number): FuncBuilder {
  const f = m.func(`qk4_micro_${R}`, MICRO_PARAMS);
  const P = f.params;
  const acc = Array.from({ length: R }, () => f.locals(V, 2));
  const [w0, w1, xs, bx, tv] = f.locals(V, 5);
  const [sb, i, z, wq, xq, mq, xmb, ms, row] = f.locals(I, 9);
  // x bytes per step (4 codes of every panel row) and per sub-block
  const XS = QK_MR * 4, XSB = 8 * XS;
  const products = (wOff: number, xOff: number): Code[] => {
    const out: Code[] = acc.flat().map((l) => set(l, zero));
    for (let s = 0; s < 8; s++) {
      out.push(
        set(w0, v128.load(get(wq), wOff + 32 * s)),
        set(w1, v128.load(get(wq), wOff + 32 * s + 16)),
      );
      for (let r = 0; r < R; r++) {
        out.push(
          set(xs, v128.load32_splat(get(xq), xOff + s * XS + 4 * r)),
          ...[w0, w1].map((w, h) =>
            set(
              acc[r][h],
              i16x8.add(
                get(acc[r][h]),
                i16x8.relaxed_dot_i8x16_i7x16_s(get(xs), get(w)),
              ),
            )
          ),
        );
      }
    }
    return out;
  };
  const tmp = (r: number, h: number): Code =>
    i32.add(get(P.sp), c(8 * QK_MR * 32 + 32 * r + 16 * h));
  const first: Code[] = acc.flatMap((pair, r) =>
    pair.map((a, h) =>
      v128.store(
        tmp(r, h),
        i32x4.dot_i16x8_s(get(a), v128.load(get(mq), 16 * h)),
      )
    )
  );
  // per super-block and row: x's code sums of sub-blocks (i, i + 4) as
  // i16 pairs in i32 lane i, and d·d_x, dmin·d_x per output
  const bsp = (r: number): Code =>
    i32.add(get(P.sp), c(9 * QK_MR * 32 + 16 * r));
  const dv = (r: number, h: number, k: number): Code =>
    i32.add(
      get(P.sp),
      c(9 * QK_MR * 32 + QK_MR * 16 + 64 * r + 32 * k + 16 * h),
    );
  const perRow: Code[] = acc.flatMap((_, r) => [
    set(row, i32.add(get(xmb), i32.mul(get(P.mstride), c(r)))),
    set(bx, v128.load32_splat(get(row))),
    ...[0, 1].flatMap((h) =>
      [0, 1].map((k) =>
        v128.store(
          dv(r, h, k),
          f32x4.mul(v128.load(get(P.dsc), 384 + 32 * k + 16 * h), get(bx)),
        )
      )
    ),
    set(row, i32.add(get(row), get(ms))),
    set(
      tv,
      i16x8.narrow_i32x4_s(v128.load(get(row)), v128.load(get(row), 16)),
    ),
    v128.store(
      bsp(r),
      i8x16.shuffle(
        get(tv),
        get(tv),
        [0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15],
      ),
    ),
  ]);
  const second: Code[] = acc.flatMap((pair, r) => [
    set(bx, v128.load32_splat(i32.add(bsp(r), i32.shl(get(i), c(2))))),
    ...pair.flatMap((a, h) => {
      const sum = laneSum(P.sp, get(i), r, h);
      const msum = laneSum(P.sp, i32.add(get(i), c(4)), r, h);
      return [
        set(
          tv,
          i32x4.add(
            i32x4.dot_i16x8_s(get(a), v128.load(get(mq), 128 + 16 * h)),
            v128.load(tmp(r, h)),
          ),
        ),
        v128.store(
          sum,
          ctx.madd(
            f32x4.convert_i32x4_s(get(tv)),
            v128.load(dv(r, h, 0)),
            v128.load(sum),
          ),
        ),
        // m_i·Σx_i + m_{i+4}·Σx_{i+4} in one dot of i16 pairs
        v128.store(
          msum,
          ctx.madd(
            f32x4.convert_i32x4_s(
              i32x4.dot_i16x8_s(v128.load(get(mq), 256 + 16 * h), get(bx)),
            ),
            v128.load(dv(r, h, 1)),
            v128.load(msum),
          ),
        ),
      ];
    }),
  ]);
  f.body(
    forLoop(
      "z",
      z,
      c(0),
      c(8 * QK_MR * 32),
      c(16),
      v128.store(i32.add(get(P.sp), get(z)), zero),
    ),
    set(xmb, get(P.xm)),
    set(ms, i32.shr_u(get(P.mstride), c(2))),
    forLoop(
      "sb",
      sb,
      c(0),
      get(P.nb),
      c(1),
      ...perRow,
      // lane i: sub-blocks i and i + 4
      forLoop(
        "i",
        i,
        c(0),
        c(4),
        c(1),
        set(wq, i32.add(get(P.wp), i32.shl(get(i), c(8)))),
        set(xq, i32.add(get(P.xp), i32.mul(get(i), c(XSB)))),
        set(mq, i32.add(get(P.dsc), i32.shl(get(i), c(5)))),
        ...products(0, 0),
        ...first,
        ...products(4 * 256, 4 * XSB),
        ...second,
      ),
      set(P.xp, i32.add(get(P.xp), c(8 * XSB))),
      set(P.wp, i32.add(get(P.wp), c(2048))),
      set(P.dsc, i32.add(get(P.dsc), c(Q4K_META))),
      set(xmb, i32.add(get(xmb), c(32))),
    ),
    ...Array.from({ length: R }, (_, r) => storeRow(P, tv, r, true)).flat(),
  );
  return f;
}

/**
 * `qk6_micro_R(xp, wp, dm, xm, mstride, nsb, yp, ystride, bp, ncols, sp)`:
 * as {@link q4kMicro} for a Q6_K weight panel.
 */
function q6kMicro(m: ModuleBuilder, ctx: Ctx, R: number): FuncBuilder {
  const f = m.func(`qk6_micro_${R}`, MICRO_PARAMS);
  const P = f.params;
  const acc = Array.from({ length: R }, () => f.locals(V, 2));
  const [w0, w1, s0, s1, xs] = f.locals(V, 5);
  const [x1, x2, bx, tv] = [xs, s0, s1, w0];
  const [sb, i, z, wq, xq, xmb, is16, row] = f.locals(I, 8);
  const XS = QK_MR * 4;
  const products: Code[] = acc.flat().map((l) => set(l, zero));
  for (let g = 0; g < 16; g++) {
    products.push(
      set(w0, v128.load(get(wq), 128 * g)),
      set(w1, v128.load(get(wq), 128 * g + 16)),
      set(s0, v128.load(get(P.dsc), 32 * g)),
      set(s1, v128.load(get(P.dsc), 32 * g + 16)),
    );
    for (let r = 0; r < R; r++) {
      products.push(
        set(xs, v128.load32_splat(get(xq), 4 * g * XS + 4 * r)),
        ...[w0, w1].map((w, h) =>
          set(
            acc[r][h],
            i32x4.add(
              get(acc[r][h]),
              i32x4.dot_i16x8_s(
                i16x8.relaxed_dot_i8x16_i7x16_s(get(xs), get(w)),
                get(h === 0 ? s0 : s1),
              ),
            ),
          )
        ),
      );
    }
  }
  // groups 2i, 2i+1 (x1) and 8+2i, 9+2i (x2) of row r's per-16 code sums
  // (at `row`) as i16 pairs in every i32 lane
  const pairAt = (off: number): Code =>
    i16x8.narrow_i32x4_s(
      v128.load64_splat(get(row), off),
      v128.load64_splat(get(row), off),
    );
  const flush: Code[] = acc.flatMap((pair, r) => [
    set(
      bx,
      v128.load32_splat(i32.add(get(xmb), i32.mul(get(P.mstride), c(r)))),
    ),
    set(
      row,
      i32.add(
        i32.add(get(is16), i32.mul(get(P.mstride), c(r))),
        i32.shl(get(i), c(3)),
      ),
    ),
    set(x1, pairAt(0)),
    set(x2, pairAt(32)),
    ...pair.flatMap((a, h) => {
      const sum = laneSum(P.sp, get(i), r, h);
      const scp = (k: Code): Code =>
        v128.load(
          i32.add(get(P.dsc), i32.shl(k, c(5))),
          512 + 16 * h,
        );
      return [
        set(
          a,
          i32x4.sub(
            get(a),
            i32x4.shl(
              i32x4.add(
                i32x4.dot_i16x8_s(scp(get(i)), get(x1)),
                i32x4.dot_i16x8_s(scp(i32.add(get(i), c(4))), get(x2)),
              ),
              c(5),
            ),
          ),
        ),
        set(
          tv,
          ctx.madd(
            f32x4.convert_i32x4_s(get(a)),
            f32x4.mul(v128.load(get(P.dsc), 768 + 16 * h), get(bx)),
            v128.load(sum),
          ),
        ),
        v128.store(sum, get(tv)),
      ];
    }),
  ]);
  f.body(
    forLoop(
      "z",
      z,
      c(0),
      c(4 * QK_MR * 32),
      c(16),
      v128.store(i32.add(get(P.sp), get(z)), zero),
    ),
    set(xmb, get(P.xm)),
    // per-16 code sums: the third metadata array, 2·(mstride / 4) bytes on
    set(is16, i32.add(get(P.xm), i32.shr_u(get(P.mstride), c(1)))),
    forLoop(
      "sb",
      sb,
      c(0),
      get(P.nb),
      c(1),
      // lane i: quarter i of every group
      forLoop(
        "i",
        i,
        c(0),
        c(4),
        c(1),
        set(wq, i32.add(get(P.wp), i32.shl(get(i), c(5)))),
        set(xq, i32.add(get(P.xp), i32.mul(get(i), c(XS)))),
        ...products,
        ...flush,
      ),
      set(P.xp, i32.add(get(P.xp), c(64 * XS))),
      set(P.wp, i32.add(get(P.wp), c(2048))),
      set(P.dsc, i32.add(get(P.dsc), c(Q6K_META))),
      set(xmb, i32.add(get(xmb), c(32))),
      set(is16, i32.add(get(is16), c(64))),
    ),
    ...Array.from({ length: R }, (_, r) => storeRow(P, tv, r, false)).flat(),
  );
  return f;
}

/**
 * Adds (relaxed variant) `qk_pack_x(q8, dst, rows, inF)` (`dst` zeroed by
 * the caller; Q8_K codes, `inF` per row, as `quantize_xk` writes them),
 * the panel and micro kernels and the drivers `q4_k_kgemm` and
 * `q6_k_kgemm(xp, meta, w, rowBytes, y, bp, rows, inF, outF, p0, p1, scr)`
 * with the arguments of `q4_0_igemm` (panels p0..p1 of 8 outputs; `scr`
 * this thread's {@link kquantGemmScratchBytes}).
 */
export function kquantGemmKernels(m: ModuleBuilder, ctx: Ctx): void {
  if (!ctx.relaxed) return;
  {
    const f = m.func("qk_pack_x", [
      ["q8", I],
      ["dst", I],
      ["rows", I],
      ["inF", I],
    ]);
    const P = f.params;
    const [r, k, from, to] = f.locals(I, 4);
    f.body(
      forLoop(
        "r",
        r,
        c(0),
        get(P.rows),
        c(1),
        set(from, i32.add(get(P.q8), i32.mul(get(r), get(P.inF)))),
        set(
          to,
          i32.add(
            get(P.dst),
            i32.add(
              i32.mul(
                i32.mul(i32.div_u(get(r), c(QK_MR)), c(QK_MR)),
                get(P.inF),
              ),
              i32.shl(i32.rem_u(get(r), c(QK_MR)), c(2)),
            ),
          ),
        ),
        forLoop(
          "k",
          k,
          c(0),
          i32.shr_u(get(P.inF), c(2)),
          c(1),
          i32.store(get(to), i32.load(get(from))),
          set(from, i32.add(get(from), c(4))),
          set(to, i32.add(get(to), c(QK_MR * 4))),
        ),
      ),
    );
  }
  for (
    const [name, panel, micro, meta] of [
      ["q4_k", q4kPanel(m), q4kMicro, Q4K_META],
      ["q6_k", q6kPanel(m), q6kMicro, Q6K_META],
    ] as const
  ) {
    const micros = Array.from(
      { length: QK_MR },
      (_, r) => micro(m, ctx, r + 1),
    );
    quantGemmDriver(m, {
      name: `${name}_kgemm`,
      mr: QK_MR,
      nr: QK_NR,
      micros,
      xShift: 0,
      blocks: (inF) => i32.shr_u(inF, c(8)),
      // quantize_xk's metadata: 4 arrays of 4 bytes per block of 32
      metaStride: (_nb, inF) => i32.shl(i32.shr_u(inF, c(5)), c(4)),
      scales: (scr, inF) => i32.add(scr, i32.mul(inF, c(QK_NR))),
      scratch: (dm, nsb) => i32.add(dm, i32.mul(nsb, c(meta))),
      panel: (a) => call(panel, a.w, a.rowBytes, a.ncols, a.nb, a.scr, a.dsc),
    });
  }
}
