/**
 * The dtype table: one row per element type modelhost knows, with the facts
 * every format needs (SafeTensors name, GGUF type id, block size, bytes per
 * block) and the converters to and from F32. Everything else (row sizes,
 * byte lengths) is derived from this table; adding a dtype edits one row.
 *
 * @module
 */

import { UnsupportedDTypeError } from "./errors.ts";
import { f4e2m1, f8e4m3, f8e5m2 } from "./_minifloat.ts";
import {
  QUANT_BLOCKS,
  type QuantBlock,
  type QuantTypeName,
} from "./quants/blocks.ts";
import { QUANT_CODECS } from "./quants/codecs.ts";
import { widenF16 } from "./quants/f16_widen.ts";

export type { QuantTypeName } from "./quants/blocks.ts";

/**
 * Every dtype name modelhost knows, including those it can only name; the
 * quantized ones are listed in `core/quants/blocks.ts`.
 */
export type DTypeName =
  | "BOOL"
  | "U8"
  | "I8"
  | "I16"
  | "U16"
  | "I32"
  | "U32"
  | "I64"
  | "U64"
  | "F16"
  | "BF16"
  | "F32"
  | "F64"
  | "F8_E4M3"
  | "F8_E5M2"
  | "F4"
  | QuantTypeName;

/** Decodes `count` elements stored in `src` to F32. */
export type ToF32 = (src: Uint8Array, count: number) => Float32Array;
/** Encodes F32 values into this dtype's little-endian bytes. */
export type FromF32 = (src: Float32Array) => Uint8Array;

/** One row of the dtype table. */
export interface DTypeInfo {
  /** Canonical name (the SafeTensors spelling where SafeTensors has it). */
  readonly name: DTypeName;
  /** What kind of values the type holds. */
  readonly kind: "bool" | "int" | "float" | "quant";
  /** The SafeTensors `dtype` string, when SafeTensors can hold the type. */
  readonly safetensors?: string;
  /** The ggml type id used in GGUF tensor infos, when GGUF has the type. */
  readonly gguf?: number;
  /** Elements per block (1 for plain scalars, 2 for packed F4, 32 or 256 for GGUF blocks). */
  readonly blockSize: number;
  /** Bytes per block. */
  readonly blockBytes: number;
  /** Whether every F32 value of this type's range converts both ways without loss. */
  readonly exactInF32: boolean;
  /** Widening to F32; absent for types that are only named (IQ*, TQ*). */
  toF32?: ToF32;
  /** Narrowing from F32; absent where the type is read-only or only named. */
  fromF32?: FromF32;
}

/**
 * Copies `src` into a fresh ArrayBuffer when it is not aligned to `align` bytes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { alignedView } from "@modelhost/modelhost/core";
 * const odd = new Uint8Array(9).subarray(1);
 * const view = alignedView(odd, 4);
 * assert(view.byteOffset % 4 === 0 && view.length === 8);
 * ```
 */
export function alignedView(src: Uint8Array, align: number): Uint8Array {
  if (src.byteOffset % align === 0) return src;
  return src.slice();
}

function viewOf<T>(
  Ctor: { new (buf: ArrayBufferLike, off: number, len: number): T },
  src: Uint8Array,
  bytesPer: number,
  count: number,
): T {
  const a = alignedView(src, bytesPer);
  return new Ctor(a.buffer, a.byteOffset, count);
}

function checkBytes(name: string, src: Uint8Array, need: number): void {
  if (src.byteLength < need) {
    throw new RangeError(
      `Cannot decode ${name}: needs ${need} bytes, got ${src.byteLength}`,
    );
  }
}

/**
 * Round half to even, the rounding of IEEE conversions and NumPy's `rint`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { roundHalfEven } from "@modelhost/modelhost/core";
 * assert(roundHalfEven(2.5) === 2 && roundHalfEven(3.5) === 4 && roundHalfEven(-1.5) === -2);
 * ```
 */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return (r - x === 0.5 && r % 2 !== 0) ? r - 1 : r;
}

