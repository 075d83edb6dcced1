/**
 * Kernel source for Q8_0 / Q4_0 weights times many x rows (prefill,
 * batches) as a register-blocked GEMM whose integer block products are
 * computed exactly in F32 fused multiply-adds.
 *
 * Why F32: a weight code times an activation code is at most 128 · 127 in
 * magnitude and a block of 32 of them sums to less than 2^19, so every
 * partial sum of a block is an integer that F32 holds exactly, in any
 * order. The outer-product tile of `_kernels_gemm.ts` (5 x rows × 8
 * outputs, ten f32x4 accumulators, one fused multiply-add per four
 * products) then runs at the F32 GEMM's rate, while the 128-bit integer
 * dot products of the matvec kernels need four to five instructions per 16
 * products on x86 CPUs whose engine does not lower the relaxed dot to
 * VNNI (AMD EPYC, 1 thread, 128 × 576 → 1536: 7 G products/s there
 * against about 20 here).
 *
 * The results are bit for bit those of `q8_0_dot` / `q4_0_dot` (and so of
 * decoding one token at a time): each block's integer total is the same
 * number, and the F32 steps after it are the same operations in the same
 * order — blocks 0 … 4⌊nb/4⌋−1 go to four running sums by block index
 * mod 4, each `sum = madd(total, d_w·d_x, sum)`; the remaining blocks to
 * a fifth, `a = a + total·(d_w·d_x)`; the output is
 * `((s0 + s2) + (s1 + s3)) + a`, plus the bias. Here those sums live in a
 * small scratch area, one f32x4 per row and 4 outputs, updated once per
 * block of 32 k values.
 *
 * Layout: x codes (the i8 codes of `quantize_x`) are packed as F32 into
 * panels of {@link QG_MR} rows (per k, the rows' values side by side);
 * each thread converts one weight panel of {@link QG_NR} rows at a time
 * into its scratch (per k the 8 codes as F32, per block the 8 scales) and
 * runs every x panel over it.
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
  set,
  T,
  v128,
} from "./_asm.ts";
import {
  c,
  type Ctx,
  f16ToF32,
  i8x16c,
  lanes32,
  zero,
} from "./_kernels_util.ts";
import {
  MICRO_PARAMS,
  microBlocks,
  quantGemmDriver,
  storeTileRow,
} from "./_kernels_quant_util.ts";

/** x rows per packed panel (the microkernel's rows). */
export const QG_MR = 5;
/** Weight rows (outputs) per converted panel: two f32x4. */
export const QG_NR = 8;

const I = T.i32;
const V = T.v128;

/** Scratch bytes one thread needs for inputs of `inF` (a multiple of 32). */
export function quantGemmScratchBytes(inF: number): number {
  const nb = inF / 32;
  return inF * QG_NR * 4 + nb * QG_NR * 4 + 5 * QG_MR * 32 + 128 + 64;
}

/** Bytes of x packed for the GEMM: `rows × inF` codes as F32 in whole panels. */
export function quantGemmPackedXBytes(rows: number, inF: number): number {
  return Math.ceil(rows / QG_MR) * QG_MR * inF * 4;
}

/**
 * `qg_micro_R(xp, wp, dsc, xm, mstride, nb, yp, ystride, bp, ncols, sp)`:
 * the `R × 8` tile of y for one x panel (R ≤ MR rows at `xp`, MR floats
 * per k) and one converted weight panel (`wp`, 8 floats per k; `dsc`,
 * 8 scales per block), x scales of row r, block b at `xm + r·mstride +
 * 4b`. `sp`: 5 · MR · 32 bytes of scratch for the running sums. Stores
 * the first `ncols` outputs of each row (`ystride` bytes apart) plus the
 * bias at `bp`.
 */
