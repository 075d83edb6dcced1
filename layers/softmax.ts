/**
 * The `softmax` layer: one layer for the whole softmax family, chosen by
 * `softmax_variant`, acting on the last dimension. The parallel layer's
 * mixture gate uses the same variants (`filter_softmax`).
 *
 * | variant | what it computes | its fields |
 * |---|---|---|
 * | `standard` | softmax(x / temperature) | `temperature` (default 1) |
 * | `temperature` | the same, named for configs that set a temperature | `temperature` |
 * | `masked` | softmax over kept positions; masked ones output exactly 0 | `mask` (one boolean per feature) |
 * | `sparsemax` (alias `sparse`) | Euclidean projection onto the simplex (exact) | `temperature` |
 * | `entmax` | α-entmax, exact sort-based for α = 1.5, bisection otherwise | `entmax_alpha` (default 1.5, in [1, 2]) |
 * | `gumbel` | softmax((x + Gumbel noise) / temperature), seeded | `seed` (default 0), `temperature` |
 * | `grid` | softmax per row of a `softmax_rows × softmax_cols` view of the features | `softmax_rows`, `softmax_cols` |
 *
 * `input_size` is inferred from the previous layer. Gumbel noise is drawn
 * from a generator seeded with `seed`: a call without state starts the
 * generator afresh (same input, same output); with a state from
 * `createState()` the stream goes on across calls.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork } from "@modelhost/modelhost/core";
 * import { floatTensor } from "@modelhost/modelhost/core";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * import { softmaxLayer } from "@modelhost/modelhost/layers";
 * const reg = createRegistry().use(softmaxLayer);
 * const net = buildNetwork(reg, { input_size: 2, layers: [{ type: "softmax", softmax_variant: "sparsemax" }] }, new Map());
 * const y = net.forward(floatTensor(new Float32Array([1, 0]), [1, 2]));
 * assert(y.data[0] === 1 && y.data[1] === 0);
 * ```
 *
 * @module
 */

import type { LayerPlugin, LayerState, OnnxBuilder } from "../core/plugin.ts";
import { createRng, type Rng } from "../core/rng.ts";
import { type FloatTensor, floatTensor } from "../core/tensor.ts";
import {
  entmax15,
  entmaxBisect,
  gumbelSoftmax,
  maskedSoftmax,
  softmax,
  sparsemax,
} from "../kernels/softmax.ts";
import {
  checkFeatures,
  choiceField,
  fieldError,
  layerFields,
  numberField,
  optPositiveInt,
  rowsOf,
  shown,
} from "./_fields.ts";
import {
  DOUBLE,
  FLOAT,
  INT64,
  ints,
  reduce,
  scalar,
  scalar64,
} from "./_onnx.ts";

/**
 * The softmax variants.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { SOFTMAX_VARIANTS } from "@modelhost/modelhost/layers";
 * assert(SOFTMAX_VARIANTS.includes("sparsemax"));
 * ```
 */
export const SOFTMAX_VARIANTS = [
  "standard",
  "temperature",
  "masked",
  "sparsemax",
  "entmax",
  "gumbel",
  "grid",
] as const;

/** One of {@link SOFTMAX_VARIANTS}. */
export type SoftmaxVariant = typeof SOFTMAX_VARIANTS[number];

/** Normalized config of a `softmax` layer. */
export interface SoftmaxConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** The variant. */
  variant: SoftmaxVariant;
  /** Features per row, when known. */
  inputSize?: number;
  /** Divides the logits (every variant). */
  temperature: number;
  /** `masked`: one flag per feature (true = keep). */
  mask?: boolean[];
  /** `grid`: rows of the view. */
  gridRows?: number;
  /** `grid`: columns of the view (each softmax spans one row of this many). */
  gridCols?: number;
  /** `entmax`: α in [1, 2]. */
  alpha: number;
  /** `gumbel`: the noise generator's seed. */
  seed: number;
}

