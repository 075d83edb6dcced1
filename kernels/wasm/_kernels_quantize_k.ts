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
  return m.encode();
}

/**
 * `qx`: ggml's `make_qx_quants` (rmse_type 1, weights x², the Q6_K search)
 * for four sub-blocks of `n` values per group. Writes the codes plus `nmax`
 * at `pl`, and 32 bytes at `po`: the scale and a lane mask of sub-blocks
 * whose largest magnitude is below `eps` (redone by the caller).
 */
function buildQx(m: ModuleBuilder): void {
  const f = m.func("qx", [
    ["px", T.i32],
    ["pl", T.i32],
    ["po", T.i32],
    ["groups", T.i32],
    ["n", T.i32],
    ["nmax", T.i32],
    ["eps", T.f32],
    ["tenth", T.f32],
    ["scratch", T.i32],
  ]);
  const p = f.params;
  const [g, i, is, a] = f.locals(T.i32, 4);
  const [amax, mx, iscale, scale, best, slx, sl2, xi, lv, lf, w, acc] = f
    .locals(T.v128, 12);
  const [lo, hi, off, magic] = f.locals(T.v128, 4);
  const bytes = i32.shl(get(p.n), i32.const(4));
  const at = (base: typeof p.px) => i32.add(get(base), get(a));
  const laux = i32.add(get(p.scratch), get(a));
  // one pass: codes at `store`, Σ(w·x)·l and Σ(w·l)·l in C's order
  const pass = (label: string, store: ReturnType<typeof get>) =>
    seq(
      set(slx, v128.const(new Array(16).fill(0))),
      set(sl2, v128.const(new Array(16).fill(0))),
      forLoop(
        label,
        i,
        i32.const(0),
        get(p.n),
        i32.const(1),
        set(a, i32.shl(get(i), i32.const(4))),
        set(xi, v128.load(at(p.px))),
        set(
          lv,
          i32x4.min_s(
            i32x4.max_s(
              i32x4.sub(
                v128.and(
                  f32x4.add(f32x4.mul(get(iscale), get(xi)), get(magic)),
                  i32x4.splat(i32.const(0x7fffff)),
                ),
                i32x4.splat(i32.const(0x400000)),
              ),
              get(lo),
            ),
            get(hi),
          ),
        ),
        v128.store(store, i32x4.add(get(lv), get(off))),
        set(lf, f32x4.convert_i32x4_s(get(lv))),
        set(w, f32x4.mul(get(xi), get(xi))),
        set(
          slx,
          f32x4.add(get(slx), f32x4.mul(f32x4.mul(get(w), get(xi)), get(lf))),
        ),
        set(
          sl2,
          f32x4.add(get(sl2), f32x4.mul(f32x4.mul(get(w), get(lf)), get(lf))),
        ),
      ),
    );
  const zero = v128.const(new Array(16).fill(0));
  f.body(
    set(off, i32x4.splat(get(p.nmax))),
    set(lo, i32x4.splat(i32.sub(i32.const(0), get(p.nmax)))),
    set(hi, i32x4.splat(i32.sub(get(p.nmax), i32.const(1)))),
    set(magic, f32x4.splat(f32.const(12582912))),
    forLoop(
      "group",
      g,
      i32.const(0),
      get(p.groups),
      i32.const(1),
      set(amax, zero),
      set(mx, zero),
      forLoop(
        "amax",
        i,
        i32.const(0),
        get(p.n),
        i32.const(1),
        set(a, i32.shl(get(i), i32.const(4))),
        set(xi, v128.load(at(p.px))),
        set(lf, f32x4.abs(get(xi))),
        set(acc, f32x4.gt(get(lf), get(amax))),
        set(amax, v128.bitselect(get(lf), get(amax), get(acc))),
        set(mx, v128.bitselect(get(xi), get(mx), get(acc))),
      ),
      v128.store(
        i32.add(get(p.po), i32.const(16)),
        f32x4.lt(get(amax), f32x4.splat(get(p.eps))),
      ),
      set(
        iscale,
        f32x4.div(
          f32x4.splat(f32.neg(f32.convert_i32_s(get(p.nmax)))),
          get(mx),
        ),
      ),
      pass("first", at(p.pl)),
      // scale = Σl² ? Σlx/Σl² : 0
      set(
        scale,
        v128.and(
          f32x4.div(get(slx), get(sl2)),
          v128.not(f32x4.eq(get(sl2), zero)),
        ),
      ),
      set(best, f32x4.mul(get(scale), get(slx))),
      forLoop(
        "search",
        is,
        i32.const(-9),
        i32.const(10),
        i32.const(1),
        if_(get(is), [
          set(
            iscale,
            f32x4.div(
              f32x4.splat(
                f32.neg(
                  f32.add(
                    f32.convert_i32_s(get(p.nmax)),
                    f32.mul(get(p.tenth), f32.convert_i32_s(get(is))),
                  ),
                ),
              ),
              get(mx),
            ),
          ),
          pass("cand", laux),
          set(
            acc,
            v128.and(
              f32x4.gt(get(sl2), zero),
              f32x4.gt(
                f32x4.mul(get(slx), get(slx)),
                f32x4.mul(get(best), get(sl2)),
              ),
            ),
          ),
          if_(anyTrue(get(acc)), [
            forLoop(
              "take",
              i,
              i32.const(0),
              get(p.n),
              i32.const(1),
              set(a, i32.shl(get(i), i32.const(4))),
              v128.store(
                at(p.pl),
                v128.bitselect(
                  v128.load(laux),
                  v128.load(at(p.pl)),
                  get(acc),
                ),
              ),
            ),
            set(
              scale,
              v128.bitselect(
                f32x4.div(get(slx), get(sl2)),
                get(scale),
                get(acc),
              ),
            ),
            set(
              best,
              v128.bitselect(
                f32x4.mul(get(scale), get(slx)),
                get(best),
                get(acc),
              ),
            ),
          ]),
        ]),
      ),
      v128.store(get(p.po), get(scale)),
      set(p.px, i32.add(get(p.px), bytes)),
      set(p.pl, i32.add(get(p.pl), bytes)),
      set(p.po, i32.add(get(p.po), i32.const(32))),
    ),
  );
}

