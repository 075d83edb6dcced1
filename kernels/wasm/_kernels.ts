/**
 * The kernel source: every WebAssembly function modelhost ships, written
 * with the assembler in `_asm.ts`. `buildKernelModule()` emits the module
 * bytes; `scripts/build_wasm.ts` stores them (base64) in `_module_bytes.ts`,
 * and a test regenerates them in memory to check that file is current.
 *
 * Conventions: every pointer is a byte offset into the one shared memory;
 * functions that split across threads take a half-open range of output
 * columns (or panels, or heads) so each worker computes its own slice.
 *
 * @module
 */

import {
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
  ModuleBuilder,
  select,
  seq,
  set,
  T,
  v128,
} from "./_asm.ts";
import { opsKernels } from "./_kernels_ops.ts";
import {
  c,
  Ctx,
  F16_MASK,
  F16_SCALE,
  f16ToF32,
  f32x4c,
  hsum,
  hsum4,
  i32x4c,
  i8x16c,
  lanes32,
  type KernelVariant,
  zero,
} from "./_kernels_util.ts";

export type { KernelVariant } from "./_kernels_util.ts";

/** W rows per packed F32 / F16 / BF16 panel (the microkernel's columns). */
export const PANEL_COLS = 4;
/** x rows per packed x panel (the microkernel's rows). */
export const PANEL_ROWS = 2;
/** Chunks the dense microkernel's loop body handles per iteration. */
const UNROLL = 4;
/** Chunks along k per cache block of the dense matmul. */
const KC = 256;
/** Elements per quantization block of the activation row (Q8-style). */
export const XQ_BLOCK = 32;
/** x rows a quantized kernel dots against one weight row at a time. */
export const QUANT_ROWS = 4;

const I = T.i32;
const V = T.v128;

/** Stores the first `n` lanes (1..4) of an f32x4 local at `p`. */
function storeLanes(p: Code, v: Local, n: Local): Code {
  return if_(i32.eq(get(n), c(4)), [v128.store(p, get(v))], [
    f32.store(p, f32x4.extract_lane(get(v), 0)),
    if_(i32.gt_s(get(n), c(1)), [
      f32.store(p, f32x4.extract_lane(get(v), 1), 4),
    ]),
    if_(i32.gt_s(get(n), c(2)), [
      f32.store(p, f32x4.extract_lane(get(v), 2), 8),
    ]),
  ]);
}

// ------------------------------------------------------ dense (F32, F16, BF16)

/**
 * How one dense weight dtype is laid out in packed panels and turned into
 * F32 lanes. A chunk is `k` consecutive input elements: 4 for F32, 8 for the
 * 16-bit types. x is packed to match: for the 16-bit types each chunk of 8
 * is stored as its even elements then its odd ones, the order in which two
 * halves sharing a 32-bit lane widen.
 */
interface DenseKind {
  /** Name prefix of the exported functions. */
  readonly name: string;
  /** Input elements per chunk. */
  readonly chunk: 4 | 8;
  /** Bytes of one element of W. */
  readonly wBytes: 2 | 4;
  /** Emits the F32 vectors of one loaded W chunk (one or two vectors). */
  widen(v: Code): Code[];
}

const DENSE: DenseKind[] = [
  { name: "f32", chunk: 4, wBytes: 4, widen: (v) => [v] },
  {
    name: "f16",
    chunk: 8,
    wBytes: 2,
    widen: (v) => [
      f32x4.mul(
        v128.and(
          i32x4.shr_s(i32x4.shl(v, c(16)), c(3)),
          i32x4c(F16_MASK),
        ),
        f32x4c(F16_SCALE),
      ),
      f32x4.mul(
        v128.and(i32x4.shr_s(v, c(3)), i32x4c(F16_MASK)),
        f32x4c(F16_SCALE),
      ),
    ],
  },
  {
    name: "bf16",
    chunk: 8,
    wBytes: 2,
    widen: (v) => [i32x4.shl(v, c(16)), v128.and(v, i32x4c(0xffff0000 | 0))],
  },
];

/**
 * Dense microkernel: `R` packed x rows against one packed panel of
 * {@link PANEL_COLS} W rows over `kn` chunks, `R × C` f32x4 accumulators in
 * registers. Writes `y[r][0..ncols) = Σ + (accum ? y : bias)`.
 */
