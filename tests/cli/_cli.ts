// Runs the CLI in-process and collects what it prints.

import { main } from "../../cli.ts";
import { defaultRegistry } from "../../mod.ts";

/** Exit code and output of one CLI run. */
export interface CliRun {
  code: number;
  out: string;
  err: string;
}

/** Runs `modelhost ARGS` in this process with a fresh default registry. */
export async function runCli(args: string[]): Promise<CliRun> {
  const out: string[] = [], err: string[] = [];
  const code = await main(args, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
  }, defaultRegistry());
  return { code, out: out.join("\n"), err: err.join("\n") };
}
