/**
 * A byte builder for hand-made GGUF headers in tests (hostile files
 * included). It knows nothing of modelhost's writer: every field is spelled
 * out by the test.
 */

export class Bytes {
  private parts: number[] = [];
  u8(v: number): this {
    this.parts.push(v & 255);
    return this;
  }
  u32(v: number): this {
    for (let i = 0; i < 4; i++) this.parts.push((v >>> (8 * i)) & 255);
    return this;
  }
  u64(v: number | bigint): this {
    let b = BigInt(v);
    for (let i = 0; i < 8; i++) {
      this.parts.push(Number(b & 255n));
      b >>= 8n;
    }
    return this;
  }
  raw(bytes: ArrayLike<number>): this {
    for (let i = 0; i < bytes.length; i++) this.parts.push(bytes[i]);
    return this;
  }
  str(s: string): this {
    const b = new TextEncoder().encode(s);
    return this.u64(b.length).raw(b);
  }
  /** Magic, version, tensor count, kv count. */
  head(version: number, tensors: number | bigint, kvs: number | bigint): this {
    return this.raw([0x47, 0x47, 0x55, 0x46]).u32(version).u64(tensors).u64(
      kvs,
    );
  }
  /** One tensor info. */
  tensor(name: string, dims: number[], type: number, offset: number): this {
    this.str(name).u32(dims.length);
    for (const d of dims) this.u64(d);
    return this.u32(type).u64(offset);
  }
  /** Zero bytes up to a multiple of `a`. */
  pad(a: number): this {
    while (this.parts.length % a !== 0) this.parts.push(0);
    return this;
  }
  get length(): number {
    return this.parts.length;
  }
  bytes(): Uint8Array {
    return new Uint8Array(this.parts);
  }
}
