/**
 * A small protobuf writer for the ONNX messages the exporter emits
 * (`ModelProto`, `GraphProto`, `NodeProto`, `AttributeProto`, `TensorProto`,
 * `ValueInfoProto`). Field numbers follow `onnx/onnx.proto`.
 *
 * Messages are built as lists of byte chunks: a large `raw_data` is kept by
 * reference until the final concatenation, so a tensor's bytes are copied
 * once. Fields are written in one fixed order, so equal messages give equal
 * bytes.
 *
 * @module
 */

import { encodeVarint } from "@std/encoding";

/** Protobuf wire types. */
const VARINT = 0;
const FIXED32 = 5;
const LEN = 2;

/** Chunks at least this long are referenced, not copied into the scratch buffer. */
const COPY_LIMIT = 256;

const utf8 = new TextEncoder();

/**
 * Appends the varint of a non-negative safe integer at `pos`; returns the
 * new position. Numbers below 2^31 use bit operations, larger ones division
 * (bit operations in JavaScript stop at 32 bits).
 */
export function writeVarint(buf: Uint8Array, pos: number, v: number): number {
  while (v >= 0x80000000) {
    buf[pos++] = (v % 128) | 0x80;
    v = Math.floor(v / 128);
  }
  while (v >= 0x80) {
    buf[pos++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[pos++] = v;
  return pos;
}

/** Writes one protobuf message as chunks; nested messages are other writers. */
export class ProtoWriter {
  #parts: Uint8Array[] = [];
  #buf = new Uint8Array(64);
  #pos = 0;
  #flushed = 0;

  /** Bytes written so far. */
  get length(): number {
    return this.#flushed + this.#pos;
  }

  #room(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.#pos));
    this.#buf = next;
  }

  #flush(): void {
    if (this.#pos === 0) return;
    this.#parts.push(this.#buf.slice(0, this.#pos));
    this.#flushed += this.#pos;
    this.#pos = 0;
  }

  #varint(v: number): void {
    if (Number.isSafeInteger(v) && v >= 0) {
      this.#room(10);
      this.#pos = writeVarint(this.#buf, this.#pos, v);
      return;
    }
    if (!Number.isSafeInteger(v)) {
      throw new RangeError(`Cannot write ${v} as a protobuf integer`);
    }
    // Negative int64: two's complement over 64 bits, always 10 bytes.
    const [bytes] = encodeVarint(BigInt.asUintN(64, BigInt(v)));
    this.#raw(bytes);
  }

  #raw(bytes: Uint8Array): void {
    if (bytes.length >= COPY_LIMIT) {
      this.#flush();
      this.#parts.push(bytes);
      this.#flushed += bytes.length;
      return;
    }
    this.#room(bytes.length);
    this.#buf.set(bytes, this.#pos);
    this.#pos += bytes.length;
  }

  #tag(field: number, wire: number): void {
    this.#varint(field * 8 + wire);
  }

  /** An `int32`/`int64`/enum field (negative values take 10 bytes). */
  int(field: number, v: number): this {
    this.#tag(field, VARINT);
    this.#varint(v);
    return this;
  }

  /** A `float` field (fixed 32-bit, little-endian). */
  float(field: number, v: number): this {
    this.#tag(field, FIXED32);
    this.#room(4);
    new DataView(this.#buf.buffer).setFloat32(this.#pos, v, true);
    this.#pos += 4;
    return this;
  }

  /** A `bytes` field; chunks of 256 bytes or more are kept by reference. */
  bytes(field: number, data: Uint8Array): this {
    this.#tag(field, LEN);
    this.#varint(data.length);
    this.#raw(data);
    return this;
  }

  /** A `string` field (UTF-8). */
  string(field: number, s: string): this {
    return this.bytes(field, utf8.encode(s));
  }

  /** A nested message field. */
  message(field: number, m: ProtoWriter): this {
    this.#tag(field, LEN);
    this.#varint(m.length);
    m.#flush();
    this.#flush();
    for (const p of m.#parts) this.#parts.push(p);
    this.#flushed += m.length;
    return this;
  }

  /** A packed `repeated int64` field (skipped when empty). */
  packedInts(field: number, values: readonly number[]): this {
    if (values.length === 0) return this;
    const inner = new ProtoWriter();
    for (const v of values) inner.#varint(v);
    this.#tag(field, LEN);
    this.#varint(inner.length);
    this.#raw(inner.finish());
    return this;
  }

  /** A packed `repeated float` field (skipped when empty). */
  packedFloats(field: number, values: readonly number[]): this {
    if (values.length === 0) return this;
    const data = new Uint8Array(values.length * 4);
    const dv = new DataView(data.buffer);
    values.forEach((v, i) => dv.setFloat32(i * 4, v, true));
    return this.bytes(field, data);
  }

  /** The chunks written, in order (large `bytes` fields by reference). */
  chunks(): Uint8Array[] {
    this.#flush();
    return this.#parts.slice();
  }

  /** The message as one array. */
  finish(): Uint8Array {
    this.#flush();
    if (this.#parts.length === 1) return this.#parts[0];
    const out = new Uint8Array(this.#flushed);
    let off = 0;
    for (const p of this.#parts) {
      out.set(p, off);
      off += p.length;
    }
    return out;
  }
}

// ---------------------------------------------------------------------------
// ONNX messages (field numbers from onnx.proto).

/** `TensorProto.DataType` values. */
export const OnnxDataType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  BFLOAT16: 16,
  FLOAT8E4M3FN: 17,
  FLOAT8E4M3FNUZ: 18,
  FLOAT8E5M2: 19,
  FLOAT8E5M2FNUZ: 20,
  UINT4: 21,
  INT4: 22,
  FLOAT4E2M1: 23,
} as const;

/** `AttributeProto.AttributeType` values. */
export const OnnxAttributeType = {
  FLOAT: 1,
  INT: 2,
  STRING: 3,
  TENSOR: 4,
  GRAPH: 5,
  FLOATS: 6,
  INTS: 7,
} as const;

/** Where an external tensor's bytes are. */
export interface ExternalLocation {
  /** File name relative to the model file. */
  location: string;
  /** Byte offset in that file. */
  offset: number;
  /** Byte length. */
  length: number;
}

/** A `TensorProto`: dims, type and raw little-endian data (inline or external). */
export interface TensorMessage {
  /** Value name. */
  name: string;
  /** `TensorProto.DataType`. */
  dataType: number;
  /** Dimensions. */
  dims: readonly number[];
  /** The bytes, when stored inline. */
  raw?: Uint8Array;
  /** Where the bytes are, when stored in an external file. */
  external?: ExternalLocation;
}

/** An `AttributeProto` with the value in the field its type names. */
export type AttributeMessage =
  & { name: string }
  & (
    | { type: typeof OnnxAttributeType.FLOAT; f: number }
    | { type: typeof OnnxAttributeType.INT; i: number }
    | { type: typeof OnnxAttributeType.STRING; s: string }
    | { type: typeof OnnxAttributeType.TENSOR; t: TensorMessage }
    | { type: typeof OnnxAttributeType.FLOATS; floats: readonly number[] }
    | { type: typeof OnnxAttributeType.INTS; ints: readonly number[] }
  );

/** A `NodeProto`. */
export interface NodeMessage {
  /** Operator. */
  opType: string;
  /** Input value names. */
  inputs: string[];
  /** Output value names. */
  outputs: string[];
  /** Node name. */
  name?: string;
  /** Operator domain (`""` is the default ONNX domain). */
  domain?: string;
  /** Attributes, in the order to write. */
  attributes?: readonly AttributeMessage[];
}

/** A `ValueInfoProto` of a tensor; string dims are symbolic (`batch`). */
export interface ValueInfoMessage {
  /** Value name. */
  name: string;
  /** Element type. */
  elemType: number;
  /** Dimensions: numbers, symbolic names, or `undefined` for unknown. */
  dims?: readonly (number | string | undefined)[];
  /** Documentation. */
  docString?: string;
}

/** A `GraphProto`. */
export interface GraphMessage {
  /** Graph name. */
  name: string;
  /** Nodes in topological order. */
  nodes: readonly NodeMessage[];
  /** Initializers. */
  initializers: readonly TensorMessage[];
  /** Graph inputs. */
  inputs: readonly ValueInfoMessage[];
  /** Graph outputs. */
  outputs: readonly ValueInfoMessage[];
  /** Documentation. */
  docString?: string;
}

/** A `ModelProto`. */
export interface ModelMessage {
  /** IR version. */
  irVersion: number;
  /** Operator sets. */
  opsetImports: readonly { domain: string; version: number }[];
  /** Producer name. */
  producerName: string;
  /** Producer version. */
  producerVersion: string;
  /** Documentation. */
  docString?: string;
  /** The graph. */
  graph: GraphMessage;
  /** Metadata key/value pairs, in the order to write. */
  metadata: readonly (readonly [string, string])[];
}

/** Encodes a `TensorProto`. */
export function tensorProto(t: TensorMessage): ProtoWriter {
  const w = new ProtoWriter();
  w.packedInts(1, t.dims); // dims
  w.int(2, t.dataType); // data_type
  w.string(8, t.name); // name
  if (t.external) {
    const entry = (k: string, v: string) =>
      new ProtoWriter().string(1, k).string(2, v);
    w.message(13, entry("location", t.external.location)); // external_data
    w.message(13, entry("offset", String(t.external.offset)));
    w.message(13, entry("length", String(t.external.length)));
    w.int(14, 1); // data_location = EXTERNAL
  } else {
    w.bytes(9, t.raw ?? new Uint8Array(0)); // raw_data
  }
  return w;
}

function attributeProto(a: AttributeMessage): ProtoWriter {
  const w = new ProtoWriter();
  w.string(1, a.name);
  switch (a.type) {
    case OnnxAttributeType.FLOAT:
      w.float(2, a.f);
      break;
    case OnnxAttributeType.INT:
      w.int(3, a.i);
      break;
    case OnnxAttributeType.STRING:
      w.string(4, a.s);
      break;
    case OnnxAttributeType.TENSOR:
      w.message(5, tensorProto(a.t));
      break;
    case OnnxAttributeType.FLOATS:
      w.packedFloats(7, a.floats);
      break;
    case OnnxAttributeType.INTS:
      w.packedInts(8, a.ints);
      break;
  }
  w.int(20, a.type);
  return w;
}

function nodeProto(n: NodeMessage): ProtoWriter {
  const w = new ProtoWriter();
  for (const i of n.inputs) w.string(1, i);
  for (const o of n.outputs) w.string(2, o);
  if (n.name) w.string(3, n.name);
  w.string(4, n.opType);
  for (const a of n.attributes ?? []) w.message(5, attributeProto(a));
  if (n.domain) w.string(7, n.domain);
  return w;
}

function valueInfoProto(v: ValueInfoMessage): ProtoWriter {
  const shape = new ProtoWriter();
  for (const d of v.dims ?? []) {
    const dim = new ProtoWriter();
    if (typeof d === "number") dim.int(1, d); // dim_value
    else if (typeof d === "string") dim.string(2, d); // dim_param
    shape.message(1, dim);
  }
  const tensorType = new ProtoWriter().int(1, v.elemType);
  if (v.dims) tensorType.message(2, shape);
  const type = new ProtoWriter().message(1, tensorType); // TypeProto.tensor_type
  const w = new ProtoWriter().string(1, v.name).message(2, type);
  if (v.docString) w.string(3, v.docString);
  return w;
}

function graphProto(g: GraphMessage): ProtoWriter {
  const w = new ProtoWriter();
  for (const n of g.nodes) w.message(1, nodeProto(n));
  w.string(2, g.name);
  for (const t of g.initializers) w.message(5, tensorProto(t));
  if (g.docString) w.string(10, g.docString);
  for (const i of g.inputs) w.message(11, valueInfoProto(i));
  for (const o of g.outputs) w.message(12, valueInfoProto(o));
  return w;
}

/**
 * Encodes a `ModelProto` as chunks (large tensor data by reference).
 *
 * @param m The model.
 * @returns The writer; `finish()` gives the bytes, `length` their count.
 */
export function modelProto(m: ModelMessage): ProtoWriter {
  const w = new ProtoWriter();
  w.int(1, m.irVersion);
  w.string(2, m.producerName);
  w.string(3, m.producerVersion);
  if (m.docString) w.string(6, m.docString);
  w.message(7, graphProto(m.graph));
  for (const o of m.opsetImports) {
    const op = new ProtoWriter();
    if (o.domain) op.string(1, o.domain);
    op.int(2, o.version);
    w.message(8, op);
  }
  for (const [k, v] of m.metadata) {
    w.message(14, new ProtoWriter().string(1, k).string(2, v));
  }
  return w;
}
