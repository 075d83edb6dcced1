/**
 * The scale searches of ggml's K-quant encoders (`make_qkx2_quants` with
 * squared errors for Q4_K / Q5_K, `make_qx_quants` for Q6_K) and their
 * final codes as WebAssembly SIMD: four sub-blocks side by side, one per f32 lane, so
 * every lane runs exactly C's scalar sequence of F32 operations (same order,
 * no fused multiply-add) and the result is bit-identical to
 * `core/quants/_k_search.ts`. Emitted into `core/quants/_k_wasm_bytes.ts`
 * by `tools/build_quant_wasm.ts` (core modules import nothing outside
 * core/).
 *
 * Layout of one group (four sub-blocks of `n` values, lane k = sub-block k):
 * value i at `16·i` from the group's start, groups back to back (x, weights,
 * i32 codes in their own regions); `qkx2` takes groups in pairs (the eight
 * sub-blocks of a 256-block) and writes 48 bytes per group at `po`: the
 * scale, the negated min, and a lane mask of sub-blocks whose values are all
 * equal (those the caller redoes with the scalar code). `qx` (Q6_K) and
 * `requant` (the final codes) use the same layout.
 *
 * @module
 */

import {
  f32,
  f32x4,
  forLoop,
  get,
  i32,
  i32x4,
  if_,
  ModuleBuilder,
  seq,
  set,
  T,
  v128,
} from "./_asm.ts";
import { encodeBase64 } from "@std/encoding";
import { buildQuantizeKIo } from "./_kernels_quantize_k_io.ts";

/**
 * Builds the quantizer module (imports `env.memory`, not shared).
 *
 * @returns The module bytes.
 *
 * @example
 * ```ts ignore
 * import { buildQuantizeKModule } from "./_kernels_quantize_k.ts";
 * WebAssembly.validate(buildQuantizeKModule());
 * ```
 */
export function buildQuantizeKModule(): Uint8Array {
  const m = new ModuleBuilder({ shared: false, minPages: 1, maxPages: 16 });
  buildQkx2(m);
  buildQx(m);
  buildRequant(m);
  buildQuantizeKIo(m);
  return m.encode();
}

/** Sub-block length of `qx` (Q6_K): its loops are unrolled. */
const QX_N = 16;

/**
 * `qx`: ggml's `make_qx_quants` (rmse_type 1, weights x², the Q6_K search)
 * for four sub-blocks of 16 values per group, two groups interleaved in
 * every step (independent F32 sums overlap; each lane keeps C's order) and
 * the loops over the values unrolled. Writes the codes plus `nmax` at `pl`,
 * and 32 bytes per group at `po`: the scale and a lane mask of sub-blocks
 * whose largest magnitude is below `eps` (redone by the caller). `groups`
 * must be even.
 */
