/**
 * Scoped weight access over a map of tensors: layers read their weights by
 * relative name, and a missing tensor or wrong shape names the full path.
 *
 * @module
 */

import type { Scope } from "./plugin.ts";
import { type Tensor, toFloat32 } from "./tensor.ts";

function join(prefix: string, name: string): string {
  return prefix === "" ? name : name === "" ? prefix : `${prefix}.${name}`;
}

/**
 * Creates a {@link Scope} over tensors keyed by full name. F32 widenings are
 * cached per tensor, so layers can call `getF32` on every forward.
 *
 * @param tensors Tensors by full name (`layers.0.weight`).
 * @param prefix The scope's prefix. @default ""
 * @returns The scope.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createScope } from "@modelhost/modelhost/core";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const w = tensorFromF32("layers.0.weight", new Float32Array(6), [2, 3]);
 * const scope = createScope(new Map([[w.name, w]])).at("layers.0");
 * assert(scope.getF32("weight", [2, 3]).length === 6);
 * ```
 */
export function createScope(
  tensors: ReadonlyMap<string, Tensor>,
  prefix = "",
): Scope {
  const cache = new Map<string, Float32Array>();
  const make = (p: string): Scope => ({
    prefix: p,
    at: (child) => make(join(p, child)),
    has: (name) => tensors.has(join(p, name)),
    get(name, shape) {
      const full = join(p, name);
      const t = tensors.get(full);
      if (!t) {
        const near = [...tensors.keys()].filter((k) => k.startsWith(p)).slice(
          0,
          12,
        );
        throw new TypeError(
          `Missing weight "${full}"${
            near.length ? `; tensors under "${p}": ${near.join(", ")}` : ""
          }`,
        );
      }
      if (
        shape &&
        (shape.length !== t.shape.length ||
          shape.some((d, i) => d !== t.shape[i]))
      ) {
        throw new TypeError(
          `Weight "${full}" has shape [${t.shape.join(", ")}], expected [${
            shape.join(", ")
          }]`,
        );
      }
      return t;
    },
    getF32(name, shape) {
      const t = this.get(name, shape);
      let v = cache.get(t.name);
      if (!v) {
        v = t.dtype === "F32" && !t.quant && t.bytes.byteOffset % 4 === 0
          ? new Float32Array(
            t.bytes.buffer,
            t.bytes.byteOffset,
            t.bytes.byteLength / 4,
          )
          : toFloat32(t);
        cache.set(t.name, v);
      }
      return v;
    },
  });
  return make(prefix);
}
