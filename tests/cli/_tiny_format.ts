// A tiny format plugin used to test the CLI as a third-party plugin would be:
// "TINY" magic, u32 LE header length, a JSON header, then raw tensor bytes.
// It imports only the package's public entry point.

import {
  encodeFromF32,
  type FormatPlugin,
  lazyTensorIndex,
  type ModelFile,
  type TensorInfo,
  toFloat32,
} from "../../mod.ts";

const MAGIC = [0x54, 0x49, 0x4e, 0x59];

const tiny: FormatPlugin = {
  kind: "format",
  name: "tiny",
  description: "test format",
  extensions: [".tiny"],
  options: [{
    name: "storeDtype",
    type: "string",
    description: "Store tensors as",
    choices: ["F32", "F16"],
    default: "F32",
  }],
  detect: (h) => MAGIC.every((b, i) => h[i] === b),
  async read(src) {
    const head = await src.read(0, 8);
    if (!MAGIC.every((b, i) => head[i] === b)) {
      throw new SyntaxError(`${src.name}: not a tiny file`);
    }
    const len = new DataView(head.buffer, head.byteOffset).getUint32(4, true);
    const header = JSON.parse(new TextDecoder().decode(await src.read(8, len)));
    const base = 8 + len;
    const infos: TensorInfo[] = header.tensors.map((t: TensorInfo) => ({
      ...t,
      byteOffset: base + t.byteOffset!,
    }));
    return {
      models: [{
        id: header.id,
        metadata: header.metadata,
        tensors: lazyTensorIndex(
          infos,
          (i) => src.read(i.byteOffset!, i.byteLength),
        ),
      }],
    };
  },
  async write(file: ModelFile, options = {}) {
    const m = file.models[0];
    const dtype = (options.storeDtype as "F32" | "F16" | undefined) ?? "F32";
    const parts: Uint8Array[] = [];
    const tensors = [];
    let off = 0;
    for (const name of m.tensors.names()) {
      const t = await m.tensors.load(name);
      const bytes = encodeFromF32(dtype, toFloat32(t));
      tensors.push({
        name,
        dtype,
        shape: t.shape,
        byteOffset: off,
        byteLength: bytes.length,
      });
      parts.push(bytes);
      off += bytes.length;
    }
    const metadata = {
      ...m.metadata,
      ...(options.provenance ? { provenance: options.provenance } : {}),
    };
    const header = new TextEncoder().encode(
      JSON.stringify({ id: m.id, metadata, tensors }),
    );
    const out = new Uint8Array(8 + header.length + off);
    out.set(MAGIC);
    new DataView(out.buffer).setUint32(4, header.length, true);
    out.set(header, 8);
    let p = 8 + header.length;
    for (const b of parts) out.set(b, p), p += b.length;
    return out;
  },
};

export default tiny;
