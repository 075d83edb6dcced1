/**
 * Kernel source for the element-wise kernels: `exp`, softmax, RMSNorm,
 * RoPE, SwiGLU, GELU (erf) and the probes (bandwidth, fused multiply-add); attention
 * over a KV cache is in `_kernels_attention.ts`. {@link opsKernels} adds
 * all of them to the module emitted by `_kernels.ts`.
 *
 * @module
 */

import {
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
  i8x16,
  if_,
  loop,
  type ModuleBuilder,
  seq,
  set,
  T,
  v128,
} from "./_asm.ts";
import {
  at,
  c,
  type Ctx,
  exp1,
  f32x4c,
  hsum,
  i32x4c,
  normaliseRow,
  rowMaxTail,
  zero,
} from "./_kernels_util.ts";
import { attentionKernel } from "./_kernels_attention.ts";

const I = T.i32;
const F = T.f32;
const V = T.v128;

// Range reduction and polynomial of expf (Cephes): exp(x) = 2^n · p(r),
// n = round(x·log2 e), r = x − n·ln 2 split in two parts for precision.
const EXP_HI = 88.3762626647949;

const EXP_LO = -87.3365447505531; // below this the result is flushed to 0

const LOG2E = 1.44269504088896341;

const LN2_HI = 0.693359375;

const LN2_LO = -2.12194440e-4;

const EXP_P = [
  1.9875691500e-4,
  1.3981999507e-3,
  8.3334519073e-3,
  4.1665795894e-2,
  1.6666665459e-1,
  5.0000001201e-1,
];

/** `exp` on four lanes, ~2 ulp, 0 below −87.3, clamped above 88.4. */
function expKernel(m: ModuleBuilder, ctx: Ctx): FuncBuilder {
  const f = m.func("exp4", [["x", V]], [V]);
  const { x } = f.params;
  const [n, r, p, under] = f.locals(V, 4);
  let poly: Code = f32x4c(EXP_P[0]);
  for (let i = 1; i < EXP_P.length; i++) {
    poly = ctx.madd(poly, get(r), f32x4c(EXP_P[i]));
  }
  f.body(
    set(under, f32x4.lt(get(x), f32x4c(EXP_LO))),
    set(x, f32x4.min(f32x4.max(get(x), f32x4c(EXP_LO)), f32x4c(EXP_HI))),
    set(n, f32x4.nearest(f32x4.mul(get(x), f32x4c(LOG2E)))),
    set(r, f32x4.sub(get(x), f32x4.mul(get(n), f32x4c(LN2_HI)))),
    set(r, f32x4.sub(get(r), f32x4.mul(get(n), f32x4c(LN2_LO)))),
    set(p, poly),
    // p·r² + r + 1
    set(
      p,
      f32x4.add(
        ctx.madd(get(p), f32x4.mul(get(r), get(r)), get(r)),
        f32x4c(1),
      ),
    ),
    set(
      p,
      f32x4.mul(
        get(p),
        i32x4.shl(
          i32x4.add(i32x4.trunc_sat_f32x4_s(get(n)), i32x4c(127)),
          c(23),
        ),
      ),
    ),
    v128.andnot(get(p), get(under)),
  );
  return f;
}

function softmaxKernel(m: ModuleBuilder, exp4: FuncBuilder): void {
  const f = m.func("softmax_rows", [["x", I], ["rows", I], ["n", I]]);
  const { x, rows, n } = f.params;
  const [r, i, row, n4] = f.locals(I, 4);
  const [mx, sum, inv] = f.locals(F, 3);
  const [vm, vs, t, e] = f.locals(V, 4);
  f.body(
    set(n4, i32.and(get(n), c(~3))),
    forLoop(
      "r",
      r,
      c(0),
      get(rows),
      c(1),
      set(row, i32.add(get(x), i32.shl(i32.mul(get(r), get(n)), c(2)))),
      // max
      set(vm, f32x4c(-Infinity)),
      forLoop(
        "m",
        i,
        c(0),
        get(n4),
        c(4),
        set(vm, f32x4.max(get(vm), v128.load(at(row, get(i))))),
      ),
      set(
        vm,
        f32x4.max(
          get(vm),
          i8x16.shuffle(get(vm), get(vm), [
            8,
            9,
            10,
            11,
            12,
            13,
            14,
            15,
            0,
            1,
            2,
            3,
            4,
            5,
            6,
            7,
          ]),
        ),
      ),
      rowMaxTail(row, i, n4, n, mx, vm),
      // exp and sum
      set(vm, f32x4.splat(get(mx))),
      set(vs, zero),
      forLoop(
        "e",
        i,
        c(0),
        get(n4),
        c(4),
        set(e, call(exp4, f32x4.sub(v128.load(at(row, get(i))), get(vm)))),
        v128.store(at(row, get(i)), get(e)),
        set(vs, f32x4.add(get(vs), get(e))),
      ),
      set(sum, hsum(get(vs), t)),
      forLoop(
        "et",
        i,
        get(n4),
        get(n),
        c(1),
        f32.store(
          at(row, get(i)),
          exp1(exp4, f32.sub(f32.load(at(row, get(i))), get(mx))),
        ),
        set(sum, f32.add(get(sum), f32.load(at(row, get(i))))),
      ),
      // normalize
      normaliseRow(row, i, n4, n, sum, inv, vm),
    ),
  );
}

