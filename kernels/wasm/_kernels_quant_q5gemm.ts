/**
 * Kernel source for Q5_0 weights times many x rows (prefill, batches) as
 * an integer GEMM (relaxed variant), Q4_0's (`_kernels_quant_igemm.ts`)
 * with the fifth bit: the same x packing (`qi_pack_x`) and panel layout,
 * codes 0..31, and the F32 steps of `q5_0_dot`, so every row's results are
 * that dot kernel's bits.
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
  type Local,
  type ModuleBuilder,
  select,
  set,
  T,
  v128,
} from "./_asm.ts";
import { c, type Ctx, f16ToF32, i8x16c, zero } from "./_kernels_util.ts";
import {
  MICRO_PARAMS,
  microBlocks,
  quantGemmDriver,
  storeTileRow,
} from "./_kernels_quant_util.ts";
import { QI_MR, QI_NR } from "./_kernels_quant_igemm.ts";
import {
  PANEL_PARAMS,
  QK_NR,
  rowAddrs,
  transpose4,
} from "./_kernels_quant_kgemm.ts";

const I = T.i32;
const V = T.v128;

/**
 * `q5_0_ipanel(w, rowBytes, n, nb, dst, dsc)`: Q5_0 rows (n ≤ 8) in the
 * panel layout of `q4_0_ipanel` (`_kernels_quant_igemm.ts`: per block and
 * pair index j, 8 outputs × the codes of positions 2j, 2j+1, 16+2j, 17+2j),
 * the codes 0..31 (nibble and fifth bit), the scales as F32 at `dsc` (8
 * per block, `f16ToF32` as `q5_0_dot`'s); rows past `n` read as row 0.
 */
function q5Panel(m: ModuleBuilder): FuncBuilder {
  const f = m.func("q5_0_ipanel", PANEL_PARAMS);
  const P = f.params;
  const [b, blk, to, o, src] = f.locals(I, 5);
  const rows = f.locals(I, 8);
  const lo = f.locals(V, 4), hi = f.locals(V, 4), tt = f.locals(V, 4);
  const bits = f.local(V);
  const fifth = (qh: Local, half: number): Code =>
    v128.and(
      i8x16.eq(
        v128.and(
          i8x16.shuffle(
            get(qh),
            get(qh),
            Array.from({ length: 16 }, (_, i) => 2 * half + (i >> 3)),
          ),
          get(bits),
        ),
        get(bits),
      ),
      i8x16c(0x10),
    );
  // positions (2j, 2j+1) of the low codes beside (16+2j, 17+2j) of the
  // high ones: pair indices j = 4·half .. 4·half + 3
  const quads = (half: number): number[] =>
    Array.from(
      { length: 16 },
      (_, i) => ((i & 2) ? 16 : 0) + 8 * half + 2 * (i >> 2) + (i & 1),
    );
  const group = (v: number): Code[] => {
    const out: Code[] = [];
    for (let r = 0; r < 4; r++) {
      const row = rows[4 * v + r];
      out.push(
        set(tt[3], v128.load(get(row), 2)), // qh in lanes 0..3
        set(tt[0], v128.load(get(row), 6)),
        set(
          tt[1],
          v128.or(v128.and(get(tt[0]), i8x16c(0x0f)), fifth(tt[3], 0)),
        ),
        set(
          tt[2],
          v128.or(
            v128.and(i16x8.shr_u(get(tt[0]), c(4)), i8x16c(0x0f)),
            fifth(tt[3], 1),
          ),
        ),
        set(lo[r], i8x16.shuffle(get(tt[1]), get(tt[2]), quads(0))),
        set(hi[r], i8x16.shuffle(get(tt[1]), get(tt[2]), quads(1))),
      );
    }
    return [
      ...out,
      ...transpose4(lo, tt, to, 16 * v),
      ...transpose4(hi, tt, to, 128 + 16 * v),
    ];
  };
  f.body(
    set(
      bits,
      v128.const(
        Uint8Array.from({ length: 16 }, (_, i) => 1 << (i & 7)),
      ),
    ),
    set(blk, get(P.w)),
    set(to, get(P.dst)),
    forLoop(
      "b",
      b,
      c(0),
      get(P.nsb),
      c(1),
      ...rowAddrs(rows, blk, P.rowBytes, P.n),
      forLoop(
        "o",
        o,
        c(0),
        c(QK_NR),
        c(1),
        set(src, i32.add(get(blk), i32.mul(get(P.rowBytes), get(o)))),
        f32.store(
          i32.add(
            get(P.dm),
            i32.shl(i32.add(i32.shl(get(b), c(3)), get(o)), c(2)),
          ),
          f16ToF32(
            i32.load16_u(
              select(get(src), get(blk), i32.lt_s(get(o), get(P.n))),
            ),
          ),
        ),
      ),
      ...group(0),
      ...group(1),
      set(blk, i32.add(get(blk), c(22))),
      set(to, i32.add(get(to), c(8 * 32))),
    ),
  );
  return f;
}

/**
 * `q5i_micro_R(xp, wp, dsc, xm, mstride, nb, yp, ystride, bp, ncols, sp)`:
 * `qi_micro_R` of `_kernels_quant_igemm.ts` for Q5_0 codes (0..31): the
 * i16 lanes take four pair indices at most (4 · 2 · 31 · 128 < 2^15), so
 * each block's sums widen to i32 halfway (the first half kept in scratch),
 * and the offset removed is `16·Σx`. The F32 steps are `q5_0_dot`'s (as
 * `qi_micro_R`'s are `q4_0_dot`'s: four running sums by block mod 4, a
 * fifth for the leftover blocks).
 */