const FIELDS = [
  "softmax_variant",
  "softmax_type",
  "input_size",
  "temperature",
  "mask",
  "softmax_rows",
  "softmax_cols",
  "entmax_alpha",
  "seed",
];

const ONLY_FOR: Record<string, SoftmaxVariant[]> = {
  mask: ["masked"],
  softmax_rows: ["grid"],
  softmax_cols: ["grid"],
  entmax_alpha: ["entmax"],
  seed: ["gumbel"],
};

function agree(
  path: string,
  field: string,
  a: number | undefined,
  b: number | undefined,
  what: string,
): number | undefined {
  if (a !== undefined && b !== undefined && a !== b) {
    throw fieldError(path, field, `expected ${a} (${what}), got ${b}`);
  }
  return a ?? b;
}

/**
 * Parses the fields of a softmax definition (shared by the `softmax` layer
 * and the parallel layer's gate normalization).
 *
 * @param o The definition's fields.
 * @param path Where it sits, for messages.
 * @param inferred The input size known from the context.
 * @returns The normalized config.
 * @throws {TypeError} Naming the path and field.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseSoftmaxFields } from "@modelhost/modelhost/layers";
 * const c = parseSoftmaxFields({ softmax_variant: "grid", softmax_rows: 2 }, "gate", 6);
 * assert(c.gridCols === 3);
 * ```
 */
export function parseSoftmaxFields(
  o: Record<string, unknown>,
  path: string,
  inferred: number | undefined,
): SoftmaxConfig {
  if (o.softmax_variant !== undefined && o.softmax_type !== undefined) {
    throw fieldError(
      path,
      "softmax_type",
      "give softmax_variant or softmax_type, not both",
    );
  }
  const variantField = o.softmax_type !== undefined
    ? "softmax_type"
    : "softmax_variant";
  const variant = choiceField(
    o,
    variantField,
    path,
    SOFTMAX_VARIANTS,
    "standard",
    { sparse: "sparsemax" },
  );
  for (const [field, variants] of Object.entries(ONLY_FOR)) {
    if (o[field] !== undefined && !variants.includes(variant)) {
      throw fieldError(
        path,
        field,
        `only applies to softmax_variant "${variants[0]}", not "${variant}"`,
      );
    }
  }
  let size = agree(
    path,
    "input_size",
    inferred,
    optPositiveInt(o, "input_size", path),
    "the previous layer's output size",
  );
  const cfg: SoftmaxConfig = {
    path,
    variant,
    temperature: numberField(o, "temperature", path, 1, { above: 0 }),
    alpha: numberField(o, "entmax_alpha", path, 1.5, { min: 1, max: 2 }),
    seed: 0,
  };
  if (variant === "masked") {
    const m = o.mask;
    if (
      !Array.isArray(m) ||
      !m.every((v) => typeof v === "boolean" || v === 0 || v === 1)
    ) {
      throw fieldError(
        path,
        "mask",
        `required for softmax_variant "masked": expected an array of booleans (or 0/1), got ${
          shown(m)
        }`,
      );
    }
    if (!m.some((v) => v === true || v === 1)) {
      throw fieldError(
        path,
        "mask",
        "keeps no position: at least one entry must be true",
      );
    }
    size = agree(
      path,
      "mask",
      size,
      m.length,
      "the input size; one entry per feature",
    );
    cfg.mask = m.map((v) => v === true || v === 1);
  }
  if (variant === "grid") {
    let r = optPositiveInt(o, "softmax_rows", path);
    let c = optPositiveInt(o, "softmax_cols", path);
    if (
      r === undefined && c !== undefined && size !== undefined && size % c === 0
    ) r = size / c;
    if (
      c === undefined && r !== undefined && size !== undefined && size % r === 0
    ) c = size / r;
    if (r === undefined || c === undefined) {
      throw fieldError(
        path,
        r === undefined ? "softmax_rows" : "softmax_cols",
        `required for softmax_variant "grid"${
          size !== undefined
            ? ` (input size ${size} does not divide evenly)`
            : ""
        }`,
      );
    }
    if (size !== undefined && r * c !== size) {
      throw fieldError(
        path,
        "softmax_cols",
        `softmax_rows ${r} × softmax_cols ${c} = ${
          r * c
        }, expected the input size ${size}`,
      );
    }
    size = r * c;
    cfg.gridRows = r;
    cfg.gridCols = c;
  }
  if (variant === "gumbel") {
    const s = o.seed ?? 0;
    if (typeof s !== "number" || !Number.isSafeInteger(s)) {
      throw fieldError(path, "seed", `expected an integer, got ${shown(s)}`);
    }
    cfg.seed = s;
  }
  cfg.inputSize = size;
  return cfg;
}