function rmsNormKernel(m: ModuleBuilder, ctx: Ctx): void {
  const f = m.func("rmsnorm_rows", [
    ["x", I],
    ["w", I],
    ["y", I],
    ["rows", I],
    ["n", I],
    ["eps", F],
  ]);
  const { x, w, y, rows, n, eps } = f.params;
  const [r, i, row, out, n4] = f.locals(I, 5);
  const [ss, inv] = f.locals(F, 2);
  const [vs, t, vi] = f.locals(V, 3);
  f.body(
    set(n4, i32.and(get(n), c(~3))),
    forLoop(
      "r",
      r,
      c(0),
      get(rows),
      c(1),
      set(row, i32.add(get(x), i32.shl(i32.mul(get(r), get(n)), c(2)))),
      set(out, i32.add(get(y), i32.shl(i32.mul(get(r), get(n)), c(2)))),
      set(vs, zero),
      forLoop(
        "s",
        i,
        c(0),
        get(n4),
        c(4),
        set(t, v128.load(at(row, get(i)))),
        set(vs, ctx.madd(get(t), get(t), get(vs))),
      ),
      set(ss, hsum(get(vs), t)),
      forLoop(
        "st",
        i,
        get(n4),
        get(n),
        c(1),
        set(
          ss,
          f32.add(
            get(ss),
            f32.mul(f32.load(at(row, get(i))), f32.load(at(row, get(i)))),
          ),
        ),
      ),
      set(
        inv,
        f32.div(
          f32.const(1),
          f32.sqrt(
            f32.add(f32.div(get(ss), f32.convert_i32_s(get(n))), get(eps)),
          ),
        ),
      ),
      set(vi, f32x4.splat(get(inv))),
      forLoop(
        "o",
        i,
        c(0),
        get(n4),
        c(4),
        v128.store(
          at(out, get(i)),
          f32x4.mul(
            f32x4.mul(v128.load(at(row, get(i))), get(vi)),
            v128.load(at(w, get(i))),
          ),
        ),
      ),
      forLoop(
        "ot",
        i,
        get(n4),
        get(n),
        c(1),
        f32.store(
          at(out, get(i)),
          f32.mul(
            f32.mul(f32.load(at(row, get(i))), get(inv)),
            f32.load(at(w, get(i))),
          ),
        ),
      ),
    ),
  );
}

