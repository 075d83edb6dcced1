/**
 * Private helpers for container layers: parsing, building and running a
 * list of child layers in order, and per-child state.
 *
 * @module
 */

import { initLayer, layerParams, prefixParams } from "../core/network.ts";
import type {
  ForwardContext,
  Layer,
  LayerState,
  OnnxBuilder,
  OnnxLowerContext,
  ParamSpec,
  ParseContext,
  ParsedLayer,
  Scope,
} from "../core/plugin.ts";
import type { Rng } from "../core/rng.ts";
import type { FloatTensor } from "../core/tensor.ts";
import { fieldError, shown } from "./_fields.ts";

/** Child states stored under `key` in a container's state, made on first use. */
export function childStates(
  state: LayerState | undefined,
  key: string,
  n: number,
): (LayerState | undefined)[] {
  if (!state) return new Array(n).fill(undefined);
  let list = state[key] as LayerState[] | undefined;
  if (!Array.isArray(list) || list.length !== n) {
    list = Array.from({ length: n }, () => ({}));
    state[key] = list;
  }
  return list;
}

/** One child state stored under `key`, made on first use. */
export function childState(
  state: LayerState | undefined,
  key: string,
): LayerState | undefined {
  if (!state) return undefined;
  let s = state[key] as LayerState | undefined;
  if (!s || typeof s !== "object") {
    s = {};
    state[key] = s;
  }
  return s;
}

/**
 * Parses an array of layer definitions run one after another: child j's
 * input size is child j−1's output; the first child inherits the
 * container's previous-layer input size; the last gets the container's
 * expected output size.
 */
export function parseChain(
  list: unknown,
  field: string,
  ctx: ParseContext,
  inputSize: number | undefined,
  expectedOutputSize?: number,
): ParsedLayer[] {
  if (!Array.isArray(list) || list.length === 0) {
    throw fieldError(
      ctx.path,
      field,
      `expected a non-empty array of layer definitions, got ${shown(list)}`,
    );
  }
  const out: ParsedLayer[] = [];
  let size = inputSize, previous = ctx.previousInputSize;
  for (let j = 0; j < list.length; j++) {
    const p = ctx.parseChild(list[j], `${ctx.path}.${field}[${j}]`, size, {
      previousInputSize: previous,
      expectedOutputSize: j === list.length - 1
        ? expectedOutputSize
        : undefined,
    });
    out.push(p);
    previous = p.inputSize;
    size = p.outputSize;
  }
  return out;
}

/** Parameters of a chain, child j under `{prefix}.{j}.`. */
export function chainParams(prefix: string, chain: ParsedLayer[]): ParamSpec[] {
  return chain.flatMap((c, j) =>
    prefixParams(`${prefix}.${j}`, layerParams(c))
  );
}

/** Seeded init of a chain, children in order. */
export function chainInit(
  prefix: string,
  chain: ParsedLayer[],
  rng: Rng,
  into: Map<string, Float32Array> = new Map(),
): Map<string, Float32Array> {
  chain.forEach((c, j) => {
    for (const [k, v] of initLayer(c, rng)) into.set(`${prefix}.${j}.${k}`, v);
  });
  return into;
}

/** Builds a chain's children, child j on scope `{prefix}.{j}`. */
export function buildChain(
  prefix: string,
  chain: ParsedLayer[],
  weights: Scope,
): Layer[] {
  return chain.map((c, j) =>
    c.plugin.build(c.cfg, weights.at(`${prefix}.${j}`))
  );
}

/** Runs built children one after another, tracking each one's previous input. */
export function runChain(
  layers: Layer[],
  x: FloatTensor,
  states: (LayerState | undefined)[],
  ctx: ForwardContext | undefined,
): FloatTensor {
  let cur = x;
  let previous = ctx?.previousInput;
  for (let j = 0; j < layers.length; j++) {
    const out = layers[j].forward(cur, states[j], {
      previousInput: previous,
      // a padding mask holds for every layer of the chain
      ...(ctx?.attentionMask ? { attentionMask: ctx.attentionMask } : {}),
    });
    previous = cur;
    cur = out;
  }
  return cur;
}

/**
 * Lowers a chain to ONNX: child j on scope `{prefix}.{j}`, each told the
 * input of the child before it (the first, the container's previous input).
 */
export function lowerChain(
  g: OnnxBuilder,
  prefix: string,
  field: string,
  chain: ParsedLayer[],
  weights: Scope,
  input: string,
  ctx: OnnxLowerContext,
): string {
  let cur = input;
  let previous = ctx.previousInput;
  for (let j = 0; j < chain.length; j++) {
    const out = g.lower(chain[j], weights.at(`${prefix}.${j}`), cur, {
      path: chain[j].path ?? `${ctx.path}.${field}[${j}]`,
      previousInput: previous,
    });
    previous = cur;
    cur = out;
  }
  return cur;
}
