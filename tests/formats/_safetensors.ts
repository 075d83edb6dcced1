// Shared by the SafeTensors tests (safetensors_test.ts, safetensors_header_test.ts,
// safetensors_write_test.ts): hand-built files and small model helpers.

import { readSafetensors } from "../../formats/safetensors/mod.ts";
import {
  memoryTensorIndex,
  type Model,
  type ModelFile,
} from "../../core/model.ts";
import { memorySource } from "../../core/sources.ts";
import type { Tensor } from "../../core/tensor.ts";

export const enc = new TextEncoder();

/** A SafeTensors file from a header text and data bytes (no padding added). */
export function stFile(
  header: string | Uint8Array,
  data: Uint8Array = new Uint8Array(),
): Uint8Array {
  const h = typeof header === "string" ? enc.encode(header) : header;
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

export function entry(
  dtype: string,
  shape: unknown[],
  offsets: unknown[],
): string {
  return `{"dtype":${JSON.stringify(dtype)},"shape":${
    JSON.stringify(shape)
  },"data_offsets":${JSON.stringify(offsets)}}`;
}

export async function read(bytes: Uint8Array): Promise<ModelFile> {
  return await readSafetensors(memorySource(bytes, "t.safetensors"));
}

export function model(
  tensors: Tensor[],
  extra: Partial<Model> = {},
): ModelFile {
  return {
    models: [{
      id: "m",
      metadata: {},
      tensors: memoryTensorIndex(tensors),
      ...extra,
    }],
  };
}

export async function collect(
  chunks: AsyncIterable<Uint8Array>,
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c.slice());
  const out = new Uint8Array(parts.reduce((s, p) => s + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
