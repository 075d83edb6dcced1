/**
 * Locates the real-file fixtures (`MODELHOST_FIXTURES`, else
 * `../shared/fixtures` beside the checkout) and registers conformance tests
 * that are skipped, with a visible message, when the folder is absent.
 */

import { fromFileUrl, join, resolve } from "@std/path";

const ROOT = resolve(fromFileUrl(new URL("../..", import.meta.url)));

function locate(): string | undefined {
  const fromEnv = Deno.env.get("MODELHOST_FIXTURES");
  const candidates = fromEnv
    ? [fromEnv]
    : [join(ROOT, "..", "shared", "fixtures")];
  for (const c of candidates) {
    try {
      if (Deno.statSync(c).isDirectory) return resolve(c);
    } catch { /* absent */ }
  }
  return undefined;
}

/** Absolute path of the fixtures folder, or undefined when there is none. */
export const FIXTURES: string | undefined = locate();

let warned = false;

/** Path of a fixture file; only call inside a {@link conformanceTest}. */
export function fixture(...parts: string[]): string {
  if (!FIXTURES) throw new Error("fixtures folder is absent");
  return join(FIXTURES, ...parts);
}

/**
 * Registers a test that needs the fixtures; skipped (and announced once on
 * stderr) when they are absent.
 */
export function conformanceTest(
  name: string,
  fn: (t: Deno.TestContext) => void | Promise<void>,
): void {
  if (!FIXTURES && !warned) {
    warned = true;
    console.error(
      "conformance: fixtures not found (set MODELHOST_FIXTURES or place ../shared/fixtures beside the checkout); skipping conformance tests",
    );
  }
  Deno.test({ name: `conformance: ${name}`, ignore: !FIXTURES, fn });
}

/** The repository root (for tests that run the CLI or read committed vectors). */
export const REPO_ROOT: string = ROOT;
