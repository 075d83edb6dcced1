/**
 * Builds the web page into `ui/dist/` (static files any web server can
 * serve, and what `modelhost serve --ui` serves at `/ui`): `app.js` (the
 * page), `worker.js` (the library, bundled with `deno bundle` for
 * browsers, minified) and `kernel_worker.js` (the kernels' thread-pool
 * worker), plus `index.html` and `style.css` as they are.
 *
 * Run with `deno task build:ui`; `--check` rebuilds into a temporary folder
 * and exits 1 when `ui/dist/` differs (the files are committed, so that
 * `serve --ui` needs no build step). `--out DIR` writes elsewhere.
 */

import { fromFileUrl, join } from "@std/path";

const ROOT = fromFileUrl(new URL("..", import.meta.url));
const UI = join(ROOT, "ui");
const DIST = join(UI, "dist");

/** The files of ui/dist, in the order they are built. */
export const DIST_FILES = [
  "index.html",
  "style.css",
  "app.js",
  "worker.js",
  "kernel_worker.js",
];

/**
 * The kernels' thread-pool worker: the pool starts it from
 * `new URL("./_worker.ts", import.meta.url)`, a file a bundle does not
 * carry, so it is bundled on its own and the bundle's URL points at it.
 */
const KERNEL_WORKER = join(ROOT, "kernels", "wasm", "_worker.ts");
const KERNEL_WORKER_URL = '"./_worker.ts"';

async function bundle(entry: string, out: string): Promise<void> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--platform",
      "browser",
      "--minify",
      "-o",
      out,
      entry,
    ],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!r.success) {
    throw new Error(
      `deno bundle ${entry} failed:\n${new TextDecoder().decode(r.stderr)}`,
    );
  }
}

/**
 * Builds the page into a folder.
 *
 * @param dir The output folder (created).
 */
export async function buildUi(dir: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  await Deno.copyFile(join(UI, "index.html"), join(dir, "index.html"));
  await Deno.copyFile(join(UI, "style.css"), join(dir, "style.css"));
  await bundle(join(UI, "app.ts"), join(dir, "app.js"));
  await bundle(join(UI, "worker.ts"), join(dir, "worker.js"));
  await bundle(KERNEL_WORKER, join(dir, "kernel_worker.js"));
  const worker = await Deno.readTextFile(join(dir, "worker.js"));
  const uses = worker.split(KERNEL_WORKER_URL).length - 1;
  if (uses !== 1) {
    throw new Error(
      `worker.js names the kernel pool's worker ${uses} times (${KERNEL_WORKER_URL}), expected once: has kernels/wasm/_pool.ts changed how it starts workers?`,
    );
  }
  await Deno.writeTextFile(
    join(dir, "worker.js"),
    worker.replace(KERNEL_WORKER_URL, '"./kernel_worker.js"'),
  );
}

/**
 * The files of `dir` that differ from a fresh build (empty when current).
 *
 * @param dir The folder to compare, `ui/dist` by default.
 * @returns The names that differ or are missing.
 */
export async function staleFiles(dir: string = DIST): Promise<string[]> {
  const tmp = await Deno.makeTempDir({ prefix: "modelhost-ui-" });
  try {
    await buildUi(tmp);
    const stale: string[] = [];
    for (const f of DIST_FILES) {
      const want = await Deno.readFile(join(tmp, f));
      const have = await Deno.readFile(join(dir, f)).catch(() => undefined);
      if (
        !have || have.length !== want.length ||
        have.some((b, i) => b !== want[i])
      ) {
        stale.push(f);
      }
    }
    return stale;
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

if (import.meta.main) {
  if (Deno.args.includes("--check")) {
    const stale = await staleFiles();
    if (stale.length > 0) {
      console.error(
        `ui/dist is stale (${stale.join(", ")}): run \`deno task build:ui\``,
      );
      Deno.exit(1);
    }
    console.log("ui/dist is current");
  } else {
    const i = Deno.args.indexOf("--out");
    const out = i >= 0 ? Deno.args[i + 1] : DIST;
    await buildUi(out);
    for (const f of DIST_FILES) {
      const { size } = await Deno.stat(join(out, f));
      console.log(`${join(out, f)}  ${size} bytes`);
    }
  }
}
