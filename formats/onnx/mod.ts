/**
 * ONNX export: every layer of a network lowers itself to standard ONNX
 * operators (`LayerPlugin.toOnnx`), weights become initializers in their
 * stored dtype, and the result is a `ModelProto` that ONNX Runtime runs.
 *
 * - {@link exportOnnx} returns the `.onnx` bytes of a network (opset 13 to
 *   23, default 17).
 * - {@link exportOnnxFiles} can also move tensor data to an external
 *   `.onnx.data` file (needed past the 2 GiB protobuf limit);
 *   `io/onnx.ts` `saveOnnx` writes both files.
 * - {@link onnxFormat} is the write-only format plugin (`convert --to onnx`): it
 *   builds the network from a model's config and tensors and exports it.
 *
 * The graph input is `input` `[batch, features]` (symbolic `batch`), or
 * `[batch, sequence, features]` for networks with attention layers (or with
 * `sequence: true`), or INT64 `input_ids` `[batch, sequence]` when the first
 * layer is an embedding. The output is `output`. The same network and
 * options always give the same bytes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { exportOnnx } from "@modelhost/modelhost/formats/onnx";
 * import { buildNetwork, initNetwork } from "@modelhost/modelhost/core";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * const cfg = { input_size: 3, layers: [{ type: "dense", output_size: 1, activation: "sigmoid" }] };
 * const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 1));
 * const bytes = exportOnnx(net, { opsetVersion: 17 });
 * assert(bytes.length > 0);
 * ```
 *
 * @module
 */

export {
  exportOnnx,
  exportOnnxFiles,
  ONNX_OPSETS,
  onnxDefaults,
  type OnnxExportOptions,
  type OnnxFiles,
  type OnnxFilesOptions,
  type OnnxWeightDtype,
  PROTOBUF_LIMIT,
} from "./export.ts";
export {
  onnx,
  onnxFormat,
  type OnnxPluginOptions,
  type OnnxWriteOptions,
} from "./plugin.ts";
