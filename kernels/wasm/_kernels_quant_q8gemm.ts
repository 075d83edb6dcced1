/**
 * Kernel source for Q8_0 (and Q4_0) weights times many x rows as an integer
 * outer-product GEMM on i16 codes: `i32x4.dot_i16x8_s` (x86 `pmaddwd`)
 * multiplies eight code pairs and adds each pair into one i32 lane, so a
 * lane holds one output's running block total with no sums across lanes
 * and no correction terms. Every Q8_0 code (−128…127) and every x code
 * of `quantize_x` (−127…127) is a valid i16 and a block's total stays
 * below 2^19, so the i32 totals are exact; the instruction is part of
 * plain 128-bit SIMD, so both module variants have this kernel.
 *
 * Why not the F32 way of `_kernels_quant_gemm.ts`: there a fused
 * multiply-add does four products and the tile needs one x broadcast per
 * k; here one `pmaddwd` does eight and one broadcast serves two k: per
 * 32 products and x row, four multiplies (and four adds, two broadcasts)
 * against eight fused multiply-adds (and four broadcasts). The weight
 * panel is built with sign-extending loads and one 4 × 4 transpose per
 * eight codes, with no conversion to F32. On an AMD EPYC without
 * AVX-VNNI, one thread, 128 x rows: 1.2–1.4× the F32 tiles' rate
 * (docs/performance.md, "Q8_0 GEMM on i16 codes").
 *
 * Layout, per block of 32 and pair index p (0..15): x row r contributes
 * the i16 codes `x[2p], x[2p+1]` as one i32 (packed once per job, panels
 * of {@link QH_MR} rows, broadcast to all lanes); a converted weight panel
 * holds, per p, 8 outputs × the same two positions as i16 (two vectors of
 * four outputs). The dot of a weight vector with the broadcast x adds
 * `w[2p]·x[2p] + w[2p+1]·x[2p+1]` into each output's i32 lane.
 *
 * Q4_0 takes the same tiles in the plain SIMD module (its codes `q − 8`
 * unpacked into the panel), where there is no byte GEMM for it.
 *
 * The F32 steps after each block total are those of `q8_0_dot` /
 * `q4_0_dot` (see `_kernels_quant_gemm.ts`), so the results are bit for
 * bit the same.
 *
 * @module
 */