function denseMicro(
  m: ModuleBuilder,
  ctx: Ctx,
  kind: DenseKind,
  R: number,
): FuncBuilder {
  const C = PANEL_COLS;
  const vecs = kind.chunk / 4; // f32x4 vectors of x per row per chunk
  const xStep = R * vecs * 16;
  const wStep = C * 16;
  const f = m.func(`${kind.name}_micro_${R}`, [
    ["xp", I],
    ["wp", I],
    ["kn", I],
    ["yp", I],
    ["ystride", I],
    ["bp", I],
    ["ncols", I],
    ["accum", I],
  ]);
  const { xp, wp, kn, yp, ystride, bp, ncols, accum } = f.params;
  const acc = Array.from({ length: R }, () => f.locals(V, C));
  const xv = Array.from({ length: R }, () => f.locals(V, vecs));
  const wv = f.locals(V, vecs);
  const t = f.locals(V, 4);
  const step = (u: number): Code[] => {
    const out: Code[] = [];
    for (let r = 0; r < R; r++) {
      for (let j = 0; j < vecs; j++) {
        out.push(
          set(xv[r][j], v128.load(get(xp), u * xStep + (r * vecs + j) * 16)),
        );
      }
    }
    for (let cc = 0; cc < C; cc++) {
      const widened = kind.widen(v128.load(get(wp), u * wStep + cc * 16));
      widened.forEach((code, j) => out.push(set(wv[j], code)));
      for (let r = 0; r < R; r++) {
        for (let j = 0; j < vecs; j++) {
          out.push(
            set(acc[r][cc], ctx.madd(get(xv[r][j]), get(wv[j]), get(acc[r][cc]))),
          );
        }
      }
    }
    return out;
  };
  const tail: Code[] = [];
  for (let r = 0; r < R; r++) {
    tail.push(
      hsum4(get(acc[r][0]), get(acc[r][1]), get(acc[r][2]), get(acc[r][3]), t),
      set(
        t[0],
        f32x4.add(get(t[0]), v128.load(select(get(yp), get(bp), get(accum)))),
      ),
      storeLanes(get(yp), t[0], ncols),
      set(yp, i32.add(get(yp), get(ystride))),
    );
  }
  const U = kind.chunk === 4 ? UNROLL : UNROLL / 2;
  f.body(
    ...acc.flat().map((a) => set(a, zero)),
    if_(i32.ge_s(get(kn), c(U)), [
      loop(
        "kU",
        ...Array.from({ length: U }, (_, u) => step(u)).flat(),
        set(xp, i32.add(get(xp), c(U * xStep))),
        set(wp, i32.add(get(wp), c(U * wStep))),
        set(kn, i32.sub(get(kn), c(U))),
        brIf("kU", i32.ge_s(get(kn), c(U))),
      ),
    ]),
    if_(i32.gt_s(get(kn), c(0)), [
      loop(
        "k",
        ...step(0),
        set(xp, i32.add(get(xp), c(xStep))),
        set(wp, i32.add(get(wp), c(wStep))),
        set(kn, i32.sub(get(kn), c(1))),
        brIf("k", get(kn)),
      ),
    ]),
    ...tail,
  );
  return f;
}

/** Offset (bytes) of x element (r, k) inside a packed panel of `nr` rows. */
function xPackedOffset(kind: DenseKind, k: Code, r: Code, nr: Code): Code {
  if (kind.chunk === 4) {
    // [k4][r][4 floats]
    return i32.add(
      i32.shl(i32.add(i32.mul(i32.shr_u(k, c(2)), nr), r), c(4)),
      i32.shl(i32.and(k, c(3)), c(2)),
    );
  }
  // [k8][r][even 4 | odd 4]; element j of a chunk sits at (j&1)*4 + (j>>1).
  return i32.add(
    i32.shl(i32.add(i32.mul(i32.shr_u(k, c(3)), nr), r), c(5)),
    i32.shl(
      i32.add(
        i32.shl(i32.and(k, c(1)), c(2)),
        i32.shr_u(i32.and(k, c(7)), c(1)),
      ),
      c(2),
    ),
  );
}

