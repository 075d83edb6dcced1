/**
 * The `parallel` layer: runs several branches (any layer definitions,
 * nested as deep as wanted) on the same input and combines their outputs.
 * Branch j's parameters live under `branches.{j}.`, the filter gate's
 * under `gate.`.
 *
 * `combine_mode`:
 *
 * - `concat` (default): outputs side by side;
 * - `add` / `avg` (alias `average`): element-wise sum / mean (equal sizes);
 * - `filter`: a gated mixture of experts. The `filter_gate` layer (any
 *   layer definition, run on the input; a dense gate's `output_size` defaults
 *   to the number of branches) gives one logit per branch, normalized by
 *   `filter_softmax` (a softmax variant name such as `standard`,
 *   `sparsemax`, `entmax`, `gumbel`, or a full softmax definition object)
 *   at `filter_temperature` (default 1). Without a gate every branch weighs
 *   the same. With `top_k`, each row keeps its k largest weights
 *   (renormalized to sum 1) and only the chosen experts run on that row;
 *   experts whose weight for a row is exactly 0 never run on it
 *   (`top_k_normalize: false` keeps the k weights unscaled, as Qwen3-MoE
 *   without `norm_topk_prob`). Branches of
 *   different widths are zero-padded at the end to the widest (the seed
 *   system's auto-padding), which is also the output width.
 * - `grid_scatter`: each branch is placed at a cell (`grid_positions`:
 *   `{branch_index, target_row, target_col, target_layer}`) of a
 *   `grid_output_rows × grid_output_cols × grid_output_layers` grid; the
 *   output is the cells' outputs in row, column, layer order (empty cells
 *   take no space).
 *
 * `input_size` is inferred from the previous layer, or from the gate or a
 * branch that states its own.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { floatTensor } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * const cfg = {
 *   type: "parallel",
 *   combine_mode: "filter",
 *   filter_softmax: "standard",
 *   filter_gate: { type: "dense", input_size: 16, output_size: 2 },
 *   branches: [{ type: "dense", output_size: 8 }, { type: "kmeans", num_clusters: 4 }],
 * };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 7));
 * const y = net.forward(floatTensor(new Float32Array(32), [2, 16]));
 * assert(y.shape.join() === "2,8");
 * ```
 *
 * @module
 */

import type { LayerConfig } from "../core/model.ts";
import { initLayer, layerParams, prefixParams } from "../core/network.ts";
import type {
  ForwardContext,
  LayerPlugin,
  LayerState,
  ParsedLayer,
} from "../core/plugin.ts";
import { type FloatTensor, floatTensor } from "../core/tensor.ts";
import { childState, childStates } from "./_chain.ts";
import {
  boolField,
  checkFeatures,
  choiceField,
  fieldError,
  type Fields,
  layerFields,
  optPositiveInt,
  positiveInt,
  rowsOf,
  shown,
  withLastDim,
} from "./_fields.ts";
import {
  applySoftmax,
  parseSoftmaxFields,
  type SoftmaxConfig,
  softmaxFieldsJSON,
  softmaxOnnx,
} from "./softmax.ts";
import { ints, reduce, sliceLast, zerosLast } from "./_onnx.ts";

/**
 * How a parallel layer combines its branches.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { COMBINE_MODES } from "@modelhost/modelhost/layers";
 * assert(COMBINE_MODES.includes("filter"));
 * ```
 */
export const COMBINE_MODES = [
  "concat",
  "add",
  "avg",
  "filter",
  "grid_scatter",
] as const;

/** One of {@link COMBINE_MODES}. */
export type CombineMode = typeof COMBINE_MODES[number];

/** Where one branch goes in a `grid_scatter` output. */
export interface GridPosition {
  /** The branch. */
  branch: number;
  /** Grid row. */
  row: number;
  /** Grid column. */
  col: number;
  /** Layer within the cell. */
  layer: number;
}