function micro(m: ModuleBuilder, ctx: Ctx, R: number): FuncBuilder {
  const f = m.func(`qg_micro_${R}`, MICRO_PARAMS);
  const P = f.params;
  const acc = Array.from({ length: R }, () => f.locals(V, 2));
  const [w0, w1, bx, t] = f.locals(V, 4);
  const [b, k, nb4, slot, xmb] = f.locals(I, 5);
  // running sum `s` (0..3 by block mod 4, 4 for the leftover blocks) of
  // row r, outputs 4h..4h+3
  const sum = (s: Code, r: number, h: number): Code =>
    i32.add(
      get(P.sp),
      i32.add(i32.mul(s, c(QG_MR * 32)), c(r * 32 + h * 16)),
    );
  const step = (off: number): Code[] => {
    const out: Code[] = [
      set(w0, v128.load(get(P.wp), off * 32)),
      set(w1, v128.load(get(P.wp), off * 32 + 16)),
      set(t, v128.load(get(P.xp), off * QG_MR * 4)),
    ];
    for (let r = 0; r < R; r++) {
      out.push(
        set(
          bx,
          r < 4
            ? i8x16.shuffle(get(t), get(t), lanes32([r, r, r, r]))
            : v128.load32_splat(get(P.xp), off * QG_MR * 4 + r * 4),
        ),
        set(acc[r][0], ctx.madd(get(bx), get(w0), get(acc[r][0]))),
        set(acc[r][1], ctx.madd(get(bx), get(w1), get(acc[r][1]))),
      );
    }
    return out;
  };
  // one block of 32 k values into fresh accumulators
  const blockProducts: Code[] = [
    ...acc.flat().map((a) => set(a, zero)),
    forLoop(
      "k",
      k,
      c(0),
      c(32),
      c(4),
      ...[0, 1, 2, 3].flatMap(step),
      set(P.xp, i32.add(get(P.xp), c(4 * QG_MR * 4))),
      set(P.wp, i32.add(get(P.wp), c(4 * 32))),
    ),
  ];
  // d_w · d_x per output of row r into w0 (outputs 0..3), w1 (4..7)
  const scales = (r: number): Code[] => [
    set(
      bx,
      v128.load32_splat(
        i32.add(get(xmb), i32.mul(get(P.mstride), c(r))),
      ),
    ),
    set(w0, f32x4.mul(v128.load(get(P.dsc)), get(bx))),
    set(w1, f32x4.mul(v128.load(get(P.dsc), 16), get(bx))),
  ];
  const flush = (grouped: boolean): Code[] =>
    acc.flatMap((pair, r) => [
      ...scales(r),
      ...pair.map((a, h) => {
        const at = sum(get(slot), r, h);
        const s = v128.load(at);
        const sc = get(h === 0 ? w0 : w1);
        return v128.store(
          at,
          grouped
            ? ctx.madd(get(a), sc, s)
            : f32x4.add(s, f32x4.mul(get(a), sc)),
        );
      }),
    ]);
  const next: Code[] = [
    set(P.dsc, i32.add(get(P.dsc), c(QG_NR * 4))),
    set(xmb, i32.add(get(xmb), c(4))),
  ];
  const store = (r: number): Code[] => storeTileRow(P, t, sum, r);
  f.body(
    // the five running sums of every row start at zero
    forLoop(
      "z",
      k,
      c(0),
      c(5 * QG_MR * 32),
      c(16),
      v128.store(i32.add(get(P.sp), get(k)), zero),
    ),
    set(nb4, i32.and(get(P.nb), c(~3))),
    set(xmb, get(P.xm)),
    ...microBlocks(P.nb, b, nb4, slot, blockProducts, flush, next),
    ...Array.from({ length: R }, (_, r) => store(r)).flat(),
  );
  return f;
}

/**
 * `name_wpanel(w, rowBytes, n, nb, dst, dsc)`: weight rows `w`, `w +
 * rowBytes`, … (n ≤ 8 of them, `nb` blocks each) as one panel: per k the
 * 8 codes as F32 at `dst` (Q4_0: `q − 8`), per block the 8 scales as F32
 * at `dsc`; rows past `n` are zero.
 */
