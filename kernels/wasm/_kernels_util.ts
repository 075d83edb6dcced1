/**
 * Helpers shared by the kernel sources: the per-variant context, constants
 * and the few instruction idioms (horizontal sums, F16 widening) several
 * kernels use.
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
  i8x16,
  if_,
  type Local,
  select,
  seq,
  set,
  v128,
} from "./_asm.ts";

/** Which instruction set a module variant uses. */
export type KernelVariant = "relaxed" | "simd";

/** Shorthand for `i32.const`. */
export const c = i32.const;

/** 32-bit lane indices to the 16 byte indices `i8x16.shuffle` wants. */
export function lanes32(l: number[]): number[] {
  return l.flatMap((x) => [4 * x, 4 * x + 1, 4 * x + 2, 4 * x + 3]);
}

/** A v128 constant with four equal i32 lanes (pooled per function). */
export function i32x4c(n: number): Code {
  const b = new Uint8Array(new Int32Array([n, n, n, n]).buffer);
  return v128.pooled(b);
}
/** A v128 constant with four equal f32 lanes (pooled per function). */
export function f32x4c(x: number): Code {
  const b = new Uint8Array(new Float32Array([x, x, x, x]).buffer);
  return v128.pooled(b);
}
/** A v128 constant with sixteen equal bytes (pooled per function). */
export function i8x16c(n: number): Code {
  return v128.pooled(new Uint8Array(16).fill(n & 0xff));
}

/** The all-zero vector. */
export const zero: Code = v128.const(new Uint8Array(16));

/** Per-variant instruction choices. */
export class Ctx {
  /** Whether relaxed SIMD may be used. */
  readonly relaxed: boolean;
  /** Creates the context for a variant. */
  constructor(variant: KernelVariant) {
    this.relaxed = variant === "relaxed";
  }
  /** `a·b + acc` on f32x4: one fused op with relaxed SIMD, mul + add otherwise. */
  madd(a: Code, b: Code, acc: Code): Code {
    return this.relaxed
      ? f32x4.relaxed_madd(a, b, acc)
      : f32x4.add(f32x4.mul(a, b), acc);
  }
}

/** 2^112: scales an F16 bit pattern placed in an F32's low exponent bits. */
export const F16_SCALE = 5.192296858534828e33;
/** Keeps the sign and the 15 exponent/mantissa bits of a shifted F16. */
export const F16_MASK = 0x8fffe000 | 0;

/**
 * F16 → F32 of a half stored in the low 16 bits of an i32 (upper bits
 * ignored). Exact for every finite half, subnormals included; ±inf and NaN
 * become large finite numbers (weights never hold them).
 */
export function f16ToF32(h: Code): Code {
  return f32.mul(
    f32.reinterpret_i32(
      i32.and(i32.shr_s(i32.shl(h, c(16)), c(3)), c(F16_MASK)),
    ),
    f32.const(F16_SCALE),
  );
}

/**
 * {@link f16ToF32} of the half that `load` reads (it is evaluated four
 * times: give it a plain load), without ever forming an F32 subnormal,
 * which x86 cores take a microcode assist of some hundred cycles to
 * multiply: Q4_K and Q6_K super-blocks of small weights have subnormal f16
 * scales (every one of a 2048-wide random model's Q4_K blocks), and their
 * matvec ran at half speed. Normal halves get their exponent rebased in
 * the integer bits; zero and subnormal ones are their 10-bit mantissa,
 * converted, times ±2^-24 (both exact), so the values are f16ToF32's for
 * every half.
 */
export function f16ToF32NoSubnormal(load: () => Code): Code {
  return f32.reinterpret_i32(
    select(
      i32.add(
        i32.and(i32.shr_s(i32.shl(load(), c(16)), c(3)), c(F16_MASK)),
        c(112 << 23),
      ),
      i32.reinterpret_f32(
        f32.mul(
          f32.convert_i32_s(i32.and(load(), c(0x3ff))),
          f32.reinterpret_i32(
            i32.or(i32.shl(i32.and(load(), c(0x8000)), c(16)), c(0x33800000)),
          ),
        ),
      ),
      i32.and(load(), c(0x7c00)),
    ),
  );
}

/**
 * Lane sums of four f32x4 vectors as one vector `[Σa, Σb, Σc, Σd]`: a
 * transpose-and-add in six shuffles and three adds. `t` holds 4 v128 locals.
 */
