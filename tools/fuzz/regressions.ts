/**
 * Regression files: every input the fuzzer ever failed on, kept under
 * `tests/fuzz/regressions/<target>/<sha256 prefix>.bin` and replayed by
 * `tests/fuzz/fuzz_test.ts`.
 *
 * @module
 */

import { sha256Hex } from "../../formats/safetensors/mod.ts";

/** The folder of the regression files. */
export const REGRESSIONS_DIR: URL = new URL(
  "../../tests/fuzz/regressions/",
  import.meta.url,
);

/**
 * Saves a failing input (once: the name is its hash).
 *
 * @param target The target name.
 * @param input The input.
 * @returns The path written.
 */
export async function saveRegression(
  target: string,
  input: Uint8Array,
): Promise<string> {
  const dir = new URL(`${target}/`, REGRESSIONS_DIR);
  await Deno.mkdir(dir, { recursive: true });
  const url = new URL(`${(await sha256Hex(input)).slice(0, 16)}.bin`, dir);
  await Deno.writeFile(url, input);
  return url.pathname;
}

/** Every saved regression: target name and bytes. */
export async function listRegressions(): Promise<
  { target: string; file: string; input: Uint8Array }[]
> {
  const out: { target: string; file: string; input: Uint8Array }[] = [];
  try {
    for await (const d of Deno.readDir(REGRESSIONS_DIR)) {
      if (!d.isDirectory) continue;
      const dir = new URL(`${d.name}/`, REGRESSIONS_DIR);
      for await (const f of Deno.readDir(dir)) {
        if (!f.isFile || !f.name.endsWith(".bin")) continue;
        out.push({
          target: d.name,
          file: `${d.name}/${f.name}`,
          input: await Deno.readFile(new URL(f.name, dir)),
        });
      }
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  out.sort((a, b) => (a.file < b.file ? -1 : 1));
  return out;
}
