/**
 * Helpers of the page tests: headless Chromium through Playwright
 * (`playwright-core` driving Debian's `chromium`), and a small static
 * server that serves `ui/dist` and model files with HTTP range requests,
 * counting the bytes it sends per file.
 */

import { fromFileUrl, join } from "@std/path";
import type { BrowserContext } from "playwright-core";

/** The repository's `ui/dist`. */
export const DIST: string = fromFileUrl(
  new URL("../../ui/dist", import.meta.url),
);

/** Chromium's path, or undefined (then the page tests skip with a message). */
export const CHROMIUM: string | undefined = (() => {
  for (
    const c of [
      Deno.env.get("CHROMIUM"),
      "/usr/bin/chromium",
      "/usr/bin/chromium-browser",
      "/usr/bin/google-chrome",
    ]
  ) {
    if (!c) continue;
    try {
      if (Deno.statSync(c).isFile) return c;
    } catch { /* absent */ }
  }
  return undefined;
})();

let warned = false;
/** Prints, once, why the page tests skip. */
export function warnSkip(): void {
  if (CHROMIUM || warned) return;
  warned = true;
  console.error(
    "ui page tests: skipped, no Chromium found (install the Debian package chromium or set CHROMIUM)",
  );
}

/** Where screenshots go (ignored by git); `MODELHOST_UI_SHOTS` overrides. */
export const SHOTS: string = Deno.env.get("MODELHOST_UI_SHOTS") ??
  fromFileUrl(new URL("../../.ui-screenshots", import.meta.url));

/** A launched browser with a fresh profile. */
export interface Browser {
  /** The browser context. */
  context: BrowserContext;
  /** Closes the browser and removes the profile. */
  close(): Promise<void>;
}

/**
 * Launches headless Chromium with a fresh user-data folder.
 *
 * @returns The browser.
 */
export async function launch(): Promise<Browser> {
  const { chromium } = await import("playwright-core");
  const profile = await Deno.makeTempDir({ prefix: "modelhost-chromium-" });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    acceptDownloads: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-quic",
    ],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    },
  };
}

/** A file the static server serves. */
export interface Served {
  /** Path on disk. */
  path: string;
  /** Body bytes sent for it so far. */
  sent: number;
  /** Requests for it so far (HEAD included). */
  requests: number;
}

/** The static test server. */
export interface StaticServer {
  /** Base URL, ending in `/`. */
  url: string;
  /** Serves a file at `/files/<name>`; returns its counters. */
  add(name: string, path: string): Served;
  /** Stops it. */
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
};

/**
 * Serves `ui/dist` at `/` and added files at `/files/NAME`, answering
 * `HEAD` and single `Range` requests as a static host does.
 *
 * @param headers Extra headers on every response.
 * @returns The server.
 */
export function staticServer(
  headers: Record<string, string> = {},
): StaticServer {
  const files = new Map<string, Served>();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const path = new URL(req.url).pathname;
      const common = { ...headers, "access-control-allow-origin": "*" };
      if (path.startsWith("/files/")) {
        const f = files.get(decodeURIComponent(path.slice(7)));
        if (!f) {
          return new Response("not found", { status: 404, headers: common });
        }
        return await ranged(req, f, common);
      }
      const name = path === "/" ? "index.html" : path.slice(1);
      const ext = name.slice(name.lastIndexOf("."));
      if (!TYPES[ext] || name.includes("/")) {
        return new Response("not found", { status: 404, headers: common });
      }
      const body = await Deno.readFile(join(DIST, name)).catch(() => undefined);
      if (!body) {
        return new Response("not found", { status: 404, headers: common });
      }
      return new Response(body, {
        headers: { ...common, "content-type": TYPES[ext] },
      });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}/`,
    add(name, path) {
      const f = { path, sent: 0, requests: 0 };
      files.set(name, f);
      return f;
    },
    close: () => server.shutdown(),
  };
}

async function ranged(
  req: Request,
  f: Served,
  headers: Record<string, string>,
): Promise<Response> {
  f.requests++;
  const { size } = await Deno.stat(f.path);
  const base = {
    ...headers,
    "accept-ranges": "bytes",
    "access-control-expose-headers":
      "content-range, content-length, accept-ranges",
    "content-type": "application/octet-stream",
  };
  if (req.method === "HEAD") {
    return new Response(null, {
      headers: { ...base, "content-length": String(size) },
    });
  }
  const m = req.headers.get("range")?.match(/^bytes=(\d+)-(\d*)$/);
  let start = 0, end = size - 1, status = 200;
  if (m) {
    start = Number(m[1]);
    end = m[2] === "" ? size - 1 : Math.min(size - 1, Number(m[2]));
    status = 206;
    if (start > end || start >= size) {
      return new Response(null, {
        status: 416,
        headers: { ...base, "content-range": `bytes */${size}` },
      });
    }
  }
  const length = end - start + 1;
  const file = await Deno.open(f.path);
  try {
    await file.seek(start, Deno.SeekMode.Start);
    const buf = new Uint8Array(length);
    let got = 0;
    while (got < length) {
      const n = await file.read(buf.subarray(got));
      if (n === null) break;
      got += n;
    }
    f.sent += got;
    return new Response(buf.subarray(0, got), {
      status,
      headers: {
        ...base,
        "content-length": String(got),
        ...(status === 206
          ? { "content-range": `bytes ${start}-${end}/${size}` }
          : {}),
      },
    });
  } finally {
    file.close();
  }
}
