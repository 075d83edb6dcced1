// GGUF's byte layout as the writer emits it: a growable little-endian
// buffer, typed metadata values, and the header (magic, version, counts,
// metadata, tensor descriptors, padding to the alignment).

import { dtypeInfo } from "../../core/dtypes.ts";
import {
  GGUF_TYPE_NAMES,
  type GgufArray,
  type GgufMetadataEntry,
  GgufType,
  type GgufValue,
  MAX_KEY_BYTES,
} from "./types.ts";
import { intRange } from "./_desc.ts";
import type { GgufTensorPlan } from "./write.ts";

export const encoder = new TextEncoder();

/** A growable little-endian byte buffer. */
export class ByteWriter {
  buf = new Uint8Array(4096);
  view = new DataView(this.buf.buffer);
  pos = 0;

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.pos + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v;
  }
  u32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, v, true);
    this.pos += 4;
  }
  u64(v: number | bigint): void {
    this.ensure(8);
    this.view.setBigUint64(this.pos, BigInt(v), true);
    this.pos += 8;
  }
  str(s: string): void {
    this.ensure(8 + 3 * s.length);
    const { written } = encoder.encodeInto(
      s,
      this.buf.subarray(this.pos + 8),
    );
    this.view.setUint32(this.pos, written, true);
    this.view.setUint32(this.pos + 4, 0, true);
    this.pos += 8 + written;
  }
  raw(bytes: ArrayLike<number>): void {
    this.ensure(bytes.length);
    for (let i = 0; i < bytes.length; i++) this.buf[this.pos++] = bytes[i];
  }
  pad(align: number): void {
    const n = (align - (this.pos % align)) % align;
    this.ensure(n);
    this.buf.fill(0, this.pos, this.pos + n);
    this.pos += n;
  }
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

export function writeValue(
  w: ByteWriter,
  type: GgufType,
  value: GgufValue,
  key: string,
): void {
  const bad = () =>
    new TypeError(
      `Cannot write metadata "${key}": ${
        typeof value === "object" ? "an array" : JSON.stringify(String(value))
      } is not a valid ${GGUF_TYPE_NAMES[type] ?? `type ${type}`} value`,
    );
  const range = intRange(type);
  if (range) {
    if (
      typeof value !== "number" || !Number.isInteger(value) ||
      value < range[0] || value > range[1]
    ) throw bad();
  }
  w.ensure(8);
  const v = w.view;
  switch (type) {
    case GgufType.UINT8:
    case GgufType.INT8:
      v.setUint8(w.pos, (value as number) & 255);
      w.pos += 1;
      return;
    case GgufType.UINT16:
    case GgufType.INT16:
      v.setUint16(w.pos, (value as number) & 0xffff, true);
      w.pos += 2;
      return;
    case GgufType.UINT32:
    case GgufType.INT32:
      v.setUint32(w.pos, (value as number) >>> 0, true);
      w.pos += 4;
      return;
    case GgufType.FLOAT32:
      if (typeof value !== "number") throw bad();
      v.setFloat32(w.pos, value, true);
      w.pos += 4;
      return;
    case GgufType.FLOAT64:
      if (typeof value !== "number") throw bad();
      v.setFloat64(w.pos, value, true);
      w.pos += 8;
      return;
    case GgufType.BOOL:
      if (typeof value !== "boolean") throw bad();
      v.setUint8(w.pos, value ? 1 : 0);
      w.pos += 1;
      return;
    case GgufType.UINT64:
    case GgufType.INT64: {
      const b = typeof value === "bigint"
        ? value
        : typeof value === "number" && Number.isSafeInteger(value)
        ? BigInt(value)
        : undefined;
      if (
        b === undefined ||
        (type === GgufType.UINT64
          ? b < 0n || b >= 2n ** 64n
          : b < -(2n ** 63n) || b >= 2n ** 63n)
      ) throw bad();
      if (type === GgufType.UINT64) v.setBigUint64(w.pos, b, true);
      else v.setBigInt64(w.pos, b, true);
      w.pos += 8;
      return;
    }
    case GgufType.STRING:
      if (typeof value !== "string") throw bad();
      w.str(value);
      return;
    case GgufType.ARRAY: {
      if (typeof value !== "object") throw bad();
      const arr = value as GgufArray;
      w.u32(arr.type);
      w.u64(arr.items.length);
      for (const item of arr.items) writeValue(w, arr.type, item, key);
      return;
    }
  }
  throw bad();
}

export function serializeHeader(
  metadata: GgufMetadataEntry[],
  plan: GgufTensorPlan[],
  alignment: number,
): Uint8Array {
  const w = new ByteWriter();
  w.raw([0x47, 0x47, 0x55, 0x46]);
  w.u32(3);
  w.u64(plan.length);
  w.u64(metadata.length);
  for (const e of metadata) {
    const keyBytes = encoder.encode(e.key).length;
    if (keyBytes > MAX_KEY_BYTES) {
      throw new RangeError(
        `Cannot write metadata key "${
          e.key.slice(0, 40)
        }…": it is ${keyBytes} bytes, the limit is ${MAX_KEY_BYTES}`,
      );
    }
    w.str(e.key);
    w.u32(e.type);
    writeValue(w, e.type, e.value, e.key);
  }
  for (const p of plan) {
    w.str(p.name);
    w.u32(p.dims.length);
    for (const d of p.dims) w.u64(d);
    w.u32(dtypeInfo(p.to).gguf!);
    w.u64(p.offset);
  }
  if (plan.length > 0) w.pad(alignment);
  return w.bytes();
}
