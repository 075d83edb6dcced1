/**
 * Kernel source for Q4_0 weights times many x rows as an integer
 * outer-product GEMM (relaxed variant): where `_kernels_quant_gemm.ts`
 * turns codes into F32 (four products per instruction), this one keeps
 * them as bytes and lets `i16x8.relaxed_dot_i8x16_i7x16_s` (x86
 * `pmaddubsw`) do sixteen products per instruction with no sums across
 * lanes: each i16 lane belongs to one output.
 *
 * Layout, per block of 32 and pair index j (0..7): x row r contributes the
 * four codes `x[2j], x[2j+1], x[16+2j], x[17+2j]` (packed once per job,
 * panels of {@link QI_MR} rows, broadcast as one i32); a converted weight
 * panel holds, per j, 8 outputs × the same four positions of their 0..15
 * nibble codes (two vectors of four outputs). The dot of the broadcast x
 * with a weight vector puts `q·x` of positions (2j, 2j+1) into one i16
 * lane and of (16+2j, 17+2j) into the next, both of the same output;
 * eight such dots add up in i16 (each lane at most 8 · 2 · 15 · 127 =
 * 30480), and `i32x4.extadd_pairwise_i16x8_s` then gives each output's
 * `Σ q·x` over the block in its own i32 lane. `Σ (q − 8)·x` takes off
 * `8·Σx` (the block's code sum, from `quantize_x`).
 *
 * The F32 steps after each block total are those of `q4_0_dot` (see
 * `_kernels_quant_gemm.ts`), so the results are bit for bit the same.
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
export const QI_MR = 5;
/** Outputs per converted weight panel. */
export const QI_NR = 8;

const I = T.i32;
const V = T.v128;

/** Scratch bytes one thread needs for inputs of `inF` (a multiple of 32). */
export function quantIgemmScratchBytes(inF: number): number {
  const nb = inF / 32;
  return inF * QI_NR + nb * QI_NR * 4 + 5 * QI_MR * 32 + 64;
}

/** Bytes of x packed for the integer GEMM (`rows × inF` codes, whole panels). */
export function quantIgemmPackedXBytes(rows: number, inF: number): number {
  return Math.ceil(rows / QI_MR) * QI_MR * inF;
}

/**
 * `qi_micro_R(xp, wp, dsc, xm, mstride, nb, yp, ystride, bp, ncols, sp)`:
 * as `qg_micro_R` of `_kernels_quant_gemm.ts`, on packed bytes; `xm` also
 * reaches the rows' code sums per block (`xm + r·mstride + 4·nb + 4b`).
 */
