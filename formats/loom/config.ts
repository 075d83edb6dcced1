/**
 * Loom network configs to modelhost configs: layer types, sizes and
 * activation names, and (given a weight source) the weights, transposed
 * and renamed to our layers' parameter names.
 *
 * @module
 */

import type { LayerConfig, NetworkConfig } from "../../core/model.ts";
import { type Tensor, tensorFromF32 } from "../../core/tensor.ts";

/** Options for reading Loom bundles. */
export interface LoomReadOptions {
  /**
   * Reproduce Loom's scaled ReLU, `max(0, 1.1·x)`, on its `relu` dense
   * layers by multiplying their weights and bias by 1.1 (exact up to F32
   * rounding, since `1.1·max(0, z) = max(0, 1.1·z)`). Off, `relu` is the
   * standard `max(0, x)`.
   * @default {false}
   */
  scaledRelu?: boolean;
}

/**
 * Loom activation names and the modelhost activation each is read as. The
 * empty string is Loom's default (its zero value, the scaled ReLU).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { LOOM_ACTIVATIONS } from "@modelhost/modelhost/formats/loom";
 * assert(LOOM_ACTIVATIONS.leaky_relu.negative_slope === 0.1);
 * ```
 */
export const LOOM_ACTIVATIONS: Readonly<
  Record<string, { activation: string; negative_slope?: number }>
> = {
  "": { activation: "relu" },
  relu: { activation: "relu" },
  sigmoid: { activation: "sigmoid" },
  tanh: { activation: "tanh" },
  softplus: { activation: "softplus" },
  leaky_relu: { activation: "leaky_relu", negative_slope: 0.1 },
  linear: { activation: "linear" },
  gelu: { activation: "gelu_tanh" },
};

/** Loom softmax variants and ours. */
const LOOM_SOFTMAX: Readonly<Record<string, string>> = {
  "": "standard",
  standard: "standard",
  temperature: "temperature",
  grid: "grid",
  masked: "masked",
  sparse: "sparsemax",
  entmax: "entmax",
  gumbel: "gumbel",
};

/** Loom layer types we convert (`mha` is an alias Loom reads). */
const SUPPORTED = [
  "dense",
  "multi_head_attention",
  "mha",
  "softmax",
  "layer_norm",
  "layernorm",
  "rms_norm",
  "rmsnorm",
  "swiglu",
  "embedding",
  "residual",
  "parallel",
  "sequential",
  "kmeans",
];

/** A JSON object (folder-internal, for `read.ts`). */
export type Obj = Record<string, unknown>;

/** Whether a JSON value is an object (folder-internal, for `read.ts`). */
export function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** A value shown in an error message, cut at 60 characters (folder-internal). */
export function shown(v: unknown): string {
  if (v === undefined) return "nothing";
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** Where weights come from: one entry object per layer, read by field (folder-internal). */
export interface WeightSource {
  /** Values of one field as F32, or undefined when the entry has none. */
  read(
    entry: Obj | undefined,
    field: string,
    count: number,
    tensor: string,
  ): Float32Array | undefined;
}

/** What a conversion carries along (folder-internal). */
export interface Ctx {
  readonly model: string;
  readonly weights?: WeightSource;
  readonly tensors: Map<string, Tensor>;
  readonly options: LoomReadOptions;
}

function fail(ctx: Ctx, msg: string): TypeError {
  return new TypeError(`Cannot convert Loom model "${ctx.model}": ${msg}`);
}

function posInt(v: unknown): number | undefined {
  return typeof v === "number" && Number.isSafeInteger(v) && v > 0
    ? v
    : undefined;
}

function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) && v !== 0 ? v : undefined;
}

function needSize(
  ctx: Ctx,
  path: string,
  field: string,
  ...candidates: (number | undefined)[]
): number {
  for (const c of candidates) if (c !== undefined) return c;
  throw fail(
    ctx,
    `${path}.${field}: expected a positive integer and the size cannot be inferred from the previous layer`,
  );
}

/** `[rows][cols]` row-major → `[cols][rows]`. */
function transpose(v: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(v.length);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[c * rows + r] = v[r * cols + c];
  }
  return out;
}

function scaled(v: Float32Array, k: number): Float32Array {
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i] * k;
  return out;
}

function put(
  ctx: Ctx,
  name: string,
  values: Float32Array | undefined,
  shape: number[],
): boolean {
  if (!values) return false;
  ctx.tensors.set(name, tensorFromF32(name, values, shape));
  return true;
}

function read(
  ctx: Ctx,
  w: Obj | undefined,
  field: string,
  count: number,
  tensor: string,
): Float32Array | undefined {
  return ctx.weights?.read(w, field, count, tensor);
}

