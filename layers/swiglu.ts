/**
 * The `swiglu` layer, the Llama feed-forward block:
 * `y = down_proj(silu(gate_proj(x)) ⊙ up_proj(x))`.
 * Parameters `gate_proj.weight` `[hidden, d]`, `up_proj.weight`
 * `[hidden, d]`, `down_proj.weight` `[d, hidden]` (+ `.bias` each when
 * `bias` is true).
 *
 * Fields: `input_size` (d; inferred), `intermediate_size` (hidden; alias
 * `hidden_size`), `bias` (default false), `activation` of the gate
 * (default `"silu"`; `"gelu"` or `"gelu_tanh"` make it GeGLU, as
 * ModernBERT's MLP).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { floatTensor } from "@modelhost/modelhost/core";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * import { swigluLayer } from "@modelhost/modelhost/layers";
 * const reg = createRegistry().use(swigluLayer);
 * const cfg = { input_size: 4, layers: [{ type: "swiglu", intermediate_size: 8 }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 0));
 * assert(net.forward(floatTensor(new Float32Array(8), [2, 4])).shape.join() === "2,4");
 * ```
 *
 * @module
 */

import type { LayerPlugin, ParamSpec } from "../core/plugin.ts";
import { floatTensor } from "../core/tensor.ts";
import { applyActivation, siluMul } from "../kernels/activations.ts";
import { linear, linearMany } from "../kernels/linear.ts";
import { activationOnnx, linearOnnx } from "./_onnx.ts";
import {
  boolField,
  checkFeatures,
  choiceField,
  fieldError,
  layerFields,
  optPositiveInt,
  resolveSize,
  rowsOf,
} from "./_fields.ts";

/** Normalized config of a `swiglu` layer. */
export interface SwigluConfig {
  /** Where the layer sits, for messages. */
  path: string;
  /** Model width d (input and output features). */
  inputSize: number;
  /** Hidden width of the gate/up projections. */
  intermediateSize: number;
  /** Whether the three projections have biases. */
  bias: boolean;
  /** The gate's activation: `silu` (SwiGLU), `gelu` or `gelu_tanh` (GeGLU). */
  activation: SwigluActivation;
}

/** Activations of the gate a `swiglu` layer takes. */
export type SwigluActivation = "silu" | "gelu" | "gelu_tanh";

const PROJ = ["gate_proj", "up_proj", "down_proj"] as const;

/**
 * The `swiglu` layer plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { swigluLayer } from "@modelhost/modelhost/layers";
 * assert(swigluLayer.type === "swiglu");
 * ```
 */
export const swigluLayer: LayerPlugin<SwigluConfig> = {
  kind: "layer",
  type: "swiglu",
  description: "Gated feed-forward: down(silu(gate(x)) · up(x)) (Llama MLP)",
  parse(json, ctx) {
    const o = layerFields(json, ctx, "swiglu", [
      "input_size",
      "intermediate_size",
      "hidden_size",
      "bias",
      "activation",
    ]);
    const a = optPositiveInt(o, "intermediate_size", ctx.path);
    const b = optPositiveInt(o, "hidden_size", ctx.path);
    if (a !== undefined && b !== undefined && a !== b) {
      throw fieldError(
        ctx.path,
        "hidden_size",
        `expected ${a} (intermediate_size), got ${b}`,
      );
    }
    const hidden = a ?? b;
    if (hidden === undefined) {
      throw fieldError(
        ctx.path,
        "intermediate_size",
        "required: expected a positive integer",
      );
    }
    return {
      path: ctx.path,
      inputSize: resolveSize(o, "input_size", ctx, ctx.inputSize),
      intermediateSize: hidden,
      bias: boolField(o, "bias", ctx.path, false),
      activation: choiceField(
        o,
        "activation",
        ctx.path,
        ["silu", "gelu", "gelu_tanh"] as const,
        "silu",
      ),
    };
  },
  inputSize: (cfg) => cfg.inputSize,
  outputSize: (cfg) => cfg.inputSize,
  toJSON: (cfg) => ({
    type: "swiglu",
    input_size: cfg.inputSize,
    intermediate_size: cfg.intermediateSize,
    bias: cfg.bias,
    ...(cfg.activation !== "silu" ? { activation: cfg.activation } : {}),
  }),
  params(cfg) {
    const d = cfg.inputSize, h = cfg.intermediateSize;
    const specs: ParamSpec[] = [];
    for (const p of PROJ) {
      const [o, i] = p === "down_proj" ? [d, h] : [h, d];
      specs.push({ name: `${p}.weight`, shape: [o, i], init: "uniform" });
      if (cfg.bias) {
        specs.push({ name: `${p}.bias`, shape: [o] });
      }
    }
    return specs;
  },
  init(cfg, rng) {
    const d = cfg.inputSize, h = cfg.intermediateSize;
    const out = new Map<string, Float32Array>();
    for (const p of PROJ) {
      const [o, i] = p === "down_proj" ? [d, h] : [h, d];
      const bound = 1 / Math.sqrt(i);
      const draw = (n: number) => {
        const a = new Float32Array(n);
        for (let k = 0; k < n; k++) a[k] = (2 * rng.next() - 1) * bound;
        return a;
      };
      out.set(`${p}.weight`, draw(o * i));
      if (cfg.bias) out.set(`${p}.bias`, draw(o));
    }
    return out;
  },
  build(cfg, weights) {
    const d = cfg.inputSize, h = cfg.intermediateSize;
    const gate = weights.get("gate_proj.weight", [h, d]);
    const up = weights.get("up_proj.weight", [h, d]);
    const down = weights.get("down_proj.weight", [d, h]);
    const bias = (p: string, n: number) =>
      cfg.bias ? weights.getF32(`${p}.bias`, [n]) : undefined;
    const gb = bias("gate_proj", h), ub = bias("up_proj", h);
    const db = bias("down_proj", d);
    return {
      forward(x) {
        checkFeatures(x, d, cfg.path, "swiglu");
        const rows = rowsOf(x);
        const [g, u] = linearMany(x.data, rows, [gate, up], [gb, ub]);
        let a: Float32Array;
        if (cfg.activation === "silu") a = siluMul(g, u);
        else {
          a = applyActivation(g, h, cfg.activation);
          for (let i = 0; i < a.length; i++) a[i] *= u[i];
        }
        return floatTensor(
          linear(a, rows, down, db),
          x.shape.slice(),
        );
      },
    };
  },
  toOnnx(g, cfg, weights, input) {
    const d = cfg.inputSize, h = cfg.intermediateSize;
    const proj = (p: string, x: string, outIn: [number, number]) =>
      linearOnnx(
        g,
        weights,
        x,
        `${p}.weight`,
        cfg.bias ? `${p}.bias` : undefined,
        outIn,
      );
    const gate = activationOnnx(
      g,
      cfg.activation,
      proj("gate_proj", input, [h, d]),
      0,
    );
    const up = proj("up_proj", input, [h, d]);
    return proj("down_proj", g.op("Mul", [gate, up]), [d, h]);
  },
};

/**
 * Old name of {@link swigluLayer}.
 *
 * @deprecated Use {@link swigluLayer}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { swiglu, swigluLayer } from "@modelhost/modelhost/layers";
 * assert(swiglu === swigluLayer);
 * ```
 */
export const swiglu: LayerPlugin<SwigluConfig> = swigluLayer;
