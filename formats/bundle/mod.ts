/**
 * The modelhost bundle: one JSON document holding one or more models, each
 * with its network config, metadata and base64 tensors in any dtype of the
 * table.
 *
 * ```json
 * {"type":"modelhost/bundle","version":1,"models":[{"cfg":{…},"id":"encoder",
 *  "metadata":{"producer":"modelhost"},"weights":{"encoding":"base64","tensors":{
 *   "layers.0.weight":{"data":"…","dtype":"F32","sha256":"…","shape":[16,8]},
 *   "layers.1.weight":{"data":"…","dtype":"I8","scale":0.0078,"sha256":"…","shape":[4,16]}}}}]}
 * ```
 *
 * - {@link saveBundle} writes the text; {@link loadBundle} reads it back
 *   (and reads bundles written by Loom, see `formats/loom/`).
 * - The writer is canonical: `type` and `version` come first (so
 *   {@link detectBundle} can tell a bundle from its first bytes), every other
 *   object has its keys sorted, numbers are printed in ECMAScript's shortest
 *   round-trip form, and nothing depends on the clock unless `created` is
 *   asked for. Saving a loaded bundle gives the same bytes.
 * - Every tensor carries the SHA-256 of its stored bytes; loading checks it
 *   and throws {@link ChecksumError} on a mismatch.
 * - {@link validate} runs a model's network on a zero input and lists what
 *   is wrong with it.
 *
 * File access is in `io/bundle.ts`; this module uses no Deno API.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { loadBundle, saveBundle } from "@modelhost/modelhost/formats/bundle";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const w = tensorFromF32("layers.0.weight", new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
 * const text = await saveBundle([{ id: "tiny", tensors: [w] }], { dtype: "F16" });
 * const file = await loadBundle(text, "tiny");
 * const t = await file.models[0].tensors.load("layers.0.weight");
 * assert(t.dtype === "F16" && t.shape.join() === "2,3");
 * ```
 *
 * @module
 */

export {
  BUNDLE_PRODUCER,
  BUNDLE_TYPE,
  BUNDLE_VERSION,
  type BundleModelInput,
  type Provenance,
  saveBundle,
  saveBundleChunks,
  saveBundleDefaults,
  type SaveBundleOptions,
  type StorageChoice,
  type StorageRule,
  type TensorStorage,
} from "./write.ts";
export {
  type BundleFile,
  bundleModelIds,
  ChecksumError,
  loadBundle,
  type LoadBundleOptions,
} from "./read.ts";
export {
  bundleBytes,
  bundleFormat,
  type BundleFormatPlugin,
  detectBundle,
} from "./plugin.ts";
export {
  validate,
  validateBundle,
  type ValidateOptions,
  type ValidationProblem,
  type ValidationReport,
} from "./validate.ts";
