/**
 * Checking a bundle's models: tensors against the network's parameters,
 * NaN/Inf in weights and output, and a forward pass on a zero input.
 *
 * @module
 */

import type { Model } from "../../core/model.ts";
import {
  buildNetwork,
  checkNetworkTensors,
  type LayerLookup,
  networkParams,
  type NetworkSpec,
  parseNetwork,
} from "../../core/network.ts";
import {
  type FloatTensor,
  floatTensor,
  type Tensor,
  tensorFromF32,
  toFloat32,
} from "../../core/tensor.ts";
import { LAYER_PLUGINS } from "../../layers/mod.ts";
import { createRegistry } from "../../registry.ts";
import { tensorsOf, textOf } from "./_common.ts";
import type { BundleModelInput } from "./write.ts";
import { bundleModelIds, loadBundle } from "./read.ts";

/** Options of {@link validate}. */
export interface ValidateOptions {
  /**
   * The layer plugins to build the network with.
   * @default {a registry of the built-in layers}
   */
  registry?: LayerLookup;
  /** The input to run, instead of zeros of shape `[1, input_size]`. */
  input?: FloatTensor;
}

/** One thing {@link validate} found wrong. */
export interface ValidationProblem {
  /**
   * `config`: the network config does not parse; `missing` / `extra` /
   * `shape`: tensors against the network's parameters; `dtype`: a tensor
   * that cannot be widened to F32; `weights`: NaN or Inf in a parameter;
   * `forward`: the forward pass threw; `output`: NaN or Inf in the output.
   */
  kind:
    | "config"
    | "missing"
    | "extra"
    | "shape"
    | "dtype"
    | "weights"
    | "forward"
    | "output";
  /** The tensor concerned, when there is one. */
  tensor?: string;
  /** What is wrong, with the numbers. */
  message: string;
}

/** What {@link validate} reports about one model. */
export interface ValidationReport {
  /** The model id. */
  model: string;
  /** True when no problem was found. */
  ok: boolean;
  /** Every problem found, in the order above (config, tensors, weights, forward). */
  problems: ValidationProblem[];
  /** Shape of the forward output, when the forward ran. */
  outputShape?: number[];
}

function countNonFinite(v: Float32Array): { nan: number; inf: number } {
  let nan = 0, inf = 0;
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (x !== x) nan++;
    else if (x === Infinity || x === -Infinity) inf++;
  }
  return { nan, inf };
}

function nonFiniteText(c: { nan: number; inf: number }): string {
  return [c.nan ? `${c.nan} NaN` : "", c.inf ? `${c.inf} Inf` : ""]
    .filter((s) => s).join(" and ");
}

/**
 * Checks that a model's tensors fit its network and that the network runs:
 * compares the tensors with the parameters the config needs (missing, extra,
 * wrong shape), looks for NaN/Inf in the weights, then runs a forward pass
 * on a zero input (missing or unusable tensors replaced by zeros, so one
 * problem does not hide the others) and looks for NaN/Inf in the output.
 * Every problem is listed; nothing throws for a bad model.
 *
 * @param model A loaded model (or anything with `id`, `config`, `tensors`).
 * @param options The layer registry and the input to run.
 * @returns The report.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { validate } from "@modelhost/modelhost/formats/bundle";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const report = await validate({
 *   id: "m",
 *   config: { input_size: 2, layers: [{ type: "dense", output_size: 1 }] },
 *   tensors: [tensorFromF32("layers.0.weight", new Float32Array([1, NaN]), [1, 2])],
 * });
 * assert(!report.ok);
 * assert(report.problems.map((p) => p.kind).join() === "missing,weights,output");
 * ```
 */
