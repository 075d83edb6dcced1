// `perplexity`: a model's perplexity on a text, and its KL divergence from
// a base model, as llama-perplexity computes them (same chunks, same
// scored half, same base-file format).

import { loadTransformer } from "../io/transformer.ts";
import { writeFileAtomic } from "../io/file.ts";
import {
  klDivergence,
  perplexity,
  readLogitsFile,
} from "../models/perplexity.ts";
import { type FlagSpec, parseFlags, UsageError } from "./_args.ts";
import { type Command, JSON_FLAG } from "./_command.ts";
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
  textFlag("The text to score (- reads stdin)"),
  ...chunkFlags(
    "Tokens per chunk; the second half of each is scored",
    "Score at most N chunks (default: all that fit)",
  ),
  {
    name: "kl-divergence-base",
    type: "string",
    value: "FILE",
    description:
      "Write this model's log-probabilities to FILE (llama-perplexity's base-file format)",
  },
  {
    name: "kl-divergence",
    type: "string",
    value: "BASE",
    description:
      "KL divergence from the base model whose log-probabilities BASE holds (written by --kl-divergence-base here or by llama-perplexity)",
  },
  THREADS_FLAG,
  JSON_FLAG,
];

/** `modelhost perplexity MODEL --text FILE`. */
export const perplexityCommand: Command = {
  name: "perplexity",
  summary:
    "Perplexity of a model on a text, and KL divergence from a base model, as llama-perplexity computes them",
  usage:
    "perplexity MODEL --text FILE [-c N] [--kl-divergence-base OUT | --kl-divergence BASE]",
  flags: () => FLAGS,
  async run(args, ctx) {
    const { flags, positional } = parseFlags(args, this.flags(ctx.reg, args));
    const [path, rest] = modelArg(flags, positional);
    if (rest.length) throw new UsageError(`unexpected argument "${rest[0]}"`);
    const threads = positiveInt(flags, "threads");
    const kld = flags["kl-divergence"] as string | undefined;
    const save = flags["kl-divergence-base"] as string | undefined;
    if (kld !== undefined && save !== undefined) {
      throw new UsageError(
        "--kl-divergence reads a base file, --kl-divergence-base writes one: give one of them",
      );
    }
    const text = flags.text as string | undefined;
    if (kld === undefined && text === undefined) {
      throw new UsageError("missing --text FILE");
    }
    const model = await loadTransformer(path);
    const onChunk = (c: number, n: number, ppl: number) => {
      if (!flags.json && !ctx.quiet) {
        ctx.io.err(`[${c}/${n}] ${ppl.toFixed(4)}`);
      }
    };
    return await withThreads(threads, async () => {
      if (kld !== undefined) {
        const base = readLogitsFile(await Deno.readFile(kld), kld);
        const r = klDivergence(model, base, { onChunk });
        if (flags.json) {
          ctx.io.out(JSON.stringify({ model: path, base: kld, ...r }));
        } else {
          ctx.io.out(
            `chunks ${base.chunks} of ${base.ctx} tokens, ${r.count} tokens scored`,
          );
          ctx.io.out(`Mean PPL(Q)                   : ${r.ppl.toFixed(6)}`);
          ctx.io.out(`Mean PPL(base)                : ${r.pplBase.toFixed(6)}`);
          ctx.io.out(
            `Mean ln(PPL(Q)/PPL(base))     : ${r.lnPplRatio.toFixed(6)}`,
          );
          ctx.io.out(
            `Mean    KLD: ${r.kld.toFixed(6)} ± ${r.kldUncertainty.toFixed(6)}`,
          );
          ctx.io.out(`RMS Δp     : ${(100 * r.deltaPRms).toFixed(3)} %`);
          ctx.io.out(`Same top p : ${(100 * r.sameTop).toFixed(3)} %`);
        }
        return 0;
      }
      const raw = text === "-"
        ? await new Response(Deno.stdin.readable).text()
        : await Deno.readTextFile(text!);
      if (!model.tokenizer) {
        throw new UsageError(`${path} has no tokenizer to read the text with`);
      }
      const tokens = model.tokenizer.encode(raw, { parseSpecial: false });
      const r = perplexity(model, tokens, {
        ctx: flags["ctx-size"] as number,
        chunks: flags.chunks as number | undefined,
        saveLogits: save !== undefined,
        onChunk,
      });
      if (save !== undefined) await writeFileAtomic(save, r.logitsFile!);
      if (flags.json) {
        const { logitsFile: _, ...rest } = r;
        ctx.io.out(
          JSON.stringify({ model: path, tokens: tokens.length, ...rest }),
        );
      } else {
        ctx.io.out(
          `${tokens.length} tokens, ${r.chunks} chunks of ${r.ctx}, ${r.count} scored`,
        );
        ctx.io.out(
          `Final estimate: PPL = ${r.ppl.toFixed(4)} +/- ${
            r.uncertainty.toFixed(5)
          }`,
        );
        if (save !== undefined) ctx.io.err(`wrote ${save}`);
      }
      return 0;
    });
  },
};
