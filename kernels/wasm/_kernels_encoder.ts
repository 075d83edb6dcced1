/**
 * Kernel source for the encoders' element-wise steps around a native GEMM:
 * the attention softmax of a layer's score rows (scale, key-padding mask,
 * max, exp, sum and normalisation fused, two passes over a row that stays
 * in L1), GELU (erf, a rational function) with the projection's bias
 * added, and an `exp` for tests. The softmax's `exp` is inlined (no call, its constants loaded once per
 * kernel call rather than once per vector) and rounds by the magic-number
 * addition instead of `nearest` + `trunc_sat` (which V8 lowers to several
 * x86 instructions each). {@link encoderKernels} adds them to the module.
 *
 * @module
 */

import {
  type Code,
  f32,
  f32x4,
  forLoop,
  type FuncBuilder,
  get,
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
import {
  at,
  c,
  type Ctx,
  f32x4c,
  hsum,
  lanes32,
  normaliseRow,
  rowMaxTail,
  zero,
} from "./_kernels_util.ts";

const I = T.i32;
const F = T.f32;
const V = T.v128;

/** Below this `exp` is clamped (its result, about 1.2e-38, is not flushed). */
const EXP_LO = -87.3365447505531;
/** 1.5·2^23 + 127: adding it rounds to an integer held, biased, in the low mantissa bits. */
const MAGIC = 12582912 + 127;
/** ln 2 in two parts (Cody–Waite): the first exact times any small integer. */
const LN2_HI = 0.693359375;
const LN2_LO = -2.12194440e-4;
/** Cephes `expf` polynomial: exp(r) ≈ 1 + r + r²·P(r) on |r| ≤ ln2/2. */
const EXP_P = [
  1.9875691500e-4,
  1.3981999507e-3,
  8.3334519073e-3,
  4.1665795894e-2,
  1.6666665459e-1,
  5.0000001201e-1,
];

/**
 * An inline `exp` on four lanes for arguments ≤ 0 (about 1e-7 relative
 * error; arguments below −87.3 give about 1.2e-38): returns a maker that
 * writes the code leaving `exp(x)` on the stack, using three v128 locals
 * of `f` (reused by every use; uses must not nest).
 */
export function expFast(f: FuncBuilder, ctx: Ctx): (x: Code) => Code {
  const [xs, t, r] = f.locals(V, 3);
  return (x: Code) => {
    let poly: Code = f32x4c(EXP_P[0]);
    for (let i = 1; i < EXP_P.length; i++) {
      poly = ctx.madd(poly, get(r), f32x4c(EXP_P[i]));
    }
    return seq(
      set(xs, f32x4.pmax(x, f32x4c(EXP_LO))),
      // t = x·log2 e + MAGIC: n = round(x·log2 e) sits in t's low bits
      set(t, ctx.madd(get(xs), f32x4c(Math.LOG2E), f32x4c(MAGIC))),
      set(r, f32x4.sub(get(t), f32x4c(MAGIC))),
      // r = x − n·ln 2
      set(xs, ctx.madd(get(r), f32x4c(-LN2_HI), get(xs))),
      set(r, ctx.madd(get(r), f32x4c(-LN2_LO), get(xs))),
      // (1 + r + r²·P(r)) · 2^n, 2^n's bits being (n + 127) << 23
      f32x4.mul(
        f32x4.add(ctx.madd(poly, f32x4.mul(get(r), get(r)), get(r)), f32x4c(1)),
        i32x4.shl(get(t), c(23)),
      ),
    );
  };
}

/** `exp_fast(x, y, n4)`: `y = exp(x)` for `n4` (a multiple of 4) values ≤ 0; for tests. */
function expFastKernel(m: ModuleBuilder, ctx: Ctx): void {
  const f = m.func("exp_fast", [["x", I], ["y", I], ["n4", I]]);
  const { x, y, n4 } = f.params;
  const [i] = f.locals(I, 1);
  const exp = expFast(f, ctx);
  f.body(
    forLoop(
      "i",
      i,
      c(0),
      get(n4),
      c(4),
      v128.store(at(y, get(i)), exp(v128.load(at(x, get(i))))),
    ),
  );
}

/**
 * `attn_softmax_rows(x, rows, n, keys, scale)`: for each of `rows` rows of
 * `n` values, in place: `softmax(scale · x[0..keys))` in the first `keys`
 * slots and 0 in the rest (the key-padding mask). `scale` > 0. Two passes
 * over the row's keys (max; exp, sum and store) and one to normalise.
 */
function attnSoftmaxKernel(m: ModuleBuilder, ctx: Ctx): void {
  const f = m.func("attn_softmax_rows", [
    ["x", I],
    ["rows", I],
    ["n", I],
    ["keys", I],
    ["scale", F],
  ]);
  const { x, rows, n, keys, scale } = f.params;
  const [r, i, row, k8, k4] = f.locals(I, 5);
  const [mx, sum, inv] = f.locals(F, 3);
  const [vm, vm2, vs, vs2, vsc, t] = f.locals(V, 6);
  const exp = expFast(f, ctx);
  const scaled = (v: Code) => f32x4.sub(f32x4.mul(v, get(vsc)), get(vm));
  const scalarExp = (s: Code) => f32x4.extract_lane(exp(f32x4.splat(s)), 0);
  // four keys at byte offset `off` of the step: exp stored in place, added to `acc`
  const expStoreSum = (off: number, acc: Local): Code[] => [
    set(t, exp(scaled(v128.load(at(row, get(i)), off)))),
    v128.store(at(row, get(i)), get(t), off),
    set(acc, f32x4.add(get(acc), get(t))),
  ];
  f.body(
    set(vsc, f32x4.splat(get(scale))),
    set(k8, i32.and(get(keys), c(~7))),
    set(k4, i32.and(get(keys), c(~3))),
    forLoop(
      "r",
      r,
      c(0),
      get(rows),
      c(1),
      set(row, i32.add(get(x), i32.shl(i32.mul(get(r), get(n)), c(2)))),
      // max of the raw values (scale > 0 keeps the order)
      set(vm, f32x4c(-Infinity)),
      set(vm2, f32x4c(-Infinity)),
      forLoop(
        "m",
        i,
        c(0),
        get(k8),
        c(8),
        set(vm, f32x4.pmax(get(vm), v128.load(at(row, get(i))))),
        set(vm2, f32x4.pmax(get(vm2), v128.load(at(row, get(i)), 16))),
      ),
      forLoop(
        "m4",
        i,
        get(k8),
        get(k4),
        c(4),
        set(vm, f32x4.pmax(get(vm), v128.load(at(row, get(i))))),
      ),
      set(vm, f32x4.pmax(get(vm), get(vm2))),
      set(
        vm,
        f32x4.pmax(
          get(vm),
          i8x16.shuffle(get(vm), get(vm), lanes32([2, 3, 0, 1])),
        ),
      ),
      rowMaxTail(row, i, k4, keys, mx, vm),
      set(mx, f32.mul(get(mx), get(scale))),
      set(vm, f32x4.splat(get(mx))),
      // exp(scale·x − max), stored, and summed in two accumulators
      set(vs, zero),
      set(vs2, zero),
      forLoop(
        "e",
        i,
        c(0),
        get(k8),
        c(8),
        ...expStoreSum(0, vs),
        ...expStoreSum(16, vs2),
      ),
      forLoop(
        "e4",
        i,
        get(k8),
        get(k4),
        c(4),
        ...expStoreSum(0, vs),
      ),
      set(sum, hsum(f32x4.add(get(vs), get(vs2)), t)),
      forLoop(
        "et",
        i,
        get(k4),
        get(keys),
        c(1),
        f32.store(
          at(row, get(i)),
          scalarExp(
            f32.sub(f32.mul(f32.load(at(row, get(i))), get(scale)), get(mx)),
          ),
        ),
        set(sum, f32.add(get(sum), f32.load(at(row, get(i))))),
      ),
      // normalise; masked keys get 0
      normaliseRow(row, i, k4, keys, sum, inv, vm),
      forLoop(
        "z",
        i,
        get(keys),
        get(n),
        c(1),
        f32.store(at(row, get(i)), f32.const(0)),
      ),
    ),
  );
}

/**
 * erf as an odd over an even polynomial on x clamped to [−4, 4] (Eigen's and
 * XNNPACK's float `erf`; about 4e-7 from the exact erf, no `exp`), numerator
 * coefficients of x^13 … x^1, denominator of x^8 … x^0.
 */
const ERF_NUM = [
  -2.72614225801306e-10,
  2.77068142495902e-08,
  -2.10102402082508e-06,
  -5.69250639462346e-05,
  -7.34990630326855e-04,
  -2.95459980854025e-03,
  -1.60960333262415e-02,
];
const ERF_DEN = [
  -1.45660718464996e-05,
  -2.13374055278905e-04,
  -1.68282697438203e-03,
  -7.37332916720468e-03,
  -1.42647390514189e-02,
];

/**
 * `gelu_bias_rows(x, bias, rows, n)`: in place, `x = gelu(x + bias)` per
 * row of `n` values (a multiple of 4), `bias` of `n` values; GELU's erf as
 * the rational function above (within 1e-6 of `geluErfApprox`, tested).
 */
function geluBiasKernel(m: ModuleBuilder, ctx: Ctx): void {
  const f = m.func("gelu_bias_rows", [
    ["x", I],
    ["bias", I],
    ["rows", I],
    ["n", I],
  ]);
  const { x, bias, rows, n } = f.params;
  const [r, i, row] = f.locals(I, 3);
  const [a, z, z2, p, q] = f.locals(V, 5);
  const horner = (coef: number[]): Code => {
    let acc: Code = f32x4c(coef[0]);
    for (let k = 1; k < coef.length; k++) {
      acc = ctx.madd(acc, get(z2), f32x4c(coef[k]));
    }
    return acc;
  };
  f.body(
    forLoop(
      "r",
      r,
      c(0),
      get(rows),
      c(1),
      set(row, i32.add(get(x), i32.shl(i32.mul(get(r), get(n)), c(2)))),
      forLoop(
        "i",
        i,
        c(0),
        get(n),
        c(4),
        set(
          a,
          f32x4.add(
            v128.load(at(row, get(i))),
            v128.load(at(bias, get(i))),
          ),
        ),
        // z = clamp(x/√2, −4, 4)
        set(
          z,
          f32x4.pmin(
            f32x4.pmax(f32x4.mul(get(a), f32x4c(Math.SQRT1_2)), f32x4c(-4)),
            f32x4c(4),
          ),
        ),
        set(z2, f32x4.mul(get(z), get(z))),
        set(p, f32x4.mul(horner(ERF_NUM), get(z))),
        set(q, horner(ERF_DEN)),
        // x/2 · (1 + erf(z))
        v128.store(
          at(row, get(i)),
          f32x4.mul(
            f32x4.mul(get(a), f32x4c(0.5)),
            f32x4.add(f32x4c(1), f32x4.div(get(p), get(q))),
          ),
        ),
      ),
    ),
  );
}

/** Adds the encoder kernels (`attn_softmax_rows`, `gelu_bias_rows`, `exp_fast`) to a module. */
export function encoderKernels(m: ModuleBuilder, ctx: Ctx): void {
  attnSoftmaxKernel(m, ctx);
  geluBiasKernel(m, ctx);
  expFastKernel(m, ctx);
}
