// Writing a model in another format, as `convert` and `quantize` do: writer
// options from flags, and a read-convert-write pass with progress.

import type { FormatPlugin, OptionSpec } from "../core/plugin.ts";
import type { ModelFile, TensorIndex } from "../core/model.ts";
import { openModel, writeModel, type WrittenModel } from "../io/open.ts";
import { closest, kebab, type Parsed, UsageError } from "./_args.ts";
import { type CommandContext, pickModel } from "./_command.ts";
import { humanBytes, progress } from "./_progress.ts";

/** Wraps a file's tensor indexes so each load reports progress. */
function withLoadProgress(
  file: ModelFile,
  onLoad: (bytes: number, name: string) => void,
): ModelFile {
  return {
    ...file,
    models: file.models.map((m) => {
      const t = m.tensors;
      const wrapped: TensorIndex = {
        names: () => t.names(),
        has: (n) => t.has(n),
        info: (n) => t.info(n),
        load: async (n) => {
          const tensor = await t.load(n);
          onLoad(tensor.bytes.byteLength, n);
          return tensor;
        },
      };
      return { ...m, tensors: wrapped };
    }),
  };
}

/** The writer option that picks a storage type (`dtype` or `quantize`), if the format has one. */
function dtypeOption(format: FormatPlugin): OptionSpec | undefined {
  return format.options?.find((o) =>
    o.name === "dtype" || o.name === "quantize"
  );
}

/** The options a format's writer takes (those not marked read-only). */
export function writeOptionsOf(
  format: FormatPlugin | undefined,
): OptionSpec[] {
  return (format?.options ?? []).filter((o) => o.use !== "read");
}

/** Writer options from parsed flags: the plugin's own flags, --dtype/--quant, --provenance. */
export function writerOptions(
  target: FormatPlugin,
  flags: Parsed["flags"],
): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const o of writeOptionsOf(target)) {
    const v = flags[kebab(o.name)];
    if (v !== undefined && o.name !== "dtype" && o.name !== "quantize") {
      options[o.name] = v;
    }
  }
  const dtype = (flags.dtype ?? flags.quant) as string | undefined;
  if (dtype !== undefined) {
    const opt = dtypeOption(target);
    if (!opt) {
      throw new UsageError(
        `format "${target.name}" has no storage-type option; drop --dtype/--quant`,
      );
    }
    const want = dtype.toUpperCase();
    if (opt.choices && !opt.choices.includes(want)) {
      const guess = closest(want, opt.choices);
      throw new UsageError(
        `format "${target.name}" cannot store ${dtype}; choices: ${
          opt.choices.map((c) => c.toLowerCase()).join(", ")
        }${guess ? ` (did you mean ${guess.toLowerCase()}?)` : ""}`,
      );
    }
    options[opt.name] = want;
  }
  const prov = flags.provenance as string[] | undefined;
  if (prov?.length) {
    options.provenance = Object.fromEntries(prov.map((kv) => {
      const i = kv.indexOf("=");
      if (i <= 0) {
        throw new UsageError(`--provenance expects KEY=VALUE, got "${kv}"`);
      }
      return [kv.slice(0, i), kv.slice(i + 1)];
    }));
  }
  return options;
}

/** Reads a model, optionally keeps one id, and writes it with progress. */
export async function convertFile(
  ctx: CommandContext,
  input: string,
  out: string,
  target: FormatPlugin,
  options: Record<string, unknown>,
  id: string | undefined,
  label: string,
): Promise<{ written: WrittenModel; from: string; seconds: number }> {
  const opened = await openModel(ctx.reg, input);
  try {
    let file = opened.file;
    if (id !== undefined) {
      file = { ...file, models: [pickModel(file.models, id, input)] };
    }
    let total = 0;
    for (const m of file.models) {
      for (const n of m.tensors.names()) {
        total += m.tensors.info(n).byteLength;
      }
    }
    const bar = progress(label, total, ctx.progress);
    let done = 0;
    file = withLoadProgress(file, (b, name) => {
      bar.update(done += b);
      if (ctx.verbose) ctx.io.err(`  ${name} (${humanBytes(b)})`);
    });
    const t0 = performance.now();
    // Writers that build networks (ONNX export) look layer types up in the
    // registry, so layers added with --plugin export too.
    const written = await writeModel(target, file, out, {
      layers: ctx.reg,
      ...options,
    });
    bar.done();
    return {
      written,
      from: opened.format.name,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    opened.close();
  }
}
