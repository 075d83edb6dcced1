/**
 * Quantization preview for the page: what converting a model to a type
 * would do to each tensor (RMSE, cosine, max error against the values as
 * stored now) and the size of the file it would write, computed with the
 * same plan and codecs the writers use; then the conversion itself.
 *
 * Block types (Q8_0 … Q6_K) are written as GGUF with llama.cpp's `--pure`
 * rules (`planGguf`); F16 and BF16 as GGUF when the model came from a GGUF
 * file, else as SafeTensors; F8 and I8 as SafeTensors (`I8`: symmetric,
 * one scale per output row).
 *
 * @module
 */

import {
  decodeToF32,
  type DTypeName,
  encodeFromF32,
  errorStats,
  memorySource,
  memoryTensorIndex,
  type ModelFile,
  numel,
  toFloat32,
} from "@modelhost/modelhost/core";
import {
  type GgufQuantType,
  planGguf,
  QUANTIZE_TYPES,
  quantizeGguf,
  writeGguf,
  writeGgufBytes,
} from "@modelhost/modelhost/formats/gguf";
import {
  readSafetensors,
  serializeSafetensors,
  writeSafetensorsShards,
} from "@modelhost/modelhost/formats/safetensors";

/** The types the preview offers, in menu order. */
export const PREVIEW_TYPES = [
  "Q8_0",
  "Q6_K",
  "Q5_K",
  "Q5_1",
  "Q5_0",
  "Q4_K",
  "Q4_1",
  "Q4_0",
  "Q3_K",
  "Q2_K",
  "F16",
  "BF16",
  "F8_E4M3",
  "F8_E5M2",
  "I8",
] as const;

/** One type the preview offers. */
export type PreviewType = typeof PREVIEW_TYPES[number];

/** One tensor's row of the preview. */
export interface PreviewRow {
  /** Tensor name. */
  name: string;
  /** Stored type now. */
  from: DTypeName;
  /** Type it would be written as. */
  to: DTypeName;
  /** Elements. */
  elements: number;
  /** Stored bytes now. */
  bytesBefore: number;
  /** Bytes it would take. */
  bytesAfter: number;
  /** Root mean square error against the values as stored now. */
  rmse: number;
  /** Cosine similarity (1 when unchanged; NaN for an all-zero tensor). */
  cosine: number;
  /** Largest absolute error. */
  maxError: number;
  /** Why the type differs from the one asked for, when it does. */
  note?: string;
}

/** What {@link previewQuantization} returns. */
export interface Preview {
  /** The type asked for. */
  type: PreviewType;
  /** The file format it would write. */
  container: "gguf" | "safetensors";
  /** Per tensor, in the model's order. */
  rows: PreviewRow[];
  /** Size of the file it would write, bytes. */
  fileBytes: number;
  /** Sum of `bytesAfter`. */
  tensorBytes: number;
  /** Sum of `bytesBefore`. */
  tensorBytesBefore: number;
}

/** Options of {@link previewQuantization}. */
export interface PreviewOptions {
  /** Called after each tensor with its row and how many are done. @default {undefined} */
  onRow?: (row: PreviewRow, done: number, total: number) => void;
  /** Stops between tensors when aborted (the promise rejects with its reason). @default {undefined} */
  signal?: AbortSignal;
}

/**
 * The file format a type is written as, for a model read from `format`.
 *
 * @param type The type.
 * @param format The source format (`gguf`, `safetensors`, ...).
 * @returns `gguf` or `safetensors`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { containerFor } from "./_quant.ts";
 * assert(containerFor("Q4_0", "safetensors") === "gguf");
 * assert(containerFor("F16", "safetensors") === "safetensors");
 * assert(containerFor("F16", "gguf") === "gguf");
 * ```
 */
export function containerFor(
  type: PreviewType,
  format: string | undefined,
): "gguf" | "safetensors" {
  if ((QUANTIZE_TYPES as readonly string[]).includes(type)) return "gguf";
  if (type === "F16" || type === "BF16") {
    return format === "gguf" ? "gguf" : "safetensors";
  }
  return "safetensors";
}

function aborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new Error("aborted");
}

function row(
  name: string,
  from: DTypeName,
  to: DTypeName,
  elements: number,
  bytesBefore: number,
  bytesAfter: number,
  ref: Float32Array | undefined,
  approx: Float32Array | undefined,
  note?: string,
): PreviewRow {
  const e = ref && approx
    ? errorStats(ref, approx)
    : { rmsError: 0, cosine: 1, maxAbsError: 0 };
  return {
    name,
    from,
    to,
    elements,
    bytesBefore,
    bytesAfter,
    rmse: e.rmsError,
    cosine: e.cosine,
    maxError: e.maxAbsError,
    ...(note ? { note } : {}),
  };
}

async function ggufHeaderBytes(
  file: ModelFile,
  type: GgufQuantType,
): Promise<number> {
  const it = writeGguf(file, { quantize: type, model: 0 });
  const first = await it.next();
  await it.return(undefined);
  return first.done ? 0 : first.value.byteLength;
}