/** Normalized config of a `parallel` layer. */
export interface ParallelConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** Input features. */
  inputSize: number;
  /** How outputs are combined. */
  mode: CombineMode;
  /** The branches. */
  branches: ParsedLayer[];
  /** Output features of each branch. */
  branchSizes: number[];
  /** Output features of the layer. */
  outputSize: number;
  /** `filter`: the gate layer, when there is one. */
  gate?: ParsedLayer;
  /** `filter`: how gate logits become weights. */
  softmax?: SoftmaxConfig;
  /** `filter`: whether `filter_softmax` was given as a bare variant name. */
  softmaxAsName?: boolean;
  /** `filter`: experts kept per row. */
  topK?: number;
  /**
   * `filter` with `top_k`: whether the kept weights are rescaled to sum 1
   * (Mixtral, Qwen3-MoE with `norm_topk_prob`) or kept as they are.
   */
  topKNormalize?: boolean;
  /** `grid_scatter`: grid rows, columns, layers. */
  grid?: { rows: number; cols: number; layers: number };
  /** `grid_scatter`: one position per branch, in branch order. */
  positions?: GridPosition[];
  /** `grid_scatter`: branch indices in output order (row, column, layer). */
  scatterOrder?: number[];
}

const FIELDS = [
  "input_size",
  "branches",
  "combine_mode",
  "filter_gate",
  "filter_softmax",
  "filter_temperature",
  "top_k",
  "top_k_normalize",
  "grid_positions",
  "grid_output_rows",
  "grid_output_cols",
  "grid_output_layers",
];

const FILTER_ONLY = [
  "filter_gate",
  "filter_softmax",
  "filter_temperature",
  "top_k",
  "top_k_normalize",
];
const GRID_ONLY = [
  "grid_positions",
  "grid_output_rows",
  "grid_output_cols",
  "grid_output_layers",
];

const SOFTMAX_OBJECT_FIELDS = [
  "type",
  "softmax_variant",
  "softmax_type",
  "temperature",
  "mask",
  "softmax_rows",
  "softmax_cols",
  "entmax_alpha",
  "seed",
  "input_size",
];

function parseFilterSoftmax(
  o: Fields,
  path: string,
  n: number,
): { cfg: SoftmaxConfig; asName: boolean } {
  const spec = o.filter_softmax ?? "standard";
  const t = o.filter_temperature;
  const where = `${path}.filter_softmax`;
  if (typeof spec === "string") {
    const fields: Fields = { softmax_variant: spec };
    if (t !== undefined) fields.temperature = t;
    try {
      return { cfg: parseSoftmaxFields(fields, where, n), asName: true };
    } catch (e) {
      // Report the parallel layer's own field names.
      const msg = (e as Error).message
        .replace(`${where}.softmax_variant`, `${path}.filter_softmax`)
        .replace(`${where}.temperature`, `${path}.filter_temperature`);
      throw new TypeError(msg);
    }
  }
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
    throw fieldError(
      path,
      "filter_softmax",
      `expected a softmax variant name or a softmax definition object, got ${
        shown(spec)
      }`,
    );
  }
  const obj = spec as Fields;
  for (const k of Object.keys(obj)) {
    if (!SOFTMAX_OBJECT_FIELDS.includes(k)) {
      throw fieldError(where, k, "unknown field for a softmax definition");
    }
  }
  if (obj.type !== undefined && obj.type !== "softmax") {
    throw fieldError(
      where,
      "type",
      `expected "softmax", got ${shown(obj.type)}`,
    );
  }
  if (t !== undefined && obj.temperature !== undefined) {
    throw fieldError(
      path,
      "filter_temperature",
      "give the temperature here or in filter_softmax, not both",
    );
  }
  const fields: Fields = { ...obj };
  delete fields.type;
  if (t !== undefined) fields.temperature = t;
  return { cfg: parseSoftmaxFields(fields, where, n), asName: false };
}

