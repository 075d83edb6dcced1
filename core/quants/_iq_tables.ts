/**
 * The lookup tables of the IQ, ternary and FP4 types, unpacked once from
 * `_iq_grids.ts`: each grid as bytes (entry `i`, element `j` at
 * `grid[i * width + j]`), the sign table shared by the IQ2/IQ3 types, and the
 * non-linear 4-bit value tables.
 *
 * @module
 */

import { fromBase64 } from "../_base64.ts";
import {
  IQ1S_GRID_PACKED,
  IQ2S_GRID_PACKED,
  IQ2XS_GRID_PACKED,
  IQ2XXS_GRID_PACKED,
  IQ3S_GRID_PACKED,
  IQ3XXS_GRID_PACKED,
} from "./_iq_grids.ts";

function unpack(
  b64: string,
  entries: number,
  width: number,
  levels: readonly number[],
): Int8Array {
  const packed = fromBase64(b64);
  const bits = levels.length === 3 ? 2 : 3;
  const n = entries * width;
  const out = new Int8Array(n);
  for (let i = 0, pos = 0; i < n; i++) {
    let idx = 0;
    for (let b = 0; b < bits; b++, pos++) {
      idx |= ((packed[pos >> 3] >> (pos & 7)) & 1) << b;
    }
    out[i] = levels[idx];
  }
  return out;
}

const L2 = [0x08, 0x19, 0x2b];

/** `iq2xxs_grid`: 256 × 8 magnitudes from {8, 25, 43}. */
export const IQ2XXS_GRID: Int8Array = unpack(IQ2XXS_GRID_PACKED, 256, 8, L2);
/** `iq2xs_grid`: 512 × 8 magnitudes from {8, 25, 43}. */
export const IQ2XS_GRID: Int8Array = unpack(IQ2XS_GRID_PACKED, 512, 8, L2);
/** `iq2s_grid`: 1024 × 8 magnitudes from {8, 25, 43}. */
export const IQ2S_GRID: Int8Array = unpack(IQ2S_GRID_PACKED, 1024, 8, L2);
/** `iq3xxs_grid`: 256 × 4 magnitudes from {4, 12, …, 52, 62}. */
export const IQ3XXS_GRID: Int8Array = unpack(
  IQ3XXS_GRID_PACKED,
  256,
  4,
  [0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3e],
);
/** `iq3s_grid`: 512 × 4 magnitudes from {1, 3, …, 15}. */
export const IQ3S_GRID: Int8Array = unpack(
  IQ3S_GRID_PACKED,
  512,
  4,
  [1, 3, 5, 7, 9, 11, 13, 15],
);
/** `iq1s_grid`: 2048 × 8 values from {-1, 0, 1}. */
export const IQ1S_GRID: Int8Array = unpack(IQ1S_GRID_PACKED, 2048, 8, [
  -1,
  0,
  1,
]);

/**
 * `ksigns_iq2xs`: seven stored sign bits plus an eighth that makes the count
 * of minus signs even.
 */
export const KSIGNS: Uint8Array = Uint8Array.from(
  { length: 128 },
  (_, i) => {
    let p = 0;
    for (let b = i; b; b >>= 1) p ^= b & 1;
    return i | (p << 7);
  },
);

/** `kvalues_iq4nl`: the 16 non-linear levels of IQ4_NL and IQ4_XS. */
export const KVALUES_IQ4NL: Int8Array = Int8Array.from([
  -127,
  -104,
  -83,
  -65,
  -49,
  -35,
  -22,
  -10,
  1,
  13,
  25,
  38,
  53,
  69,
  89,
  113,
]);

/** `kvalues_mxfp4`: the E2M1 values doubled, shared by MXFP4 and NVFP4. */
export const KVALUES_FP4: Int8Array = Int8Array.from([
  0,
  1,
  2,
  3,
  4,
  6,
  8,
  12,
  0,
  -1,
  -2,
  -3,
  -4,
  -6,
  -8,
  -12,
]);

/** IQ1_S / IQ1_M grid shift (`IQ1S_DELTA`). */
export const IQ1S_DELTA = 0.125;

const bits = new Uint32Array(1);
const asFloat = new Float32Array(bits.buffer);

/**
 * Half of the E8M0 scale `2^(e-127)` (`ggml_e8m0_to_fp32_half`), the MXFP4
 * block scale for the doubled E2M1 values.
 *
 * @param e The stored exponent byte.
 * @returns `2^(e-128)` as an F32 (subnormal for e < 2).
 */
export function e8m0Half(e: number): number {
  bits[0] = e < 2 ? 0x00200000 << e : (e - 1) << 23;
  return asFloat[0];
}

/**
 * Half of an unsigned E4M3 scale (`ggml_ue4m3_to_fp32`, NVFP4); 0 and 0x7F
 * read as zero.
 *
 * @param x The stored byte.
 * @returns The F32 value times 0.5.
 */
export function ue4m3Half(x: number): number {
  if (x === 0 || x === 0x7f) return 0;
  const exp = (x >> 3) & 0xf;
  const man = x & 7;
  const raw = exp === 0 ? man * 2 ** -9 : (1 + man / 8) * 2 ** (exp - 7);
  return Math.fround(Math.fround(raw) * 0.5);
}
