/**
 * Shared parsing for the two normalization layers.
 *
 * @module
 */

import type { LayerConfig } from "../core/model.ts";
import type { ParseContext } from "../core/plugin.ts";
import {
  fieldError,
  type Fields,
  layerFields,
  numberField,
  optPositiveInt,
  resolveSize,
} from "./_fields.ts";

/** Fields both norms have. */
export interface NormBase {
  /** Where the layer sits. */
  path: string;
  /** Features normalized together (the last dimension). */
  size: number;
  /** Added under the square root. */
  epsilon: number;
}

/** Parses `norm_size` (alias `input_size`) and `epsilon`. */
export function parseNorm(
  json: LayerConfig,
  ctx: ParseContext,
  type: string,
  extra: string[] = [],
): { base: NormBase; fields: Fields } {
  const o = layerFields(json, ctx, type, [
    "norm_size",
    "input_size",
    "epsilon",
    ...extra,
  ]);
  const a = optPositiveInt(o, "norm_size", ctx.path);
  const b = optPositiveInt(o, "input_size", ctx.path);
  if (a !== undefined && b !== undefined && a !== b) {
    throw fieldError(
      ctx.path,
      "input_size",
      `expected ${a} (norm_size), got ${b}`,
    );
  }
  const size = resolveSize(
    { norm_size: a ?? b },
    "norm_size",
    ctx,
    ctx.inputSize,
  );
  return {
    base: {
      path: ctx.path,
      size,
      epsilon: numberField(o, "epsilon", ctx.path, 1e-5, { min: 0 }),
    },
    fields: o,
  };
}