/**
 * Previews converting the first model of a file to `type`: per tensor the
 * type it would get, its size and its error, and the size of the file.
 *
 * @param file The model file (its first model is used).
 * @param type The type to preview.
 * @param options Progress callback and abort signal.
 * @returns The preview.
 * @throws {UnsupportedDTypeError} When a tensor's stored type cannot be decoded.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * import { previewQuantization } from "./_quant.ts";
 * const w = Float32Array.from({ length: 64 * 32 }, (_, i) => Math.sin(i));
 * const file = { models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex([tensorFromF32("blk.0.ffn_up.weight", w, [32, 64])]) }] };
 * const p = await previewQuantization(file, "Q8_0");
 * assert(p.rows[0].to === "Q8_0" && p.rows[0].rmse > 0 && p.rows[0].rmse < 0.01);
 * assert(p.rows[0].bytesAfter === 64 * 34);
 * ```
 */
export async function previewQuantization(
  file: ModelFile,
  type: PreviewType,
  options: PreviewOptions = {},
): Promise<Preview> {
  const model = file.models[0];
  const one: ModelFile = { ...file, models: [model] };
  const container = containerFor(type, file.format);
  const rows: PreviewRow[] = [];
  const names = model.tensors.names();
  let fileBytes: number;
  if (container === "gguf") {
    const plan = planGguf(one, { quantize: type as GgufQuantType });
    for (const p of plan) {
      aborted(options.signal);
      const info = model.tensors.info(p.name);
      const n = numel(info);
      let r: PreviewRow;
      if (p.action === "copy") {
        r = row(
          p.name,
          p.from,
          p.to,
          n,
          info.byteLength,
          p.byteLength,
          undefined,
          undefined,
          p.reason,
        );
      } else {
        const values = toFloat32(await model.tensors.load(p.name));
        const bytes = (QUANTIZE_TYPES as readonly string[]).includes(p.to)
          ? quantizeGguf(p.to, values)
          : encodeFromF32(p.to, values);
        const back = decodeToF32(p.to, bytes, n);
        r = row(
          p.name,
          p.from,
          p.to,
          n,
          info.byteLength,
          bytes.byteLength,
          values,
          back,
          p.reason,
        );
      }
      rows.push(r);
      options.onRow?.(r, rows.length, plan.length);
    }
    const align = alignmentOf(model.metadata["general.alignment"]);
    const end = plan.reduce((m, p) => Math.max(m, p.offset + p.byteLength), 0);
    fileBytes = await ggufHeaderBytes(one, type as GgufQuantType) +
      Math.ceil(end / align) * align;
  } else {
    for (const name of names) {
      aborted(options.signal);
      const t = await model.tensors.load(name);
      const n = numel(t);
      const single: ModelFile = {
        models: [{ id: "t", metadata: {}, tensors: memoryTensorIndex([t]) }],
      };
      const bytes = await serializeSafetensors(single, { dtype: type });
      const back = await (await readSafetensors(memorySource(bytes))).models[0]
        .tensors.load(name);
      const r = back.dtype === t.dtype && !back.quant
        ? row(
          name,
          t.dtype,
          back.dtype,
          n,
          t.bytes.byteLength,
          back.bytes.byteLength,
          undefined,
          undefined,
          back.dtype === type ? undefined : "integer tensors are kept",
        )
        : row(
          name,
          t.dtype,
          back.dtype,
          n,
          t.bytes.byteLength,
          back.bytes.byteLength,
          toFloat32(t),
          toFloat32(back),
        );
      rows.push(r);
      options.onRow?.(r, rows.length, names.length);
    }
    const plan = await writeSafetensorsShards(one, { dtype: type });
    fileBytes = plan.shards[0].byteLength;
  }
  return {
    type,
    container,
    rows,
    fileBytes,
    tensorBytes: rows.reduce((s, r) => s + r.bytesAfter, 0),
    tensorBytesBefore: rows.reduce((s, r) => s + r.bytesBefore, 0),
  };
}

function alignmentOf(v: unknown): number {
  return typeof v === "number" && v > 0 ? v : 32;
}

/** A converted file. */
export interface Converted {
  /** Suggested file name. */
  fileName: string;
  /** The file's bytes. */
  bytes: Uint8Array;
}

/**
 * Converts the first model of a file to `type` (the file format as
 * {@link containerFor} says).
 *
 * @param file The model file.
 * @param type The type.
 * @param baseName File name stem of the result.
 * @returns The new file.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * import { convertModel } from "./_quant.ts";
 * const file = { models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex([tensorFromF32("w", new Float32Array(8), [2, 4])]) }] };
 * const out = await convertModel(file, "F16", "m");
 * assert(out.fileName === "m-F16.safetensors" && out.bytes.length > 16);
 * ```
 */
export async function convertModel(
  file: ModelFile,
  type: PreviewType,
  baseName: string,
): Promise<Converted> {
  const one: ModelFile = { ...file, models: [file.models[0]] };
  if (containerFor(type, file.format) === "gguf") {
    return {
      fileName: `${baseName}-${type}.gguf`,
      bytes: await writeGgufBytes(one, { quantize: type as GgufQuantType }),
    };
  }
  return {
    fileName: `${baseName}-${type}.safetensors`,
    bytes: await serializeSafetensors(one, { dtype: type }),
  };
}
