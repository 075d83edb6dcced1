/**
 * The registry: the one shared, mutable object. It holds format plugins
 * (looked up by name, file extension or magic bytes) and layer plugins
 * (looked up by type or alias). A failed lookup throws a `TypeError` that
 * lists what is registered.
 *
 * @module
 */

import type { FormatPlugin, LayerPlugin, Plugin } from "./core/plugin.ts";

/**
 * What {@link Registry.use} takes: a plugin, or a function of no arguments
 * that returns one. Format plugins are factories (`bundleFormat`,
 * `safetensorsFormat`, ...), so `registry.use(bundleFormat)` and
 * `registry.use(bundleFormat())` register the same plugin; a factory with
 * options is called by hand (`registry.use(onnxFormat({ ... }))`).
 */
export type PluginSource = Plugin | (() => Plugin);

/** A set of format and layer plugins. */
export interface Registry {
  /**
   * Adds one plugin or a list of plugins; chains. A zero-argument function
   * in place of a plugin is called once and its result registered.
   * @throws {TypeError} When a name, layer type or alias is already taken,
   * or a factory needs arguments or returns no plugin.
   */
  use(plugin: PluginSource | readonly PluginSource[]): Registry;
  /** The format plugin of this name; throws `TypeError` listing known formats. */
  format(name: string): FormatPlugin;
  /** Every format plugin, in registration order. */
  formats(): FormatPlugin[];
  /** The format for a file path or extension; throws `TypeError` listing known extensions. */
  formatForPath(pathOrExtension: string): FormatPlugin;
  /** The first format whose `detect` accepts these leading bytes, or `undefined`. */
  detect(head: Uint8Array): FormatPlugin | undefined;
  /** The layer plugin for a type or alias; throws `TypeError` listing known types. */
  layer(type: string): LayerPlugin<unknown>;
  /** Every layer plugin, in registration order. */
  layers(): LayerPlugin<unknown>[];
}

function extensionOf(pathOrExt: string): string {
  const base = pathOrExt.split(/[\\/]/).pop() ?? pathOrExt;
  const dot = base.lastIndexOf(".");
  return (dot < 0 ? `.${base}` : base.slice(dot)).toLowerCase();
}

/**
 * Creates an empty registry.
 *
 * @returns A registry with no plugins.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const reg = createRegistry().use({
 *   kind: "format", name: "raw", extensions: [".raw"],
 *   detect: (head) => head[0] === 0x52,
 * });
 * assert(reg.formatForPath("model.raw").name === "raw");
 * ```
 *
 * @example A format factory, passed without calling it
 * ```ts
 * import { assert } from "@std/assert";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * import type { FormatPlugin } from "@modelhost/modelhost/core";
 * const rawFormat = (): FormatPlugin => ({ kind: "format", name: "raw", extensions: [".raw"] });
 * const reg = createRegistry().use(rawFormat);
 * assert(reg.format("raw").name === "raw");
 * ```
 */
export function createRegistry(): Registry {
  const formats = new Map<string, FormatPlugin>();
  const layers = new Map<string, LayerPlugin<unknown>>();
  const layerNames = new Map<string, LayerPlugin<unknown>>();

  const resolveOne = (source: PluginSource): Plugin => {
    if (typeof source !== "function") return source;
    if (source.length !== 0) {
      throw new TypeError(
        `Cannot register plugin factory ${
          source.name || "(anonymous)"
        }: it takes ${source.length} argument(s); pass its result instead, e.g. use(${
          source.name || "factory"
        }(options))`,
      );
    }
    const p = source() as unknown;
    if (p === null || typeof p !== "object") {
      throw new TypeError(
        `Cannot register plugin factory ${
          source.name || "(anonymous)"
        }: it returned ${p === null ? "null" : typeof p}, not a plugin object`,
      );
    }
    return p as Plugin;
  };

  const addOne = (p: Plugin): void => {
    if (p.kind === "format") {
      if (typeof p.name !== "string" || p.name === "") {
        throw new TypeError("Cannot register a format plugin without a name");
      }
      if (formats.has(p.name)) {
        throw new TypeError(
          `Cannot register format "${p.name}": a format of that name is already registered`,
        );
      }
      formats.set(p.name, p);
    } else if (p.kind === "layer") {
      const names = [p.type, ...(p.aliases ?? [])];
      for (const n of names) {
        const other = layerNames.get(n);
        if (other) {
          throw new TypeError(
            `Cannot register layer "${p.type}": the name "${n}" is already taken by layer "${other.type}"`,
          );
        }
      }
      layers.set(p.type, p);
      for (const n of names) layerNames.set(n, p);
    } else {
      const kind = (p as { kind?: unknown }).kind;
      throw new TypeError(
        `Cannot register plugin: kind must be "format" or "layer", got ${
          JSON.stringify(kind)
        }`,
      );
    }
  };

  const reg: Registry = {
    use(plugin) {
      const list: readonly PluginSource[] = Array.isArray(plugin)
        ? plugin
        : [plugin as PluginSource];
      for (const p of list) addOne(resolveOne(p));
      return reg;
    },
    format(name) {
      const f = formats.get(name) ?? formats.get(name.toLowerCase());
      if (!f) {
        throw new TypeError(
          `Unknown format "${name}"; registered formats: ${
            [...formats.keys()].join(", ") || "none"
          }`,
        );
      }
      return f;
    },
    formats: () => [...formats.values()],
    formatForPath(pathOrExt) {
      const ext = extensionOf(pathOrExt);
      // A compound extension (".bundle.json") wins over its last part (".json").
      const base = (pathOrExt.split(/[\\/]/).pop() ?? "").toLowerCase();
      for (const f of formats.values()) {
        for (const e of f.extensions) {
          if (e.length > ext.length && e.endsWith(ext) && base.endsWith(e)) {
            return f;
          }
        }
      }
      for (const f of formats.values()) {
        if (f.extensions.includes(ext)) return f;
      }
      const known = [...formats.values()].flatMap((f) =>
        f.extensions.map((e) => `${e} (${f.name})`)
      );
      throw new TypeError(
        `No format for "${pathOrExt}" (extension ${ext}); registered: ${
          known.join(", ") || "none"
        }`,
      );
    },
    detect(head) {
      for (const f of formats.values()) {
        if (f.detect?.(head)) return f;
      }
      return undefined;
    },
    layer(type) {
      const l = layerNames.get(type);
      if (!l) {
        throw new TypeError(
          `Unknown layer type "${type}"; registered layer types: ${
            [...layerNames.keys()].join(", ") || "none"
          }`,
        );
      }
      return l;
    },
    layers: () => [...layers.values()],
  };
  return reg;
}
