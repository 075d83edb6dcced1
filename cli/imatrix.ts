// `imatrix`: an importance matrix of a model over a text, as llama-imatrix
// collects it, written in llama.cpp's GGUF imatrix format or legacy .dat.

import { loadTransformer } from "../io/transformer.ts";
import { writeFileAtomic } from "../io/file.ts";
import {
  computeImatrix,
  imatrixToDat,
  imatrixToGguf,
} from "../models/imatrix.ts";
import { type FlagSpec, parseFlags, UsageError } from "./_args.ts";
import type { Command } from "./_command.ts";
import {
  chunkFlags,
  MODEL_FLAG,
  modelArg,
  positiveInt,
  textFlag,
  THREADS_FLAG,
  withThreads,
} from "./_habits.ts";

const FLAGS: FlagSpec[] = [
  MODEL_FLAG,
  textFlag("The text to collect over (- reads stdin)"),
  {
    name: "output",
    short: "o",
    type: "string",
    value: "OUT",
    description: "Output file (default: imatrix.gguf)",
    default: "imatrix.gguf",
  },
  {
    name: "output-format",
    type: "string",
    choices: ["gguf", "dat"],
    description:
      "gguf, or llama.cpp's legacy dat (default: from OUT's extension)",
  },
  ...chunkFlags(
    "Tokens per chunk",
    "Use at most N chunks (default: all that fit)",
  ),
  {
    name: "process-output",
    type: "boolean",
    description: "Also collect output.weight",
  },
  THREADS_FLAG,
];

/** `modelhost imatrix MODEL --text FILE`. */
export const imatrixCommand: Command = {
  name: "imatrix",
  summary:
    "Importance matrix of a model over a text, as llama-imatrix collects it (GGUF or legacy .dat), for quantize --imatrix",
  usage: "imatrix MODEL --text FILE [-o imatrix.gguf] [-c N]",
  flags: () => FLAGS,
  async run(args, ctx) {
    const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
    const [path, rest] = modelArg(flags, positional);
    if (rest.length) throw new UsageError(`unexpected argument "${rest[0]}"`);
    const text = flags.text as string | undefined;
    if (text === undefined) throw new UsageError("missing --text FILE");
    const out = flags.output as string;
    const format = (flags["output-format"] as string | undefined) ??
      (out.endsWith(".dat") ? "dat" : "gguf");
    const model = await loadTransformer(path);
    if (!model.tokenizer) {
      throw new UsageError(`${path} has no tokenizer to read the text with`);
    }
    const raw = text === "-"
      ? await new Response(Deno.stdin.readable).text()
      : await Deno.readTextFile(text);
    const tokens = model.tokenizer.encode(raw, { parseSpecial: false });
    const im = await withThreads(
      positiveInt(flags, "threads"),
      () =>
        Promise.resolve(computeImatrix(model, tokens, {
          ctx: flags["ctx-size"] as number,
          chunks: flags.chunks as number | undefined,
          processOutput: Boolean(flags["process-output"]),
          dataset: text,
          onChunk: (c, n) => {
            if (!ctx.quiet) ctx.io.err(`[${c}/${n}]`);
          },
        })),
    );
    const bytes = format === "dat" ? imatrixToDat(im) : await imatrixToGguf(im);
    await writeFileAtomic(out, bytes);
    if (!ctx.quiet) {
      ctx.io.err(
        `wrote ${out} (${format}): ${im.entries.size} matrices over ${im.chunkCount} chunks of ${im.chunkSize} tokens`,
      );
    }
    return 0;
  },
};
