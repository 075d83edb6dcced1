/**
 * ONNX export to disk (Deno): {@link saveOnnx} writes a network as
 * `model.onnx`, plus `model.onnx.data` when tensors go to external data
 * (always past the 2 GiB protobuf limit, or when asked). Each file is
 * written atomically (temporary file, then rename), the data file first, so
 * a model file never points at a missing or half-written data file.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { saveOnnx } from "@modelhost/modelhost/io/onnx";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * const cfg = { input_size: 32, layers: [{ type: "dense", output_size: 32, activation: "relu" }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 1));
 * const dir = await Deno.makeTempDir();
 * const saved = await saveOnnx(`${dir}/mlp.onnx`, net, { externalData: true });
 * assert(saved.dataPath === `${dir}/mlp.onnx.data` && saved.dataBytes >= 32 * 32 * 4);
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */

import { basename, dirname, join } from "@std/path";
import type { Network } from "../core/network.ts";
import { exportOnnxFiles, type OnnxFilesOptions } from "../formats/onnx/mod.ts";
import { writeFileAtomic } from "./file.ts";

/** Options of {@link saveOnnx}: the export options and where data goes. */
export interface SaveOnnxOptions extends OnnxFilesOptions {
  /**
   * File name of the data file, relative to the model's folder.
   * @default {the model's file name + ".data"}
   */
  dataLocation?: string;
}

/** What {@link saveOnnx} wrote. */
export interface SavedOnnx {
  /** The model file. */
  modelPath: string;
  /** Bytes of the model file. */
  modelBytes: number;
  /** The data file, when tensors went to external data. */
  dataPath?: string;
  /** Bytes of the data file (0 when there is none). */
  dataBytes: number;
}

/**
 * Exports a network to an `.onnx` file, with large tensors in a `.onnx.data`
 * file beside it when `externalData` is `true`, or (the default `"auto"`)
 * when the model would pass 2 GiB.
 *
 * @param path The `.onnx` file to write.
 * @param network A network from `buildNetwork`.
 * @param options Export options (`opsetVersion`, `weightDtype`,
 * `externalData`, `externalDataThreshold`, `dataLocation`, ...).
 * @returns The paths and sizes written.
 * @throws {TypeError} When a layer cannot be lowered (names path and type).
 * @throws {RangeError} When the opset is out of range, or the model passes
 * 2 GiB with `externalData: false`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { saveOnnx } from "@modelhost/modelhost/io/onnx";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * const cfg = { input_size: 4, layers: [{ type: "dense", output_size: 2 }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 1));
 * const dir = await Deno.makeTempDir();
 * const saved = await saveOnnx(`${dir}/tiny.onnx`, net);
 * assert(saved.dataPath === undefined && saved.modelBytes > 0);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function saveOnnx(
  path: string,
  network: Network,
  options: SaveOnnxOptions = {},
): Promise<SavedOnnx> {
  const dataLocation = options.dataLocation ?? `${basename(path)}.data`;
  const files = exportOnnxFiles(network, { ...options, dataLocation });
  const dataPath = files.dataLength > 0
    ? join(dirname(path), dataLocation)
    : undefined;
  if (dataPath !== undefined) await writeFileAtomic(dataPath, files.data);
  const modelBytes = await writeFileAtomic(path, files.model);
  return { modelPath: path, modelBytes, dataPath, dataBytes: files.dataLength };
}
