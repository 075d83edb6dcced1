// `convert`: reads a model in one format and writes it in another, with
// the target format's own options as flags; a Hugging Face checkpoint
// folder converts to a llama.cpp-ready GGUF file.

import { basename, dirname, join } from "@std/path";
import type { Registry } from "../registry.ts";
import type { FormatPlugin } from "../core/plugin.ts";
import { convertHfToGguf } from "../io/transformer.ts";
import { writeFileAtomic } from "../io/file.ts";
import { type GgufQuantType, ggufTypeLoss } from "../formats/gguf/mod.ts";
import { openModel } from "../io/open.ts";
import {
  flagHelp,
  flagsFromOptions,
  type FlagSpec,
  parseFlags,
  UsageError,
} from "./_args.ts";
import {
  type Command,
  type CommandContext,
  FORCE_FLAG,
  needFiles,
  refuseOverwrite,
} from "./_command.ts";
import { modelfileFor } from "./_modelfile.ts";
import { humanBytes } from "./_progress.ts";
import { convertFile, writeOptionsOf, writerOptions } from "./_write.ts";
import type { GgufTensorPlan } from "../formats/gguf/mod.ts";
import {
  imatrixOptions,
  PRESET_FLAGS,
  presetFlagsGiven,
  presetOptions,
  presetWarnings,
} from "./_quant.ts";
import { withStdio } from "./_habits.ts";

