/**
 * Error helpers shared by every module.
 *
 * modelhost throws built-in error classes where one fits: `RangeError` for
 * sizes and offsets, `TypeError` for a wrong dtype, shape or config,
 * `SyntaxError` for an unparsable header. The one subclass is
 * {@link UnsupportedDTypeError}, which callers catch to fall back to another
 * type.
 *
 * @module
 */

/**
 * Thrown when a dtype is known by name but cannot be converted here
 * (for example the GGUF `IQ*` and `TQ*` types), or when a dtype code read
 * from a file is not known at all.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { UnsupportedDTypeError } from "@modelhost/modelhost/core";
 * const err = new UnsupportedDTypeError("IQ2_XXS", "no dequantizer for this type");
 * assert(err.dtype === "IQ2_XXS");
 * ```
 */
export class UnsupportedDTypeError extends TypeError {
  /** The dtype name (or the numeric code as text when the code is unknown). */
  readonly dtype: string;
  /**
   * Creates the error.
   *
   * @param dtype The dtype name or code.
   * @param reason Why it is not supported.
   */
  constructor(dtype: string, reason: string) {
    super(`Unsupported dtype ${dtype}: ${reason}`);
    this.name = "UnsupportedDTypeError";
    this.dtype = dtype;
  }
}

/**
 * Narrows an unsigned 64-bit value read as a bigint to a JavaScript number.
 *
 * @param value The value read from a file.
 * @param what What the value is, for the error message ("tensor count").
 * @returns The same value as a number.
 * @throws {RangeError} When the value is negative or above 2^53 - 1.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { u64ToNumber } from "@modelhost/modelhost/core";
 * assert(u64ToNumber(42n, "tensor count") === 42);
 * ```
 */
export function u64ToNumber(value: bigint, what: string): number {
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(
      `Cannot use ${what} ${value}: it is outside 0..2^53-1, the range a JavaScript number holds exactly`,
    );
  }
  return Number(value);
}

/**
 * Multiplies dimensions into an element count, refusing negative,
 * fractional or overflowing results.
 *
 * @param shape The dimensions.
 * @param what What the shape belongs to, for the error message.
 * @returns The product (1 for a scalar shape `[]`).
 * @throws {RangeError} When a dimension is not a non-negative integer or the
 * product passes 2^53 - 1.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { elementCount } from "@modelhost/modelhost/core";
 * assert(elementCount([2, 3, 4], "tensor x") === 24);
 * ```
 */
export function elementCount(shape: readonly number[], what: string): number {
  let n = 1;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i];
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new RangeError(
        `Invalid shape [${
          shape.join(", ")
        }] for ${what}: dimension ${i} is ${d}, expected a non-negative integer`,
      );
    }
    n *= d;
    if (n > Number.MAX_SAFE_INTEGER) {
      throw new RangeError(
        `Invalid shape [${
          shape.join(", ")
        }] for ${what}: element count overflows 2^53-1`,
      );
    }
  }
  return n;
}
