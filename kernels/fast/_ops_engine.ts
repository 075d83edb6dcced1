/**
 * The WebAssembly SIMD calls behind softmax, RMSNorm, SwiGLU and GELU, shared by
 * the public ops (`kernels/softmax.ts`, `kernels/norms.ts`,
 * `kernels/activations.ts`) and the `fast*` functions of `./ops.ts`. No
 * checks and no fallback here: callers validate sizes and run the scalar
 * reference of their op where there is no engine.
 *
 * @module
 */

import type { Engine } from "../wasm/_engine.ts";
import { runSplit } from "./_dispatch.ts";

function put(e: Engine, name: string, x: Float32Array): number {
  const p = e.scratch(name, x.byteLength + 64);
  e.f32.set(x, p >> 2);
  return p;
}

function take(e: Engine, p: number, n: number): Float32Array {
  // a new array and `set`: `slice` of a shared view copies element by element
  const out = new Float32Array(n);
  out.set(e.f32.subarray(p >> 2, (p >> 2) + n));
  return out;
}

/**
 * Softmax of each row of `n` values on the engine (`softmax_rows`).
 *
 * @param e The engine.
 * @param x Rows of `n` values (`x.length` a multiple of `n`).
 * @param n Row length.
 * @returns The probabilities, a new array.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { engineSoftmax } from "./_ops_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * const e = getEngine();
 * if (e) assert(Math.abs(engineSoftmax(e, new Float32Array([0, 0]), 2)[0] - 0.5) < 1e-7);
 * ```
 */
export function engineSoftmax(
  e: Engine,
  x: Float32Array,
  n: number,
): Float32Array {
  const p = put(e, "x", x);
  e.fn.softmax_rows(p, x.length / n, n);
  return take(e, p, x.length);
}

/**
 * RMSNorm of each row of `n` values on the engine (`rmsnorm_rows`), the
 * rows split over the kernel threads when there are enough of them.
 *
 * @param e The engine.
 * @param x Rows of `n` values.
 * @param n Row length.
 * @param weight Per-feature scale, length `n`.
 * @param eps Added to the mean square.
 * @returns The normalized rows, a new array.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { engineRmsNorm } from "./_ops_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * const e = getEngine();
 * const y = e && engineRmsNorm(e, new Float32Array([3, 4]), 2, new Float32Array([1, 1]), 0);
 * if (y) assert(Math.abs(y[0] - 3 / Math.sqrt(12.5)) < 1e-6);
 * ```
 */
export function engineRmsNorm(
  e: Engine,
  x: Float32Array,
  n: number,
  weight: Float32Array,
  eps: number,
): Float32Array {
  const p = put(e, "x", x);
  const w = put(e, "w", weight);
  const y = e.scratch("y", x.byteLength + 64);
  // rows are independent: a prefill's rows split over the kernel threads
  runSplit(e, "rmsnorm_rows", x.length * 8, x.length / n, (a, b) => [
    p + a * n * 4,
    w,
    y + a * n * 4,
    b - a,
    n,
    eps,
  ]);
  return take(e, y, x.length);
}

/**
 * SwiGLU `silu(gate) · up` on the engine (`swiglu`), split over the kernel
 * threads by element ranges when large (a prefill's or a batch's rows).
 *
 * @param e The engine.
 * @param gate Gate projections.
 * @param up Up projections, same length.
 * @returns The products, a new array.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { engineSwiglu } from "./_ops_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * const e = getEngine();
 * const y = e && engineSwiglu(e, new Float32Array([0]), new Float32Array([5]));
 * if (y) assert(y[0] === 0);
 * ```
 */
export function engineSwiglu(
  e: Engine,
  gate: Float32Array,
  up: Float32Array,
): Float32Array {
  const g = put(e, "x", gate);
  const u = put(e, "w", up);
  const y = e.scratch("y", gate.byteLength + 64);
  // elementwise: units of 256 values, the odd tail (n % 4, done by the
  // kernel's scalar loop) all in the last part, as on one thread
  const n = gate.length;
  runSplit(e, "swiglu", n * 24, Math.ceil(n / 256), (a, b) => [
    g + a * 1024,
    u + a * 1024,
    y + a * 1024,
    Math.min(b * 256, n) - a * 256,
  ]);
  return take(e, y, n);
}

