// The web page at /ui (with `ui: true`, `serve --ui`): the committed build
// in ui/dist (see tools/build_ui.ts), read once beside this module (a file
// in a checkout, an https URL when run from JSR) and kept in memory. Only
// the files of that build are served; the page talks to this server's own
// routes (/registry/models, /v1/*, /api/*, /metrics).

import { HttpError } from "./_http.ts";
import type { Route, RouteCall } from "./_router.ts";

/** The files of the build, and their types. */
const FILES: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "style.css": "text/css; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "worker.js": "text/javascript; charset=utf-8",
  "kernel_worker.js": "text/javascript; charset=utf-8",
};

/**
 * What the page may do: its own scripts and styles, WebAssembly, its
 * worker, and fetches to any origin (models by URL); no framing.
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src * data: blob:",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const DIST = new URL("../ui/dist/", import.meta.url);

async function readDist(name: string): Promise<Uint8Array<ArrayBuffer>> {
  const url = new URL(name, DIST);
  if (url.protocol === "file:") return await Deno.readFile(url);
  const res = await fetch(url);
  if (!res.ok) {
    throw new HttpError(
      502,
      `Cannot fetch the page's ${name}: HTTP ${res.status}`,
    );
  }
  return new Uint8Array(await res.arrayBuffer());
}

async function gzip(
  bytes: Uint8Array<ArrayBuffer>,
): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(
    new CompressionStream("gzip"),
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

interface Stored {
  plain: Uint8Array<ArrayBuffer>;
  gzip: Uint8Array<ArrayBuffer>;
}

/** The `/ui` routes: `/ui` redirects to `/ui/`, which is the page; `/ui/{file}` its files (gzip when the client takes it). */
export function uiRoutes(): Route[] {
  const cache = new Map<string, Promise<Stored>>();
  const file = (name: string, req: Request): Promise<Response> => {
    const type = Object.hasOwn(FILES, name) ? FILES[name] : undefined;
    if (!type) {
      return Promise.reject(
        new HttpError(
          404,
          `No file ${name} in the page (${Object.keys(FILES).join(", ")})`,
        ),
      );
    }
    let stored = cache.get(name);
    if (!stored) {
      stored = readDist(name).then(async (plain) => ({
        plain,
        gzip: await gzip(plain),
      }));
      cache.set(name, stored);
      stored.catch(() => cache.delete(name));
    }
    const zipped = /\bgzip\b/.test(req.headers.get("accept-encoding") ?? "");
    return stored.then((s) =>
      new Response(zipped ? s.gzip : s.plain, {
        headers: {
          "content-type": type,
          vary: "accept-encoding",
          ...(zipped ? { "content-encoding": "gzip" } : {}),
          "cache-control": "no-cache",
          "x-content-type-options": "nosniff",
          "referrer-policy": "no-referrer",
          // Cross-origin isolation: shared memory, so the kernels run on threads.
          "cross-origin-opener-policy": "same-origin",
          "cross-origin-embedder-policy": "require-corp",
          ...(name === "index.html" ? { "content-security-policy": CSP } : {}),
        },
      })
    );
  };
  return [
    {
      pattern: "/ui",
      methods: {
        GET: ({ url, req }: RouteCall) =>
          url.pathname.endsWith("/")
            ? file("index.html", req)
            : Promise.resolve(
              new Response(null, {
                status: 308,
                headers: { location: "/ui/" },
              }),
            ),
      },
    },
    {
      pattern: "/ui/{file}",
      methods: {
        GET: ({ params, req }: RouteCall) => file(params.file, req),
      },
    },
  ];
}