function denseKernels(m: ModuleBuilder, ctx: Ctx, kind: DenseKind): void {
  const R = PANEL_ROWS;
  const C = PANEL_COLS;
  const K = kind.chunk;
  const micro = Array.from(
    { length: R },
    (_, r) => denseMicro(m, ctx, kind, r + 1),
  );
  const xChunk = (K / 4) * 16; // bytes per x row per chunk
  const wChunk = 16; // bytes per W row per chunk

  // Packs x [rows, inF] (F32) into panels of R rows, zero padded to kn chunks.
  {
    const f = m.func(`${kind.name}_pack_x`, [
      ["src", I],
      ["dst", I],
      ["rows", I],
      ["inF", I],
      ["kn", I],
    ]);
    const { src, dst, rows, inF, kn } = f.params;
    const [q, r, k, nr, base] = f.locals(I, 5);
    f.body(
      forLoop(
        "q",
        q,
        c(0),
        get(rows),
        c(R),
        set(nr, i32.sub(get(rows), get(q))),
        set(nr, select(c(R), get(nr), i32.gt_s(get(nr), c(R)))),
        set(
          base,
          i32.add(get(dst), i32.mul(i32.mul(get(q), get(kn)), c(xChunk))),
        ),
        forLoop(
          "r",
          r,
          c(0),
          get(nr),
          c(1),
          forLoop(
            "k",
            k,
            c(0),
            i32.mul(get(kn), c(K)),
            c(1),
            f32.store(
              i32.add(get(base), xPackedOffset(kind, get(k), get(r), get(nr))),
              select(
                f32.load(
                  i32.add(
                    get(src),
                    i32.shl(
                      i32.add(
                        i32.mul(i32.add(get(q), get(r)), get(inF)),
                        get(k),
                      ),
                      c(2),
                    ),
                  ),
                ),
                f32.const(0),
                i32.lt_s(get(k), get(inF)),
              ),
            ),
          ),
        ),
      ),
    );
  }

  // Packs W [outF, inF] (row-major, stored dtype) into panels of C rows:
  // [panel][chunk][c][K elements], zero padded.
  {
    const f = m.func(`${kind.name}_pack_w`, [
      ["src", I],
      ["dst", I],
      ["outF", I],
      ["inF", I],
      ["kn", I],
    ]);
    const { src, dst, outF, inF, kn } = f.params;
    const [o, k, at, from] = f.locals(I, 4);
    const eb = kind.wBytes;
    const sh = eb === 4 ? 2 : 1;
    const load = eb === 4 ? i32.load : i32.load16_u;
    const store = eb === 4 ? i32.store : i32.store16;
    f.body(
      forLoop(
        "o",
        o,
        c(0),
        get(outF),
        c(1),
        forLoop(
          "k",
          k,
          c(0),
          i32.mul(get(kn), c(K)),
          c(1),
          // panel o/C, chunk k/K, column o%C, element k%K
          set(
            at,
            i32.add(
              get(dst),
              i32.add(
                i32.mul(
                  i32.add(
                    i32.mul(i32.div_u(get(o), c(C)), get(kn)),
                    i32.div_u(get(k), c(K)),
                  ),
                  c(C * wChunk),
                ),
                i32.add(
                  i32.mul(i32.rem_u(get(o), c(C)), c(wChunk)),
                  i32.shl(i32.rem_u(get(k), c(K)), c(sh)),
                ),
              ),
            ),
          ),
          set(
            from,
            i32.add(
              get(src),
              i32.shl(i32.add(i32.mul(get(o), get(inF)), get(k)), c(sh)),
            ),
          ),
          store(
            get(at),
            select(load(get(from)), c(0), i32.lt_s(get(k), get(inF))),
          ),
        ),
      ),
    );
  }

  // y[rows, outF] for W panels [p0, p1), blocked along k so that a panel's
  // chunk stays in L1 while every x panel streams past it.
  {
    const f = m.func(`${kind.name}_mm`, [
      ["xp", I],
      ["wp", I],
      ["y", I],
      ["bp", I],
      ["rows", I],
      ["kn", I],
      ["outF", I],
      ["p0", I],
      ["p1", I],
    ]);
    const { xp, wp, y, bp, rows, kn, outF, p0, p1 } = f.params;
    const [p, q, nr, ncols, ystride, kb, kc] = f.locals(I, 7);
    const microCall = (r: number) =>
      call(
        micro[r - 1],
        // x panel q holds rows q..q+r; chunk kb starts kb·r chunks in.
        i32.add(
          get(xp),
          i32.mul(
            i32.add(i32.mul(get(q), get(kn)), i32.mul(get(kb), c(r))),
            c(xChunk),
          ),
        ),
        i32.add(
          get(wp),
          i32.mul(i32.add(i32.mul(get(p), get(kn)), get(kb)), c(C * wChunk)),
        ),
        get(kc),
        i32.add(
          get(y),
          i32.add(i32.mul(get(q), get(ystride)), i32.mul(get(p), c(C * 4))),
        ),
        get(ystride),
        i32.add(get(bp), i32.mul(get(p), c(C * 4))),
        get(ncols),
        get(kb),
      );
    const tailCalls: Code[] = [];
    for (let r = 1; r < R; r++) {
      tailCalls.push(if_(i32.eq(get(nr), c(r)), [microCall(r)]));
    }
    f.body(
      set(ystride, i32.shl(get(outF), c(2))),
      forLoop(
        "kb",
        kb,
        c(0),
        get(kn),
        c(KC),
        set(kc, i32.sub(get(kn), get(kb))),
        set(kc, select(c(KC), get(kc), i32.gt_s(get(kc), c(KC)))),
        forLoop(
          "p",
          p,
          get(p0),
          get(p1),
          c(1),
          set(ncols, i32.sub(get(outF), i32.mul(get(p), c(C)))),
          set(ncols, select(c(C), get(ncols), i32.gt_s(get(ncols), c(C)))),
          set(q, c(0)),
          block(
            "rows",
            loop(
              "q",
              set(nr, i32.sub(get(rows), get(q))),
              brIf("rows", i32.lt_s(get(nr), c(R))),
              microCall(R),
              set(q, i32.add(get(q), c(R))),
              br("q"),
            ),
          ),
          ...tailCalls,
        ),
      ),
    );
  }
}

