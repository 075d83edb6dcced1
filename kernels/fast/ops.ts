/**
 * Fast element-wise kernels on F32 rows (WebAssembly SIMD): softmax,
 * RMSNorm, rotary position embedding (RoPE) and SwiGLU. Inputs are plain
 * `Float32Array`s; every function returns a new array and leaves its inputs
 * unchanged.
 *
 * Each is tested against the one scalar reference of its op, which it also
 * runs where WebAssembly SIMD is missing: `softmaxRef` (`kernels/softmax.ts`),
 * `rmsNormRef` (`kernels/norms.ts`), `siluMulRef` (`kernels/activations.ts`)
 * and `applyRopeRef` (`kernels/rope.ts`). The `fast…Ref` names are
 * deprecated aliases of those references, kept for one release.
 *
 * `exp` in the fast kernels is a polynomial (Cephes `expf`, about 2 ulp);
 * the references use `Math.exp` in F64.
 *
 * @module
 */

import { getEngine } from "../wasm/_engine.ts";
import { siluMulRef } from "../activations.ts";
import { rmsNormRef } from "../norms.ts";
import { applyRope, applyRopeRef } from "../rope.ts";
import { softmaxRef } from "../softmax.ts";
import { engineRmsNorm, engineSoftmax, engineSwiglu } from "./_ops_engine.ts";

function rowsOf(x: Float32Array, n: number, what: string): number {
  if (!Number.isInteger(n) || n <= 0 || x.length % n !== 0) {
    throw new TypeError(
      `Cannot split ${x.length} values into rows of ${n} for ${what}`,
    );
  }
  return x.length / n;
}

// ------------------------------------------------------------------ softmax

/**
 * Reference softmax over each row of `n` values: {@link softmaxRef} of
 * `kernels/softmax.ts` (max-subtracted, F64), the one softmax reference.
 *
 * @deprecated Use `softmaxRef(x, x.length / n, n)` (exported here too);
 * this alias goes in the next release.
 *
 * @param x Rows of `n` values.
 * @param n Row length.
 * @returns The probabilities, same shape.
 * @throws {TypeError} When `x.length` is not a multiple of `n`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastSoftmaxRef } from "@modelhost/modelhost/kernels/fast";
 * const p = fastSoftmaxRef(new Float32Array([0, Math.log(3)]), 2);
 * assert(Math.abs(p[1] - 0.75) < 1e-7);
 * ```
 */
export function fastSoftmaxRef(x: Float32Array, n: number): Float32Array {
  return softmaxRef(x, rowsOf(x, n, "softmax"), n);
}

/**
 * Softmax over each row of `n` values (WebAssembly SIMD); without it,
 * {@link softmaxRef}.
 *
 * @param x Rows of `n` values.
 * @param n Row length.
 * @returns The probabilities, same shape.
 * @throws {TypeError} When `x.length` is not a multiple of `n`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastSoftmax } from "@modelhost/modelhost/kernels/fast";
 * const p = fastSoftmax(new Float32Array([1, 1, 1, 1, 0, 0]), 3);
 * assert(Math.abs(p[0] - 1 / 3) < 1e-6 && Math.abs(p[3] + p[4] + p[5] - 1) < 1e-6);
 * ```
 */
export function fastSoftmax(x: Float32Array, n: number): Float32Array {
  const rows = rowsOf(x, n, "softmax");
  const e = getEngine();
  return e ? engineSoftmax(e, x, n) : softmaxRef(x, rows, n);
}

// ------------------------------------------------------------------ RMSNorm

function checkWeight(w: Float32Array, n: number, what: string): void {
  if (w.length !== n) {
    throw new TypeError(
      `Cannot apply ${what}: weight has ${w.length} values, rows have ${n}`,
    );
  }
}

/**
 * Reference RMSNorm of each row: {@link rmsNormRef} of `kernels/norms.ts`
 * (`y = x / sqrt(mean(x²) + eps) · weight`, F64 accumulation), the one
 * RMSNorm reference.
 *
 * @deprecated Use `rmsNormRef(x, x.length / n, n, weight, eps)` (exported
 * here too); this alias goes in the next release.
 *
 * @param x Rows of `n` values.
 * @param n Row length.
 * @param weight Per-feature scale, length `n`.
 * @param eps Added to the mean square.
 * @returns The normalized rows.
 * @throws {TypeError} When sizes disagree.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastRmsNormRef } from "@modelhost/modelhost/kernels/fast";
 * const y = fastRmsNormRef(new Float32Array([3, 4]), 2, new Float32Array([1, 2]), 0);
 * assert(Math.abs(y[1] - 8 / Math.sqrt(12.5)) < 1e-6);
 * ```
 */
