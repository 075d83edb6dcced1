/**
 * Shared pieces of the quantized kernels (`_kernels_quant.ts`): horizontal
 * sums and integer dot idioms, the per-row metadata layout of quantized
 * activations ({@link META_ARRAYS}), and what a weight format's dot product
 * works with (`Dot`, `QuantFormat`, scale loads and the block-scale
 * multiply-add).
 *
 * @module
 */

import {
  atomicAdd,
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
  select,
  seq,
  set,
  T,
  v128,
  type ValType,
} from "./_asm.ts";
import {
  byRows,
  c,
  type Ctx,
  F16_MASK,
  F16_SCALE,
  f16ToF32,
  f32x4c,
  i32x4c,
  lanes32,
  zero,
} from "./_kernels_util.ts";

/**
 * Per-row metadata of quantized activations, in arrays of `nb` (blocks of
 * 32) 4-byte entries, `ms = nb·4` bytes apart: `xd` scales (f32; for Q8_K
 * activations every 32-block of a 256-block holds that block's scale) at
 * 0, `is32` code sums per 32 (i32) at `ms`, `is16` code sums per 16 (i32,
 * 2·nb entries) at `2·ms`. A row takes `4·ms`.
 */
export const META_ARRAYS = 4;

/** Lane sums of four i32x4 vectors as one vector (transpose-add). */
export function hsum4i(p: Code[], t: Local[]): Code {
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
export function hsum4i16(q: Code[], t: Local[]): Code {
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
export function hsumI(v: Code, t: Local): Code {
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
export function bytesToI32(v: Code, first: number): Code {
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
export function widenEvenOdd(v: Code): [Code, Code] {
  return [i16x8.shr_s(i16x8.shl(v, c(8)), c(8)), i16x8.shr_s(v, c(8))];
}

/** `Σ` of the i16x8 dot products of `w[j]` with x at `xp + off + 16j`. */
export function dotI16(w: Code[], xp: Code, off: number): Code {
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
export function rdot16(x: Code, q: Code): Code {
  return i16x8.relaxed_dot_i8x16_i7x16_s(x, q);
}

/** i16 pair sums → i32 lane sums. */
export function widenSums(v: Code): Code {
  return i32x4.extadd_pairwise_i16x8_s(v);
}

// ------------------------------------------------------------ activations

/** The locals a dot-product body works with. */
export interface Dot {
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
  /** f32x4 accumulator of a min term, subtracted at the end (Q4_K). */
  accm: Local;
  v: Local[];
  /** The 16-byte vectors of an 8-block group (`main8`). */
  wv: Local[];
  p: Local[];
  t: Local[];
  s: Local[];
  n: Local[];
}

/** One weight format's dot product: its block size and loop body emitter. */
export interface QuantFormat {
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
  /** Whether `main` sums a min term into `accm`, subtracted at the end (Q4_K). */
  mins?: boolean;
}

/** Address of metadata array `a` (see {@link META_ARRAYS}) at the current block. */
export function metaPtr(d: Dot, array: number): Code {
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
export function loadScales(d: Dot, bytes: number): Code[] {
  const sp = d.n[2];
  return [
    set(sp, i32.sub(get(d.wb), c(2))),
    ...d.v.slice(8, 12).map((v, j) =>
      set(v, v128.load(get(sp), (bytes - 4) * j))
    ),
  ];
}

/** Lanes of `a`, but halfwords `fromB` of `b` (a blend). */
export function blend16(a: Code, b: Code, fromB: number[]): Code {
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
export function scale1(d: Dot): Code {
  return f16ToF32(i32.load16_u(get(d.wb)));
}

/**
 * `acc += f32(dots) · (d_w · d_x)` for four blocks (scales loaded by
 * {@link loadScales}): one rounding per block, as in ggml's `d_w·d_x·dot`
 * multiply-add.
 */
export function addBlocks4(d: Dot, dots: Code): Code {
  return set(
    d.acc,
    d.ctx.madd(f32x4.convert_i32x4_s(dots), gatherScales(d), get(d.acc)),
  );
}

/**
 * `t[0] −= 2^shift · Σx` for four blocks (x's per-32 code sums at
 * `metaPtr(d, 1) + off`): removes what weight codes stored with an offset
 * of `2^shift` (unsigned, as the relaxed dot takes them) added to the dots.
 */
export function dropOffset4(d: Dot, shift: number, off = 0): Code {
  return set(
    d.t[0],
    i32x4.sub(get(d.t[0]), i32x4.shl(v128.load(metaPtr(d, 1), off), c(shift))),
  );
}

/** `total − 2^shift · Σx` for the current block (see {@link dropOffset4}). */
export function dropOffset1(d: Dot, total: Code, shift: number): Code {
  return i32.sub(total, i32.shl(i32.load(metaPtr(d, 1)), c(shift)));
}

/**
 * `accs += f32(total) · (scale · d_x)` for the current block; `scale`
 * defaults to the block's f16 scale ({@link scale1}).
 */
export function addBlock1(d: Dot, total: Code, scale: Code = scale1(d)): Code {
  return set(
    d.accs,
    f32.add(
      get(d.accs),
      f32.mul(
        f32.convert_i32_s(total),
        f32.mul(scale, f32.load(metaPtr(d, 0))),
      ),
    ),
  );
}

/**
 * Emits the end of row `r` of a quantized micro-kernel's two-vector tile:
 * per half `h`, the five running sums (`sum(q, r, h)`, q = 0..4) added
 * together with the bias at `P.bp`, then stored at `P.yp + r·P.ystride`,
 * whole when `P.ncols` covers the half and lane by lane otherwise. `t` is
 * a scratch v128 local.
 */
export function storeTileRow(
  P: Readonly<Record<string, Local>>,
  t: Local,
  sum: (s: Code, r: number, h: number) => Code,
  r: number,
): Code[] {
  const row = i32.add(get(P.yp), i32.mul(get(P.ystride), c(r)));
  const lane = (h: number, l: number) =>
    f32.store(row, f32x4.extract_lane(get(t), l), 16 * h + 4 * l);
  const parts: Code[] = [];
  for (let h = 0; h < 2; h++) {
    const s = (q: number) => v128.load(sum(c(q), r, h));
    parts.push(
      set(
        t,
        f32x4.add(
          f32x4.add(
            f32x4.add(f32x4.add(s(0), s(2)), f32x4.add(s(1), s(3))),
            s(4),
          ),
          v128.load(get(P.bp), 16 * h),
        ),
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
 * Emits a quantized micro-kernel's walk over its `nb` blocks: blocks
 * 0 … `nb4`−1 (`nb4` = 4⌊nb/4⌋) into running sum `slot` = b mod 4 with
 * `flush(true)`, the rest into sum 4 with `flush(false)`; each block is
 * `products`, the flush, then `next` (advance to the next block's scales).
 * `b` and `slot` are i32 locals it sets.
 */
export function microBlocks(
  nb: Local,
  b: Local,
  nb4: Local,
  slot: Local,
  products: Code[],
  flush: (grouped: boolean) => Code[],
  next: Code[],
): Code[] {
  return [
    forLoop(
      "g",
      b,
      c(0),
      get(nb4),
      c(1),
      ...products,
      set(slot, i32.and(get(b), c(3))),
      ...flush(true),
      ...next,
    ),
    set(slot, c(4)),
    forLoop(
      "s",
      b,
      get(nb4),
      get(nb),
      c(1),
      ...products,
      ...flush(false),
      ...next,
    ),
  ];
}

/**
 * The parameters of the quantized micro-kernels `qg_micro_R` and
 * `qi_micro_R` (all i32 addresses and counts; see `_kernels_quant_gemm.ts`).
 */
export const MICRO_PARAMS: [string, ValType][] = [
  ["xp", T.i32],
  ["wp", T.i32],
  ["dsc", T.i32],
  ["xm", T.i32],
  ["mstride", T.i32],
  ["nb", T.i32],
  ["yp", T.i32],
  ["ystride", T.i32],
  ["bp", T.i32],
  ["ncols", T.i32],
  ["sp", T.i32],
];

/** What a quantized GEMM leaves to its format (see {@link quantGemmDriver}). */
export interface GemmDriverSpec {
  /** Export name, e.g. `q4_0_igemm`. */
  name: string;
  /** x rows of a tile (micro-kernels for 1 … mr rows). */
  mr: number;
  /** Outputs of a panel. */
  nr: number;
  /** The micro-kernels by rows − 1, with {@link MICRO_PARAMS}. */
  micros: { index: number }[];
  /** log2 of the packed x's bytes per value (0 bytes, 1 i16, 2 f32). */
  xShift: number;
  /** The blocks per row the micro-kernels loop over, from `inF`. */
  blocks: (inF: Code) => Code;
  /** Bytes between rows of the activations' metadata. */
  metaStride: (nb: Code, inF: Code) => Code;
  /** Where the panel's scales start in the scratch `scr`. */
  scales: (scr: Code, inF: Code) => Code;
  /** Where the micro-kernels' own scratch starts, after the scales. */
  scratch: (dsc: Code, nb: Code) => Code;
  /** Unpacks the panel of up to `nr` outputs whose first row is at `w`. */
  panel: (a: {
    w: Code;
    rowBytes: Code;
    ncols: Code;
    nb: Code;
    scr: Code;
    dsc: Code;
    sp: Code;
  }) => Code;
}

/**
 * Emits the driver every quantized GEMM shares: `name(xp, meta, w,
 * rowBytes, y, bp, rows, inF, outF, p0, p1, scr, counter, grab)` unpacks
 * the weight panels `[p0, p1)` (8 outputs each) one at a time into `scr`
 * and runs the micro-kernels over the x rows in tiles of `mr`; the format
 * decides the sizes and the panel step. With `counter` 0 it runs the whole
 * range; otherwise the threads of a job share the range through the i32 at
 * `counter` (zero at the start), each taking `grab` panels at a time from
 * `p0 + counter` until the range is done, so a thread that starts late or
 * loses its core for a while takes fewer panels instead of holding up the
 * job (which thread runs a panel does not change its bits).
 */
export function quantGemmDriver(m: ModuleBuilder, o: GemmDriverSpec): void {
  const f = m.func(o.name, [
    ["xp", T.i32],
    ["meta", T.i32],
    ["w", T.i32],
    ["rowBytes", T.i32],
    ["y", T.i32],
    ["bp", T.i32],
    ["rows", T.i32],
    ["inF", T.i32],
    ["outF", T.i32],
    ["p0", T.i32],
    ["p1", T.i32],
    ["scr", T.i32],
    ["counter", T.i32],
    ["grab", T.i32],
  ]);
  const P = f.params;
  const [nb, p, q, nr, ncols, ystride, dsc, sp, mstride] = f.locals(T.i32, 9);
  const [g0, g1] = f.locals(T.i32, 2);
  const xRow = i32.mul(get(q), get(P.inF));
  const callR = (r: number): Code =>
    call(
      o.micros[r - 1],
      i32.add(get(P.xp), o.xShift ? i32.shl(xRow, c(o.xShift)) : xRow),
      get(P.scr),
      get(dsc),
      i32.add(get(P.meta), i32.mul(get(q), get(mstride))),
      get(mstride),
      get(nb),
      i32.add(
        get(P.y),
        i32.add(i32.mul(get(q), get(ystride)), i32.shl(get(p), c(5))),
      ),
      get(ystride),
      i32.add(get(P.bp), i32.shl(get(p), c(5))),
      get(ncols),
      get(sp),
    );
  // the panels [g0, g1): the whole range, or one grab of it
  const panels = forLoop(
    "p",
    p,
    get(g0),
    get(g1),
    c(1),
    set(ncols, i32.sub(get(P.outF), i32.shl(get(p), c(3)))),
    set(ncols, select(c(o.nr), get(ncols), i32.gt_s(get(ncols), c(o.nr)))),
    o.panel({
      w: i32.add(get(P.w), i32.mul(i32.shl(get(p), c(3)), get(P.rowBytes))),
      rowBytes: get(P.rowBytes),
      ncols: get(ncols),
      nb: get(nb),
      scr: get(P.scr),
      dsc: get(dsc),
      sp: get(sp),
    }),
    forLoop(
      "q",
      q,
      c(0),
      get(P.rows),
      c(o.mr),
      set(nr, i32.sub(get(P.rows), get(q))),
      set(nr, select(c(o.mr), get(nr), i32.gt_s(get(nr), c(o.mr)))),
      byRows(nr, o.mr, callR),
    ),
  );
  f.body(
    set(nb, o.blocks(get(P.inF))),
    set(ystride, i32.shl(get(P.outF), c(2))),
    set(mstride, o.metaStride(get(nb), get(P.inF))),
    set(dsc, o.scales(get(P.scr), get(P.inF))),
    set(sp, o.scratch(get(dsc), get(nb))),
    set(g0, get(P.p0)),
    set(g1, get(P.p1)),
    block(
      "done",
      loop(
        "grab",
        if_(get(P.counter), [
          set(g0, i32.add(get(P.p0), atomicAdd(get(P.counter), get(P.grab)))),
          set(g1, i32.add(get(g0), get(P.grab))),
          set(g1, select(get(P.p1), get(g1), i32.gt_s(get(g1), get(P.p1)))),
        ]),
        brIf("done", i32.ge_s(get(g0), get(P.p1))),
        panels,
        brIf("done", i32.eqz(get(P.counter))),
        br("grab"),
      ),
    ),
  );
}
