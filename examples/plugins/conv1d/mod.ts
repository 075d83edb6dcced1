/**
 * A modelhost layer plugin: `conv1d`, a 1-D convolution over a sequence,
 * written against the package's public exports only, as an example of a
 * third-party layer (see README.md).
 *
 * Layout: the input is `[batch, length, in_channels]` (channels last, like
 * every modelhost layer: features are the last dimension) or
 * `[length, in_channels]` for one sequence; the output is
 * `[batch, out_length, out_channels]` (or `[out_length, out_channels]`),
 * with `out_length = floor((length + pad_left + pad_right - dilation ·
 * (kernel_size - 1) - 1) / stride) + 1`.
 *
 * Parameters: `weight` `[out_channels, in_channels / groups, kernel_size]`
 * (PyTorch's and ONNX's layout) and `bias` `[out_channels]`.
 *
 * ONNX export (`toOnnx`) lowers the layer to `Transpose → Conv → Transpose`;
 * export the network with `sequence: true` so the graph input is
 * `[batch, length, channels]`.
 *
 * Config fields (PyTorch's `nn.Conv1d` names): `in_channels` (inferred
 * from the previous layer when left out), `out_channels`, `kernel_size`,
 * `stride` (1), `padding` (0; a number of zeros on each side, `"valid"` for
 * none, or `"same"` for an output as long as the input, stride 1 only,
 * with the odd zero on the right as PyTorch does), `dilation` (1),
 * `groups` (1), `bias` (true).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork, createRegistry, floatTensor, initNetwork } from "@modelhost/modelhost";
 * import { conv1dLayer } from "./mod.ts";
 *
 * const reg = createRegistry().use(conv1dLayer);
 * const config = {
 *   input_size: 3,
 *   layers: [{ type: "conv1d", out_channels: 8, kernel_size: 3, padding: "same" }],
 * };
 * const net = buildNetwork(reg, config, initNetwork(reg, config, 42));
 * const y = net.forward(floatTensor(new Float32Array(2 * 10 * 3), [2, 10, 3]));
 * assert(y.shape.join() === "2,10,8");
 * ```
 *
 * @module
 */

import {
  type FloatTensor,
  floatTensor,
  type LayerConfig,
  type LayerPlugin,
  type ParseContext,
} from "@modelhost/modelhost";

/** Normalized config of a `conv1d` layer. */
export interface Conv1dConfig {
  /** Where the layer sits, for messages (`layers[2]`). */
  path: string;
  /** Input channels (the input's last dimension). */
  inChannels: number;
  /** Output channels (the output's last dimension). */
  outChannels: number;
  /** Taps per filter. */
  kernelSize: number;
  /** Step between output positions. */
  stride: number;
  /** Zeros before the sequence, or `"same"` / `"valid"` as configured. */
  padding: number | "same" | "valid";
  /** Spacing between taps. */
  dilation: number;
  /** Channel groups: each output channel sees `inChannels / groups` inputs. */
  groups: number;
  /** Whether there is a bias. */
  bias: boolean;
}

const FIELDS = [
  "in_channels",
  "out_channels",
  "kernel_size",
  "stride",
  "padding",
  "dilation",
  "groups",
  "bias",
];

function shown(v: unknown): string {
  return v === undefined ? "nothing" : JSON.stringify(v) ?? String(v);
}

function positive(
  json: LayerConfig,
  field: string,
  path: string,
  fallback?: number,
): number {
  const v = json[field] ?? fallback;
  if (v === undefined) {
    throw new TypeError(
      `${path}.${field}: required: expected a positive integer`,
    );
  }
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
    throw new TypeError(
      `${path}.${field}: expected a positive integer, got ${shown(v)}`,
    );
  }
  return v;
}

/**
 * Zeros added before and after the sequence.
 *
 * @param cfg The layer's config.
 * @returns `[left, right]`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { conv1dPadding } from "./mod.ts";
 * const cfg = { path: "x", inChannels: 1, outChannels: 1, kernelSize: 4, stride: 1, padding: "same" as const, dilation: 1, groups: 1, bias: true };
 * assert(conv1dPadding(cfg).join() === "1,2");
 * ```
 */
export function conv1dPadding(cfg: Conv1dConfig): [number, number] {
  if (cfg.padding === "valid") return [0, 0];
  if (cfg.padding === "same") {
    const total = cfg.dilation * (cfg.kernelSize - 1);
    const left = Math.floor(total / 2);
    return [left, total - left];
  }
  return [cfg.padding, cfg.padding];
}

/**
 * The output length for an input length.
 *
 * @param cfg The layer's config.
 * @param length The input's length.
 * @returns The output's length (0 or less when the input is too short).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { conv1dOutputLength } from "./mod.ts";
 * const cfg = { path: "x", inChannels: 1, outChannels: 1, kernelSize: 3, stride: 2, padding: 1, dilation: 1, groups: 1, bias: true };
 * assert(conv1dOutputLength(cfg, 9) === 5);
 * ```
 */
