/**
 * The `.npy` array format of NumPy: a 6-byte magic (`\x93NUMPY`), a version
 * (1.0, 2.0 or 3.0), the header length (u16 for 1.0, u32 after), a header
 * that is a Python dict literal (`{'descr': '<f4', 'fortran_order': False,
 * 'shape': (3, 4), }`) padded with spaces and a newline, then the array's
 * bytes.
 *
 * @module
 */

import {
  type ByteSource,
  type DTypeName,
  elementCount,
  lazyTensorIndex,
  type Model,
  type ModelFile,
  type Tensor,
  toFloat32,
  UnsupportedDTypeError,
} from "@modelhost/modelhost";
import { PyParser, shownPy } from "./_pyliteral.ts";

/** The six bytes every `.npy` file starts with. */
export const NPY_MAGIC: Uint8Array = Uint8Array.of(
  0x93,
  0x4e,
  0x55,
  0x4d,
  0x50,
  0x59,
);

/** Largest header this reader parses: far above any real array header, and it bounds what a hostile file makes us read and parse. */
export const NPY_MAX_HEADER_BYTES = 1 << 20;

/** Most dimensions accepted (NumPy 2's limit; NumPy 1 stops at 32). */
export const NPY_MAX_DIMS = 64;

/** NumPy pads the preamble plus header to a multiple of this (1.24 and later). */
const ALIGN = 64;

/** Spare header room NumPy leaves so the first axis can grow in place. */
const GROWTH_DIGITS = 21;

/** NumPy type code (kind + item size) → modelhost dtype. */
const FROM_NUMPY: Readonly<Record<string, DTypeName>> = {
  f2: "F16",
  f4: "F32",
  f8: "F64",
  i1: "I8",
  i2: "I16",
  i4: "I32",
  i8: "I64",
  u1: "U8",
  u2: "U16",
  u4: "U32",
  u8: "U64",
  b1: "BOOL",
};

/** modelhost dtype → the `descr` NumPy writes for it. */
const TO_NUMPY: Partial<Record<DTypeName, string>> = Object.fromEntries(
  Object.entries(FROM_NUMPY).map((
    [code, dtype],
  ) => [dtype, `${code.endsWith("1") ? "|" : "<"}${code}`]),
);

/**
 * The NumPy `descr` for a modelhost dtype, or `undefined` when NumPy has no
 * such type (BF16, the F8 and F4 types, GGUF blocks).
 *
 * @param dtype A modelhost dtype.
 * @returns The descr (`"<f4"`, `"|b1"`), little-endian.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { numpyDescr } from "./npy.ts";
 * assert(numpyDescr("F16") === "<f2" && numpyDescr("BF16") === undefined);
 * ```
 */
export function numpyDescr(dtype: DTypeName): string | undefined {
  return TO_NUMPY[dtype];
}

/** What a `.npy` header says. */
export interface NpyHeader {
  /** Format version, `"1.0"`, `"2.0"` or `"3.0"`. */
  version: string;
  /** The NumPy type string as stored (`"<f4"`, `">i8"`, `"|b1"`). */
  descr: string;
  /** The modelhost dtype the data is read as (always little-endian). */
  dtype: DTypeName;
  /** Bytes per element. */
  itemSize: number;
  /** Dimensions, outermost first. */
  shape: number[];
  /** Whether the data is stored column-major (the reader transposes it). */
  fortranOrder: boolean;
  /** Whether the data is stored big-endian (the reader swaps it). */
  bigEndian: boolean;
  /** Where the data starts (the preamble and header length). */
  dataOffset: number;
  /** Bytes of data: elements × item size. */
  dataLength: number;
}

