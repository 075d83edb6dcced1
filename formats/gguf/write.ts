/**
 * The GGUF v3 writer: metadata of every type, tensor infos, alignment,
 * streamed tensor data, and quantize-on-write with llama.cpp-like rules.
 *
 * @module
 */

import { dtypeInfo, type DTypeName, encodeFromF32 } from "../../core/dtypes.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import type { Model, ModelFile, TensorInfo } from "../../core/model.ts";
import { type Tensor, toFloat32 } from "../../core/tensor.ts";
import { QUANTIZE_TYPES, quantizeGguf } from "../../core/quants/mod.ts";
import {
  IMATRIX_QUANTIZE_TYPES,
  quantizeWithImatrix,
} from "../../core/quants/k_encode_imatrix.ts";
import {
  DEFAULT_ALIGNMENT,
  type GgufMetadataEntry,
  GgufType,
  type GgufValue,
  MAX_ALIGNMENT,
  MAX_DIMS,
} from "./types.ts";
import {
  ggufPreset,
  type GgufPresetChoice,
  type GgufPresetOptions,
  ggufPresetTypes,
  llamaTensorOrder,
} from "./presets.ts";
import { presetModel } from "./_preset_model.ts";
import { encoder, serializeHeader } from "./_serialize.ts";
import { modelMetadata } from "./_metadata.ts";

/**
 * ggml keeps tensor names in 64-byte buffers (`GGML_MAX_NAME`), terminator included.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { MAX_GGML_NAME_BYTES } from "@modelhost/modelhost/formats/gguf";
 * assert(new TextEncoder().encode("blk.0.attn_q.weight").length <= MAX_GGML_NAME_BYTES);
 * ```
 */
export const MAX_GGML_NAME_BYTES = 63;

/** Target types of {@link GgufWriteOptions.quantize}. */
export type GgufQuantType =
  | "Q8_0"
  | "Q4_0"
  | "Q4_1"
  | "Q5_0"
  | "Q5_1"
  | "Q2_K"
  | "Q3_K"
  | "Q4_K"
  | "Q5_K"
  | "Q6_K"
  | "IQ4_NL"
  | "IQ4_XS"
  | "MXFP4"
  | "F16"
  | "BF16"
  | "F32";

/** What the writer does with one tensor. */
export interface GgufTensorPlan {
  /** Tensor name. */
  name: string;
  /** Shape in PyTorch order (as in the ModelFile). */
  shape: number[];
  /** Dimensions as written, ggml order. */
  dims: number[];
  /** The stored type in the source. */
  from: DTypeName;
  /** The type written. */
  to: DTypeName;
  /** `copy` (bytes as they are), `quantize`, `convert` (a lossless or float change), `requantize` (from another block type). */
  action: "copy" | "quantize" | "convert" | "requantize";
  /** Why this type was chosen, when it is not a plain copy or the requested type. */
  reason?: string;
  /** Offset in the data section. */
  offset: number;
  /** Bytes written (before padding). */
  byteLength: number;
}