import {
  call,
  type Code,
  f32x4,
  forLoop,
  type FuncBuilder,
  get,
  i16x8,
  i32,
  i32x4,
  i8x16,
  type ModuleBuilder,
  select,
  set,
  T,
  v128,
} from "./_asm.ts";
import {
  c,
  type Ctx,
  F16_MASK,
  F16_SCALE,
  f32x4c,
  i32x4c,
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
export const QH_MR = 5;
/** Outputs per converted weight panel. */
export const QH_NR = 8;

const I = T.i32;
const V = T.v128;

/** Scratch bytes one thread needs for inputs of `inF` (a multiple of 32). */
export function quantHgemmScratchBytes(inF: number): number {
  const nb = inF / 32;
  return inF * QH_NR * 2 + nb * QH_NR * 4 + 5 * QH_MR * 32 + 128 + 64;
}

/** Bytes of x packed for this GEMM (`rows × inF` codes as i16, whole panels). */
export function quantHgemmPackedXBytes(rows: number, inF: number): number {
  return Math.ceil(rows / QH_MR) * QH_MR * inF * 2;
}

/**
 * `qh_micro_R(xp, wp, dsc, xm, mstride, nb, yp, ystride, bp, ncols, sp)`:
 * as `qg_micro_R` of `_kernels_quant_gemm.ts`, on i16 codes.
 */
function micro(m: ModuleBuilder, ctx: Ctx, R: number): FuncBuilder {
  const f = m.func(`qh_micro_${R}`, MICRO_PARAMS);
  const P = f.params;
  const acc = Array.from({ length: R }, () => f.locals(V, 2));
  const [w0, w1, xs, t] = f.locals(V, 4);
  const [b, nb4, slot, xmb] = f.locals(I, 4);
  const sum = (s: Code, r: number, h: number): Code =>
    i32.add(
      get(P.sp),
      i32.add(i32.mul(s, c(QH_MR * 32)), c(r * 32 + h * 16)),
    );
  const products: Code[] = [];
  for (let p = 0; p < 16; p++) {
    products.push(
      set(w0, v128.load(get(P.wp), 32 * p)),
      set(w1, v128.load(get(P.wp), 32 * p + 16)),
    );
    for (let r = 0; r < R; r++) {
      products.push(
        set(xs, v128.load32_splat(get(P.xp), (p * QH_MR + r) * 4)),
        ...[w0, w1].map((w, h) => {
          const d = i32x4.dot_i16x8_s(get(w), get(xs));
          // the first pair starts the block's totals
          return set(acc[r][h], p === 0 ? d : i32x4.add(get(acc[r][h]), d));
        }),
      );
    }
  }
  products.push(
    set(P.xp, i32.add(get(P.xp), c(16 * QH_MR * 4))),
    set(P.wp, i32.add(get(P.wp), c(16 * 32))),
  );
  const flush = (grouped: boolean): Code[] =>
    acc.flatMap((pair, r) => [
      // d_w · d_x per output
      set(
        xs,
        v128.load32_splat(i32.add(get(xmb), i32.mul(get(P.mstride), c(r)))),
      ),
      set(w0, f32x4.mul(v128.load(get(P.dsc)), get(xs))),
      set(w1, f32x4.mul(v128.load(get(P.dsc), 16), get(xs))),
      ...pair.map((a, h) => {
        const at = sum(get(slot), r, h);
        const s = v128.load(at);
        const sc = get(h === 0 ? w0 : w1);
        const total = f32x4.convert_i32x4_s(get(a));
        return v128.store(
          at,
          grouped ? ctx.madd(total, sc, s) : f32x4.add(s, f32x4.mul(total, sc)),
        );
      }),
    ]);
  const next: Code[] = [
    set(P.dsc, i32.add(get(P.dsc), c(QH_NR * 4))),
    set(xmb, i32.add(get(xmb), c(4))),
  ];
  const store = (r: number): Code[] => storeTileRow(P, t, sum, r);
  f.body(
    forLoop(
      "z",
      b,
      c(0),
      c(5 * QH_MR * 32),
      c(16),
      v128.store(i32.add(get(P.sp), get(b)), i32x4.splat(c(0))),
    ),
    set(nb4, i32.and(get(P.nb), c(~3))),
    set(xmb, get(P.xm)),
    ...microBlocks(P.nb, b, nb4, slot, products, flush, next),
    ...Array.from({ length: R }, (_, r) => store(r)).flat(),
  );
  return f;
}

/**
 * `name_hpanel(w, rowBytes, n, nb, dst, dsc, tmp)`: Q8_0 or Q4_0 rows `w`,
 * `w + rowBytes`, … (n ≤ 8) as one panel of the layout above (512 bytes
 * per block; Q4_0 codes as `q − 8`, unpacked through the 128 bytes at
 * `tmp` first), scales as F32 at `dsc` (8 per block); rows past `n` repeat
 * row 0 (their outputs are never stored).
 */
function panelKernel(m: ModuleBuilder, q4: boolean): FuncBuilder {
  const f = m.func(`${q4 ? "q4_0" : "q8_0"}_hpanel`, [
    ["w", I],
    ["rowBytes", I],
    ["n", I],
    ["nb", I],
    ["dst", I],
    ["dsc", I],
    ["tmp", I],
  ]);
  const P = f.params;
  const [b, blk, to] = f.locals(I, 3);
  const a = f.locals(V, 4), tt = f.locals(V, 4);
  const [sv] = f.locals(V, 1);
  const rowAt = (r: number): Code =>
    i32.add(
      get(blk),
      select(
        i32.mul(get(P.rowBytes), c(r)),
        c(0),
        i32.lt_s(c(r), get(P.n)),
      ),
    );
  // rows 4g..4g+3, codes 8kk..8kk+7 widened to i16: a 4 × 4 transpose of
  // their i32 pairs gives pairs p = 4kk..4kk+3, the 4 rows side by side
  // Q4_0: rows 4g..4g+3 as 32 bytes `q − 8` each at tmp
  const unpack = (g: number): Code[] =>
    q4
      ? [0, 1, 2, 3].flatMap((r) => [
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
      ])
      : [];
  const codes = (g: number, r: number, kk: number): Code =>
    q4
      ? i16x8.load8x8_s(get(P.tmp), 32 * r + 8 * kk)
      : i16x8.load8x8_s(rowAt(4 * g + r), 2 + 8 * kk);
  const group = (g: number, kk: number): Code[] => [
    ...(kk === 0 ? unpack(g) : []),
    ...a.map((v, r) => set(v, codes(g, r, kk))),
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
        (4 * kk + j) * 32 + 16 * g,
      )
    ),
  ];
  f.body(
    set(blk, get(P.w)),
    set(to, get(P.dst)),
    forLoop(
      "b",
      b,
      c(0),
      get(P.nb),
      c(1),
      // the 8 scales, four at a time: halves into the low i16 of each
      // i32 lane, then f16ToF32's steps lane-wise (the same bits)
      ...[0, 1].flatMap((h) => [
        set(sv, zero),
        ...[0, 1, 2, 3].map((l) =>
          set(sv, v128.load16_lane(rowAt(4 * h + l), get(sv), 2 * l))
        ),
        v128.store(
          i32.add(get(P.dsc), i32.shl(get(b), c(5))),
          f32x4.mul(
            v128.and(
              i32x4.shr_s(i32x4.shl(get(sv), c(16)), c(3)),
              i32x4c(F16_MASK),
            ),
            f32x4c(F16_SCALE),
          ),
          16 * h,
        ),
      ]),
      ...[0, 1].flatMap((g) => [0, 1, 2, 3].flatMap((kk) => group(g, kk))),
      set(blk, i32.add(get(blk), c(q4 ? 18 : 34))),
      set(to, i32.add(get(to), c(16 * 32))),
    ),
  );
  return f;
}