/**
 * Maps a NumPy `descr` to a modelhost dtype and byte order.
 *
 * @param descr The type string (`"<f4"`, `">i2"`, `"|u1"`).
 * @returns The dtype, item size and whether the data is big-endian.
 * @throws {UnsupportedDTypeError} For NumPy types modelhost has no dtype for
 * (complex, strings, objects, datetimes, structured types).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { dtypeFromDescr } from "./npy.ts";
 * const d = dtypeFromDescr(">i8");
 * assert(d.dtype === "I64" && d.bigEndian && d.itemSize === 8);
 * ```
 */
export function dtypeFromDescr(
  descr: string,
): { dtype: DTypeName; itemSize: number; bigEndian: boolean } {
  const m = /^([<>|=])([a-zA-Z])(\d+)$/.exec(descr);
  const dtype = m ? FROM_NUMPY[`${m[2]}${m[3]}`] : undefined;
  if (!m || !dtype) {
    throw new UnsupportedDTypeError(
      descr,
      `NumPy type ${JSON.stringify(descr)} has no modelhost dtype (supported: ${
        Object.values(TO_NUMPY).join(" ")
      }, either byte order)`,
    );
  }
  const itemSize = Number(m[3]);
  return { dtype, itemSize, bigEndian: m[1] === ">" && itemSize > 1 };
}

/**
 * How many bytes the preamble and header of a `.npy` file take, from its
 * first 12 bytes (fewer are enough for version 1.0).
 *
 * @param head The first bytes of the file (at least 10).
 * @param where The file's name, for messages.
 * @returns The offset where the array data starts.
 * @throws {SyntaxError} When the magic or the version is wrong.
 * @throws {RangeError} When the bytes are too few or the header is longer
 * than {@link NPY_MAX_HEADER_BYTES}.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { npyDataOffset } from "./npy.ts";
 * const head = Uint8Array.of(0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, 118, 0);
 * assert(npyDataOffset(head, "a.npy") === 128);
 * ```
 */
export function npyDataOffset(head: Uint8Array, where: string): number {
  if (head.byteLength < 10) {
    throw new RangeError(
      `Cannot read ${where}: ${head.byteLength} bytes is too few for the 10-byte .npy preamble`,
    );
  }
  for (let i = 0; i < NPY_MAGIC.length; i++) {
    if (head[i] !== NPY_MAGIC[i]) {
      throw new SyntaxError(
        `Cannot read ${where}: not a NumPy .npy file (it does not start with \\x93NUMPY)`,
      );
    }
  }
  const major = head[6], minor = head[7];
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  let prefix: number, length: number;
  if (major === 1 && minor === 0) {
    prefix = 10;
    length = view.getUint16(8, true);
  } else if ((major === 2 || major === 3) && minor === 0) {
    if (head.byteLength < 12) {
      throw new RangeError(
        `Cannot read ${where}: ${head.byteLength} bytes is too few for the 12-byte .npy ${major}.0 preamble`,
      );
    }
    prefix = 12;
    length = view.getUint32(8, true);
  } else {
    throw new SyntaxError(
      `Cannot read ${where}: .npy version ${major}.${minor} is not supported (1.0, 2.0 and 3.0 are)`,
    );
  }
  if (length > NPY_MAX_HEADER_BYTES) {
    throw new RangeError(
      `Cannot read ${where}: its .npy header claims ${length} bytes, more than the ${NPY_MAX_HEADER_BYTES}-byte limit`,
    );
  }
  return prefix + length;
}

/**
 * Parses a `.npy` preamble and header.
 *
 * @param bytes The file's first bytes, at least up to the data offset
 * (see {@link npyDataOffset}).
 * @param where The file's name, for messages.
 * @returns What the header says.
 * @throws {SyntaxError} When the header is not a Python dict literal.
 * @throws {TypeError} When a key is missing or extra, or a value has the
 * wrong type.
 * @throws {UnsupportedDTypeError} For types modelhost has no dtype for.
 * @throws {RangeError} For negative or too many dimensions.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseNpyHeader } from "./npy.ts";
 * const text = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }\n";
 * const bytes = new Uint8Array(10 + text.length);
 * bytes.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, text.length, 0]);
 * bytes.set(new TextEncoder().encode(text), 10);
 * const h = parseNpyHeader(bytes, "a.npy");
 * assert(h.dtype === "F32" && h.shape.join() === "3,4" && h.dataLength === 48);
 * ```
 */