/**
 * The JSON of a normalized softmax config (without `type`).
 *
 * @param cfg The config.
 * @returns Its fields.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseSoftmaxFields, softmaxFieldsJSON } from "@modelhost/modelhost/layers";
 * const j = softmaxFieldsJSON(parseSoftmaxFields({ softmax_variant: "gumbel", seed: 3 }, "x", 4));
 * assert(j.seed === 3 && j.input_size === 4);
 * ```
 */
export function softmaxFieldsJSON(cfg: SoftmaxConfig): Record<string, unknown> {
  return {
    softmax_variant: cfg.variant,
    ...(cfg.inputSize !== undefined ? { input_size: cfg.inputSize } : {}),
    temperature: cfg.temperature,
    ...(cfg.variant === "masked" ? { mask: cfg.mask } : {}),
    ...(cfg.variant === "grid"
      ? { softmax_rows: cfg.gridRows, softmax_cols: cfg.gridCols }
      : {}),
    ...(cfg.variant === "entmax" ? { entmax_alpha: cfg.alpha } : {}),
    ...(cfg.variant === "gumbel" ? { seed: cfg.seed } : {}),
  };
}

/** The uniform in (0, 1) that Gumbel noise is made from: (u32 + ½) / 2³². */
function uniformOpen(rng: Rng): number {
  return (rng.u32() + 0.5) / 4294967296;
}

/**
 * Applies a softmax config to `rows × cols` values.
 *
 * @param cfg The config.
 * @param data The logits, row-major.
 * @param rows Number of rows.
 * @param cols Values per row.
 * @param state Where `gumbel` keeps its generator between calls; without
 * one the generator starts afresh from `seed`.
 * @returns The probabilities.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { applySoftmax, parseSoftmaxFields } from "@modelhost/modelhost/layers";
 * const cfg = parseSoftmaxFields({ temperature: 2 }, "x", 2);
 * const p = applySoftmax(cfg, new Float32Array([2, 0]), 1, 2);
 * assert(Math.abs(p[0] - 1 / (1 + Math.exp(-1))) < 1e-7);
 * ```
 */
export function applySoftmax(
  cfg: SoftmaxConfig,
  data: Float32Array,
  rows: number,
  cols: number,
  state?: LayerState,
): Float32Array {
  const t = cfg.temperature;
  switch (cfg.variant) {
    case "standard":
    case "temperature":
      return softmax(data, rows, cols, t);
    case "masked":
      return maskedSoftmax(data, rows, cols, cfg.mask!, t);
    case "sparsemax":
      return sparsemax(data, rows, cols, t);
    case "entmax":
      return cfg.alpha === 1
        ? softmax(data, rows, cols, t)
        : cfg.alpha === 2
        ? sparsemax(data, rows, cols, t)
        : cfg.alpha === 1.5
        ? entmax15(data, rows, cols, t)
        : entmaxBisect(data, rows, cols, cfg.alpha, t);
    case "gumbel": {
      let rng = state?.rng as Rng | undefined;
      if (!rng) {
        rng = createRng(cfg.seed);
        if (state) state.rng = rng;
      }
      const u = new Float64Array(data.length);
      for (let i = 0; i < u.length; i++) u[i] = uniformOpen(rng);
      return gumbelSoftmax(data, rows, cols, u, t);
    }
    case "grid":
      return softmax(data, rows * cfg.gridRows!, cfg.gridCols!, t);
  }
}

