// llama-quantize's presets from the command line, shared by `quantize` and
// `convert --quantize`: the flags, the GGUF writer options they make, and
// the warnings that say which tensors fell back to which type and why.

import type { DTypeName } from "../core/dtypes.ts";
import { dtypeInfo } from "../core/dtypes.ts";
import {
  GGUF_PRESET_ALIASES,
  GGUF_PRESETS,
  ggufPreset,
  type GgufTensorPlan,
} from "../formats/gguf/mod.ts";
import { closest, type FlagSpec, type Parsed, UsageError } from "./_args.ts";
import {
  type Imatrix,
  imatrixWeights,
  readImatrix,
} from "../models/imatrix.ts";
import { type GgufMetadataEntry, GgufType } from "../formats/gguf/mod.ts";

/** The preset flags (llama-quantize's names). */
export const PRESET_FLAGS: FlagSpec[] = [
  {
    name: "pure",
    type: "boolean",
    description:
      "GGUF: every quantized tensor gets the preset's base type (no mix, as llama-quantize --pure)",
  },
  {
    name: "output-tensor-type",
    type: "string",
    value: "TYPE",
    description: "GGUF: type of output.weight (e.g. q8_0, f16)",
  },
  {
    name: "token-embedding-type",
    type: "string",
    value: "TYPE",
    description: "GGUF: type of token_embd.weight",
  },
  {
    name: "leave-output-tensor",
    type: "boolean",
    description: "GGUF: keep output.weight as it is",
  },
  {
    name: "imatrix",
    type: "string",
    value: "FILE",
    description:
      "GGUF: importance matrix (llama-imatrix's GGUF or .dat, or modelhost imatrix) the encoders weigh errors by",
  },
];

/**
 * Writer options for `--imatrix FILE`: the weights per tensor and the
 * `quantize.imatrix.*` keys llama-quantize records.
 */
export async function imatrixOptions(
  path: string | undefined,
): Promise<Record<string, unknown>> {
  if (path === undefined) return {};
  return imatrixWriterOptions(
    await readImatrix(await Deno.readFile(path), path),
    path,
  );
}

/** {@link imatrixOptions} for a matrix already read; `path` is recorded as given. */
export function imatrixWriterOptions(
  im: Imatrix,
  path: string,
): Record<string, unknown> {
  const weights = imatrixWeights(im);
  for (const [name, w] of weights) {
    if (w.some((v) => !Number.isFinite(v))) {
      throw new RangeError(`${path}: ${name} holds a value that is not finite`);
    }
  }
  const str = (key: string, value: string): GgufMetadataEntry => ({
    key,
    type: GgufType.STRING,
    value: value.slice(0, 127),
  });
  const md: GgufMetadataEntry[] = [str("quantize.imatrix.file", path)];
  if (im.datasets.length) {
    md.push(str("quantize.imatrix.dataset", im.datasets[0]));
  }
  md.push({
    key: "quantize.imatrix.entries_count",
    type: GgufType.UINT32,
    value: weights.size,
  });
  if (im.chunkCount > 0) {
    md.push({
      key: "quantize.imatrix.chunks_count",
      type: GgufType.UINT32,
      value: im.chunkCount,
    });
  }
  return { imatrix: weights, appendMetadata: md };
}

function tensorType(flag: string, v: string): DTypeName {
  let info;
  try {
    info = dtypeInfo(v.toUpperCase());
  } catch {
    throw new UsageError(`--${flag}: unknown type "${v}"`);
  }
  if (info.gguf === undefined) {
    throw new UsageError(`--${flag}: GGUF has no type ${info.name}`);
  }
  return info.name;
}

/** Every name `quantize` takes for a GGUF output (presets and their aliases). */
export function presetNames(): string[] {
  return [...Object.keys(GGUF_PRESETS), ...Object.keys(GGUF_PRESET_ALIASES)];
}

/**
 * GGUF writer options for a preset name and the preset flags; throws a
 * usage error naming the closest preset when the name is not one.
 */
export function presetOptions(
  type: string,
  flags: Parsed["flags"],
): Record<string, unknown> {
  const preset = ggufPreset(type);
  if (!preset) {
    const guess = closest(type.toUpperCase(), presetNames());
    throw new UsageError(
      `"${type}" is not a GGUF quantization type; types: ${
        presetNames().join(", ")
      }${guess ? ` (did you mean ${guess}?)` : ""}`,
    );
  }
  const o: Record<string, unknown> = {};
  if (flags.pure) o.pure = true;
  if (flags["leave-output-tensor"]) o.leaveOutputTensor = true;
  const ot = flags["output-tensor-type"] as string | undefined;
  if (ot !== undefined) {
    o.outputTensorType = tensorType("output-tensor-type", ot);
  }
  const et = flags["token-embedding-type"] as string | undefined;
  if (et !== undefined) {
    o.tokenEmbeddingType = tensorType("token-embedding-type", et);
  }
  return { preset: preset.name, presetOptions: o };
}

/** Whether any preset flag was given (they need a GGUF output). */
export function presetFlagsGiven(flags: Parsed["flags"]): boolean {
  return Boolean(
    flags.pure || flags["leave-output-tensor"] || flags.imatrix !== undefined ||
      flags["output-tensor-type"] !== undefined ||
      flags["token-embedding-type"] !== undefined,
  );
}

/**
 * Warning lines for a written plan: tensors whose rows did not fit the type
 * the rules chose (grouped by reason), and a preset whose base type no
 * tensor got.
 */
export function presetWarnings(
  plan: GgufTensorPlan[],
  preset: string,
): string[] {
  const lines: string[] = [];
  const groups = new Map<string, string[]>();
  for (const p of plan) {
    if (p.reason?.startsWith("rows of ")) {
      const g = groups.get(p.reason) ?? [];
      g.push(p.name);
      groups.set(p.reason, g);
    }
  }
  let n = 0;
  for (const g of groups.values()) n += g.length;
  if (n > 0) {
    lines.push(
      `warning: ${n} of ${plan.length} tensors fell back to another type (as llama-quantize does):`,
    );
    for (const [reason, names] of groups) {
      const shown = names.length > 4
        ? `${names.slice(0, 3).join(", ")} … ${names.at(-1)} (${names.length})`
        : names.join(", ");
      lines.push(`  ${shown}: ${reason}`);
    }
  }
  const p = ggufPreset(preset);
  if (p && dtypeInfo(p.base).kind === "quant") {
    const got = plan.filter((x) => x.to === p.base).length;
    if (got === 0) {
      lines.push(
        `warning: no tensor was written as ${p.base}, the base type of ${p.name}`,
      );
    }
  }
  return lines;
}
