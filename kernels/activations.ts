/**
 * Element-wise activation functions (scalar reference versions). Each works
 * in double precision and rounds once when it stores to the Float32Array.
 * The SwiGLU product {@link siluMul} runs the WebAssembly SIMD kernel of
 * `kernels/fast` where available (twin: {@link siluMulRef}, the one SwiGLU
 * reference, which `fastSwiglu` is tested against too).
 *
 * @module
 */

import { engineSwiglu } from "./fast/_ops_engine.ts";
import { softmax } from "./softmax.ts";
import { getEngine } from "./wasm/_engine.ts";

/**
 * Activation names a dense layer accepts.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ACTIVATIONS } from "@modelhost/modelhost/kernels";
 * assert(ACTIVATIONS.includes("gelu_tanh") && ACTIVATIONS.includes("silu"));
 * ```
 */
export const ACTIVATIONS = [
  "linear",
  "relu",
  "leaky_relu",
  "sigmoid",
  "tanh",
  "softplus",
  "gelu",
  "gelu_tanh",
  "silu",
  "softmax",
] as const;

/** One of {@link ACTIVATIONS}. */
export type ActivationName = typeof ACTIVATIONS[number];

const TWO_OVER_SQRT_PI = 1.1283791670955126;

/**
 * The complementary error function `erfc(x) = 1 − erf(x)`, accurate to about
 * 1e-13 relative: `1 − erf` for |x| < 2, a continued fraction beyond (so
 * small tails keep their relative precision).
 *
 * @param x Any number.
 * @returns erfc(x), in [0, 2].
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { erfc } from "@modelhost/modelhost/kernels";
 * assert(Math.abs(erfc(1) - 0.15729920705028513) < 1e-15);
 * ```
 */