/** A `[in][out]` matrix of Loom stored as our `[out, in]` weight. */
function putMatrix(
  ctx: Ctx,
  w: Obj | undefined,
  field: string,
  name: string,
  inSize: number,
  outSize: number,
  factor = 1,
): boolean {
  const v = read(ctx, w, field, inSize * outSize, name);
  if (!v) return false;
  const t = transpose(v, inSize, outSize);
  return put(ctx, name, factor === 1 ? t : scaled(t, factor), [
    outSize,
    inSize,
  ]);
}

function activationOf(ctx: Ctx, path: string, v: unknown): {
  activation: string;
  negative_slope?: number;
} {
  const name = v === undefined ? "" : v;
  if (typeof name !== "string" || !Object.hasOwn(LOOM_ACTIVATIONS, name)) {
    throw fail(
      ctx,
      `${path}.activation: ${
        shown(v)
      } has no exact equivalent (Loom runs unknown names as its scaled ReLU); known: ${
        Object.keys(LOOM_ACTIVATIONS).filter((k) => k).join(", ")
      }`,
    );
  }
  return LOOM_ACTIVATIONS[name];
}

interface Converted {
  cfg: LayerConfig;
  outputSize?: number;
}

function children(
  ctx: Ctx,
  def: Obj,
  w: Obj | undefined,
  path: string,
): { defs: unknown[]; weights: unknown[] } {
  const defs = def.branches ?? [];
  if (!Array.isArray(defs)) {
    throw fail(ctx, `${path}.branches: expected an array, got ${shown(defs)}`);
  }
  const weights = w?.branch_weights ?? [];
  if (!Array.isArray(weights)) {
    throw fail(
      ctx,
      `${path}: weights "branch_weights" must be an array, got ${
        shown(weights)
      }`,
    );
  }
  return { defs, weights };
}

/**
 * Loom's `branches` run one after another, as our `sequential` layer: child j
 * reads the previous child's output and keeps its weights under `layers.{j}`.
 */
function convertChain(
  ctx: Ctx,
  defs: unknown[],
  weights: unknown[],
  path: string,
  scope: string,
  inputSize: number | undefined,
): Converted {
  const layers: LayerConfig[] = [];
  let size = inputSize;
  defs.forEach((d, j) => {
    const c = convertLayer(
      ctx,
      d,
      weights[j],
      `${path}.branches[${j}]`,
      `${scope}.layers.${j}`,
      size,
    );
    layers.push(c.cfg);
    size = c.outputSize;
  });
  return { cfg: { type: "sequential", layers }, outputSize: size };
}

