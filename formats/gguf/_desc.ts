/**
 * GGUF type descriptors: how a ModelFile remembers each metadata key's GGUF
 * type (`"UINT32"`, `"ARRAY<STRING>"`, `"ARRAY<ARRAY<INT32>>"`), and how the
 * writer turns plain values back into typed values, with or without one.
 *
 * Grammar: `D := NAME | ARRAY<D> | ARRAY<D|D|...>`. `ARRAY<D>` gives the
 * element type; the `|` form lists one descriptor per item, for nested
 * arrays whose items differ. `ARRAY<ARRAY>` is an empty array of arrays.
 *
 * @module
 */

import {
  GGUF_TYPE_NAMES,
  type GgufArray,
  GgufType,
  type GgufValue,
} from "./types.ts";

/** A parsed descriptor. `inner`: one entry for all items, or one per item. */
export interface Desc {
  /** The value's type. */
  type: GgufType;
  /** For arrays: the items' descriptors. */
  inner?: Desc[];
}

/**
 * The type descriptor of a value.
 *
 * @param type The value's GGUF type.
 * @param value The value (needed for arrays).
 * @returns The descriptor, e.g. `"UINT32"` or `"ARRAY<ARRAY<INT32>>"`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { ggufTypeDescriptor, GgufType } from "@modelhost/modelhost/formats/gguf";
 * const d = ggufTypeDescriptor(GgufType.ARRAY, { type: GgufType.FLOAT32, items: [] });
 * assert(d === "ARRAY<FLOAT32>");
 * ```
 */
export function ggufTypeDescriptor(type: GgufType, value: GgufValue): string {
  if (type !== GgufType.ARRAY) return GGUF_TYPE_NAMES[type];
  const arr = value as GgufArray;
  if (arr.type !== GgufType.ARRAY) return `ARRAY<${GGUF_TYPE_NAMES[arr.type]}>`;
  if (arr.items.length === 0) return "ARRAY<ARRAY>";
  const each = arr.items.map((v) => ggufTypeDescriptor(GgufType.ARRAY, v));
  return `ARRAY<${
    each.every((d) => d === each[0]) ? each[0] : each.join("|")
  }>`;
}

const TYPE_BY_NAME = new Map<string, GgufType>(
  GGUF_TYPE_NAMES.map((n, i) => [n, i as GgufType]),
);

/**
 * Parses a descriptor.
 *
 * @param d The descriptor text.
 * @returns The tree, or `undefined` when the text is not a descriptor.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseDescriptor } from "./_desc.ts";
 * assert(parseDescriptor("ARRAY<ARRAY<UINT8>|ARRAY<STRING>>")?.inner?.length === 2);
 * ```
 */
export function parseDescriptor(d: string): Desc | undefined {
  if (d.startsWith("ARRAY<") && d.endsWith(">")) {
    const body = d.slice(6, -1);
    const parts: string[] = [];
    let depth = 0;
    let start = 0;
    for (let i = 0; i < body.length; i++) {
      const c = body[i];
      if (c === "<") depth++;
      else if (c === ">") depth--;
      else if (c === "|" && depth === 0) {
        parts.push(body.slice(start, i));
        start = i + 1;
      }
    }
    parts.push(body.slice(start));
    const inner: Desc[] = [];
    for (const p of parts) {
      const x = parseDescriptor(p);
      if (!x) return undefined;
      inner.push(x);
    }
    return { type: GgufType.ARRAY, inner };
  }
  const t = TYPE_BY_NAME.get(d);
  return t === undefined ? undefined : { type: t };
}

const INT_RANGE: Partial<Record<GgufType, [number, number]>> = {
  [GgufType.UINT8]: [0, 255],
  [GgufType.INT8]: [-128, 127],
  [GgufType.UINT16]: [0, 65535],
  [GgufType.INT16]: [-32768, 32767],
  [GgufType.UINT32]: [0, 4294967295],
  [GgufType.INT32]: [-2147483648, 2147483647],
};

/**
 * The inclusive range of a 32-bit-or-smaller integer type.
 *
 * @param type A GGUF type.
 * @returns `[min, max]`, or `undefined` for other types.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { intRange } from "./_desc.ts";
 * import { GgufType } from "@modelhost/modelhost/formats/gguf";
 * assert(intRange(GgufType.INT8)?.[0] === -128);
 * ```
 */
export function intRange(type: GgufType): [number, number] | undefined {
  return INT_RANGE[type];
}

function fitsF32(v: unknown): boolean {
  return typeof v === "number" &&
    (Number.isNaN(v) || !Number.isFinite(v) || Math.fround(v) === v);
}

/**
 * Converts a plain value to a typed value of descriptor `d`.
 *
 * @param value A plain value (arrays may be JS arrays or typed arrays).
 * @param d The descriptor.
 * @returns The typed value, or `undefined` when the value does not fit.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseDescriptor, typedValue } from "./_desc.ts";
 * assert(typedValue(300, parseDescriptor("UINT8")!) === undefined);
 * ```
 */