// ------------------------------------------------------------- quantized

/**
 * Quantizes F32 activation rows into Q8-style blocks of {@link XQ_BLOCK}:
 * `d = max|x| / 127`, `q = round(x / d)` (ties to even) as i16, plus the
 * exact F32 sum of each block (used by the Q4_K mins). Row r's codes sit at
 * `q16 + r·kp·2`, its scales at `xd + r·nb·4`, its sums at `xs + r·nb·4`.
 */
function quantizeX(m: ModuleBuilder): void {
  const f = m.func("quantize_x", [
    ["x", I],
    ["rows", I],
    ["inF", I],
    ["kp", I],
    ["q16", I],
    ["xd", I],
    ["xs", I],
  ]);
  const { x, rows, inF, kp, q16, xd, xs } = f.params;
  const [r, b, k, nb, src, dst, n] = f.locals(I, 7);
  const [amax, sum, d, id] = f.locals(T.f32, 4);
  const [va, vs, t0, t1] = f.locals(V, 4);
  const full: Code[] = [];
  // Full block of 32: vector max/sum, then 8 vectors → 4 i16x8 stores.
  f.body(
    set(nb, i32.shr_u(get(kp), c(5))),
    forLoop(
      "r",
      r,
      c(0),
      get(rows),
      c(1),
      forLoop(
        "b",
        b,
        c(0),
        get(nb),
        c(1),
        set(src, i32.add(get(x), i32.shl(i32.add(i32.mul(get(r), get(inF)), i32.shl(get(b), c(5))), c(2)))),
        set(dst, i32.add(get(q16), i32.shl(i32.add(i32.mul(get(r), get(kp)), i32.shl(get(b), c(5))), c(1)))),
        // elements of this block that exist (the last block may be partial)
        set(n, i32.sub(get(inF), i32.shl(get(b), c(5)))),
        set(n, select(c(32), get(n), i32.gt_s(get(n), c(32)))),
        if_(
          i32.eq(get(n), c(32)),
          [
            set(va, zero),
            set(vs, zero),
            ...Array.from({ length: 8 }, (_, j) =>
              seq(
                set(t0, v128.load(get(src), j * 16)),
                set(va, f32x4.max(get(va), f32x4.abs(get(t0)))),
                set(vs, f32x4.add(get(vs), get(t0))),
              )),
            set(
              va,
              f32x4.max(
                get(va),
                i8x16.shuffle(get(va), get(va), lanes32([2, 3, 0, 1])),
              ),
            ),
            set(
              amax,
              f32.max(
                f32x4.extract_lane(get(va), 0),
                f32x4.extract_lane(get(va), 1),
              ),
            ),
            set(sum, hsum(get(vs), t1)),
          ],
          [
            set(amax, f32.const(0)),
            set(sum, f32.const(0)),
            forLoop(
              "e",
              k,
              c(0),
              get(n),
              c(1),
              set(t0, f32x4.splat(f32.load(i32.add(get(src), i32.shl(get(k), c(2)))))),
              set(amax, f32.max(get(amax), f32.abs(f32x4.extract_lane(get(t0), 0)))),
              set(sum, f32.add(get(sum), f32x4.extract_lane(get(t0), 0))),
            ),
          ],
        ),
        set(d, f32.div(get(amax), f32.const(127))),
        set(id, select(f32.div(f32.const(1), get(d)), f32.const(0), f32.gt(get(d), f32.const(0)))),
        f32.store(i32.add(get(xd), i32.shl(i32.add(i32.mul(get(r), get(nb)), get(b)), c(2))), get(d)),
        f32.store(i32.add(get(xs), i32.shl(i32.add(i32.mul(get(r), get(nb)), get(b)), c(2))), get(sum)),
        if_(
          i32.eq(get(n), c(32)),
          [
            set(t1, f32x4.splat(get(id))),
            ...Array.from({ length: 4 }, (_, j) =>
              v128.store(
                get(dst),
                i16x8.narrow_i32x4_s(
                  i32x4.trunc_sat_f32x4_s(
                    f32x4.nearest(f32x4.mul(v128.load(get(src), j * 32), get(t1))),
                  ),
                  i32x4.trunc_sat_f32x4_s(
                    f32x4.nearest(f32x4.mul(v128.load(get(src), j * 32 + 16), get(t1))),
                  ),
                ),
                j * 16,
              )),
          ],
          [
            forLoop(
              "e2",
              k,
              c(0),
              c(32),
              c(1),
              i32.store16(
                i32.add(get(dst), i32.shl(get(k), c(1))),
                select(
                  i32.trunc_f32_s(
                    f32.nearest(
                      f32.mul(f32.load(i32.add(get(src), i32.shl(get(k), c(2)))), get(id)),
                    ),
                  ),
                  c(0),
                  i32.lt_s(get(k), get(n)),
                ),
              ),
            ),
          ],
        ),
      ),
    ),
  );
  void full;
}

