/**
 * Checks any layer plugin can run: config normalization, seeded init,
 * parameter shapes, forward shape and determinism, missing-weight errors.
 *
 * @module
 */

import {
  assert,
  assertEquals,
  AssertionError,
  assertThrows,
} from "@std/assert";
import type { LayerConfig } from "../core/model.ts";
import {
  buildNetwork,
  initNetwork,
  type Network,
  parseNetwork,
} from "../core/network.ts";
import type { LayerPlugin } from "../core/plugin.ts";
import {
  type FloatTensor,
  floatTensor,
  type Tensor,
  toFloat32,
} from "../core/tensor.ts";
import { createRegistry, type Registry } from "../registry.ts";

/** Options of {@link assertLayerPlugin}. */
export interface LayerCheckOptions {
  /**
   * The shape of the input to run, feature dimension last
   * (`[batch, features]`, `[batch, seq, features]`).
   */
  inputShape: number[];
  /** The output shape the forward pass must produce, when known. */
  outputShape?: number[];
  /**
   * The registry to parse with; it must hold the plugin (and any layer
   * types a container config names).
   * @default {createRegistry().use(plugin)}
   */
  registry?: Registry;
  /** Seed of the initial weights. @default {0} */
  seed?: number;
  /**
   * The input values.
   * @default {0.1 + 2 * cos(i), i = 0, 1, ... (deterministic, no RNG)}
   */
  input?: Float32Array;
}

/** What {@link assertLayerPlugin} built and ran. */
export interface LayerCheck {
  /** A one-layer network around the config. */
  network: Network;
  /** Its seeded initial weights, by full name (`layers.0.weight`). */
  weights: Map<string, Tensor>;
  /** The input that was run. */
  input: FloatTensor;
  /** The output of the forward pass. */
  output: FloatTensor;
}

/**
 * The deterministic test input the layer checks use: `0.1 + 2 * cos(i)`.
 *
 * @param shape Its shape.
 * @returns A float tensor of that shape.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { cosineInput } from "@modelhost/modelhost/testing";
 * const x = cosineInput([2, 3]);
 * assert(x.data.length === 6 && Math.abs(x.data[0] - 2.1) < 1e-6);
 * ```
 */
export function cosineInput(shape: number[]): FloatTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = 0.1 + 2 * Math.cos(i);
  return floatTensor(data, shape);
}

function sameTensors(
  a: Map<string, Tensor>,
  b: Map<string, Tensor>,
): boolean {
  if (a.size !== b.size) return false;
  for (const [k, t] of a) {
    const u = b.get(k);
    if (!u || u.bytes.byteLength !== t.bytes.byteLength) return false;
    for (let i = 0; i < t.bytes.byteLength; i++) {
      if (t.bytes[i] !== u.bytes[i]) return false;
    }
  }
  return true;
}

/**
 * Runs the checks every layer plugin should pass, on one config, as a
 * one-layer network:
 *
 * - the registry resolves the config's type to this plugin;
 * - the normalized config (`toJSON`) parses again to the same JSON;
 * - `initNetwork` gives exactly the parameters `params()` declares, with
 *   their shapes, F32 and finite; the same seed gives the same bytes, and a
 *   different seed different ones when any parameter is randomly initialized;
 * - the forward pass returns the expected shape (its last dimension is
 *   `outputSize` when the plugin knows it), finite values, the same values
 *   on a second call, and leaves its input untouched;
 * - building without a required weight throws a `TypeError` naming it.
 *
 * @param plugin The layer plugin.
 * @param config One layer definition (`{ type: "conv1d", ... }`).
 * @param options The input shape and, optionally, the output shape.
 * @returns The network, weights, input and output, for value checks.
 * @throws {AssertionError} On the first failed check.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { assertLayerPlugin } from "@modelhost/modelhost/testing";
 * import { denseLayer } from "@modelhost/modelhost/layers";
 * const { output } = assertLayerPlugin(denseLayer, { type: "dense", output_size: 3 }, {
 *   inputShape: [2, 4],
 *   outputShape: [2, 3],
 * });
 * assert(output.data.length === 6);
 * ```
 */