function buildQx(m: ModuleBuilder): void {
  const f = m.func("qx", [
    ["px", T.i32],
    ["pl", T.i32],
    ["po", T.i32],
    ["groups", T.i32],
    ["nmax", T.i32],
    ["eps", T.f32],
    ["tenth", T.f32],
    ["scratch", T.i32],
  ]);
  const p = f.params;
  const N = QX_N;
  const bytes = N * 16;
  const G = [0, 1];
  const [g, is] = f.locals(T.i32, 2);
  const V = () => G.map(() => f.local(T.v128));
  const amax = V(), mx = V(), iscale = V(), scale = V(), best = V();
  const slx = V(), sl2 = V(), xi = V(), lv = V(), lf = V(), w = V();
  const acc = V(), bestIs = V();
  const [lo, hi, off, magic, zero] = f.locals(T.v128, 5);
  type C = ReturnType<typeof get>;
  const at = (k: number, i: number) => 16 * i + (k ? bytes : 0);
  const ldX = (k: number, i: number): C => v128.load(get(p.px), at(k, i));
  const each = (fn: (k: number) => C[]) => G.flatMap((k) => fn(k));
  const over = (body: (i: number) => C[]): C =>
    seq(...Array.from({ length: N }, (_, i) => body(i)).flat());
  // one pass: Σ(w·x)·l and Σ(w·l)·l in C's order (codes not kept)
  const pass = (): C[] => [
    ...each((k) => [set(slx[k], get(zero)), set(sl2[k], get(zero))]),
    over((i) =>
      each((k) => [
        set(xi[k], ldX(k, i)),
        set(
          lv[k],
          i32x4.min_s(
            i32x4.max_s(
              i32x4.sub(
                v128.and(
                  f32x4.add(f32x4.mul(get(iscale[k]), get(xi[k])), get(magic)),
                  i32x4.splat(i32.const(0x7fffff)),
                ),
                i32x4.splat(i32.const(0x400000)),
              ),
              get(lo),
            ),
            get(hi),
          ),
        ),
        set(lf[k], f32x4.convert_i32x4_s(get(lv[k]))),
        set(w[k], f32x4.mul(get(xi[k]), get(xi[k]))),
        set(
          slx[k],
          f32x4.add(
            get(slx[k]),
            f32x4.mul(f32x4.mul(get(w[k]), get(xi[k])), get(lf[k])),
          ),
        ),
        set(
          sl2[k],
          f32x4.add(
            get(sl2[k]),
            f32x4.mul(f32x4.mul(get(w[k]), get(lf[k])), get(lf[k])),
          ),
        ),
      ])
    ),
  ];
  const stL = (k: number, i: number, v: C): C =>
    v128.store(get(p.pl), v, at(k, i));
  f.body(
    set(off, i32x4.splat(get(p.nmax))),
    set(lo, i32x4.splat(i32.sub(i32.const(0), get(p.nmax)))),
    set(hi, i32x4.splat(i32.sub(get(p.nmax), i32.const(1)))),
    set(magic, f32x4.splat(f32.const(12582912))),
    set(zero, v128.const(new Array(16).fill(0))),
    forLoop(
      "pair",
      g,
      i32.const(0),
      get(p.groups),
      i32.const(2),
      ...each((k) => [set(amax[k], get(zero)), set(mx[k], get(zero))]),
      over((i) =>
        each((k) => [
          set(xi[k], ldX(k, i)),
          set(lf[k], f32x4.abs(get(xi[k]))),
          set(acc[k], f32x4.gt(get(lf[k]), get(amax[k]))),
          set(amax[k], v128.bitselect(get(lf[k]), get(amax[k]), get(acc[k]))),
          set(mx[k], v128.bitselect(get(xi[k]), get(mx[k]), get(acc[k]))),
        ])
      ),
      ...each((k) => [
        v128.store(
          i32.add(get(p.po), i32.const(32 * k + 16)),
          f32x4.lt(get(amax[k]), f32x4.splat(get(p.eps))),
        ),
        set(
          iscale[k],
          f32x4.div(
            f32x4.splat(f32.neg(f32.convert_i32_s(get(p.nmax)))),
            get(mx[k]),
          ),
        ),
      ]),
      ...pass(),
      ...each((k) => [set(bestIs[k], get(iscale[k]))]),
      // scale = Σl² ? Σlx/Σl² : 0
      ...each((k) => [
        set(
          scale[k],
          v128.and(
            f32x4.div(get(slx[k]), get(sl2[k])),
            v128.not(f32x4.eq(get(sl2[k]), get(zero))),
          ),
        ),
        set(best[k], f32x4.mul(get(scale[k]), get(slx[k]))),
      ]),
      forLoop(
        "search",
        is,
        i32.const(-9),
        i32.const(10),
        i32.const(1),
        if_(get(is), [
          ...each((k) => [
            set(
              iscale[k],
              f32x4.div(
                f32x4.splat(
                  f32.neg(
                    f32.add(
                      f32.convert_i32_s(get(p.nmax)),
                      f32.mul(get(p.tenth), f32.convert_i32_s(get(is))),
                    ),
                  ),
                ),
                get(mx[k]),
              ),
            ),
          ]),
          ...pass(),
          ...each((k) => [
            set(
              acc[k],
              v128.and(
                f32x4.gt(get(sl2[k]), get(zero)),
                f32x4.gt(
                  f32x4.mul(get(slx[k]), get(slx[k])),
                  f32x4.mul(get(best[k]), get(sl2[k])),
                ),
              ),
            ),
            if_(anyTrue(get(acc[k])), [
              set(
                bestIs[k],
                v128.bitselect(get(iscale[k]), get(bestIs[k]), get(acc[k])),
              ),
              set(
                scale[k],
                v128.bitselect(
                  f32x4.div(get(slx[k]), get(sl2[k])),
                  get(scale[k]),
                  get(acc[k]),
                ),
              ),
              set(
                best[k],
                v128.bitselect(
                  f32x4.mul(get(scale[k]), get(slx[k])),
                  get(best[k]),
                  get(acc[k]),
                ),
              ),
            ]),
          ]),
        ]),
      ),
      // the codes of the best candidate, computed once
      over((i) =>
        each((k) => [
          stL(
            k,
            i,
            i32x4.add(
              get(off),
              i32x4.min_s(
                i32x4.max_s(
                  i32x4.sub(
                    v128.and(
                      f32x4.add(
                        f32x4.mul(get(bestIs[k]), ldX(k, i)),
                        get(magic),
                      ),
                      i32x4.splat(i32.const(0x7fffff)),
                    ),
                    i32x4.splat(i32.const(0x400000)),
                  ),
                  get(lo),
                ),
                get(hi),
              ),
            ),
          ),
        ])
      ),
      ...each((k) => [
        v128.store(i32.add(get(p.po), i32.const(32 * k)), get(scale[k])),
      ]),
      set(p.px, i32.add(get(p.px), i32.const(2 * bytes))),
      set(p.pl, i32.add(get(p.pl), i32.const(2 * bytes))),
      set(p.po, i32.add(get(p.po), i32.const(64))),
    ),
  );
}