function convertLayer(
  ctx: Ctx,
  def: unknown,
  w: unknown,
  path: string,
  scope: string,
  inputSize: number | undefined,
): Converted {
  if (!isObject(def) || typeof def.type !== "string") {
    throw fail(ctx, `${path}: expected a layer object with a "type"`);
  }
  if (w !== undefined && w !== null && !isObject(w)) {
    throw fail(ctx, `${path}: its weights entry must be an object`);
  }
  const we = (w ?? undefined) as Obj | undefined;
  const type = def.type;
  switch (type) {
    case "dense": {
      const inSize = needSize(
        ctx,
        path,
        "input_height",
        posInt(def.input_height),
        posInt(def.input_size),
        inputSize,
      );
      const outSize = needSize(
        ctx,
        path,
        "output_height",
        posInt(def.output_height),
        posInt(def.output_size),
      );
      const act = activationOf(ctx, path, def.activation);
      const k = act.activation === "relu" && ctx.options.scaledRelu ? 1.1 : 1;
      const hasW = putMatrix(
        ctx,
        we,
        "kernel",
        `${scope}.weight`,
        inSize,
        outSize,
        k,
      );
      const b = read(ctx, we, "biases", outSize, `${scope}.bias`);
      put(ctx, `${scope}.bias`, b && k !== 1 ? scaled(b, k) : b, [outSize]);
      const cfg: LayerConfig = {
        type: "dense",
        input_size: inSize,
        output_size: outSize,
        activation: act.activation,
      };
      if (act.negative_slope !== undefined) {
        cfg.negative_slope = act.negative_slope;
      }
      if (hasW && !b) cfg.bias = false;
      return { cfg, outputSize: outSize };
    }
    case "layer_norm":
    case "layernorm":
    case "rms_norm":
    case "rmsnorm": {
      const rms = type.startsWith("rms");
      const size = needSize(
        ctx,
        path,
        "norm_size",
        posInt(def.norm_size),
        inputSize,
      );
      const cfg: LayerConfig = {
        type: rms ? "rms_norm" : "layer_norm",
        norm_size: size,
        epsilon: num(def.epsilon) ?? (rms ? 1e-6 : 1e-5),
      };
      put(
        ctx,
        `${scope}.weight`,
        read(ctx, we, "gamma", size, `${scope}.weight`),
        [
          size,
        ],
      );
      if (!rms) {
        const beta = read(ctx, we, "beta", size, `${scope}.bias`);
        put(ctx, `${scope}.bias`, beta, [size]);
        if (!beta && ctx.tensors.has(`${scope}.weight`)) cfg.bias = false;
      }
      return { cfg, outputSize: size };
    }
    case "embedding": {
      const vocab = needSize(ctx, path, "vocab_size", posInt(def.vocab_size));
      const dim = needSize(
        ctx,
        path,
        "embedding_dim",
        posInt(def.embedding_dim),
      );
      put(
        ctx,
        `${scope}.weight`,
        read(ctx, we, "embedding_weights", vocab * dim, `${scope}.weight`),
        [vocab, dim],
      );
      return {
        cfg: { type: "embedding", vocab_size: vocab, embedding_dim: dim },
        outputSize: dim,
      };
    }
    case "swiglu": {
      const d = needSize(
        ctx,
        path,
        "input_height",
        posInt(def.input_height),
        inputSize,
      );
      const h = needSize(ctx, path, "output_height", posInt(def.output_height));
      putMatrix(ctx, we, "gate_weights", `${scope}.gate_proj.weight`, d, h);
      putMatrix(ctx, we, "up_weights", `${scope}.up_proj.weight`, d, h);
      putMatrix(ctx, we, "down_weights", `${scope}.down_proj.weight`, h, d);
      const gb = read(ctx, we, "gate_bias", h, `${scope}.gate_proj.bias`);
      const ub = read(ctx, we, "up_bias", h, `${scope}.up_proj.bias`);
      const db = read(ctx, we, "down_bias", d, `${scope}.down_proj.bias`);
      put(ctx, `${scope}.gate_proj.bias`, gb, [h]);
      put(ctx, `${scope}.up_proj.bias`, ub, [h]);
      put(ctx, `${scope}.down_proj.bias`, db, [d]);
      return {
        cfg: {
          type: "swiglu",
          input_size: d,
          intermediate_size: h,
          bias: !!(gb || ub || db) || !ctx.weights,
        },
        outputSize: d,
      };
    }
    case "multi_head_attention":
    case "mha": {
      const d = needSize(ctx, path, "d_model", posInt(def.d_model), inputSize);
      const heads = needSize(ctx, path, "num_heads", posInt(def.num_heads));
      if (d % heads !== 0) {
        throw fail(
          ctx,
          `${path}.num_heads: d_model ${d} is not a multiple of num_heads ${heads}`,
        );
      }
      const kvHeads = posInt(def.num_kv_heads) ?? heads;
      const hd = d / heads;
      const kv = kvHeads * hd;
      putMatrix(ctx, we, "q_weights", `${scope}.q_proj.weight`, d, d);
      putMatrix(ctx, we, "k_weights", `${scope}.k_proj.weight`, d, kv);
      putMatrix(ctx, we, "v_weights", `${scope}.v_proj.weight`, d, kv);
      putMatrix(ctx, we, "output_weight", `${scope}.o_proj.weight`, d, d);
      for (
        const [field, name, n] of [
          ["q_bias", "q_proj.bias", d],
          ["k_bias", "k_proj.bias", kv],
          ["v_bias", "v_proj.bias", kv],
          ["output_bias", "o_proj.bias", d],
        ] as const
      ) {
        put(
          ctx,
          `${scope}.${name}`,
          read(ctx, we, field, n, `${scope}.${name}`),
          [n],
        );
      }
      const cfg: LayerConfig = {
        type: "multi_head_attention",
        d_model: d,
        num_heads: heads,
        num_kv_heads: kvHeads,
        head_dim: hd,
        causal: true,
        rope_theta: num(def.rope_freq_base) ?? 10000,
        // Loom's CPU forward rotates the two halves of each head (the
        // GPT-NeoX / Hugging Face layout), not adjacent pairs.
        rope_style: "neox",
        bias: true,
      };
      return { cfg, outputSize: d };
    }
    case "softmax": {
      const variant = def.softmax_variant ?? "";
      if (
        typeof variant !== "string" || !Object.hasOwn(LOOM_SOFTMAX, variant)
      ) {
        throw fail(
          ctx,
          `${path}.softmax_variant: ${
            shown(variant)
          } has no modelhost equivalent; known: ${
            Object.keys(LOOM_SOFTMAX).filter((k) => k).join(", ")
          }`,
        );
      }
      const cfg: LayerConfig = {
        type: "softmax",
        softmax_variant: LOOM_SOFTMAX[variant],
      };
      const t = num(def.temperature);
      if (t !== undefined) cfg.temperature = t;
      if (cfg.softmax_variant === "grid") {
        cfg.softmax_rows = def.softmax_rows;
        cfg.softmax_cols = def.softmax_cols;
      }
      if (cfg.softmax_variant === "masked") cfg.mask = def.mask;
      if (cfg.softmax_variant === "entmax" && num(def.entmax_alpha)) {
        cfg.entmax_alpha = def.entmax_alpha;
      }
      return { cfg, outputSize: inputSize };
    }
    case "residual":
      return { cfg: { type: "residual" }, outputSize: inputSize };
    case "sequential": {
      const { defs, weights } = children(ctx, def, we, path);
      return convertChain(ctx, defs, weights, path, scope, inputSize);
    }
    case "parallel":
      return convertParallel(ctx, def, we, path, scope, inputSize);
    case "kmeans":
      return convertKMeans(ctx, def, we, path, scope, inputSize);
    default:
      throw fail(
        ctx,
        `${path} is a "${type}" layer, which modelhost has no layer for (converted Loom types: ${
          SUPPORTED.join(", ")
        })`,
      );
  }
}

