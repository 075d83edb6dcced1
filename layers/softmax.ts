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
 * import { buildNetwork } from "../core/network.ts";
 * import { floatTensor } from "../core/tensor.ts";
 * import { createRegistry } from "../registry.ts";
 * import { softmaxLayer } from "./softmax.ts";
 * const reg = createRegistry().use(softmaxLayer);
 * const net = buildNetwork(reg, { input_size: 2, layers: [{ type: "softmax", softmax_variant: "sparsemax" }] }, new Map());
 * const y = net.forward(floatTensor(new Float32Array([1, 0]), [1, 2]));
 * console.assert(y.data[0] === 1 && y.data[1] === 0);
 * ```
 *
 * @module
 */

import type { LayerPlugin, LayerState } from "../core/plugin.ts";
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

/** The softmax variants. */
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
 * import { parseSoftmaxFields } from "./softmax.ts";
 * const c = parseSoftmaxFields({ softmax_variant: "grid", softmax_rows: 2 }, "gate", 6);
 * console.assert(c.gridCols === 3);
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
 * import { parseSoftmaxFields, softmaxFieldsJSON } from "./softmax.ts";
 * const j = softmaxFieldsJSON(parseSoftmaxFields({ softmax_variant: "gumbel", seed: 3 }, "x", 4));
 * console.assert(j.seed === 3 && j.input_size === 4);
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
 * import { applySoftmax, parseSoftmaxFields } from "./softmax.ts";
 * const cfg = parseSoftmaxFields({ temperature: 2 }, "x", 2);
 * const p = applySoftmax(cfg, new Float32Array([2, 0]), 1, 2);
 * console.assert(Math.abs(p[0] - 1 / (1 + Math.exp(-1))) < 1e-7);
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

/**
 * The `softmax` layer plugin.
 *
 * @example
 * ```ts
 * import { softmaxLayer } from "./softmax.ts";
 * console.assert(softmaxLayer.type === "softmax");
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
};