/**
 * One quantized weight format: bytes per block, elements per block, and how
 * to dot one block of a weight row against `R` quantized x rows, adding into
 * `R` f32x4 accumulators (plus, for formats with mins, a scalar correction).
 */
interface QuantKind {
  readonly name: string;
  readonly blockElems: 32 | 256;
  readonly blockBytes: number;
  /**
   * Emits the code for one block. `wb` points at the block; `x16[r]` at the
   * i16 codes of x row r for this block, `xd[r]` / `xs[r]` at its first
   * x-block scale / sum; `acc[r]` are f32x4 accumulators, `corr[r]` f32
   * locals subtracted at the end.
   */
  block(ctx: QCtx): Code[];
}

/** Everything a {@link QuantKind} block emitter may use. */
interface QCtx {
  readonly f: FuncBuilder;
  readonly ctx: Ctx;
  readonly R: number;
  readonly wb: Local;
  readonly x16: Local[];
  readonly xd: Local[];
  readonly xs: Local[];
  readonly acc: Local[];
  readonly corr: Local[];
  /** Scratch locals allocated once per function. */
  readonly v: Local[];
  readonly s: Local[];
  readonly n: Local[];
}

/** `Σ lanes` of four i16x8 dot products of w (i16x8 codes) with x at `xp + off`. */
function dot4(w: Code[], xp: Code, off: number): Code {
  let sum: Code | null = null;
  w.forEach((wv, j) => {
    const d = i32x4.dot_i16x8_s(wv, v128.load(xp, off + j * 16));
    sum = sum ? i32x4.add(sum, d) : d;
  });
  return sum!;
}

const Q8_0: QuantKind = {
  name: "q8_0",
  blockElems: 32,
  blockBytes: 34,
  block: ({ ctx, R, wb, x16, xd, acc, v, s }) => {
    const out: Code[] = [];
    // Four i16x8 vectors of weight codes, shared by all R rows.
    for (let j = 0; j < 4; j++) {
      out.push(set(v[j], i16x8.load8x8_s(get(wb), 2 + j * 8)));
    }
    out.push(set(s[0], f16ToF32(i32.load16_u(get(wb)))));
    for (let r = 0; r < R; r++) {
      out.push(
        set(
          acc[r],
          ctx.madd(
            f32x4.convert_i32x4_s(dot4(v.slice(0, 4).map(get), get(x16[r]), 0)),
            f32x4.splat(f32.mul(get(s[0]), f32.load(get(xd[r])))),
            get(acc[r]),
          ),
        ),
      );
    }
    return out;
  },
};

