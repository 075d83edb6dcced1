/**
 * Kernel source for the F32 matmul `y = x · Wᵀ + b` as an outer-product
 * GEMM: W is packed into panels of {@link GEMM_NR} output columns (per
 * input element k, the panel's 8 weights side by side), x into panels of
 * {@link GEMM_MR} rows (per k, the rows' 5 values side by side). The
 * microkernel keeps a 5 × 8 tile of y in ten f32x4 registers and, per k,
 * loads two weight vectors and broadcasts five x values: ten fused
 * multiply-adds on seven loads, ten independent accumulation chains (enough
 * to cover the FMA latency), nothing to sum across lanes at the end.
 * Tiles of fewer rows (the last x panel, or decode's single row) split the
 * k loop into phases with their own accumulators, so they too keep at least
 * eight chains in flight.
 *
 * Blocking: k in blocks of {@link GEMM_KC}; for each k block, each weight
 * panel's slice (KC × 32 bytes, in L1) meets every x panel's slice (in
 * L2). Threads split the weight panels.
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
  i32,
  i8x16,
  if_,
  type ModuleBuilder,
  select,
  set,
  T,
  v128,
} from "./_asm.ts";
import { byRows, c, type Ctx, lanes32, zero } from "./_kernels_util.ts";

/** Rows of x per packed panel (the microkernel's rows). */
export const GEMM_MR = 5;
/** Columns of y (rows of W) per packed panel: two f32x4. */
export const GEMM_NR = 8;
/** k values per microkernel loop step. */
const GEMM_UNROLL = 4;
/** Input elements per k block. */
export const GEMM_KC = 256;
/**
 * Smallest input size sent to the GEMM. Each output sums one k block (256)
 * in a single chain, so below this the 4-lane dot-product kernel of
 * `_kernels.ts`, whose lanes sum a quarter of the row each, is the more
 * accurate one (and fast enough); from here on both sum runs of 256 terms.
 * The choice depends on the weight only, so a row's result never depends on
 * how many rows a call carries.
 */
export const GEMM_MIN_IN = 256;

const I = T.i32;
const V = T.v128;

/**
 * `f32_gemm_micro_R(xp, wp, kc, yp, ystride, bp, ncols, accum)`: the
 * `R × 8` tile (R ≤ MR) of y over `kc` values of k. `xp` steps MR floats
 * per k, `wp` eight. Stores `acc + (accum ? y : bias)` into the first
 * `ncols` columns of R rows of y (`ystride` bytes apart).
 */
