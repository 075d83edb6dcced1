/**
 * The ONNX exporter: a network's layers lower themselves onto a graph
 * builder, weights become initializers (inline or in an external data
 * file), and the result is serialized as a `ModelProto`.
 *
 * @module
 */

import type { Network } from "../../core/network.ts";
import { createScope } from "../../core/scope.ts";
import { GraphBuilder } from "./_graph.ts";
import type { OnnxWeightDtype } from "./_weights.ts";
import { modelProto, OnnxDataType, type TensorMessage } from "./_protobuf.ts";

export type { OnnxWeightDtype } from "./_weights.ts";

/**
 * Lowest and highest opset the exporter writes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ONNX_OPSETS } from "@modelhost/modelhost/formats/onnx";
 * assert(ONNX_OPSETS.min === 13 && ONNX_OPSETS.max === 23);
 * ```
 */
export const ONNX_OPSETS = { min: 13, max: 23 } as const;

/**
 * Largest protobuf message ONNX tooling reads (2 GiB − 1).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { PROTOBUF_LIMIT } from "@modelhost/modelhost/formats/onnx";
 * assert(PROTOBUF_LIMIT === 2 ** 31 - 1);
 * ```
 */
export const PROTOBUF_LIMIT = 2 ** 31 - 1;

/** The IR version each opset came with (onnx/docs/Versioning.md). */
const IR_VERSION: Record<number, number> = {
  13: 7,
  14: 7,
  15: 8,
  16: 8,
  17: 8,
  18: 8,
  19: 9,
  20: 9,
  21: 10,
  22: 10,
  23: 11,
};

/** Layer types that take `[batch, sequence, features]`. */
const SEQUENCE_LAYERS = [
  "multi_head_attention",
  "mha",
  "transformer_block",
  "decoder_block",
];

/** Whether a config holds a sequence layer anywhere (nested layers too). */
function hasSequenceLayer(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(hasSequenceLayer);
  if (v === null || typeof v !== "object") return false;
  const o = v as Record<string, unknown>;
  if (typeof o.type === "string" && SEQUENCE_LAYERS.includes(o.type)) {
    return true;
  }
  return Object.values(o).some(hasSequenceLayer);
}

/** Options of {@link exportOnnx} and {@link exportOnnxFiles}. */
export interface OnnxExportOptions {
  /** Opset of the default ONNX domain, 13 to 23. @default {17} */
  opsetVersion?: number;
  /**
   * How weight matrices (rank ≥ 2, float) are stored: `keep` (their stored
   * dtype), `F16` (half precision + `Cast`), or `I8` (per-output-channel
   * symmetric int8 + `DequantizeLinear`). @default {"keep"}
   */
  weightDtype?: OnnxWeightDtype;
  /**
   * Whether the input is `[batch, sequence, features]`.
   * @default {true when a top-level layer is an attention or transformer block}
   */
  sequence?: boolean;
  /**
   * Gumbel-softmax layers: rows of noise held in the file (a call may feed
   * at most this many rows, batch × sequence). @default {256}
   */
  gumbelMaxRows?: number;
  /** Attention layers: longest sequence the RoPE tables cover. @default {2048} */
  maxSequenceLength?: number;
  /** Name of the graph. @default {"modelhost"} */
  graphName?: string;
  /** Extra `metadata_props` (written sorted by key, after `modelhost.config`). */
  metadata?: Record<string, string>;
}

/** Options of {@link exportOnnxFiles}: where tensor data goes. */
export interface OnnxFilesOptions extends OnnxExportOptions {
  /**
   * `true`: tensors of at least `externalDataThreshold` bytes go to the
   * data file; `false`: everything inline (throws past 2 GiB); `"auto"`:
   * external only when the model would pass 2 GiB. @default {"auto"}
   */
  externalData?: boolean | "auto";
  /** Smallest tensor (bytes) moved to the data file. @default {1024} */
  externalDataThreshold?: number;
  /** File name of the data file, relative to the model. @default {"model.onnx.data"} */
  dataLocation?: string;
}

/**
 * Default export options.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { onnxDefaults } from "@modelhost/modelhost/formats/onnx";
 * assert(onnxDefaults.opsetVersion === 17);
 * ```
 */
export const onnxDefaults = {
  opsetVersion: 17,
  weightDtype: "keep",
  gumbelMaxRows: 256,
  maxSequenceLength: 2048,
  graphName: "modelhost",
  externalData: "auto",
  externalDataThreshold: 1024,
  dataLocation: "model.onnx.data",
} satisfies OnnxFilesOptions;

