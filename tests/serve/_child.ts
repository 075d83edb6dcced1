// A server as a separate process (`modelhost serve DIR --port 0`), for
// tests that kill it or measure it from outside.

import { assert } from "@std/assert";
import { join } from "@std/path";
import { REPO_ROOT } from "../_helpers/fixtures.ts";

/** Starts `modelhost serve DIR` as a child; resolves with it and its URL. */
export async function spawnServer(
  dir: string,
  extra: string[] = [],
  logs = false,
): Promise<{ child: Deno.ChildProcess; url: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      join(REPO_ROOT, "cli.ts"),
      ...(logs ? [] : ["--quiet"]),
      "serve",
      dir,
      "--port",
      "0",
      ...extra,
    ],
    stdout: "piped",
    stderr: logs ? "piped" : "null",
  }).spawn();
  const out = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let first = "";
  while (!first.includes("\n")) {
    const { done, value } = await out.read();
    if (done) break;
    first += value;
  }
  out.releaseLock();
  child.stdout.cancel().catch(() => {});
  const url = first.match(/^listening on (http:\/\/[^\s]+)\n/)?.[1];
  assert(url, `unexpected stdout: ${first}`);
  return { child, url: url! };
}

/** The resident memory of a process, bytes (Linux; undefined elsewhere). */
export async function rssOf(pid: number): Promise<number | undefined> {
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const kb = status.match(/^VmRSS:\s+(\d+) kB/m)?.[1];
    return kb ? Number(kb) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