function micro(m: ModuleBuilder, ctx: Ctx, R: number): FuncBuilder {
  const f = m.func(`f32_gemm_micro_${R}`, [
    ["xp", I],
    ["wp", I],
    ["kc", I],
    ["yp", I],
    ["ystride", I],
    ["bp", I],
    ["ncols", I],
    ["accum", I],
  ]);
  const { xp, wp, kc, yp, ystride, bp, ncols, accum } = f.params;
  // phases: consecutive k values go to separate accumulator sets
  const phases = 1;
  const acc = Array.from(
    { length: phases },
    () => Array.from({ length: R }, () => f.locals(V, 2)),
  );
  const [w0, w1, bx, t] = f.locals(V, 4);
  const [k, end] = f.locals(I, 2);
  const step = (ph: number, off: number): Code[] => {
    const out: Code[] = [
      set(w0, v128.load(get(wp), off * 32)),
      set(w1, v128.load(get(wp), off * 32 + 16)),
    ];
    // x[k][0..3] as one vector, split into broadcasts by shuffles; row 4
    // (and rows of narrow tiles past 4) broadcast straight from memory.
    // Broadcasting every row from memory makes TurboFan hoist the loads
    // and spill; shuffling every row would crowd the shuffle port.
    out.push(set(t, v128.load(get(xp), off * GEMM_MR * 4)));
    for (let r = 0; r < R; r++) {
      out.push(
        set(
          bx,
          r < 4
            ? i8x16.shuffle(get(t), get(t), lanes32([r, r, r, r]))
            : v128.load32_splat(get(xp), off * GEMM_MR * 4 + r * 4),
        ),
        set(acc[ph][r][0], ctx.madd(get(bx), get(w0), get(acc[ph][r][0]))),
        set(acc[ph][r][1], ctx.madd(get(bx), get(w1), get(acc[ph][r][1]))),
      );
    }
    return out;
  };
  // Main loop: U k values per iteration (a multiple of the phases).
  const U = phases === 1 ? GEMM_UNROLL : phases;
  const main: Code[] = [];
  for (let u = 0; u < U; u++) main.push(...step(u % phases, u));
  const sums: Code[] = [];
  for (let r = 0; r < R; r++) {
    for (let h = 0; h < 2; h++) {
      let v: Code = get(acc[0][r][h]);
      for (let ph = 1; ph < phases; ph++) v = f32x4.add(v, get(acc[ph][r][h]));
      sums.push(set(acc[0][r][h], v));
    }
  }
  const store = (r: number): Code[] => {
    const row = i32.add(get(yp), i32.mul(get(ystride), c(r)));
    const base = (h: number) =>
      v128.load(select(row, get(bp), get(accum)), 16 * h);
    const lane = (h: number, l: number) =>
      f32.store(row, f32x4.extract_lane(get(t), l), 16 * h + 4 * l);
    const parts: Code[] = [];
    for (let h = 0; h < 2; h++) {
      parts.push(set(t, f32x4.add(get(acc[0][r][h]), base(h))));
      // columns 4h..4h+3 of this row, as many as exist
      parts.push(
        if_(i32.ge_s(get(ncols), c(4 * h + 4)), [
          v128.store(row, get(t), 16 * h),
        ], [
          if_(i32.gt_s(get(ncols), c(4 * h)), [lane(h, 0)]),
          if_(i32.gt_s(get(ncols), c(4 * h + 1)), [lane(h, 1)]),
          if_(i32.gt_s(get(ncols), c(4 * h + 2)), [lane(h, 2)]),
        ]),
      );
    }
    return parts;
  };
  f.body(
    ...acc.flat(2).map((a) => set(a, zero)),
    set(end, i32.sub(get(kc), c(U - 1))),
    forLoop(
      "kU",
      k,
      c(0),
      get(end),
      c(U),
      ...main,
      set(xp, i32.add(get(xp), c(U * GEMM_MR * 4))),
      set(wp, i32.add(get(wp), c(U * 32))),
    ),
    // leftover k values (fewer than U), all into phase 0
    forLoop(
      "k1",
      k,
      get(k),
      get(kc),
      c(1),
      ...step(0, 0),
      set(xp, i32.add(get(xp), c(GEMM_MR * 4))),
      set(wp, i32.add(get(wp), c(32))),
    ),
    ...sums,
    ...Array.from({ length: R }, (_, r) => store(r)).flat(),
  );
  return f;
}

/**
 * Adds the F32 GEMM kernels: `f32_gemm_pack_w(src, dst, outF, inF)`,
 * `f32_gemm_pack_x(src, dst, rows, inF)` (destinations zeroed by the
 * caller), the microkernels and the threaded driver
 * `f32_gemm(xp, wp, y, bp, rows, inF, outF, p0, p1)` for weight panels
 * `[p0, p1)` (`bp`: bias padded to whole panels).
 *
 * @param m The module being built.
 * @param ctx The variant.
 */
