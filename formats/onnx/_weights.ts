/**
 * How stored tensors become ONNX initializers: which dtypes ONNX holds as
 * they are (and from which opset), byte-level transposition, and the
 * optional F16 / I8 weight conversions of the exporter.
 *
 * @module
 */

import { decodeToF32, dtypeInfo, roundHalfEven } from "../../core/dtypes.ts";
import type { DTypeName } from "../../core/dtypes.ts";
import type { QuantParams, Tensor } from "../../core/tensor.ts";
import { OnnxDataType } from "./_protobuf.ts";

/** How weight matrices are stored in the exported file. */
export type OnnxWeightDtype = "keep" | "F16" | "I8";

/** ONNX element types of our dtypes, for those ONNX holds bit for bit. */
const PASSTHROUGH: Partial<Record<DTypeName, number>> = {
  F32: OnnxDataType.FLOAT,
  F16: OnnxDataType.FLOAT16,
  BF16: OnnxDataType.BFLOAT16,
  F64: OnnxDataType.DOUBLE,
  I8: OnnxDataType.INT8,
  U8: OnnxDataType.UINT8,
  I16: OnnxDataType.INT16,
  U16: OnnxDataType.UINT16,
  I32: OnnxDataType.INT32,
  U32: OnnxDataType.UINT32,
  I64: OnnxDataType.INT64,
  U64: OnnxDataType.UINT64,
  BOOL: OnnxDataType.BOOL,
  F8_E4M3: OnnxDataType.FLOAT8E4M3FN,
  F8_E5M2: OnnxDataType.FLOAT8E5M2,
};

/** The first opset whose `Cast` takes each type (FP8 arrived in opset 19). */
const FROM_OPSET: Partial<Record<DTypeName, number>> = {
  F8_E4M3: 19,
  F8_E5M2: 19,
};

/**
 * The ONNX element type that holds a dtype's bytes unchanged at `opset`, or
 * `undefined` when the bytes must be converted first.
 */
export function passthroughType(
  dtype: DTypeName,
  opset: number,
): number | undefined {
  const t = PASSTHROUGH[dtype];
  if (t === undefined) return undefined;
  return opset >= (FROM_OPSET[dtype] ?? 0) ? t : undefined;
}

/** Bytes per element of an ONNX element type we write (0 for sub-byte types). */
export function elementBytes(dataType: number): number {
  switch (dataType) {
    case OnnxDataType.DOUBLE:
    case OnnxDataType.INT64:
    case OnnxDataType.UINT64:
      return 8;
    case OnnxDataType.FLOAT:
    case OnnxDataType.INT32:
    case OnnxDataType.UINT32:
      return 4;
    case OnnxDataType.FLOAT16:
    case OnnxDataType.BFLOAT16:
    case OnnxDataType.INT16:
    case OnnxDataType.UINT16:
      return 2;
    case OnnxDataType.INT4:
    case OnnxDataType.UINT4:
    case OnnxDataType.FLOAT4E2M1:
      return 0;
    default:
      return 1;
  }
}

/**
 * The transpose of a row-major `rows × cols` matrix of `size`-byte elements.
 */
export function transposeBytes(
  raw: Uint8Array,
  rows: number,
  cols: number,
  size: number,
): Uint8Array {
  const out = new Uint8Array(rows * cols * size);
  if (size === 4 && raw.byteOffset % 4 === 0) {
    // 32 × 32 tiles keep both the reads and the writes in cache.
    const src = new Uint32Array(raw.buffer, raw.byteOffset, rows * cols);
    const dst = new Uint32Array(out.buffer);
    const T = 32;
    for (let r0 = 0; r0 < rows; r0 += T) {
      const r1 = Math.min(rows, r0 + T);
      for (let c0 = 0; c0 < cols; c0 += T) {
        const c1 = Math.min(cols, c0 + T);
        for (let r = r0; r < r1; r++) {
          for (let c = c0; c < c1; c++) dst[c * rows + r] = src[r * cols + c];
        }
      }
    }
    return out;
  }
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const s = (r * cols + c) * size, d = (c * rows + r) * size;
      for (let b = 0; b < size; b++) out[d + b] = raw[s + b];
    }
  }
  return out;
}

/** Stored codes of a tensor as F32, without its quantization parameters. */
export function codesAsF32(t: Tensor): Float32Array {
  const n = t.shape.reduce((a, b) => a * b, 1);
  return decodeToF32(t.dtype, t.bytes, n);
}

/**
 * Converts a float weight matrix for the `weightDtype` option: `F16`
 * rounds to half precision; `I8` quantizes each row (axis 0, one output
 * channel of an `[out, in]` matrix) symmetrically to [−127, 127] with
 * scale `max|row| / 127` and round-half-to-even, as ONNX `QuantizeLinear`
 * does. Vectors, integer tensors and tensors that are already quantized
 * are returned unchanged.
 *
 * @param t The stored tensor.
 * @param mode The conversion.
 * @param values The tensor widened to F32 (read only when converting).
 * @returns The tensor to store.
 */
export function convertWeight(
  t: Tensor,
  mode: OnnxWeightDtype,
  values: () => Float32Array,
): Tensor {
  const info = dtypeInfo(t.dtype);
  if (
    mode === "keep" || t.shape.length < 2 || t.quant ||
    info.kind !== "float" || (mode === "F16" && t.dtype === "F16")
  ) return t;
  const v = values();
  if (mode === "F16") {
    return {
      name: t.name,
      dtype: "F16",
      shape: t.shape.slice(),
      bytes: new Uint8Array(Float16Array.from(v).buffer),
    };
  }
  return quantizeRowsI8(t.name, v, t.shape);
}

/**
 * Symmetric per-row int8 quantization of a matrix (rows along axis 0).
 *
 * @param name Tensor name.
 * @param v The values, row-major.
 * @param shape The shape (axis 0 are the rows).
 * @returns An I8 tensor with one scale per row.
 */
export function quantizeRowsI8(
  name: string,
  v: Float32Array,
  shape: number[],
): Tensor {
  const rows = shape[0], cols = v.length / rows;
  const q = new Int8Array(v.length);
  const scale = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    let max = 0;
    for (let c = 0; c < cols; c++) {
      max = Math.max(max, Math.abs(v[r * cols + c]));
    }
    const s = Math.fround(max > 0 ? max / 127 : 1);
    scale[r] = s;
    for (let c = 0; c < cols; c++) {
      const x = roundHalfEven(v[r * cols + c] / s);
      q[r * cols + c] = Math.max(-127, Math.min(127, x));
    }
  }
  const quant: QuantParams = { scale, axis: 0 };
  return {
    name,
    dtype: "I8",
    shape: shape.slice(),
    bytes: new Uint8Array(q.buffer),
    quant,
  };
}
