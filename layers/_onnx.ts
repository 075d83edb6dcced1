/**
 * Private helpers the layer plugins lower themselves with: opset-aware
 * reductions, `x · Wᵀ + b`, activations, norms, and shape pieces that work
 * for any number of leading dimensions (features are always the last axis).
 *
 * @module
 */

import type { OnnxBuilder, Scope } from "../core/plugin.ts";
import type { ActivationName } from "../kernels/activations.ts";

/** ONNX element type codes the layers use. */
export const FLOAT = 1;
/** ONNX `INT64`. */
export const INT64 = 7;
/** ONNX `DOUBLE`. */
export const DOUBLE = 11;
/** ONNX `BOOL`. */
export const BOOL = 9;

/**
 * A reduction over `axes`. `ReduceSum` takes its axes as an input from
 * opset 13, the other reductions from opset 18 (an attribute before).
 */
export function reduce(
  g: OnnxBuilder,
  op: "ReduceSum" | "ReduceMean" | "ReduceMax" | "ReduceMin",
  x: string,
  axes: number[],
  keepdims: boolean,
): string {
  const k = keepdims ? 1 : 0;
  if (op === "ReduceSum" || g.opset >= 18) {
    return g.op(op, [x, g.constant("I64", [axes.length], axes)], {
      keepdims: k,
    });
  }
  return g.op(op, [x], { axes, keepdims: k });
}

/** A scalar F32 constant. */
export function scalar(g: OnnxBuilder, v: number): string {
  return g.constant("F32", [], [v]);
}

/** A scalar F64 constant. */
export function scalar64(g: OnnxBuilder, v: number): string {
  return g.constant("F64", [], [v]);
}

/** A 1-D INT64 constant. */
export function ints(g: OnnxBuilder, v: number[]): string {
  return g.constant("I64", [v.length], v);
}

/**
 * `x · Wᵀ (+ b)` for a `[out, in]` weight under `scope`: the weight is
 * stored transposed so the graph is one `MatMul` (and one `Add`).
 */
export function linearOnnx(
  g: OnnxBuilder,
  scope: Scope,
  x: string,
  weight: string,
  bias: string | undefined,
  outIn: [number, number],
): string {
  const w = g.weight(scope, weight, { shape: outIn, transpose: true });
  let y = g.op("MatMul", [x, w]);
  if (bias !== undefined) {
    y = g.op("Add", [y, g.weight(scope, bias, { shape: [outIn[0]] })]);
  }
  return y;
}

/** `x · sigmoid(x)`. */
export function siluOnnx(g: OnnxBuilder, x: string): string {
  return g.op("Mul", [x, g.op("Sigmoid", [x])]);
}

/** One activation on every element (softmax on the last axis). */
export function activationOnnx(
  g: OnnxBuilder,
  name: ActivationName,
  x: string,
  negativeSlope: number,
): string {
  switch (name) {
    case "linear":
      return x;
    case "relu":
      return g.op("Relu", [x]);
    case "leaky_relu":
      return g.op("LeakyRelu", [x], { alpha: { float: negativeSlope } });
    case "sigmoid":
      return g.op("Sigmoid", [x]);
    case "tanh":
      return g.op("Tanh", [x]);
    case "softplus":
      return g.op("Softplus", [x]);
    case "silu":
      return siluOnnx(g, x);
    case "softmax":
      return g.op("Softmax", [x], { axis: -1 });
    case "gelu": {
      if (g.opset >= 20) return g.op("Gelu", [x], { approximate: "none" });
      // x · (1 + erf(x/√2)) / 2
      const e = g.op("Erf", [g.op("Mul", [x, scalar(g, Math.SQRT1_2)])]);
      const half = g.op("Mul", [x, scalar(g, 0.5)]);
      return g.op("Mul", [half, g.op("Add", [e, scalar(g, 1)])]);
    }
    case "gelu_tanh": {
      if (g.opset >= 20) return g.op("Gelu", [x], { approximate: "tanh" });
      // x · (1 + tanh(√(2/π) · (x + 0.044715·x³))) / 2
      const x3 = g.op("Mul", [g.op("Mul", [x, x]), x]);
      const inner = g.op("Add", [x, g.op("Mul", [x3, scalar(g, 0.044715)])]);
      const t = g.op("Tanh", [
        g.op("Mul", [inner, scalar(g, Math.sqrt(2 / Math.PI))]),
      ]);
      const half = g.op("Mul", [x, scalar(g, 0.5)]);
      return g.op("Mul", [half, g.op("Add", [t, scalar(g, 1)])]);
    }
  }
}