/** Sub-block length of `qkx2` (Q4_K and Q5_K): its loops are unrolled. */
const QKX2_N = 32;

/**
 * `qkx2`: two groups (the eight sub-blocks of a 256-block) interleaved in
 * every step, so the two groups' sequential F32 sums overlap in the
 * pipeline; each lane still runs C's operations in C's order. The loops
 * over the 32 values are unrolled (addresses become constant offsets).
 */
function buildQkx2(m: ModuleBuilder): void {
  const f = m.func("qkx2", [
    ["px", T.i32],
    ["pw", T.i32],
    ["pl", T.i32],
    ["po", T.i32],
    ["groups", T.i32],
    ["nmax", T.i32],
    ["rmin", T.f32],
    ["rdelta", T.f32],
    ["nstep", T.i32],
    ["scratch", T.i32],
  ]);
  const p = f.params;
  const N = QKX2_N;
  const bytes = N * 16;
  const G = [0, 1];
  const [g, is] = f.locals(T.i32, 2);
  const V = () => G.map(() => f.local(T.v128));
  const mn = V(), mx = V(), sumW = V(), sumX = V(), iscale = V();
  const scale = V(), best = V(), sumL = V(), sumL2 = V(), sumXL = V();
  const lv = V(), lf = V(), wl = V(), dd = V(), ts = V(), tm = V();
  const cur = V(), acc = V();
  const [nmaxV, nmaxF, zero, magic] = f.locals(T.v128, 4);
  const [step] = f.locals(T.f32, 1);
  type C = ReturnType<typeof get>;
  // value i of group k of the pair: group 1's vectors follow group 0's
  const off = (k: number, i: number) => 16 * i + (k ? bytes : 0);
  const ld = (base: typeof p.px, k: number, i: number): C =>
    v128.load(get(base), off(k, i));
  const st = (base: typeof p.px, k: number, i: number, v: C): C =>
    v128.store(get(base), v, off(k, i));
  // scratch: x − min of both groups, then the candidate codes of both
  const ldXm = (k: number, i: number): C =>
    v128.load(get(p.scratch), off(k, i));
  const stXm = (k: number, i: number, v: C): C =>
    v128.store(get(p.scratch), v, off(k, i));
  const ldAux = (k: number, i: number): C =>
    v128.load(get(p.scratch), 2 * bytes + off(k, i));
  const stAux = (k: number, i: number, v: C): C =>
    v128.store(get(p.scratch), v, 2 * bytes + off(k, i));
  const codeOf = (v: C) =>
    i32x4.min_s(
      i32x4.max_s(
        i32x4.sub(
          v128.and(
            f32x4.add(v, get(magic)),
            i32x4.splat(i32.const(0x7fffff)),
          ),
          i32x4.splat(i32.const(0x400000)),
        ),
        get(zero),
      ),
      get(nmaxV),
    );
  const each = (fn: (k: number) => C[]) => G.flatMap((k) => fn(k));
  const over = (from: number, body: (i: number) => C[]): C =>
    seq(
      ...Array.from({ length: N - from }, (_, j) => body(from + j)).flat(),
    );
  f.body(
    set(nmaxV, i32x4.splat(get(p.nmax))),
    set(nmaxF, f32x4.splat(f32.convert_i32_s(get(p.nmax)))),
    set(zero, v128.const(new Array(16).fill(0))),
    set(magic, f32x4.splat(f32.const(12582912))),
    forLoop(
      "pair",
      g,
      i32.const(0),
      get(p.groups),
      i32.const(2),
      ...each((k) => [
        set(mn[k], ld(p.px, k, 0)),
        set(mx[k], get(mn[k])),
        set(sumW[k], ld(p.pw, k, 0)),
        set(sumX[k], f32x4.mul(get(sumW[k]), get(mn[k]))),
      ]),
      over(1, (i) =>
        each((k) => [
          set(lf[k], ld(p.px, k, i)),
          set(wl[k], ld(p.pw, k, i)),
          set(
            mn[k],
            v128.bitselect(
              get(lf[k]),
              get(mn[k]),
              f32x4.lt(get(lf[k]), get(mn[k])),
            ),
          ),
          set(
            mx[k],
            v128.bitselect(
              get(lf[k]),
              get(mx[k]),
              f32x4.gt(get(lf[k]), get(mx[k])),
            ),
          ),
          set(sumW[k], f32x4.add(get(sumW[k]), get(wl[k]))),
          set(
            sumX[k],
            f32x4.add(get(sumX[k]), f32x4.mul(get(wl[k]), get(lf[k]))),
          ),
        ])),
      ...each((k) => [
        set(
          mn[k],
          v128.bitselect(
            get(zero),
            get(mn[k]),
            f32x4.gt(get(mn[k]), get(zero)),
          ),
        ),
        v128.store(
          i32.add(get(p.po), i32.const(48 * k + 32)),
          f32x4.eq(get(mx[k]), get(mn[k])),
        ),
        set(
          iscale[k],
          f32x4.div(get(nmaxF), f32x4.sub(get(mx[k]), get(mn[k]))),
        ),
        set(scale[k], f32x4.div(f32x4.splat(f32.const(1)), get(iscale[k]))),
        set(best[k], get(zero)),
      ]),
      over(0, (i) =>
        each((k) => [
          set(wl[k], ld(p.px, k, i)),
          set(lf[k], f32x4.sub(get(wl[k]), get(mn[k]))),
          stXm(k, i, get(lf[k])),
          set(lv[k], codeOf(f32x4.mul(get(iscale[k]), get(lf[k])))),
          st(p.pl, k, i, get(lv[k])),
          set(
            dd[k],
            f32x4.sub(
              f32x4.add(
                f32x4.mul(get(scale[k]), f32x4.convert_i32x4_s(get(lv[k]))),
                get(mn[k]),
              ),
              get(wl[k]),
            ),
          ),
          set(
            best[k],
            f32x4.add(
              get(best[k]),
              f32x4.mul(ld(p.pw, k, i), f32x4.mul(get(dd[k]), get(dd[k]))),
            ),
          ),
        ])),
      if_(i32.ge_s(get(p.nstep), i32.const(1)), [
        forLoop(
          "search",
          is,
          i32.const(0),
          i32.add(get(p.nstep), i32.const(1)),
          i32.const(1),
          // (rmin + rdelta·is) + nmax, then / (max − min) per lane
          set(
            step,
            f32.add(
              f32.add(
                get(p.rmin),
                f32.mul(get(p.rdelta), f32.convert_i32_s(get(is))),
              ),
              f32.convert_i32_s(get(p.nmax)),
            ),
          ),
          ...each((k) => [
            set(
              iscale[k],
              f32x4.div(
                f32x4.splat(get(step)),
                f32x4.sub(get(mx[k]), get(mn[k])),
              ),
            ),
            set(sumL[k], get(zero)),
            set(sumL2[k], get(zero)),
            set(sumXL[k], get(zero)),
          ]),
          over(0, (i) =>
            each((k) => [
              set(lv[k], codeOf(f32x4.mul(get(iscale[k]), ldXm(k, i)))),
              stAux(k, i, get(lv[k])),
              set(lf[k], f32x4.convert_i32x4_s(get(lv[k]))),
              set(wl[k], f32x4.mul(ld(p.pw, k, i), get(lf[k]))),
              set(sumL[k], f32x4.add(get(sumL[k]), get(wl[k]))),
              set(
                sumL2[k],
                f32x4.add(get(sumL2[k]), f32x4.mul(get(wl[k]), get(lf[k]))),
              ),
              set(
                sumXL[k],
                f32x4.add(get(sumXL[k]), f32x4.mul(get(wl[k]), ld(p.px, k, i))),
              ),
            ])),
          ...each((k) => [
            // D = Σw·ΣL² − (ΣL)²
            set(
              dd[k],
              f32x4.sub(
                f32x4.mul(get(sumW[k]), get(sumL2[k])),
                f32x4.mul(get(sumL[k]), get(sumL[k])),
              ),
            ),
            set(
              ts[k],
              f32x4.div(
                f32x4.sub(
                  f32x4.mul(get(sumW[k]), get(sumXL[k])),
                  f32x4.mul(get(sumX[k]), get(sumL[k])),
                ),
                get(dd[k]),
              ),
            ),
            set(
              tm[k],
              f32x4.div(
                f32x4.sub(
                  f32x4.mul(get(sumL2[k]), get(sumX[k])),
                  f32x4.mul(get(sumL[k]), get(sumXL[k])),
                ),
                get(dd[k]),
              ),
            ),
            set(acc[k], f32x4.gt(get(tm[k]), get(zero))),
            set(
              ts[k],
              v128.bitselect(
                f32x4.div(get(sumXL[k]), get(sumL2[k])),
                get(ts[k]),
                get(acc[k]),
              ),
            ),
            set(tm[k], v128.bitselect(get(zero), get(tm[k]), get(acc[k]))),
            set(cur[k], get(zero)),
          ]),
          over(0, (i) =>
            each((k) => [
              set(
                lf[k],
                f32x4.sub(
                  f32x4.add(
                    f32x4.mul(
                      get(ts[k]),
                      f32x4.convert_i32x4_s(ldAux(k, i)),
                    ),
                    get(tm[k]),
                  ),
                  ld(p.px, k, i),
                ),
              ),
              set(
                cur[k],
                f32x4.add(
                  get(cur[k]),
                  f32x4.mul(ld(p.pw, k, i), f32x4.mul(get(lf[k]), get(lf[k]))),
                ),
              ),
            ])),
          ...each((k) => [
            set(
              acc[k],
              v128.and(
                f32x4.gt(get(dd[k]), get(zero)),
                f32x4.lt(get(cur[k]), get(best[k])),
              ),
            ),
            if_(anyTrue(get(acc[k])), [
              over(0, (i) => [
                st(
                  p.pl,
                  k,
                  i,
                  v128.bitselect(ldAux(k, i), ld(p.pl, k, i), get(acc[k])),
                ),
              ]),
              set(
                best[k],
                v128.bitselect(get(cur[k]), get(best[k]), get(acc[k])),
              ),
              set(
                scale[k],
                v128.bitselect(get(ts[k]), get(scale[k]), get(acc[k])),
              ),
              set(mn[k], v128.bitselect(get(tm[k]), get(mn[k]), get(acc[k]))),
              over(0, (i) => [
                stXm(k, i, f32x4.sub(ld(p.px, k, i), get(mn[k]))),
              ]),
            ]),
          ]),
        ),
      ]),
      ...each((k) => [
        v128.store(i32.add(get(p.po), i32.const(48 * k)), get(scale[k])),
        v128.store(
          i32.add(get(p.po), i32.const(48 * k + 16)),
          f32x4.neg(get(mn[k])),
        ),
      ]),
      set(p.px, i32.add(get(p.px), i32.const(2 * bytes))),
      set(p.pw, i32.add(get(p.pw), i32.const(2 * bytes))),
      set(p.pl, i32.add(get(p.pl), i32.const(2 * bytes))),
      set(p.po, i32.add(get(p.po), i32.const(96))),
    ),
  );
}