function convertParallel(
  ctx: Ctx,
  def: Obj,
  we: Obj | undefined,
  path: string,
  scope: string,
  inputSize: number | undefined,
): Converted {
  const { defs, weights } = children(ctx, def, we, path);
  const branches: LayerConfig[] = [];
  const sizes: (number | undefined)[] = [];
  defs.forEach((d, j) => {
    const c = convertLayer(
      ctx,
      d,
      weights[j],
      `${path}.branches[${j}]`,
      `${scope}.branches.${j}`,
      inputSize,
    );
    branches.push(c.cfg);
    sizes.push(c.outputSize);
  });
  const mode = typeof def.combine_mode === "string" && def.combine_mode !== ""
    ? def.combine_mode
    : "concat";
  const cfg: LayerConfig = { type: "parallel", branches };
  const known = sizes.every((s) => s !== undefined) ? sizes as number[] : [];
  const sum = known.reduce((a, b) => a + b, 0);
  const max = known.reduce((a, b) => Math.max(a, b), 0);
  if (mode === "filter" && isObject(def.filter_gate)) {
    const g = convertLayer(
      ctx,
      def.filter_gate,
      undefined,
      `${path}.filter_gate`,
      `${scope}.gate`,
      inputSize,
    );
    cfg.filter_gate = g.cfg;
    if (typeof def.filter_softmax === "string" && def.filter_softmax) {
      cfg.filter_softmax = (Object.hasOwn(LOOM_SOFTMAX, def.filter_softmax)
        ? LOOM_SOFTMAX[def.filter_softmax]
        : undefined) ?? def.filter_softmax;
    }
    const t = num(def.filter_temperature);
    if (t !== undefined) cfg.filter_temperature = t;
  }
  // Without a gate (Loom's saver drops it) our filter mixes the experts with
  // equal weights, zero-padded to the widest: what a reloaded Loom model does.
  cfg.combine_mode = mode;
  if (mode === "grid_scatter") {
    cfg.grid_positions = def.grid_positions;
    cfg.grid_output_rows = def.grid_output_rows;
    cfg.grid_output_cols = def.grid_output_cols;
    cfg.grid_output_layers = def.grid_output_layers;
  }
  const outputSize = known.length === 0
    ? undefined
    : mode === "concat" || mode === "grid_scatter"
    ? sum
    : max;
  return { cfg, outputSize };
}

