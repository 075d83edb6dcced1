/**
 * GGUF wire facts shared by the reader and the writer: value type ids,
 * hostile-file limits, and the typed metadata and tensor-info shapes.
 *
 * @module
 */

import type { DTypeName } from "../../core/dtypes.ts";

/**
 * The four bytes every GGUF file starts with: `"GGUF"`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GGUF_MAGIC } from "@modelhost/modelhost/formats/gguf";
 * assert(new TextDecoder().decode(GGUF_MAGIC) === "GGUF");
 * ```
 */
export const GGUF_MAGIC: Uint8Array = new Uint8Array([0x47, 0x47, 0x55, 0x46]);

/**
 * GGUF metadata value types, with the numbers the spec gives them
 * (`gguf_type` in ggml, `GGUFValueType` in gguf-py).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GgufType } from "@modelhost/modelhost/formats/gguf";
 * assert(GgufType.STRING === 8 && GgufType.ARRAY === 9);
 * ```
 */
export const GgufType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

/** One of the {@link GgufType} numbers. */
export type GgufType = typeof GgufType[keyof typeof GgufType];

/**
 * The spec's name of each {@link GgufType}, indexed by its number.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GGUF_TYPE_NAMES, GgufType } from "@modelhost/modelhost/formats/gguf";
 * assert(GGUF_TYPE_NAMES[GgufType.STRING] === "STRING");
 * ```
 */
export const GGUF_TYPE_NAMES: readonly string[] = [
  "UINT8",
  "INT8",
  "UINT16",
  "INT16",
  "UINT32",
  "INT32",
  "FLOAT32",
  "BOOL",
  "STRING",
  "ARRAY",
  "UINT64",
  "INT64",
  "FLOAT64",
];

/**
 * Whether a number read from a file is a known {@link GgufType}.
 *
 * @param n The number.
 * @returns `true` for 0..12.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { isGgufType } from "@modelhost/modelhost/formats/gguf";
 * assert(isGgufType(8) && !isGgufType(13));
 * ```
 */
export function isGgufType(n: number): n is GgufType {
  return Number.isInteger(n) && n >= 0 && n <= 12;
}

// Hostile-file limits. Each bounds work or memory a corrupt or hostile file
// could otherwise demand; real files stay far below all of them.

/**
 * ggml tensors have at most 4 dimensions (`GGML_MAX_DIMS`).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_DIMS } from "@modelhost/modelhost/formats/gguf";
 * assert(MAX_DIMS === 4);
 * ```
 */
export const MAX_DIMS = 4;
/**
 * The spec caps metadata keys at 65535 bytes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_KEY_BYTES } from "@modelhost/modelhost/formats/gguf";
 * assert(MAX_KEY_BYTES === 65_535);
 * ```
 */
export const MAX_KEY_BYTES = 65_535;
/**
 * Tensor names are short paths; ggml itself stops at 63 bytes, gguf-py accepts more.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_TENSOR_NAME_BYTES } from "@modelhost/modelhost/formats/gguf";
 * assert(MAX_TENSOR_NAME_BYTES >= 64);
 * ```
 */
export const MAX_TENSOR_NAME_BYTES = 65_535;
/**
 * One metadata string (a chat template, a license) is never near 256 MiB.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_STRING_BYTES } from "@modelhost/modelhost/formats/gguf";
 * assert(MAX_STRING_BYTES === 256 * 1024 * 1024);
 * ```
 */
export const MAX_STRING_BYTES = 256 * 1024 * 1024;
/**
 * Nested arrays deeper than this only serve to exhaust the stack.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_ARRAY_DEPTH } from "@modelhost/modelhost/formats/gguf";
 * assert(MAX_ARRAY_DEPTH >= 2);
 * ```
 */
export const MAX_ARRAY_DEPTH = 8;
/**
 * Alignment pads every tensor; more than 1 MiB of padding is never useful.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { DEFAULT_ALIGNMENT, MAX_ALIGNMENT } from "@modelhost/modelhost/formats/gguf";
 * assert(DEFAULT_ALIGNMENT <= MAX_ALIGNMENT);
 * ```
 */
export const MAX_ALIGNMENT = 1024 * 1024;
/**
 * The alignment the spec gives files without `general.alignment`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { DEFAULT_ALIGNMENT } from "@modelhost/modelhost/formats/gguf";
 * assert(DEFAULT_ALIGNMENT === 32);
 * ```
 */
export const DEFAULT_ALIGNMENT = 32;

/** A metadata value. 64-bit integers are bigints; FLOAT32 values are the exact double of the stored float. */
export type GgufValue = number | bigint | boolean | string | GgufArray;

/**
 * A metadata array: its element type and its items. Numbers, bools and
 * strings are plain JavaScript arrays; a nested array holds {@link GgufArray}s.
 */
export interface GgufArray {
  /** The element type. */
  type: GgufType;
  /** The elements. */
  items: GgufValue[];
}

/** One metadata key-value pair, with its value type kept. */
export interface GgufMetadataEntry {
  /** The key (`"general.architecture"`). */
  key: string;
  /** The value type; {@link GgufType.ARRAY} means `value` is a {@link GgufArray}. */
  type: GgufType;
  /** The value. */
  value: GgufValue;
  /** Absolute file offset where the pair starts (reader only). */
  offset?: number;
}

/** One tensor info of a GGUF file. */
export interface GgufTensorInfo {
  /** Tensor name. */
  name: string;
  /** Dimensions in ggml order: `dims[0]` is the fastest-varying (row length). */
  dims: number[];
  /** The same dimensions in row-major PyTorch order (`dims` reversed). */
  shape: number[];
  /** The ggml type id. */
  ggmlType: number;
  /** The dtype name of that id. */
  dtype: DTypeName;
  /** Offset of the data, relative to the data section, as stored. */
  offset: number;
  /** Byte length of the data. */
  byteLength: number;
}

/** Everything in a GGUF file before the tensor data. */
export interface GgufHeader {
  /** Name of the source, for messages. */
  name: string;
  /** File size in bytes. */
  fileSize: number;
  /** GGUF version (2 or 3). */
  version: number;
  /** Metadata in file order. */
  metadata: GgufMetadataEntry[];
  /** Tensor infos in file order. */
  tensors: GgufTensorInfo[];
  /** Alignment of the data section and of every tensor offset. */
  alignment: number;
  /** Absolute offset of the data section (end of the tensor infos, padded). */
  dataOffset: number;
  /** Read with `allowTruncated`: what the first tensor past the end of the file misses. */
  truncated?: string;
}