/** Options of {@link writeGguf}. */
export interface GgufWriteOptions {
  /**
   * Alignment of the data section and of every tensor. When absent, the
   * model's `general.alignment` is honored, else 32. A value other than 32
   * is also written as `general.alignment`.
   * @default {32}
   */
  alignment?: number;
  /**
   * Quantize eligible tensors to this type (llama.cpp `--pure` rules: every
   * 2-D-or-more weight gets it; 1-D tensors, norms, and the tensors
   * llama.cpp never quantizes stay as they are; rows that do not divide the
   * block size fall back as llama.cpp does). Sets `general.file_type` and
   * `general.quantization_version`.
   * @default {undefined} keep every tensor's type
   */
  quantize?: GgufQuantType;
  /**
   * Per-tensor choice that overrides the rules: return a type, or
   * `undefined` to apply them.
   * @default {undefined}
   */
  typeFor?: (info: TensorInfo) => DTypeName | undefined;
  /**
   * Typed metadata to write instead of the model's (keeps every value type
   * exactly; see `readGgufHeader`).
   * @default {undefined} the model's metadata, typed by its `gguf.types`
   */
  metadata?: GgufMetadataEntry[];
  /**
   * Which model of a multi-model file to write (index or id).
   * @default {0} (required when the file holds several models)
   */
  model?: number | string;
  /** Called once with the per-tensor plan, before the first byte. @default {undefined} */
  onPlan?: (plan: GgufTensorPlan[]) => void;
  /**
   * Write as llama-quantize does with this preset (`Q4_K_M`, `Q2_K`, `IQ4_XS`,
   * ...; see `GGUF_PRESETS`): its per-tensor types, its tensor order and
   * its metadata order, so the file is byte-identical to llama-quantize's.
   * Takes the place of `quantize`.
   * @default {undefined}
   */
  preset?: string;
  /**
   * `--pure`, `--output-tensor-type`, `--token-embedding-type`,
   * `--leave-output-tensor` of a preset.
   * @default {{}}
   */
  presetOptions?: Omit<GgufPresetOptions, "hasImatrix">;
  /**
   * Importance matrix per tensor name (sums of squared activations per
   * input column, divided by the count), used by the encoders that take
   * one. Only with `preset`.
   * @default {undefined}
   */
  imatrix?: ReadonlyMap<string, Float32Array>;
  /**
   * Metadata llama-quantize appends after the file type (such as
   * `quantize.imatrix.file`), in order. Only with `preset`.
   * @default {undefined}
   */
  appendMetadata?: GgufMetadataEntry[];
  /**
   * Encodes the quantized tensors instead of this thread (a worker pool such
   * as `createQuantPool` of `@modelhost/modelhost/io`); it must give the same
   * bytes as the encoders here.
   * @default {undefined} this thread
   */
  encode?: (
    type: DTypeName,
    values: Float32Array,
    perRow: number,
    imatrix?: Float32Array,
    rowsPerMatrix?: number,
  ) => Promise<Uint8Array>;
  /**
   * Encodes a tensor stored as F32, F16 or BF16 (and quantized without an
   * importance matrix) from its stored bytes, so the workers widen it and
   * this thread holds no widened copy (`createQuantPool(...).encodeStored`);
   * it must give the bytes `encode` gives for the widened values.
   * @default {undefined} `encode`, or this thread
   */
  encodeStored?: (
    type: DTypeName,
    from: DTypeName,
    bytes: Uint8Array,
    perRow: number,
  ) => Promise<Uint8Array>;
}

/**
 * Default write options.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GGUF_WRITE_DEFAULTS } from "@modelhost/modelhost/formats/gguf";
 * assert(GGUF_WRITE_DEFAULTS.alignment === 32);
 * ```
 */
export const GGUF_WRITE_DEFAULTS = {
  alignment: DEFAULT_ALIGNMENT,
} satisfies GgufWriteOptions;

/** llama.cpp's `general.file_type` (`llama_ftype`) for each target type. */
const FILE_TYPE: Record<GgufQuantType, number> = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q8_0: 7,
  Q5_0: 8,
  Q5_1: 9,
  Q2_K: 10,
  Q3_K: 12,
  Q4_K: 15,
  Q5_K: 17,
  Q6_K: 18,
  IQ4_NL: 25,
  IQ4_XS: 30,
  MXFP4: 38,
  BF16: 32,
};

/** Where a type goes when a row length does not divide its block size (llama.cpp; no IQ4_NL here, so Q4_0). */
const FALLBACK: Partial<Record<DTypeName, DTypeName>> = {
  Q2_K: "Q4_0",
  Q3_K: "Q4_0",
  Q4_K: "Q5_0",
  Q5_K: "Q5_1",
  Q6_K: "Q8_0",
  IQ4_XS: "IQ4_NL",
};

