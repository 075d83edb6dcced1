/**
 * Reading models saved by Loom (github.com/openfluke/loom), the Go framework
 * the bundle format comes from. A Loom bundle has the same envelope as ours
 * (`{"type": "modelhost/bundle", "version": 1 | 2, "models": [...]}`), but
 * each model's `weights` is `{"fmt": ..., "data": base64}`:
 *
 * - `jsonModelB64`: base64 of JSON `{"type", "dtype", "layers": [...]}`, one
 *   entry per grid slot with plain float arrays (`kernel`, `biases`,
 *   `q_weights`, `gamma`, `branch_weights` for nested layers, ...).
 * - `multiPrecisionB64`: base64 of JSON `{"dtype", "scale", "layers"}`, each
 *   array itself base64 of little-endian values in that dtype, decoded with
 *   Loom's own formulas (`int8` is `code / scale`, `uint8` is
 *   `code / 127.5 − 1`, its `float4` is a 16-level linear code, ...).
 *
 * Conversion turns Loom's config fields (`input_height` / `output_height`,
 * `norm_size`, `softmax_variant`, `branches`, ...) into ours, transposes its
 * `[in][out]` matrices to our `[out, in]`, renames weights to the names of
 * CONVENTIONS (`kernel` → `weight`, `q_weights` → `q_proj.weight`, ...) and
 * maps activation names to functions that compute what the name says (see
 * {@link LOOM_ACTIVATIONS}); where Loom's own code computes something else
 * (its `relu` is `max(0, 1.1·x)`), the README says so.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { convertLoomConfig } from "./loom.ts";
 * const cfg = convertLoomConfig({
 *   grid_rows: 1, grid_cols: 1, layers_per_cell: 1,
 *   layers: [{ type: "dense", activation: "leaky_relu", input_height: 8, output_height: 4 }],
 * });
 * assert(cfg.layers[0].negative_slope === 0.1 && cfg.input_size === 8);
 * ```
 *
 * @module
 */

