/**
 * `linear()` for a plain F32 weight, written into a buffer the caller
 * reuses (a network's buffer for the activations between two layers)
 * through the native backend's `gemmInto`, with the dense layer's ReLU
 * applied by the product's own threads. Declines (null) wherever
 * `linear()` would not reach the native backend, so the caller runs its
 * usual path there.
 *
 * @module
 */

import type { Tensor } from "../core/tensor.ts";
import { f32GemmBackendFor } from "./fast/backend.ts";
import { linearObserver } from "./_linear_observer.ts";
import { f32WeightView } from "./_f32_view.ts";

/**
 * `y = x·Wᵀ + b` (then `v > 0 ? v : 0` with `relu`) into `scratch(rows ×
 * out)`, the same values as `linear()` on the native backend (then the
 * ReLU), or null where that path does not apply: no native backend with
 * `gemmInto` for this size, a weight that is not plain F32 or not
 * 4-byte aligned, shapes that do not fit (the caller's `linear()` then
 * throws its errors). `scratch` is called only when the product runs.
 *
 * @param x Input rows, `rows × in`.
 * @param rows Number of rows.
 * @param w Weight `[out, in]`.
 * @param bias Bias (`out` values) or undefined.
 * @param relu Whether to apply the ReLU.
 * @param scratch Gives the output buffer of the asked length; it shares
 * no memory with x, w or the bias.
 * @returns The output (what `scratch` gave), or null.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { linearInto } from "./_linear_into.ts";
 * import { tensorFromF32 } from "../core/tensor.ts";
 * const w = tensorFromF32("w", new Float32Array(4), [2, 2]);
 * // without an installed native backend it declines
 * const y = linearInto(new Float32Array(2), 1, w, undefined, true, (n) => new Float32Array(n));
 * assert(y === null);
 * ```
 */
export function linearInto(
  x: Float32Array,
  rows: number,
  w: Tensor,
  bias: Float32Array | undefined,
  relu: boolean,
  scratch: (length: number) => Float32Array,
): Float32Array | null {
  const [outF, inF] = w.shape;
  const wf = f32WeightView(w, outF, inF);
  if (!wf || x.length !== rows * inF || (bias && bias.length !== outF)) {
    return null;
  }
  const native = f32GemmBackendFor(rows, inF, outF);
  if (!native?.gemmInto) return null;
  const out = scratch(rows * outF);
  if (!native.gemmInto(x, rows, inF, wf, outF, bias, relu, out)) return null;
  linearObserver()?.(w, x, rows);
  return out;
}
