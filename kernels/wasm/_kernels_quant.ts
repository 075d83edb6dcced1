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
 * The source is in five files: `_kernels_quant_x.ts` (activation
 * quantization), `_kernels_quant_q8_q4.ts` (the Q8_0 and Q4_0 formats),
 * `_kernels_quant_k.ts` (Q4_K, Q6_K), `_kernels_quant_util.ts` (shared
 * idioms and the format interface) and this one (the dot function of each
 * format, the threaded `name_mm` driver, `touch`).
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
  forLoop,
  type FuncBuilder,
  get,
  i32,
  if_,
  type Local,
  loop,
  type ModuleBuilder,
  ret,
  select,
  seq,
  set,
  T,
  type ValType,
} from "./_asm.ts";
import { c, type Ctx, hsum, zero } from "./_kernels_util.ts";
import { Q4_K, Q6_K } from "./_kernels_quant_k.ts";
import { Q5_0 } from "./_kernels_quant_q5.ts";
import { IQ4_NL, IQ4_XS, MXFP4 } from "./_kernels_quant_iq.ts";
import { IQ2_XS, IQ3_S } from "./_kernels_quant_iq_grid.ts";
import {
  probeKernel,
  Q4_0,
  Q8_0,
  Q8_0S,
  Q8_0U,
} from "./_kernels_quant_q8_q4.ts";
import {
  type Dot,
  META_ARRAYS,
  type QuantFormat,
} from "./_kernels_quant_util.ts";

import { quantizeX } from "./_kernels_quant_x.ts";
import { Q8_0T, split5Kernel } from "./_kernels_quant_q8t.ts";
import {
  prepKernels,
  type PrepWay,
  signProbeKernel,
} from "./_kernels_quant_prep.ts";

/**
 * Least x rows for which `name_mm` prepares each Q8_0 weight row once
 * (`name_prep`) and dots the prepared row with every x row
 * (`name_pdot`), instead of dotting the stored row with each.
 */
export const PREP_MIN_ROWS = 2;

export { META_ARRAYS } from "./_kernels_quant_util.ts";
export { U8_DOT_PROBE } from "./_kernels_quant_q8_q4.ts";

const I = T.i32;
const F = T.f32;
const V = T.v128;

const FORMATS: QuantFormat[] = [
  Q8_0,
  Q4_0,
  Q5_0,
  Q4_K,
  Q6_K,
  IQ4_NL,
  MXFP4,
  IQ4_XS,
  IQ3_S,
  IQ2_XS,
];

/**
 * The activation rule (`"q8_0"`: Q8_0 blocks of 32, `"q8_k"`: Q8_K blocks
 * of 256) whose quantizer (`quantize_x` / `quantize_xk`) a weight format's
 * kernels read.
 */
export function activationRule(name: string): "q8_0" | "q8_k" {
  return [...FORMATS, Q8_0U, Q8_0S, Q8_0T].find((x) => x.name === name)!.act;
}

/**
 * Bytes ahead of the block being read at which the dot products touch the
 * weights (one 4-byte load per 64-byte line). WebAssembly has no prefetch
 * instruction, and the integer arithmetic per weight byte is heavy enough
 * that the core's own look-ahead covers few cache lines, so without these
 * loads reading from memory and computing take turns instead of
 * overlapping: on the Xeon of docs/performance.md a 4096 × 4096 Q8_0
 * matvec measured 1.67 ms without them and 1.04 ms with them, against 0.84
 * ms to stream its bytes (`deno task bench:compare --only matvec`). Since
 * jobs read their rows in several streams (`name_mm`'s `streams`) the gain
 * is smaller (1.15 → 1.10 ms) and small jobs run faster without them; on
 * the AMD EPYC of the same page they cost time at every job size, so
 * kernels/fast turns them on only where measured to help (`state.readAheadMinBytes`).
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
  if (nr > 1 && !q.main8 && !NR_FORMATS.has(q.name)) {
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
    accm: f.local(V),
  }));
  const [b, i] = shared.n;
  // One load per 64-byte line of the `bytes` row `d` reads per iteration,
  // at PREFETCH_BYTES ahead (or at the block itself near the end of
  // memory). Their sum joins the results times zero, so the loads stay.
  // `lim` = 0 (touch loads off) skips them: a branch per iteration instead
  // of the loads and adds.
  const prefetch = (d: Dot, bytes: number): Code[] => [
    if_(i32.ne(get(P.lim), c(0)), [
      set(ahead, i32.add(get(d.wb), c(PREFETCH_BYTES))),
      set(
        ahead,
        select(get(ahead), get(d.wb), i32.lt_u(get(ahead), get(P.lim))),
      ),
      ...Array.from(
        { length: Math.ceil(bytes / 64) },
        (_, k) => set(touch, i32.add(get(touch), i32.load(get(ahead), k * 64))),
      ),
    ]),
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
      q.mins ? f32.sub(sum, hsum(get(d.accm), shared.t[1])) : sum,
      f32.mul(f32.convert_i32_s(get(touch)), f32.const(0)),
    );
  };
  f.body(
    set(touch, c(0)),
    set(shared.is16, i32.add(get(P.xm), i32.mul(get(P.ms), c(2)))),
    ...each((d) => [
      set(d.acc, zero),
      set(d.accs, f32.const(0)),
      ...(q.mins ? [set(d.accm, zero)] : []),
    ]),
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
            ...(q.group === 1 ? each((d) => prefetch(d, q.bytes)) : []),
            ...each((d) => q.main(d)),
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

/**
 * Formats without an 8-block body (`main8`) that still get a `name_dotN`
 * (`main` run once per row in each iteration, so each x load and the
 * per-call work serve `NR` rows).
 */