function panelKernel(m: ModuleBuilder, q4: boolean): FuncBuilder {
  const f = m.func(`${q4 ? "q4_0" : "q8_0"}_wpanel`, [
    ["w", I],
    ["rowBytes", I],
    ["n", I],
    ["nb", I],
    ["dst", I],
    ["dsc", I],
  ]);
  const P = f.params;
  const [o, b, j, src, to] = f.locals(I, 5);
  const bytes = q4 ? 18 : 34;
  const code = (jj: Local): Code =>
    q4
      ? i32.sub(
        i32.and(
          i32.shr_u(
            i32.load8_u(
              i32.add(get(src), i32.and(get(jj), c(15))),
              2,
            ),
            i32.shl(i32.shr_u(get(jj), c(4)), c(2)),
          ),
          c(15),
        ),
        c(8),
      )
      : i32.load8_s(i32.add(get(src), get(jj)), 2);
  const dscAt = (): Code =>
    i32.add(
      get(P.dsc),
      i32.shl(i32.add(i32.shl(get(b), c(3)), get(o)), c(2)),
    );
  const toAt = (): Code =>
    i32.add(get(P.dst), i32.shl(i32.add(i32.shl(get(b), c(8)), get(o)), c(2)));
  f.body(
    // the rows that exist (only they are read)
    forLoop(
      "o",
      o,
      c(0),
      get(P.n),
      c(1),
      set(src, i32.add(get(P.w), i32.mul(get(o), get(P.rowBytes)))),
      forLoop(
        "b",
        b,
        c(0),
        get(P.nb),
        c(1),
        f32.store(dscAt(), f16ToF32(i32.load16_u(get(src)))),
        set(to, toAt()),
        forLoop(
          "j",
          j,
          c(0),
          c(32),
          c(1),
          f32.store(get(to), f32.convert_i32_s(code(j))),
          set(to, i32.add(get(to), c(QG_NR * 4))),
        ),
        set(src, i32.add(get(src), c(bytes))),
      ),
    ),
    // rows past n: zero codes and scales
    forLoop(
      "oz",
      o,
      get(P.n),
      c(QG_NR),
      c(1),
      forLoop(
        "bz",
        b,
        c(0),
        get(P.nb),
        c(1),
        f32.store(dscAt(), f32.const(0)),
        set(to, toAt()),
        forLoop(
          "jz",
          j,
          c(0),
          c(32),
          c(1),
          f32.store(get(to), f32.const(0)),
          set(to, i32.add(get(to), c(QG_NR * 4))),
        ),
      ),
    ),
  );
  return f;
}

/**
 * `name_wpanel8(w, rowBytes, nb, dst, dsc, tmp)`: the same as
 * `name_wpanel` for a whole panel (8 rows), in SIMD: per block, the codes
 * of 4 rows × 8 k are widened to F32 and transposed 4 × 4 by shuffles
 * into the panel's per-k layout. Q4_0 codes are first unpacked to bytes
 * `q − 8` at `tmp` (128 bytes).
 */
function panel8Kernel(m: ModuleBuilder, q4: boolean): FuncBuilder {
  const f = m.func(`${q4 ? "q4_0" : "q8_0"}_wpanel8`, [
    ["w", I],
    ["rowBytes", I],
    ["nb", I],
    ["dst", I],
    ["dsc", I],
    ["tmp", I],
  ]);
  const P = f.params;
  const [b, blk, to] = f.locals(I, 3);
  const lo = f.locals(V, 4), hi = f.locals(V, 4), tt = f.locals(V, 4);
  const bytes = q4 ? 18 : 34;
  const rowAt = (r: number): Code =>
    i32.add(get(blk), i32.mul(get(P.rowBytes), c(r)));
  // 4 × 4 transpose of a[0..3] (rows) into k-major vectors, stored at
  // k = first + j, lanes = the group's 4 rows
  const transposeStore = (a: Local[], g: number, first: number): Code[] => [
    set(tt[0], i8x16.shuffle(get(a[0]), get(a[1]), lanes32([0, 4, 1, 5]))),
    set(tt[1], i8x16.shuffle(get(a[0]), get(a[1]), lanes32([2, 6, 3, 7]))),
    set(tt[2], i8x16.shuffle(get(a[2]), get(a[3]), lanes32([0, 4, 1, 5]))),
    set(tt[3], i8x16.shuffle(get(a[2]), get(a[3]), lanes32([2, 6, 3, 7]))),
    ...[
      [0, 2, [0, 1, 4, 5]],
      [0, 2, [2, 3, 6, 7]],
      [1, 3, [0, 1, 4, 5]],
      [1, 3, [2, 3, 6, 7]],
    ].map(([x, y, l], j) =>
      v128.store(
        get(to),
        i8x16.shuffle(
          get(tt[x as number]),
          get(tt[y as number]),
          lanes32(l as number[]),
        ),
        ((first + j) * QG_NR + 4 * g) * 4,
      )
    ),
  ];
  const group = (g: number): Code[] => {
    const out: Code[] = [];
    // where row r's 32 codes (i8) start
    const src = (r: number): Code =>
      q4 ? i32.add(get(P.tmp), c(32 * r)) : i32.add(rowAt(4 * g + r), c(2));
    if (q4) {
      for (let r = 0; r < 4; r++) {
        out.push(
          set(tt[0], v128.load(rowAt(4 * g + r), 2)),
          v128.store(
            get(P.tmp),
            i8x16.sub(v128.and(get(tt[0]), i8x16c(0x0f)), i8x16c(8)),
            32 * r,
          ),
          v128.store(
            get(P.tmp),
            i8x16.sub(
              v128.and(i16x8.shr_u(get(tt[0]), c(4)), i8x16c(0x0f)),
              i8x16c(8),
            ),
            32 * r + 16,
          ),
        );
      }
    }
    for (let kk = 0; kk < 4; kk++) {
      for (let r = 0; r < 4; r++) {
        out.push(
          set(tt[0], i16x8.load8x8_s(src(r), 8 * kk)),
          set(
            lo[r],
            f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(get(tt[0]))),
          ),
          set(
            hi[r],
            f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(get(tt[0]))),
          ),
        );
      }
      out.push(
        ...transposeStore(lo, g, 8 * kk),
        ...transposeStore(hi, g, 8 * kk + 4),
      );
    }
    return out;
  };
  f.body(
    set(blk, get(P.w)),
    set(to, get(P.dst)),
    forLoop(
      "b",
      b,
      c(0),
      get(P.nb),
      c(1),
      ...Array.from({ length: QG_NR }, (_, o) =>
        f32.store(
          i32.add(get(P.dsc), i32.shl(get(b), c(5))),
          f16ToF32(i32.load16_u(rowAt(o))),
          4 * o,
        )),
      ...group(0),
      ...group(1),
      set(blk, i32.add(get(blk), c(bytes))),
      set(to, i32.add(get(to), c(32 * QG_NR * 4))),
    ),
  );
  return f;
}

