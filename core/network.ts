/**
 * Networks: a grid of layers (`grid_rows` × `grid_cols` × `layers_per_cell`)
 * built from a JSON config by the registry's layer plugins, bound to named
 * tensors (`layers.{i}.weight`) and run row, then column, then layer.
 *
 * - {@link parseNetwork} validates a config, infers sizes and normalizes it.
 * - {@link initNetwork} makes seeded initial weights.
 * - {@link buildNetwork} binds a config to tensors and returns a
 *   {@link Network} with `forward`.
 *
 * A bare layer definition (`{"type": "kmeans", ...}`) is accepted wherever a
 * network config is, as a network of that one layer.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { floatTensor } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * const cfg = {
 *   input_size: 4,
 *   layers: [
 *     { type: "dense", output_size: 8, activation: "relu" },
 *     { type: "dense", output_size: 2, activation: "softmax" },
 *   ],
 * };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 1));
 * const y = net.forward(floatTensor(new Float32Array(12), [3, 4]));
 * assert(y.shape.join() === "3,2");
 * ```
 *
 * @module
 */

import { setOwn } from "./_own.ts";
import type { LayerConfig, NetworkConfig } from "./model.ts";
import type {
  ChildParseOptions,
  Layer,
  LayerPlugin,
  LayerState,
  NetworkLike,
  ParamSpec,
  ParseContext,
  ParsedLayer,
} from "./plugin.ts";
import { createRng, type Rng } from "./rng.ts";
import { createScope } from "./scope.ts";
import { type FloatTensor, type Tensor, tensorFromF32 } from "./tensor.ts";

/** What the network code needs from a registry: layer lookup by type. */
export interface LayerLookup {
  /** The layer plugin for a type or alias; throws `TypeError` when unknown. */
  layer(type: string): LayerPlugin<unknown>;
}

/** A parsed, validated network: sizes inferred, layers parsed. */
export interface NetworkSpec {
  /** Rows of the grid. */
  readonly gridRows: number;
  /** Columns of the grid. */
  readonly gridCols: number;
  /** Layers per cell. */
  readonly layersPerCell: number;
  /** Feature size of the network input, when known. */
  readonly inputSize?: number;
  /** Feature size of the network output, when known. */
  readonly outputSize?: number;
  /** The layers in execution order (row, column, layer); layer i has scope `layers.{i}`. */
  readonly layers: readonly ParsedLayer[];
  /** The normalized config (round-trips through {@link parseNetwork}). */
  readonly config: NetworkConfig;
}

/** Per-call state of a whole network: one {@link LayerState} per layer. */
export interface NetworkState extends LayerState {
  /** State of layer i, in execution order. */
  layers: LayerState[];
}

/** Options of {@link Network.forward}. */
export interface NetworkForwardOptions {
  /**
   * A key-padding mask for a batch of rows padded to one length (`[batch,
   * seq]` ids or `[batch, seq, features]`): `batch × seq` entries,
   * row-major, 1 for a real token and 0 for padding. Every layer gets it
   * (through `residual` and `sequential` chains too): attention hides padded
   * keys, layers that work row by row ignore it. Not with a state (KV
   * cache). @default {no mask}
   */
  attentionMask?: ArrayLike<number>;
}

/** A network bound to its weights. */
export interface Network extends NetworkLike {
  /** The normalized config. */
  readonly config: NetworkConfig;
  /** The parsed spec (layers with their plugins and configs). */
  readonly spec: NetworkSpec;
  /** The built layers, in execution order. */
  readonly layers: readonly Layer[];
  /**
   * Runs every layer in order (row, column, layer). `x` has its features in
   * the last dimension; pass a state from {@link Network.createState} for
   * layers that keep caches between calls, or a padding mask in `options`
   * for a padded batch.
   */
  forward(
    x: FloatTensor,
    state?: NetworkState,
    options?: NetworkForwardOptions,
  ): FloatTensor;
  /** A fresh state: one empty {@link LayerState} per layer. */
  createState(): NetworkState;
  /** Every parameter tensor with its full name (`layers.3.weight`) and shape. */
  paramSpecs(): ParamSpec[];
  /** The tensors the network was built from, by full name (exporters read them). */
  readonly tensors?: ReadonlyMap<string, Tensor>;
}

/** What {@link checkNetworkTensors} found. */
export interface TensorCheck {
  /** Required parameters with no tensor. */
  missing: string[];
  /** Tensors that are no parameter of the network. */
  extra: string[];
  /** Tensors whose shape differs from the parameter's. */
  wrongShape: { name: string; expected: number[]; actual: number[] }[];
}