/** Rows of Gumbel noise an export holds unless `gumbelMaxRows` says otherwise. */
export const GUMBEL_MAX_ROWS = 256;

/** `x / temperature`, skipping the division when the temperature is 1. */
function divide(g: OnnxBuilder, x: string, t: number, f64 = false): string {
  if (t === 1) return x;
  return g.op("Div", [x, f64 ? scalar64(g, t) : scalar(g, t)]);
}

/** The rows of a tensor sorted descending along the last axis (`TopK` with k = n). */
function sortDesc(g: OnnxBuilder, z: string, n: number): string {
  return g.node("TopK", [z, ints(g, [n])], {
    axis: -1,
    largest: 1,
    sorted: 1,
  }, 2)[0];
}

/** 1, 2, …, n as an F64 row. */
function counts(g: OnnxBuilder, n: number): string {
  return g.constant("F64", [n], Array.from({ length: n }, (_, i) => i + 1));
}

/** Picks `values[..., idx]` where `idx` is a float count (1-based) of shape [..., 1]. */
function pickAt(g: OnnxBuilder, values: string, count: string): string {
  const idx = g.op("Cast", [g.op("Sub", [count, scalar64(g, 1)])], {
    to: INT64,
  });
  return g.op("GatherElements", [values, idx], { axis: -1 });
}

/** Sparsemax of `z` (F64) by sorting: τ = (Σ_{j≤k*} s_j − 1) / k*. */
function sparsemaxOnnx(g: OnnxBuilder, z: string, n: number): string {
  const s = sortDesc(g, z, n);
  const cum = g.op("CumSum", [s, ints(g, [-1])]);
  const k = counts(g, n);
  // Support: the largest k with 1 + k·s_k > Σ_{j≤k} s_j.
  const ok = g.op("Greater", [
    g.op("Add", [g.op("Mul", [k, s]), scalar64(g, 1)]),
    cum,
  ]);
  const kStar = reduce(
    g,
    "ReduceMax",
    g.op("Mul", [g.op("Cast", [ok], { to: DOUBLE }), k]),
    [-1],
    true,
  );
  const tau = g.op("Div", [
    g.op("Sub", [pickAt(g, cum, kStar), scalar64(g, 1)]),
    kStar,
  ]);
  return g.op("Max", [g.op("Sub", [z, tau]), scalar64(g, 0)]);
}

/** 1.5-entmax of `z` (F64, already halved) by sorting, as the reference kernel does. */
function entmax15Onnx(g: OnnxBuilder, z: string, n: number): string {
  const s = sortDesc(g, z, n);
  const top = reduce(g, "ReduceMax", z, [-1], true);
  const v = g.op("Sub", [s, top]);
  const axis = ints(g, [-1]);
  const sum = g.op("CumSum", [v, axis]);
  const sumSq = g.op("CumSum", [g.op("Mul", [v, v]), axis]);
  const k = counts(g, n);
  const mean = g.op("Div", [sum, k]);
  const ss = g.op("Sub", [sumSq, g.op("Mul", [k, g.op("Mul", [mean, mean])])]);
  const rad = g.op("Max", [
    g.op("Div", [g.op("Sub", [scalar64(g, 1), ss]), k]),
    scalar64(g, 0),
  ]);
  const tau = g.op("Sub", [mean, g.op("Sqrt", [rad])]);
  // Support size: how many k have τ_k ≤ s_k (shifted by the top value).
  const support = reduce(
    g,
    "ReduceSum",
    g.op("Cast", [g.op("LessOrEqual", [tau, v])], { to: DOUBLE }),
    [-1],
    true,
  );
  const tauStar = g.op("Add", [pickAt(g, tau, support), top]);
  const d = g.op("Max", [g.op("Sub", [z, tauStar]), scalar64(g, 0)]);
  return g.op("Mul", [d, d]);
}