export function typedValue(value: unknown, d: Desc): GgufValue | undefined {
  const type = d.type;
  if (type === GgufType.ARRAY) {
    if (!Array.isArray(value) && !ArrayBuffer.isView(value)) return undefined;
    const list = Array.from(value as ArrayLike<unknown>);
    const inner = d.inner;
    if (!inner) return undefined;
    const each = inner.length === 1 ? undefined : inner;
    if (each && each.length !== list.length) return undefined;
    const items: GgufValue[] = new Array(list.length);
    for (let i = 0; i < list.length; i++) {
      const v = typedValue(list[i], each ? each[i] : inner[0]);
      if (v === undefined) return undefined;
      items[i] = v;
    }
    return { type: inner[0].type, items };
  }
  const range = INT_RANGE[type];
  if (range) {
    return typeof value === "number" && Number.isInteger(value) &&
        value >= range[0] && value <= range[1]
      ? value
      : undefined;
  }
  switch (type) {
    case GgufType.UINT64:
    case GgufType.INT64: {
      const b = typeof value === "bigint"
        ? value
        : typeof value === "number" && Number.isSafeInteger(value)
        ? BigInt(value)
        : undefined;
      if (b === undefined) return undefined;
      const ok = type === GgufType.UINT64
        ? b >= 0n && b < 2n ** 64n
        : b >= -(2n ** 63n) && b < 2n ** 63n;
      return ok ? b : undefined;
    }
    case GgufType.FLOAT32:
      return fitsF32(value) ? value as number : undefined;
    case GgufType.FLOAT64:
      return typeof value === "number" ? value : undefined;
    case GgufType.BOOL:
      return typeof value === "boolean" ? value : undefined;
    case GgufType.STRING:
      return typeof value === "string" ? value : undefined;
  }
  return undefined;
}

function typedArrayType(value: ArrayBufferView): GgufType | undefined {
  if (value instanceof Float32Array) return GgufType.FLOAT32;
  if (value instanceof Float64Array) return GgufType.FLOAT64;
  if (value instanceof Int8Array) return GgufType.INT8;
  if (value instanceof Uint8Array || value instanceof Uint8ClampedArray) {
    return GgufType.UINT8;
  }
  if (value instanceof Int16Array) return GgufType.INT16;
  if (value instanceof Uint16Array) return GgufType.UINT16;
  if (value instanceof Int32Array) return GgufType.INT32;
  if (value instanceof Uint32Array) return GgufType.UINT32;
  if (value instanceof BigInt64Array) return GgufType.INT64;
  if (value instanceof BigUint64Array) return GgufType.UINT64;
  return undefined;
}

/**
 * The descriptor the writer gives a plain value that has none: strings
 * STRING, booleans BOOL, bigints INT64 (UINT64 from 2^63); integer numbers
 * UINT32 when non-negative, INT32 when negative, INT64 beyond 32 bits; other
 * numbers FLOAT32 when exact in F32, else FLOAT64. Arrays of integers are
 * INT32 (UINT32, then INT64 when their range needs it), of other numbers
 * FLOAT32 or FLOAT64; typed arrays keep their element type; arrays of
 * arrays are described item by item.
 *
 * @param value The plain value.
 * @returns The descriptor, or `undefined` for values GGUF has no type for
 * (objects, functions, symbols, arrays mixing kinds).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { inferDescriptor } from "./_desc.ts";
 * import { GgufType } from "@modelhost/modelhost/formats/gguf";
 * assert(inferDescriptor([1, 2, 3])?.inner?.[0].type === GgufType.INT32);
 * ```
 */
export function inferDescriptor(value: unknown): Desc | undefined {
  switch (typeof value) {
    case "string":
      return { type: GgufType.STRING };
    case "boolean":
      return { type: GgufType.BOOL };
    case "bigint":
      return { type: value >= 2n ** 63n ? GgufType.UINT64 : GgufType.INT64 };
    case "number":
      if (Number.isInteger(value) && !Object.is(value, -0)) {
        if (value >= 0 && value <= 4294967295) return { type: GgufType.UINT32 };
        if (value >= -2147483648 && value < 0) return { type: GgufType.INT32 };
        if (Number.isSafeInteger(value)) return { type: GgufType.INT64 };
      }
      return { type: fitsF32(value) ? GgufType.FLOAT32 : GgufType.FLOAT64 };
  }
  if (ArrayBuffer.isView(value)) {
    const t = typedArrayType(value);
    return t === undefined
      ? undefined
      : { type: GgufType.ARRAY, inner: [{ type: t }] };
  }
  if (!Array.isArray(value)) return undefined;
  const arr = (inner: Desc[]): Desc => ({ type: GgufType.ARRAY, inner });
  if (value.length === 0) return arr([{ type: GgufType.INT32 }]);
  const first = value[0];
  if (typeof first === "number") {
    if (!value.every((v) => typeof v === "number")) return undefined;
    const nums = value as number[];
    if (nums.every((v) => Number.isInteger(v) && !Object.is(v, -0))) {
      let lo = 0;
      let hi = 0;
      for (const v of nums) {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      if (lo >= -2147483648 && hi <= 2147483647) {
        return arr([{ type: GgufType.INT32 }]);
      }
      if (lo >= 0 && hi <= 4294967295) return arr([{ type: GgufType.UINT32 }]);
      if (lo >= -Number.MAX_SAFE_INTEGER && hi <= Number.MAX_SAFE_INTEGER) {
        return arr([{ type: GgufType.INT64 }]);
      }
    }
    return arr([{
      type: nums.every(fitsF32) ? GgufType.FLOAT32 : GgufType.FLOAT64,
    }]);
  }
  if (typeof first === "bigint") {
    if (!value.every((v) => typeof v === "bigint")) return undefined;
    const big = (value as bigint[]).some((v) => v >= 2n ** 63n);
    return arr([{ type: big ? GgufType.UINT64 : GgufType.INT64 }]);
  }
  if (Array.isArray(first) || ArrayBuffer.isView(first)) {
    const each: Desc[] = [];
    for (const v of value) {
      const d = inferDescriptor(v);
      if (!d || d.type !== GgufType.ARRAY) return undefined;
      each.push(d);
    }
    return arr(each);
  }
  const d = inferDescriptor(first);
  return d ? arr([d]) : undefined;
}