export function parseNpyHeader(bytes: Uint8Array, where: string): NpyHeader {
  const dataOffset = npyDataOffset(bytes, where);
  if (bytes.byteLength < dataOffset) {
    throw new RangeError(
      `Cannot read ${where}: its .npy header ends at byte ${dataOffset}, only ${bytes.byteLength} bytes are there`,
    );
  }
  const major = bytes[6];
  const prefix = major === 1 ? 10 : 12;
  let text: string;
  try {
    text = new TextDecoder(major === 3 ? "utf-8" : "latin1", { fatal: true })
      .decode(bytes.subarray(prefix, dataOffset));
  } catch {
    throw new SyntaxError(
      `Cannot read ${where}: the .npy ${major}.0 header is not valid ${
        major === 3 ? "UTF-8" : "Latin-1"
      }`,
    );
  }
  const p = new PyParser(text, where);
  const top = p.value(0);
  p.skip();
  if (p.pos !== text.length) {
    throw p.fail("unexpected text after the header dict");
  }
  if (top === null || typeof top !== "object" || top.kind !== "dict") {
    throw new TypeError(
      `Cannot read ${where}: the .npy header is ${
        shownPy(top)
      }, expected a dict`,
    );
  }
  const d = top.entries;
  for (const key of d.keys()) {
    if (key !== "descr" && key !== "fortran_order" && key !== "shape") {
      throw new TypeError(
        `Cannot read ${where}: unexpected key '${key}' in the .npy header (expected descr, fortran_order, shape)`,
      );
    }
  }
  for (const key of ["descr", "fortran_order", "shape"]) {
    if (!d.has(key)) {
      throw new TypeError(
        `Cannot read ${where}: the .npy header lacks '${key}'`,
      );
    }
  }
  const descr = d.get("descr")!;
  if (typeof descr !== "string") {
    if (descr !== null && typeof descr === "object" && descr.kind === "list") {
      throw new UnsupportedDTypeError(
        "structured",
        `${where} holds a NumPy structured array (descr ${
          shownPy(descr)
        }); modelhost reads plain numeric arrays`,
      );
    }
    throw new TypeError(
      `Cannot read ${where}: 'descr' is ${
        shownPy(descr)
      }, expected a type string`,
    );
  }
  const fortran = d.get("fortran_order")!;
  if (typeof fortran !== "boolean") {
    throw new TypeError(
      `Cannot read ${where}: 'fortran_order' is ${
        shownPy(fortran)
      }, expected True or False`,
    );
  }
  const shapeValue = d.get("shape")!;
  if (
    shapeValue === null || typeof shapeValue !== "object" ||
    shapeValue.kind !== "tuple"
  ) {
    throw new TypeError(
      `Cannot read ${where}: 'shape' is ${
        shownPy(shapeValue)
      }, expected a tuple of integers`,
    );
  }
  if (shapeValue.items.length > NPY_MAX_DIMS) {
    throw new RangeError(
      `Cannot read ${where}: 'shape' has ${shapeValue.items.length} dimensions, more than ${NPY_MAX_DIMS}`,
    );
  }
  const shape = shapeValue.items.map((v, i) => {
    if (typeof v !== "number") {
      throw new TypeError(
        `Cannot read ${where}: dimension ${i} of 'shape' is ${
          shownPy(v)
        }, expected an integer`,
      );
    }
    return v;
  });
  const { dtype, itemSize, bigEndian } = dtypeFromDescr(descr);
  const count = elementCount(shape, `the array in ${where}`);
  const dataLength = count * itemSize;
  if (!Number.isSafeInteger(dataLength)) {
    throw new RangeError(
      `Cannot read ${where}: ${count} elements of ${itemSize} bytes overflow 2^53-1 bytes`,
    );
  }
  return {
    version: `${major}.0`,
    descr,
    dtype,
    itemSize,
    shape,
    fortranOrder: fortran,
    bigEndian,
    dataOffset,
    dataLength,
  };
}