export function gemmKernels(m: ModuleBuilder, ctx: Ctx): void {
  // W [outF, inF] → panels [p][k][8]
  {
    const f = m.func("f32_gemm_pack_w", [
      ["src", I],
      ["dst", I],
      ["outF", I],
      ["inF", I],
    ]);
    const { src, dst, outF, inF } = f.params;
    const [o, k, to, from] = f.locals(I, 4);
    f.body(
      forLoop(
        "o",
        o,
        c(0),
        get(outF),
        c(1),
        set(from, i32.add(get(src), i32.shl(i32.mul(get(o), get(inF)), c(2)))),
        set(
          to,
          i32.add(
            get(dst),
            i32.add(
              i32.shl(i32.mul(i32.shr_u(get(o), c(3)), get(inF)), c(5)),
              i32.shl(i32.and(get(o), c(7)), c(2)),
            ),
          ),
        ),
        forLoop(
          "k",
          k,
          c(0),
          get(inF),
          c(1),
          f32.store(get(to), f32.load(get(from))),
          set(from, i32.add(get(from), c(4))),
          set(to, i32.add(get(to), c(32))),
        ),
      ),
    );
  }
  // x [rows, inF] → panels [q][k][MR]
  {
    const f = m.func("f32_gemm_pack_x", [
      ["src", I],
      ["dst", I],
      ["rows", I],
      ["inF", I],
    ]);
    const { src, dst, rows, inF } = f.params;
    const [r, k, to, from] = f.locals(I, 4);
    f.body(
      forLoop(
        "r",
        r,
        c(0),
        get(rows),
        c(1),
        set(from, i32.add(get(src), i32.shl(i32.mul(get(r), get(inF)), c(2)))),
        set(
          to,
          i32.add(
            get(dst),
            i32.shl(
              i32.add(
                i32.mul(
                  i32.mul(i32.div_u(get(r), c(GEMM_MR)), get(inF)),
                  c(GEMM_MR),
                ),
                i32.rem_u(get(r), c(GEMM_MR)),
              ),
              c(2),
            ),
          ),
        ),
        forLoop(
          "k",
          k,
          c(0),
          get(inF),
          c(1),
          f32.store(get(to), f32.load(get(from))),
          set(from, i32.add(get(from), c(4))),
          set(to, i32.add(get(to), c(GEMM_MR * 4))),
        ),
      ),
    );
  }
  const micros = Array.from(
    { length: GEMM_MR },
    (_, r) => micro(m, ctx, r + 1),
  );
  {
    const f = m.func("f32_gemm", [
      ["xp", I],
      ["wp", I],
      ["y", I],
      ["bp", I],
      ["rows", I],
      ["inF", I],
      ["outF", I],
      ["p0", I],
      ["p1", I],
    ]);
    const { xp, wp, y, bp, rows, inF, outF, p0, p1 } = f.params;
    const [kb, kc, p, q, nr, ncols, ystride, xa, wa, ya, b] = f.locals(I, 11);
    const calls = (r: number): Code =>
      call(
        micros[r - 1],
        get(xa),
        get(wa),
        get(kc),
        get(ya),
        get(ystride),
        get(b),
        get(ncols),
        get(kb),
      );
    // full panels first, then the tail sizes
    const dispatch = byRows(nr, GEMM_MR, calls);
    f.body(
      set(ystride, i32.shl(get(outF), c(2))),
      forLoop(
        "kb",
        kb,
        c(0),
        get(inF),
        c(GEMM_KC),
        set(kc, i32.sub(get(inF), get(kb))),
        set(kc, select(c(GEMM_KC), get(kc), i32.gt_s(get(kc), c(GEMM_KC)))),
        forLoop(
          "p",
          p,
          get(p0),
          get(p1),
          c(1),
          set(ncols, i32.sub(get(outF), i32.shl(get(p), c(3)))),
          set(ncols, select(c(8), get(ncols), i32.gt_s(get(ncols), c(8)))),
          set(
            wa,
            i32.add(
              get(wp),
              i32.shl(i32.add(i32.mul(get(p), get(inF)), get(kb)), c(5)),
            ),
          ),
          set(b, i32.add(get(bp), i32.shl(get(p), c(5)))),
          forLoop(
            "q",
            q,
            c(0),
            get(rows),
            c(GEMM_MR),
            set(nr, i32.sub(get(rows), get(q))),
            set(
              nr,
              select(c(GEMM_MR), get(nr), i32.gt_s(get(nr), c(GEMM_MR))),
            ),
            // x panel q / MR starts q·inF floats in; k block kb·MR further
            set(
              xa,
              i32.add(
                get(xp),
                i32.shl(
                  i32.add(
                    i32.mul(get(q), get(inF)),
                    i32.mul(get(kb), c(GEMM_MR)),
                  ),
                  c(2),
                ),
              ),
            ),
            set(
              ya,
              i32.add(
                get(y),
                i32.add(
                  i32.mul(get(q), get(ystride)),
                  i32.shl(get(p), c(5)),
                ),
              ),
            ),
            dispatch,
          ),
        ),
      ),
    );
  }
}

/** Bytes of the packed W of `outF × inF`. */
export function gemmPackedWBytes(outF: number, inF: number): number {
  return Math.ceil(outF / GEMM_NR) * inF * GEMM_NR * 4;
}

/** Bytes of the packed x of `rows × inF`. */
export function gemmPackedXBytes(rows: number, inF: number): number {
  return Math.ceil(rows / GEMM_MR) * inF * GEMM_MR * 4;
}