/** α-entmax of `x` by 60 unrolled bisection steps on τ (F64), as the reference kernel does. */
function entmaxBisectOnnx(
  g: OnnxBuilder,
  x: string,
  n: number,
  alpha: number,
  t: number,
): string {
  const am1 = alpha - 1;
  const z = g.op("Div", [g.op("Mul", [x, scalar64(g, am1)]), scalar64(g, t)]);
  const max = reduce(g, "ReduceMax", z, [-1], true);
  const inv = scalar64(g, 1 / am1);
  const zero = scalar64(g, 0);
  const p = (tau: string) =>
    g.op("Pow", [g.op("Max", [g.op("Sub", [z, tau]), zero]), inv]);
  let lo = g.op("Sub", [max, scalar64(g, 1)]);
  let hi = g.op("Sub", [max, scalar64(g, Math.pow(1 / n, am1))]);
  const half = scalar64(g, 0.5);
  const one = scalar64(g, 1);
  for (let it = 0; it < 60; it++) {
    const mid = g.op("Mul", [g.op("Add", [lo, hi]), half]);
    const mass = reduce(g, "ReduceSum", p(mid), [-1], true);
    const up = g.op("GreaterOrEqual", [mass, one]);
    const nextLo = g.op("Where", [up, mid, lo]);
    hi = g.op("Where", [up, hi, mid]);
    lo = nextLo;
  }
  const pl = p(lo);
  return g.op("Div", [pl, reduce(g, "ReduceSum", pl, [-1], true)]);
}

/** The uniforms a stateless forward draws for `count` values, as Gumbel noise −log(−log u). */
function gumbelNoise(seed: number, count: number): Float32Array {
  const rng = createRng(seed);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    out[i] = -Math.log(-Math.log(uniformOpen(rng)));
  }
  return out;
}

/**
 * Lowers a softmax config to ONNX on the last axis of `x` (n features).
 * Standard, temperature, masked and grid use `Softmax`; sparsemax and
 * entmax are decomposed (sort by `TopK` with k = n, `CumSum`, gathers) and
 * computed in F64 like the reference kernels; `gumbel` adds the noise a
 * stateless forward draws, held as a constant for up to `gumbelMaxRows`
 * rows (the option; default {@link GUMBEL_MAX_ROWS}).
 *
 * @param g The builder.
 * @param cfg The softmax config.
 * @param x The logits.
 * @param n Features per row.
 * @param path Where the layer sits, for messages.
 * @returns The probabilities.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GraphBuilder } from "../formats/onnx/_graph.ts";
 * import { parseSoftmaxFields, softmaxOnnx } from "./softmax.ts";
 * const g = new GraphBuilder({ opset: 17, weightDtype: "keep", options: {} });
 * const x = g.addInput("x", 1, ["batch", 4]);
 * const cfg = parseSoftmaxFields({ softmax_variant: "sparsemax" }, "x", 4);
 * softmaxOnnx(g, cfg, x, 4, "x");
 * assert(g.nodes.some((n) => n.opType === "TopK"));
 * ```
 */