/** The target format named by `--to`, else by the extension of `-o`. */
function targetOf(
  args: string[],
  reg: Registry,
): ReturnType<Registry["format"]> | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--to") return args[i + 1] ? reg.format(args[i + 1]) : undefined;
    if (a.startsWith("--to=")) return reg.format(a.slice(5));
  }
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const out = a === "-o" || a === "--output"
      ? args[i + 1]
      : a.startsWith("--output=")
      ? a.slice(9)
      : undefined;
    if (out) {
      try {
        return reg.formatForPath(out);
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

const CONVERT_FLAGS: FlagSpec[] = [
  {
    name: "to",
    type: "string",
    value: "FORMAT",
    description: "Output format (default: from the output extension)",
  },
  {
    name: "output",
    short: "o",
    type: "string",
    value: "OUT",
    description: "Output path",
  },
  FORCE_FLAG,
  {
    name: "id",
    type: "string",
    description: "Convert only the model with this id (bundles hold several)",
  },
  {
    name: "provenance",
    type: "list",
    value: "KEY=VALUE",
    description: "Provenance field stored in the output's metadata; repeatable",
  },
  {
    name: "dtype",
    type: "string",
    value: "TYPE",
    description:
      "Store weights as TYPE (f32, f16, bf16, i8, f4, q8_0, q4_0, q4_k, q6_k …; the target's choices apply)",
  },
  {
    name: "modelfile",
    type: "boolean",
    description:
      "With --to gguf: also write an Ollama Modelfile beside the output",
  },
  {
    name: "quant",
    type: "string",
    value: "TYPE",
    description: "Same as --dtype",
  },
  {
    name: "quantize",
    type: "string",
    value: "TYPE",
    description:
      "GGUF: quantize with llama-quantize's preset TYPE (q4_k_m, q5_k_m, q8_0 …), its per-tensor rules and bytes",
  },
  ...PRESET_FLAGS,
];

/** Whether a path is a Hugging Face checkpoint folder (has config.json). */
async function isHfFolder(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory &&
      (await Deno.stat(join(path, "config.json"))).isFile;
  } catch {
    return false;
  }
}

/** The GGUF metadata types the written file lost against its source. */
async function typeLoss(
  ctx: CommandContext,
  input: string,
  paths: readonly string[],
  target: FormatPlugin,
): Promise<string[]> {
  if (!target.read) return [];
  const main = paths.find((p) => p.endsWith(".index.json")) ?? paths[0];
  const src = await openModel(ctx.reg, input);
  try {
    const res = await openModel(ctx.reg, main, { format: target.name });
    try {
      const loss: string[] = [];
      for (const [i, m] of src.file.models.entries()) {
        const other = res.file.models[i];
        if (other) loss.push(...ggufTypeLoss(m.metadata, other.metadata));
      }
      return loss;
    } finally {
      res.close();
    }
  } finally {
    src.close();
  }
}

/** `modelhost convert IN --to FORMAT -o OUT`. */
export const convertCommand: Command = {
  name: "convert",
  summary:
    "Convert a model between formats (options come from the target format)",
  usage: "convert IN --to FORMAT -o OUT [format options]",
  flags(reg, args) {
    const target = targetOf(args, reg);
    const own = writeOptionsOf(target).filter((o) =>
      o.name !== "dtype" && o.name !== "quantize"
    );
    return [...CONVERT_FLAGS, ...flagsFromOptions(own)];
  },
  more(reg) {
    const lines = [
      "",
      "Format options (pass --to FORMAT --help to see one):",
    ];
    for (const f of reg.formats()) {
      if (!f.write && !f.writeFiles) continue;
      const opts = flagsFromOptions(writeOptionsOf(f));
      lines.push(`  ${f.name}:${opts.length ? "" : " (no options)"}`);
      lines.push(...flagHelp(opts).map((l) => `  ${l}`));
    }
    return lines;
  },
  async run(args, ctx) {
    const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
    needFiles(positional, "input file");
    const out = flags.output as string | undefined;
    if (!out) throw new UsageError("missing -o OUT");
    const target = flags.to
      ? ctx.reg.format(flags.to as string)
      : ctx.reg.formatForPath(out);
    if (!target.write && !target.writeFiles) {
      const writable = ctx.reg.formats().filter((f) => f.write || f.writeFiles)
        .map((f) => f.name);
      throw new UsageError(
        `format "${target.name}" cannot write; writable formats: ${
          writable.join(", ")
        }`,
      );
    }
    let plan: GgufTensorPlan[] | undefined;
    let options: Record<string, unknown>;
    const preset = flags.quantize as string | undefined;
    if (preset !== undefined || presetFlagsGiven(flags)) {
      if (target.name !== "gguf") {
        throw new UsageError(
          "--quantize, --pure, --output-tensor-type, --token-embedding-type, --leave-output-tensor and --imatrix go with --to gguf (other formats: --dtype)",
        );
      }
      if (preset === undefined) {
        throw new UsageError("the preset flags go with --quantize TYPE");
      }
      if (flags.dtype !== undefined || flags.quant !== undefined) {
        throw new UsageError("give --quantize or --dtype, not both");
      }
      options = {
        ...writerOptions(target, { ...flags, dtype: undefined }),
        ...presetOptions(preset, flags),
        ...await imatrixOptions(flags.imatrix as string | undefined),
        onPlan: (p: GgufTensorPlan[]) => (plan = p),
      };
    } else options = writerOptions(target, flags);
    return await withStdio(
      positional[0],
      out,
      target.extensions?.[0] ?? "",
      async (input, out) => {
        positional[0] = input!;
        if (
          flags.output !== "-" &&
          await refuseOverwrite(ctx, out!, Boolean(flags.force))
        ) return 1;
        if (flags.modelfile && out === "-") {
          throw new UsageError("--modelfile needs an output file, not -");
        }
        if (flags.modelfile && target.name !== "gguf") {
          throw new UsageError("--modelfile goes with --to gguf");
        }
        const modelfile = join(dirname(out), "Modelfile");
        if (
          flags.modelfile &&
          await refuseOverwrite(ctx, modelfile, Boolean(flags.force))
        ) return 1;
        if (target.name === "gguf" && await isHfFolder(positional[0])) {
          // A Hugging Face checkpoint: llama.cpp metadata, GGUF tensor names and
          // rotary layout, and the vocabulary from tokenizer.json.
          const t0 = performance.now();
          const bytes = await convertHfToGguf(positional[0], out!, {
            quantize: options.quantize as GgufQuantType | undefined,
            preset: options.preset as string | undefined,
            presetOptions: options.presetOptions as Record<string, never>,
            onPlan: (p) => (plan = p),
          });
          if (!ctx.quiet) {
            ctx.io.err(
              `wrote ${out} (gguf, llama.cpp-ready, ${
                humanBytes(bytes)
              }) from a Hugging Face folder in ${
                ((performance.now() - t0) / 1000).toFixed(2)
              } s`,
            );
          }
        } else {
          const r = await convertFile(
            ctx,
            positional[0],
            out!,
            target,
            options,
            flags.id as string | undefined,
            "converting",
          );
          const loss = await typeLoss(
            ctx,
            positional[0],
            r.written.paths,
            target,
          );
          if (loss.length > 0) {
            ctx.io.err(
              `convert: ${out} was written but loses metadata types (${loss.length}): ${
                loss.slice(0, 8).join("; ")
              }${loss.length > 8 ? "; …" : ""}`,
            );
            return 1;
          }
          if (!ctx.quiet) {
            const where = r.written.paths.length > 1
              ? `${r.written.paths.length} files beside ${out}`
              : out;
            ctx.io.err(
              `wrote ${where} (${target.name}, ${
                humanBytes(r.written.bytes)
              }) from ${r.from} in ${r.seconds.toFixed(2)} s`,
            );
          }
        }
        if (plan && preset !== undefined) {
          for (const line of presetWarnings(plan, options.preset as string)) {
            ctx.io.err(line);
          }
        }
        if (flags.modelfile) {
          const written = await openModel(ctx.reg, out!);
          try {
            await writeFileAtomic(
              modelfile,
              new TextEncoder().encode(
                modelfileFor(basename(out!), written.file.models[0].metadata),
              ),
            );
          } finally {
            written.close();
          }
          if (!ctx.quiet) {
            ctx.io.err(
              `wrote ${modelfile} (ollama create NAME -f ${modelfile})`,
            );
          }
        }
        return 0;
      },
    );
  },
};
