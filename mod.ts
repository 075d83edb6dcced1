/**
 * modelhost: read, check, convert, quantize and run neural-network model
 * files in TypeScript. A registry holds format plugins (bundle, SafeTensors,
 * GGUF, ONNX export) and layer plugins; {@link defaultRegistry} returns one
 * with every built-in plugin.
 *
 * @example
 * ```ts
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * console.log(reg.formats().map((f) => f.name));
 * ```
 *
 * @module
 */

import {
  createRegistry,
  type PluginSource,
  type Registry,
} from "./registry.ts";
import { LAYER_PLUGINS } from "./layers/mod.ts";
import { safetensorsFormat } from "./formats/safetensors/mod.ts";
import { ggufFormat } from "./formats/gguf/mod.ts";
import { onnxFormat } from "./formats/onnx/mod.ts";
import { bundleFormat } from "./formats/bundle/mod.ts";

export * from "./core/mod.ts";
export {
  createRegistry,
  type PluginSource,
  type Registry,
} from "./registry.ts";

/**
 * A fresh registry holding every built-in format and layer plugin. Each call
 * returns a new registry, so plugins added to one do not leak into another.
 *
 * @returns The registry.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { defaultRegistry } from "@modelhost/modelhost";
 * const reg = defaultRegistry();
 * assert(Array.isArray(reg.layers()));
 * ```
 */
export function defaultRegistry(): Registry {
  return createRegistry().use(BUILTIN_PLUGINS);
}

// Built-in plugins, in listing order. Each format/layer issue adds its plugin here.
// Format plugins are factories: each registry gets its own plugin objects.
const BUILTIN_PLUGINS: PluginSource[] = [
  bundleFormat,
  safetensorsFormat,
  ggufFormat,
  onnxFormat,
  ...LAYER_PLUGINS,
];
