/**
 * Q8_0 and Q4_0 weight rows prepared once for several x rows (batched
 * decoding, prefill): `name_prep` copies one stored row's codes into
 * aligned blocks (for `q8_0u`, already turned unsigned by `xor 0x80`; for
 * `q8_0s`, as magnitudes and sign masks; for `q4_0`, nibbles unpacked to
 * bytes) and its f16 scales into an F32 array, and `name_pdot` dots a
 * prepared row with one x row. The per-row work of `name_dot` that does not depend on x (the byte
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
  i16x8,
  i32,
  i32x4,
  i8x16,
  type Local,
  type ModuleBuilder,
  seq,
  set,
  T,
  v128,
} from "./_asm.ts";
import { c, type Ctx, f16ToF32, hsum, i8x16c, zero } from "./_kernels_util.ts";
import {
  type Dot,
  dotI16,
  hsum4i,
  hsum4i16,
  hsumI,
  rdot16,
  widenEvenOdd,
  widenSums,
} from "./_kernels_quant_util.ts";
import { q8SplitDot } from "./_kernels_quant_q8_q4.ts";

const I = T.i32;
const F = T.f32;
const V = T.v128;

/**
 * Bytes of a prepared row of `nblk` blocks, enough for every way: up to 64
 * code bytes (`q8_0s`: 32 magnitudes, 32 sign masks; the others 32) and an
 * f32 scale per block.
 */
export function preparedBytes(nblk: number): number {
  return nblk * 68;
}

/**
 * How a prepared row is dotted with x: `signed` (Q8_0 codes as stored, x
 * split in 7-bit parts and signs: four relaxed dots per block, or i16
 * widening in plain SIMD), `unsigned` (`q8_0u`: `w + 128` as the unsigned
 * operand, two dots), `sign` (`q8_0s`: `|w|` as the unsigned operand and
 * x with w's signs applied, two dots; where {@link SIGN_DOT_PROBE} holds)
 * or `q4` (Q4_0 nibbles as the 7-bit operand, x as stored, two i16 dots).
 */
export type PrepWay = "signed" | "unsigned" | "sign" | "q4";

/**
 * The value `probe_sdot` returns where the relaxed dot reads its 7-bit
 * operand as an unsigned byte, so `0x80` as +128 (x86: `pmaddubsw`,
 * `vpdpbusd`): `4 · (−127 · 128)`. Then `|w|` of every Q8_0 code −128…127
 * is a valid operand, and with x codes in −127…127 each i16 pair sum stays
 * within ±32512 (no saturation): the `q8_0s` products are exact.
 */
export const SIGN_DOT_PROBE = -65024;

/** `probe_sdot() → i32`: see {@link SIGN_DOT_PROBE}. */
export function signProbeKernel(m: ModuleBuilder): void {
  const f = m.func("probe_sdot", [], [I]);
  f.body(
    i32x4.extract_lane(
      i32x4.relaxed_dot_i8x16_i7x16_add_s(i8x16c(-127), i8x16c(0x80), zero),
      0,
    ),
  );
}

/**
 * Adds `name_prep(w, nblk, out)` and `name_pdot(p, nblk, x8, x16, xm, ms)
 * → f32` for Q8_0 or Q4_0 rows, dotted the `way` way (all but `signed`
 * in the relaxed variant only).
 */
