/**
 * The kernel source: every WebAssembly function modelhost ships, written
 * with the assembler in `_asm.ts`. `buildKernelModule()` emits the module
 * bytes; `tools/build_wasm.ts` stores them (base64) in `_module_bytes.ts`,
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
  i32,
  i32x4,
  if_,
  type Local,
  loop,
  ModuleBuilder,
  select,
  set,
  T,
  v128,
} from "./_asm.ts";
import { gemmKernels } from "./_kernels_gemm.ts";
import { opsKernels } from "./_kernels_ops.ts";
import { encoderKernels } from "./_kernels_encoder.ts";
import { quantKernels } from "./_kernels_quant.ts";
import { quantGemmKernels } from "./_kernels_quant_gemm.ts";
import { quantIgemmKernels } from "./_kernels_quant_igemm.ts";
import { kquantGemmKernels } from "./_kernels_quant_kgemm.ts";
import { q5IgemmKernels } from "./_kernels_quant_q5gemm.ts";
import { quantHgemmKernels } from "./_kernels_quant_q8gemm.ts";
import {
  c,
  Ctx,
  F16_MASK,
  F16_SCALE,
  f32x4c,
  hsum4,
  i32x4c,
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
            set(
              acc[r][cc],
              ctx.madd(get(xv[r][j]), get(wv[j]), get(acc[r][cc])),
            ),
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
  gemmKernels(m, ctx);
  quantKernels(m, ctx);
  quantGemmKernels(m, ctx);
  quantIgemmKernels(m, ctx);
  kquantGemmKernels(m, ctx);
  q5IgemmKernels(m, ctx);
  quantHgemmKernels(m, ctx);
  opsKernels(m, ctx);
  encoderKernels(m, ctx);
  return m.encode();
}