/**
 * Adds `qh_pack_x(q8, dst, rows, inF)` (`dst` zeroed by the caller), the
 * microkernels, and per format `name_hpanel` and the driver `name_hgemm(xp,
 * meta, w, rowBytes, y, bp, rows, inF, outF, p0, p1, scr)` with the
 * arguments of `name_gemm` (`scr`: this thread's
 * {@link quantHgemmScratchBytes}): `q8_0` in both variants, `q4_0` in the
 * plain SIMD one only (the relaxed one has `q4_0_igemm`, faster).
 */
export function quantHgemmKernels(m: ModuleBuilder, ctx: Ctx): void {
  {
    const f = m.func("qh_pack_x", [
      ["q8", I],
      ["dst", I],
      ["rows", I],
      ["inF", I],
    ]);
    const P = f.params;
    const [r, k, from, to] = f.locals(I, 4);
    const [v] = f.locals(V, 1);
    // panel q = r / MR at q·MR·inF·2 bytes; within it per pair MR i32
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
              i32.shl(
                i32.mul(
                  i32.mul(i32.div_u(get(r), c(QH_MR)), c(QH_MR)),
                  get(P.inF),
                ),
                c(1),
              ),
              i32.shl(i32.rem_u(get(r), c(QH_MR)), c(2)),
            ),
          ),
        ),
        forLoop(
          "k",
          k,
          c(0),
          get(P.inF),
          c(8),
          set(v, i16x8.load8x8_s(get(from))),
          ...[0, 1, 2, 3].map((l) =>
            i32.store(get(to), i32x4.extract_lane(get(v), l), l * QH_MR * 4)
          ),
          set(from, i32.add(get(from), c(8))),
          set(to, i32.add(get(to), c(4 * QH_MR * 4))),
        ),
      ),
    );
  }
  const micros = Array.from({ length: QH_MR }, (_, r) => micro(m, ctx, r + 1));
  // Q4_0 here only where the module has no byte GEMM for it (plain SIMD)
  for (const q4 of ctx.relaxed ? [false] : [false, true]) {
    const panel = panelKernel(m, q4);
    quantGemmDriver(m, {
      name: `${q4 ? "q4_0" : "q8_0"}_hgemm`,
      mr: QH_MR,
      nr: QH_NR,
      micros,
      xShift: 1,
      blocks: (inF) => i32.shr_u(inF, c(5)),
      // quantize_x's metadata: 4 arrays of nb entries per row
      metaStride: (nb) => i32.shl(nb, c(4)),
      scales: (scr, inF) => i32.add(scr, i32.mul(inF, c(QH_NR * 2))),
      scratch: (dsc, nb) => i32.add(dsc, i32.shl(i32.mul(nb, c(QH_NR)), c(2))),
      panel: (a) =>
        call(
          panel,
          a.w,
          a.rowBytes,
          a.ncols,
          a.nb,
          a.scr,
          a.dsc,
          i32.add(a.sp, c(5 * QH_MR * 32)),
        ),
    });
  }
}