const Q4_0: QuantKind = {
  name: "q4_0",
  blockElems: 32,
  blockBytes: 18,
  block: ({ ctx, R, wb, x16, xd, acc, v, s }) => {
    const out: Code[] = [];
    // 16 bytes: low nibbles are elements 0..15, high nibbles 16..31; value q-8.
    out.push(
      set(v[4], v128.load(get(wb), 2)),
      set(v[5], i8x16.sub(v128.and(get(v[4]), i8x16c(0x0f)), i8x16c(8))),
      set(
        v[6],
        i8x16.sub(
          v128.and(i16x8.shr_u(get(v[4]), c(4)), i8x16c(0x0f)),
          i8x16c(8),
        ),
      ),
      set(v[0], i16x8.extend_low_i8x16_s(get(v[5]))),
      set(v[1], i16x8.extend_high_i8x16_s(get(v[5]))),
      set(v[2], i16x8.extend_low_i8x16_s(get(v[6]))),
      set(v[3], i16x8.extend_high_i8x16_s(get(v[6]))),
      set(s[0], f16ToF32(i32.load16_u(get(wb)))),
    );
    for (let r = 0; r < R; r++) {
      out.push(
        set(
          acc[r],
          ctx.madd(
            f32x4.convert_i32x4_s(dot4(v.slice(0, 4).map(get), get(x16[r]), 0)),
            f32x4.splat(f32.mul(get(s[0]), f32.load(get(xd[r])))),
            get(acc[r]),
          ),
        ),
      );
    }
    return out;
  },
};

/**
 * Q4_K: 256 elements = 8 sub-blocks of 32, each with a 6-bit scale and min
 * (packed in 12 bytes), value `d·sc·q − dmin·m`. Layout: f16 d, f16 dmin,
 * scales[12], qs[128]; each 32 bytes of qs hold two sub-blocks (low nibbles
 * then high nibbles).
 */
const Q4_K: QuantKind = {
  name: "q4_k",
  blockElems: 256,
  blockBytes: 144,
  block: ({ ctx, R, wb, x16, xd, xs, acc, corr, v, s, n }) => {
    const out: Code[] = [];
    const [d, dmin, sc, mn] = s;
    out.push(
      set(d, f16ToF32(i32.load16_u(get(wb)))),
      set(dmin, f16ToF32(i32.load16_u(get(wb), 2))),
    );
    const sb = (j: number) => i32.load8_u(get(wb), 4 + j);
    for (let ch = 0; ch < 4; ch++) {
      out.push(
        set(v[4], v128.load(get(wb), 16 + ch * 32)),
        set(v[5], v128.load(get(wb), 16 + ch * 32 + 16)),
      );
      for (let half = 0; half < 2; half++) {
        const j = ch * 2 + half; // sub-block index
        // 6-bit scale and min of sub-block j
        const scale = j < 4
          ? i32.and(sb(j), c(63))
          : i32.or(
            i32.and(sb(j + 4), c(0x0f)),
            i32.shl(i32.shr_u(sb(j - 4), c(6)), c(4)),
          );
        const min = j < 4
          ? i32.and(sb(j + 4), c(63))
          : i32.or(
            i32.shr_u(sb(j + 4), c(4)),
            i32.shl(i32.shr_u(sb(j), c(6)), c(4)),
          );
        out.push(
          set(sc, f32.mul(get(d), f32.convert_i32_s(scale))),
          set(mn, f32.mul(get(dmin), f32.convert_i32_s(min))),
        );
        const nib = (src: Local) =>
          half === 0
            ? v128.and(get(src), i8x16c(0x0f))
            : v128.and(i16x8.shr_u(get(src), c(4)), i8x16c(0x0f));
        out.push(
          set(v[6], nib(v[4])),
          set(v[7], nib(v[5])),
          set(v[0], i16x8.extend_low_i8x16_u(get(v[6]))),
          set(v[1], i16x8.extend_high_i8x16_u(get(v[6]))),
          set(v[2], i16x8.extend_low_i8x16_u(get(v[7]))),
          set(v[3], i16x8.extend_high_i8x16_u(get(v[7]))),
        );
        for (let r = 0; r < R; r++) {
          out.push(
            set(
              acc[r],
              ctx.madd(
                f32x4.convert_i32x4_s(
                  dot4(v.slice(0, 4).map(get), get(x16[r]), j * 64),
                ),
                f32x4.splat(f32.mul(get(sc), f32.load(get(xd[r]), j * 4))),
                get(acc[r]),
              ),
            ),
            set(
              corr[r],
              f32.add(
                get(corr[r]),
                f32.mul(get(mn), f32.load(get(xs[r]), j * 4)),
              ),
            ),
          );
        }
      }
    }
    void n;
    return out;
  },
};

/**
 * Q6_K: 256 elements, 16 groups of 16 with an i8 scale each, value
 * `d·sc·(q − 32)`, q 6 bits = 4 low bits in ql[128] + 2 high bits in
 * qh[64]. Layout: ql, qh, scales[16], f16 d. Each half of 128 elements uses
 * 64 bytes of ql and 32 of qh: element l (0..31) of quarter i takes
 * ql[l + 32·(i&1)] (low nibble for i < 2, high for i ≥ 2) and bits
 * 2i..2i+1 of qh[l].
 */
