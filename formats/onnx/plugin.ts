/**
 * The `onnx` format plugin (write-only): builds a model's network from its
 * config and tensors and exports it with {@link exportOnnxFiles}.
 *
 * @module
 */

import type { ModelFile } from "../../core/model.ts";
import { buildNetwork, type LayerLookup } from "../../core/network.ts";
import type {
  FormatPlugin,
  OptionSpec,
  WriteOptions,
  WrittenFile,
} from "../../core/plugin.ts";
import type { Tensor } from "../../core/tensor.ts";
import { LAYER_PLUGINS } from "../../layers/mod.ts";
import {
  exportOnnx,
  exportOnnxFiles,
  ONNX_OPSETS,
  onnxDefaults,
  type OnnxFilesOptions,
} from "./export.ts";

/** Options of the {@link onnxFormat} format plugin's `write` and `writeFiles`. */
export interface OnnxWriteOptions extends OnnxFilesOptions, WriteOptions {
  /**
   * Where layer types are looked up (a registry); the plugin's own lookup
   * (the built-in layers, unless the factory was given one) otherwise.
   */
  layers?: LayerLookup;
  /** Which model of a multi-model file to export. @default {the only one} */
  modelId?: string;
}

/** Options of the {@link onnxFormat} factory. */
export interface OnnxPluginOptions {
  /** Where layer types are looked up. @default {the built-in layer plugins} */
  layers?: LayerLookup;
}

function builtinLayers(): LayerLookup {
  const byName = new Map<string, (typeof LAYER_PLUGINS)[number]>();
  for (const p of LAYER_PLUGINS) {
    for (const n of [p.type, ...(p.aliases ?? [])]) byName.set(n, p);
  }
  return {
    layer(type) {
      const p = byName.get(type);
      if (!p) {
        throw new TypeError(
          `Unknown layer type "${type}"; built-in layer types: ${
            [...byName.keys()].join(", ")
          }`,
        );
      }
      return p;
    },
  };
}

const OPTIONS: readonly OptionSpec[] = [
  {
    name: "opsetVersion",
    type: "number",
    description: `ONNX opset (${ONNX_OPSETS.min} to ${ONNX_OPSETS.max})`,
    default: onnxDefaults.opsetVersion,
  },
  {
    name: "weightDtype",
    type: "string",
    description:
      "Weight matrices as stored (keep), F16 + Cast, or I8 + DequantizeLinear",
    default: onnxDefaults.weightDtype,
    choices: ["keep", "F16", "I8"],
  },
  {
    name: "sequence",
    type: "boolean",
    description:
      "Input shaped [batch, sequence, features] (default: when the network has attention)",
  },
  {
    name: "gumbelMaxRows",
    type: "number",
    description:
      "Gumbel-softmax: rows of noise stored (most rows one call may feed)",
    default: onnxDefaults.gumbelMaxRows,
  },
  {
    name: "maxSequenceLength",
    type: "number",
    description: "Attention: longest sequence the RoPE tables cover",
    default: onnxDefaults.maxSequenceLength,
  },
  {
    name: "externalData",
    type: "string",
    description:
      "Tensor data in a .onnx.data file beside the model: auto (past 2 GiB), true, false",
    default: "auto",
    choices: ["auto", "true", "false"],
  },
  {
    name: "externalDataThreshold",
    type: "number",
    description:
      "With external data: smallest tensor (bytes) moved to the data file",
    default: onnxDefaults.externalDataThreshold,
  },
];

/** `externalData` as the CLI passes it (a string) or as code does. */
function externalOption(v: unknown): boolean | "auto" | undefined {
  if (v === "true") return true;
  if (v === "false") return false;
  return v as boolean | "auto" | undefined;
}

async function* streamed(chunks: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const c of chunks) yield c;
}

async function loadTensors(
  file: ModelFile,
  id: string | undefined,
): Promise<{ config: unknown; tensors: Map<string, Tensor> }> {
  const models = id === undefined
    ? file.models
    : file.models.filter((m) => m.id === id);
  if (models.length !== 1) {
    throw new TypeError(
      id !== undefined && models.length === 0
        ? `Cannot export model "${id}" to ONNX: the file has ${
          file.models.map((m) => m.id).join(", ") || "no models"
        }`
        : `Cannot export to ONNX: the file holds ${file.models.length} models (${
          file.models.map((m) => m.id).join(", ")
        }); an ONNX file holds one, pick it with modelId`,
    );
  }
  const m = models[0];
  if (!m.config) {
    throw new TypeError(
      `Cannot export model "${m.id}" to ONNX: it carries no network config, so its architecture is unknown`,
    );
  }
  const tensors = new Map<string, Tensor>();
  for (const name of m.tensors.names()) {
    tensors.set(name, await m.tensors.load(name));
  }
  return { config: m.config, tensors };
}

/**
 * The ONNX format plugin (write-only): `write` builds the model's network
 * from its config and tensors and exports it inline; `writeFiles` (what
 * `convert` uses) also writes `{baseName}.onnx.data` when tensors go to
 * external data (past 2 GiB, or with `externalData: true`).
 *
 * @param pluginOptions Where layer types are looked up.
 * @returns The plugin.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { onnxFormat } from "@modelhost/modelhost/formats/onnx";
 * import { memoryTensorIndex, initNetwork } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const config = { input_size: 2, layers: [{ type: "dense", output_size: 1 }] };
 * const tensors = memoryTensorIndex(initNetwork(defaultRegistry(), config, 1).values());
 * const bytes = await onnxFormat().write!({ models: [{ id: "m", config, metadata: {}, tensors }] });
 * assert(bytes instanceof Uint8Array && bytes.length > 0);
 * ```
 */
export function onnxFormat(
  pluginOptions: OnnxPluginOptions = {},
): FormatPlugin {
  return {
    kind: "format",
    name: "onnx",
    description:
      "ONNX (export only): each layer lowers itself to ONNX operators",
    extensions: [".onnx"],
    options: OPTIONS,
    async write(file: ModelFile, options: WriteOptions = {}) {
      const o = options as OnnxWriteOptions;
      const { config, tensors } = await loadTensors(file, o.modelId);
      const lookup = o.layers ?? pluginOptions.layers ?? builtinLayers();
      const net = buildNetwork(lookup, config, tensors);
      return exportOnnx(net, o);
    },
    async writeFiles(
      file: ModelFile,
      options: WriteOptions & { baseName: string },
    ): Promise<WrittenFile[]> {
      const o = options as OnnxWriteOptions & { baseName: string };
      const { config, tensors } = await loadTensors(file, o.modelId);
      const lookup = o.layers ?? pluginOptions.layers ?? builtinLayers();
      const net = buildNetwork(lookup, config, tensors);
      const dataLocation = o.dataLocation ?? `${o.baseName}.onnx.data`;
      const files = exportOnnxFiles(net, {
        ...o,
        externalData: externalOption(o.externalData),
        dataLocation,
      });
      const out: WrittenFile[] = [{
        name: `${o.baseName}.onnx`,
        data: files.model,
      }];
      if (files.dataLength > 0) {
        out.push({ name: dataLocation, data: streamed(files.data) });
      }
      return out;
    },
  };
}

/**
 * The ONNX format plugin factory under its old name.
 *
 * @deprecated Use {@link onnxFormat}; this alias goes in the next release.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { onnx, onnxFormat } from "@modelhost/modelhost/formats/onnx";
 * assert(onnx === onnxFormat);
 * ```
 */
export const onnx: typeof onnxFormat = onnxFormat;
