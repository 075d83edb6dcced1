// Runs `deno doc --lint` on every entry point listed in deno.json `exports`,
// so the list cannot drift from what is published, then checks that no
// `@example` of a symbol the package exports imports by a relative path: the
// examples on the package's documentation page must be copyable into a user's
// project, so they import by the package's name (`@modelhost/modelhost/...`).

import denoJson from "../deno.json" with { type: "json" };

const entries = [
  ...new Set(Object.values(denoJson.exports as Record<string, string>)),
];
const { code } = await new Deno.Command(Deno.execPath(), {
  args: ["doc", "--lint", ...entries],
  stdout: "inherit",
  stderr: "inherit",
}).output();
if (code !== 0) Deno.exit(code);

const doc = await new Deno.Command(Deno.execPath(), {
  args: ["doc", "--json", ...entries],
  stdout: "piped",
  stderr: "inherit",
}).output();
if (doc.code !== 0) Deno.exit(doc.code);
const found = relativeExampleImports(
  JSON.parse(new TextDecoder().decode(doc.stdout)),
);
for (const f of found) console.error(`relative import in an @example: ${f}`);
if (found.length > 0) {
  console.error(
    `${found.length} example(s) import by a relative path; import by the package's name instead (e.g. "@modelhost/modelhost/formats/gguf")`,
  );
  Deno.exit(1);
}
console.log(
  `doc examples: no relative imports in the examples of ${entries.length} entry points`,
);

/**
 * Lists `file:line symbol` for every example in a `deno doc --json` tree that
 * imports from `./` or `../`.
 */
export function relativeExampleImports(tree: unknown): string[] {
  const out = new Set<string>();
  const relative = /(?:from\s+|import\s*\(\s*|import\s+)["']\.\.?\//;
  const walk = (node: unknown, where: string): void => {
    if (Array.isArray(node)) {
      for (const n of node) walk(n, where);
      return;
    }
    if (node === null || typeof node !== "object") return;
    const o = node as Record<string, unknown>;
    let here = where;
    const loc = o.location as { filename?: string; line?: number } | undefined;
    if (loc?.filename) {
      const name = typeof o.name === "string" ? ` ${o.name}` : "";
      here = `${loc.filename.replace(/^file:\/\//, "")}:${loc.line}${name}`;
    }
    if (
      o.kind === "example" && typeof o.doc === "string" &&
      relative.test(o.doc)
    ) out.add(here);
    for (const [k, v] of Object.entries(o)) {
      walk(v, k.startsWith("file://") ? k.replace(/^file:\/\//, "") : here);
    }
  };
  walk(tree, "?");
  return [...out];
}
