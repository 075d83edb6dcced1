/**
 * Q8_0 weight rows prepared once for several x rows (batched decoding,
 * prefill): `name_prep` copies one stored row's codes into 32-byte aligned
 * blocks (for `q8_0u`, already turned unsigned by `xor 0x80`) and its f16
 * scales into an F32 array, and `name_pdot` dots a prepared row with one x
 * row. The per-row work of `name_dot` that does not depend on x (the byte
 * windows that align 34-byte blocks, the xor, gathering and widening four
 * scales) is then done once per weight row instead of once per x row.
 *
 * The results are bit for bit those of `name_dot`: the integer block
 * totals are exact either way, and the F32 steps are the same operations
 * in the same order (four blocks' totals times `d_w·d_x`, an exact
 * product, into one multiply-add per group of four; leftover blocks into a
 * scalar sum; the lanes summed at the end). The driver `name_mm` uses them
 * when a job has several x rows (see `PREP_MIN_ROWS`).
 *
 * @module
 */

import {
  type Code,
  f32,
  f32x4,
  forLoop,
  get,
  i32,
  i32x4,
  type Local,
  type ModuleBuilder,
  set,
  T,
  v128,
} from "./_asm.ts";
import { c, type Ctx, f16ToF32, hsum, i8x16c, zero } from "./_kernels_util.ts";
import {
  type Dot,
  dotI16,
  hsum4i,
  hsumI,
  widenEvenOdd,
} from "./_kernels_quant_util.ts";
import { q8SplitDot } from "./_kernels_quant_q8_q4.ts";

const I = T.i32;
const F = T.f32;
const V = T.v128;

/** Bytes of a prepared Q8_0 row of `nblk` blocks: 32 code bytes and an f32 scale per block. */
export function preparedBytes(nblk: number): number {
  return nblk * 36;
}

/**
 * Adds `name_prep(w, nblk, out)` and `name_pdot(p, nblk, x8, x16, xm, ms)
 * → f32` for Q8_0 (`unsigned`: the `q8_0u` way, relaxed variant only).
 */
export function prepKernels(
  m: ModuleBuilder,
  ctx: Ctx,
  name: string,
  unsigned: boolean,
): {
  prep: ReturnType<ModuleBuilder["func"]>;
  pdot: ReturnType<ModuleBuilder["func"]>;
} {
  // name_prep: codes at out + 32·b, scales at out + 32·nblk + 4·b
  const prep = m.func(`${name}_prep`, [["w", I], ["nblk", I], ["out", I]]);
  {
    const P = prep.params;
    const [b, wb, ob, sp] = prep.locals(I, 4);
    const code = (at: number): Code =>
      unsigned
        ? v128.xor(v128.load(get(wb), at), i8x16c(0x80))
        : v128.load(get(wb), at);
    prep.body(
      set(wb, get(P.w)),
      set(ob, get(P.out)),
      set(sp, i32.add(get(P.out), i32.shl(get(P.nblk), c(5)))),
      forLoop(
        "b",
        b,
        c(0),
        get(P.nblk),
        c(1),
        v128.store(get(ob), code(2)),
        v128.store(get(ob), code(18), 16),
        f32.store(get(sp), f16ToF32(i32.load16_u(get(wb)))),
        set(wb, i32.add(get(wb), c(34))),
        set(ob, i32.add(get(ob), c(32))),
        set(sp, i32.add(get(sp), c(4))),
      ),
    );
  }

  const pdot = m.func(`${name}_pdot`, [
    ["p", I],
    ["nblk", I],
    ["x8", I],
    ["x16", I],
    ["xm", I],
    ["ms", I],
  ], [F]);
  {
    const P = pdot.params;
    const [g, ngrp, pc, ps, x8, x16, xm] = pdot.locals(I, 7);
    const acc = pdot.local(V), accs = pdot.local(F);
    const v = pdot.locals(V, 4);
    const p = pdot.locals(V, 4);
    const t = pdot.locals(V, 4);
    // what q8SplitDot reads of a Dot: v[0], v[1] and x16
    const d = { v, x16 } as unknown as Dot;
    /** i32 lane sums of block `j` (codes at pc + 32j) into `dst`. */
    const block = (j: number, dst: Local): Code[] => {
      const c0 = v128.load(get(pc), 32 * j);
      const c1 = v128.load(get(pc), 32 * j + 16);
      if (unsigned) {
        const dot = i32x4.relaxed_dot_i8x16_i7x16_add_s;
        return [
          set(
            dst,
            dot(
              v128.load(get(x8), 32 * j),
              c0,
              dot(v128.load(get(x8), 32 * j + 16), c1, zero),
            ),
          ),
        ];
      }
      if (ctx.relaxed) return q8SplitDot(d, [c0, c1], 64 * j, dst);
      return [
        set(v[0], c0),
        set(v[1], c1),
        set(
          dst,
          dotI16(
            [...widenEvenOdd(get(v[0])), ...widenEvenOdd(get(v[1]))],
            get(x16),
            64 * j,
          ),
        ),
      ];
    };
    // the x16 pointer q8SplitDot reads is d.x16
    d.x16 = x16;
    const is32 = (off: number) => v128.load(i32.add(get(xm), get(P.ms)), off);
    const advance = (blocks: number): Code[] => [
      set(pc, i32.add(get(pc), c(32 * blocks))),
      set(ps, i32.add(get(ps), c(4 * blocks))),
      set(x8, i32.add(get(x8), c(32 * blocks))),
      set(x16, i32.add(get(x16), c(64 * blocks))),
      set(xm, i32.add(get(xm), c(4 * blocks))),
    ];
    pdot.body(
      set(pc, get(P.p)),
      set(ps, i32.add(get(P.p), i32.shl(get(P.nblk), c(5)))),
      set(x8, get(P.x8)),
      set(x16, get(P.x16)),
      set(xm, get(P.xm)),
      set(acc, zero),
      set(accs, f32.const(0)),
      set(ngrp, i32.shr_u(get(P.nblk), c(2))),
      forLoop(
        "g",
        g,
        c(0),
        get(ngrp),
        c(1),
        ...[0, 1, 2, 3].flatMap((j) => block(j, p[j])),
        hsum4i(p.map(get), t),
        ...(unsigned
          ? [set(t[0], i32x4.sub(get(t[0]), i32x4.shl(is32(0), c(7))))]
          : []),
        set(
          acc,
          ctx.madd(
            f32x4.convert_i32x4_s(get(t[0])),
            f32x4.mul(v128.load(get(ps)), v128.load(get(xm))),
            get(acc),
          ),
        ),
        ...advance(4),
      ),
      forLoop(
        "s",
        g,
        c(0),
        i32.and(get(P.nblk), c(3)),
        c(1),
        ...block(0, p[0]),
        set(
          accs,
          f32.add(
            get(accs),
            f32.mul(
              f32.convert_i32_s(
                unsigned
                  ? i32.sub(
                    hsumI(get(p[0]), t[0]),
                    i32.shl(i32.load(i32.add(get(xm), get(P.ms))), c(7)),
                  )
                  : hsumI(get(p[0]), t[0]),
              ),
              f32.mul(f32.load(get(ps)), f32.load(get(xm))),
            ),
          ),
        ),
        ...advance(1),
      ),
      f32.add(hsum(get(acc), t[0]), get(accs)),
    );
  }
  return { prep, pdot };
}