function parseGrid(
  o: Fields,
  path: string,
  n: number,
): Pick<ParallelConfig, "grid" | "positions" | "scatterOrder"> {
  const rows = positiveInt(o, "grid_output_rows", path);
  const cols = positiveInt(o, "grid_output_cols", path);
  const layers = positiveInt(o, "grid_output_layers", path, 1);
  const list = o.grid_positions;
  if (!Array.isArray(list) || list.length !== n) {
    throw fieldError(
      path,
      "grid_positions",
      `expected one position per branch (${n}), got ${shown(list)}`,
    );
  }
  const positions: GridPosition[] = [];
  const cellOf = new Map<number, number>();
  const placed = new Set<number>();
  list.forEach((p, i) => {
    const where = `${path}.grid_positions[${i}]`;
    if (p === null || typeof p !== "object" || Array.isArray(p)) {
      throw new TypeError(
        `${where}: expected a position object, got ${shown(p)}`,
      );
    }
    const f = p as Fields;
    for (const k of Object.keys(f)) {
      if (
        !["branch_index", "target_row", "target_col", "target_layer"].includes(
          k,
        )
      ) {
        throw fieldError(where, k, "unknown field for a grid position");
      }
    }
    const idx = (field: string, limit: number, dflt?: number): number => {
      const v = f[field] ?? dflt;
      if (
        typeof v !== "number" || !Number.isSafeInteger(v) || v < 0 || v >= limit
      ) {
        throw fieldError(
          where,
          field,
          `expected an integer in [0, ${limit}), got ${shown(v)}`,
        );
      }
      return v;
    };
    const pos: GridPosition = {
      branch: idx("branch_index", n, i),
      row: idx("target_row", rows),
      col: idx("target_col", cols),
      layer: idx("target_layer", layers, 0),
    };
    if (placed.has(pos.branch)) {
      throw fieldError(
        where,
        "branch_index",
        `branch ${pos.branch} is placed twice`,
      );
    }
    placed.add(pos.branch);
    const cell = (pos.row * cols + pos.col) * layers + pos.layer;
    if (cellOf.has(cell)) {
      throw new TypeError(
        `${where}: cell (${pos.row}, ${pos.col}, ${pos.layer}) already holds branch ${
          cellOf.get(cell)
        }`,
      );
    }
    cellOf.set(cell, pos.branch);
    positions.push(pos);
  });
  positions.sort((a, b) => a.branch - b.branch);
  const scatterOrder = [...cellOf.entries()].sort((a, b) => a[0] - b[0]).map((
    e,
  ) => e[1]);
  return { grid: { rows, cols, layers }, positions, scatterOrder };
}

/** Picks the rows of a `[rows, cols]` array listed in `idx`. */
function gatherRows(
  data: Float32Array,
  cols: number,
  idx: Int32Array,
): Float32Array {
  const out = new Float32Array(idx.length * cols);
  for (let i = 0; i < idx.length; i++) {
    out.set(data.subarray(idx[i] * cols, (idx[i] + 1) * cols), i * cols);
  }
  return out;
}

/**
 * The `parallel` layer plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parallelLayer } from "@modelhost/modelhost/layers";
 * assert(parallelLayer.type === "parallel");
 * ```
 */