export function conv1dOutputLength(cfg: Conv1dConfig, length: number): number {
  const [left, right] = conv1dPadding(cfg);
  const span = cfg.dilation * (cfg.kernelSize - 1) + 1;
  return Math.floor((length + left + right - span) / cfg.stride) + 1;
}

function parse(json: LayerConfig, ctx: ParseContext): Conv1dConfig {
  const path = ctx.path;
  for (const key of Object.keys(json)) {
    if (key !== "type" && !FIELDS.includes(key)) {
      throw new TypeError(
        `${path}.${key}: unknown field for a "conv1d" layer (known fields: ${
          FIELDS.join(", ")
        })`,
      );
    }
  }
  const inChannels = positive(json, "in_channels", path, ctx.inputSize);
  if (
    json.in_channels !== undefined && ctx.inputSize !== undefined &&
    json.in_channels !== ctx.inputSize
  ) {
    throw new TypeError(
      `${path}.in_channels: ${json.in_channels} does not match the ${ctx.inputSize} features the previous layer outputs`,
    );
  }
  const outChannels = positive(
    json,
    "out_channels",
    path,
    ctx.expectedOutputSize,
  );
  const groups = positive(json, "groups", path, 1);
  for (
    const [field, n] of [["in_channels", inChannels], [
      "out_channels",
      outChannels,
    ]] as const
  ) {
    if (n % groups !== 0) {
      throw new TypeError(
        `${path}.${field}: ${n} is not divisible by groups (${groups})`,
      );
    }
  }
  const stride = positive(json, "stride", path, 1);
  let padding: Conv1dConfig["padding"];
  const p = json.padding ?? 0;
  if (p === "same" || p === "valid") padding = p;
  else if (typeof p === "number" && Number.isSafeInteger(p) && p >= 0) {
    padding = p;
  } else {
    throw new TypeError(
      `${path}.padding: expected a non-negative integer, "same" or "valid", got ${
        shown(p)
      }`,
    );
  }
  if (padding === "same" && stride !== 1) {
    throw new TypeError(
      `${path}.padding: "same" needs stride 1, the layer has stride ${stride}`,
    );
  }
  const bias = json.bias ?? true;
  if (typeof bias !== "boolean") {
    throw new TypeError(
      `${path}.bias: expected true or false, got ${shown(bias)}`,
    );
  }
  return {
    path,
    inChannels,
    outChannels,
    kernelSize: positive(json, "kernel_size", path),
    stride,
    padding,
    dilation: positive(json, "dilation", path, 1),
    groups,
    bias,
  };
}

/**
 * Runs the convolution on raw arrays: `x` `[batch, length, inChannels]`,
 * `weight` `[outChannels, inChannels / groups, kernelSize]`. Sums in double
 * precision, rounds once to F32.
 *
 * @param cfg The layer's config.
 * @param x The input values.
 * @param batch Sequences in `x`.
 * @param length Positions per sequence.
 * @param weight The filters.
 * @param bias One value per output channel, or `undefined`.
 * @returns The output values, `[batch, outLength, outChannels]`.
 * @throws {RangeError} When the input is too short for one output position.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { conv1dForward } from "./mod.ts";
 * const cfg = { path: "x", inChannels: 1, outChannels: 1, kernelSize: 2, stride: 1, padding: 0, dilation: 1, groups: 1, bias: false };
 * const y = conv1dForward(cfg, Float32Array.of(1, 2, 3), 1, 3, Float32Array.of(1, 10), undefined);
 * assert(y.join() === "21,32");
 * ```
 */
export function conv1dForward(
  cfg: Conv1dConfig,
  x: Float32Array,
  batch: number,
  length: number,
  weight: Float32Array,
  bias: Float32Array | undefined,
): Float32Array {
  const outLength = conv1dOutputLength(cfg, length);
  if (outLength < 1) {
    const [left, right] = conv1dPadding(cfg);
    throw new RangeError(
      `${cfg.path}: an input of length ${length} is too short for conv1d (kernel_size ${cfg.kernelSize}, dilation ${cfg.dilation}, padding ${left}+${right} need at least ${
        cfg.dilation * (cfg.kernelSize - 1) + 1 - left - right
      })`,
    );
  }
  const { inChannels: cin, outChannels: cout, kernelSize: k } = cfg;
  const inPerGroup = cin / cfg.groups, outPerGroup = cout / cfg.groups;
  const [left] = conv1dPadding(cfg);
  const y = new Float32Array(batch * outLength * cout);
  for (let b = 0; b < batch; b++) {
    const xb = b * length * cin;
    for (let t = 0; t < outLength; t++) {
      const start = t * cfg.stride - left;
      const yRow = (b * outLength + t) * cout;
      for (let o = 0; o < cout; o++) {
        const c0 = Math.floor(o / outPerGroup) * inPerGroup;
        let acc = bias ? bias[o] : 0;
        for (let ci = 0; ci < inPerGroup; ci++) {
          const wRow = (o * inPerGroup + ci) * k;
          for (let j = 0; j < k; j++) {
            const pos = start + j * cfg.dilation;
            if (pos < 0 || pos >= length) continue;
            acc += x[xb + pos * cin + c0 + ci] * weight[wRow + j];
          }
        }
        y[yRow + o] = acc;
      }
    }
  }
  return y;
}