const NETWORK_FIELDS = [
  "grid_rows",
  "grid_cols",
  "layers_per_cell",
  "input_size",
  "layers",
];

function shown(v: unknown): string {
  if (v === undefined) return "nothing";
  try {
    const s = JSON.stringify(v);
    return s.length > 60 ? `${s.slice(0, 57)}...` : s;
  } catch {
    return String(v);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * Parses one layer definition at `path` with the lookup's plugins. Container
 * plugins reach this through {@link ParseContext.parseChild}.
 *
 * @param lookup The registry (anything with `layer(type)`).
 * @param json The layer definition.
 * @param path Where it sits, for messages (`layers[2]`).
 * @param inputSize Feature size of its input, when known.
 * @param options Previous layer's input size and an expected output size.
 * @returns The parsed layer with its input and output sizes.
 * @throws {TypeError} When the definition is wrong; the message names the path and field.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseLayer } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const p = parseLayer(defaultRegistry(), { type: "dense", output_size: 3 }, "layers[0]", 5);
 * assert(p.inputSize === 5 && p.outputSize === 3);
 * ```
 */
export function parseLayer(
  lookup: LayerLookup,
  json: unknown,
  path: string,
  inputSize?: number,
  options: ChildParseOptions = {},
): ParsedLayer {
  if (!isObject(json)) {
    throw new TypeError(
      `${path}: expected a layer definition object, got ${shown(json)}`,
    );
  }
  if (typeof json.type !== "string") {
    throw new TypeError(
      `${path}.type: expected a layer type string, got ${shown(json.type)}`,
    );
  }
  let plugin: LayerPlugin<unknown>;
  try {
    plugin = lookup.layer(json.type);
  } catch (e) {
    throw new TypeError(`${path}.type: ${(e as Error).message}`);
  }
  const ctx: ParseContext = {
    path,
    inputSize,
    previousInputSize: options.previousInputSize,
    expectedOutputSize: options.expectedOutputSize,
    parseChild: (child, childPath, childInput, childOptions) =>
      parseLayer(lookup, child, childPath, childInput, childOptions),
  };
  const cfg = plugin.parse(json as LayerConfig, ctx);
  const inSize = plugin.inputSize?.(cfg) ?? inputSize;
  const outSize = plugin.outputSize(cfg, inSize);
  if (
    options.expectedOutputSize !== undefined && outSize !== undefined &&
    outSize !== options.expectedOutputSize
  ) {
    throw new TypeError(
      `${path}: outputs ${outSize} features, expected ${options.expectedOutputSize}`,
    );
  }
  return { plugin, cfg, path, inputSize: inSize, outputSize: outSize };
}

function gridField(
  cfg: Record<string, unknown>,
  field: string,
  fallback: number | undefined,
): number | undefined {
  const v = cfg[field];
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
    throw new TypeError(
      `${field}: expected a positive integer, got ${shown(v)}`,
    );
  }
  return v;
}

/**
 * Validates a network config, parses every layer with the lookup's plugins,
 * infers sizes (each layer's input size is the previous layer's output;
 * `input_size` at the top, or the first layer's own input size, for the
 * first) and normalizes the config.
 *
 * @param lookup The registry.
 * @param config A network config, or a bare layer definition (a network of one layer).
 * @returns The parsed network.
 * @throws {TypeError} On a wrong config; the message names the layer path and
 * field (`layers[2].output_size: expected a positive integer, got -3`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseNetwork } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const spec = parseNetwork(defaultRegistry(), {
 *   input_size: 4,
 *   layers: [{ type: "dense", output_size: 8 }, { type: "dense", output_size: 2 }],
 * });
 * assert(spec.layers[1].inputSize === 8 && spec.outputSize === 2);
 * ```
 */
export function parseNetwork(
  lookup: LayerLookup,
  config: unknown,
): NetworkSpec {
  if (!isObject(config)) {
    throw new TypeError(
      `Network config: expected an object, got ${shown(config)}`,
    );
  }
  const cfg: Record<string, unknown> = typeof config.type === "string"
    ? { layers: [config] }
    : config;
  const layersJson = cfg.layers;
  if (!Array.isArray(layersJson)) {
    throw new TypeError(
      `layers: expected an array of layer definitions, got ${
        shown(layersJson)
      }`,
    );
  }
  if (layersJson.length === 0) {
    throw new TypeError("layers: a network needs at least one layer");
  }
  const rows = gridField(cfg, "grid_rows", 1)!;
  const cols = gridField(cfg, "grid_cols", 1)!;
  const perCell = gridField(
    cfg,
    "layers_per_cell",
    layersJson.length % (rows * cols) === 0
      ? layersJson.length / (rows * cols)
      : undefined,
  );
  const expected = perCell === undefined ? undefined : rows * cols * perCell;
  if (perCell === undefined || expected !== layersJson.length) {
    throw new TypeError(
      `layers: expected ${
        expected ?? `a multiple of ${rows * cols}`
      } entries (grid_rows ${rows} × grid_cols ${cols} × layers_per_cell ${
        perCell ?? "?"
      }), got ${layersJson.length}`,
    );
  }
  const inputSize = gridField(cfg, "input_size", undefined);

  const layers: ParsedLayer[] = [];
  let size = inputSize;
  let previousInputSize: number | undefined;
  for (let i = 0; i < layersJson.length; i++) {
    const p = parseLayer(lookup, layersJson[i], `layers[${i}]`, size, {
      previousInputSize,
    });
    layers.push(p);
    previousInputSize = p.inputSize;
    size = p.outputSize;
  }

  const netInput = inputSize ?? layers[0].inputSize;
  const normalized: NetworkConfig = {
    grid_rows: rows,
    grid_cols: cols,
    layers_per_cell: perCell,
    ...(netInput !== undefined ? { input_size: netInput } : {}),
    layers: [],
  };
  for (const [k, v] of Object.entries(cfg)) {
    if (!NETWORK_FIELDS.includes(k)) setOwn(normalized, k, v);
  }
  normalized.layers = layers.map((l) => l.plugin.toJSON(l.cfg));
  return {
    gridRows: rows,
    gridCols: cols,
    layersPerCell: perCell,
    inputSize: netInput,
    outputSize: size,
    layers,
    config: normalized,
  };
}

/**
 * The parameters of one parsed layer with names relative to its scope.
 * Containers use it for their children (and prefix the names).
 *
 * @param layer A parsed layer.
 * @returns Its parameter specs.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { layerParams, parseLayer } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const p = parseLayer(defaultRegistry(), { type: "dense", input_size: 3, output_size: 2 }, "x");
 * assert(layerParams(p)[0].shape.join() === "2,3");
 * ```
 */
export function layerParams(layer: ParsedLayer): ParamSpec[] {
  return layer.plugin.params(layer.cfg);
}

/**
 * Parameter specs with a prefix added to every name.
 *
 * @param prefix The prefix without the trailing dot (`branches.0`).
 * @param specs Specs relative to the child.
 * @returns Specs relative to the parent.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { prefixParams } from "@modelhost/modelhost/core";
 * const s = prefixParams("gate", [{ name: "weight", shape: [2, 4] }]);
 * assert(s[0].name === "gate.weight");
 * ```
 */
export function prefixParams(prefix: string, specs: ParamSpec[]): ParamSpec[] {
  return specs.map((s) => ({ ...s, name: `${prefix}.${s.name}` }));
}

function fanIn(shape: readonly number[]): number {
  return Math.max(
    1,
    shape.length >= 2 ? shape[shape.length - 1] : shape[0] ?? 1,
  );
}

/**
 * Fills one parameter the default way for its `init` kind: `zeros`, `ones`,
 * `normal` (σ = 1/√fan_in) or `uniform` (±1/√fan_in, PyTorch's `Linear`
 * default). Without a kind, matrices are `uniform` and vectors `zeros`.
 *
 * @param spec The parameter.
 * @param rng The generator to draw from.
 * @returns The values.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { defaultInit } from "@modelhost/modelhost/core";
 * import { createRng } from "@modelhost/modelhost/core";
 * const v = defaultInit({ name: "w", shape: [2, 3], init: "ones" }, createRng(1));
 * assert(v.length === 6 && v[5] === 1);
 * ```
 */
export function defaultInit(spec: ParamSpec, rng: Rng): Float32Array {
  const n = spec.shape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(n);
  const kind = spec.init ?? (spec.shape.length >= 2 ? "uniform" : "zeros");
  const bound = 1 / Math.sqrt(fanIn(spec.shape));
  if (kind === "ones") out.fill(1);
  else if (kind === "normal") {
    for (let i = 0; i < n; i++) out[i] = rng.normal() * bound;
  } else if (kind === "uniform") {
    for (let i = 0; i < n; i++) out[i] = (2 * rng.next() - 1) * bound;
  }
  return out;
}

/**
 * Seeded initial weights of one parsed layer, names relative to its scope:
 * the plugin's `init` when it has one, else {@link defaultInit} per
 * parameter. Containers call it for their children.
 *
 * @param layer A parsed layer.
 * @param rng The generator; draws happen in parameter order.
 * @returns One array per parameter, in `params()` order.
 * @throws {TypeError} When a plugin's `init` returns a wrong length (a plugin bug).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { initLayer, parseLayer } from "@modelhost/modelhost/core";
 * import { createRng } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const p = parseLayer(defaultRegistry(), { type: "dense", input_size: 3, output_size: 2 }, "x");
 * assert(initLayer(p, createRng(1)).get("weight")!.length === 6);
 * ```
 */
export function initLayer(
  layer: ParsedLayer,
  rng: Rng,
): Map<string, Float32Array> {
  const specs = layer.plugin.params(layer.cfg);
  const made = layer.plugin.init?.(layer.cfg, rng);
  const out = new Map<string, Float32Array>();
  for (const s of specs) {
    const v = made ? made.get(s.name) : defaultInit(s, rng);
    if (v === undefined) {
      if (s.optional) continue;
      throw new TypeError(
        `${
          layer.path ?? layer.plugin.type
        }: init of "${layer.plugin.type}" made no "${s.name}"`,
      );
    }
    const n = s.shape.reduce((a, b) => a * b, 1);
    if (v.length !== n) {
      throw new TypeError(
        `${
          layer.path ?? layer.plugin.type
        }: init of "${layer.plugin.type}" made ${v.length} values for "${s.name}" [${
          s.shape.join(", ")
        }], expected ${n}`,
      );
    }
    out.set(s.name, v);
  }
  return out;
}

/** The seed of top-level layer `i`'s generator, so layers draw independently. */
function layerSeed(seed: number, i: number): number {
  return (Math.imul(seed >>> 0, 0x2c1b3c6d) ^ Math.imul(i + 1, 0x9e3779b9)) >>>
    0;
}

/**
 * Every parameter of a parsed network with its full name.
 *
 * @param spec The parsed network.
 * @returns Specs named `layers.{i}.{name}`, in layer order.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { networkParams, parseNetwork } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const spec = parseNetwork(defaultRegistry(), { input_size: 2, layers: [{ type: "dense", output_size: 3 }] });
 * assert(networkParams(spec).map((p) => p.name).join() === "layers.0.weight,layers.0.bias");
 * ```
 */
export function networkParams(spec: NetworkSpec): ParamSpec[] {
  return spec.layers.flatMap((l, i) =>
    prefixParams(`layers.${i}`, layerParams(l))
  );
}

function specOf(lookup: LayerLookup, config: unknown): NetworkSpec {
  return parseNetwork(lookup, config);
}

/**
 * Seeded initial weights for a whole network (F32). The same config and seed
 * always give the same bytes; each top-level layer draws from its own
 * generator, so changing one layer leaves the others' weights as they were.
 *
 * @param lookup The registry.
 * @param config The network config (or a bare layer definition).
 * @param seed Any integer (taken modulo 2^32).
 * @returns Tensors by full name, in parameter order.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const w = initNetwork(defaultRegistry(), { input_size: 4, layers: [{ type: "dense", output_size: 2 }] }, 7);
 * assert(w.get("layers.0.weight")!.shape.join() === "2,4");
 * ```
 */
export function initNetwork(
  lookup: LayerLookup,
  config: unknown,
  seed: number,
): Map<string, Tensor> {
  const spec = specOf(lookup, config);
  const out = new Map<string, Tensor>();
  spec.layers.forEach((layer, i) => {
    const values = initLayer(layer, createRng(layerSeed(seed, i)));
    for (const s of layerParams(layer)) {
      const v = values.get(s.name);
      if (!v) continue;
      const name = `layers.${i}.${s.name}`;
      out.set(name, tensorFromF32(name, v, s.shape));
    }
  });
  return out;
}

/**
 * Compares tensors with a network's parameters: what is missing, what is
 * extra, what has the wrong shape. {@link buildNetwork} throws on missing
 * and mis-shaped tensors and ignores extra ones; this reports all three.
 *
 * @param lookup The registry.
 * @param config The network config.
 * @param tensors Tensors by full name.
 * @returns The findings (all empty when the tensors fit).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { checkNetworkTensors, initNetwork } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * const cfg = { input_size: 4, layers: [{ type: "dense", output_size: 2 }] };
 * const w = initNetwork(reg, cfg, 1);
 * w.delete("layers.0.bias");
 * assert(checkNetworkTensors(reg, cfg, w).missing[0] === "layers.0.bias");
 * ```
 */
export function checkNetworkTensors(
  lookup: LayerLookup,
  config: unknown,
  tensors: ReadonlyMap<string, { shape: readonly number[] }>,
): TensorCheck {
  const specs = networkParams(specOf(lookup, config));
  const known = new Set(specs.map((s) => s.name));
  const result: TensorCheck = { missing: [], extra: [], wrongShape: [] };
  for (const s of specs) {
    const t = tensors.get(s.name);
    if (!t) {
      if (!s.optional) result.missing.push(s.name);
    } else if (
      t.shape.length !== s.shape.length ||
      t.shape.some((d, i) => d !== s.shape[i])
    ) {
      result.wrongShape.push({
        name: s.name,
        expected: [...s.shape],
        actual: [...t.shape],
      });
    }
  }
  for (const name of tensors.keys()) {
    if (!known.has(name)) result.extra.push(name);
  }
  return result;
}

/**
 * Binds a network config to tensors. Every layer reads its weights here, so
 * a missing or mis-shaped tensor throws now (a `TypeError` naming the full
 * tensor path), not on the first forward. Tensors may be in any dtype with a
 * decoder; extra tensors are ignored (see {@link checkNetworkTensors}).
 *
 * @param lookup The registry.
 * @param config The network config (or a bare layer definition).
 * @param tensors Tensors by full name (`layers.0.weight`).
 * @returns The network.
 * @throws {TypeError} On a wrong config or a missing / mis-shaped tensor.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { floatTensor, toFloat32 } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * const cfg = { input_size: 2, layers: [{ type: "dense", output_size: 1, bias: false }] };
 * const w = initNetwork(reg, cfg, 3);
 * const net = buildNetwork(reg, cfg, w);
 * const y = net.forward(floatTensor(new Float32Array([1, 0]), [1, 2]));
 * assert(y.data[0] === toFloat32(w.get("layers.0.weight")!)[0]);
 * ```
 */
export function buildNetwork(
  lookup: LayerLookup,
  config: unknown,
  tensors: ReadonlyMap<string, Tensor>,
): Network {
  const spec = specOf(lookup, config);
  const scope = createScope(tensors);
  const layers = spec.layers.map((l, i) =>
    l.plugin.build(l.cfg, scope.at(`layers.${i}`))
  );
  // Layers whose output goes only to the next layer, both able to run
  // into a buffer (e.g. dense → ReLU → dense on the native backend), keep
  // that output in one of two buffers reused across calls (layer i writes
  // buffer i mod 2, so a layer never writes the buffer it reads); the
  // last layer's output is always the layer's own new array.
  const inBuffer = layers.map((l, i) =>
    l.forwardInto !== undefined && layers[i + 1]?.forwardInto !== undefined
  );
  const buffers = [new Float32Array(0), new Float32Array(0)];
  const scratchOf = (slot: number) => (length: number): Float32Array => {
    if (buffers[slot].length < length) {
      buffers[slot] = new Float32Array(new ArrayBuffer(length * 4));
    }
    return buffers[slot].subarray(0, length);
  };
  const scratch = [scratchOf(0), scratchOf(1)];
  const net: Network = {
    config: spec.config,
    spec,
    layers,
    forward(x, state, options) {
      if (!x || !(x.data instanceof Float32Array) || !Array.isArray(x.shape)) {
        throw new TypeError(
          "Network input: expected a FloatTensor { data: Float32Array, shape: number[] }",
        );
      }
      if (state && state.layers?.length !== layers.length) {
        throw new TypeError(
          `Network state has ${
            state.layers?.length ?? 0
          } layer states, the network has ${layers.length} layers; use createState()`,
        );
      }
      const mask = options?.attentionMask;
      if (mask !== undefined && typeof mask?.length !== "number") {
        throw new TypeError(
          "Network forward: attentionMask must be an array of batch × seq numbers",
        );
      }
      let cur = x;
      let previous: FloatTensor | undefined;
      for (let i = 0; i < layers.length; i++) {
        const out =
          (inBuffer[i] ? layers[i].forwardInto!(cur, scratch[i & 1]) : null) ??
            layers[i].forward(cur, state?.layers[i], {
              previousInput: previous,
              ...(mask !== undefined ? { attentionMask: mask } : {}),
            });
        previous = cur;
        cur = out;
      }
      return cur;
    },
    createState: () => ({ layers: layers.map(() => ({})) }),
    paramSpecs: () => networkParams(spec),
    tensors,
  };
  return net;
}