/**
 * Turns an array's stored bytes into modelhost's layout: little-endian,
 * row-major (C order). Bytes already in that layout come back as they are
 * (no copy); big-endian data is byte-swapped and Fortran-order data
 * transposed, into a new array.
 *
 * @param header The parsed header.
 * @param data Exactly `header.dataLength` bytes.
 * @returns Little-endian, C-order bytes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { parseNpyHeader, toLittleEndianCOrder } from "./npy.ts";
 * const h = { version: "1.0", descr: ">u2", dtype: "U16" as const, itemSize: 2, shape: [2], fortranOrder: false, bigEndian: true, dataOffset: 0, dataLength: 4 };
 * assert(toLittleEndianCOrder(h, Uint8Array.of(0, 1, 0, 2)).join() === "1,0,2,0");
 * ```
 */
export function toLittleEndianCOrder(
  header: NpyHeader,
  data: Uint8Array,
): Uint8Array {
  const size = header.itemSize;
  const transpose = header.fortranOrder &&
    header.shape.filter((d) => d > 1).length > 1;
  if (!header.bigEndian && !transpose) return data;
  let out: Uint8Array = data.slice();
  if (header.bigEndian) {
    for (let at = 0; at < out.byteLength; at += size) {
      for (let i = 0, j = size - 1; i < j; i++, j--) {
        const t = out[at + i];
        out[at + i] = out[at + j];
        out[at + j] = t;
      }
    }
  }
  if (transpose) out = fortranToC(out, header.shape, size);
  return out;
}

/** Reorders column-major elements to row-major. */
function fortranToC(
  src: Uint8Array,
  shape: number[],
  size: number,
): Uint8Array {
  const n = shape.length;
  const out = new Uint8Array(src.byteLength);
  // Column-major strides, in elements: the first axis varies fastest.
  const strides = new Array<number>(n);
  let s = 1;
  for (let k = 0; k < n; k++) {
    strides[k] = s;
    s *= shape[k];
  }
  const index = new Array<number>(n).fill(0);
  const count = src.byteLength / size;
  let from = 0;
  for (let i = 0; i < count; i++) {
    out.set(src.subarray(from * size, from * size + size), i * size);
    // Advance the row-major index (last axis fastest) and the source offset.
    for (let k = n - 1; k >= 0; k--) {
      index[k]++;
      from += strides[k];
      if (index[k] < shape[k]) break;
      from -= strides[k] * shape[k];
      index[k] = 0;
    }
  }
  return out;
}

/** Options of {@link encodeNpy}. */
export interface NpyWriteOptions {
  /**
   * Refuse tensors whose dtype NumPy lacks (BF16, F8, F4, GGUF blocks) or
   * that carry quantization params, instead of widening them to `<f4`.
   * @default {false}
   */
  strictDtypes?: boolean;
}

/** Default {@link NpyWriteOptions}. */
export const npyWriteDefaults: Required<NpyWriteOptions> = {
  strictDtypes: false,
};

function pyShape(shape: readonly number[]): string {
  if (shape.length === 1) return `(${shape[0]},)`;
  return `(${shape.join(", ")})`;
}

/**
 * The header text NumPy writes for an array (keys sorted, a trailing
 * comma, room for the first axis to grow), padded so data starts at a
 * multiple of 64 bytes; version 1.0 unless the header needs more than
 * 65,535 bytes.
 */
