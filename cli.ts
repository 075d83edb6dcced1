/**
 * The modelhost command line, generated from the registry: every registered
 * format and layer plugin shows up in its listings, in `inspect`, `validate`
 * and `convert`, and in help (a writer's option specs become `convert`
 * flags). `--plugin SPECIFIER` registers third-party plugins first.
 *
 * ```sh
 * deno run -A cli.ts inspect model.safetensors
 * deno run -A cli.ts convert model.gguf --to safetensors -o model.safetensors
 * deno run -A cli.ts formats --plugin ./my_format.ts
 * ```
 *
 * @module
 */

import { basename, dirname, join, resolve, toFileUrl } from "@std/path";
import denoJson from "./deno.json" with { type: "json" };
import { defaultRegistry } from "./mod.ts";
import type { FormatPlugin, OptionSpec, Plugin } from "./core/plugin.ts";
import type { Registry } from "./registry.ts";
import {
  closest,
  flagHelp,
  flagsFromOptions,
  type FlagSpec,
  kebab,
  type Parsed,
  parseFlags,
  UsageError,
} from "./cli/_args.ts";
import { compareModels, pickModel, readInput, runModel } from "./cli/_run.ts";
import { GENERATE_FLAGS, modelfileFor } from "./cli/_generate.ts";
import { convertHfToGguf, loadTransformer } from "./io/transformer.ts";
import { writeFileAtomic } from "./io/file.ts";
import type { GgufQuantType } from "./formats/gguf/mod.ts";
import { generate } from "./models/generate.ts";
import { formatReport, inspectFile, validateFile } from "./cli/_inspect.ts";
import { humanBytes, progress, type ProgressOptions } from "./cli/_progress.ts";
import { openModel, writeModel, type WrittenModel } from "./io/open.ts";
import { runServe, SERVE_FLAGS } from "./cli/_serve.ts";
import type { ModelFile, TensorIndex } from "./core/model.ts";

/** Where the CLI writes; tests pass their own sinks. */
export interface CliIo {
  /** Standard output, one line per call. */
  out(text: string): void;
  /** Standard error, one line per call. */
  err(text: string): void;
  /** Raw progress text for stderr (no newline added); omitted: no progress. */
  progress?(text: string): void;
  /** Whether stderr is an interactive terminal (progress bars are drawn only then). */
  tty?: boolean;
  /** Raw text for stdout (no newline added), for streamed output; omitted: collected and printed as one line. */
  write?(text: string): void;
}

const encoder = new TextEncoder();
const consoleIo: CliIo = {
  out: (t) => console.log(t),
  err: (t) => console.error(t),
  progress: (t) => Deno.stderr.writeSync(encoder.encode(t)),
  tty: Deno.stderr.isTerminal(),
  write: (t) => {
    Deno.stdout.writeSync(encoder.encode(t));
  },
};

/** What a command gets. */
interface Context {
  reg: Registry;
  io: CliIo;
  quiet: boolean;
  verbose: boolean;
  progress: ProgressOptions;
}

interface Command {
  summary: string;
  usage: string;
  /** Flags; may depend on the registry and the raw arguments (convert's target format). */
  flags(reg: Registry, args: string[]): FlagSpec[];
  run(args: string[], ctx: Context): Promise<number>;
  /** Extra help text (generated from the registry). */
  more?(reg: Registry): string[];
}

const GLOBAL_FLAGS: FlagSpec[] = [
  {
    name: "plugin",
    type: "list",
    value: "SPECIFIER",
    description:
      "Import a plugin module (path, jsr:, npm:, https:) first; repeatable",
  },
  {
    name: "quiet",
    short: "q",
    type: "boolean",
    description: "No progress output",
  },
  { name: "verbose", short: "v", type: "boolean", description: "More detail" },
  {
    name: "debug",
    type: "boolean",
    description: "Print stack traces on errors",
  },
  { name: "help", short: "h", type: "boolean", description: "Show help" },
];