import { decodeToF32 } from "../core/dtypes.ts";
import {
  type LayerConfig,
  memoryTensorIndex,
  type Model,
  type NetworkConfig,
} from "../core/model.ts";
import { type Tensor, tensorFromF32 } from "../core/tensor.ts";
import { fromBase64 } from "../core/_base64.ts";

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
 * The weight layouts Loom writes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { LOOM_WEIGHT_FORMATS } from "./loom.ts";
 * assert(LOOM_WEIGHT_FORMATS.includes("jsonModelB64"));
 * ```
 */
export const LOOM_WEIGHT_FORMATS: readonly string[] = [
  "jsonModelB64",
  "multiPrecisionB64",
];

/**
 * Loom activation names and the modelhost activation each is read as. The
 * empty string is Loom's default (its zero value, the scaled ReLU).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { LOOM_ACTIVATIONS } from "./loom.ts";
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

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function shown(v: unknown): string {
  if (v === undefined) return "nothing";
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** Where weights come from: one entry object per layer, read by field. */
interface WeightSource {
  /** Values of one field as F32, or undefined when the entry has none. */
  read(
    entry: Obj | undefined,
    field: string,
    count: number,
    tensor: string,
  ): Float32Array | undefined;
}

interface Ctx {
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
  if (typeof name !== "string" || !(name in LOOM_ACTIVATIONS)) {
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
      if (typeof variant !== "string" || !(variant in LOOM_SOFTMAX)) {
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
      cfg.filter_softmax = LOOM_SOFTMAX[def.filter_softmax] ??
        def.filter_softmax;
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

function convert(
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
 * import { convertLoomConfig } from "./loom.ts";
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

// ------------------------------------------------------------ weight blobs

function jsonSource(ctx: { model: string }): WeightSource {
  return {
    read(entry, field, count, tensor) {
      const v = entry?.[field];
      if (v === undefined || v === null) return undefined;
      if (!Array.isArray(v)) {
        throw new TypeError(
          `Cannot read Loom tensor "${tensor}" of model "${ctx.model}": "${field}" must be an array of numbers, got ${
            shown(v)
          }`,
        );
      }
      if (v.length === 0) return undefined;
      if (v.length !== count) {
        throw new RangeError(
          `Cannot read Loom tensor "${tensor}" of model "${ctx.model}": "${field}" needs ${count} values, got ${v.length}`,
        );
      }
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) {
        const x = v[i];
        if (typeof x !== "number") {
          throw new TypeError(
            `Cannot read Loom tensor "${tensor}" of model "${ctx.model}": "${field}"[${i}] is ${
              shown(x)
            }, not a number`,
          );
        }
        out[i] = x;
      }
      return out;
    },
  };
}

/** Bytes per element of Loom's multi-precision dtypes (0.5 for the nibble types). */
const LOOM_DTYPE_BYTES: Readonly<Record<string, number>> = {
  float32: 4,
  float64: 8,
  float16: 2,
  bfloat16: 2,
  float8: 1,
  float4: 0.5,
  int4: 0.5,
  int8: 1,
  int16: 2,
  int32: 4,
  int64: 8,
  uint8: 1,
  uint16: 2,
  uint32: 4,
  uint64: 8,
};

/** Loom's own E4M3 decoding (no NaN code; exponent 0 read as a normal). */
function loomFloat8(b: number): number {
  if ((b & 0x7f) === 0) return 0;
  const sign = b & 0x80 ? -1 : 1;
  const e = (b >> 3) & 0x0f;
  const m = b & 0x07;
  return sign * 2 ** (e - 7) * (1 + m / 8);
}

/**
 * Decodes one Loom multi-precision array (little-endian bytes) to F32 with
 * the formulas of Loom's `DecodeSliceWithDType`.
 */
function decodeLoom(
  bytes: Uint8Array,
  dtype: string,
  scale: number,
  count: number,
): Float32Array {
  const out = new Float32Array(count);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const f32 = Math.fround;
  switch (dtype) {
    case "float32":
      for (let i = 0; i < count; i++) out[i] = dv.getFloat32(i * 4, true);
      break;
    case "float64":
      for (let i = 0; i < count; i++) out[i] = dv.getFloat64(i * 8, true);
      break;
    case "float16":
      return decodeToF32("F16", bytes, count);
    case "bfloat16":
      return decodeToF32("BF16", bytes, count);
    case "float8":
      for (let i = 0; i < count; i++) out[i] = loomFloat8(bytes[i]);
      break;
    case "float4": {
      const s = f32(scale);
      for (let i = 0; i < count; i++) {
        const q = i % 2 === 0 ? bytes[i >> 1] >> 4 : bytes[i >> 1] & 0x0f;
        out[i] = f32(f32(q / 7.5) - 1) * s;
      }
      break;
    }
    case "int4": {
      const k = f32(8 / scale);
      for (let i = 0; i < count; i++) {
        const q = i % 2 === 0 ? bytes[i >> 1] >> 4 : bytes[i >> 1] & 0x0f;
        out[i] = (q - 8) * k;
      }
      break;
    }
    case "int8":
      for (let i = 0; i < count; i++) out[i] = dv.getInt8(i) / scale;
      break;
    case "int16":
      for (let i = 0; i < count; i++) out[i] = dv.getInt16(i * 2, true) / scale;
      break;
    case "int32":
      for (let i = 0; i < count; i++) out[i] = dv.getInt32(i * 4, true) / scale;
      break;
    case "int64":
      for (let i = 0; i < count; i++) {
        out[i] = Number(dv.getBigInt64(i * 8, true)) / scale;
      }
      break;
    case "uint8":
      for (let i = 0; i < count; i++) out[i] = bytes[i] / 127.5 - 1;
      break;
    case "uint16":
      for (let i = 0; i < count; i++) {
        out[i] = dv.getUint16(i * 2, true) / 32767.5 - 1;
      }
      break;
    case "uint32":
      for (let i = 0; i < count; i++) {
        out[i] = dv.getUint32(i * 4, true) / 2147483647.5 - 1;
      }
      break;
    case "uint64":
      for (let i = 0; i < count; i++) {
        out[i] = Number(dv.getBigUint64(i * 8, true)) / 9.223372e18 - 1;
      }
      break;
  }
  return out;
}

function multiPrecisionSource(
  ctx: { model: string },
  dtype: string,
  scale: number,
): WeightSource {
  return {
    read(entry, field, count, tensor) {
      const v = entry?.[field];
      if (v === undefined || v === null || v === "") return undefined;
      const where = `Loom tensor "${tensor}" of model "${ctx.model}"`;
      if (typeof v !== "string") {
        throw new TypeError(
          `Cannot read ${where}: "${field}" must be a base64 string, got ${
            shown(v)
          }`,
        );
      }
      const dt = typeof entry?.dtype === "string" && entry.dtype !== ""
        ? entry.dtype
        : dtype;
      const size = LOOM_DTYPE_BYTES[dt];
      if (size === undefined) {
        throw new TypeError(
          `Cannot read ${where}: unknown Loom dtype ${shown(dt)} (known: ${
            Object.keys(LOOM_DTYPE_BYTES).join(", ")
          })`,
        );
      }
      let bytes: Uint8Array;
      try {
        bytes = fromBase64(v);
      } catch (e) {
        throw new SyntaxError(
          `Cannot read ${where}: "${field}" is not valid base64 (${
            (e as Error).message
          })`,
        );
      }
      const need = Math.ceil(count * size);
      if (bytes.length !== need) {
        throw new RangeError(
          `Cannot read ${where}: ${count} ${dt} values need ${need} bytes, "${field}" holds ${bytes.length}`,
        );
      }
      return decodeLoom(bytes, dt, scale, count);
    },
  };
}

function decodeBlob(model: string, data: unknown): unknown {
  if (typeof data !== "string") {
    throw new TypeError(
      `Cannot read Loom model "${model}": weights.data must be a base64 string, got ${
        shown(data)
      }`,
    );
  }
  let bytes: Uint8Array;
  try {
    bytes = fromBase64(data);
  } catch (e) {
    throw new SyntaxError(
      `Cannot read Loom model "${model}": weights.data is not valid base64 (${
        (e as Error).message
      })`,
    );
  }
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new SyntaxError(
      `Cannot read Loom model "${model}": weights.data does not hold JSON (${
        (e as Error).message
      })`,
    );
  }
}

/**
 * Converts one model entry of a Loom bundle (`{"id", "cfg", "weights":
 * {"fmt", "data"}}`) to a modelhost {@link Model} with F32 tensors named as
 * our layers expect. Called by `loadBundle` for entries whose weights have
 * an `fmt`.
 *
 * @param entry The model entry as parsed JSON.
 * @param id The model id.
 * @param options Conversion options.
 * @returns The model; `metadata.loom` keeps Loom's `fmt`, `dtype`,
 * `batch_size` and `seed`.
 * @throws {TypeError} On an unknown `fmt`, a layer or activation with no
 * equivalent, or a malformed entry (messages name the model and layer).
 * @throws {SyntaxError} When a blob is not base64 or not JSON.
 * @throws {RangeError} When an array's length does not match the config.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { readLoomModel } from "./loom.ts";
 * const blob = { type: "float32", dtype: "", layers: [{ kernel: [1, 2, 3, 4, 5, 6], biases: [0, 1] }] };
 * const data = btoa(JSON.stringify(blob));
 * const m = readLoomModel({
 *   id: "m",
 *   cfg: { grid_rows: 1, grid_cols: 1, layers_per_cell: 1,
 *     layers: [{ type: "dense", activation: "linear", input_height: 3, output_height: 2 }] },
 *   weights: { fmt: "jsonModelB64", data },
 * }, "m");
 * const w = await m.tensors.load("layers.0.weight");
 * // Loom's kernel is [in][out]: row i holds input i's weights to outputs 0 and 1.
 * assert(new Float32Array(w.bytes.buffer).join() === "1,3,5,2,4,6");
 * ```
 */
