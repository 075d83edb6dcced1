// The layout rules of DEVELOPERS.md's "Where things live" that a tree walk
// can check: source files stay short enough to read (generated files
// excepted), and formats/ holds one folder per format with nothing private
// loose at its top level.

import { assert, assertEquals } from "@std/assert";
import { join, relative } from "@std/path";
import { REPO_ROOT } from "./_helpers/fixtures.ts";

/** Longest hand-written source file, in lines (the structure issue's "~800"). */
const MAX_SOURCE_LINES = 850;

/** Written by tools, not by hand: exempt from the length rule. */
const GENERATED = [
  "kernels/wasm/_module_bytes.ts",
  "core/quants/_k_wasm_bytes.ts",
  "core/quants/_iq_grids.ts",
];

const SKIP_DIRS = new Set([
  ".git",
  ".deno",
  "node_modules",
  "vectors",
  "dist",
  "testdata",
]);

async function sources(dir: string, out: string[] = []): Promise<string[]> {
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) {
      if (!SKIP_DIRS.has(e.name)) await sources(p, out);
    } else if (e.isFile && /\.(ts|js|mjs)$/.test(e.name)) out.push(p);
  }
  return out;
}

Deno.test("layout: no hand-written source file is longer than ~800 lines", async () => {
  const long: string[] = [];
  for (const path of await sources(REPO_ROOT)) {
    const rel = relative(REPO_ROOT, path).replaceAll("\\", "/");
    if (GENERATED.includes(rel)) continue;
    const lines = (await Deno.readTextFile(path)).split("\n").length;
    if (lines > MAX_SOURCE_LINES) long.push(`${rel}: ${lines} lines`);
  }
  assertEquals(long, [], "split these along their seams");
});

Deno.test("layout: formats/ holds one folder per format and no loose private files", async () => {
  const loose: string[] = [];
  for await (const e of Deno.readDir(join(REPO_ROOT, "formats"))) {
    if (!e.isDirectory) loose.push(e.name);
  }
  assertEquals(loose, []);
  for await (const e of Deno.readDir(join(REPO_ROOT, "formats"))) {
    const face = join(REPO_ROOT, "formats", e.name, "mod.ts");
    assert(
      (await Deno.stat(face).catch(() => undefined))?.isFile,
      `formats/${e.name} has no mod.ts`,
    );
  }
});