function npyPreamble(descr: string, shape: readonly number[]): Uint8Array {
  let text = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${
    pyShape(shape)
  }, }`;
  if (shape.length > 0) {
    text += " ".repeat(Math.max(0, GROWTH_DIGITS - String(shape[0]).length));
  }
  const body = text.length + 1;
  let prefix = 10;
  let pad = ALIGN - ((prefix + body) % ALIGN);
  if (body + pad > 0xffff) {
    prefix = 12;
    pad = ALIGN - ((prefix + body) % ALIGN);
  }
  const total = prefix + body + pad;
  const out = new Uint8Array(total);
  out.set(NPY_MAGIC, 0);
  out[6] = prefix === 10 ? 1 : 2;
  out[7] = 0;
  const view = new DataView(out.buffer);
  if (prefix === 10) view.setUint16(8, total - prefix, true);
  else view.setUint32(8, total - prefix, true);
  out.set(new TextEncoder().encode(text), prefix);
  out.fill(0x20, prefix + text.length, total - 1);
  out[total - 1] = 0x0a;
  return out;
}

/**
 * Encodes one tensor as a `.npy` file, byte for byte what `np.save` writes
 * for the same array (NumPy 1.24+): little-endian, C order. A tensor whose
 * dtype NumPy lacks, or that carries quantization params, is widened to
 * `<f4` (its real values) unless `strictDtypes` is set.
 *
 * @param tensor The tensor.
 * @param options Whether to refuse instead of widening.
 * @returns The file's bytes.
 * @throws {UnsupportedDTypeError} With `strictDtypes`, for a dtype NumPy
 * lacks; or when a dtype cannot be widened.
 * @throws {RangeError} When the tensor's bytes do not match its shape.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encodeNpy, parseNpyHeader } from "./npy.ts";
 * import { tensorFromF32 } from "@modelhost/modelhost";
 * const bytes = encodeNpy(tensorFromF32("w", new Float32Array(6), [2, 3]));
 * assert(bytes.byteLength === 128 + 24);
 * assert(parseNpyHeader(bytes, "w.npy").shape.join() === "2,3");
 * ```
 */
export function encodeNpy(
  tensor: Tensor,
  options: NpyWriteOptions = {},
): Uint8Array {
  const strict = options.strictDtypes ?? npyWriteDefaults.strictDtypes;
  let descr = TO_NUMPY[tensor.dtype];
  let data = tensor.bytes;
  const count = elementCount(tensor.shape, `tensor "${tensor.name}"`);
  if (descr === undefined || tensor.quant) {
    if (strict) {
      throw new UnsupportedDTypeError(
        tensor.dtype,
        `tensor "${tensor.name}" ${
          tensor.quant
            ? "carries quantization params"
            : "has a dtype NumPy lacks"
        }; leave strictDtypes off to write it widened to float32`,
      );
    }
    descr = "<f4";
    const values = toFloat32(tensor);
    data = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  } else {
    const need = count * Number(descr.slice(2));
    if (data.byteLength !== need) {
      throw new RangeError(
        `Cannot write tensor "${tensor.name}": ${tensor.dtype} [${
          tensor.shape.join(", ")
        }] needs ${need} bytes, it has ${data.byteLength}`,
      );
    }
  }
  const head = npyPreamble(descr, tensor.shape);
  const out = new Uint8Array(head.byteLength + data.byteLength);
  out.set(head, 0);
  out.set(data, head.byteLength);
  return out;
}

/** Options of {@link readNpy}. */
export interface NpyReadOptions {
  /** Name the array gets (a `.npy` file does not name it). @default {"arr_0"} */
  tensorName?: string;
}

