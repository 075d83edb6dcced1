/**
 * Fast element-wise kernels on F32 rows (WebAssembly SIMD), each with a
 * scalar `Ref` twin: softmax, RMSNorm, rotary position embedding (RoPE) and
 * SwiGLU. Inputs are plain `Float32Array`s; every function returns a new
 * array and leaves its inputs unchanged.
 *
 * `exp` in the fast kernels is a polynomial (Cephes `expf`, about 2 ulp);
 * the reference twins use `Math.exp` in F64.
 *
 * @module
 */

import { type Engine, getEngine } from "../wasm/_engine.ts";

function rowsOf(x: Float32Array, n: number, what: string): number {
  if (!Number.isInteger(n) || n <= 0 || x.length % n !== 0) {
    throw new TypeError(
      `Cannot split ${x.length} values into rows of ${n} for ${what}`,
    );
  }
  return x.length / n;
}

function put(e: Engine, name: string, x: Float32Array): number {
  const p = e.scratch(name, x.byteLength + 64);
  e.f32.set(x, p >> 2);
  return p;
}

function take(e: Engine, p: number, n: number): Float32Array {
  return e.f32.slice(p >> 2, (p >> 2) + n);
}

// ------------------------------------------------------------------ softmax

/**
 * Reference softmax over each row of `n` values (max-subtracted, F64).
 *
 * @param x Rows of `n` values.
 * @param n Row length.
 * @returns The probabilities, same shape.
 * @throws {TypeError} When `x.length` is not a multiple of `n`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastSoftmaxRef } from "./ops.ts";
 * const p = fastSoftmaxRef(new Float32Array([0, Math.log(3)]), 2);
 * assert(Math.abs(p[1] - 0.75) < 1e-7);
 * ```
 */
export function fastSoftmaxRef(x: Float32Array, n: number): Float32Array {
  const rows = rowsOf(x, n, "softmax");
  const out = new Float32Array(x.length);
  for (let r = 0; r < rows; r++) {
    let m = -Infinity;
    for (let i = 0; i < n; i++) m = Math.max(m, x[r * n + i]);
    let s = 0;
    const e = new Float64Array(n);
    for (let i = 0; i < n; i++) s += e[i] = Math.exp(x[r * n + i] - m);
    for (let i = 0; i < n; i++) out[r * n + i] = e[i] / s;
  }
  return out;
}

/**
 * Softmax over each row of `n` values (WebAssembly SIMD).
 *
 * @param x Rows of `n` values.
 * @param n Row length.
 * @returns The probabilities, same shape.
 * @throws {TypeError} When `x.length` is not a multiple of `n`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastSoftmax } from "./ops.ts";
 * const p = fastSoftmax(new Float32Array([1, 1, 1, 1, 0, 0]), 3);
 * assert(Math.abs(p[0] - 1 / 3) < 1e-6 && Math.abs(p[3] + p[4] + p[5] - 1) < 1e-6);
 * ```
 */
export function fastSoftmax(x: Float32Array, n: number): Float32Array {
  const rows = rowsOf(x, n, "softmax");
  const e = getEngine();
  if (!e) return fastSoftmaxRef(x, n);
  const p = put(e, "x", x);
  e.fn.softmax_rows(p, rows, n);
  return take(e, p, x.length);
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
 * Reference RMSNorm of each row: `y = x / sqrt(mean(x²) + eps) · weight`
 * (F64 accumulation).
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
 * import { fastRmsNormRef } from "./ops.ts";
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
  const out = new Float32Array(x.length);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let i = 0; i < n; i++) ss += x[r * n + i] ** 2;
    const inv = 1 / Math.sqrt(ss / n + eps);
    for (let i = 0; i < n; i++) out[r * n + i] = x[r * n + i] * inv * weight[i];
  }
  return out;
}

/**
 * RMSNorm of each row (WebAssembly SIMD): `y = x / sqrt(mean(x²) + eps) · weight`.
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
 * import { fastRmsNorm } from "./ops.ts";
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
  if (!e) return fastRmsNormRef(x, n, weight, eps);
  const p = put(e, "x", x);
  const w = put(e, "w", weight);
  const y = e.scratch("y", x.byteLength + 64);
  e.fn.rmsnorm_rows(p, w, y, rows, n, eps);
  return take(e, y, x.length);
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
 * Reference SwiGLU: `silu(gate) · up`, `silu(g) = g / (1 + e^−g)` (F64).
 *
 * @param gate Gate projections.
 * @param up Up projections, same length.
 * @returns The products.
 * @throws {TypeError} When the lengths differ.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastSwigluRef } from "./ops.ts";
 * const y = fastSwigluRef(new Float32Array([0, 2]), new Float32Array([5, 1]));
 * assert(y[0] === 0 && Math.abs(y[1] - 2 / (1 + Math.exp(-2))) < 1e-6);
 * ```
 */
export function fastSwigluRef(
  gate: Float32Array,
  up: Float32Array,
): Float32Array {
  checkSame(gate, up, "SwiGLU");
  const out = new Float32Array(gate.length);
  for (let i = 0; i < gate.length; i++) {
    const g = gate[i];
    out[i] = (g / (1 + Math.exp(-g))) * up[i];
  }
  return out;
}