/**
 * The `conv1d` layer plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createRegistry } from "@modelhost/modelhost";
 * import { conv1dLayer } from "./mod.ts";
 * assert(createRegistry().use(conv1dLayer).layer("conv1d") === conv1dLayer);
 * ```
 */
export const conv1dLayer: LayerPlugin<Conv1dConfig> = {
  kind: "layer",
  type: "conv1d",
  description:
    "1-D convolution over [batch, length, channels] (stride, padding, dilation, groups)",
  parse,
  inputSize: (cfg) => cfg.inChannels,
  outputSize: (cfg) => cfg.outChannels,
  toJSON: (cfg) => ({
    type: "conv1d",
    in_channels: cfg.inChannels,
    out_channels: cfg.outChannels,
    kernel_size: cfg.kernelSize,
    stride: cfg.stride,
    padding: cfg.padding,
    dilation: cfg.dilation,
    groups: cfg.groups,
    bias: cfg.bias,
  }),
  params: (cfg) => [
    {
      name: "weight",
      shape: [cfg.outChannels, cfg.inChannels / cfg.groups, cfg.kernelSize],
      init: "uniform",
    },
    ...(cfg.bias
      ? [{ name: "bias", shape: [cfg.outChannels], init: "uniform" as const }]
      : []),
  ],
  init(cfg, rng) {
    // PyTorch's Conv1d default: U(−1/√fan_in, 1/√fan_in), fan_in = in/groups · k.
    const bound = 1 / Math.sqrt((cfg.inChannels / cfg.groups) * cfg.kernelSize);
    const draw = (n: number) => {
      const a = new Float32Array(n);
      for (let i = 0; i < n; i++) a[i] = (2 * rng.next() - 1) * bound;
      return a;
    };
    const out = new Map([[
      "weight",
      draw(cfg.outChannels * (cfg.inChannels / cfg.groups) * cfg.kernelSize),
    ]]);
    if (cfg.bias) out.set("bias", draw(cfg.outChannels));
    return out;
  },
  build(cfg, weights) {
    const weight = weights.getF32("weight", [
      cfg.outChannels,
      cfg.inChannels / cfg.groups,
      cfg.kernelSize,
    ]);
    const bias = cfg.bias
      ? weights.getF32("bias", [cfg.outChannels])
      : undefined;
    return {
      forward(x: FloatTensor): FloatTensor {
        const rank = x.shape.length;
        if (
          (rank !== 2 && rank !== 3) || x.shape[rank - 1] !== cfg.inChannels
        ) {
          throw new TypeError(
            `${cfg.path}: conv1d expects [batch, length, ${cfg.inChannels}] or [length, ${cfg.inChannels}], got [${
              x.shape.join(", ")
            }]`,
          );
        }
        const batch = rank === 3 ? x.shape[0] : 1;
        const length = x.shape[rank - 2];
        const y = conv1dForward(cfg, x.data, batch, length, weight, bias);
        const outLength = conv1dOutputLength(cfg, length);
        return floatTensor(
          y,
          rank === 3
            ? [batch, outLength, cfg.outChannels]
            : [outLength, cfg.outChannels],
        );
      },
    };
  },
  toOnnx(g, cfg, weights, input) {
    // ONNX Conv wants [batch, channels, length]: transpose in and out.
    const x = g.op("Transpose", [input], { perm: [0, 2, 1] });
    const w = g.weight(weights, "weight", {
      shape: [cfg.outChannels, cfg.inChannels / cfg.groups, cfg.kernelSize],
    });
    const inputs = [x, w];
    if (cfg.bias) {
      inputs.push(g.weight(weights, "bias", { shape: [cfg.outChannels] }));
    }
    const y = g.op("Conv", inputs, {
      kernel_shape: [cfg.kernelSize],
      strides: [cfg.stride],
      pads: conv1dPadding(cfg),
      dilations: [cfg.dilation],
      group: cfg.groups,
    });
    return g.op("Transpose", [y], { perm: [0, 2, 1] });
  },
};

/**
 * Old name of {@link conv1dLayer}.
 *
 * @deprecated Use {@link conv1dLayer}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { conv1d, conv1dLayer } from "./mod.ts";
 * assert(conv1d === conv1dLayer);
 * ```
 */
export const conv1d: LayerPlugin<Conv1dConfig> = conv1dLayer;

export default conv1dLayer;