function convertKMeans(
  ctx: Ctx,
  def: Obj,
  we: Obj | undefined,
  path: string,
  scope: string,
  inputSize: number | undefined,
): Converted {
  const k = needSize(ctx, path, "num_clusters", posInt(def.num_clusters));
  const { defs, weights } = children(ctx, def, we, path);
  const cfg: LayerConfig = { type: "kmeans", num_clusters: k };
  let featureSize = inputSize;
  if (defs.length > 0) {
    // Loom keeps the attached network's layers in "branches".
    const attachedScope = `${scope}.attached`;
    if (defs.length === 1) {
      const c = convertLayer(
        ctx,
        defs[0],
        weights[0],
        `${path}.branches[0]`,
        attachedScope,
        inputSize,
      );
      cfg.attached_layer = c.cfg;
      featureSize = c.outputSize;
    } else {
      const c = convertChain(
        ctx,
        defs,
        weights,
        path,
        attachedScope,
        featureSize,
      );
      cfg.attached_layer = c.cfg;
      featureSize = c.outputSize;
    }
  }
  const dim = needSize(
    ctx,
    path,
    "cluster_dim",
    posInt(def.cluster_dim),
    featureSize,
  );
  put(
    ctx,
    `${scope}.centroids`,
    read(ctx, we, "cluster_centers", k * dim, `${scope}.centroids`),
    [k, dim],
  );
  const mode = def.kmeans_output_mode === "features"
    ? "features"
    : "probabilities";
  if (
    def.kmeans_output_mode !== undefined && def.kmeans_output_mode !== "" &&
    def.kmeans_output_mode !== mode
  ) {
    throw fail(
      ctx,
      `${path}.kmeans_output_mode: ${
        shown(def.kmeans_output_mode)
      } is not one Loom implements (probabilities, features)`,
    );
  }
  const t = num(def.kmeans_temperature) ?? 1;
  cfg.kmeans_output_mode = mode;
  // Loom's logits are −d² / (2T²); ours are −d² / temperature.
  cfg.kmeans_temperature = 2 * t * t;
  cfg.distance_metric = "euclidean";
  return { cfg, outputSize: mode === "features" ? dim : k };
}

/**
 * Converts a Loom config, filling `ctx.tensors` from `ctx.weights` when
 * given (folder-internal: `convertLoomConfig` and `read.ts` call it).
 */
export function convert(
  ctx: Ctx,
  cfg: unknown,
  weightLayers?: unknown[],
): NetworkConfig {
  if (!isObject(cfg)) {
    throw fail(ctx, `"cfg" must be an object, got ${shown(cfg)}`);
  }
  const layers = cfg.layers;
  if (!Array.isArray(layers) || layers.length === 0) {
    throw fail(
      ctx,
      `cfg.layers must be a non-empty array, got ${shown(layers)}`,
    );
  }
  const rows = posInt(cfg.grid_rows) ?? 1;
  const cols = posInt(cfg.grid_cols) ?? 1;
  const per = posInt(cfg.layers_per_cell) ?? layers.length / (rows * cols);
  if (rows * cols * per !== layers.length) {
    throw fail(
      ctx,
      `cfg.layers has ${layers.length} entries, the grid needs grid_rows ${rows} × grid_cols ${cols} × layers_per_cell ${per}`,
    );
  }
  if (weightLayers && weightLayers.length !== layers.length) {
    throw fail(
      ctx,
      `the weights have ${weightLayers.length} layer entries, the config has ${layers.length}`,
    );
  }
  const out: LayerConfig[] = [];
  let size: number | undefined;
  let inputSize: number | undefined;
  layers.forEach((def, i) => {
    const c = convertLayer(
      ctx,
      def,
      weightLayers?.[i],
      `layers[${i}]`,
      `layers.${i}`,
      size,
    );
    if (i === 0) inputSize = firstInputSize(c.cfg);
    out.push(c.cfg);
    size = c.outputSize;
  });
  const result: NetworkConfig = {
    grid_rows: rows,
    grid_cols: cols,
    layers_per_cell: per,
    layers: out,
  };
  if (inputSize !== undefined) result.input_size = inputSize;
  return result;
}

function firstInputSize(cfg: LayerConfig): number | undefined {
  for (const f of ["input_size", "norm_size", "d_model"]) {
    const v = posInt(cfg[f]);
    if (v !== undefined) return v;
  }
  return undefined;
}

/**
 * Converts a Loom network config (what its `BuildNetworkFromJSON` reads and
 * its bundles store as `cfg`) to a modelhost {@link NetworkConfig}. Loom's
 * `id`, `dtype`, `batch_size` and `seed` are not part of the result.
 *
 * @param cfg The Loom config.
 * @param options Conversion options.
 * @returns The modelhost config.
 * @throws {TypeError} On a layer type or activation with no equivalent, or a
 * size that is missing and cannot be inferred; the message names the layer
 * path.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { convertLoomConfig } from "@modelhost/modelhost/formats/loom";
 * const cfg = convertLoomConfig({
 *   layers: [
 *     { type: "dense", activation: "relu", input_height: 4, output_height: 3 },
 *     { type: "softmax", softmax_variant: "sparse" },
 *   ],
 * });
 * assert(cfg.layers[1].softmax_variant === "sparsemax");
 * ```
 */
export function convertLoomConfig(
  cfg: unknown,
  options: LoomReadOptions = {},
): NetworkConfig {
  return convert(
    { model: "config", tensors: new Map(), options },
    cfg,
  );
}