/**
 * SwiGLU (WebAssembly SIMD): `silu(gate) · up`.
 *
 * @param gate Gate projections.
 * @param up Up projections, same length.
 * @returns The products.
 * @throws {TypeError} When the lengths differ.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastSwiglu } from "./ops.ts";
 * const y = fastSwiglu(new Float32Array([1, -1, 3]), new Float32Array([1, 1, 2]));
 * assert(Math.abs(y[2] - 6 / (1 + Math.exp(-3))) < 1e-5);
 * ```
 */
export function fastSwiglu(gate: Float32Array, up: Float32Array): Float32Array {
  checkSame(gate, up, "SwiGLU");
  const e = getEngine();
  if (!e) return fastSwigluRef(gate, up);
  const g = put(e, "x", gate);
  const u = put(e, "w", up);
  const y = e.scratch("y", gate.byteLength + 64);
  e.fn.swiglu(g, u, y, gate.length);
  return take(e, y, gate.length);
}

// ------------------------------------------------------------------ RoPE

/** Options of {@link fastRope} and {@link fastRopeRef}. */
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
  rot: number;
  start: number;
  style: "neox" | "interleaved";
  inv: number[];
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
  let inv: number[];
  if (o.invFreq) {
    if (o.invFreq.length !== half) {
      throw new TypeError(
        `Invalid RoPE invFreq: ${o.invFreq.length} values, expected rotaryDim/2 = ${half}`,
      );
    }
    inv = Array.from(o.invFreq);
  } else {
    const base = o.base ?? 10000;
    inv = Array.from({ length: half }, (_, i) => base ** (-(2 * i) / rot));
  }
  return {
    rows,
    heads,
    hd: headDim,
    rot,
    start: o.startPos ?? 0,
    style: o.style ?? "neox",
    inv,
  };
}

/**
 * Reference RoPE: rotates each head's leading `rotaryDim` values by
 * position-dependent angles (F64 trigonometry and arithmetic).
 *
 * @param x Rows of `heads × headDim` values, one row per position.
 * @param opts Shape, positions and style.
 * @returns The rotated rows.
 * @throws {TypeError} When the shape is inconsistent.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastRopeRef } from "./ops.ts";
 * // one head of 2 at position 1, θ = 1 rad: (1, 0) → (cos 1, sin 1)
 * const y = fastRopeRef(new Float32Array([1, 0]), { heads: 1, headDim: 2, startPos: 1 });
 * assert(Math.abs(y[0] - Math.cos(1)) < 1e-7 && Math.abs(y[1] - Math.sin(1)) < 1e-7);
 * ```
 */
export function fastRopeRef(x: Float32Array, opts: RopeOptions): Float32Array {
  const s = ropeShape(x, opts);
  const out = x.slice();
  const half = s.rot / 2;
  for (let r = 0; r < s.rows; r++) {
    const pos = s.start + r;
    for (let h = 0; h < s.heads; h++) {
      const b = (r * s.heads + h) * s.hd;
      for (let i = 0; i < half; i++) {
        const a = pos * s.inv[i];
        const c = Math.cos(a), sn = Math.sin(a);
        const [i1, i2] = s.style === "neox"
          ? [b + i, b + i + half]
          : [b + 2 * i, b + 2 * i + 1];
        const x1 = x[i1], x2 = x[i2];
        out[i1] = x1 * c - x2 * sn;
        out[i2] = x2 * c + x1 * sn;
      }
    }
  }
  return out;
}

/**
 * RoPE (WebAssembly SIMD): rotates each head's leading `rotaryDim` values by
 * position-dependent angles. The cos/sin tables are computed in F64 and
 * rounded to F32; rotations run in F32. Rotary sizes the SIMD kernel does
 * not cover (`"neox"` needs `rotaryDim/2` a multiple of 4, `"interleaved"`
 * needs `rotaryDim` a multiple of 4) run the reference.
 *
 * @param x Rows of `heads × headDim` values, one row per position.
 * @param opts Shape, positions and style.
 * @returns The rotated rows.
 * @throws {TypeError} When the shape is inconsistent.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastRope } from "./ops.ts";
 * const x = new Float32Array(16).fill(1);
 * const y = fastRope(x, { heads: 2, headDim: 8, startPos: 0 });
 * assert(y.every((v) => v === 1)); // position 0 does not rotate
 * ```
 */
export function fastRope(x: Float32Array, opts: RopeOptions): Float32Array {
  const s = ropeShape(x, opts);
  const half = s.rot / 2;
  const e = getEngine();
  const vectorizable = s.style === "neox" ? half % 4 === 0 : s.rot % 4 === 0;
  if (!e || !vectorizable) return fastRopeRef(x, opts);
  const neox = s.style === "neox";
  const width = neox ? half : s.rot;
  const cs = new Float32Array(s.rows * width);
  const sn = new Float32Array(s.rows * width);
  for (let r = 0; r < s.rows; r++) {
    const pos = s.start + r;
    for (let i = 0; i < half; i++) {
      const a = pos * s.inv[i];
      const c = Math.cos(a), si = Math.sin(a);
      if (neox) {
        cs[r * width + i] = c;
        sn[r * width + i] = si;
      } else {
        cs[r * width + 2 * i] = cs[r * width + 2 * i + 1] = c;
        sn[r * width + 2 * i] = -si;
        sn[r * width + 2 * i + 1] = si;
      }
    }
  }
  const p = put(e, "x", x);
  const pc = put(e, "w", cs);
  const ps = put(e, "y", sn);
  e.fn[neox ? "rope_neox" : "rope_interleaved"](
    p,
    pc,
    ps,
    s.rows,
    s.heads,
    s.hd,
    s.rot,
  );
  return take(e, p, x.length);
}