export async function validate(
  model: BundleModelInput,
  options: ValidateOptions = {},
): Promise<ValidationReport> {
  const reg = options.registry ?? createRegistry().use(LAYER_PLUGINS);
  const problems: ValidationProblem[] = [];
  const report = (outputShape?: number[]): ValidationReport => ({
    model: model.id,
    ok: problems.length === 0,
    problems,
    ...(outputShape ? { outputShape } : {}),
  });
  let tensors: Map<string, Tensor>;
  try {
    tensors = await tensorsOf(model);
  } catch (e) {
    problems.push({ kind: "dtype", message: (e as Error).message });
    return report();
  }
  if (!model.config) {
    problems.push({
      kind: "config",
      message: `model "${model.id}" has no network config to run`,
    });
    return report();
  }
  let spec: NetworkSpec;
  try {
    spec = parseNetwork(reg, model.config);
  } catch (e) {
    problems.push({ kind: "config", message: (e as Error).message });
    return report();
  }
  const params = networkParams(spec);
  const check = checkNetworkTensors(reg, model.config, tensors);
  const unusable = new Set<string>();
  for (const name of check.missing) {
    const s = params.find((p) => p.name === name)!;
    problems.push({
      kind: "missing",
      tensor: name,
      message: `missing tensor "${name}" [${s.shape.join(", ")}]`,
    });
    unusable.add(name);
  }
  for (const name of check.extra) {
    problems.push({
      kind: "extra",
      tensor: name,
      message: `extra tensor "${name}": not a parameter of the network`,
    });
  }
  for (const w of check.wrongShape) {
    problems.push({
      kind: "shape",
      tensor: w.name,
      message: `tensor "${w.name}" has shape [${
        w.actual.join(", ")
      }], the network expects [${w.expected.join(", ")}]`,
    });
    unusable.add(w.name);
  }
  for (const p of params) {
    const t = tensors.get(p.name);
    if (!t || unusable.has(p.name)) continue;
    let values: Float32Array;
    try {
      values = toFloat32(t);
    } catch (e) {
      problems.push({
        kind: "dtype",
        tensor: p.name,
        message: `tensor "${p.name}": ${(e as Error).message}`,
      });
      unusable.add(p.name);
      continue;
    }
    const c = countNonFinite(values);
    if (c.nan || c.inf) {
      problems.push({
        kind: "weights",
        tensor: p.name,
        message: `tensor "${p.name}" holds ${
          nonFiniteText(c)
        } of ${values.length} values`,
      });
    }
  }
  // Run with zeros in place of what is missing or unusable.
  const bound = new Map(tensors);
  for (const p of params) {
    if (!unusable.has(p.name)) continue;
    const n = p.shape.reduce((a, b) => a * b, 1);
    bound.set(p.name, tensorFromF32(p.name, new Float32Array(n), p.shape));
  }
  const input = options.input ??
    floatTensor(new Float32Array(spec.inputSize ?? 1), [
      1,
      spec.inputSize ?? 1,
    ]);
  let y: FloatTensor;
  try {
    y = buildNetwork(reg, model.config, bound).forward(input);
  } catch (e) {
    problems.push({
      kind: "forward",
      message: `the forward pass on input [${input.shape.join(", ")}] failed: ${
        (e as Error).message
      }`,
    });
    return report();
  }
  const c = countNonFinite(y.data);
  if (c.nan || c.inf) {
    problems.push({
      kind: "output",
      message: `the output [${y.shape.join(", ")}] of a ${
        options.input ? "given" : "zero"
      } input holds ${nonFiniteText(c)} of ${y.data.length} values`,
    });
  }
  return report([...y.shape]);
}

/**
 * Every problem of a bundle, as text: the first read error of each model
 * (each model is read on its own, so one bad model does not hide another),
 * then what {@link validate} finds in each model that has a network config.
 *
 * @param input The bundle text or bytes.
 * @param options The layer registry for {@link validate}.
 * @returns The problems, each prefixed with its model id; empty when the
 * bundle is sound.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { saveBundle, validateBundle } from "@modelhost/modelhost/formats/bundle";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const text = await saveBundle([{
 *   id: "m",
 *   config: { input_size: 2, layers: [{ type: "dense", output_size: 1, bias: false }] },
 *   tensors: [tensorFromF32("layers.0.weight", new Float32Array([1, 2]), [1, 2])],
 * }]);
 * assert((await validateBundle(text)).length === 0);
 * const broken = text.replace('"shape":[1,2]', '"shape":[2,2]');
 * assert((await validateBundle(broken))[0].startsWith('model "m": '));
 * ```
 */
export async function validateBundle(
  input: string | Uint8Array,
  options: ValidateOptions = {},
): Promise<string[]> {
  let ids: string[];
  try {
    ids = bundleModelIds(input);
  } catch (e) {
    return [(e as Error).message];
  }
  const text = typeof input === "string" ? input : textOf(input);
  const problems: string[] = [];
  for (const id of ids) {
    let model: Model;
    try {
      model = (await loadBundle(text, id)).models[0];
    } catch (e) {
      problems.push(`model "${id}": ${(e as Error).message}`);
      continue;
    }
    if (!model.config) continue;
    const report = await validate(model, options);
    for (const p of report.problems) {
      problems.push(`model "${id}": ${p.message}`);
    }
  }
  return problems;
}