/** What {@link exportOnnxFiles} produces. */
export interface OnnxFiles {
  /** The `.onnx` bytes. */
  model: Uint8Array;
  /** The external data file as chunks in order (empty when nothing is external). */
  data: Uint8Array[];
  /** Total bytes of `data`. */
  dataLength: number;
  /** The data file name the model refers to (when `data` is not empty). */
  dataLocation: string;
  /** Nodes per operator type, for reports and tests. */
  opCounts: Record<string, number>;
  /** Operator types of the nodes, in graph order. */
  ops: string[];
}

const PRODUCER = "modelhost";
const PRODUCER_VERSION = "0.1.0";

/** Each external tensor starts at a multiple of this (lets runtimes map pages). */
const EXTERNAL_ALIGN = 4096;

function checkOptions(o: OnnxFilesOptions): Required<
  Omit<OnnxFilesOptions, "sequence" | "metadata">
> {
  const opset = o.opsetVersion ?? onnxDefaults.opsetVersion;
  if (
    !Number.isInteger(opset) || opset < ONNX_OPSETS.min ||
    opset > ONNX_OPSETS.max
  ) {
    throw new RangeError(
      `Cannot export ONNX opset ${opset}: supported opsets are ${ONNX_OPSETS.min} to ${ONNX_OPSETS.max}`,
    );
  }
  const wd = o.weightDtype ?? onnxDefaults.weightDtype;
  if (!["keep", "F16", "I8"].includes(wd)) {
    throw new TypeError(
      `Cannot export ONNX weights as ${
        JSON.stringify(wd)
      }: weightDtype must be keep, F16 or I8`,
    );
  }
  const positive = (name: string, v: number) => {
    if (!Number.isSafeInteger(v) || v <= 0) {
      throw new RangeError(
        `ONNX export option ${name} must be a positive integer, got ${v}`,
      );
    }
    return v;
  };
  const ext = o.externalData ?? onnxDefaults.externalData;
  if (ext !== true && ext !== false && ext !== "auto") {
    throw new TypeError(
      `ONNX export option externalData must be true, false or "auto", got ${
        JSON.stringify(ext)
      }`,
    );
  }
  return {
    opsetVersion: opset,
    weightDtype: wd,
    gumbelMaxRows: positive(
      "gumbelMaxRows",
      o.gumbelMaxRows ?? onnxDefaults.gumbelMaxRows,
    ),
    maxSequenceLength: positive(
      "maxSequenceLength",
      o.maxSequenceLength ?? onnxDefaults.maxSequenceLength,
    ),
    graphName: o.graphName ?? onnxDefaults.graphName,
    externalData: ext,
    externalDataThreshold: o.externalDataThreshold ??
      onnxDefaults.externalDataThreshold,
    dataLocation: o.dataLocation ?? onnxDefaults.dataLocation,
  };
}

/** The graph of a network: builder with inputs, nodes and the output. */
function buildGraph(
  network: Network,
  options: ReturnType<typeof checkOptions>,
  raw: OnnxExportOptions,
): GraphBuilder {
  if (!network.tensors) {
    throw new TypeError(
      "Cannot export the network to ONNX: it does not carry its tensors (build it with buildNetwork)",
    );
  }
  const spec = network.spec;
  const g = new GraphBuilder({
    opset: options.opsetVersion,
    weightDtype: options.weightDtype,
    options: { ...options },
  });
  const scope = createScope(network.tensors);
  const first = spec.layers[0];
  const ids = first.plugin.type === "embedding" ||
    first.plugin.type === "decoder_embedding";
  const sequence = raw.sequence ?? hasSequenceLayer(network.config);
  let cur: string;
  let rank: number;
  if (ids) {
    cur = g.addInput("input_ids", OnnxDataType.INT64, ["batch", "sequence"]);
    rank = 3;
  } else {
    if (spec.inputSize === undefined) {
      throw new TypeError(
        "Cannot export the network to ONNX: its input size is unknown (set input_size in the config)",
      );
    }
    const dims = sequence
      ? ["batch", "sequence", spec.inputSize]
      : ["batch", spec.inputSize];
    cur = g.addInput("input", OnnxDataType.FLOAT, dims);
    rank = dims.length;
  }
  let previous: string | undefined;
  spec.layers.forEach((layer, i) => {
    const out = g.lower(layer, scope.at(`layers.${i}`), cur, {
      path: layer.path ?? `layers[${i}]`,
      previousInput: previous,
    });
    previous = cur;
    cur = out;
  });
  const outDims: (string | number | undefined)[] = rank === 3
    ? ["batch", "sequence", spec.outputSize]
    : ["batch", spec.outputSize];
  g.addOutput(cur, "output", OnnxDataType.FLOAT, outDims);
  return g;
}

