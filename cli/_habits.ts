// Flags people bring from llama.cpp and Ollama, shared by the commands that
// load a model: -m/--model beside the positional MODEL, -t/--threads,
// -c/--ctx-size.

import { configureKernels, shutdownKernels } from "../kernels/fast/mod.ts";
import { type FlagSpec, type Parsed, UsageError } from "./_args.ts";

/** `-m/--model`: the model, as llama.cpp's tools take it. */
export const MODEL_FLAG: FlagSpec = {
  name: "model",
  short: "m",
  type: "string",
  value: "MODEL",
  description: "The model (instead of the positional MODEL)",
};

/** `-t/--threads`: kernel worker threads. */
export const THREADS_FLAG: FlagSpec = {
  name: "threads",
  short: "t",
  type: "number",
  value: "N",
  description: "Threads for the kernels (1 = this thread only)",
};

/** `-c/--ctx-size`: the context length. */
export const CTX_FLAG: FlagSpec = {
  name: "ctx-size",
  short: "c",
  type: "number",
  value: "N",
  description: "Context length in tokens (prompt and output together)",
};

/**
 * `-f/--text FILE` (alias `--file`): the text a command reads over, as
 * llama-perplexity and llama-imatrix take it; `-` reads stdin.
 */
export function textFlag(description: string): FlagSpec {
  return {
    name: "text",
    short: "f",
    aliases: ["file"],
    type: "string",
    value: "FILE",
    description,
  };
}

/**
 * `-c/--ctx-size N` as tokens per chunk (512 unless given) and
 * `--chunks N`, for the commands that walk a text in chunks.
 */
export function chunkFlags(
  ctxDescription: string,
  chunksDescription: string,
): FlagSpec[] {
  return [
    { ...CTX_FLAG, description: ctxDescription, default: 512 },
    {
      name: "chunks",
      type: "number",
      value: "N",
      description: chunksDescription,
    },
  ];
}

/**
 * The model path from `-m` or the first positional argument (not both);
 * the other positional arguments follow.
 */
export function modelArg(
  flags: Parsed["flags"],
  positional: string[],
): [string, string[]] {
  const m = flags.model as string | undefined;
  if (m !== undefined) {
    if (positional.length > 0 && positional[0] === m) {
      return [m, positional.slice(1)];
    }
    return [m, positional];
  }
  if (positional.length === 0) throw new UsageError("missing MODEL (or -m)");
  return [positional[0], positional.slice(1)];
}

/** A positive integer flag, or undefined when absent. */
export function positiveInt(
  flags: Parsed["flags"],
  name: string,
): number | undefined {
  const v = flags[name];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) {
    throw new UsageError(`--${name} expects a positive integer, got ${v}`);
  }
  return v;
}

/** Runs `fn` with the kernels on `threads` workers (when more than 1), stopping them after. */
export async function withThreads<T>(
  threads: number | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  if (threads === undefined || threads <= 1) return await fn();
  await configureKernels({ threads });
  try {
    return await fn();
  } finally {
    await shutdownKernels();
  }
}

/**
 * `-` as a file: an input `-` is read from stdin into a temporary file, an
 * output `-` is written to a temporary file (named with `ext` so the format
 * follows) and copied to stdout afterwards. `fn` gets the real paths.
 */
export async function withStdio<T>(
  input: string | undefined,
  output: string | undefined,
  ext: string,
  fn: (input: string | undefined, output: string | undefined) => Promise<T>,
): Promise<T> {
  if (input !== "-" && output !== "-") return await fn(input, output);
  const dir = await Deno.makeTempDir({ prefix: "modelhost-stdio-" });
  try {
    let inPath = input;
    if (input === "-") {
      inPath = `${dir}/stdin`;
      const f = await Deno.open(inPath, { write: true, createNew: true });
      await Deno.stdin.readable.pipeTo(f.writable);
    }
    const outPath = output === "-" ? `${dir}/stdout${ext}` : output;
    const result = await fn(inPath, outPath);
    if (output === "-") {
      const f = await Deno.open(outPath!);
      await f.readable.pipeTo(Deno.stdout.writable, { preventClose: true });
    }
    return result;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
