// What every command shares: the output sinks, the context a command runs
// in, the shape of a command, the flags several commands take, and small
// checks on files and model ids.

import type { Model } from "../core/model.ts";
import type { Registry } from "../registry.ts";
import { type FlagSpec, UsageError } from "./_args.ts";
import type { ProgressOptions } from "./_progress.ts";

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

/** What a command gets. */
export interface CommandContext {
  reg: Registry;
  io: CliIo;
  quiet: boolean;
  verbose: boolean;
  progress: ProgressOptions;
}

/** One command: its name, help, flags and what it does. */
export interface Command {
  /** The word that picks it (`modelhost inspect`). */
  name: string;
  /** One line for the command list. */
  summary: string;
  /** Usage line, after `modelhost `. */
  usage: string;
  /** Flags; may depend on the registry and the raw arguments (convert's target format). */
  flags(reg: Registry, args: string[]): FlagSpec[];
  /** Runs the command; resolves with the exit code. */
  run(args: string[], ctx: CommandContext): Promise<number>;
  /** Extra help text (generated from the registry). */
  more?(reg: Registry): string[];
}

/** `--force`: overwrite an existing output. */
export const FORCE_FLAG: FlagSpec = {
  name: "force",
  short: "f",
  type: "boolean",
  description: "Overwrite an existing output",
};

/** `--id`: pick one model of a file holding several. */
export const ID_FLAG: FlagSpec = {
  name: "id",
  type: "string",
  description: "Model id, for files holding several",
};

/** `--json`: machine-readable output. */
export const JSON_FLAG: FlagSpec = {
  name: "json",
  type: "boolean",
  description: "Machine-readable JSON output",
};

/** Throws a usage error when fewer than `min` positional arguments were given. */
export function needFiles(positional: string[], what: string, min = 1): void {
  if (positional.length < min) throw new UsageError(`missing ${what}`);
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

/** Says so and returns true when `out` exists and `--force` was not given. */
export async function refuseOverwrite(
  ctx: CommandContext,
  out: string,
  force: boolean,
): Promise<boolean> {
  if (!force && await exists(out)) {
    ctx.io.err(`error: ${out} exists; pass --force to overwrite it`);
    return true;
  }
  return false;
}

/** Picks a model by id, or the only one. */
export function pickModel(
  models: Model[],
  id: string | undefined,
  path: string,
): Model {
  if (id !== undefined) {
    const m = models.find((x) => x.id === id);
    if (!m) {
      throw new TypeError(
        `No model "${id}" in ${path}; ids: ${
          models.map((x) => x.id).join(", ")
        }`,
      );
    }
    return m;
  }
  if (models.length > 1) {
    throw new TypeError(
      `${path} holds ${models.length} models (${
        models.map((x) => x.id).join(", ")
      }); pick one with --id`,
    );
  }
  return models[0];
}
