/**
 * A small seeded random number generator (xoshiro128**, seeded through
 * splitmix32). Library code never calls `Math.random`: every random draw
 * goes through an {@link Rng} built from a seed the caller chose.
 *
 * @module
 */

/** A seeded source of random numbers. */
export interface Rng {
  /** A float uniformly drawn from [0, 1). */
  next(): number;
  /** An integer uniformly drawn from [0, n). */
  int(n: number): number;
  /** A standard normal sample (Box–Muller). */
  normal(): number;
  /** A 32-bit unsigned integer. */
  u32(): number;
}

/**
 * Creates a generator; the same seed always yields the same sequence.
 *
 * @param seed Any integer (taken modulo 2^32).
 * @returns The generator.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createRng } from "@modelhost/modelhost/core";
 * const a = createRng(7), b = createRng(7);
 * assert(a.next() === b.next());
 * ```
 */
export function createRng(seed: number): Rng {
  let sm = seed >>> 0;
  const splitmix = (): number => {
    sm = (sm + 0x9e3779b9) >>> 0;
    let z = sm;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let s0 = splitmix(), s1 = splitmix(), s2 = splitmix(), s3 = splitmix();
  if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
  const u32 = (): number => {
    const r = Math.imul(rotl(Math.imul(s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (s1 << 9) >>> 0;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    s0 >>>= 0, s1 >>>= 0, s2 >>>= 0, s3 >>>= 0;
    return r;
  };
  let spare: number | undefined;
  const next = (): number => u32() / 4294967296;
  return {
    u32,
    next,
    int(n) {
      return Math.floor(next() * n);
    },
    normal() {
      if (spare !== undefined) {
        const s = spare;
        spare = undefined;
        return s;
      }
      let u = 0;
      while (u === 0) u = next();
      const v = next();
      const r = Math.sqrt(-2 * Math.log(u));
      spare = r * Math.sin(2 * Math.PI * v);
      return r * Math.cos(2 * Math.PI * v);
    },
  };
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
