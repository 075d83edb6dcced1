// The layering rule of core/: no module in core/ imports a file outside it
// (core is the bottom of the stack; formats, kernels, layers and models build
// on it). The module graph comes from `deno info --json`, Deno's own
// resolver, so re-exports, type-only imports and literal dynamic imports all
// count, and imports inside doc comments do not.

import { assert, assertEquals } from "@std/assert";
import { join, toFileUrl } from "@std/path";
import { REPO_ROOT } from "../_helpers/fixtures.ts";

interface Dep {
  specifier: string;
  code?: { specifier: string };
  type?: { specifier: string };
}

interface Module {
  specifier: string;
  dependencies?: Dep[];
}

async function tsFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) out.push(...await tsFiles(p));
    else if (e.isFile && e.name.endsWith(".ts")) out.push(p);
  }
  return out.sort();
}

/**
 * Every import of a module under `<root>/core/` that resolves to a file
 * outside it, as "core/x.ts -> kernels/y.ts", and the core modules seen.
 */
async function upwardImports(
  root: string,
): Promise<{ seen: string[]; bad: string[] }> {
  const files = await tsFiles(join(root, "core"));
  const entry = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    await Deno.writeTextFile(
      entry,
      files.map((f) => `import "${toFileUrl(f).href}";\n`).join(""),
    );
    let config = ["--no-config"];
    try {
      await Deno.stat(join(root, "deno.json"));
      config = ["--config", join(root, "deno.json")];
    } catch { /* no config: plain relative imports only */ }
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", ...config, entry],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(code, 0, new TextDecoder().decode(stderr));
    const graph = JSON.parse(new TextDecoder().decode(stdout));
    const base = toFileUrl(root).href + "/";
    const core = base + "core/";
    const rel = (s: string) => s.startsWith(base) ? s.slice(base.length) : s;
    const seen: string[] = [];
    const bad: string[] = [];
    for (const m of graph.modules as Module[]) {
      if (!m.specifier.startsWith(core)) continue;
      seen.push(rel(m.specifier));
      for (const d of m.dependencies ?? []) {
        for (const to of [d.code?.specifier, d.type?.specifier]) {
          if (to && to.startsWith("file:") && !to.startsWith(core)) {
            bad.push(`${rel(m.specifier)} -> ${rel(to)}`);
          }
        }
      }
    }
    return { seen: seen.sort(), bad: [...new Set(bad)] };
  } finally {
    await Deno.remove(entry);
  }
}

Deno.test("import graph: the check finds an upward import in a made-up tree", async () => {
  const root = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(root, "core", "quants"), { recursive: true });
    await Deno.mkdir(join(root, "kernels"));
    await Deno.writeTextFile(
      join(root, "core", "a.ts"),
      '// import "../kernels/ignored.ts" in a comment is no import\n' +
        'export { b } from "./quants/b.ts";\n',
    );
    await Deno.writeTextFile(
      join(root, "core", "quants", "b.ts"),
      'import type { K } from "../../kernels/k.ts";\n' +
        "export const b: K = 1;\n",
    );
    await Deno.writeTextFile(
      join(root, "kernels", "k.ts"),
      "export type K = number;\n",
    );
    const { seen, bad } = await upwardImports(root);
    assertEquals(seen, ["core/a.ts", "core/quants/b.ts"]);
    assertEquals(bad, ["core/quants/b.ts -> kernels/k.ts"]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("import graph: no module in core/ imports anything outside core/", async () => {
  const { seen, bad } = await upwardImports(REPO_ROOT);
  const files = (await tsFiles(join(REPO_ROOT, "core"))).map((f) =>
    f.slice(REPO_ROOT.length + 1)
  );
  assertEquals(seen, files); // every core file was in the graph
  assert(seen.includes("core/quants/legacy.ts"), seen.join(", "));
  assertEquals(bad, []);
});