/** Types GGUF has no id for, and the lossless GGUF type they are written as. */
const WIDEN: Partial<Record<DTypeName, DTypeName>> = {
  BOOL: "I8",
  U8: "I16",
  U16: "I32",
  U32: "I64",
  F8_E4M3: "F16",
  F8_E5M2: "F16",
  F4: "F16",
};

const FLOAT_SOURCES = new Set<DTypeName>(["F32", "F16", "BF16", "F64"]);

/**
 * Whether llama.cpp's quantizer would quantize a tensor: names ending in
 * `weight` with two or more dimensions, except norms, expert gates,
 * position and token-type embeddings and Mamba's `ssm_conv1d`.
 */
function quantizable(name: string, shape: number[]): string | undefined {
  if (shape.length < 2) return "1-D tensors stay as they are";
  if (!name.endsWith("weight")) return "only weights are quantized";
  const last = name.split(".").slice(-2).join(".");
  if (/norm/i.test(last)) return "norms stay as they are";
  if (name.includes("ffn_gate_inp.weight")) {
    return "expert gating tensors stay as they are";
  }
  if (
    name === "position_embd.weight" || name === "token_types.weight" ||
    name.includes("ssm_conv1d.weight")
  ) return "llama.cpp never quantizes this tensor";
  return undefined;
}

function pickModel(file: ModelFile, which: number | string | undefined): Model {
  if (file.models.length === 0) {
    throw new TypeError("Cannot write GGUF: the model file holds no model");
  }
  if (which === undefined) {
    if (file.models.length > 1) {
      throw new TypeError(
        `Cannot write GGUF: the file holds ${file.models.length} models (${
          file.models.map((m) => m.id).join(", ")
        }); GGUF holds one, choose it with the "model" option`,
      );
    }
    return file.models[0];
  }
  const m = typeof which === "number"
    ? file.models[which]
    : file.models.find((x) => x.id === which);
  if (!m) {
    throw new TypeError(
      `Cannot write GGUF: no model ${JSON.stringify(which)}; models: ${
        file.models.map((x) => x.id).join(", ")
      }`,
    );
  }
  return m;
}

function setEntry(
  list: GgufMetadataEntry[],
  key: string,
  type: GgufType,
  value: GgufValue,
): void {
  const i = list.findIndex((e) => e.key === key);
  if (i >= 0) list[i] = { key, type, value };
  else list.push({ key, type, value });
}

function checkAlignment(a: number, where: string): number {
  if (
    !Number.isInteger(a) || a <= 0 || (a & (a - 1)) !== 0 || a > MAX_ALIGNMENT
  ) {
    throw new RangeError(
      `Cannot write GGUF: ${where} is ${a}; it must be a power of two no larger than ${MAX_ALIGNMENT}`,
    );
  }
  return a;
}

/** Everything decided before the first byte: metadata, per-tensor plan, offsets. */
interface Layout {
  header: Uint8Array;
  plan: GgufTensorPlan[];
  alignment: number;
}

/**
 * Decides the metadata and the type, offset and size of every tensor, and
 * serializes the header.
 */