/**
 * `requant`: the final codes of Q4_K / Q5_K / Q6_K,
 * `nearest_int((x + dm) / d)` clamped to `[lo, hi]`, plus `off`,, per group with `d` at `pd` and `dm` at `pd + 16`
 * (one lane per sub-block); lanes with `d == 0` keep the search's codes.
 */
function buildRequant(m: ModuleBuilder): void {
  const f = m.func("requant", [
    ["px", T.i32],
    ["pl", T.i32],
    ["pd", T.i32],
    ["groups", T.i32],
    ["n", T.i32],
    ["lo", T.i32],
    ["hi", T.i32],
    ["off", T.i32],
  ]);
  const p = f.params;
  const [g, i, a, bytes] = f.locals(T.i32, 4);
  const [d, dm, keep, zero, magic, loV, hiV, offV] = f.locals(T.v128, 8);
  f.body(
    set(bytes, i32.shl(get(p.n), i32.const(4))),
    set(zero, v128.const(new Array(16).fill(0))),
    set(magic, f32x4.splat(f32.const(12582912))),
    set(loV, i32x4.splat(get(p.lo))),
    set(hiV, i32x4.splat(get(p.hi))),
    set(offV, i32x4.splat(get(p.off))),
    forLoop(
      "group",
      g,
      i32.const(0),
      get(p.groups),
      i32.const(1),
      set(d, v128.load(get(p.pd))),
      set(dm, v128.load(get(p.pd), 16)),
      set(keep, f32x4.eq(get(d), get(zero))),
      forLoop(
        "value",
        i,
        i32.const(0),
        get(p.n),
        i32.const(1),
        set(a, i32.shl(get(i), i32.const(4))),
        v128.store(
          i32.add(get(p.pl), get(a)),
          v128.bitselect(
            v128.load(i32.add(get(p.pl), get(a))),
            i32x4.add(
              get(offV),
              i32x4.min_s(
                i32x4.max_s(
                  i32x4.sub(
                    v128.and(
                      f32x4.add(
                        f32x4.div(
                          f32x4.add(
                            v128.load(i32.add(get(p.px), get(a))),
                            get(dm),
                          ),
                          get(d),
                        ),
                        get(magic),
                      ),
                      i32x4.splat(i32.const(0x7fffff)),
                    ),
                    i32x4.splat(i32.const(0x400000)),
                  ),
                  get(loV),
                ),
                get(hiV),
              ),
            ),
            get(keep),
          ),
        ),
      ),
      set(p.px, i32.add(get(p.px), get(bytes))),
      set(p.pl, i32.add(get(p.pl), get(bytes))),
      set(p.pd, i32.add(get(p.pd), i32.const(32))),
    ),
  );
}

/** `v128.any_true`. */
function anyTrue(a: ReturnType<typeof get>): ReturnType<typeof get> {
  return (w) => {
    a(w);
    w.byte(0xfd);
    w.u32(0x53);
  };
}

/**
 * The text of `core/quants/_k_wasm_bytes.ts`: the module as base64.
 *
 * @returns TypeScript source exporting `K_QUANT_WASM_BASE64`.
 *
 * @example
 * ```ts ignore
 * import { renderQuantizeKBytesFile } from "./_kernels_quantize_k.ts";
 * renderQuantizeKBytesFile().includes("K_QUANT_WASM_BASE64");
 * ```
 */
export function renderQuantizeKBytesFile(): string {
  const b64 = encodeBase64(buildQuantizeKModule());
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 76) {
    lines.push(`  "${b64.slice(i, i + 76)}"`);
  }
  return `// Generated by \`deno task build:quant-wasm\` from kernels/wasm/_kernels_quantize_k.ts. Do not edit.
// deno-fmt-ignore-file

/** The K-quant scale-search module (base64). */
export const K_QUANT_WASM_BASE64: string =
${lines.join(" +\n")};
`;
}