function metadataOf(
  network: Network,
  extra: Record<string, string> | undefined,
): [string, string][] {
  const out: [string, string][] = [[
    "modelhost.config",
    JSON.stringify(network.config),
  ]];
  for (const k of Object.keys(extra ?? {}).sort()) {
    if (k === "modelhost.config") continue;
    out.push([k, String(extra![k])]);
  }
  return out;
}

function rawLength(t: TensorMessage): number {
  return t.raw?.length ?? 0;
}

/**
 * Exports a network as an ONNX model, optionally with its large tensors in
 * a separate data file.
 *
 * @param network A network from `buildNetwork` (it carries its tensors).
 * @param options Opset, weight dtype, external data and the rest.
 * @returns The model bytes, the data file chunks and op statistics.
 * @throws {TypeError} When a layer cannot be lowered (the message names its
 * path and type) or an option is wrong.
 * @throws {RangeError} When the opset is out of range, or the model passes
 * 2 GiB with `externalData: false`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { exportOnnxFiles } from "@modelhost/modelhost/formats/onnx";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * const cfg = { input_size: 64, layers: [{ type: "dense", output_size: 64 }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 1));
 * const files = exportOnnxFiles(net, { externalData: true, dataLocation: "mlp.onnx.data" });
 * assert(files.dataLength >= 64 * 64 * 4 && files.ops.join() === "MatMul,Add");
 * ```
 */
export function exportOnnxFiles(
  network: Network,
  options: OnnxFilesOptions = {},
): OnnxFiles {
  const o = checkOptions(options);
  const g = buildGraph(network, o, options);
  const initializers = g.initializers;
  const inlineSize = initializers.reduce((a, t) => a + rawLength(t), 0);
  const external = o.externalData === true ||
    (o.externalData === "auto" && inlineSize > PROTOBUF_LIMIT - (1 << 24));
  const data: Uint8Array[] = [];
  let dataLength = 0;
  const tensors: TensorMessage[] = initializers.map((t) => {
    const n = rawLength(t);
    if (!external || n < o.externalDataThreshold) return t;
    const pad = (EXTERNAL_ALIGN - (dataLength % EXTERNAL_ALIGN)) %
      EXTERNAL_ALIGN;
    if (pad) {
      data.push(new Uint8Array(pad));
      dataLength += pad;
    }
    const moved: TensorMessage = {
      name: t.name,
      dataType: t.dataType,
      dims: t.dims,
      external: { location: o.dataLocation, offset: dataLength, length: n },
    };
    data.push(t.raw!);
    dataLength += n;
    return moved;
  });
  const writer = modelProto({
    irVersion: IR_VERSION[o.opsetVersion],
    opsetImports: [{ domain: "", version: o.opsetVersion }],
    producerName: PRODUCER,
    producerVersion: PRODUCER_VERSION,
    graph: {
      name: o.graphName,
      nodes: g.nodes,
      initializers: tensors,
      inputs: g.inputs,
      outputs: g.outputs,
    },
    metadata: metadataOf(network, options.metadata),
  });
  if (writer.length > PROTOBUF_LIMIT) {
    throw new RangeError(
      `Cannot write the ONNX model inline: it needs ${writer.length} bytes, past the 2 GiB protobuf limit (${PROTOBUF_LIMIT}); use external data (saveOnnx in io/onnx.ts, or externalData: true)`,
    );
  }
  return {
    model: writer.finish(),
    data,
    dataLength,
    dataLocation: o.dataLocation,
    opCounts: Object.fromEntries(g.opCounts),
    ops: g.nodes.map((n) => n.opType),
  };
}

/**
 * Exports a network as the bytes of one `.onnx` file (every tensor inline).
 *
 * @param network A network from `buildNetwork` (it carries its tensors).
 * @param options Opset (13 to 23, default 17), weight dtype and the rest.
 * @returns The model bytes.
 * @throws {TypeError} When a layer cannot be lowered; the message names the
 * layer path and type.
 * @throws {RangeError} When the opset is out of range or the model passes
 * 2 GiB (then use `saveOnnx`, which writes external data).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { exportOnnx } from "@modelhost/modelhost/formats/onnx";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * const cfg = { input_size: 4, layers: [{ type: "dense", output_size: 2, activation: "gelu" }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 1));
 * const a = exportOnnx(net, { opsetVersion: 13 });
 * const b = exportOnnx(net, { opsetVersion: 13 });
 * assert(a.length === b.length && a.every((x, i) => x === b[i]));
 * ```
 */
export function exportOnnx(
  network: Network,
  options: OnnxExportOptions = {},
): Uint8Array {
  return exportOnnxFiles(network, { ...options, externalData: false }).model;
}