function layout(model: Model, options: GgufWriteOptions): Layout {
  const metadata = options.metadata
    ? options.metadata.map((e) => ({
      key: e.key,
      type: e.type,
      value: e.value,
    }))
    : modelMetadata(model);
  const fromMeta = metadata.find((e) => e.key === "general.alignment");
  let alignment: number;
  if (options.alignment !== undefined) {
    alignment = checkAlignment(options.alignment, "the alignment option");
    if (alignment !== DEFAULT_ALIGNMENT || fromMeta) {
      setEntry(metadata, "general.alignment", GgufType.UINT32, alignment);
    }
  } else if (fromMeta) {
    alignment = checkAlignment(
      typeof fromMeta.value === "number" ? fromMeta.value : NaN,
      "general.alignment",
    );
    fromMeta.type = GgufType.UINT32;
  } else alignment = DEFAULT_ALIGNMENT;

  if (options.preset !== undefined) {
    const ps = ggufPreset(options.preset);
    if (
      ps && ps.name === ps.base && options.imatrix === undefined &&
      !metadata.some((e) => e.key === "general.architecture")
    ) {
      // Not a language model (a stored network): llama-quantize's rules have
      // no blocks to read, so a preset that is one plain type applies as
      // quantize-on-write with that type does.
      return layout(model, {
        ...options,
        preset: undefined,
        presetOptions: undefined,
        quantize: ps.base as GgufQuantType,
      });
    }
    return presetLayout(model, options, metadata, alignment);
  }
  const target = options.quantize;
  if (target !== undefined) {
    if (!(target in FILE_TYPE)) {
      throw new UnsupportedDTypeError(
        target,
        `GGUF quantize-on-write supports ${Object.keys(FILE_TYPE).join(", ")}`,
      );
    }
    setEntry(metadata, "general.quantization_version", GgufType.UINT32, 2);
    setEntry(metadata, "general.file_type", GgufType.UINT32, FILE_TYPE[target]);
  }

  const plan: GgufTensorPlan[] = [];
  let offset = 0;
  for (const name of model.tensors.names()) {
    const info = model.tensors.info(name);
    const p = planTensor(info, target, options.typeFor);
    p.offset = offset;
    plan.push(p);
    offset += Math.ceil(p.byteLength / alignment) * alignment;
  }

  return {
    header: serializeHeader(metadata, plan, alignment),
    plan,
    alignment,
  };
}

/** The layout llama-quantize gives a preset: its order, types and metadata order. */
function presetLayout(
  model: Model,
  options: GgufWriteOptions,
  metadata: GgufMetadataEntry[],
  alignment: number,
): Layout {
  if (options.quantize !== undefined) {
    throw new TypeError(
      `Cannot write GGUF: give "preset" or "quantize", not both (preset ${options.preset}, quantize ${options.quantize})`,
    );
  }
  const names = model.tensors.names();
  const infos = names.map((n) => model.tensors.info(n));
  const choices = ggufPresetTypes(
    infos,
    presetModel(metadata),
    options.preset!,
    { ...options.presetOptions, hasImatrix: options.imatrix !== undefined },
  );
  const preset = ggufPreset(options.preset!)!;
  // llama.cpp sets these two after copying the input's keys: each removed
  // and appended at the end, then the split keys dropped.
  for (
    const key of [
      "general.quantization_version",
      "general.file_type",
      "split.no",
      "split.count",
      "split.tensors.count",
    ]
  ) {
    const i = metadata.findIndex((e) => e.key === key);
    if (i >= 0) metadata.splice(i, 1);
  }
  metadata.push(
    { key: "general.quantization_version", type: GgufType.UINT32, value: 2 },
    {
      key: "general.file_type",
      type: GgufType.UINT32,
      value: preset.fileType,
    },
  );
  for (const e of options.appendMetadata ?? []) {
    const i = metadata.findIndex((x) => x.key === e.key);
    if (i >= 0) metadata.splice(i, 1);
    metadata.push(e);
  }
  const plan: GgufTensorPlan[] = [];
  let offset = 0;
  for (const name of llamaTensorOrder(names)) {
    const info = model.tensors.info(name);
    const choice = choices.get(name)!;
    if (choice.needsImatrix && !options.imatrix?.has(name)) {
      throw new TypeError(
        `Cannot write tensor "${name}" as ${choice.to} for preset ${preset.name}: llama.cpp requires an importance matrix for it (give one with --imatrix)`,
      );
    }
    const p = planTensor(info, undefined, undefined, choice, preset.name);
    if (
      options.imatrix?.has(name) && p.action !== "copy" &&
      dtypeInfo(p.to).kind === "quant" &&
      !IMATRIX_QUANTIZE_TYPES.includes(p.to) && name !== "token_embd.weight"
    ) {
      throw new UnsupportedDTypeError(
        p.to,
        `tensor "${name}": preset ${preset.name} chooses ${p.to}, and modelhost has no importance-matrix encoder for ${p.to} (it has ${
          IMATRIX_QUANTIZE_TYPES.join(", ")
        }); quantize without --imatrix`,
      );
    }
    p.offset = offset;
    plan.push(p);
    offset += Math.ceil(p.byteLength / alignment) * alignment;
  }
  return {
    header: serializeHeader(metadata, plan, alignment),
    plan,
    alignment,
  };
}

