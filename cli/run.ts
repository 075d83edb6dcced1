// `run`: a stored network's forward pass on an input given inline, as a
// JSON or .npy file, or on stdin.

import { buildNetwork } from "../core/network.ts";
import type { NetworkConfig } from "../core/model.ts";
import { loadAllTensors } from "../core/model.ts";
import type { FloatTensor } from "../core/tensor.ts";
import type { Registry } from "../registry.ts";
import { openModel } from "../io/open.ts";
import { parseFlags, UsageError } from "./_args.ts";
import { type Command, ID_FLAG, needFiles, pickModel } from "./_command.ts";
import { readNpy } from "./_npy.ts";

/** Parses `run --input` text: a nested JSON array, or `{shape, data}`. */
function parseInputJson(text: string, name: string): FloatTensor {
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
async function readInput(spec: string): Promise<FloatTensor> {
  if (spec === "-") {
    const text = await new Response(Deno.stdin.readable).text();
    return parseInputJson(text, "stdin");
  }
  if (/^\s*[[{]/.test(spec)) return parseInputJson(spec, "--input");
  if (spec.endsWith(".npy")) return readNpy(await Deno.readFile(spec), spec);
  return parseInputJson(await Deno.readTextFile(spec), spec);
}

/** Runs a stored network on an input. */
async function runModel(
  reg: Registry,
  path: string,
  input: FloatTensor,
  opts: { id?: string; config?: NetworkConfig; verify?: boolean },
): Promise<FloatTensor> {
  const opened = await openModel(
    reg,
    path,
    opts.verify === false ? { read: { verify: false } } : {},
  );
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

/** `modelhost run MODEL --input …`. */
export const runCommand: Command = {
  name: "run",
  summary:
    "Run a stored network's forward pass (bundle, or SafeTensors/GGUF with a network config)",
  usage:
    "run MODEL --input JSON|FILE.json|FILE.npy|- [--id ID] [--config FILE] [--no-verify]",
  flags: () => [
    {
      name: "input",
      short: "i",
      type: "string",
      value: "INPUT",
      description: "Inline JSON, a .json or .npy file, or - for stdin",
    },
    ID_FLAG,
    {
      name: "config",
      type: "string",
      value: "FILE",
      description: "Network config JSON, when the file carries none",
    },
    {
      name: "no-verify",
      type: "boolean",
      description:
        "Read without checking the SHA-256 checksums the file records (bundle, SafeTensors)",
    },
  ],
  async run(args, ctx) {
    const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
    needFiles(positional, "MODEL");
    if (flags.input === undefined) throw new UsageError("missing --input");
    const input = await readInput(flags.input as string);
    const config = flags.config
      ? JSON.parse(await Deno.readTextFile(flags.config as string))
      : undefined;
    const y = await runModel(ctx.reg, positional[0], input, {
      id: flags.id as string | undefined,
      config,
      verify: flags["no-verify"] !== true,
    });
    ctx.io.out(JSON.stringify({ shape: y.shape, data: Array.from(y.data) }));
    return 0;
  },
};