/** Every dimension of `x` but the last, as a 1-D INT64 value. */
export function leadingShape(g: OnnxBuilder, x: string): string {
  const shape = g.op("Shape", [x]);
  return g.op("Slice", [shape, ints(g, [0]), ints(g, [-1]), ints(g, [0])]);
}

/** Zeros shaped like `x` with the last dimension replaced by `n`. */
export function zerosLast(g: OnnxBuilder, x: string, n: number): string {
  const shape = g.op("Concat", [leadingShape(g, x), ints(g, [n])], {
    axis: 0,
  });
  return g.op("Expand", [g.constant("F32", [n], new Float32Array(n)), shape]);
}

/** Columns `[start, end)` of the last axis. */
export function sliceLast(
  g: OnnxBuilder,
  x: string,
  start: number,
  end: number,
): string {
  return g.op("Slice", [x, ints(g, [start]), ints(g, [end]), ints(g, [-1])]);
}

/**
 * RMS normalization over the last axis: `RMSNormalization` from opset 23,
 * `x / √(mean(x²) + ε) · w` below.
 */
export function rmsNormOnnx(
  g: OnnxBuilder,
  x: string,
  weight: string,
  epsilon: number,
): string {
  if (g.opset >= 23) {
    return g.op("RMSNormalization", [x, weight], {
      axis: -1,
      epsilon: { float: epsilon },
    });
  }
  const ms = reduce(g, "ReduceMean", g.op("Mul", [x, x]), [-1], true);
  const inv = g.op("Reciprocal", [
    g.op("Sqrt", [g.op("Add", [ms, scalar(g, epsilon)])]),
  ]);
  return g.op("Mul", [g.op("Mul", [x, inv]), weight]);
}

/**
 * Layer normalization over the last axis: `LayerNormalization` from opset
 * 17, mean / biased variance / scale / shift below.
 */
export function layerNormOnnx(
  g: OnnxBuilder,
  x: string,
  weight: string,
  bias: string | undefined,
  epsilon: number,
): string {
  if (g.opset >= 17) {
    return g.op(
      "LayerNormalization",
      bias === undefined ? [x, weight] : [x, weight, bias],
      { axis: -1, epsilon: { float: epsilon } },
    );
  }
  const mean = reduce(g, "ReduceMean", x, [-1], true);
  const d = g.op("Sub", [x, mean]);
  const variance = reduce(g, "ReduceMean", g.op("Mul", [d, d]), [-1], true);
  const inv = g.op("Reciprocal", [
    g.op("Sqrt", [g.op("Add", [variance, scalar(g, epsilon)])]),
  ]);
  const y = g.op("Mul", [g.op("Mul", [d, inv]), weight]);
  return bias === undefined ? y : g.op("Add", [y, bias]);
}

/**
 * Query and key positions `0..t−1` of an input whose `Shape` is `shape`
 * (`t` its axis 1), as `[t, 1]` (rows) and `[1, t]` (columns) INT64.
 */
function positionsOnnx(g: OnnxBuilder, shape: string): [string, string] {
  const t = g.op("Gather", [shape, g.constant("I64", [], [1])], { axis: 0 });
  const pos = g.op("Range", [
    g.constant("I64", [], [0]),
    t,
    g.constant("I64", [], [1]),
  ]);
  return [
    g.op("Unsqueeze", [pos, ints(g, [1])]),
    g.op("Unsqueeze", [pos, ints(g, [0])]),
  ];
}

/**
 * Attention `scores` (`[…, t, t]`, query by key) with the hidden keys at
 * −∞: causal, the keys after the query and, with a window, those `window`
 * or more behind it; not causal with a window, those `window` or more away
 * on either side. Without either, `scores` unchanged.
 */
export function maskScoresOnnx(
  g: OnnxBuilder,
  shape: string,
  scores: string,
  causal: boolean,
  window: number | null,
): string {
  if (!causal && window === null) return scores;
  const [row, col] = positionsOnnx(g, shape);
  let hidden: string;
  if (causal) {
    hidden = g.op("Greater", [col, row]);
    if (window !== null) {
      const oldest = g.op("Sub", [row, g.constant("I64", [], [window - 1])]);
      hidden = g.op("Or", [hidden, g.op("Less", [col, oldest])]);
    }
  } else {
    // both ways: key j hidden from query i when |i − j| ≥ window
    const reach = g.constant("I64", [], [window! - 1]);
    hidden = g.op("Or", [
      g.op("Less", [col, g.op("Sub", [row, reach])]),
      g.op("Greater", [col, g.op("Add", [row, reach])]),
    ]);
  }
  return g.op("Where", [hidden, scalar(g, -Infinity), scores]);
}