function planTensor(
  info: TensorInfo,
  target: GgufQuantType | undefined,
  typeFor: GgufWriteOptions["typeFor"],
  preset?: GgufPresetChoice,
  presetName?: string,
): GgufTensorPlan {
  const { name, shape } = info;
  const nameBytes = encoder.encode(name).length;
  if (nameBytes > MAX_GGML_NAME_BYTES) {
    throw new RangeError(
      `Cannot write tensor "${name}" to GGUF: its name is ${nameBytes} bytes, ggml's limit is ${MAX_GGML_NAME_BYTES}`,
    );
  }
  if (shape.length > MAX_DIMS) {
    throw new RangeError(
      `Cannot write tensor "${name}" to GGUF: it has ${shape.length} dimensions [${
        shape.join(", ")
      }], ggml holds at most ${MAX_DIMS}`,
    );
  }
  const dims = shape.length === 0 ? [1] : shape.slice().reverse();
  const row = dims[0];
  const from = info.dtype;
  const src = dtypeInfo(from);
  let to: DTypeName = from;
  let reason: string | undefined;

  const chosen = typeFor?.(info);
  if (preset) {
    to = preset.to;
    reason = preset.reason;
  } else if (chosen !== undefined) {
    to = chosen;
    reason = "chosen by typeFor";
  } else if (target !== undefined) {
    const skip = quantizable(name, shape) ??
      (FLOAT_SOURCES.has(from) || src.kind === "quant"
        ? undefined
        : `${from} is not a float type`);
    if (skip) reason = skip;
    else to = target;
  }
  if (src.gguf === undefined && to === from) {
    const wide = WIDEN[from];
    if (!wide) {
      throw new UnsupportedDTypeError(
        from,
        `tensor "${name}": GGUF has no ${from} and no wider type holds it exactly`,
      );
    }
    to = wide;
    reason = `GGUF has no ${from}; ${wide} holds it exactly`;
  }
  let toInfo = dtypeInfo(to);
  if (toInfo.gguf === undefined) {
    throw new UnsupportedDTypeError(to, `tensor "${name}": GGUF has no ${to}`);
  }
  if (row % toInfo.blockSize !== 0 && preset) {
    // an explicit --output-tensor-type / --token-embedding-type gets no
    // fallback in llama.cpp, which fails on it too
    throw new RangeError(
      `Cannot write tensor "${name}" as ${to}: its rows of ${row} do not divide the ${to} block size ${toInfo.blockSize}`,
    );
  }
  if (row % toInfo.blockSize !== 0 && !preset) {
    const fb = FALLBACK[to];
    const next: DTypeName = fb && row % dtypeInfo(fb).blockSize === 0
      ? fb
      : "F16";
    reason =
      `rows of ${row} do not divide the ${to} block size ${toInfo.blockSize}; ${next} instead`;
    to = next;
    toInfo = dtypeInfo(to);
  }
  if (to !== from && toInfo.kind === "quant" && !QUANTIZE_TYPES.includes(to)) {
    throw new UnsupportedDTypeError(
      to,
      presetName
        ? `tensor "${name}": preset ${presetName} chooses ${to} for it, and modelhost has no ${to} encoder (it encodes ${
          QUANTIZE_TYPES.join(", ")
        })`
        : `tensor "${name}": modelhost cannot quantize to ${to}`,
    );
  }
  const count = shape.reduce((a, b) => a * b, 1);
  const action: GgufTensorPlan["action"] = to === from
    ? "copy"
    : toInfo.kind === "quant"
    ? src.kind === "quant" ? "requantize" : "quantize"
    : "convert";
  return {
    name,
    shape: shape.slice(),
    dims,
    from,
    to,
    action,
    ...(reason ? { reason } : {}),
    offset: 0,
    byteLength: (count / toInfo.blockSize) * toInfo.blockBytes,
  };
}

