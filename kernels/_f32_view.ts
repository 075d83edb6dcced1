/**
 * A plain F32 weight seen as a `Float32Array` over its own bytes (no
 * copy), for the paths that hand weights to a native backend.
 *
 * @module
 */

import type { Tensor } from "../core/tensor.ts";

/**
 * `w`'s values as a view over its bytes, or null where that is not
 * possible: no weight, another dtype, a `quant` layout, a shape other
 * than `[outF, inF]`, bytes not 4-byte aligned or too short.
 *
 * @param w The weight, or undefined.
 * @param outF Expected rows of the weight.
 * @param inF Expected columns of the weight.
 * @returns The view, or null.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { f32WeightView } from "./_f32_view.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const w = tensorFromF32("w", new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
 * assert(f32WeightView(w, 2, 3)?.[5] === 6);
 * assert(f32WeightView(w, 3, 2) === null);
 * ```
 */
export function f32WeightView(
  w: Tensor | undefined,
  outF: number,
  inF: number,
): Float32Array | null {
  if (
    !w || w.dtype !== "F32" || w.quant || w.shape.length !== 2 ||
    w.shape[0] !== outF || w.shape[1] !== inF ||
    w.bytes.byteOffset % 4 !== 0 || w.bytes.byteLength < outF * inF * 4
  ) return null;
  return new Float32Array(w.bytes.buffer, w.bytes.byteOffset, outF * inF);
}