export function assertLayerPlugin(
  plugin: LayerPlugin<unknown>,
  config: LayerConfig,
  options: LayerCheckOptions,
): LayerCheck {
  const reg = options.registry ?? createRegistry().use(plugin);
  assert(
    reg.layer(config.type) === plugin,
    `the registry resolves "${config.type}" to layer "${
      reg.layer(config.type).type
    }", not to "${plugin.type}"`,
  );
  const features = options.inputShape.at(-1);
  const netConfig = { input_size: features, layers: [config] };

  const spec = parseNetwork(reg, netConfig);
  const parsed = spec.layers[0];
  const json = plugin.toJSON(parsed.cfg);
  const again = parseNetwork(reg, { input_size: features, layers: [json] });
  assertEquals(
    plugin.toJSON(again.layers[0].cfg),
    json,
    `layer "${plugin.type}": toJSON() of the normalized config does not parse back to itself`,
  );

  const seed = options.seed ?? 0;
  const weights = initNetwork(reg, netConfig, seed);
  const specs = spec.layers.flatMap((l, i) =>
    l.plugin.params(l.cfg).map((s) => ({ ...s, name: `layers.${i}.${s.name}` }))
  );
  assertEquals(
    [...weights.keys()].sort(),
    specs.filter((s) => !s.optional || weights.has(s.name)).map((s) => s.name)
      .sort(),
    `layer "${plugin.type}": init made other tensors than params() declares`,
  );
  for (const s of specs) {
    const t = weights.get(s.name);
    if (!t) continue;
    assertEquals(t.shape, s.shape, `param "${s.name}": shape`);
    assertEquals(t.dtype, "F32", `param "${s.name}": dtype`);
    const v = toFloat32(t);
    const bad = v.findIndex((x) => !Number.isFinite(x));
    assert(bad < 0, `param "${s.name}": element ${bad} is ${v[bad]}`);
  }
  assert(
    sameTensors(weights, initNetwork(reg, netConfig, seed)),
    `layer "${plugin.type}": init with seed ${seed} gave different weights on a second call`,
  );
  const random = specs.some((s) => s.init === "normal" || s.init === "uniform");
  if (random) {
    assert(
      !sameTensors(weights, initNetwork(reg, netConfig, seed + 1)),
      `layer "${plugin.type}": seeds ${seed} and ${
        seed + 1
      } gave the same weights`,
    );
  }

  const network = buildNetwork(reg, netConfig, weights);
  const input = options.input
    ? floatTensor(options.input, options.inputShape)
    : cosineInput(options.inputShape);
  const kept = input.data.slice();
  const output = network.forward(input);
  assert(
    output.data instanceof Float32Array,
    `layer "${plugin.type}": forward returned no Float32Array`,
  );
  assertEquals(
    output.data.length,
    output.shape.reduce((a, b) => a * b, 1),
    `layer "${plugin.type}": output data does not fill its shape`,
  );
  if (options.outputShape) {
    assertEquals(output.shape, options.outputShape, "output shape");
  }
  const outSize = plugin.outputSize(parsed.cfg, parsed.inputSize);
  if (outSize !== undefined) {
    assertEquals(
      output.shape.at(-1),
      outSize,
      `layer "${plugin.type}": last output dimension vs outputSize()`,
    );
  }
  const bad = output.data.findIndex((x) => !Number.isFinite(x));
  assert(
    bad < 0,
    `layer "${plugin.type}": output element ${bad} is not finite`,
  );
  assertEquals(
    input.data,
    kept,
    `layer "${plugin.type}": forward changed its input`,
  );
  const second = network.forward(input);
  if (second.data.some((v, i) => !Object.is(v, output.data[i]))) {
    throw new AssertionError(
      `layer "${plugin.type}": a second forward on the same input gave different values`,
    );
  }

  const required = specs.find((s) => !s.optional);
  if (required) {
    const without = new Map(weights);
    without.delete(required.name);
    assertThrows(
      () => buildNetwork(reg, netConfig, without),
      TypeError,
      required.name,
    );
  }
  return { network, weights, input, output };
}