export const parallelLayer: LayerPlugin<ParallelConfig> = {
  kind: "layer",
  type: "parallel",
  description:
    "Branches on the same input, combined by concat, add, avg, filter (gated mixture of experts) or grid_scatter",
  parse(json, ctx) {
    const o = layerFields(json, ctx, "parallel", FIELDS);
    const path = ctx.path;
    const mode = choiceField(o, "combine_mode", path, COMBINE_MODES, "concat", {
      average: "avg",
    });
    for (
      const f of mode === "filter"
        ? GRID_ONLY
        : mode === "grid_scatter"
        ? FILTER_ONLY
        : [...FILTER_ONLY, ...GRID_ONLY]
    ) {
      if (o[f] !== undefined) {
        throw fieldError(
          path,
          f,
          `only applies to combine_mode "${
            FILTER_ONLY.includes(f) ? "filter" : "grid_scatter"
          }", not "${mode}"`,
        );
      }
    }
    const list = o.branches;
    if (!Array.isArray(list) || list.length === 0) {
      throw fieldError(
        path,
        "branches",
        `expected a non-empty array of layer definitions, got ${shown(list)}`,
      );
    }
    const n = list.length;
    const given = optPositiveInt(o, "input_size", path);
    if (
      given !== undefined && ctx.inputSize !== undefined &&
      given !== ctx.inputSize
    ) {
      throw fieldError(
        path,
        "input_size",
        `expected ${ctx.inputSize} (the previous layer's output size), got ${given}`,
      );
    }
    const hasGate = mode === "filter" && o.filter_gate !== undefined;
    // The gate (when there is one) and the branches, parsed alike.
    const children: { json: unknown; path: string; expected?: number }[] = [];
    if (hasGate) {
      children.push({
        json: o.filter_gate,
        path: `${path}.filter_gate`,
        expected: n,
      });
    }
    list.forEach((b, j) =>
      children.push({ json: b, path: `${path}.branches[${j}]` })
    );
    const parseOne = (c: (typeof children)[number], size: number | undefined) =>
      ctx.parseChild(c.json, c.path, size, {
        previousInputSize: ctx.previousInputSize,
        expectedOutputSize: c.expected,
      });
    let size = ctx.inputSize ?? given;
    if (size === undefined) {
      // Probe: the gate or a branch may state its own input size.
      let firstError: unknown;
      for (const c of children) {
        try {
          size = parseOne(c, undefined).inputSize;
          if (size !== undefined) break;
        } catch (e) {
          firstError ??= e;
        }
      }
      if (size === undefined) {
        throw firstError ?? fieldError(
          path,
          "input_size",
          "required: no previous layer, gate or branch to infer it from",
        );
      }
    }
    const parsed = children.map((c) => parseOne(c, size));
    const gate = hasGate ? parsed[0] : undefined;
    const branches = hasGate ? parsed.slice(1) : parsed;
    const branchSizes = branches.map((b, j) => {
      if (b.outputSize === undefined) {
        throw new TypeError(
          `${path}.branches[${j}]: its output size is unknown; the parallel layer needs it to combine`,
        );
      }
      return b.outputSize;
    });
    const cfg: ParallelConfig = {
      path,
      inputSize: size,
      mode,
      branches,
      branchSizes,
      outputSize: 0,
    };
    if (mode === "add" || mode === "avg") {
      branchSizes.forEach((s, j) => {
        if (s !== branchSizes[0]) {
          throw new TypeError(
            `${path}.branches[${j}]: outputs ${s} features; combine_mode "${mode}" needs every branch to output ${
              branchSizes[0]
            } (as branches[0] does)`,
          );
        }
      });
      cfg.outputSize = branchSizes[0];
    } else if (mode === "filter") {
      cfg.outputSize = Math.max(...branchSizes);
      cfg.gate = gate;
      const sm = parseFilterSoftmax(o, path, n);
      cfg.softmax = sm.cfg;
      cfg.softmaxAsName = sm.asName;
      if (o.top_k !== undefined) {
        const k = optPositiveInt(o, "top_k", path)!;
        if (k > n) {
          throw fieldError(
            path,
            "top_k",
            `expected at most the number of branches (${n}), got ${k}`,
          );
        }
        cfg.topK = k;
        cfg.topKNormalize = boolField(o, "top_k_normalize", path, true);
      }
    } else if (mode === "grid_scatter") {
      Object.assign(cfg, parseGrid(o, path, n));
      cfg.outputSize = branchSizes.reduce((a, b) => a + b, 0);
    } else {
      cfg.outputSize = branchSizes.reduce((a, b) => a + b, 0);
    }
    return cfg;
  },
  inputSize: (cfg) => cfg.inputSize,
  outputSize: (cfg) => cfg.outputSize,
  toJSON(cfg) {
    const out: LayerConfig = {
      type: "parallel",
      input_size: cfg.inputSize,
      combine_mode: cfg.mode,
    };
    if (cfg.mode === "filter") {
      if (cfg.gate) out.filter_gate = cfg.gate.plugin.toJSON(cfg.gate.cfg);
      const sm = cfg.softmax!;
      const simple = cfg.softmaxAsName &&
        !["masked", "grid", "entmax", "gumbel"].includes(sm.variant);
      if (simple) {
        out.filter_softmax = sm.variant;
        out.filter_temperature = sm.temperature;
      } else {
        const j = softmaxFieldsJSON(sm);
        delete j.input_size;
        out.filter_softmax = j;
      }
      if (cfg.topK !== undefined) out.top_k = cfg.topK;
      if (cfg.topKNormalize === false) out.top_k_normalize = false;
    }
    if (cfg.mode === "grid_scatter") {
      out.grid_output_rows = cfg.grid!.rows;
      out.grid_output_cols = cfg.grid!.cols;
      out.grid_output_layers = cfg.grid!.layers;
      out.grid_positions = cfg.positions!.map((p) => ({
        branch_index: p.branch,
        target_row: p.row,
        target_col: p.col,
        target_layer: p.layer,
      }));
    }
    out.branches = cfg.branches.map((b) => b.plugin.toJSON(b.cfg));
    return out;
  },
  params: (cfg) => [
    ...cfg.branches.flatMap((b, j) =>
      prefixParams(`branches.${j}`, layerParams(b))
    ),
    ...(cfg.gate ? prefixParams("gate", layerParams(cfg.gate)) : []),
  ],
  init(cfg, rng) {
    const out = new Map<string, Float32Array>();
    cfg.branches.forEach((b, j) => {
      for (const [k, v] of initLayer(b, rng)) out.set(`branches.${j}.${k}`, v);
    });
    if (cfg.gate) {
      for (const [k, v] of initLayer(cfg.gate, rng)) out.set(`gate.${k}`, v);
    }
    return out;
  },
  build(cfg, weights) {
    const branches = cfg.branches.map((b, j) =>
      b.plugin.build(b.cfg, weights.at(`branches.${j}`))
    );
    const gate = cfg.gate?.plugin.build(cfg.gate.cfg, weights.at("gate"));
    const n = branches.length;

    const checkOut = (y: FloatTensor, j: number, rows: number) => {
      const s = cfg.branchSizes[j];
      if (y.shape[y.shape.length - 1] !== s || y.data.length !== rows * s) {
        throw new TypeError(
          `${cfg.path}.branches[${j}]: returned shape [${
            y.shape.join(", ")
          }], expected ${rows} rows of ${s} features`,
        );
      }
    };

    const forwardFilter = (
      x: FloatTensor,
      state: LayerState | undefined,
      ctx: ForwardContext | undefined,
    ): FloatTensor => {
      const rows = rowsOf(x), d = cfg.inputSize, out = cfg.outputSize;
      const x2 = floatTensor(x.data, [rows, d]);
      const prev = ctx?.previousInput;
      const prevCols = prev ? prev.shape[prev.shape.length - 1] ?? 0 : 0;
      const prevRows =
        prev && prevCols > 0 && prev.data.length === rows * prevCols
          ? floatTensor(prev.data, [rows, prevCols])
          : undefined;
      let logits: Float32Array;
      if (gate) {
        const g = gate.forward(x2, childState(state, "gate"), {
          previousInput: prevRows,
        });
        if (g.data.length !== rows * n) {
          throw new TypeError(
            `${cfg.path}.filter_gate: returned shape [${
              g.shape.join(", ")
            }], expected [${rows}, ${n}] (one logit per branch)`,
          );
        }
        logits = g.data;
      } else {
        logits = new Float32Array(rows * n);
      }
      const w = applySoftmax(
        cfg.softmax!,
        logits,
        rows,
        n,
        childState(state, "softmax"),
      );
      if (cfg.topK !== undefined && cfg.topK < n) {
        const k = cfg.topK;
        const order = Array.from({ length: n }, (_, j) => j);
        for (let r = 0; r < rows; r++) {
          const o = r * n;
          // Largest weights first; the lower index wins ties.
          order.sort((a, b) => w[o + b] - w[o + a] || a - b);
          let sum = 0;
          for (let i = 0; i < k; i++) sum += w[o + order[i]];
          for (let i = k; i < n; i++) w[o + order[i]] = 0;
          if (cfg.topKNormalize === false) continue;
          for (let i = 0; i < k; i++) w[o + order[i]] /= sum;
        }
      }
      const acc = new Float64Array(rows * out);
      const states = childStates(state, "branches", n);
      for (let j = 0; j < n; j++) {
        let count = 0;
        for (let r = 0; r < rows; r++) if (w[r * n + j] !== 0) count++;
        if (count === 0) continue;
        let input = x2, prevIn = prevRows, idx: Int32Array | undefined;
        if (count < rows) {
          idx = new Int32Array(count);
          for (let r = 0, i = 0; r < rows; r++) {
            if (w[r * n + j] !== 0) idx[i++] = r;
          }
          input = floatTensor(gatherRows(x2.data, d, idx), [count, d]);
          if (prevRows) {
            prevIn = floatTensor(gatherRows(prevRows.data, prevCols, idx), [
              count,
              prevCols,
            ]);
          }
        }
        const y = branches[j].forward(input, states[j], {
          previousInput: prevIn,
        });
        checkOut(y, j, count);
        const s = cfg.branchSizes[j];
        for (let i = 0; i < count; i++) {
          const r = idx ? idx[i] : i;
          const wt = w[r * n + j];
          for (let c = 0; c < s; c++) {
            acc[r * out + c] += wt * y.data[i * s + c];
          }
        }
      }
      return floatTensor(Float32Array.from(acc), withLastDim(x, out));
    };

    return {
      forward(x, state, ctx) {
        checkFeatures(x, cfg.inputSize, cfg.path, "parallel");
        if (cfg.mode === "filter") return forwardFilter(x, state, ctx);
        const rows = rowsOf(x);
        const states = childStates(state, "branches", n);
        const outs = branches.map((b, j) => {
          const y = b.forward(x, states[j], ctx);
          checkOut(y, j, rows);
          return y.data;
        });
        const size = cfg.outputSize;
        const result = new Float32Array(rows * size);
        if (cfg.mode === "add" || cfg.mode === "avg") {
          const div = cfg.mode === "avg" ? n : 1;
          for (let i = 0; i < result.length; i++) {
            let s = 0;
            for (let j = 0; j < n; j++) s += outs[j][i];
            result[i] = s / div;
          }
        } else {
          const order = cfg.mode === "grid_scatter"
            ? cfg.scatterOrder!
            : cfg.branches.map((_, j) => j);
          for (let r = 0; r < rows; r++) {
            let off = r * size;
            for (const j of order) {
              const s = cfg.branchSizes[j];
              result.set(outs[j].subarray(r * s, (r + 1) * s), off);
              off += s;
            }
          }
        }
        return floatTensor(result, withLastDim(x, size));
      },
    };
  },
  toOnnx(g, cfg, weights, input, ctx) {
    const n = cfg.branches.length;
    const outs = cfg.branches.map((b, j) =>
      g.lower(b, weights.at(`branches.${j}`), input, {
        path: b.path ?? `${cfg.path}.branches[${j}]`,
        previousInput: ctx.previousInput,
      })
    );
    if (cfg.mode === "concat" || cfg.mode === "grid_scatter") {
      const order = cfg.mode === "grid_scatter"
        ? cfg.scatterOrder!
        : outs.map((_, j) => j);
      if (order.length === 1) return outs[order[0]];
      return g.op("Concat", order.map((j) => outs[j]), { axis: -1 });
    }
    if (cfg.mode === "add" || cfg.mode === "avg") {
      if (n === 1) return outs[0];
      return g.op(cfg.mode === "add" ? "Sum" : "Mean", outs);
    }
    // filter: the dense mixture Σ_j w_j · pad(branch_j). Rows where top_k
    // zeroes a weight add 0 · branch_j, which equals skipping the expert.
    const logits = cfg.gate
      ? g.lower(cfg.gate, weights.at("gate"), input, {
        path: cfg.gate.path ?? `${cfg.path}.filter_gate`,
        previousInput: ctx.previousInput,
      })
      : zerosLast(g, input, n);
    let w = softmaxOnnx(g, cfg.softmax!, logits, n, cfg.path);
    if (cfg.topK !== undefined && cfg.topK < n) {
      const [vals, idx] = g.node("TopK", [w, ints(g, [cfg.topK])], {
        axis: -1,
        largest: 1,
        sorted: 1,
      }, 2);
      const kept = cfg.topKNormalize === false ? vals : g.op("Div", [
        vals,
        reduce(g, "ReduceSum", vals, [-1], true),
      ]);
      const zeros = g.op("ConstantOfShape", [g.op("Shape", [w])], {
        value: { tensor: { dtype: "F32", dims: [1], values: [0] } },
      });
      w = g.op("ScatterElements", [zeros, idx, kept], { axis: -1 });
    }
    const out = cfg.outputSize;
    let acc: string | undefined;
    outs.forEach((y, j) => {
      const s = cfg.branchSizes[j];
      const padded = s === out
        ? y
        : g.op("Concat", [y, zerosLast(g, y, out - s)], { axis: -1 });
      const term = g.op("Mul", [padded, sliceLast(g, w, j, j + 1)]);
      acc = acc === undefined ? term : g.op("Add", [acc, term]);
    });
    return acc!;
  },
};

/**
 * Old name of {@link parallelLayer}.
 *
 * @deprecated Use {@link parallelLayer}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parallel, parallelLayer } from "@modelhost/modelhost/layers";
 * assert(parallel === parallelLayer);
 * ```
 */
export const parallel: LayerPlugin<ParallelConfig> = parallelLayer;