export function erfc(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (x < 0) return 2 - erfc(-x);
  if (x < 2) return 1 - erfPositiveSeries(x);
  if (x > 27) return 0;
  // Continued fraction erfc(x) = exp(-x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))),
  // evaluated with the modified Lentz method.
  const tiny = 1e-300;
  let f = x, c = x, d = 0;
  for (let n = 1; n < 1000; n++) {
    const a = n / 2;
    d = x + a * d;
    d = d === 0 ? tiny : 1 / d;
    c = x + a / c;
    if (c === 0) c = tiny;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.exp(-x * x) / (f * Math.sqrt(Math.PI));
}

// erf(x) = 2/√π · e^{-x²} · Σ 2^n x^{2n+1} / (1·3·…·(2n+1)); every term is
// positive, so nothing cancels.
function erfPositiveSeries(x: number): number {
  const x2 = x * x;
  let term = x, sum = x;
  for (let n = 1; n < 200; n++) {
    term *= (2 * x2) / (2 * n + 1);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return TWO_OVER_SQRT_PI * Math.exp(-x2) * sum;
}

/**
 * The error function, accurate to about 1e-15.
 *
 * @param x Any number.
 * @returns erf(x), in [−1, 1].
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { erf } from "@modelhost/modelhost/kernels";
 * assert(Math.abs(erf(0.5) - 0.5204998778130465) < 1e-15);
 * ```
 */
export function erf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const a = Math.abs(x);
  const v = a < 3 ? erfPositiveSeries(a) : 1 - erfc(a);
  return x < 0 ? -v : v;
}

const SQRT_HALF = Math.SQRT1_2;
const GELU_TANH_K = Math.sqrt(2 / Math.PI);

/**
 * One activation of one value (softmax excluded: it needs the whole row).
 *
 * @param name The activation.
 * @param x The input.
 * @param negativeSlope Slope of `leaky_relu` below zero. @default {0.01}
 * @returns The activated value.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { activate } from "@modelhost/modelhost/kernels";
 * assert(activate("relu", -2) === 0 && activate("leaky_relu", -2, 0.1) === -0.2);
 * ```
 */
export function activate(
  name: Exclude<ActivationName, "softmax">,
  x: number,
  negativeSlope = 0.01,
): number {
  switch (name) {
    case "linear":
      return x;
    case "relu":
      return x > 0 ? x : 0;
    case "leaky_relu":
      return x >= 0 ? x : x * negativeSlope;
    case "sigmoid":
      return sigmoid(x);
    case "tanh":
      return Math.tanh(x);
    case "softplus":
      // max(x, 0) + log(1 + e^{-|x|}): no overflow, no cancellation.
      return Math.max(x, 0) + Math.log1p(Math.exp(-Math.abs(x)));
    case "gelu":
      // x · Φ(x) with Φ(x) = erfc(−x/√2)/2, exact in the far negative tail.
      return 0.5 * x * erfc(-x * SQRT_HALF);
    case "gelu_tanh":
      return 0.5 * x *
        (1 + Math.tanh(GELU_TANH_K * (x + 0.044715 * x * x * x)));
    case "silu":
      return x * sigmoid(x);
  }
}

function sigmoid(x: number): number {
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
}

/**
 * Applies an activation to `rows × cols` values in place (`softmax` acts on
 * each row of `cols`).
 *
 * @param data The values, row-major; overwritten.
 * @param cols Values per row (the feature size).
 * @param name The activation.
 * @param negativeSlope Slope of `leaky_relu` below zero. @default {0.01}
 * @returns `data`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { applyActivation } from "@modelhost/modelhost/kernels";
 * const y = applyActivation(new Float32Array([0, 0, 1, -1]), 2, "softmax");
 * assert(y[0] === 0.5 && Math.abs(y[2] - 0.8807971) < 1e-6);
 * ```
 */
export function applyActivation(
  data: Float32Array,
  cols: number,
  name: ActivationName,
  negativeSlope = 0.01,
): Float32Array {
  if (name === "linear") return data;
  if (name === "softmax") {
    data.set(softmax(data, data.length / cols, cols));
    return data;
  }
  for (let i = 0; i < data.length; i++) {
    data[i] = activate(name, data[i], negativeSlope);
  }
  return data;
}

function checkGateUp(gate: Float32Array, up: Float32Array): void {
  if (gate.length !== up.length) {
    throw new RangeError(
      `Cannot apply SwiGLU: gate has ${gate.length} values, up has ${up.length}`,
    );
  }
}

/**
 * Reference SwiGLU product `silu(gate) · up` element by element, in double
 * precision (the scalar twin of {@link siluMul}).
 *
 * @param gate Gate projections.
 * @param up Up projections, same length.
 * @returns A new array of the products.
 * @throws {RangeError} When the lengths differ.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { siluMulRef } from "@modelhost/modelhost/kernels";
 * const y = siluMulRef(new Float32Array([0, 2]), new Float32Array([5, 3]));
 * assert(y[0] === 0 && Math.abs(y[1] - 6 / (1 + Math.exp(-2))) < 1e-6);
 * ```
 */
export function siluMulRef(gate: Float32Array, up: Float32Array): Float32Array {
  checkGateUp(gate, up);
  const out = new Float32Array(gate.length);
  for (let i = 0; i < gate.length; i++) {
    out[i] = activate("silu", gate[i]) * up[i];
  }
  return out;
}

/**
 * SwiGLU product `silu(gate) · up` (the gated activation of Llama MLPs), on
 * the WebAssembly SIMD kernel (`fastSwiglu`: polynomial `exp`, relative
 * error about 1e-6) where available, else {@link siluMulRef}. Each element
 * depends only on its own inputs, so batching never changes a result.
 *
 * @param gate Gate projections.
 * @param up Up projections, same length.
 * @returns A new array of the products.
 * @throws {RangeError} When the lengths differ.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { siluMul } from "@modelhost/modelhost/kernels";
 * const y = siluMul(new Float32Array([1, -1, 3]), new Float32Array([1, 1, 2]));
 * assert(Math.abs(y[2] - 6 / (1 + Math.exp(-3))) < 1e-5);
 * ```
 */
export function siluMul(gate: Float32Array, up: Float32Array): Float32Array {
  checkGateUp(gate, up);
  const e = gate.length > 0 ? getEngine() : null;
  if (e) return engineSwiglu(e, gate, up);
  return siluMulRef(gate, up);
}