function ropeKernels(m: ModuleBuilder, ctx: Ctx): void {
  // NeoX / Hugging Face "rotate_half": pairs (i, i + rot/2); tables
  // cos/sin [seq][rot/2]. Requires rot/2 to be a multiple of 4.
  {
    const f = m.func("rope_neox", [
      ["x", I],
      ["cs", I],
      ["sn", I],
      ["seq", I],
      ["heads", I],
      ["hd", I],
      ["rot", I],
    ]);
    const { x, cs, sn, seq: nseq, heads, hd, rot } = f.params;
    const [s, h, i, half, p1, p2, tc, ts] = f.locals(I, 8);
    const [a, b, vc, vsn] = f.locals(V, 4);
    f.body(
      set(half, i32.shr_u(get(rot), c(1))),
      forLoop(
        "s",
        s,
        c(0),
        get(nseq),
        c(1),
        set(tc, at(cs, i32.mul(get(s), get(half)))),
        set(ts, at(sn, i32.mul(get(s), get(half)))),
        forLoop(
          "h",
          h,
          c(0),
          get(heads),
          c(1),
          set(
            p1,
            at(
              x,
              i32.mul(i32.add(i32.mul(get(s), get(heads)), get(h)), get(hd)),
            ),
          ),
          set(p2, at(p1, get(half))),
          forLoop(
            "i",
            i,
            c(0),
            get(half),
            c(4),
            set(a, v128.load(at(p1, get(i)))),
            set(b, v128.load(at(p2, get(i)))),
            set(vc, v128.load(at(tc, get(i)))),
            set(vsn, v128.load(at(ts, get(i)))),
            v128.store(
              at(p1, get(i)),
              f32x4.sub(
                f32x4.mul(get(a), get(vc)),
                f32x4.mul(get(b), get(vsn)),
              ),
            ),
            v128.store(
              at(p2, get(i)),
              ctx.madd(get(a), get(vsn), f32x4.mul(get(b), get(vc))),
            ),
          ),
        ),
      ),
    );
  }
  // Interleaved (GPT-J / original ggml): pairs (2i, 2i + 1); tables hold
  // cos duplicated per pair and (−sin, sin) per pair, [seq][rot]. Requires
  // rot to be a multiple of 4.
  {
    const f = m.func("rope_interleaved", [
      ["x", I],
      ["cs", I],
      ["sn", I],
      ["seq", I],
      ["heads", I],
      ["hd", I],
      ["rot", I],
    ]);
    const { x, cs, sn, seq: nseq, heads, hd, rot } = f.params;
    const [s, h, i, p1, tc, ts] = f.locals(I, 6);
    const [a] = f.locals(V, 1);
    f.body(
      forLoop(
        "s",
        s,
        c(0),
        get(nseq),
        c(1),
        set(tc, at(cs, i32.mul(get(s), get(rot)))),
        set(ts, at(sn, i32.mul(get(s), get(rot)))),
        forLoop(
          "h",
          h,
          c(0),
          get(heads),
          c(1),
          set(
            p1,
            at(
              x,
              i32.mul(i32.add(i32.mul(get(s), get(heads)), get(h)), get(hd)),
            ),
          ),
          forLoop(
            "i",
            i,
            c(0),
            get(rot),
            c(4),
            set(a, v128.load(at(p1, get(i)))),
            v128.store(
              at(p1, get(i)),
              ctx.madd(
                i8x16.shuffle(get(a), get(a), [
                  4,
                  5,
                  6,
                  7,
                  0,
                  1,
                  2,
                  3,
                  12,
                  13,
                  14,
                  15,
                  8,
                  9,
                  10,
                  11,
                ]),
                v128.load(at(ts, get(i))),
                f32x4.mul(get(a), v128.load(at(tc, get(i)))),
              ),
            ),
          ),
        ),
      ),
    );
  }
}

function swigluKernel(m: ModuleBuilder, exp4: FuncBuilder): void {
  // out = silu(g) · u = g / (1 + exp(−g)) · u
  const f = m.func("swiglu", [["g", I], ["u", I], ["out", I], ["n", I]]);
  const { g, u, out, n } = f.params;
  const [i, n4] = f.locals(I, 2);
  const [a] = f.locals(V, 1);
  const [s] = f.locals(F, 1);
  f.body(
    set(n4, i32.and(get(n), c(~3))),
    forLoop(
      "i",
      i,
      c(0),
      get(n4),
      c(4),
      set(a, v128.load(at(g, get(i)))),
      v128.store(
        at(out, get(i)),
        f32x4.mul(
          f32x4.div(
            get(a),
            f32x4.add(f32x4c(1), call(exp4, f32x4.neg(get(a)))),
          ),
          v128.load(at(u, get(i))),
        ),
      ),
    ),
    forLoop(
      "t",
      i,
      get(n4),
      get(n),
      c(1),
      set(s, f32.load(at(g, get(i)))),
      f32.store(
        at(out, get(i)),
        f32.mul(
          f32.div(
            get(s),
            f32.add(f32.const(1), exp1(exp4, f32.neg(get(s)))),
          ),
          f32.load(at(u, get(i))),
        ),
      ),
    ),
  );
}

