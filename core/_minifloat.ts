/**
 * Codecs for the sub-16-bit floats of the dtype table: F8_E4M3 (the "FN"
 * variant SafeTensors and PyTorch store), F8_E5M2 and F4 (E2M1, two codes per
 * byte, low nibble first).
 *
 * All three narrow from F32 with round to nearest, ties to even, working on
 * the F32 bits (no double rounding). What happens past the largest finite
 * value differs per format and follows the reference each format is written
 * for:
 *
 * - F8_E4M3 (bias 7, max 448, no infinities, NaN = S.1111.111): the
 *   non-saturating conversion of PyTorch 2.x (`c10::Float8_e4m3fn`). A value
 *   whose rounded magnitude would pass 448 (|x| > 464, the midpoint to the
 *   next step 480), ±Inf and NaN all become NaN, sign kept (0x7F / 0xFF).
 * - F8_E5M2 (bias 15, max 57344, IEEE-like): as PyTorch 2.x
 *   (`c10::Float8_e5m2`) and IEEE rounding: |x| ≥ 61440 becomes ±Inf, ±Inf
 *   stays ±Inf, NaN becomes 0x7F / 0xFF (sign kept, payload dropped).
 * - F4 E2M1 (bias 1, values 0, 0.5, 1, 1.5, 2, 3, 4, 6 with sign; no
 *   infinities, no NaN): saturating, as the OCP Microscaling spec's
 *   conversions and `ml_dtypes.float4_e2m1fn` do: |x| > 6 and ±Inf become ±6.
 *   NaN has no code; like `ml_dtypes` it becomes code 0x8 (-0).
 *
 * Widening is exact: every code decodes to the F32 value it names, -0 stays
 * -0, subnormals keep their value, E5M2 NaN codes keep their two payload bits
 * in the top of the F32 mantissa, and the E4M3 NaN decodes to the quiet NaN
 * 0x7FC00000 with its sign.
 *
 * @module
 */

/** Everything that tells one small float format from another. */
interface MinifloatSpec {
  /** The dtype name, for error messages. */
  readonly name: string;
  /** Mantissa (fraction) bits. */
  readonly mantissaBits: number;
  /** Exponent bias. */
  readonly bias: number;
  /** The sign bit of one code (0x80 for F8, 0x8 for F4). */
  readonly signBit: number;
  /** Largest magnitude code that holds a finite value. */
  readonly maxFinite: number;
  /** Magnitude code written when rounding passes `maxFinite`. */
  readonly overflow: number;
  /** Magnitude code written for ±Inf. */
  readonly infinity: number;
  /** Code written for NaN, before the sign is added. */
  readonly nan: number;
  /** Whether a NaN input's sign is carried into the code. */
  readonly nanKeepsSign: boolean;
  /** F32 bits of a magnitude code that is not a finite number, or undefined. */
  special(mag: number): number | undefined;
}

const E4M3: MinifloatSpec = {
  name: "F8_E4M3",
  mantissaBits: 3,
  bias: 7,
  signBit: 0x80,
  maxFinite: 0x7e,
  overflow: 0x7f,
  infinity: 0x7f,
  nan: 0x7f,
  nanKeepsSign: true,
  special: (mag) => mag === 0x7f ? 0x7fc00000 : undefined,
};

const E5M2: MinifloatSpec = {
  name: "F8_E5M2",
  mantissaBits: 2,
  bias: 15,
  signBit: 0x80,
  maxFinite: 0x7b,
  overflow: 0x7c,
  infinity: 0x7c,
  nan: 0x7f,
  nanKeepsSign: true,
  // Exponent all ones: mantissa 0 is infinity, anything else NaN whose two
  // mantissa bits go to the top of the F32 mantissa (as F16 widening does).
  special: (mag) => mag >= 0x7c ? 0x7f800000 | ((mag & 3) << 21) : undefined,
};

const E2M1: MinifloatSpec = {
  name: "F4",
  mantissaBits: 1,
  bias: 1,
  signBit: 0x8,
  maxFinite: 0x7,
  overflow: 0x7,
  infinity: 0x7,
  nan: 0x8,
  nanKeepsSign: false,
  special: () => undefined,
};

/** F32 bit patterns of every code of a format, index = code. */
function decodeTable(s: MinifloatSpec): Uint32Array {
  const codes = s.signBit * 2;
  const bits = new Uint32Array(codes);
  const f = new Float32Array(bits.buffer);
  for (let code = 0; code < codes; code++) {
    const sign = code & s.signBit ? 0x80000000 : 0;
    const mag = code & (s.signBit - 1);
    const special = s.special(mag);
    if (special !== undefined) {
      bits[code] = (special | sign) >>> 0;
      continue;
    }
    const e = mag >> s.mantissaBits;
    const m = mag & ((1 << s.mantissaBits) - 1);
    // Subnormals (e = 0) have no implicit one and the exponent of e = 1.
    f[code] = e === 0
      ? m * 2 ** (1 - s.bias - s.mantissaBits)
      : ((1 << s.mantissaBits) + m) * 2 ** (e - s.bias - s.mantissaBits);
    bits[code] = (bits[code] | sign) >>> 0;
  }
  return bits;
}

