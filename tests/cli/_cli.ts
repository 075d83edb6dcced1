// Runs the CLI in-process and collects what it prints; the small models the
// command tests share.

import { join } from "@std/path";
import { main } from "../../cli.ts";
import {
  defaultRegistry,
  initNetwork,
  memoryTensorIndex,
  type ModelFile,
  tensorFromF32,
} from "../../mod.ts";
import { writeModel } from "../../io/open.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import tiny from "./_tiny_format.ts";

/** Exit code and output of one CLI run. */
export interface CliRun {
  code: number;
  out: string;
  err: string;
}

/** Runs `modelhost ARGS` in this process with a fresh default registry. */
export async function runCli(args: string[]): Promise<CliRun> {
  const out: string[] = [], err: string[] = [];
  const code = await main(args, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
  }, defaultRegistry());
  return { code, out: out.join("\n"), err: err.join("\n") };
}

/** The third-party test format plugin (`.tiny`), as `--plugin` takes it. */
export const PLUGIN: string = join(REPO_ROOT, "tests/cli/_tiny_format.ts");

/** Writes `a.tiny` (a 3×4 weight and a bias) into `dir`. */
export async function makeTiny(
  dir: string,
): Promise<{ path: string; w: Float32Array }> {
  const w = Float32Array.from({ length: 12 }, (_, i) => 0.1 + 2 * Math.cos(i));
  const b = Float32Array.from([0.5, -0.25, 3]);
  const file = {
    models: [{
      id: "m",
      metadata: { author: "test" },
      tensors: memoryTensorIndex([
        tensorFromF32("l.weight", w, [3, 4]),
        tensorFromF32("l.bias", b, [3]),
      ]),
    }],
  };
  const bytes = await (tiny.write!(file) as Promise<Uint8Array>);
  const path = join(dir, "a.tiny");
  await Deno.writeFile(path, bytes);
  return { path, w };
}

/** The network of `savedNetwork`. */
export const NET_CONFIG = {
  input_size: 64,
  layers: [
    { type: "dense", output_size: 32, activation: "gelu" },
    { type: "rms_norm" },
    { type: "dense", output_size: 5, activation: "softmax" },
  ],
};

/** Writes `net.safetensors` (NET_CONFIG, seed 3) into `dir`. */
export async function savedNetwork(
  dir: string,
): Promise<{ path: string; file: ModelFile }> {
  const reg = defaultRegistry();
  const tensors = initNetwork(reg, NET_CONFIG, 3);
  const file: ModelFile = {
    models: [{
      id: "net",
      config: NET_CONFIG,
      metadata: {},
      tensors: memoryTensorIndex(tensors.values()),
    }],
  };
  const path = join(dir, "net.safetensors");
  await writeModel(reg.format("safetensors"), file, path);
  return { path, file };
}
