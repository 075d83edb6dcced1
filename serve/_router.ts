// Routes as data, and what happens around every request: a table of path
// patterns with one handler per method, the matcher that picks a route,
// and the request's life (id, time limit, error answers, metrics and one
// JSON log line when it ends).

import type { Log, RequestContext } from "./_context.ts";
import type { RequestGuard } from "./_guard.ts";
import { errorResponse, HttpError, statusOf } from "./_http.ts";
import { LATENCY_BUCKETS, type Metrics } from "./_metrics.ts";

/** Values of a route's `{placeholders}`, decoded. */
export type RouteParams = Record<string, string>;

/** A matched request, as a route handler sees it. */
export interface RouteCall {
  /** The request. */
  req: Request;
  /** Its parsed URL. */
  url: URL;
  /** Its id, signal and log fields. */
  ctx: RequestContext;
  /** The pattern's placeholders (`name`, `version`). */
  params: RouteParams;
}

/** Answers one method of one route. */
export type RouteHandler = (call: RouteCall) => Promise<Response>;

/** One route: a path pattern and its handlers by method. */
export interface Route {
  /**
   * Path pattern, also the route's label in metrics and logs
   * (`/registry/models/{name}/predict`); a `{placeholder}` matches any one
   * segment.
   */
  pattern: string;
  /** Handlers by HTTP method (`GET`, `POST`, …). */
  methods: Record<string, RouteHandler>;
  /** Methods that run under the upload time limit instead of the request one. */
  uploads?: readonly string[];
  /** The error answer of this route (default: `{"error": message}`); OpenAI's routes answer in OpenAI's shape. */
  onError?: (e: unknown) => Response;
}

/**
 * Finds the route for a path: its segments (empty ones dropped) are
 * percent-decoded, then compared with each pattern's, literal by literal.
 * Throws 400 for a path that does not decode.
 */
export function matchRoute(
  routes: readonly Route[],
  pathname: string,
): { route: Route; params: RouteParams } | undefined {
  let seg: string[];
  try {
    seg = pathname.split("/").filter((s) => s !== "").map(decodeURIComponent);
  } catch {
    throw new HttpError(400, `Malformed path ${pathname}`);
  }
  for (const route of routes) {
    const want = route.pattern.split("/").filter((s) => s !== "");
    if (want.length !== seg.length) continue;
    const params: RouteParams = {};
    let ok = true;
    for (let i = 0; i < want.length && ok; i++) {
      const w = want[i];
      if (w.startsWith("{") && w.endsWith("}")) params[w.slice(1, -1)] = seg[i];
      else ok = w === seg[i];
    }
    if (ok) return { route, params };
  }
  return undefined;
}

/** Rejects when the signal aborts (with its reason), else settles as `p`. */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  p.catch(() => {});
  if (signal.aborted) return Promise.reject(signal.reason);
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => {});
  return Promise.race([p, aborted]).finally(() =>
    signal.removeEventListener("abort", onAbort)
  );
}

/** What {@link dispatcher} needs besides its routes. */
export interface DispatchOptions {
  /** Where request counts and durations go. */
  metrics: Metrics;
  /** Where the per-request log line goes. */
  log: Log;
  /** Time limit of a request, ms. */
  timeoutMs: number;
  /** Time limit of a method listed in a route's `uploads`, ms. */
  uploadTimeoutMs: number;
  /** Host and Origin checks, CORS answers. */
  guard?: RequestGuard;
}

/** Answers requests from a route table. */
export interface Dispatcher {
  /** The `Deno.serve` handler. */
  handle(req: Request, info: Deno.ServeHandlerInfo): Promise<Response>;
  /** Answers new requests with 503 and aborts the running ones. */
  close(): void;
}

/**
 * Answers each request from the route table: a request id (the client's
 * `x-request-id` when it is sane), 404/405 for no route or method, the
 * route's time limit (504), errors as JSON, and when the response ends
 * (streams included), the request's metrics and log line.
 */
export function dispatcher(
  routes: readonly Route[],
  o: DispatchOptions,
): Dispatcher {
  const inflight = new Set<AbortController>();
  o.metrics.gaugeFn(
    "modelhost_requests_in_flight",
    "Requests being answered",
    () => [{ labels: {}, value: inflight.size }],
  );
  let closing = false;
  let seq = 0;
  const idBase = Date.now().toString(36);

  const handle = async (
    req: Request,
    info: Deno.ServeHandlerInfo,
  ): Promise<Response> => {
    const started = performance.now();
    const remote = (info.remoteAddr as Deno.NetAddr).hostname;
    const given = req.headers.get("x-request-id");
    const id = given && /^[\w.:-]{1,64}$/.test(given)
      ? given
      : `${idBase}-${(++seq).toString(36)}`;
    const url = new URL(req.url);
    const ctl = new AbortController();
    inflight.add(ctl);
    const ctx: RequestContext = {
      id,
      signal: ctl.signal,
      abort: (reason) => ctl.abort(reason),
      started,
      log: {},
    };
    let route = "unmatched";
    let onError: ((e: unknown) => Response) | undefined;
    let res: Response;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      if (closing) throw new HttpError(503, "The server is shutting down");
      const early = o.guard?.check(req, url);
      if (early) {
        route = "preflight";
        res = early;
      } else {
        const m = matchRoute(routes, url.pathname);
        if (!m) {
          throw new HttpError(
            404,
            `No route for ${req.method} ${url.pathname}`,
          );
        }
        route = m.route.pattern;
        onError = m.route.onError;
        const methods = m.route.methods;
        const h = Object.hasOwn(methods, req.method)
          ? methods[req.method]
          : undefined;
        if (!h) {
          throw new HttpError(
            405,
            `${req.method} is not allowed on ${route}; allowed: ${
              Object.keys(methods).join(", ")
            }`,
            { allow: Object.keys(methods).join(", ") },
          );
        }
        const limit = m.route.uploads?.includes(req.method)
          ? o.uploadTimeoutMs
          : o.timeoutMs;
        timer = setTimeout(
          () =>
            ctl.abort(
              new HttpError(504, `The request timed out after ${limit} ms`),
            ),
          limit,
        );
        res = await raceAbort(
          h({ req, url, ctx, params: m.params }),
          ctl.signal,
        );
      }
    } catch (e) {
      res = onError ? onError(e) : errorResponse(e);
      const status = statusOf(e);
      ctx.log.error = e instanceof Error ? e.message : String(e);
      if (status >= 500 && !(e instanceof HttpError)) {
        ctx.log.stack = e instanceof Error ? e.stack : undefined;
      }
    }
    res.headers.set("x-request-id", id);
    o.guard?.decorate(req, res);
    const status = res.status;
    const done = () => {
      clearTimeout(timer);
      inflight.delete(ctl);
      const seconds = (performance.now() - started) / 1000;
      o.metrics.inc(
        "modelhost_http_requests_total",
        "HTTP requests answered",
        { method: req.method, route, status: String(status) },
      );
      o.metrics.observe(
        "modelhost_http_request_duration_seconds",
        "Time from request to the end of the response",
        LATENCY_BUCKETS,
        { route },
        seconds,
      );
      o.log(status >= 500 ? "error" : "info", "request", {
        id,
        method: req.method,
        path: url.pathname,
        route,
        status,
        ms: +(seconds * 1000).toFixed(2),
        remote,
        ...ctx.log,
      });
    };
    if (ctx.finished) ctx.finished.then(done);
    else done();
    return res;
  };

  return {
    handle,
    close() {
      closing = true;
      for (const c of inflight) {
        c.abort(new HttpError(503, "The server is shutting down"));
      }
    },
  };
}