export function readLoomModel(
  entry: Record<string, unknown>,
  id: string,
  options: LoomReadOptions = {},
): Model {
  const weights = entry.weights as Obj;
  const fmt = weights.fmt;
  const blob = decodeBlob(id, weights.data);
  if (!isObject(blob) || !Array.isArray(blob.layers)) {
    throw new TypeError(
      `Cannot read Loom model "${id}": the weights blob needs a "layers" array`,
    );
  }
  let source: WeightSource;
  const loom: Obj = { fmt };
  if (fmt === "jsonModelB64") {
    source = jsonSource({ model: id });
    if (typeof blob.type === "string" && blob.type) loom.type = blob.type;
  } else if (fmt === "multiPrecisionB64") {
    const dtype = typeof blob.dtype === "string" && blob.dtype
      ? blob.dtype
      : "float32";
    const scale = typeof blob.scale === "number" && blob.scale !== 0
      ? blob.scale
      : 1;
    source = multiPrecisionSource({ model: id }, dtype, scale);
    loom.dtype = dtype;
    loom.scale = scale;
  } else {
    throw new TypeError(
      `Cannot read Loom model "${id}": unknown weights.fmt ${
        shown(fmt)
      } (known: ${LOOM_WEIGHT_FORMATS.join(", ")})`,
    );
  }
  const tensors = new Map<string, Tensor>();
  const config = convert(
    { model: id, weights: source, tensors, options },
    entry.cfg,
    blob.layers,
  );
  const cfg = entry.cfg as Obj;
  for (const f of ["dtype", "batch_size", "seed"]) {
    if (cfg[f] !== undefined && cfg[f] !== "" && cfg[f] !== 0) loom[f] = cfg[f];
  }
  return {
    id,
    config,
    metadata: { converted_from: "loom", loom },
    tensors: memoryTensorIndex(tensors.values()),
  };
}