const Q6_K: QuantKind = {
  name: "q6_k",
  blockElems: 256,
  blockBytes: 210,
  block: ({ ctx, R, wb, x16, xd, acc, v, s }) => {
    const out: Code[] = [];
    const [d, sc] = s;
    out.push(set(d, f16ToF32(i32.load16_u(get(wb), 208))));
    for (let h = 0; h < 2; h++) {
      // ql 4 × 16 bytes, qh 2 × 16 bytes for this half
      out.push(
        set(v[8], v128.load(get(wb), h * 64)),
        set(v[9], v128.load(get(wb), h * 64 + 16)),
        set(v[10], v128.load(get(wb), h * 64 + 32)),
        set(v[11], v128.load(get(wb), h * 64 + 48)),
        set(v[12], v128.load(get(wb), 128 + h * 32)),
        set(v[13], v128.load(get(wb), 128 + h * 32 + 16)),
      );
      for (let g = 0; g < 8; g++) {
        // group g of this half: quarter i = g >> 1, lanes l = 16·(g & 1) ..
        const i = g >> 1;
        const lo = g & 1; // which 16 of the 32
        const ql = v[8 + ((i & 1) * 2 + lo)];
        const qh = v[12 + lo];
        const low4 = i < 2
          ? v128.and(get(ql), i8x16c(0x0f))
          : v128.and(i16x8.shr_u(get(ql), c(4)), i8x16c(0x0f));
        // bits 2i..2i+1 of qh moved to bits 4..5
        const shift = 2 * i - 4;
        const high2 = shift < 0
          ? v128.and(i16x8.shl(get(qh), c(-shift)), i8x16c(0x30))
          : shift === 0
          ? v128.and(get(qh), i8x16c(0x30))
          : v128.and(i16x8.shr_u(get(qh), c(shift)), i8x16c(0x30));
        const grp = h * 8 + g; // group index 0..15 in the super-block
        out.push(
          set(v[4], i8x16.sub(v128.or(low4, high2), i8x16c(32))),
          set(v[0], i16x8.extend_low_i8x16_s(get(v[4]))),
          set(v[1], i16x8.extend_high_i8x16_s(get(v[4]))),
          set(
            sc,
            f32.mul(get(d), f32.convert_i32_s(i32.load8_s(get(wb), 192 + grp))),
          ),
        );
        for (let r = 0; r < R; r++) {
          out.push(
            set(
              acc[r],
              ctx.madd(
                f32x4.convert_i32x4_s(
                  dot4([get(v[0]), get(v[1])], get(x16[r]), grp * 32),
                ),
                f32x4.splat(
                  f32.mul(get(sc), f32.load(get(xd[r]), (grp >> 1) * 4)),
                ),
                get(acc[r]),
              ),
            ),
          );
        }
      }
    }
    return out;
  },
};

const QUANTS: QuantKind[] = [Q8_0, Q4_0, Q4_K, Q6_K];

/**
 * Dots one weight row (all its blocks) with `R` quantized x rows and
 * stores `R` outputs `y[r·ystride] = Σ + bias`.
 */
function quantRows(m: ModuleBuilder, ctx: Ctx, q: QuantKind, R: number): FuncBuilder {
  const f = m.func(`${q.name}_rows_${R}`, [
    ["wrow", I],
    ["nblk", I],
    ["x16", I],
    ["x16stride", I],
    ["xd", I],
    ["xdstride", I],
    ["xs", I],
    ["yp", I],
    ["ystride", I],
    ["bias", T.f32],
  ]);
  const P = f.params;
  const wb = f.local(I);
  const x16 = f.locals(I, R);
  const xd = f.locals(I, R);
  const xs = f.locals(I, R);
  const acc = f.locals(V, R);
  const corr = f.locals(T.f32, R);
  const v = f.locals(V, 14);
  const s = f.locals(T.f32, 4);
  const n = f.locals(I, 2);
  const b = f.local(I);
  const t = f.local(V);
  const qctx: QCtx = { f, ctx, R, wb, x16, xd, xs, acc, corr, v, s, n };
  const xBlocks = q.blockElems / XQ_BLOCK; // x blocks per weight block
  const init: Code[] = [set(wb, get(P.wrow))];
  for (let r = 0; r < R; r++) {
    init.push(
      set(x16[r], i32.add(get(P.x16), i32.mul(get(P.x16stride), c(r)))),
      set(xd[r], i32.add(get(P.xd), i32.mul(get(P.xdstride), c(r)))),
      set(xs[r], i32.add(get(P.xs), i32.mul(get(P.xdstride), c(r)))),
      set(acc[r], zero),
      set(corr[r], f32.const(0)),
    );
  }
  const advance: Code[] = [set(wb, i32.add(get(wb), c(q.blockBytes)))];
  for (let r = 0; r < R; r++) {
    advance.push(
      set(x16[r], i32.add(get(x16[r]), c(q.blockElems * 2))),
      set(xd[r], i32.add(get(xd[r]), c(xBlocks * 4))),
      set(xs[r], i32.add(get(xs[r]), c(xBlocks * 4))),
    );
  }
  const store: Code[] = [];
  for (let r = 0; r < R; r++) {
    store.push(
      f32.store(
        i32.add(get(P.yp), i32.mul(get(P.ystride), c(r))),
        f32.add(f32.sub(hsum(get(acc[r]), t), get(corr[r])), get(P.bias)),
      ),
    );
  }
  f.body(
    ...init,
    forLoop("b", b, c(0), get(P.nblk), c(1), ...q.block(qctx), ...advance),
    ...store,
  );
  return f;
}

