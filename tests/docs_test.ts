// Every exported function, class and constant of every public entry point
// carries a runnable @example (deno doc --lint checks that JSDoc exists; this
// checks the examples do), that examples assert for real, and that the
// relative links of the Markdown pages reach their files and headings.

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

// GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes,
// a -1, -2 … suffix on repeats.
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = !fenced && line.match(/^#{1,6}\s+(.*?)\s*#*\s*$/);
    if (!m) continue;
    const base = m[1].toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

Deno.test("docs: every relative link in README.md, DEVELOPERS.md and docs/ reaches a file (and its heading)", async () => {
  const pages = ["README.md", "DEVELOPERS.md", "tests/vectors/gen/README.md"];
  const walk = async (dir: string): Promise<void> => {
    for await (const e of Deno.readDir(`${REPO_ROOT}/${dir}`)) {
      if (e.isDirectory) await walk(`${dir}/${e.name}`);
      else if (e.name.endsWith(".md")) pages.push(`${dir}/${e.name}`);
    }
  };
  await walk("docs");
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages) {
    const text = await Deno.readTextFile(`${REPO_ROOT}/${page}`);
    // Links outside code: drop fenced blocks and inline code first.
    const prose = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "")
      .replace(/`[^`\n]*`/g, "");
    for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      checked++;
      const [path, hash] = target.split("#");
      const dir = page.includes("/")
        ? page.slice(0, page.lastIndexOf("/"))
        : "";
      const file = path === "" ? page : new URL(
        path,
        `file:///${dir ? dir + "/" : ""}`,
      ).pathname.slice(1);
      let body: string;
      try {
        const st = await Deno.stat(`${REPO_ROOT}/${file}`);
        body = st.isFile ? await Deno.readTextFile(`${REPO_ROOT}/${file}`) : "";
      } catch {
        broken.push(`${page}: ${target} (no such file)`);
        continue;
      }
      if (hash && !anchors(body).has(hash)) {
        broken.push(`${page}: ${target} (no heading #${hash} in ${file})`);
      }
    }
  }
  assertEquals(broken, []);
  assertEquals(checked > 50, true, `only ${checked} links found`);
});
