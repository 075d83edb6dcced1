/**
 * Test helpers for plugin authors: checks any format plugin or layer plugin
 * can run in its own tests, with `Deno.test` or any runner that reports
 * thrown `AssertionError`s (they use `@std/assert`).
 *
 * - {@link assertFormatRoundTrip}: write → read gives the same tensors
 *   (byte-identical where the dtype is kept), metadata and config; writing
 *   is deterministic; `detect` knows the written bytes.
 * - {@link assertHostileInputs}: seeded truncations, bit flips and byte
 *   overwrites of a valid file either read or throw a typed error
 *   (`RangeError`, `TypeError`, `SyntaxError`), within a time limit.
 * - {@link assertLayerPlugin}: config normalization, seeded init, parameter
 *   shapes, forward shape and determinism, missing-weight errors.
 * - {@link assertLayerMatchesOnnx}: the layer's ONNX export, run in the
 *   ONNX runtime the test brings, gives the forward pass's output.
 *
 * @example
 * ```ts
 * import { assertFormatRoundTrip, assertHostileInputs } from "@modelhost/modelhost/testing";
 * import { safetensorsFormat } from "@modelhost/modelhost/formats/safetensors";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost";
 *
 * const plugin = safetensorsFormat();
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array([1, 2, 3]), [3])]);
 * const { bytes } = await assertFormatRoundTrip(plugin, {
 *   models: [{ id: "m", metadata: {}, tensors }],
 * });
 * await assertHostileInputs(plugin, bytes, { mutations: 50 });
 * ```
 *
 * @module
 */

export {
  assertFormatRoundTrip,
  assertHostileInputs,
  collectBytes,
  type ErrorClass,
  type FormatRoundTrip,
  type FormatRoundTripOptions,
  type HostileInputOptions,
  type HostileInputReport,
} from "./_format.ts";
export {
  assertLayerMatchesOnnx,
  type OnnxCheck,
  type OnnxCheckOptions,
  type OnnxRunner,
} from "./_onnx.ts";
export {
  assertLayerPlugin,
  cosineInput,
  type LayerCheck,
  type LayerCheckOptions,
} from "./_layer.ts";
