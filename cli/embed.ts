// `embed`: one JSON line of vector per input text, from an encoder
// (sentence-transformers' pooling) or any Llama-family model (mean of the
// last hidden states, normalized). `rerank`: cross-encoder scores of
// documents against a query.

import {
  isEncoderModel,
  loadEncoderModel,
  readSentencePipelineDir,
} from "../io/encoder.ts";
import { useSystemBlas } from "../io/blas.ts";
import { loadTransformer } from "../io/transformer.ts";
import { embed } from "../models/embed.ts";
import { embedSentences, rerankScores } from "../models/sentence.ts";
import { type FlagSpec, type Parsed, parseFlags, UsageError } from "./_args.ts";
import { type Command, needFiles } from "./_command.ts";
import { positiveInt, THREADS_FLAG, withThreads } from "./_habits.ts";

/** `--threads` and `--no-blas`, for `embed` and `rerank`. */
const SPEED_FLAGS: FlagSpec[] = [
  THREADS_FLAG,
  {
    name: "no-blas",
    type: "boolean",
    description:
      "Keep F32 products on the WebAssembly kernels where the system OpenBLAS could run them (it does with --allow-ffi and libopenblas0)",
  },
];

/**
 * Runs `fn` with the kernels on `--threads` workers and, unless
 * `--no-blas`, the system OpenBLAS as the F32 GEMM backend where Deno may
 * load it (`--allow-ffi`) and the library is there; the WebAssembly
 * kernels otherwise.
 */
async function withKernels<T>(
  flags: Parsed["flags"],
  fn: () => Promise<T>,
): Promise<T> {
  const threads = positiveInt(flags, "threads");
  return await withThreads(threads, async () => {
    const blas = flags["no-blas"]
      ? undefined
      : useSystemBlas({ threads: threads ?? 1 });
    try {
      return await fn();
    } finally {
      blas?.close();
    }
  });
}

const EMBED_FLAGS: FlagSpec[] = [
  {
    name: "input",
    short: "i",
    type: "list",
    value: "TEXT|FILE|-",
    description:
      "A text, a file of one text per line, or - for such lines on stdin; repeatable",
  },
  {
    name: "prompt-name",
    type: "string",
    value: "NAME",
    description:
      "A prompt of config_sentence_transformers.json to put before each text (query, passage …)",
  },
  {
    name: "prompt",
    type: "string",
    value: "TEXT",
    description: "A prefix to put before each text",
  },
  {
    name: "no-normalize",
    type: "boolean",
    description: "Keep the pooled vectors' lengths",
  },
  {
    name: "batch-size",
    type: "number",
    description: "Texts per forward pass",
    default: 32,
  },
  ...SPEED_FLAGS,
];

async function exists(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch {
    return false;
  }
}

/** `--input -` as `--input=-`: the flag parser takes a lone `-` for no value. */
function stdinArgs(args: string[]): string[] {
  return args.flatMap((a, i) =>
    a === "-" && (args[i - 1] === "--input" || args[i - 1] === "-i")
      ? []
      : (a === "--input" || a === "-i") && args[i + 1] === "-"
      ? [`${a}=-`]
      : [a]
  );
}

/** The texts that `--input` values name. */
async function readInputs(values: string[]): Promise<string[]> {
  const texts: string[] = [];
  for (const v of values) {
    let body: string | undefined;
    if (v === "-") body = await new Response(Deno.stdin.readable).text();
    else if (await exists(v)) body = await Deno.readTextFile(v);
    if (body === undefined) {
      texts.push(v);
      continue;
    }
    for (const line of body.split(/\r?\n/)) if (line !== "") texts.push(line);
  }
  return texts;
}

/** The `embed` command. */
export const embedCommand: Command = {
  name: "embed",
  summary: "Print embedding vectors of texts, one JSON line per text",
  usage: "embed MODEL --input TEXT|FILE|- [--input …]",
  flags: () => EMBED_FLAGS,
  async run(args, ctx) {
    const { flags, positional } = parseFlags(stdinArgs(args), EMBED_FLAGS);
    needFiles(positional, "MODEL (a Hugging Face folder or a .gguf file)");
    const inputs = (flags.input as string[] | undefined) ?? [];
    if (inputs.length === 0) throw new UsageError("missing --input");
    const texts = await readInputs(inputs);
    const path = positional[0];
    const normalize = flags["no-normalize"] ? false : undefined;
    const vectors = await withKernels(flags, async () => {
      if (await isEncoderModel(path)) {
        const { encoder, pipeline } = await loadEncoderModel(path);
        return embedSentences(encoder, pipeline, texts, {
          promptName: flags["prompt-name"] as string | undefined,
          prompt: flags.prompt as string | undefined,
          normalize,
          batchSize: flags["batch-size"] as number,
        }).embeddings;
      } else {
        const model = await loadTransformer(path);
        const pipeline = (await Deno.stat(path)).isDirectory
          ? await readSentencePipelineDir(path)
          : undefined;
        const prefix = (flags.prompt as string | undefined) ?? "";
        // a decoder embedding model with sentence-transformers' files pools
        // as they say; any other decoder: mean of the last hidden states
        return pipeline
          ? embedSentences(model, pipeline, texts, {
            promptName: flags["prompt-name"] as string | undefined,
            prompt: flags.prompt as string | undefined,
            normalize,
          }).embeddings
          : texts.length === 0
          ? []
          : embed(
            model,
            texts.map((t) => prefix + t),
            { normalize: normalize ?? true, truncate: true },
          ).embeddings;
      }
    });
    for (const [i, v] of vectors.entries()) {
      ctx.io.out(JSON.stringify({ index: i, embedding: Array.from(v) }));
    }
    return 0;
  },
};

const RERANK_FLAGS: FlagSpec[] = [
  {
    name: "query",
    short: "q",
    type: "string",
    value: "TEXT",
    description: "The query",
  },
  {
    name: "input",
    short: "i",
    type: "list",
    value: "TEXT|FILE|-",
    description:
      "A document, a file of one document per line, or - for such lines on stdin; repeatable",
  },
  ...SPEED_FLAGS,
];

/** The `rerank` command. */
export const rerankCommand: Command = {
  name: "rerank",
  summary:
    "Score documents against a query with a cross-encoder, one JSON line per document",
  usage: "rerank MODEL --query TEXT --input TEXT|FILE|- [--input …]",
  flags: () => RERANK_FLAGS,
  async run(args, ctx) {
    const { flags, positional } = parseFlags(stdinArgs(args), RERANK_FLAGS);
    needFiles(positional, "MODEL (a Hugging Face folder or a .gguf file)");
    if (typeof flags.query !== "string") {
      throw new UsageError("missing --query");
    }
    const inputs = (flags.input as string[] | undefined) ?? [];
    if (inputs.length === 0) throw new UsageError("missing --input");
    const docs = await readInputs(inputs);
    if (!(await isEncoderModel(positional[0]))) {
      throw new UsageError(
        `${
          positional[0]
        } is no encoder checkpoint (bert, roberta, xlm-roberta, modernbert)`,
      );
    }
    const query = flags.query;
    const scores = await withKernels(flags, async () => {
      const { encoder } = await loadEncoderModel(positional[0]);
      return rerankScores(encoder, query, docs);
    });
    for (const [i, s] of scores.entries()) {
      ctx.io.out(JSON.stringify({ index: i, score: s }));
    }
    return 0;
  },
};