/**
 * `qkx2`: two groups (the eight sub-blocks of a 256-block) interleaved in
 * every loop, so the two groups' sequential F32 sums overlap in the
 * pipeline; each lane still runs C's operations in C's order.
 */
function buildQkx2(m: ModuleBuilder): void {
  const f = m.func("qkx2", [
    ["px", T.i32],
    ["pw", T.i32],
    ["pl", T.i32],
    ["po", T.i32],
    ["groups", T.i32],
    ["n", T.i32],
    ["nmax", T.i32],
    ["rmin", T.f32],
    ["rdelta", T.f32],
    ["nstep", T.i32],
    ["scratch", T.i32],
  ]);
  const p = f.params;
  const G = [0, 1];
  const [g, i, is, a, bytes] = f.locals(T.i32, 5);
  const V = () => G.map(() => f.local(T.v128));
  const mn = V(), mx = V(), sumW = V(), sumX = V(), iscale = V();
  const scale = V(), best = V(), sumL = V(), sumL2 = V(), sumXL = V();
  const lv = V(), lf = V(), wl = V(), dd = V(), ts = V(), tm = V();
  const cur = V(), acc = V();
  const [nmaxV, nmaxF, zero, magic] = f.locals(T.v128, 4);
  const [step] = f.locals(T.f32, 1);
  // group k of the pair: its vectors follow group 0's by n·16 bytes
  const at = (base: typeof p.px, k: number) =>
    i32.add(i32.add(get(base), get(a)), k ? get(bytes) : i32.const(0));
  const xmAt = (k: number) =>
    i32.add(
      i32.add(get(p.scratch), get(a)),
      k ? get(bytes) : i32.const(0),
    );
  const lauxAt = (k: number) =>
    i32.add(
      i32.add(get(p.scratch), get(a)),
      i32.shl(get(bytes), i32.const(k ? 2 : 1)),
    );
  const codeOf = (v: ReturnType<typeof get>) =>
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
  const each = (fn: (k: number) => ReturnType<typeof get>[]) =>
    G.flatMap((k) => fn(k));
  const over = (label: string, from: number, body: ReturnType<typeof get>[]) =>
    forLoop(
      label,
      i,
      i32.const(from),
      get(p.n),
      i32.const(1),
      set(a, i32.shl(get(i), i32.const(4))),
      ...body,
    );
  f.body(
    set(bytes, i32.shl(get(p.n), i32.const(4))),
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
      set(a, i32.const(0)),
      ...each((k) => [
        set(mn[k], v128.load(at(p.px, k))),
        set(mx[k], get(mn[k])),
        set(sumW[k], v128.load(at(p.pw, k))),
        set(sumX[k], f32x4.mul(get(sumW[k]), get(mn[k]))),
      ]),
      over(
        "init",
        1,
        each((k) => [
          set(lf[k], v128.load(at(p.px, k))),
          set(wl[k], v128.load(at(p.pw, k))),
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
        ]),
      ),
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
      over(
        "first",
        0,
        each((k) => [
          set(wl[k], v128.load(at(p.px, k))),
          set(lf[k], f32x4.sub(get(wl[k]), get(mn[k]))),
          v128.store(xmAt(k), get(lf[k])),
          set(lv[k], codeOf(f32x4.mul(get(iscale[k]), get(lf[k])))),
          v128.store(at(p.pl, k), get(lv[k])),
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
              f32x4.mul(
                v128.load(at(p.pw, k)),
                f32x4.mul(get(dd[k]), get(dd[k])),
              ),
            ),
          ),
        ]),
      ),
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
          over(
            "cand",
            0,
            each((k) => [
              set(
                lv[k],
                codeOf(f32x4.mul(get(iscale[k]), v128.load(xmAt(k)))),
              ),
              v128.store(lauxAt(k), get(lv[k])),
              set(lf[k], f32x4.convert_i32x4_s(get(lv[k]))),
              set(wl[k], f32x4.mul(v128.load(at(p.pw, k)), get(lf[k]))),
              set(sumL[k], f32x4.add(get(sumL[k]), get(wl[k]))),
              set(
                sumL2[k],
                f32x4.add(get(sumL2[k]), f32x4.mul(get(wl[k]), get(lf[k]))),
              ),
              set(
                sumXL[k],
                f32x4.add(
                  get(sumXL[k]),
                  f32x4.mul(get(wl[k]), v128.load(at(p.px, k))),
                ),
              ),
            ]),
          ),
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
          over(
            "err",
            0,
            each((k) => [
              set(
                lf[k],
                f32x4.sub(
                  f32x4.add(
                    f32x4.mul(
                      get(ts[k]),
                      f32x4.convert_i32x4_s(v128.load(lauxAt(k))),
                    ),
                    get(tm[k]),
                  ),
                  v128.load(at(p.px, k)),
                ),
              ),
              set(
                cur[k],
                f32x4.add(
                  get(cur[k]),
                  f32x4.mul(
                    v128.load(at(p.pw, k)),
                    f32x4.mul(get(lf[k]), get(lf[k])),
                  ),
                ),
              ),
            ]),
          ),
          ...each((k) => [
            set(
              acc[k],
              v128.and(
                f32x4.gt(get(dd[k]), get(zero)),
                f32x4.lt(get(cur[k]), get(best[k])),
              ),
            ),
            if_(anyTrue(get(acc[k])), [
              over("take", 0, [
                v128.store(
                  at(p.pl, k),
                  v128.bitselect(
                    v128.load(lauxAt(k)),
                    v128.load(at(p.pl, k)),
                    get(acc[k]),
                  ),
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
              over("xm", 0, [
                v128.store(
                  xmAt(k),
                  f32x4.sub(v128.load(at(p.px, k)), get(mn[k])),
                ),
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
      set(p.px, i32.add(get(p.px), i32.shl(get(bytes), i32.const(1)))),
      set(p.pw, i32.add(get(p.pw), i32.shl(get(bytes), i32.const(1)))),
      set(p.pl, i32.add(get(p.pl), i32.shl(get(bytes), i32.const(1)))),
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