function q5Micro(m: ModuleBuilder, ctx: Ctx, R: number): FuncBuilder {
  const f = m.func(`q5i_micro_${R}`, MICRO_PARAMS);
  const P = f.params;
  const acc = Array.from({ length: R }, () => f.locals(V, 2));
  const [w0, w1, xs, t] = f.locals(V, 4);
  const [b, nb4, slot, xmb, is32] = f.locals(I, 5);
  const sum = (s: Code, r: number, h: number): Code =>
    i32.add(
      get(P.sp),
      i32.add(i32.mul(s, c(QI_MR * 32)), c(r * 32 + h * 16)),
    );
  // the first half's i32 sums of row r, outputs 4h..4h+3
  const half = (r: number, h: number): Code =>
    i32.add(get(P.sp), c(5 * QI_MR * 32 + r * 32 + h * 16));
  const steps = (j0: number): Code[] => {
    const out: Code[] = acc.flat().map((a) => set(a, zero));
    for (let j = j0; j < j0 + 4; j++) {
      out.push(
        set(w0, v128.load(get(P.wp), 32 * j)),
        set(w1, v128.load(get(P.wp), 32 * j + 16)),
      );
      for (let r = 0; r < R; r++) {
        out.push(
          set(xs, v128.load32_splat(get(P.xp), (j * QI_MR + r) * 4)),
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
  const products: Code[] = [
    ...steps(0),
    ...acc.flatMap((pair, r) =>
      pair.map((a, h) =>
        v128.store(half(r, h), i32x4.extadd_pairwise_i16x8_s(get(a)))
      )
    ),
    ...steps(4),
    set(P.xp, i32.add(get(P.xp), c(8 * QI_MR * 4))),
    set(P.wp, i32.add(get(P.wp), c(8 * 32))),
  ];
  const flush = (grouped: boolean): Code[] =>
    acc.flatMap((pair, r) => {
      const row = i32.add(get(xmb), i32.mul(get(P.mstride), c(r)));
      return [
        // 16·Σx of this block, and d_w · d_x per output
        set(t, i32x4.splat(i32.shl(i32.load(i32.add(row, get(is32))), c(4)))),
        set(xs, v128.load32_splat(row)),
        set(w0, f32x4.mul(v128.load(get(P.dsc)), get(xs))),
        set(w1, f32x4.mul(v128.load(get(P.dsc), 16), get(xs))),
        ...pair.flatMap((a, h) => {
          const at = sum(get(slot), r, h);
          const s = v128.load(at);
          const sc = get(h === 0 ? w0 : w1);
          return [
            set(
              a,
              f32x4.convert_i32x4_s(
                i32x4.sub(
                  i32x4.add(
                    i32x4.extadd_pairwise_i16x8_s(get(a)),
                    v128.load(half(r, h)),
                  ),
                  get(t),
                ),
              ),
            ),
            v128.store(
              at,
              grouped
                ? ctx.madd(get(a), sc, s)
                : f32x4.add(s, f32x4.mul(get(a), sc)),
            ),
          ];
        }),
      ];
    });
  const next: Code[] = [
    set(P.dsc, i32.add(get(P.dsc), c(QI_NR * 4))),
    set(xmb, i32.add(get(xmb), c(4))),
  ];
  f.body(
    forLoop(
      "z",
      b,
      c(0),
      c(5 * QI_MR * 32),
      c(16),
      v128.store(i32.add(get(P.sp), get(b)), zero),
    ),
    set(nb4, i32.and(get(P.nb), c(~3))),
    set(xmb, get(P.xm)),
    set(is32, i32.shl(get(P.nb), c(2))),
    ...microBlocks(P.nb, b, nb4, slot, products, flush, next),
    ...Array.from({ length: R }, (_, r) => storeTileRow(P, t, sum, r)).flat(),
  );
  return f;
}

/** Scratch bytes one thread needs for the Q5_0 GEMM, inputs of `inF` (a multiple of 32). */
export function q5IgemmScratchBytes(inF: number): number {
  return inF * QI_NR + (inF / 32) * QI_NR * 4 + 6 * QI_MR * 32 + 64;
}

/**
 * Adds (relaxed variant) `q5_0_igemm(xp, meta, w, rowBytes, y, bp, rows,
 * inF, outF, p0, p1, scr)`, the arguments of `q4_0_igemm` (x packed by
 * `qi_pack_x`; `scr`: {@link q5IgemmScratchBytes}).
 */
export function q5IgemmKernels(m: ModuleBuilder, ctx: Ctx): void {
  if (!ctx.relaxed) return;
  const micros = Array.from(
    { length: QI_MR },
    (_, r) => q5Micro(m, ctx, r + 1),
  );
  const panel = q5Panel(m);
  quantGemmDriver(m, {
    name: "q5_0_igemm",
    mr: QI_MR,
    nr: QI_NR,
    micros,
    xShift: 0,
    blocks: (inF) => i32.shr_u(inF, c(5)),
    metaStride: (nb) => i32.shl(nb, c(4)),
    scales: (scr, inF) => i32.add(scr, i32.mul(inF, c(QI_NR))),
    scratch: (dsc, nb) => i32.add(dsc, i32.shl(i32.mul(nb, c(QI_NR)), c(2))),
    panel: (a) => call(panel, a.w, a.rowBytes, a.ncols, a.nb, a.scr, a.dsc),
  });
}