/** The constructor shape shared by the integer typed arrays. */
interface IntArrayConstructor {
  readonly BYTES_PER_ELEMENT: number;
  new (
    buffer: ArrayBuffer,
    byteOffset: number,
    length: number,
  ): { [i: number]: number };
  new (length: number): { [i: number]: number; readonly buffer: ArrayBuffer };
}

function intCodec(
  name: DTypeName,
  Ctor: IntArrayConstructor,
  min: number,
  max: number,
): { toF32: ToF32; fromF32: FromF32 } {
  const size = Ctor.BYTES_PER_ELEMENT;
  return {
    toF32(src, count) {
      checkBytes(name, src, count * size);
      const a = alignedView(src, size);
      const v = new Ctor(a.buffer as ArrayBuffer, a.byteOffset, count);
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) out[i] = v[i];
      return out;
    },
    fromF32(src) {
      const out = new Ctor(src.length);
      for (let i = 0; i < src.length; i++) {
        const x = src[i];
        out[i] = x !== x
          ? 0
          : x <= min
          ? min
          : x >= max
          ? max
          : roundHalfEven(x);
      }
      return new Uint8Array(out.buffer);
    },
  };
}

function bigCodec(
  name: DTypeName,
  signed: boolean,
): { toF32: ToF32; fromF32: FromF32 } {
  // Limits as numbers (exact powers of two) and as the saturated bigint codes.
  const min = signed ? -(2 ** 63) : 0;
  const max = signed ? 2 ** 63 : 2 ** 64;
  const minBig = signed ? -(2n ** 63n) : 0n;
  const maxBig = signed ? 2n ** 63n - 1n : 2n ** 64n - 1n;
  return {
    toF32(src, count) {
      checkBytes(name, src, count * 8);
      const a = alignedView(src, 8);
      const v = signed
        ? new BigInt64Array(a.buffer, a.byteOffset, count)
        : new BigUint64Array(a.buffer, a.byteOffset, count);
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) out[i] = Number(v[i]);
      return out;
    },
    fromF32(src) {
      const out = signed
        ? new BigInt64Array(src.length)
        : new BigUint64Array(src.length);
      for (let i = 0; i < src.length; i++) {
        const x = src[i];
        out[i] = x !== x
          ? 0n
          : x >= max
          ? maxBig
          : x <= min
          ? minBig
          : BigInt(roundHalfEven(x));
      }
      return new Uint8Array(out.buffer);
    },
  };
}

const f32Codec = {
  toF32(src: Uint8Array, count: number): Float32Array {
    checkBytes("F32", src, count * 4);
    return viewOf(Float32Array, src, 4, count).slice();
  },
  fromF32(src: Float32Array): Uint8Array {
    return new Uint8Array(src.slice().buffer);
  },
};

const f64Codec = {
  toF32(src: Uint8Array, count: number): Float32Array {
    checkBytes("F64", src, count * 8);
    return Float32Array.from(viewOf(Float64Array, src, 8, count));
  },
  fromF32(src: Float32Array): Uint8Array {
    return new Uint8Array(Float64Array.from(src).buffer);
  },
};

/** F16: widening by table or platform (quants/f16_widen.ts), narrowing through the platform's `Float16Array` (round to nearest even). */
const f16Codec = {
  toF32(src: Uint8Array, count: number): Float32Array {
    checkBytes("F16", src, count * 2);
    // the table or the platform's Float16Array, whichever measured faster
    return widenF16(viewOf(Uint16Array, src, 2, count));
  },
  fromF32(src: Float32Array): Uint8Array {
    return new Uint8Array(Float16Array.from(src).buffer);
  },
};