const FORCE_FLAG: FlagSpec = {
  name: "force",
  short: "f",
  type: "boolean",
  description: "Overwrite an existing output",
};

const ID_FLAG: FlagSpec = {
  name: "id",
  type: "string",
  description: "Model id, for files holding several",
};

const JSON_FLAG: FlagSpec = {
  name: "json",
  type: "boolean",
  description: "Machine-readable JSON output",
};

function needFiles(positional: string[], what: string, min = 1): void {
  if (positional.length < min) throw new UsageError(`missing ${what}`);
}

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

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

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
];

/** The writer option that picks a storage type (`dtype` or `quantize`), if the format has one. */
function dtypeOption(format: FormatPlugin): OptionSpec | undefined {
  return format.options?.find((o) =>
    o.name === "dtype" || o.name === "quantize"
  );
}

/** Writer options from parsed flags: the plugin's own flags, --dtype/--quant, --provenance. */
function writerOptions(
  target: FormatPlugin,
  flags: Parsed["flags"],
): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const o of target.options ?? []) {
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
async function convertFile(
  ctx: Context,
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

/** Whether a path is a Hugging Face checkpoint folder (has config.json). */
async function isHfFolder(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory &&
      (await Deno.stat(join(path, "config.json"))).isFile;
  } catch {
    return false;
  }
}

async function refuseOverwrite(
  ctx: Context,
  out: string,
  force: boolean,
): Promise<boolean> {
  if (!force && await exists(out)) {
    ctx.io.err(`error: ${out} exists; pass --force to overwrite it`);
    return true;
  }
  return false;
}

const COMMANDS: Record<string, Command> = {
  inspect: {
    summary:
      "Show format, metadata, tensors and totals of model files (reads headers only)",
    usage: "inspect FILE|FOLDER|URL… [--json] [--tensors PATTERN]",
    flags: () => [JSON_FLAG, {
      name: "tensors",
      type: "string",
      value: "PATTERN",
      description: "Only list tensors matching a glob (`*.weight`) or /regex/",
    }],
    async run(args, ctx) {
      const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
      needFiles(positional, "FILE to inspect");
      const reports = [];
      for (const p of positional) {
        reports.push(
          await inspectFile(ctx.reg, p, flags.tensors as string | undefined),
        );
      }
      if (flags.json) {
        ctx.io.out(
          JSON.stringify(reports.length === 1 ? reports[0] : reports, null, 2),
        );
      } else for (const r of reports) ctx.io.out(formatReport(r).join("\n"));
      return 0;
    },
  },
  validate: {
    summary:
      "Check files against every structural rule of their format and their checksums",
    usage: "validate FILE… [--json]",
    flags: () => [JSON_FLAG],
    async run(args, ctx) {
      const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
      needFiles(positional, "FILE to validate");
      const results = [];
      for (const p of positional) {
        results.push({ path: p, problems: await validateFile(ctx.reg, p) });
      }
      const ok = results.every((r) => r.problems.length === 0);
      if (flags.json) {
        ctx.io.out(
          JSON.stringify(
            results.map((r) => ({ ...r, valid: r.problems.length === 0 })),
            null,
            2,
          ),
        );
      } else {
        for (const r of results) {
          if (r.problems.length === 0) ctx.io.out(`${r.path}: valid`);
          else {
            ctx.io.out(
              `${r.path}: INVALID (${r.problems.length} problem${
                r.problems.length > 1 ? "s" : ""
              })`,
            );
            for (const p of r.problems) ctx.io.out(`  - ${p}`);
          }
        }
      }
      return ok ? 0 : 1;
    },
  },
  convert: {
    summary:
      "Convert a model between formats (options come from the target format)",
    usage: "convert IN --to FORMAT -o OUT [format options]",
    flags(reg, args) {
      const target = targetOf(args, reg);
      const own = (target?.options ?? []).filter((o) =>
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
        const opts = flagsFromOptions(f.options);
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
        const writable = ctx.reg.formats().filter((f) =>
          f.write || f.writeFiles
        ).map((f) => f.name);
        throw new UsageError(
          `format "${target.name}" cannot write; writable formats: ${
            writable.join(", ")
          }`,
        );
      }
      const options = writerOptions(target, flags);
      if (await refuseOverwrite(ctx, out, Boolean(flags.force))) return 1;
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
        const bytes = await convertHfToGguf(positional[0], out, {
          quantize: options.quantize as GgufQuantType | undefined,
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
          out,
          target,
          options,
          flags.id as string | undefined,
          "converting",
        );
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
      if (flags.modelfile) {
        const written = await openModel(ctx.reg, out);
        try {
          await writeFileAtomic(
            modelfile,
            new TextEncoder().encode(
              modelfileFor(basename(out), written.file.models[0].metadata),
            ),
          );
        } finally {
          written.close();
        }
        if (!ctx.quiet) {
          ctx.io.err(`wrote ${modelfile} (ollama create NAME -f ${modelfile})`);
        }
      }
      return 0;
    },
  },
  quantize: {
    summary:
      "Quantize a model (GGUF Q8_0/Q4_0/K-quants, or any format's storage types) with a per-tensor error report",
    usage: "quantize IN OUT TYPE [--json] [--force]",
    flags: () => [
      JSON_FLAG,
      FORCE_FLAG,
      ID_FLAG,
    ],
    async run(args, ctx) {
      const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
      if (positional.length !== 3) {
        throw new UsageError("quantize takes IN OUT TYPE");
      }
      const [input, out, type] = positional;
      const target = ctx.reg.formatForPath(out);
      const options = writerOptions(target, { dtype: type });
      if (await refuseOverwrite(ctx, out, Boolean(flags.force))) return 1;
      const r = await convertFile(
        ctx,
        input,
        out,
        target,
        options,
        flags.id as string | undefined,
        "quantizing",
      );
      const [a, b] = [
        await openModel(ctx.reg, input),
        await openModel(ctx.reg, out),
      ];
      try {
        const ma = pickModel(
          a.file.models,
          flags.id as string | undefined,
          input,
        );
        const rows = await compareModels(ma, b.file.models[0]);
        if (flags.json) {
          ctx.io.out(
            JSON.stringify(
              {
                input,
                output: out,
                type: type.toUpperCase(),
                bytes: r.written.bytes,
                tensors: rows,
              },
              null,
              2,
            ),
          );
        } else {
          const w = Math.max(4, ...rows.map((x) => x.name.length));
          ctx.io.out(
            `${
              "name".padEnd(w)
            }  from     to        rmse        cosine      max abs`,
          );
          for (const x of rows) {
            ctx.io.out(
              `${x.name.padEnd(w)}  ${x.from.padEnd(7)}  ${x.to.padEnd(7)}  ${
                x.rmse.toExponential(3).padStart(10)
              }  ${x.cosine.toFixed(7)}  ${x.maxAbs.toExponential(3)}`,
            );
          }
          const worst = rows.reduce((m, x) => Math.min(m, x.cosine), 1);
          ctx.io.out(
            `${rows.length} tensors, ${
              humanBytes(r.written.bytes)
            } written to ${out}; lowest cosine ${worst.toFixed(7)}`,
          );
        }
        return 0;
      } finally {
        a.close();
        b.close();
      }
    },
  },
  run: {
    summary:
      "Run a stored network's forward pass (bundle, or SafeTensors/GGUF with a network config)",
    usage:
      "run MODEL --input JSON|FILE.json|FILE.npy|- [--id ID] [--config FILE]",
    flags: () => [
      {
        name: "input",
        short: "i",
        type: "string",
        value: "INPUT",
        description: "Inline JSON, a .json or .npy file, or - for stdin",
      },
      ID_FLAG,
      {
        name: "config",
        type: "string",
        value: "FILE",
        description: "Network config JSON, when the file carries none",
      },
    ],
    async run(args, ctx) {
      const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
      needFiles(positional, "MODEL");
      if (flags.input === undefined) throw new UsageError("missing --input");
      const input = await readInput(flags.input as string);
      const config = flags.config
        ? JSON.parse(await Deno.readTextFile(flags.config as string))
        : undefined;
      const y = await runModel(ctx.reg, positional[0], input, {
        id: flags.id as string | undefined,
        config,
      });
      ctx.io.out(JSON.stringify({ shape: y.shape, data: Array.from(y.data) }));
      return 0;
    },
  },
  generate: {
    summary:
      "Generate text with a Llama-family model (Hugging Face folder or GGUF), streamed",
    usage: "generate MODEL --prompt TEXT [--chat] [sampling options]",
    flags: () => GENERATE_FLAGS,
    async run(args, ctx) {
      const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
      needFiles(positional, "MODEL");
      let prompt = flags.prompt as string | undefined;
      if (prompt === undefined) throw new UsageError("missing --prompt");
      if (prompt === "-") {
        prompt = await new Response(Deno.stdin.readable).text();
      }
      const t0 = performance.now();
      const model = await loadTransformer(positional[0]);
      const loadSeconds = (performance.now() - t0) / 1000;
      const messages = flags.chat
        ? [
          ...(flags.system
            ? [{ role: "system" as const, content: flags.system as string }]
            : []),
          { role: "user" as const, content: prompt },
        ]
        : undefined;
      const options = {
        maxTokens: flags["max-tokens"] as number,
        greedy: flags.greedy ? true : undefined,
        temperature: flags.temperature as number | undefined,
        topK: flags["top-k"] as number | undefined,
        topP: flags["top-p"] as number | undefined,
        repetitionPenalty: flags["repeat-penalty"] as number | undefined,
        seed: flags.seed as number,
        stop: flags.stop as string[] | undefined,
        addBos: flags["no-bos"] ? false : undefined,
      };
      const ids: number[] = [];
      let text = "";
      const t1 = performance.now();
      const it = generate(model, messages ?? prompt, options);
      let step = await it.next();
      while (!step.done) {
        ids.push(step.value.id);
        text += step.value.text;
        if (!flags.json && ctx.io.write) ctx.io.write(step.value.text);
        step = await it.next();
      }
      const seconds = (performance.now() - t1) / 1000;
      const result = step.value;
      if (flags.json) {
        ctx.io.out(JSON.stringify({
          model: model.name,
          ids: result.ids,
          text: result.text,
          promptIds: result.promptIds,
          finishReason: result.finishReason,
          prefillMs: result.prefillMs,
          decodeMs: result.decodeMs,
          loadSeconds,
          seconds,
        }));
      } else {
        if (ctx.io.write) ctx.io.write("\n");
        else ctx.io.out(text);
        if (ctx.verbose) {
          ctx.io.err(
            `${ids.length} tokens in ${seconds.toFixed(2)} s (${
              (ids.length / seconds).toFixed(1)
            } tokens/s); loaded in ${loadSeconds.toFixed(2)} s`,
          );
        }
      }
      return 0;
    },
  },
  serve: {
    summary:
      "Serve a folder of models over HTTP (registry, batched predictions, Ollama API, metrics)",
    usage:
      "serve DIR [--port 8080] [--host 127.0.0.1] [--token T] [--max-batch N] [--max-wait-ms N] [limits]",
    flags: () => SERVE_FLAGS,
    run: (args, ctx) => runServe(args, ctx.reg, ctx.quiet, ctx.io.out),
  },
  formats: {
    summary: "List registered format plugins and what each can do",
    usage: "formats [--json]",
    flags: () => [JSON_FLAG],
    run(args, ctx) {
      const { flags } = parseFlags(args, this.flags(ctx.reg, args));
      const rows = ctx.reg.formats().map((f) => ({
        name: f.name,
        extensions: [...f.extensions],
        read: typeof f.read === "function",
        write: typeof f.write === "function",
        detect: typeof f.detect === "function",
        options: (f.options ?? []).map((o) => o.name),
        description: f.description ?? "",
      }));
      if (flags.json) ctx.io.out(JSON.stringify(rows, null, 2));
      else if (rows.length === 0) ctx.io.out("No format plugins registered.");
      else {
        for (const r of rows) {
          const caps = [r.read ? "read" : "", r.write ? "write" : ""].filter(
            Boolean,
          ).join("+");
          ctx.io.out(
            `${r.name.padEnd(14)} ${r.extensions.join(" ").padEnd(24)} ${
              caps.padEnd(11)
            } ${r.description}`,
          );
        }
      }
      return Promise.resolve(0);
    },
  },
  layers: {
    summary: "List registered layer plugins",
    usage: "layers [--json]",
    flags: () => [JSON_FLAG],
    run(args, ctx) {
      const { flags } = parseFlags(args, this.flags(ctx.reg, args));
      const rows = ctx.reg.layers().map((l) => ({
        type: l.type,
        aliases: [...(l.aliases ?? [])],
        init: typeof l.init === "function",
        description: l.description ?? "",
      }));
      if (flags.json) ctx.io.out(JSON.stringify(rows, null, 2));
      else if (rows.length === 0) ctx.io.out("No layer plugins registered.");
      else {
        for (const r of rows) {
          const alias = r.aliases.length ? ` (${r.aliases.join(", ")})` : "";
          ctx.io.out(`${(r.type + alias).padEnd(30)} ${r.description}`);
        }
      }
      return Promise.resolve(0);
    },
  },
};

function mainHelp(): string {
  return [
    `modelhost ${denoJson.version}: read, check, convert and run model files`,
    "",
    "Usage: modelhost <command> [options]",
    "",
    "Commands:",
    ...Object.entries(COMMANDS).map(([n, c]) =>
      `  ${n.padEnd(12)} ${c.summary}`
    ),
    "",
    "Global options:",
    ...flagHelp(GLOBAL_FLAGS),
    "  -V, --version                      Print the version",
    "",
    "Run 'modelhost <command> --help' for a command's options.",
  ].join("\n");
}

function commandHelp(
  cmd: Command,
  reg: Registry,
  args: string[],
): string {
  return [
    `Usage: modelhost ${cmd.usage}`,
    "",
    cmd.summary,
    "",
    "Options:",
    ...flagHelp(cmd.flags(reg, args)),
    ...(cmd.more?.(reg) ?? []),
    "",
    `Global options: ${GLOBAL_FLAGS.map((f) => `--${f.name}`).join(", ")}`,
  ].join("\n");
}

/** Splits global flags (valid anywhere) from the rest. */
function takeGlobals(
  args: string[],
): { globals: Record<string, unknown>; rest: string[] } {
  const rest: string[] = [];
  const globals: Record<string, unknown> = { plugin: [] as string[] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") {
      rest.push(...args.slice(i));
      break;
    }
    if (a === "--plugin") {
      if (args[i + 1] === undefined) {
        throw new UsageError("--plugin expects a module specifier");
      }
      (globals.plugin as string[]).push(args[++i]);
    } else if (a.startsWith("--plugin=")) {
      (globals.plugin as string[]).push(a.slice(9));
    } else if (a === "--quiet" || a === "-q") globals.quiet = true;
    else if (a === "--verbose" || a === "-v") globals.verbose = true;
    else if (a === "--debug") globals.debug = true;
    else rest.push(a);
  }
  return { globals, rest };
}

/**
 * Imports a plugin module and registers its default export (a plugin or a
 * list of plugins).
 *
 * @param reg The registry to add to.
 * @param specifier A local path (relative to the working directory), or a
 * `jsr:`, `npm:`, `https:` or `file:` specifier.
 * @returns The plugins registered.
 *
 * @example
 * ```ts ignore
 * import { loadPlugin } from "./cli.ts";
 * import { defaultRegistry } from "./mod.ts";
 * await loadPlugin(defaultRegistry(), "./examples/plugins/npy/mod.ts");
 * ```
 */
export async function loadPlugin(
  reg: Registry,
  specifier: string,
): Promise<Plugin[]> {
  const url = /^(jsr|npm|https?|file|data):/.test(specifier)
    ? specifier
    : toFileUrl(resolve(specifier)).href;
  let mod: { default?: unknown };
  try {
    mod = await import(url);
  } catch (e) {
    throw new TypeError(
      `Cannot load plugin ${specifier}: ${
        e instanceof Error ? e.message.split("\n")[0] : e
      }`,
    );
  }
  const exp = mod.default;
  const list = (Array.isArray(exp) ? exp : [exp]) as Plugin[];
  if (
    !exp || list.some((p) => !p || (p.kind !== "format" && p.kind !== "layer"))
  ) {
    throw new TypeError(
      `Cannot load plugin ${specifier}: its default export must be a format or layer plugin (kind "format" | "layer") or a list of them`,
    );
  }
  reg.use(list);
  return list;
}

/**
 * Runs the CLI with the given arguments.
 *
 * @param args Command-line arguments (without the program name).
 * @param io Output sinks. @default the console
 * @param registry The registry to use. @default defaultRegistry()
 * @returns The exit code: 0 success, 1 failure or invalid input, 2 usage error.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { main } from "./cli.ts";
 * const lines: string[] = [];
 * const code = await main(["--version"], { out: (t) => lines.push(t), err: () => {} });
 * assert(code === 0 && lines[0].startsWith("modelhost"));
 * ```
 */
export async function main(
  args: string[],
  io: CliIo = consoleIo,
  registry: Registry = defaultRegistry(),
): Promise<number> {
  let debug = false;
  try {
    const { globals, rest } = takeGlobals(args);
    debug = Boolean(globals.debug);
    for (const spec of globals.plugin as string[]) {
      await loadPlugin(registry, spec);
    }
    const [name, ...cmdArgs] = rest;
    if (
      name === undefined || name === "--help" || name === "-h" ||
      name === "help"
    ) {
      if (name === "help" && cmdArgs[0] && COMMANDS[cmdArgs[0]]) {
        io.out(commandHelp(COMMANDS[cmdArgs[0]], registry, []));
        return 0;
      }
      io.out(mainHelp());
      return name === undefined ? 2 : 0;
    }
    if (name === "--version" || name === "-V") {
      io.out(`modelhost ${denoJson.version}`);
      return 0;
    }
    const cmd = COMMANDS[name];
    if (!cmd) {
      const guess = closest(name, Object.keys(COMMANDS));
      throw new UsageError(
        `Unknown command "${name}"${
          guess ? `; did you mean "${guess}"?` : ""
        }. Commands: ${Object.keys(COMMANDS).join(", ")}`,
      );
    }
    if (cmdArgs.includes("--help") || cmdArgs.includes("-h")) {
      io.out(commandHelp(cmd, registry, cmdArgs));
      return 0;
    }
    const quiet = Boolean(globals.quiet);
    const ctx: Context = {
      reg: registry,
      io,
      quiet,
      verbose: Boolean(globals.verbose),
      progress: {
        tty: Boolean(io.tty && io.progress),
        quiet,
        write: (t) => io.progress?.(t),
      },
    };
    return await cmd.run(cmdArgs, ctx);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`error: ${e.message}`);
      io.err("Run 'modelhost --help' for usage.");
      return 2;
    }
    if (e instanceof Deno.errors.NotFound) {
      const m = e.message.match(/'([^']+)'/);
      io.err(`error: file not found: ${m ? m[1] : e.message}`);
      return 1;
    }
    io.err(`error: ${e instanceof Error ? e.message : String(e)}`);
    if (debug && e instanceof Error && e.stack) io.err(e.stack);
    return 1;
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