export function fastRmsNormRef(
  x: Float32Array,
  n: number,
  weight: Float32Array,
  eps: number,
): Float32Array {
  const rows = rowsOf(x, n, "RMSNorm");
  checkWeight(weight, n, "RMSNorm");
  return rmsNormRef(x, rows, n, weight, eps);
}

/**
 * RMSNorm of each row (WebAssembly SIMD): `y = x / sqrt(mean(x²) + eps) · weight`;
 * without WebAssembly SIMD, {@link rmsNormRef}.
 *
 * @param x Rows of `n` values.
 * @param n Row length.
 * @param weight Per-feature scale, length `n`.
 * @param eps Added to the mean square (1e-5 or 1e-6 in Llama models).
 * @returns The normalized rows.
 * @throws {TypeError} When sizes disagree.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastRmsNorm } from "@modelhost/modelhost/kernels/fast";
 * const y = fastRmsNorm(new Float32Array([3, 4]), 2, new Float32Array([1, 1]), 0);
 * assert(Math.abs(y[0] - 3 / Math.sqrt(12.5)) < 1e-6);
 * ```
 */
export function fastRmsNorm(
  x: Float32Array,
  n: number,
  weight: Float32Array,
  eps: number,
): Float32Array {
  const rows = rowsOf(x, n, "RMSNorm");
  checkWeight(weight, n, "RMSNorm");
  const e = getEngine();
  return e
    ? engineRmsNorm(e, x, n, weight, eps)
    : rmsNormRef(x, rows, n, weight, eps);
}

// ------------------------------------------------------------------ SwiGLU

function checkSame(a: Float32Array, b: Float32Array, what: string): void {
  if (a.length !== b.length) {
    throw new TypeError(
      `Cannot apply ${what}: gate has ${a.length} values, up has ${b.length}`,
    );
  }
}

/**
 * Reference SwiGLU `silu(gate) · up`: {@link siluMulRef} of
 * `kernels/activations.ts` (F64), the one SwiGLU reference.
 *
 * @deprecated Use `siluMulRef` (exported here too); this alias goes in the
 * next release.
 *
 * @param gate Gate projections.
 * @param up Up projections, same length.
 * @returns The products.
 * @throws {TypeError} When the lengths differ.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastSwigluRef } from "@modelhost/modelhost/kernels/fast";
 * const y = fastSwigluRef(new Float32Array([0, 2]), new Float32Array([5, 1]));
 * assert(y[0] === 0 && Math.abs(y[1] - 2 / (1 + Math.exp(-2))) < 1e-6);
 * ```
 */
export function fastSwigluRef(
  gate: Float32Array,
  up: Float32Array,
): Float32Array {
  checkSame(gate, up, "SwiGLU");
  return siluMulRef(gate, up);
}

/**
 * SwiGLU (WebAssembly SIMD): `silu(gate) · up`; without WebAssembly SIMD,
 * {@link siluMulRef}.
 *
 * @param gate Gate projections.
 * @param up Up projections, same length.
 * @returns The products.
 * @throws {TypeError} When the lengths differ.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastSwiglu } from "@modelhost/modelhost/kernels/fast";
 * const y = fastSwiglu(new Float32Array([1, -1, 3]), new Float32Array([1, 1, 2]));
 * assert(Math.abs(y[2] - 6 / (1 + Math.exp(-3))) < 1e-5);
 * ```
 */
export function fastSwiglu(gate: Float32Array, up: Float32Array): Float32Array {
  checkSame(gate, up, "SwiGLU");
  const e = getEngine();
  return e ? engineSwiglu(e, gate, up) : siluMulRef(gate, up);
}

// ------------------------------------------------------------------ RoPE

/** Options of {@link fastRope} (and the deprecated {@link fastRopeRef}). */
export interface RopeOptions {
  /** Heads per row (the row holds `heads × headDim` values). */
  heads: number;
  /** Values per head. */
  headDim: number;
  /** Position of the first row; row `s` sits at `startPos + s`. @default {0} */
  startPos?: number;
  /**
   * Leading dimensions of each head that are rotated (partial rotary);
   * must be even.
   * @default {headDim}
   */
  rotaryDim?: number;
  /** Frequency base θ: pair `i` turns by `pos · θ^(−2i/rotaryDim)`. @default {10000} */
  base?: number;
  /**
   * Pairing of rotated values: `"neox"` rotates `(i, i + rotaryDim/2)` (the
   * Hugging Face Llama `rotate_half` layout), `"interleaved"` rotates
   * `(2i, 2i + 1)` (GPT-J, original ggml).
   * @default {"neox"}
   */
  style?: "neox" | "interleaved";
  /**
   * Inverse frequencies per pair (`rotaryDim / 2` values), replacing those
   * from `base` (for scaled RoPE variants such as Llama 3's).
   */
  invFreq?: Float32Array | number[];
}