/**
 * Adds `qg_pack_x(q8, dst, rows, inF)` (i8 codes → F32 panels of MR rows;
 * `dst` zeroed by the caller), the microkernels, and per format (`q8_0`,
 * `q4_0`) `name_wpanel` and the driver `name_gemm(xp, meta, w, rowBytes,
 * y, bp, rows, inF, outF, p0, p1, scr)` for weight panels `[p0, p1)`:
 * `meta` as `quantize_x` wrote it, `bp` the bias padded to whole panels,
 * `scr` this thread's {@link quantGemmScratchBytes}.
 */
export function quantGemmKernels(m: ModuleBuilder, ctx: Ctx): void {
  {
    const f = m.func("qg_pack_x", [
      ["q8", I],
      ["dst", I],
      ["rows", I],
      ["inF", I],
    ]);
    const P = f.params;
    const [r, k, to, from] = f.locals(I, 4);
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
            i32.shl(
              i32.add(
                i32.mul(
                  i32.mul(i32.div_u(get(r), c(QG_MR)), get(P.inF)),
                  c(QG_MR),
                ),
                i32.rem_u(get(r), c(QG_MR)),
              ),
              c(2),
            ),
          ),
        ),
        forLoop(
          "k",
          k,
          c(0),
          get(P.inF),
          c(1),
          f32.store(get(to), f32.convert_i32_s(i32.load8_s(get(from)))),
          set(from, i32.add(get(from), c(1))),
          set(to, i32.add(get(to), c(QG_MR * 4))),
        ),
      ),
    );
  }
  const micros = Array.from({ length: QG_MR }, (_, r) => micro(m, ctx, r + 1));
  for (const q4 of [false, true]) {
    const panel = panelKernel(m, q4);
    const panel8 = panel8Kernel(m, q4);
    quantGemmDriver(m, {
      name: `${q4 ? "q4_0" : "q8_0"}_gemm`,
      mr: QG_MR,
      nr: QG_NR,
      micros,
      xShift: 2,
      blocks: (inF) => i32.shr_u(inF, c(5)),
      // quantize_x's metadata: 4 arrays of nb entries per row
      metaStride: (nb) => i32.shl(nb, c(4)),
      scales: (scr, inF) => i32.add(scr, i32.shl(i32.mul(inF, c(QG_NR)), c(2))),
      scratch: (dsc, nb) => i32.add(dsc, i32.shl(i32.mul(nb, c(QG_NR)), c(2))),
      panel: (a) =>
        if_(i32.eq(a.ncols, c(QG_NR)), [
          call(
            panel8,
            a.w,
            a.rowBytes,
            a.nb,
            a.scr,
            a.dsc,
            i32.add(a.sp, c(5 * QG_MR * 32)),
          ),
        ], [call(panel, a.w, a.rowBytes, a.ncols, a.nb, a.scr, a.dsc)]),
    });
  }
}