/** The bytes a tensor is written with, per its plan (weighted by its importance matrix row, if any). */
async function tensorBytes(
  t: Tensor,
  p: GgufTensorPlan,
  imatrix?: Float32Array,
  encode?: GgufWriteOptions["encode"],
  stored?: GgufWriteOptions["encodeStored"],
): Promise<Uint8Array> {
  let bytes: Uint8Array;
  if (t.quant && p.to === t.dtype) {
    throw new TypeError(
      `Cannot write tensor "${p.name}" to GGUF: its ${t.dtype} codes carry a scale/zero point that GGUF cannot store; write it as F32 (typeFor) or quantize it`,
    );
  }
  if (p.action === "copy") {
    bytes = t.bytes;
  } else if (
    stored && !imatrix && !t.quant && QUANTIZE_TYPES.includes(p.to) &&
    (t.dtype === "F32" || t.dtype === "F16" || t.dtype === "BF16")
  ) {
    // the workers widen the stored rows themselves
    const need = p.shape.reduce((a, b) => a * b, 1) *
      dtypeInfo(t.dtype).blockBytes;
    if (t.bytes.byteLength < need) {
      throw new RangeError(
        `Cannot read tensor "${p.name}": ${t.dtype} [${
          p.shape.join(", ")
        }] needs ${need} bytes, has ${t.bytes.byteLength}`,
      );
    }
    bytes = await stored(p.to, t.dtype, t.bytes.subarray(0, need), p.dims[0]);
  } else {
    const values = toFloat32(t);
    if (imatrix && dtypeInfo(p.to).kind === "quant") {
      const row = p.dims[0], mats = p.dims[2] ?? 1;
      if (imatrix.length !== row * mats) {
        throw new RangeError(
          `Cannot quantize tensor "${p.name}" with its importance matrix: it has ${imatrix.length} values, the tensor ${
            row * mats
          } (${row} columns × ${mats} matrices)`,
        );
      }
      bytes = encode
        ? await encode(p.to, values, row, imatrix, p.dims[1] ?? 1)
        : quantizeWithImatrix(p.to, values, row, imatrix, p.dims[1] ?? 1);
    } else if (encode && QUANTIZE_TYPES.includes(p.to)) {
      bytes = await encode(p.to, values, p.dims[0]);
    } else {
      bytes = QUANTIZE_TYPES.includes(p.to)
        ? quantizeGguf(p.to, values)
        : encodeFromF32(p.to, values);
    }
  }
  if (bytes.byteLength !== p.byteLength) {
    throw new RangeError(
      `Cannot write tensor "${p.name}": ${p.to} [${
        p.shape.join(", ")
      }] needs ${p.byteLength} bytes, the tensor has ${bytes.byteLength}`,
    );
  }
  return bytes;
}

