/**
 * The argument checks of `y = x · Wᵀ + b`, shared by the reference
 * (`linearRef` in `./linear.ts`) and the fast path (`./fast/`), so both
 * reject bad input with the same typed errors.
 *
 * @module
 */

import type { Tensor } from "../core/tensor.ts";
import { type FastDType, rowBytes } from "./quant_ref.ts";

/**
 * Checks that `w` is 2-D and `x` holds `rows × in` values.
 *
 * @param x Input rows.
 * @param rows Number of rows.
 * @param w Weight tensor `[out, in]`.
 * @returns `[out, in]`.
 * @throws {TypeError} When `w` is not 2-D or `x` has the wrong length.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { checkLinearShapes } from "./_linear_checks.ts";
 * const w = { name: "w", dtype: "F32" as const, shape: [3, 2], bytes: new Uint8Array(24) };
 * assert(checkLinearShapes(new Float32Array(4), 2, w)[0] === 3);
 * ```
 */
export function checkLinearShapes(
  x: Float32Array,
  rows: number,
  w: Tensor,
): [number, number] {
  if (w.shape.length !== 2) {
    throw new TypeError(
      `Weight "${w.name}" must be 2-D [out, in], has shape [${
        w.shape.join(", ")
      }]`,
    );
  }
  const [outF, inF] = w.shape;
  if (!Number.isInteger(rows) || rows < 0 || x.length !== rows * inF) {
    throw new TypeError(
      `Cannot apply "${w.name}" [${outF}, ${inF}]: input has ${x.length} values, expected ${rows} × ${inF}`,
    );
  }
  return [outF, inF];
}

/**
 * Checks that a bias, when given, has one value per output.
 *
 * @param name The weight's name, for the message.
 * @param outF Outputs.
 * @param bias The bias, or undefined.
 * @throws {TypeError} When the lengths differ.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkLinearBias } from "./_linear_checks.ts";
 * assertThrows(() => checkLinearBias("w", 3, new Float32Array(2)), TypeError);
 * ```
 */
export function checkLinearBias(
  name: string,
  outF: number,
  bias?: Float32Array,
): void {
  if (bias && bias.length !== outF) {
    throw new TypeError(
      `Cannot apply "${name}": bias has ${bias.length} values, expected ${outF}`,
    );
  }
}

/**
 * Checks that a weight's bytes hold `[out, in]` values of its dtype.
 *
 * @param w The weight.
 * @param dtype Its dtype.
 * @param outF Outputs.
 * @param inF Inputs (a whole number of blocks).
 * @throws {RangeError} When the bytes are short or `in` is not whole blocks.
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { checkWeightBytes } from "./_linear_checks.ts";
 * const w = { name: "w", dtype: "Q8_0" as const, shape: [2, 32], bytes: new Uint8Array(34) };
 * assertThrows(() => checkWeightBytes(w, "Q8_0", 2, 32), RangeError, "needs 68 bytes");
 * ```
 */
export function checkWeightBytes(
  w: Tensor,
  dtype: FastDType,
  outF: number,
  inF: number,
): void {
  const need = outF * rowBytes(dtype, inF);
  if (w.bytes.byteLength < need) {
    throw new RangeError(
      `Cannot read weight "${w.name}": ${dtype} [${outF}, ${inF}] needs ${need} bytes, has ${w.bytes.byteLength}`,
    );
  }
}