function micro(m: ModuleBuilder, ctx: Ctx, R: number): FuncBuilder {
  const f = m.func(`qi_micro_${R}`, MICRO_PARAMS);
  const P = f.params;
  const acc = Array.from({ length: R }, () => f.locals(V, 2));
  const [w0, w1, xs, t] = f.locals(V, 4);
  const [b, nb4, slot, xmb, is32] = f.locals(I, 5);
  const sum = (s: Code, r: number, h: number): Code =>
    i32.add(
      get(P.sp),
      i32.add(i32.mul(s, c(QI_MR * 32)), c(r * 32 + h * 16)),
    );
  const products: Code[] = [...acc.flat().map((a) => set(a, zero))];
  for (let j = 0; j < 8; j++) {
    products.push(
      set(w0, v128.load(get(P.wp), 32 * j)),
      set(w1, v128.load(get(P.wp), 32 * j + 16)),
    );
    for (let r = 0; r < R; r++) {
      products.push(
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
  products.push(
    set(P.xp, i32.add(get(P.xp), c(8 * QI_MR * 4))),
    set(P.wp, i32.add(get(P.wp), c(8 * 32))),
  );
  const flush = (grouped: boolean): Code[] =>
    acc.flatMap((pair, r) => {
      const row = i32.add(get(xmb), i32.mul(get(P.mstride), c(r)));
      return [
        // 8·Σx of this block, and d_w · d_x per output
        set(t, i32x4.splat(i32.shl(i32.load(i32.add(row, get(is32))), c(3)))),
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
                i32x4.sub(i32x4.extadd_pairwise_i16x8_s(get(a)), get(t)),
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
  const store = (r: number): Code[] => storeTileRow(P, t, sum, r);
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
    ...Array.from({ length: R }, (_, r) => store(r)).flat(),
  );
  return f;
}

/**
 * `q4_0_ipanel(w, rowBytes, n, nb, dst, dsc)`: Q4_0 rows `w`, `w +
 * rowBytes`, … (n ≤ 8) as one panel of the layout above, scales as F32 at
 * `dsc` (8 per block); rows past `n` read as row 0 with zero scales (their
 * outputs are never stored).
 */
function panelKernel(m: ModuleBuilder): FuncBuilder {
  const f = m.func("q4_0_ipanel", [
    ["w", I],
    ["rowBytes", I],
    ["n", I],
    ["nb", I],
    ["dst", I],
    ["dsc", I],
  ]);
  const P = f.params;
  const [b, blk, to, o, src] = f.locals(I, 5);
  const lo = f.locals(V, 4), hi = f.locals(V, 4), tt = f.locals(V, 4);
  // the address of row `r`'s current block (row 0 for rows past n)
  const rowAt = (r: number): Code =>
    i32.add(
      get(blk),
      select(
        i32.mul(get(P.rowBytes), c(r)),
        c(0),
        i32.lt_s(c(r), get(P.n)),
      ),
    );
  const transposeStore = (a: Local[], v: number, first: number): Code[] => [
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
        (first + j) * 32 + 16 * v,
      )
    ),
  ];
  // i16 lanes of the low nibbles (positions 2j, 2j+1) beside those of the
  // high nibbles (16+2j, 17+2j): quads j = 0..3, then 4..7
  const quads = (half: number): number[] =>
    Array.from(
      { length: 16 },
      (_, i) => ((i & 2) ? 16 : 0) + 8 * half + 2 * (i >> 2) + (i & 1),
    );
  const group = (v: number): Code[] => {
    const out: Code[] = [];
    for (let r = 0; r < 4; r++) {
      out.push(
        set(tt[0], v128.load(rowAt(4 * v + r), 2)),
        set(tt[1], v128.and(get(tt[0]), i8x16c(0x0f))),
        set(tt[2], v128.and(i16x8.shr_u(get(tt[0]), c(4)), i8x16c(0x0f))),
        set(lo[r], i8x16.shuffle(get(tt[1]), get(tt[2]), quads(0))),
        set(hi[r], i8x16.shuffle(get(tt[1]), get(tt[2]), quads(1))),
      );
    }
    return [...out, ...transposeStore(lo, v, 0), ...transposeStore(hi, v, 4)];
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
      forLoop(
        "o",
        o,
        c(0),
        c(QI_NR),
        c(1),
        set(src, i32.add(get(blk), i32.mul(get(P.rowBytes), get(o)))),
        f32.store(
          i32.add(
            get(P.dsc),
            i32.shl(i32.add(i32.shl(get(b), c(3)), get(o)), c(2)),
          ),
          select(
            f16ToF32(
              i32.load16_u(
                select(get(src), get(blk), i32.lt_s(get(o), get(P.n))),
              ),
            ),
            f32.const(0),
            i32.lt_s(get(o), get(P.n)),
          ),
        ),
      ),
      ...group(0),
      ...group(1),
      set(blk, i32.add(get(blk), c(18))),
      set(to, i32.add(get(to), c(8 * 32))),
    ),
  );
  return f;
}

/**
 * Adds (relaxed variant) `qi_pack_x(q8, dst, rows, inF)` (`dst` zeroed by
 * the caller), the microkernels, `q4_0_ipanel` and the driver
 * `q4_0_igemm(xp, meta, w, rowBytes, y, bp, rows, inF, outF, p0, p1, scr)`
 * with the arguments of `q4_0_gemm`.
 */
export function quantIgemmKernels(m: ModuleBuilder, ctx: Ctx): void {
  if (!ctx.relaxed) return;
  {
    const f = m.func("qi_pack_x", [
      ["q8", I],
      ["dst", I],
      ["rows", I],
      ["inF", I],
    ]);
    const P = f.params;
    const [r, bj, from, to] = f.locals(I, 4);
    // panel q = r / MR at q·MR·inF bytes; within it per (block, j) MR
    // quads of 4 bytes
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
                i32.mul(i32.div_u(get(r), c(QI_MR)), c(QI_MR)),
                get(P.inF),
              ),
              i32.shl(i32.rem_u(get(r), c(QI_MR)), c(2)),
            ),
          ),
        ),
        // bj = 8·block + j over the row
        forLoop(
          "bj",
          bj,
          c(0),
          i32.shr_u(get(P.inF), c(2)),
          c(1),
          i32.store(
            get(to),
            i32.or(
              i32.load16_u(get(from)),
              i32.shl(i32.load16_u(get(from), 16), c(16)),
            ),
          ),
          set(
            from,
            i32.add(
              get(from),
              select(c(18), c(2), i32.eq(i32.and(get(bj), c(7)), c(7))),
            ),
          ),
          set(to, i32.add(get(to), c(QI_MR * 4))),
        ),
      ),
    );
  }
  const micros = Array.from({ length: QI_MR }, (_, r) => micro(m, ctx, r + 1));
  const panel = panelKernel(m);
  quantGemmDriver(m, {
    name: "q4_0_igemm",
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