/**
 * Reads a `.npy` file as a model with one tensor. Only the header is read
 * now; the data is read when the tensor is loaded (big-endian data is
 * swapped and Fortran-order data transposed then).
 *
 * @param src The file.
 * @param options The tensor's name.
 * @returns A model file with one model (id `"npy"`) holding one tensor;
 * its metadata has `npy.version`, `npy.descr` and `npy.fortran_order` as
 * stored.
 * @throws {SyntaxError} When the magic, version or header is wrong.
 * @throws {TypeError} When the header lacks a key or has a wrong value.
 * @throws {UnsupportedDTypeError} For types modelhost has no dtype for.
 * @throws {RangeError} When the data does not fill the file exactly.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encodeNpy, readNpy } from "./npy.ts";
 * import { memorySource, tensorFromF32, toFloat32 } from "@modelhost/modelhost";
 * const bytes = encodeNpy(tensorFromF32("x", new Float32Array([1, 2]), [2]));
 * const file = await readNpy(memorySource(bytes, "x.npy"));
 * assert(toFloat32(await file.models[0].tensors.load("arr_0"))[1] === 2);
 * ```
 */
export async function readNpy(
  src: ByteSource,
  options: NpyReadOptions = {},
): Promise<ModelFile> {
  const where = src.name;
  const head = await src.read(0, Math.min(12, src.size));
  const offset = npyDataOffset(head, where);
  if (offset > src.size) {
    throw new RangeError(
      `Cannot read ${where}: its .npy header ends at byte ${offset}, the file has ${src.size}`,
    );
  }
  const header = parseNpyHeader(await src.read(0, offset), where);
  const end = header.dataOffset + header.dataLength;
  if (end !== src.size) {
    throw new RangeError(
      `Cannot read ${where}: the array (${header.descr} [${
        header.shape.join(", ")
      }]) needs ${header.dataLength} bytes at offset ${header.dataOffset}, the file has ${
        src.size - header.dataOffset
      } there`,
    );
  }
  const name = options.tensorName ?? "arr_0";
  const plain = !header.bigEndian && !header.fortranOrder;
  const tensors = lazyTensorIndex([{
    name,
    dtype: header.dtype,
    shape: header.shape,
    byteLength: header.dataLength,
    ...(plain ? { byteOffset: header.dataOffset } : {}),
  }], async () =>
    toLittleEndianCOrder(
      header,
      await src.read(header.dataOffset, header.dataLength),
    ));
  return {
    format: "npy",
    models: [{
      id: "npy",
      metadata: {
        "npy.version": header.version,
        "npy.descr": header.descr,
        "npy.fortran_order": header.fortranOrder,
      },
      tensors,
    }],
  };
}

/**
 * The one model of a file a single-model format writes, or a `TypeError`
 * naming the ids.
 *
 * @param file The model file.
 * @param format The format's name, for the message.
 * @returns The model.
 */
export function onlyModel(file: ModelFile, format: string): Model {
  if (file.models.length !== 1) {
    throw new TypeError(
      `Cannot write ${format}: it holds one model, the file has ${file.models.length} (${
        file.models.map((m) => m.id).join(", ")
      }); pick one (the CLI's --id)`,
    );
  }
  return file.models[0];
}

/**
 * Writes a model with exactly one tensor as a `.npy` file.
 *
 * @param file The model file.
 * @param options Whether to refuse dtypes NumPy lacks.
 * @returns The bytes.
 * @throws {TypeError} When the file does not hold exactly one tensor.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { writeNpy } from "./npy.ts";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost";
 * const tensors = memoryTensorIndex([tensorFromF32("w", new Float32Array(3), [3])]);
 * const bytes = await writeNpy({ models: [{ id: "m", metadata: {}, tensors }] });
 * assert(bytes[0] === 0x93);
 * ```
 */
export async function writeNpy(
  file: ModelFile,
  options: NpyWriteOptions = {},
): Promise<Uint8Array> {
  const model = onlyModel(file, ".npy");
  const names = model.tensors.names();
  if (names.length !== 1) {
    throw new TypeError(
      `Cannot write .npy: it holds one array, model "${model.id}" has ${names.length} tensors${
        names.length
          ? ` (${names.slice(0, 5).join(", ")}${names.length > 5 ? ", …" : ""})`
          : ""
      }; write .npz for several`,
    );
  }
  return encodeNpy(await model.tensors.load(names[0]), options);
}