/**
 * GELU with erf on the engine (`gelu_erf`), in place, split over the
 * kernel threads: the first `x.length & ~3` values (the caller does the
 * rest).
 *
 * @param e The engine.
 * @param x The values; overwritten.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { engineGeluErf } from "./_ops_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * const e = getEngine();
 * const x = new Float32Array([0, 1, -1, 2]);
 * if (e) engineGeluErf(e, x);
 * if (e) assert(Math.abs(x[1] - 0.8413447) < 1e-6);
 * ```
 */
export function engineGeluErf(e: Engine, x: Float32Array): void {
  const n4 = x.length & ~3;
  if (n4 === 0) return;
  const p = e.scratch("x", n4 * 4 + 64);
  e.f32.set(x.subarray(0, n4), p >> 2);
  // units of 256 values, so parts start on 16-byte boundaries
  const units = Math.ceil(n4 / 256);
  runSplit(e, "gelu_erf", n4 * 24, units, (a, b) => {
    const end = Math.min(b * 256, n4);
    return [p + a * 1024, p + a * 1024, end - a * 256];
  });
  x.set(e.f32.subarray(p >> 2, (p >> 2) + n4));
}

/**
 * Softmax of each row of `n` values on the engine, in place, the rows
 * split over the kernel threads (`softmax_rows` per part).
 *
 * @param e The engine.
 * @param x Rows of `n` values (`x.length` a multiple of `n`); overwritten.
 * @param n Row length.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { engineSoftmaxInPlace } from "./_ops_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * const e = getEngine();
 * const x = new Float32Array([0, 0, 1, 1]);
 * if (e) engineSoftmaxInPlace(e, x, 2);
 * if (e) assert(Math.abs(x[0] - 0.5) < 1e-7 && Math.abs(x[3] - 0.5) < 1e-7);
 * ```
 */
export function engineSoftmaxInPlace(
  e: Engine,
  x: Float32Array,
  n: number,
): void {
  const p = put(e, "x", x);
  const rows = x.length / n;
  runSplit(e, "softmax_rows", x.length * 8, rows, (a, b) => [
    p + a * n * 4,
    b - a,
    n,
  ]);
  x.set(e.f32.subarray(p >> 2, (p >> 2) + x.length));
}

/**
 * `LayerNorm(a + b)` per row of `n` values on the engine
 * (`add_layernorm_rows`), the rows split over the kernel threads;
 * `n` a multiple of 4.
 *
 * @param e The engine.
 * @param a Rows of `n` values.
 * @param b Rows of `n` values, same length as `a`.
 * @param n Row length (a multiple of 4).
 * @param weight Per-feature scale, length `n`.
 * @param bias Per-feature shift, length `n` (zeros for none).
 * @param eps Added to the variance.
 * @returns The normalized sums, a new array.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { engineAddLayerNorm } from "./_ops_engine.ts";
 * import { getEngine } from "../wasm/_engine.ts";
 * const e = getEngine();
 * const one = new Float32Array(4).fill(1);
 * const y = e && engineAddLayerNorm(e, new Float32Array([0, 1, 2, 3]), new Float32Array([1, 1, 1, 1]), 4, one, new Float32Array(4), 0);
 * if (y) assert(Math.abs(y[0] + Math.sqrt(1.8)) < 1e-5 && Math.abs(y[0] + y[3]) < 1e-6);
 * ```
 */
export function engineAddLayerNorm(
  e: Engine,
  a: Float32Array,
  b: Float32Array,
  n: number,
  weight: Float32Array,
  bias: Float32Array,
  eps: number,
): Float32Array {
  const pa = put(e, "ln_a", a);
  const pb = put(e, "ln_b", b);
  const pw = put(e, "ln_w", weight);
  const pbias = put(e, "ln_bias", bias);
  const y = e.scratch("ln_y", a.byteLength + 64);
  const rows = a.length / n;
  runSplit(e, "add_layernorm_rows", a.length * 8, rows, (r0, r1) => [
    pa + r0 * n * 4,
    pb + r0 * n * 4,
    pw,
    pbias,
    y + r0 * n * 4,
    r1 - r0,
    n,
    eps,
  ]);
  return take(e, y, a.length);
}