/** Shifts `sig` right by `drop` bits, rounding to nearest, ties to even. */
function shiftRoundEven(sig: number, drop: number): number {
  const q = sig >>> drop;
  const rem = sig & ((1 << drop) - 1);
  const half = 1 << (drop - 1);
  return rem > half || (rem === half && (q & 1) === 1) ? q + 1 : q;
}

/** Encodes the F32 with bits `b` as one code of format `s`. */
function encodeBits(s: MinifloatSpec, b: number): number {
  const sign = b >= 0x80000000 ? s.signBit : 0;
  const a = b & 0x7fffffff;
  if (a > 0x7f800000) return s.nanKeepsSign ? s.nan | sign : s.nan;
  if (a === 0x7f800000) return s.infinity | sign;
  const fe = a >>> 23;
  // F32 subnormals are far below half the smallest subnormal of these formats.
  if (fe === 0) return sign;
  const sig = (a & 0x7fffff) | 0x800000; // 24-bit significand, value sig * 2^(e-23)
  const e = fe - 127;
  const eMin = 1 - s.bias; // exponent of the smallest normal
  const m = s.mantissaBits;
  let mag: number;
  if (e < eMin) {
    // Subnormal result: count units of the smallest subnormal 2^(eMin-m).
    const drop = 23 - m + (eMin - e);
    if (drop > 24) return sign; // below a quarter unit: rounds to zero
    mag = shiftRoundEven(sig, drop); // may carry into the smallest normal: fine
  } else {
    // Rounding may carry the mantissa into the exponent; the sum handles it.
    mag = ((e - eMin + 1) << m) + shiftRoundEven(sig, 23 - m) - (1 << m);
  }
  return mag > s.maxFinite ? s.overflow | sign : mag | sign;
}

function checkBytes(name: string, src: Uint8Array, need: number): void {
  if (src.byteLength < need) {
    throw new RangeError(
      `Cannot decode ${name}: needs ${need} bytes, got ${src.byteLength}`,
    );
  }
}

function bitsOf(src: Float32Array): Uint32Array {
  return new Uint32Array(src.buffer, src.byteOffset, src.length);
}

/** A widening and a narrowing function, as a dtype row holds them. */
export interface MinifloatCodec {
  /** Decodes `count` values from `src`. */
  toF32(src: Uint8Array, count: number): Float32Array;
  /** Encodes values, rounding to nearest even. */
  fromF32(src: Float32Array): Uint8Array;
}

function byteCodec(s: MinifloatSpec): MinifloatCodec {
  const table = decodeTable(s);
  return {
    toF32(src, count) {
      checkBytes(s.name, src, count);
      const out = new Uint32Array(count);
      for (let i = 0; i < count; i++) out[i] = table[src[i]];
      return new Float32Array(out.buffer);
    },
    fromF32(src) {
      const bits = bitsOf(src);
      const out = new Uint8Array(src.length);
      for (let i = 0; i < out.length; i++) out[i] = encodeBits(s, bits[i]);
      return out;
    },
  };
}

function nibbleCodec(s: MinifloatSpec): MinifloatCodec {
  const table = decodeTable(s);
  return {
    toF32(src, count) {
      checkBytes(s.name, src, Math.ceil(count / 2));
      const out = new Uint32Array(count);
      const pairs = count >>> 1;
      for (let i = 0; i < pairs; i++) {
        const byte = src[i];
        out[2 * i] = table[byte & 15];
        out[2 * i + 1] = table[byte >>> 4];
      }
      if (count & 1) out[count - 1] = table[src[pairs] & 15];
      return new Float32Array(out.buffer);
    },
    fromF32(src) {
      const bits = bitsOf(src);
      const out = new Uint8Array(Math.ceil(src.length / 2));
      for (let i = 0; i < src.length; i++) {
        const code = encodeBits(s, bits[i]);
        out[i >>> 1] |= (i & 1) ? code << 4 : code;
      }
      return out;
    },
  };
}

/** F8_E4M3 ("E4M3FN"): bias 7, max 448, NaN = S.1111.111, no infinities. */
export const f8e4m3: MinifloatCodec = byteCodec(E4M3);
/** F8_E5M2: bias 15, max 57344, ±Inf and NaN as in IEEE 754. */
export const f8e5m2: MinifloatCodec = byteCodec(E5M2);
/** F4 E2M1: bias 1, max 6, two codes per byte with the low nibble first. */
export const f4e2m1: MinifloatCodec = nibbleCodec(E2M1);