interface RopeShape {
  rows: number;
  heads: number;
  hd: number;
  start: number;
  style: "neox" | "interleaved";
  freq: Float64Array;
}

function ropeShape(x: Float32Array, o: RopeOptions): RopeShape {
  const { heads, headDim } = o;
  const rot = o.rotaryDim ?? headDim;
  if (
    !Number.isInteger(heads) || !Number.isInteger(headDim) || heads <= 0 ||
    headDim <= 0 || !Number.isInteger(rot) || rot % 2 || rot <= 0 ||
    rot > headDim
  ) {
    throw new TypeError(
      `Invalid RoPE shape: heads ${heads}, headDim ${headDim}, rotaryDim ${rot} (rotaryDim must be even and at most headDim)`,
    );
  }
  const rows = rowsOf(x, heads * headDim, "RoPE");
  const half = rot / 2;
  let freq: Float64Array;
  if (o.invFreq) {
    if (o.invFreq.length !== half) {
      throw new TypeError(
        `Invalid RoPE invFreq: ${o.invFreq.length} values, expected rotaryDim/2 = ${half}`,
      );
    }
    freq = Float64Array.from(o.invFreq);
  } else {
    const base = o.base ?? 10000;
    freq = Float64Array.from(
      { length: half },
      (_, i) => base ** (-(2 * i) / rot),
    );
  }
  return {
    rows,
    heads,
    hd: headDim,
    start: o.startPos ?? 0,
    style: o.style ?? "neox",
    freq,
  };
}

/**
 * Reference RoPE with angles, cos and sin in F64: {@link applyRopeRef} of
 * `kernels/rope.ts` given the frequencies, the one RoPE reference.
 *
 * @deprecated Use `applyRopeRef` (exported here too) with the frequencies
 * (`ropeFrequencies(rotaryDim, base)`) and `{ headDim }`; this alias goes in
 * the next release.
 *
 * @param x Rows of `heads × headDim` values, one row per position.
 * @param opts Shape, positions and style.
 * @returns The rotated rows.
 * @throws {TypeError} When the shape is inconsistent.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastRopeRef } from "@modelhost/modelhost/kernels/fast";
 * // one head of 2 at position 1, θ = 1 rad: (1, 0) → (cos 1, sin 1)
 * const y = fastRopeRef(new Float32Array([1, 0]), { heads: 1, headDim: 2, startPos: 1 });
 * assert(Math.abs(y[0] - Math.cos(1)) < 1e-7 && Math.abs(y[1] - Math.sin(1)) < 1e-7);
 * ```
 */
export function fastRopeRef(x: Float32Array, opts: RopeOptions): Float32Array {
  const s = ropeShape(x, opts);
  const out = x.slice();
  applyRopeRef(out, 1, s.rows, s.heads, s.freq, s.style, s.start, {
    headDim: s.hd,
  });
  return out;
}

/**
 * RoPE (WebAssembly SIMD): rotates each head's leading `rotaryDim` values by
 * position-dependent angles; {@link applyRope} of `kernels/rope.ts` given
 * the frequencies, on a copy. The cos/sin rows are computed in F64 and
 * rounded to F32; rotations run in F32. Rotary sizes the SIMD kernel does
 * not cover (`"neox"` needs `rotaryDim/2` a multiple of 4, `"interleaved"`
 * needs `rotaryDim` a multiple of 4), or a missing WebAssembly SIMD, run
 * {@link applyRopeRef} (F64 angles).
 *
 * @param x Rows of `heads × headDim` values, one row per position.
 * @param opts Shape, positions and style.
 * @returns The rotated rows.
 * @throws {TypeError} When the shape is inconsistent.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastRope } from "@modelhost/modelhost/kernels/fast";
 * const x = new Float32Array(16).fill(1);
 * const y = fastRope(x, { heads: 2, headDim: 8, startPos: 0 });
 * assert(y.every((v) => v === 1)); // position 0 does not rotate
 * ```
 */
export function fastRope(x: Float32Array, opts: RopeOptions): Float32Array {
  const s = ropeShape(x, opts);
  const out = x.slice();
  applyRope(out, 1, s.rows, s.heads, s.freq, s.style, s.start, {
    headDim: s.hd,
  });
  return out;
}
