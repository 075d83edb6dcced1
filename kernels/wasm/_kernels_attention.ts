/**
 * Kernel source for attention over a KV cache (`attention`): scores,
 * softmax and the weighted sum of values per query head, prefill and
 * decode, grouped-query heads, split by heads across threads. Part of the
 * module emitted by `_kernels.ts` (through `opsKernels`).
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
  type ModuleBuilder,
  select,
  set,
  T,
  v128,
} from "./_asm.ts";
import { at, c, type Ctx, exp1, hsum, hsum4, zero } from "./_kernels_util.ts";

const I = T.i32;
const F = T.f32;
const V = T.v128;

/**
 * Attention of `nq` query rows over a KV cache, heads `[h0, h1)`.
 * q: [nq][heads][hd]; caches: [kvHeads][cap][hd]; out like q; scores:
 * per-head scratch of `len` floats at `scores + h·len·4`. Query i sits at
 * position `start + i`; causal queries see keys `0..start+i`, others see
 * all `start + nq` keys. Requires hd % 4 == 0.
 */
export function attentionKernel(
  m: ModuleBuilder,
  ctx: Ctx,
  exp4: FuncBuilder,
): void {
  const f = m.func("attention", [
    ["q", I],
    ["kc", I],
    ["vc", I],
    ["out", I],
    ["scores", I],
    ["nq", I],
    ["heads", I],
    ["kvHeads", I],
    ["hd", I],
    ["cap", I],
    ["start", I],
    ["scale", F],
    ["causal", I],
    ["h0", I],
    ["h1", I],
  ]);
  const P = f.params;
  const [h, qi, j, d, len, group, qv, kb, vb, sc, ov, kj, rowBytes, len4] = f
    .locals(I, 14);
  const [mx, sum, inv, pj] = f.locals(F, 4);
  const acc = f.locals(V, 8);
  const [qd, t0, t1, vm, vs] = f.locals(V, 5);
  const t = f.locals(V, 4);
  const dot4keys: Code[] = [];
  // scores[j..j+4) = scale · q·k_{j..j+4}
  for (let u = 0; u < 4; u++) dot4keys.push(set(acc[u], zero));
  dot4keys.push(
    set(kj, i32.add(get(kb), i32.mul(get(j), get(rowBytes)))),
    forLoop(
      "d4",
      d,
      c(0),
      get(P.hd),
      c(4),
      set(qd, v128.load(at(qv, get(d)))),
      ...[0, 1, 2, 3].map((u) =>
        set(
          acc[u],
          ctx.madd(
            get(qd),
            v128.load(
              at(i32.add(get(kj), i32.mul(get(rowBytes), c(u))), get(d)),
            ),
            get(acc[u]),
          ),
        )
      ),
    ),
    hsum4(get(acc[0]), get(acc[1]), get(acc[2]), get(acc[3]), t),
    v128.store(
      at(sc, get(j)),
      f32x4.mul(get(t[0]), f32x4.splat(get(P.scale))),
    ),
  );
  const dot1key: Code[] = [
    set(acc[0], zero),
    set(kj, i32.add(get(kb), i32.mul(get(j), get(rowBytes)))),
    forLoop(
      "d1",
      d,
      c(0),
      get(P.hd),
      c(4),
      set(
        acc[0],
        ctx.madd(
          v128.load(at(qv, get(d))),
          v128.load(at(kj, get(d))),
          get(acc[0]),
        ),
      ),
    ),
    f32.store(at(sc, get(j)), f32.mul(hsum(get(acc[0]), t0), get(P.scale))),
  ];
  // out[d..d+32) = Σ_j p_j v_j[d..d+32), 8 vectors in registers at a time
  const vAccum = (nv: number): Code[] => [
    ...Array.from({ length: nv }, (_, u) => set(acc[u], zero)),
    forLoop(
      "vj",
      j,
      c(0),
      get(len),
      c(1),
      set(vm, f32x4.splat(f32.load(at(sc, get(j))))),
      set(kj, i32.add(at(vb, get(d)), i32.mul(get(j), get(rowBytes)))),
      ...Array.from(
        { length: nv },
        (_, u) =>
          set(
            acc[u],
            ctx.madd(get(vm), v128.load(get(kj), u * 16), get(acc[u])),
          ),
      ),
    ),
    ...Array.from(
      { length: nv },
      (_, u) => v128.store(at(ov, get(d)), get(acc[u]), u * 16),
    ),
  ];
  f.body(
    set(group, i32.div_u(get(P.heads), get(P.kvHeads))),
    set(rowBytes, i32.shl(get(P.hd), c(2))),
    forLoop(
      "h",
      h,
      get(P.h0),
      get(P.h1),
      c(1),
      set(
        kb,
        i32.add(
          get(P.kc),
          i32.mul(
            i32.mul(i32.div_u(get(h), get(group)), get(P.cap)),
            get(rowBytes),
          ),
        ),
      ),
      set(vb, i32.add(get(P.vc), i32.sub(get(kb), get(P.kc)))),
      set(
        sc,
        i32.add(
          get(P.scores),
          i32.shl(i32.mul(get(h), i32.add(get(P.start), get(P.nq))), c(2)),
        ),
      ),
      forLoop(
        "qi",
        qi,
        c(0),
        get(P.nq),
        c(1),
        set(
          qv,
          at(
            P.q,
            i32.mul(
              i32.add(i32.mul(get(qi), get(P.heads)), get(h)),
              get(P.hd),
            ),
          ),
        ),
        set(
          ov,
          at(
            P.out,
            i32.mul(
              i32.add(i32.mul(get(qi), get(P.heads)), get(h)),
              get(P.hd),
            ),
          ),
        ),
        set(
          len,
          select(
            i32.add(i32.add(get(P.start), get(qi)), c(1)),
            i32.add(get(P.start), get(P.nq)),
            get(P.causal),
          ),
        ),
        set(len4, i32.and(get(len), c(~3))),
        // scores
        forLoop("j4", j, c(0), get(len4), c(4), ...dot4keys),
        forLoop("j1", j, get(len4), get(len), c(1), ...dot1key),
        // softmax over scores[0..len)
        set(mx, f32.const(-Infinity)),
        forLoop(
          "mx",
          j,
          c(0),
          get(len),
          c(1),
          set(mx, f32.max(get(mx), f32.load(at(sc, get(j))))),
        ),
        set(vm, f32x4.splat(get(mx))),
        set(vs, zero),
        forLoop(
          "ex",
          j,
          c(0),
          get(len4),
          c(4),
          set(t1, call(exp4, f32x4.sub(v128.load(at(sc, get(j))), get(vm)))),
          v128.store(at(sc, get(j)), get(t1)),
          set(vs, f32x4.add(get(vs), get(t1))),
        ),
        set(sum, hsum(get(vs), t0)),
        forLoop(
          "ex1",
          j,
          get(len4),
          get(len),
          c(1),
          set(pj, exp1(exp4, f32.sub(f32.load(at(sc, get(j))), get(mx)))),
          f32.store(at(sc, get(j)), get(pj)),
          set(sum, f32.add(get(sum), get(pj))),
        ),
        set(inv, f32.div(f32.const(1), get(sum))),
        forLoop(
          "nm",
          j,
          c(0),
          get(len),
          c(1),
          f32.store(
            at(sc, get(j)),
            f32.mul(f32.load(at(sc, get(j))), get(inv)),
          ),
        ),
        // weighted sum of values, 32 then 4 dims at a time
        set(d, c(0)),
        forLoop(
          "d32",
          d,
          c(0),
          i32.and(get(P.hd), c(~31)),
          c(32),
          ...vAccum(8),
        ),
        forLoop(
          "d4v",
          d,
          i32.and(get(P.hd), c(~31)),
          get(P.hd),
          c(4),
          ...vAccum(1),
        ),
      ),
    ),
  );
}
