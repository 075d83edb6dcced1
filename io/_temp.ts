/**
 * Temporary files of atomic writes: named after the writing process, removed
 * on failure, on SIGINT/SIGTERM (where the CLI asks for it) and, when a
 * process died without cleaning up (`kill -9`), by the next write into the
 * same folder.
 *
 * A temporary file is `<target>.<kind>-<host>p<pid>-<random>`: `kind` is
 * `tmp` (one file being written) or `partial` (a finished shard waiting
 * for its siblings); `host` is a short hash of the host name. The sweep
 * removes one when its host is this host and no process `pid` runs here
 * (`/proc/<pid>` is absent), or, for other hosts and platforms without
 * `/proc`, when it was last modified over {@link STALE_FOREIGN_MS} ago.
 * Files of the older, pid-less naming (`.tmp-<time>-<n>`) are removed after
 * the same hour.
 *
 * @module
 */

import { join } from "@std/path";

/** A temporary file of another host (or where liveness cannot be told) is stale after this long. */
export const STALE_FOREIGN_MS = 60 * 60 * 1000;

function hostTag(): string {
  let h = 0x811c9dc5;
  let name = "";
  try {
    name = Deno.hostname();
  } catch {
    name = "";
  }
  for (let i = 0; i < name.length; i++) {
    h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  }
  return h.toString(36);
}

const HOST = hostTag();
const live = new Set<string>();
let counter = 0;

/**
 * A fresh temporary name beside `path`, registered as live until
 * {@link releaseTemp}.
 *
 * @param path The final path.
 * @param kind `tmp` or `partial`.
 * @returns The temporary path.
 */
export function tempPath(
  path: string,
  kind: "tmp" | "partial" = "tmp",
): string {
  const rand = (Date.now().toString(36) + (counter++).toString(36) +
    Math.floor(performance.now() * 1000).toString(36)).slice(-10);
  const p = `${path}.${kind}-${HOST}p${Deno.pid}-${rand}`;
  live.add(p);
  return p;
}

/** Forgets a temporary path (renamed into place or removed). */
export function releaseTemp(path: string): void {
  live.delete(path);
}

/** Removes every live temporary file of this process, synchronously (for signal handlers). */
export function removeLiveTempsSync(): void {
  for (const p of live) {
    try {
      Deno.removeSync(p);
    } catch { /* already gone */ }
  }
  live.clear();
}

let installed = false;

/**
 * Makes SIGINT and SIGTERM remove this process's temporary files before it
 * exits (exit status 130 / 143). Idempotent; for command-line entry points.
 */
export function cleanTempsOnSignals(): void {
  if (installed) return;
  installed = true;
  const signals: [Deno.Signal, number][] = [["SIGINT", 130], ["SIGTERM", 143]];
  for (const [sig, code] of signals) {
    try {
      Deno.addSignalListener(sig, () => {
        removeLiveTempsSync();
        Deno.exit(code);
      });
    } catch { /* the platform has no such signal */ }
  }
}

const NEW_NAME = /\.(?:tmp|partial)-([0-9a-z]+)p(\d+)-[0-9a-z]+$/;
const OLD_NAME = /\.(?:tmp|partial)-[0-9a-z]{6,}-[0-9a-z]+$/;

function processRuns(pid: number): boolean | undefined {
  if (pid === Deno.pid) return true;
  if (Deno.build.os !== "linux") return undefined;
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Removes stale temporary files in a folder (see the module doc for the
 * rule). Never touches the files of a running process of this host.
 *
 * @param dir The folder.
 * @returns The paths removed.
 */
export async function sweepStaleTemps(dir: string): Promise<string[]> {
  const removed: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch {
    return removed;
  }
  const now = Date.now();
  for (const e of entries) {
    if (!e.isFile) continue;
    const m = e.name.match(NEW_NAME);
    const path = join(dir, e.name);
    if (live.has(path)) continue;
    let stale = false;
    const old = async () => {
      try {
        const st = await Deno.stat(path);
        return now - (st.mtime?.getTime() ?? now) > STALE_FOREIGN_MS;
      } catch {
        return false;
      }
    };
    if (m) {
      const runs = m[1] === HOST ? processRuns(Number(m[2])) : undefined;
      stale = runs === undefined ? await old() : !runs;
    } else if (OLD_NAME.test(e.name)) {
      stale = await old();
    }
    if (stale) {
      try {
        await Deno.remove(path);
        removed.push(path);
      } catch { /* raced with another sweep */ }
    }
  }
  return removed;
}