// Abramowitz and Stegun 7.1.26: erf(z) ≈ 1 − t·P(t)·exp(−z²), t = 1/(1 + p·z),
// z ≥ 0, absolute error below 1.5e-7 (the same formula as the encoders'
// scalar GELU in models/encoder.ts).
const ERF_P = 0.3275911;

const ERF_A = [
  1.061405429,
  -1.453152027,
  1.421413741,
  -0.284496736,
  0.254829592,
];

/**
 * GELU with erf, `x·Φ(x) = ½x(1 + erf(x/√2))`, on `n4` values (a multiple
 * of 4; the caller does the rest); `out` may equal `x`.
 */
function geluErfKernel(m: ModuleBuilder, ctx: Ctx, exp4: FuncBuilder): void {
  const f = m.func("gelu_erf", [["x", I], ["out", I], ["n4", I]]);
  const { x, out, n4 } = f.params;
  const [i] = f.locals(I, 1);
  const [a, z, t, p] = f.locals(V, 4);
  let poly: Code = f32x4c(ERF_A[0]);
  for (let k = 1; k < ERF_A.length; k++) {
    poly = ctx.madd(poly, get(t), f32x4c(ERF_A[k]));
  }
  f.body(
    forLoop(
      "i",
      i,
      c(0),
      get(n4),
      c(4),
      set(a, v128.load(at(x, get(i)))),
      set(z, f32x4.mul(f32x4.abs(get(a)), f32x4c(Math.SQRT1_2))),
      set(
        t,
        f32x4.div(
          f32x4c(1),
          ctx.madd(get(z), f32x4c(ERF_P), f32x4c(1)),
        ),
      ),
      // erf(|x|/√2) = 1 − t·P(t)·exp(−z²), then x's sign
      set(
        p,
        f32x4.sub(
          f32x4c(1),
          f32x4.mul(
            f32x4.mul(poly, get(t)),
            call(exp4, f32x4.neg(f32x4.mul(get(z), get(z)))),
          ),
        ),
      ),
      set(p, v128.or(get(p), v128.and(get(a), i32x4c(0x80000000 | 0)))),
      v128.store(
        at(out, get(i)),
        f32x4.mul(
          f32x4.mul(get(a), f32x4c(0.5)),
          f32x4.add(f32x4c(1), get(p)),
        ),
      ),
    ),
  );
}

/**
 * `y = LayerNorm(a + b)` per row of `n` values (a multiple of 4): the sum,
 * its mean and variance in F32, then `(s − mean)/√(var + eps)·w + bias`;
 * a residual connection and the post-norm after it in one pass per step.
 */
function addLayerNormKernel(m: ModuleBuilder, ctx: Ctx): void {
  const f = m.func("add_layernorm_rows", [
    ["a", I],
    ["b", I],
    ["w", I],
    ["bias", I],
    ["y", I],
    ["rows", I],
    ["n", I],
    ["eps", F],
  ]);
  const { a, b, w, bias, y, rows, n, eps } = f.params;
  const [r, i, ra, rb, ro] = f.locals(I, 5);
  const [mean, inv] = f.locals(F, 2);
  const [vs, t, vm, vi] = f.locals(V, 4);
  const rowAt = (base: Code) =>
    i32.add(base, i32.shl(i32.mul(get(r), get(n)), c(2)));
  f.body(
    forLoop(
      "r",
      r,
      c(0),
      get(rows),
      c(1),
      set(ra, rowAt(get(a))),
      set(rb, rowAt(get(b))),
      set(ro, rowAt(get(y))),
      set(vs, zero),
      forLoop(
        "s",
        i,
        c(0),
        get(n),
        c(4),
        set(t, f32x4.add(v128.load(at(ra, get(i))), v128.load(at(rb, get(i))))),
        v128.store(at(ro, get(i)), get(t)),
        set(vs, f32x4.add(get(vs), get(t))),
      ),
      set(mean, f32.div(hsum(get(vs), t), f32.convert_i32_s(get(n)))),
      set(vm, f32x4.splat(get(mean))),
      set(vs, zero),
      forLoop(
        "v",
        i,
        c(0),
        get(n),
        c(4),
        set(t, f32x4.sub(v128.load(at(ro, get(i))), get(vm))),
        set(vs, ctx.madd(get(t), get(t), get(vs))),
      ),
      set(
        inv,
        f32.div(
          f32.const(1),
          f32.sqrt(
            f32.add(
              f32.div(hsum(get(vs), t), f32.convert_i32_s(get(n))),
              get(eps),
            ),
          ),
        ),
      ),
      set(vi, f32x4.splat(get(inv))),
      forLoop(
        "o",
        i,
        c(0),
        get(n),
        c(4),
        v128.store(
          at(ro, get(i)),
          f32x4.add(
            f32x4.mul(
              f32x4.mul(
                f32x4.sub(v128.load(at(ro, get(i))), get(vm)),
                get(vi),
              ),
              v128.load(at(w, get(i))),
            ),
            v128.load(at(bias, get(i))),
          ),
        ),
      ),
    ),
  );
}