export function hsum4(a: Code, b: Code, cc: Code, d: Code, t: Local[]): Code {
  return seq(
    set(t[0], a),
    set(t[1], b),
    set(t[2], cc),
    set(t[3], d),
    set(
      t[0],
      f32x4.add(
        i8x16.shuffle(get(t[0]), get(t[1]), lanes32([0, 4, 1, 5])),
        i8x16.shuffle(get(t[0]), get(t[1]), lanes32([2, 6, 3, 7])),
      ),
    ),
    set(
      t[2],
      f32x4.add(
        i8x16.shuffle(get(t[2]), get(t[3]), lanes32([0, 4, 1, 5])),
        i8x16.shuffle(get(t[2]), get(t[3]), lanes32([2, 6, 3, 7])),
      ),
    ),
    set(
      t[0],
      f32x4.add(
        i8x16.shuffle(get(t[0]), get(t[2]), lanes32([0, 1, 4, 5])),
        i8x16.shuffle(get(t[0]), get(t[2]), lanes32([2, 3, 6, 7])),
      ),
    ),
  );
}

/** The sum of the four lanes of an f32x4 as an f32. */
export function hsum(v: Code, t: Local): Code {
  return seq(
    set(t, v),
    set(
      t,
      f32x4.add(
        get(t),
        i8x16.shuffle(get(t), get(t), lanes32([2, 3, 0, 1])),
      ),
    ),
    f32.add(f32x4.extract_lane(get(t), 0), f32x4.extract_lane(get(t), 1)),
  );
}

/** Scalar `exp` through the vector one (lane 0). */
export function exp1(exp4: FuncBuilder, x: Code): Code {
  return f32x4.extract_lane(call(exp4, f32x4.splat(x)), 0);
}

/** Address `base + i·4`. */
export const at = (base: Local | Code, i: Code): Code =>
  i32.add(typeof base === "function" ? base : get(base), i32.shl(i, c(2)));

/**
 * Divides `row[0 .. end)` by `sum` in place as one reciprocal and a
 * multiply: four lanes at a time up to `end4` (a multiple of 4), then one
 * at a time. `inv` (f32) and `vm` (v128) are scratch locals it sets.
 */
export function normaliseRow(
  row: Local,
  i: Local,
  end4: Local,
  end: Local,
  sum: Local,
  inv: Local,
  vm: Local,
): Code {
  return seq(
    set(inv, f32.div(f32.const(1), get(sum))),
    set(vm, f32x4.splat(get(inv))),
    forLoop(
      "s",
      i,
      c(0),
      get(end4),
      c(4),
      v128.store(
        at(row, get(i)),
        f32x4.mul(v128.load(at(row, get(i))), get(vm)),
      ),
    ),
    forLoop(
      "st",
      i,
      get(end4),
      get(end),
      c(1),
      f32.store(
        at(row, get(i)),
        f32.mul(f32.load(at(row, get(i))), get(inv)),
      ),
    ),
  );
}

/**
 * A call chosen by a row count: `call(r)` where the local `nr` holds r in
 * 1 … most−1, `call(most)` otherwise, as nested `if`s (the smallest count
 * tested first).
 */
export function byRows(
  nr: Local,
  most: number,
  call: (r: number) => Code,
): Code {
  let chosen: Code = call(most);
  for (let r = most - 1; r >= 1; r--) {
    chosen = if_(i32.eq(get(nr), c(r)), [call(r)], [chosen]);
  }
  return chosen;
}

/**
 * Finishes a row maximum: `mx` = the larger of lanes 0 and 1 of `vm`
 * (whose lanes 2, 3 already hold the same pair, after a halves shuffle),
 * then the scalar keys `row[end4 .. end)` folded in one at a time.
 */
export function rowMaxTail(
  row: Local,
  i: Local,
  end4: Local,
  end: Local,
  mx: Local,
  vm: Local,
): Code {
  return seq(
    set(
      mx,
      f32.max(f32x4.extract_lane(get(vm), 0), f32x4.extract_lane(get(vm), 1)),
    ),
    forLoop(
      "mt",
      i,
      get(end4),
      get(end),
      c(1),
      set(mx, f32.max(get(mx), f32.load(at(row, get(i))))),
    ),
  );
}