/**
 * Writes a model as GGUF v3, streamed: the header first, then one tensor at
 * a time (each read from the model's index only when its turn comes).
 * The same input gives the same bytes.
 *
 * @param file The model file (one model, or choose with `options.model`).
 * @param options Alignment, quantization, metadata override, plan callback.
 * @returns The file's bytes in chunks.
 * @throws {TypeError} Metadata that has no GGUF type, or no model to write.
 * @throws {RangeError} Shapes, names or alignments GGUF cannot hold.
 * @throws {UnsupportedDTypeError} A tensor type GGUF cannot hold.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { writeGguf } from "@modelhost/modelhost/formats/gguf";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * const file = { models: [{ id: "m", metadata: { "general.name": "m" },
 *   tensors: memoryTensorIndex([tensorFromF32("w", new Float32Array(64), [2, 32])]) }] };
 * let size = 0;
 * for await (const chunk of writeGguf(file, { quantize: "Q8_0" })) size += chunk.length;
 * assert(size % 32 === 0);
 * ```
 */
export async function* writeGguf(
  file: ModelFile,
  options: GgufWriteOptions = {},
): AsyncGenerator<Uint8Array> {
  const model = pickModel(file, options.model);
  const { header, plan, alignment } = layout(model, options);
  options.onPlan?.(plan.map((p) => ({ ...p })));
  yield header;
  const bytesOf = async (p: GgufTensorPlan) =>
    tensorBytes(
      await model.tensors.load(p.name),
      p,
      // llama-quantize ignores an importance matrix of the wrong size for
      // the token embedding only
      p.name === "token_embd.weight" &&
        options.imatrix?.get(p.name)?.length !== p.dims[0] * (p.dims[2] ?? 1)
        ? undefined
        : options.imatrix?.get(p.name),
      options.encode,
      options.encodeStored,
    );
  // with an `encode` hook (workers), the next tensor is read and handed
  // over while this one is encoded, so the workers never wait on a tensor
  // boundary; at most two tensors are in memory
  const ahead = options.encode || options.encodeStored ? 1 : 0;
  const pending: Promise<Uint8Array>[] = [];
  let started = 0;
  for (const p of plan) {
    while (started < plan.length && pending.length <= ahead) {
      const job = bytesOf(plan[started++]);
      job.catch(() => {}); // awaited in turn below
      pending.push(job);
    }
    const bytes = await pending.shift()!;
    yield bytes;
    const pad = (alignment - (p.byteLength % alignment)) % alignment;
    if (pad > 0) yield new Uint8Array(pad);
  }
}

/**
 * Writes a model as GGUF v3 into one buffer (see {@link writeGguf}).
 *
 * @param file The model file.
 * @param options Write options.
 * @returns The whole file.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { writeGgufBytes } from "@modelhost/modelhost/formats/gguf";
 * import { memoryTensorIndex } from "@modelhost/modelhost/core";
 * const bytes = await writeGgufBytes({ models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex([]) }] });
 * assert(bytes.length === 24);
 * ```
 */
export async function writeGgufBytes(
  file: ModelFile,
  options: GgufWriteOptions = {},
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const c of writeGguf(file, options)) {
    chunks.push(c);
    size += c.byteLength;
  }
  const out = new Uint8Array(size);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.byteLength;
  }
  return out;
}

/**
 * The per-tensor plan {@link writeGguf} would follow, without writing.
 *
 * @param file The model file.
 * @param options Write options.
 * @returns One entry per tensor, in write order.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { planGguf } from "@modelhost/modelhost/formats/gguf";
 * import { memoryTensorIndex, tensorFromF32 } from "@modelhost/modelhost/core";
 * const tensors = memoryTensorIndex([
 *   tensorFromF32("blk.0.attn_norm.weight", new Float32Array(48), [48]),
 *   tensorFromF32("blk.0.attn_q.weight", new Float32Array(48 * 48), [48, 48]),
 * ]);
 * const plan = planGguf({ models: [{ id: "m", metadata: {}, tensors }] }, { quantize: "Q4_K" });
 * assert(plan[0].to === "F32" && plan[1].to === "F16");
 * ```
 */
export function planGguf(
  file: ModelFile,
  options: GgufWriteOptions = {},
): GgufTensorPlan[] {
  return layout(pickModel(file, options.model), options).plan;
}
