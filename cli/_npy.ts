// A minimal `.npy` reader for `run --input`: little-endian numeric arrays in
// C order, widened to F32. (A full NumPy format plugin lives in
// examples/plugins/npy.)

import type { FloatTensor } from "../core/tensor.ts";

const CODES: Record<
  string,
  { size: number; get(v: DataView, o: number): number }
> = {
  "<f4": { size: 4, get: (v, o) => v.getFloat32(o, true) },
  "<f8": { size: 8, get: (v, o) => v.getFloat64(o, true) },
  "<f2": { size: 2, get: (v, o) => v.getFloat16(o, true) },
  "<i4": { size: 4, get: (v, o) => v.getInt32(o, true) },
  "<i8": { size: 8, get: (v, o) => Number(v.getBigInt64(o, true)) },
  "<i2": { size: 2, get: (v, o) => v.getInt16(o, true) },
  "|i1": { size: 1, get: (v, o) => v.getInt8(o) },
  "|u1": { size: 1, get: (v, o) => v.getUint8(o) },
  "|b1": { size: 1, get: (v, o) => v.getUint8(o) },
};

/** Parses `.npy` bytes into a float tensor. */
export function readNpy(bytes: Uint8Array, name: string): FloatTensor {
  const magic = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59];
  if (bytes.length < 10 || !magic.every((b, i) => bytes[i] === b)) {
    throw new SyntaxError(`${name}: not a .npy file (bad magic)`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const major = bytes[6];
  const headerLen = major === 1
    ? view.getUint16(8, true)
    : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  if (start + headerLen > bytes.length) {
    throw new RangeError(
      `${name}: header of ${headerLen} bytes runs past the end (${bytes.length} bytes)`,
    );
  }
  const header = new TextDecoder().decode(
    bytes.subarray(start, start + headerLen),
  );
  const descr = header.match(/'descr':\s*'([^']+)'/)?.[1];
  const fortran = header.match(/'fortran_order':\s*(True|False)/)?.[1];
  const shapeText = header.match(/'shape':\s*\(([^)]*)\)/)?.[1];
  if (!descr || !fortran || shapeText === undefined) {
    throw new SyntaxError(`${name}: unparsable header ${header.trim()}`);
  }
  if (fortran === "True") {
    throw new TypeError(
      `${name}: Fortran-order arrays are not supported; save with np.ascontiguousarray`,
    );
  }
  const codec = Object.hasOwn(CODES, descr) ? CODES[descr] : undefined;
  if (!codec) {
    throw new TypeError(
      `${name}: dtype ${descr} is not supported; use one of ${
        Object.keys(CODES).join(", ")
      }`,
    );
  }
  const shape = shapeText.split(",").map((s) => s.trim()).filter(Boolean).map(
    Number,
  );
  const n = shape.reduce((a, b) => a * b, 1);
  const dataStart = start + headerLen;
  if (dataStart + n * codec.size > bytes.length) {
    throw new RangeError(
      `${name}: ${descr} [${shape.join(", ")}] needs ${
        n * codec.size
      } bytes at offset ${dataStart}, file has ${bytes.length - dataStart}`,
    );
  }
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    data[i] = codec.get(view, dataStart + i * codec.size);
  }
  return { shape, data };
}
