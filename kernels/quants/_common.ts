/**
 * Helpers shared by the block (de)quantizers: half-precision scales, ggml's
 * rounding, C's float-to-int conversions, and the input checks.
 *
 * Every quantizer mirrors C code that computes in 32-bit `float`; in
 * JavaScript each operation is done in double and rounded with
 * `Math.fround`, which gives the same result as the float operation for
 * `+ - * /` and `sqrt` (double has more than twice float's precision).
 *
 * @module
 */

/** F16 bit pattern → F32 value, for all 65536 patterns (built once, 256 KiB). */
export const HALF_TO_F32: Float32Array = (() => {
  const bits = new Uint16Array(65536);
  for (let i = 0; i < 65536; i++) bits[i] = i;
  return Float32Array.from(new Float16Array(bits.buffer));
})();

const h16 = new Float16Array(1);
const h16bits = new Uint16Array(h16.buffer);

/**
 * Rounds an F32 value to F16 (nearest even, as ggml's `GGML_FP32_TO_FP16`)
 * and returns its bit pattern.
 *
 * @param x The value.
 * @returns The 16-bit pattern.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { f32ToHalfBits } from "./_common.ts";
 * assert(f32ToHalfBits(1) === 0x3c00 && f32ToHalfBits(-0) === 0x8000);
 * ```
 */
export function f32ToHalfBits(x: number): number {
  h16[0] = x;
  return h16bits[0];
}

const f32 = new Float32Array(1);
const f32bits = new Int32Array(f32.buffer);

/**
 * ggml's `nearest_int`: adds 1.5·2^23 in float and reads the mantissa bits,
 * i.e. round half to even for |x| ≤ 4194303; outside that range it returns
 * the same bits C does.
 *
 * @param x An F32 value.
 * @returns The integer.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { nearestInt } from "./_common.ts";
 * assert(nearestInt(2.5) === 2 && nearestInt(-3.5) === -4 && nearestInt(0.7) === 1);
 * ```
 */
export function nearestInt(x: number): number {
  if (x <= 4194303 && x >= -4194303) {
    return Math.fround(x + 12582912) - 12582912;
  }
  f32[0] = x + 12582912;
  return (f32bits[0] & 0x007fffff) - 0x00400000;
}

/**
 * C's `roundf`: halves round away from zero.
 *
 * @param x The value.
 * @returns The rounded value.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { roundAway } from "./_common.ts";
 * assert(roundAway(-2.5) === -3 && roundAway(2.5) === 3);
 * ```
 */
export function roundAway(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

/**
 * Checks the inputs of a block decoder.
 *
 * @param name Dtype name for messages.
 * @param src The stored bytes.
 * @param count Elements to decode.
 * @param blockSize Elements per block.
 * @param blockBytes Bytes per block.
 * @returns The number of blocks.
 * @throws {RangeError} When `count` is not whole blocks or `src` is short.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { checkBlocks } from "./_common.ts";
 * assert(checkBlocks("Q8_0", new Uint8Array(68), 64, 32, 34) === 2);
 * ```
 */
export function checkBlocks(
  name: string,
  src: Uint8Array,
  count: number,
  blockSize: number,
  blockBytes: number,
): number {
  if (!Number.isSafeInteger(count) || count < 0 || count % blockSize !== 0) {
    throw new RangeError(
      `Cannot decode ${count} ${name} values: the count must be a multiple of the block size ${blockSize}`,
    );
  }
  const nb = count / blockSize;
  if (src.byteLength < nb * blockBytes) {
    throw new RangeError(
      `Cannot decode ${count} ${name} values: needs ${
        nb * blockBytes
      } bytes (${nb} blocks of ${blockBytes}), got ${src.byteLength}`,
    );
  }
  return nb;
}

/**
 * Checks the input of a block encoder.
 *
 * @param name Dtype name for messages.
 * @param x The values.
 * @param blockSize Elements per block.
 * @returns The number of blocks.
 * @throws {RangeError} When the length is not whole blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { checkValues } from "./_common.ts";
 * assert(checkValues("Q4_K", new Float32Array(512), 256) === 2);
 * ```
 */
export function checkValues(
  name: string,
  x: Float32Array,
  blockSize: number,
): number {
  if (x.length % blockSize !== 0) {
    throw new RangeError(
      `Cannot encode ${x.length} values as ${name}: the count must be a multiple of the block size ${blockSize}`,
    );
  }
  return x.length / blockSize;
}