/** BF16 is the upper half of an F32: widening is a shift, narrowing rounds to nearest even. */
const bf16Codec = {
  toF32(src: Uint8Array, count: number): Float32Array {
    checkBytes("BF16", src, count * 2);
    const h = viewOf(Uint16Array, src, 2, count);
    const out = new Uint32Array(count);
    for (let i = 0; i < count; i++) out[i] = h[i] << 16;
    return new Float32Array(out.buffer);
  },
  fromF32(src: Float32Array): Uint8Array {
    const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
    const out = new Uint16Array(src.length);
    for (let i = 0; i < src.length; i++) {
      const b = bits[i];
      if ((b & 0x7fffffff) > 0x7f800000) {
        out[i] = (b >>> 16) | 0x0040; // NaN stays NaN (quiet), sign kept
      } else {
        out[i] = (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
      }
    }
    return new Uint8Array(out.buffer);
  },
};

const boolCodec = {
  toF32(src: Uint8Array, count: number): Float32Array {
    checkBytes("BOOL", src, count);
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = src[i] ? 1 : 0;
    return out;
  },
  fromF32(src: Float32Array): Uint8Array {
    const out = new Uint8Array(src.length);
    for (let i = 0; i < src.length; i++) out[i] = src[i] !== 0 ? 1 : 0;
    return out;
  },
};

type Row = Omit<DTypeInfo, "exactInF32"> & { exactInF32?: boolean };

function row(r: Row): DTypeInfo {
  return { exactInF32: false, ...r };
}

/** A quantized type's row: its block facts and codec from `core/quants/`. */
function quantRow(b: QuantBlock): DTypeInfo {
  return row({
    name: b.name,
    kind: "quant",
    gguf: b.gguf,
    blockSize: b.blockSize,
    blockBytes: b.blockBytes,
    ...QUANT_CODECS[b.name],
  });
}

/**
 * The table. Block layouts follow ggml's type traits (the quantized rows
 * come from `core/quants/blocks.ts`); the GGUF ids are the
 * numbers of the `ggml_type` enum.
 *
 * Narrowing from F32 (`fromF32`):
 * - integers round half to even and saturate at the type's limits; NaN
 *   becomes 0 (I32/U32/I64/U64 limits read back as the nearest F32);
 * - BOOL stores 1 for every value that is not ±0 (NaN included);
 * - F16, BF16, F8_E4M3, F8_E5M2 and F4 round to nearest, ties to even.
 *   Past the largest finite value F16, BF16 and F8_E5M2 give ±Inf, F8_E4M3
 *   gives NaN (PyTorch's non-saturating E4M3FN conversion: |x| > 464 and
 *   ±Inf), F4 saturates to ±6. NaN keeps its sign (F16 writes 0x7E00, BF16
 *   keeps the top payload bits and sets the quiet bit, F8 writes 0x7F); F4 has
 *   no NaN and writes -0.
 *
 * Widening (`toF32`) is exact for every type marked `exactInF32`, and keeps
 * -0, subnormals, ±Inf and NaN payloads (F16, BF16, F8_E5M2) bit for bit.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { decodeToF32, encodeFromF32 } from "@modelhost/modelhost/core";
 * const back = decodeToF32("F8_E4M3", encodeFromF32("F8_E4M3", new Float32Array([300, 500])), 2);
 * assert(back[0] === 288 && Number.isNaN(back[1]));
 * ```
 */
export const DTYPES: readonly DTypeInfo[] = [
  row({
    name: "BOOL",
    kind: "bool",
    safetensors: "BOOL",
    blockSize: 1,
    blockBytes: 1,
    exactInF32: true,
    ...boolCodec,
  }),
  row({
    name: "U8",
    kind: "int",
    safetensors: "U8",
    blockSize: 1,
    blockBytes: 1,
    exactInF32: true,
    ...intCodec("U8", Uint8Array, 0, 255),
  }),
  row({
    name: "I8",
    kind: "int",
    safetensors: "I8",
    gguf: 24,
    blockSize: 1,
    blockBytes: 1,
    exactInF32: true,
    ...intCodec("I8", Int8Array, -128, 127),
  }),
  row({
    name: "I16",
    kind: "int",
    safetensors: "I16",
    gguf: 25,
    blockSize: 1,
    blockBytes: 2,
    exactInF32: true,
    ...intCodec("I16", Int16Array, -32768, 32767),
  }),
  row({
    name: "U16",
    kind: "int",
    safetensors: "U16",
    blockSize: 1,
    blockBytes: 2,
    exactInF32: true,
    ...intCodec("U16", Uint16Array, 0, 65535),
  }),
  row({
    name: "I32",
    kind: "int",
    safetensors: "I32",
    gguf: 26,
    blockSize: 1,
    blockBytes: 4,
    ...intCodec("I32", Int32Array, -2147483648, 2147483647),
  }),
  row({
    name: "U32",
    kind: "int",
    safetensors: "U32",
    blockSize: 1,
    blockBytes: 4,
    ...intCodec("U32", Uint32Array, 0, 4294967295),
  }),
  row({
    name: "I64",
    kind: "int",
    safetensors: "I64",
    gguf: 27,
    blockSize: 1,
    blockBytes: 8,
    ...bigCodec("I64", true),
  }),
  row({
    name: "U64",
    kind: "int",
    safetensors: "U64",
    blockSize: 1,
    blockBytes: 8,
    ...bigCodec("U64", false),
  }),
  row({
    name: "F16",
    kind: "float",
    safetensors: "F16",
    gguf: 1,
    blockSize: 1,
    blockBytes: 2,
    exactInF32: true,
    ...f16Codec,
  }),
  row({
    name: "BF16",
    kind: "float",
    safetensors: "BF16",
    gguf: 30,
    blockSize: 1,
    blockBytes: 2,
    exactInF32: true,
    ...bf16Codec,
  }),
  row({
    name: "F32",
    kind: "float",
    safetensors: "F32",
    gguf: 0,
    blockSize: 1,
    blockBytes: 4,
    exactInF32: true,
    ...f32Codec,
  }),
  row({
    name: "F64",
    kind: "float",
    safetensors: "F64",
    gguf: 28,
    blockSize: 1,
    blockBytes: 8,
    ...f64Codec,
  }),
  row({
    name: "F8_E4M3",
    kind: "float",
    safetensors: "F8_E4M3",
    blockSize: 1,
    blockBytes: 1,
    exactInF32: true,
    ...f8e4m3,
  }),
  row({
    name: "F8_E5M2",
    kind: "float",
    safetensors: "F8_E5M2",
    blockSize: 1,
    blockBytes: 1,
    exactInF32: true,
    ...f8e5m2,
  }),
  row({
    name: "F4",
    kind: "float",
    safetensors: "F4",
    blockSize: 2,
    blockBytes: 1,
    exactInF32: true,
    ...f4e2m1,
  }),
  ...Object.values(QUANT_BLOCKS).map(quantRow),
];

const BY_NAME = new Map<string, DTypeInfo>(DTYPES.map((d) => [d.name, d]));
const BY_SAFETENSORS = new Map<string, DTypeInfo>(
  DTYPES.filter((d) => d.safetensors).map((d) => [d.safetensors!, d]),
);
const BY_GGUF = new Map<number, DTypeInfo>(
  DTYPES.filter((d) => d.gguf !== undefined).map((d) => [d.gguf!, d]),
);

/**
 * Looks up a dtype row by its name.
 *
 * @param name A dtype name such as `"F16"` or `"Q4_0"`; case-insensitive.
 * @returns The row.
 * @throws {UnsupportedDTypeError} When no dtype has that name.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dtypeInfo } from "@modelhost/modelhost/core";
 * assert(dtypeInfo("Q8_0").blockBytes === 34);
 * ```
 */
export function dtypeInfo(name: string): DTypeInfo {
  const d = BY_NAME.get(name) ?? BY_NAME.get(name.toUpperCase());
  if (!d) {
    throw new UnsupportedDTypeError(
      name,
      `unknown dtype; known: ${DTYPES.map((x) => x.name).join(", ")}`,
    );
  }
  return d;
}

/**
 * Looks up a dtype row by its SafeTensors `dtype` string.
 *
 * @param code The string from a SafeTensors header, e.g. `"BF16"`.
 * @returns The row, or `undefined` when SafeTensors has no such dtype.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dtypeFromSafetensors } from "@modelhost/modelhost/core";
 * assert(dtypeFromSafetensors("F8_E4M3")?.blockBytes === 1);
 * ```
 */
export function dtypeFromSafetensors(code: string): DTypeInfo | undefined {
  return BY_SAFETENSORS.get(code);
}

/**
 * Looks up a dtype row by its ggml type id.
 *
 * @param id The number from a GGUF tensor info.
 * @returns The row, or `undefined` when the id is not a known ggml type.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dtypeFromGguf } from "@modelhost/modelhost/core";
 * assert(dtypeFromGguf(2)?.name === "Q4_0");
 * ```
 */
export function dtypeFromGguf(id: number): DTypeInfo | undefined {
  return BY_GGUF.get(id);
}

/**
 * Bytes needed to store `count` elements of a dtype.
 *
 * @param dtype A dtype name or row.
 * @param count Number of elements.
 * @returns The byte length.
 * @throws {RangeError} When `count` is not a whole number of blocks.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { byteLengthOf } from "@modelhost/modelhost/core";
 * assert(byteLengthOf("Q4_0", 64) === 36);
 * assert(byteLengthOf("F4", 6) === 3);
 * ```
 */
export function byteLengthOf(
  dtype: DTypeName | DTypeInfo,
  count: number,
): number {
  const d = typeof dtype === "string" ? dtypeInfo(dtype) : dtype;
  if (count % d.blockSize !== 0) {
    throw new RangeError(
      `Cannot store ${count} elements as ${d.name}: the count must be a multiple of its block size ${d.blockSize}`,
    );
  }
  return (count / d.blockSize) * d.blockBytes;
}

/**
 * Decodes raw little-endian bytes of a dtype to F32.
 *
 * @param dtype A dtype name or row.
 * @param bytes The stored bytes.
 * @param count Number of elements to decode.
 * @returns A new Float32Array of `count` values.
 * @throws {UnsupportedDTypeError} When the dtype has no decoder.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { decodeToF32 } from "@modelhost/modelhost/core";
 * const bytes = new Uint8Array(new Int16Array([-3, 7]).buffer);
 * assert(decodeToF32("I16", bytes, 2)[0] === -3);
 * ```
 */
export function decodeToF32(
  dtype: DTypeName | DTypeInfo,
  bytes: Uint8Array,
  count: number,
): Float32Array {
  const d = typeof dtype === "string" ? dtypeInfo(dtype) : dtype;
  if (!d.toF32) {
    throw new UnsupportedDTypeError(d.name, "no decoder to F32 for this type");
  }
  return d.toF32(bytes, count);
}

/**
 * Encodes F32 values into a dtype's bytes.
 *
 * @param dtype A dtype name or row.
 * @param values The values; their count must be a whole number of blocks.
 * @returns The encoded bytes.
 * @throws {UnsupportedDTypeError} When the dtype has no encoder.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { decodeToF32, encodeFromF32 } from "@modelhost/modelhost/core";
 * const bytes = encodeFromF32("BF16", new Float32Array([1.5, -2]));
 * assert(decodeToF32("BF16", bytes, 2)[1] === -2);
 * ```
 */
export function encodeFromF32(
  dtype: DTypeName | DTypeInfo,
  values: Float32Array,
): Uint8Array {
  const d = typeof dtype === "string" ? dtypeInfo(dtype) : dtype;
  if (!d.fromF32) {
    throw new UnsupportedDTypeError(
      d.name,
      "no encoder from F32 for this type",
    );
  }
  byteLengthOf(d, values.length);
  return d.fromF32(values);
}
