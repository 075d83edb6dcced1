// Every exported function, class and constant of every public entry point
// carries a runnable @example (deno doc --lint checks that JSDoc exists; this
// checks the examples do).

import { assertEquals } from "@std/assert";
import denoJson from "../deno.json" with { type: "json" };
import { REPO_ROOT } from "./_helpers/fixtures.ts";

interface DocTag {
  kind: string;
}
interface DocDecl {
  kind: string;
  location?: { filename?: string };
  jsDoc?: { tags?: DocTag[] };
}
interface DocSymbol {
  name: string;
  declarations?: DocDecl[];
}

Deno.test("docs: every exported function, class and constant has an @example", async () => {
  const entries = [
    ...new Set(Object.values(denoJson.exports as Record<string, string>)),
  ];
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", ...entries],
    cwd: REPO_ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  const doc = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    nodes?: Record<string, { symbols?: DocSymbol[] }>;
  };
  const missing = new Set<string>();
  for (const mod of Object.values(doc.nodes ?? {})) {
    for (const sym of mod.symbols ?? []) {
      for (const d of sym.declarations ?? []) {
        if (!["function", "class", "variable"].includes(d.kind)) continue;
        if (!(d.jsDoc?.tags ?? []).some((t) => t.kind === "example")) {
          missing.add(
            `${sym.name} (${
              d.location?.filename?.replace(
                /^.*?\/(?=[a-z_]+\/[^/]+\.ts$|[a-z_]+\.ts$)/,
                "",
              )
            })`,
          );
        }
      }
    }
  }
  assertEquals([...missing].sort(), []);
});

Deno.test("docs: examples assert with @std/assert (console.assert never fails a doc test)", async () => {
  const offenders: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const e of Deno.readDir(dir)) {
      if (
        e.name.startsWith(".") || e.name === "node_modules" ||
        e.name === "tests"
      ) continue;
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (
        /\.(ts|md)$/.test(e.name) &&
        (await Deno.readTextFile(path)).includes("console.assert(")
      ) {
        offenders.push(path.slice(REPO_ROOT.length + 1));
      }
    }
  };
  await walk(REPO_ROOT);
  assertEquals(offenders, []);
});