function quantKernels(m: ModuleBuilder, ctx: Ctx, q: QuantKind): void {
  const rowsFns = Array.from(
    { length: QUANT_ROWS },
    (_, r) => quantRows(m, ctx, q, r + 1),
  );
  // y[rows, outF] for weight rows [o0, o1); x already quantized.
  const f = m.func(`${q.name}_mm`, [
    ["w", I],
    ["q16", I],
    ["xd", I],
    ["xs", I],
    ["y", I],
    ["bp", I],
    ["rows", I],
    ["kp", I],
    ["outF", I],
    ["o0", I],
    ["o1", I],
  ]);
  const P = f.params;
  const [o, r, nr, nblk, rowBytes, nbx] = f.locals(I, 6);
  const callRows = (R: number) =>
    call(
      rowsFns[R - 1],
      i32.add(get(P.w), i32.mul(get(o), get(rowBytes))),
      get(nblk),
      i32.add(get(P.q16), i32.shl(i32.mul(get(r), get(P.kp)), c(1))),
      i32.shl(get(P.kp), c(1)),
      i32.add(get(P.xd), i32.shl(i32.mul(get(r), get(nbx)), c(2))),
      i32.shl(get(nbx), c(2)),
      i32.add(get(P.xs), i32.shl(i32.mul(get(r), get(nbx)), c(2))),
      i32.add(get(P.y), i32.shl(i32.add(i32.mul(get(r), get(P.outF)), get(o)), c(2))),
      i32.shl(get(P.outF), c(2)),
      f32.load(i32.add(get(P.bp), i32.shl(get(o), c(2)))),
    );
  const tails: Code[] = [];
  for (let R = 1; R < QUANT_ROWS; R++) {
    tails.push(if_(i32.eq(get(nr), c(R)), [callRows(R)]));
  }
  f.body(
    set(nblk, i32.div_u(get(P.kp), c(q.blockElems))),
    set(nbx, i32.shr_u(get(P.kp), c(5))),
    set(rowBytes, i32.mul(get(nblk), c(q.blockBytes))),
    forLoop(
      "o",
      o,
      get(P.o0),
      get(P.o1),
      c(1),
      set(r, c(0)),
      block(
        "rows",
        loop(
          "r",
          set(nr, i32.sub(get(P.rows), get(r))),
          brIf("rows", i32.lt_s(get(nr), c(QUANT_ROWS))),
          callRows(QUANT_ROWS),
          set(r, i32.add(get(r), c(QUANT_ROWS))),
          br("r"),
        ),
      ),
      ...tails,
    ),
  );
}

/**
 * Emits the kernel module for one instruction-set variant.
 *
 * @param variant `"relaxed"` uses relaxed-SIMD fused multiply-add; `"simd"`
 * uses only the 128-bit SIMD of WebAssembly 2.0.
 * @returns The module bytes (imports one shared memory as `env.memory`).
 */
export function buildKernelModule(variant: KernelVariant): Uint8Array {
  const m = new ModuleBuilder({ shared: true, minPages: 1, maxPages: 65536 });
  const ctx = new Ctx(variant);
  for (const kind of DENSE) denseKernels(m, ctx, kind);
  quantizeX(m);
  for (const q of QUANTS) quantKernels(m, ctx, q);
  opsKernels(m, ctx);
  return m.encode();
}