const NR_FORMATS = new Set(["q5_0", "q4_k", "q6_k"]);

/** How each format's prepared rows are dotted (see `prepKernels`). */
const PREP_WAYS: Record<string, PrepWay> = {
  q8_0: "signed",
  q8_0u: "unsigned",
  q8_0s: "sign",
  q4_0: "q4",
};

/** Bytes of one segment descriptor of a `name_mm` job. */
export const SEGMENT_BYTES = 16;

/**
 * Adds activation quantization (`quantize_x`, `quantize_xk`), `touch`,
 * `probe_u8dot` (relaxed variant) and, per weight format (and `q8_0u` in
 * the relaxed variant), `name_dot`, `name_dot2` (32-element blocks; see
 * `NR`) and
 * the threaded driver
 * `name_mm(desc, nseg, q8, q16, meta, rows, kp, counter, chunk, total, lim,
 * top, streams, prep)`.
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
 * them off). `prep`: for Q8_0 with at least {@link PREP_MIN_ROWS} x rows,
 * this thread's own scratch of `preparedBytes(kp / 32)` bytes, where each
 * weight row is prepared once and dotted with every x row (0: not used;
 * other formats ignore it).
 */
export function quantKernels(m: ModuleBuilder, ctx: Ctx): void {
  touchKernel(m);
  if (ctx.relaxed) probeKernel(m);
  quantizeX(m, ctx, "q8_0");
  quantizeX(m, ctx, "q8_k");
  if (ctx.relaxed) signProbeKernel(m);
  if (ctx.relaxed) split5Kernel(m);
  for (const q of ctx.relaxed ? [...FORMATS, Q8_0U, Q8_0S, Q8_0T] : FORMATS) {
    const dot = dotFunction(m, ctx, q);
    const dotN = (q.main8 && q.single && q.elems === 32) ||
        NR_FORMATS.has(q.name)
      ? dotFunction(m, ctx, q, NR)
      : undefined;
    // Q8_0 (and, relaxed, Q4_0) rows prepared once for several x rows
    // (see PREP_MIN_ROWS)
    const way = PREP_WAYS[q.name];
    const prepared = way && (ctx.relaxed || way === "signed")
      ? prepKernels(m, ctx, q.name, way)
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
      ["prep", I],
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
    // (kq, kr) = (k / streams, k % streams), stepped along with k instead
    // of divided out per row (two divisions per row measured as a tenth of
    // a 576-wide Q5_0 row)
    const [kq, kr, kt] = f.locals(I, 3);
    const permStart: Code = seq(set(kq, c(0)), set(kr, c(0)));
    // the row of the span at the current k; then k + 1
    const permNext = (dst: Local): Code =>
      seq(
        set(dst, i32.add(i32.mul(get(kr), get(hh)), get(kq))),
        set(kr, i32.add(get(kr), c(1))),
        set(kt, i32.ge_u(get(kr), get(P.streams))),
        set(kq, i32.add(get(kq), get(kt))),
        set(kr, select(c(0), get(kr), get(kt))),
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
            permStart,
            prepared
              ? if_(
                i32.and(
                  i32.ne(get(P.prep), c(0)),
                  i32.ge_u(get(P.rows), c(PREP_MIN_ROWS)),
                ),
                [
                  forLoop(
                    "o",
                    k,
                    c(0),
                    get(kEnd),
                    c(1),
                    permNext(row),
                    if_(i32.lt_u(get(row), get(nn)), [
                      set(row, i32.add(get(row), get(s0))),
                      call(prepared.prep, rowAddr(row), get(nblk), get(P.prep)),
                      forLoop(
                        "r",
                        r,
                        c(0),
                        get(P.rows),
                        c(1),
                        store(
                          row,
                          call(
                            prepared.pdot,
                            get(P.prep),
                            ...xArgs().slice(0, 5),
                          ),
                        ),
                      ),
                    ]),
                  ),
                  set(o, get(stop)),
                  set(base, i32.add(get(base), get(outF))),
                  set(seg, i32.add(get(seg), c(1))),
                  brIf("span", i32.lt_s(get(o), get(end))),
                  br("grab"),
                ],
              )
              : seq(),
            dotN
              ? forLoop(
                "o",
                k,
                c(0),
                get(kEnd),
                c(NR),
                ...rowsN.map((l) => permNext(l)),
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
                permNext(row),
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