/**
 * Reads 64-byte chunks `[c0, c1)` from `p` and stores a checksum at `out`:
 * the time to stream bytes through SIMD registers, the bandwidth bound the
 * matvec benchmarks compare against. The range is cut into `streams` (≥ 1)
 * equal runs read a chunk at a time in turn (the last run takes what is
 * left), the access pattern of the quantized jobs' weight streams.
 */
function readProbe(m: ModuleBuilder): void {
  const f = m.func("read_probe", [
    ["p", I],
    ["out", I],
    ["c0", I],
    ["c1", I],
    ["streams", I],
  ]);
  const { p, out, c0, c1, streams } = f.params;
  const [run, i, j, q] = f.locals(I, 4);
  const a = f.locals(V, 4);
  const chunk = (at: Code): Code[] => [
    set(q, i32.add(get(p), i32.shl(at, c(6)))),
    ...a.map((x, k) => set(x, i32x4.add(get(x), v128.load(get(q), k * 16)))),
  ];
  f.body(
    ...a.map((x) => set(x, zero)),
    set(run, i32.div_u(i32.sub(get(c1), get(c0)), get(streams))),
    // runs in turn: chunk i of every run, for i below the run length
    forLoop(
      "i",
      i,
      c(0),
      get(run),
      c(1),
      forLoop(
        "s",
        j,
        c(0),
        get(streams),
        c(1),
        ...chunk(
          i32.add(get(c0), i32.add(i32.mul(get(j), get(run)), get(i))),
        ),
      ),
    ),
    // what the equal runs left over
    forLoop(
      "t",
      i,
      i32.add(get(c0), i32.mul(get(run), get(streams))),
      get(c1),
      c(1),
      ...chunk(get(i)),
    ),
    v128.store(
      get(out),
      i32x4.add(
        i32x4.add(get(a[0]), get(a[1])),
        i32x4.add(get(a[2]), get(a[3])),
      ),
    ),
  );
}

/**
 * `n` iterations of 12 independent f32x4 multiply-adds on registers (no
 * memory traffic), result stored at `out`: the FMA peak of this engine,
 * the ceiling the dense kernels are measured against.
 */
function fmaProbe(m: ModuleBuilder, ctx: Ctx): void {
  const f = m.func("fma_probe", [["n", I], ["out", I]]);
  const { n, out } = f.params;
  const acc = f.locals(V, 12);
  const [a, b] = f.locals(V, 2);
  f.body(
    set(a, f32x4c(0.999)),
    set(b, f32x4c(0.001)),
    ...acc.map((x, i) => set(x, f32x4c(i))),
    if_(i32.gt_s(get(n), c(0)), [
      loop(
        "l",
        ...acc.map((x) => set(x, ctx.madd(get(a), get(x), get(b)))),
        set(n, i32.sub(get(n), c(1))),
        brIf("l", get(n)),
      ),
    ]),
    v128.store(
      get(out),
      acc.slice(1).reduce((s, x) => f32x4.add(s, get(x)), get(acc[0])),
    ),
  );
}

/** Adds the element-wise and attention kernels to a module. */
export function opsKernels(m: ModuleBuilder, ctx: Ctx): void {
  const exp4 = expKernel(m, ctx);
  softmaxKernel(m, exp4);
  rmsNormKernel(m, ctx);
  ropeKernels(m, ctx);
  swigluKernel(m, exp4);
  geluErfKernel(m, ctx, exp4);
  addLayerNormKernel(m, ctx);
  attentionKernel(m, ctx, exp4);
  readProbe(m);
  fmaProbe(m, ctx);
  void [if_, seq];
}
