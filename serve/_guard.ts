// Who may talk to the server from where: the `Host` allow-list (a page
// that rebinds its own DNS name to 127.0.0.1 sends its own name as Host,
// so names are refused unless listed), the `Origin` allow-list with CORS
// answers (preflight OPTIONS, Access-Control-* headers), and the rule that
// requests which change or run something (every method but GET, HEAD and
// OPTIONS) are refused from an origin not on the list unless they carry
// the bearer token (a cross-site page cannot set `Authorization` without a
// preflight, which the list refuses).

import { HttpError, sameSecret } from "./_http.ts";

/**
 * Origins a browser page may call the server from by default: pages
 * served from the loopback names, any port (what Ollama allows besides its
 * app schemes).
 *
 * @example
 * ```ts
 * import { LOCAL_ORIGINS } from "@modelhost/modelhost/serve";
 * import { assert } from "@std/assert";
 * assert(LOCAL_ORIGINS.includes("http://localhost:*"));
 * ```
 */
export const LOCAL_ORIGINS: readonly string[] = [
  "http://localhost",
  "https://localhost",
  "http://localhost:*",
  "https://localhost:*",
  "http://127.0.0.1",
  "https://127.0.0.1",
  "http://127.0.0.1:*",
  "https://127.0.0.1:*",
  "http://[::1]",
  "https://[::1]",
  "http://[::1]:*",
  "https://[::1]:*",
];

/**
 * Ollama's default origins (`OLLAMA_ORIGINS` unset): the loopback ones,
 * 0.0.0.0 and desktop-app schemes; what `serve --ollama` allows.
 *
 * @example
 * ```ts
 * import { OLLAMA_ORIGINS } from "@modelhost/modelhost/serve";
 * import { assert } from "@std/assert";
 * assert(OLLAMA_ORIGINS.includes("app://*"));
 * ```
 */
export const OLLAMA_ORIGINS: readonly string[] = [
  ...LOCAL_ORIGINS,
  "http://0.0.0.0",
  "https://0.0.0.0",
  "http://0.0.0.0:*",
  "https://0.0.0.0:*",
  "app://*",
  "file://*",
  "tauri://*",
  "vscode-webview://*",
  "vscode-file://*",
];

/** Methods that only read. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** Methods a preflight may ask for. */
const CORS_METHODS = "GET, POST, PUT, DELETE, OPTIONS, HEAD";
/** Request headers a preflight may ask for. */
const CORS_HEADERS =
  "Authorization, Content-Type, User-Agent, Accept, X-Requested-With, X-Request-Id, OpenAI-Organization, OpenAI-Project, X-Stainless-Arch, X-Stainless-Lang, X-Stainless-OS, X-Stainless-Package-Version, X-Stainless-Retry-Count, X-Stainless-Runtime, X-Stainless-Runtime-Version, X-Stainless-Timeout";
/** Response headers a page may read. */
const CORS_EXPOSE = "X-Request-Id, Location, Retry-After";
/** How long a browser may cache a preflight answer, seconds. */
const PREFLIGHT_MAX_AGE = 600;

/** A compiled allow-list entry: exact text, or a pattern with `*` wildcards. */
function compile(entry: string): (s: string) => boolean {
  const e = entry.trim().toLowerCase();
  if (e === "*") return () => true;
  if (!e.includes("*")) return (s) => s === e;
  const re = new RegExp(
    "^" + e.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\/]/g, "\\$&"))
      .join(".*") +
      "$",
  );
  return (s) => re.test(s);
}

/** Whether a host name is an IP literal (v4, or v6 in brackets). */
function isIpLiteral(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || /^\[[0-9a-f:.]+\]$/.test(host);
}

/** Options of {@link requestGuard}. */
export interface GuardOptions {
  /** The address the server is bound to. */
  hostname: string;
  /** Extra `Host` names allowed (`*` allows any; `*.example.com` patterns). */
  allowedHosts: readonly string[];
  /** Origins allowed to call from a browser (`*` patterns). */
  allowedOrigins: readonly string[];
  /** The bearer token, when one is set. */
  token: string | undefined;
}

/** What the dispatcher runs around each request. */
export interface RequestGuard {
  /**
   * Checks Host and Origin; answers a CORS preflight (returns its
   * response), throws a 403 `HttpError` for a refused request, or returns
   * undefined to go on.
   */
  check(req: Request, url: URL): Response | undefined;
  /** Adds the CORS headers for an allowed origin to a response. */
  decorate(req: Request, res: Response): void;
}

/**
 * Builds the Host/Origin guard. Hosts allowed: `localhost` and
 * `*.localhost`, any IP literal (a rebinding page cannot send one: its Host
 * is its own name), the bound name, and `allowedHosts`. Origins allowed:
 * `allowedOrigins`, and the server's own origin (the page at /ui).
 */
export function requestGuard(o: GuardOptions): RequestGuard {
  const hostRules = [
    "localhost",
    "*.localhost",
    o.hostname.toLowerCase(),
    ...o.allowedHosts,
  ].map(compile);
  const originRules = o.allowedOrigins.map(compile);
  const hostOk = (host: string) =>
    isIpLiteral(host) || hostRules.some((r) => r(host));
  const originOk = (origin: string, url: URL) =>
    origin === url.origin.toLowerCase() || originRules.some((r) => r(origin));
  const hasToken = (req: Request) => {
    if (o.token === undefined) return false;
    const m = (req.headers.get("authorization") ?? "").match(
      /^Bearer\s+(.+)$/i,
    );
    return m !== null && sameSecret(m[1], o.token);
  };

  return {
    check(req, url) {
      const rawHost = req.headers.get("host") ?? url.host;
      const host = rawHost.toLowerCase().replace(/:\d+$/, "");
      if (!hostOk(host)) {
        throw new HttpError(
          403,
          `Host "${rawHost}" is not allowed (DNS-rebinding protection); start the server with --allowed-hosts ${host} to accept it`,
        );
      }
      const origin = req.headers.get("origin")?.toLowerCase();
      const allowed = origin !== undefined && originOk(origin, url);
      if (req.method === "OPTIONS" && origin !== undefined) {
        if (!allowed) {
          throw new HttpError(
            403,
            `Origin ${origin} is not allowed; start the server with --allowed-origins ${origin} to accept it`,
          );
        }
        return new Response(null, {
          status: 204,
          headers: {
            "access-control-allow-origin": origin,
            "access-control-allow-methods": CORS_METHODS,
            "access-control-allow-headers":
              req.headers.get("access-control-request-headers") ??
                CORS_HEADERS,
            "access-control-max-age": String(PREFLIGHT_MAX_AGE),
            vary: "Origin",
          },
        });
      }
      if (SAFE_METHODS.has(req.method) || allowed || hasToken(req)) {
        return undefined;
      }
      const site = req.headers.get("sec-fetch-site");
      if (origin !== undefined || site === "cross-site") {
        throw new HttpError(
          403,
          `${req.method} from origin ${
            origin ?? "(cross-site)"
          } refused: the origin is not allowed (--allowed-origins) and the request carries no bearer token`,
        );
      }
      return undefined;
    },
    decorate(req, res) {
      const origin = req.headers.get("origin")?.toLowerCase();
      if (origin === undefined) return;
      res.headers.append("vary", "Origin");
      let url: URL;
      try {
        url = new URL(req.url);
      } catch {
        return;
      }
      if (!originOk(origin, url)) return;
      res.headers.set("access-control-allow-origin", origin);
      res.headers.set("access-control-expose-headers", CORS_EXPOSE);
    },
  };
}