export function prepKernels(
  m: ModuleBuilder,
  ctx: Ctx,
  name: string,
  way: PrepWay,
): {
  prep: ReturnType<ModuleBuilder["func"]>;
  pdot: ReturnType<ModuleBuilder["func"]>;
} {
  const unsigned = way === "unsigned";
  // code bytes per prepared block, stored bytes per block
  const cb = way === "sign" ? 64 : 32;
  const sb = way === "q4" ? 18 : 34;
  // name_prep: codes at out + cb·b, scales at out + cb·nblk + 4·b
  const prep = m.func(`${name}_prep`, [["w", I], ["nblk", I], ["out", I]]);
  {
    const P = prep.params;
    const [b, wb, ob, sp] = prep.locals(I, 4);
    const [t] = prep.locals(V, 1);
    const stores: Code[] = way === "q4"
      ? [
        set(t, v128.load(get(wb), 2)),
        v128.store(get(ob), v128.and(get(t), i8x16c(0x0f))),
        v128.store(
          get(ob),
          v128.and(i16x8.shr_u(get(t), c(4)), i8x16c(0x0f)),
          16,
        ),
      ]
      : way === "sign"
      ? [0, 1].flatMap((h) => [
        set(t, v128.load(get(wb), 2 + 16 * h)),
        v128.store(get(ob), i8x16.abs(get(t)), 16 * h),
        v128.store(get(ob), i8x16.lt_s(get(t), zero), 32 + 16 * h),
      ])
      : [0, 1].map((h) =>
        v128.store(
          get(ob),
          unsigned
            ? v128.xor(v128.load(get(wb), 2 + 16 * h), i8x16c(0x80))
            : v128.load(get(wb), 2 + 16 * h),
          16 * h,
        )
      );
    prep.body(
      set(wb, get(P.w)),
      set(ob, get(P.out)),
      set(sp, i32.add(get(P.out), i32.mul(get(P.nblk), c(cb)))),
      forLoop(
        "b",
        b,
        c(0),
        get(P.nblk),
        c(1),
        ...stores,
        f32.store(get(sp), f16ToF32(i32.load16_u(get(wb)))),
        set(wb, i32.add(get(wb), c(sb))),
        set(ob, i32.add(get(ob), c(cb))),
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
    /**
     * Lane sums of block `j` (codes at pc + cb·j) into `dst`: i32, or for
     * `q4` i16 (|lane| ≤ 2·2·15·127 = 7620, summed four at a time).
     */
    const block = (j: number, dst: Local): Code[] => {
      const c0 = v128.load(get(pc), cb * j);
      const c1 = v128.load(get(pc), cb * j + 16);
      if (way === "q4") {
        return [
          set(
            dst,
            i16x8.add(
              rdot16(v128.load(get(x8), 32 * j), c0),
              rdot16(v128.load(get(x8), 32 * j + 16), c1),
            ),
          ),
        ];
      }
      if (way === "sign") {
        // x with w's signs (x·sign(w), exact: x codes are −127…127) as the
        // signed operand, |w| (0x80 read as 128, see SIGN_DOT_PROBE) as
        // the unsigned one
        const dot = i32x4.relaxed_dot_i8x16_i7x16_add_s;
        const signed = (h: number): Code =>
          seq(
            set(v[2 + h], v128.load(get(pc), cb * j + 32 + 16 * h)),
            i8x16.sub(
              v128.xor(v128.load(get(x8), 32 * j + 16 * h), get(v[2 + h])),
              get(v[2 + h]),
            ),
          );
        return [set(dst, dot(signed(0), c0, dot(signed(1), c1, zero)))];
      }
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
      set(pc, i32.add(get(pc), c(cb * blocks))),
      set(ps, i32.add(get(ps), c(4 * blocks))),
      set(x8, i32.add(get(x8), c(32 * blocks))),
      set(x16, i32.add(get(x16), c(64 * blocks))),
      set(xm, i32.add(get(xm), c(4 * blocks))),
    ];
    pdot.body(
      set(pc, get(P.p)),
      set(ps, i32.add(get(P.p), i32.mul(get(P.nblk), c(cb)))),
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
        way === "q4" ? hsum4i16(p.map(get), t) : hsum4i(p.map(get), t),
        ...(unsigned
          ? [set(t[0], i32x4.sub(get(t[0]), i32x4.shl(is32(0), c(7))))]
          : way === "q4"
          // Σ (q − 8)·x = Σ q·x − 8·Σ x
          ? [set(t[0], i32x4.sub(get(t[0]), i32x4.shl(is32(0), c(3))))]
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
                  : way === "q4"
                  ? i32.sub(
                    hsumI(widenSums(get(p[0])), t[0]),
                    i32.shl(i32.load(i32.add(get(xm), get(P.ms))), c(3)),
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
