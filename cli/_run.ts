// `run` and `quantize`: forward passes of stored networks, and quantization
// with a per-tensor error report.

import { buildNetwork } from "../core/network.ts";
import type { Model, NetworkConfig } from "../core/model.ts";
import { loadAllTensors } from "../core/model.ts";
import { type FloatTensor, toFloat32 } from "../core/tensor.ts";
import { errorStats } from "../core/quantize.ts";
import type { Registry } from "../registry.ts";
import { openModel } from "../io/open.ts";
import { readNpy } from "./_npy.ts";

/** Parses `run --input` text: a nested JSON array, or `{shape, data}`. */
export function parseInputJson(text: string, name: string): FloatTensor {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new SyntaxError(
      `${name}: input is not JSON (${e instanceof Error ? e.message : e})`,
    );
  }
  if (
    value && typeof value === "object" && !Array.isArray(value) &&
    "data" in value
  ) {
    const v = value as { shape?: unknown; data: unknown };
    const flat = (v.data as unknown[]).flat(Infinity) as number[];
    const shape = Array.isArray(v.shape)
      ? (v.shape as number[])
      : [flat.length];
    return { shape, data: Float32Array.from(flat) };
  }
  const shape: number[] = [];
  let cur: unknown = value;
  while (Array.isArray(cur)) {
    shape.push(cur.length);
    cur = cur[0];
  }
  if (shape.length === 0) {
    throw new TypeError(
      `${name}: input must be an array of numbers (nested for batches)`,
    );
  }
  const flat = (value as unknown[]).flat(Infinity);
  if (
    flat.length !== shape.reduce((a, b) => a * b, 1) ||
    flat.some((x) => typeof x !== "number")
  ) {
    throw new TypeError(
      `${name}: input must be a rectangular array of numbers, shape [${
        shape.join(", ")
      }]`,
    );
  }
  if (shape.length === 1) shape.unshift(1);
  return { shape, data: Float32Array.from(flat as number[]) };
}

/** Reads the input of `run` from a path, `-` (stdin) or inline JSON. */
export async function readInput(spec: string): Promise<FloatTensor> {
  if (spec === "-") {
    const text = await new Response(Deno.stdin.readable).text();
    return parseInputJson(text, "stdin");
  }
  if (/^\s*[[{]/.test(spec)) return parseInputJson(spec, "--input");
  if (spec.endsWith(".npy")) return readNpy(await Deno.readFile(spec), spec);
  return parseInputJson(await Deno.readTextFile(spec), spec);
}

/** Picks a model by id, or the only one. */
export function pickModel(
  models: Model[],
  id: string | undefined,
  path: string,
): Model {
  if (id !== undefined) {
    const m = models.find((x) => x.id === id);
    if (!m) {
      throw new TypeError(
        `No model "${id}" in ${path}; ids: ${
          models.map((x) => x.id).join(", ")
        }`,
      );
    }
    return m;
  }
  if (models.length > 1) {
    throw new TypeError(
      `${path} holds ${models.length} models (${
        models.map((x) => x.id).join(", ")
      }); pick one with --id`,
    );
  }
  return models[0];
}

/** Runs a stored network on an input. */
export async function runModel(
  reg: Registry,
  path: string,
  input: FloatTensor,
  opts: { id?: string; config?: NetworkConfig },
): Promise<FloatTensor> {
  const opened = await openModel(reg, path);
  try {
    const model = pickModel(opened.file.models, opts.id, path);
    const config = opts.config ?? model.config;
    if (!config) {
      throw new TypeError(
        `${path} carries no network config (SafeTensors files need __metadata__["modelhost.config"]); pass --config FILE`,
      );
    }
    const net = buildNetwork(reg, config, await loadAllTensors(model.tensors));
    return net.forward(input);
  } finally {
    opened.close();
  }
}

/** Error of one tensor after a lossy conversion. */
export interface TensorError {
  name: string;
  from: string;
  to: string;
  rmse: number;
  cosine: number;
  maxAbs: number;
}

/** Compares every tensor of two models by name (the second read back after writing). */
export async function compareModels(
  a: Model,
  b: Model,
): Promise<TensorError[]> {
  const rows: TensorError[] = [];
  for (const name of a.tensors.names()) {
    if (!b.tensors.has(name)) continue;
    const ta = await a.tensors.load(name), tb = await b.tensors.load(name);
    let x: Float32Array, y: Float32Array;
    try {
      x = toFloat32(ta);
      y = toFloat32(tb);
    } catch {
      continue;
    }
    const e = errorStats(x, y);
    // Two all-zero tensors agree exactly: cosine 1 rather than 0/0.
    const cosine = Number.isNaN(e.cosine) && e.maxAbsError === 0 ? 1 : e.cosine;
    rows.push({
      name,
      from: ta.dtype,
      to: tb.dtype,
      rmse: e.rmsError,
      cosine,
      maxAbs: e.maxAbsError,
    });
  }
  return rows;
}