export function softmaxOnnx(
  g: OnnxBuilder,
  cfg: SoftmaxConfig,
  x: string,
  n: number,
  path: string,
): string {
  const t = cfg.temperature;
  const f64 = (fn: (z: string) => string, scale: number) => {
    const z = divide(g, g.op("Cast", [x], { to: DOUBLE }), scale, true);
    return g.op("Cast", [fn(z)], { to: FLOAT });
  };
  switch (cfg.variant) {
    case "standard":
    case "temperature":
      return g.op("Softmax", [divide(g, x, t)], { axis: -1 });
    case "masked": {
      const keep = g.constant("BOOL", [n], cfg.mask!.map((m) => (m ? 1 : 0)));
      const masked = g.op("Where", [
        keep,
        divide(g, x, t),
        scalar(g, -Infinity),
      ]);
      return g.op("Softmax", [masked], { axis: -1 });
    }
    case "grid": {
      const c = cfg.gridCols!;
      const rows = g.op("Reshape", [x, ints(g, [-1, c])]);
      const p = g.op("Softmax", [divide(g, rows, t)], { axis: -1 });
      return g.op("Reshape", [p, g.op("Shape", [x])]);
    }
    case "sparsemax":
      return f64((z) => sparsemaxOnnx(g, z, n), t);
    case "entmax":
      if (cfg.alpha === 1) {
        return g.op("Softmax", [divide(g, x, t)], { axis: -1 });
      }
      if (cfg.alpha === 2) return f64((z) => sparsemaxOnnx(g, z, n), t);
      if (cfg.alpha === 1.5) return f64((z) => entmax15Onnx(g, z, n), 2 * t);
      return g.op("Cast", [
        entmaxBisectOnnx(
          g,
          g.op("Cast", [x], { to: DOUBLE }),
          n,
          cfg.alpha,
          t,
        ),
      ], { to: FLOAT });
    case "gumbel": {
      const limit = g.options.gumbelMaxRows ?? GUMBEL_MAX_ROWS;
      if (
        typeof limit !== "number" || !Number.isSafeInteger(limit) || limit <= 0
      ) {
        throw g.refuse(
          path,
          "softmax",
          `gumbelMaxRows must be a positive integer, got ${shown(limit)}`,
        );
      }
      const noise = g.constant(
        "F32",
        [limit, n],
        gumbelNoise(cfg.seed, limit * n),
      );
      const rows = g.op("Reshape", [x, ints(g, [-1, n])]);
      const count = g.op("Slice", [
        g.op("Shape", [rows]),
        ints(g, [0]),
        ints(g, [1]),
      ]);
      const used = g.op("Slice", [noise, ints(g, [0]), count, ints(g, [0])]);
      const p = g.op("Softmax", [divide(g, g.op("Add", [rows, used]), t)], {
        axis: -1,
      });
      return g.op("Reshape", [p, g.op("Shape", [x])]);
    }
  }
}

/**
 * The `softmax` layer plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { softmaxLayer } from "@modelhost/modelhost/layers";
 * assert(softmaxLayer.type === "softmax");
 * ```
 */
export const softmaxLayer: LayerPlugin<SoftmaxConfig> = {
  kind: "layer",
  type: "softmax",
  description:
    "Softmax family on the last dimension: standard, temperature, masked, sparsemax, entmax, gumbel, grid",
  parse(json, ctx) {
    const o = layerFields(json, ctx, "softmax", FIELDS);
    return parseSoftmaxFields(o, ctx.path, ctx.inputSize);
  },
  inputSize: (cfg) => cfg.inputSize,
  outputSize: (cfg, inputSize) => cfg.inputSize ?? inputSize,
  toJSON: (cfg) => ({ type: "softmax", ...softmaxFieldsJSON(cfg) }),
  params: () => [],
  build(cfg) {
    return {
      forward(x: FloatTensor, state?: LayerState): FloatTensor {
        const cols = x.shape[x.shape.length - 1] ?? 0;
        if (cfg.inputSize !== undefined) {
          checkFeatures(x, cfg.inputSize, cfg.path, "softmax");
        }
        return floatTensor(
          applySoftmax(cfg, x.data, rowsOf(x), cols, state),
          x.shape.slice(),
        );
      },
    };
  },
  toOnnx(g, cfg, _weights, input, ctx) {
    if (cfg.inputSize === undefined) {
      throw g.refuse(
        ctx.path,
        "softmax",
        "its input size is unknown (set input_size or the network's input_size)",
      );
    }
    return softmaxOnnx(g, cfg, input, cfg.inputSize, ctx.path);
  },
};
