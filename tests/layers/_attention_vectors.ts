/**
 * Loads tests/vectors/attention.json (made by tests/vectors/gen/attention.py)
 * and builds layers from its cases.
 */

import { assert } from "@std/assert";
import type { LayerConfig } from "../../core/model.ts";
import type { Layer, LayerPlugin, ParseContext } from "../../core/plugin.ts";
import { createScope } from "../../core/scope.ts";
import {
  type FloatTensor,
  floatTensor,
  type Tensor,
  tensorFromF32,
} from "../../core/tensor.ts";

/** A stored array. */
export interface Arr {
  shape: number[];
  data: number[];
}

/** One layer case: config, weights, input, PyTorch float64 output. */
export interface LayerCase {
  name: string;
  config: LayerConfig;
  weights: Record<string, Arr>;
  input: Arr;
  output: Arr;
}

/** The whole vectors file. */
export interface Vectors {
  rope: {
    head_dim: number;
    heads: number;
    positions: number[];
    input: number[];
    cases: {
      style: "neox" | "interleaved";
      theta: number;
      scaling: Record<string, unknown> | null;
      frequencies: number[];
      output: number[];
    }[];
  };
  attention: LayerCase[];
  block: LayerCase[];
}

/** The parsed vectors. */
export const VECTORS: Vectors = JSON.parse(
  await Deno.readTextFile(
    new URL("../vectors/attention.json", import.meta.url),
  ),
);

/** A parse context for a top-level layer. */
export function ctx(path = "layers[0]", inputSize?: number): ParseContext {
  return {
    path,
    inputSize,
    parseChild: () => {
      throw new Error("no children here");
    },
  };
}

/** The case's weights as F32 tensors under `prefix`. */
export function caseTensors(c: LayerCase, prefix = ""): Map<string, Tensor> {
  const m = new Map<string, Tensor>();
  for (const [name, a] of Object.entries(c.weights)) {
    const full = prefix + name;
    m.set(full, tensorFromF32(full, new Float32Array(a.data), a.shape));
  }
  return m;
}

/** Builds the case's layer with `plugin`. */
export function buildCase<C>(plugin: LayerPlugin<C>, c: LayerCase): Layer {
  const cfg = plugin.parse(c.config, ctx());
  return plugin.build(cfg, createScope(caseTensors(c)));
}

/** The case's input as a FloatTensor. */
export function caseInput(c: LayerCase): FloatTensor {
  return floatTensor(new Float32Array(c.input.data), [...c.input.shape]);
}

/**
 * Asserts `actual` is within `rtol` of `expected`, element by element,
 * relative to max(|expected|, 1% of max|expected|). The floor is there
 * because our intermediates are float32: an output that is a near-zero sum
 * of O(1) terms carries an absolute error of a few float32 ulps of those
 * terms (measured: max |error| / max |expected| ≤ 1e-7 on every case), so
 * its own magnitude is no yardstick. Returns the worst ratio seen.
 */
export function assertClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  rtol: number,
  what: string,
): number {
  assert(
    actual.length === expected.length,
    `${what}: ${actual.length} values, expected ${expected.length}`,
  );
  let scale = 0;
  for (let i = 0; i < expected.length; i++) {
    scale = Math.max(scale, Math.abs(expected[i]));
  }
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    const e = expected[i];
    const rel = Math.abs(actual[i] - e) / Math.max(Math.abs(e), 1e-2 * scale);
    if (!(rel <= rtol)) {
      throw new Error(
        `${what}: element ${i} is ${
          actual[i]
        }, expected ${e} (relative error ${rel})`,
      );
    }
    worst = Math.max(worst, rel);
  }
  return worst;
}
