/**
 * The inference server: a model registry on disk, predictions for networks
 * with adaptive batching, OpenAI- and Ollama-compatible generation for
 * Llama-family models (continuously batched), Prometheus metrics and JSON
 * request logs, on `Deno.serve`. The routes live one group per file
 * (`_registry_routes.ts`, `_openai.ts`, `_ollama.ts`, `_ollama_models.ts`) and
 * are answered by `_router.ts`; this file holds the options and wires the
 * parts together.
 *
 * @module
 */

import denoJson from "../deno.json" with { type: "json" };
import { defaultRegistry } from "../mod.ts";
import { configureKernels, shutdownKernels } from "../kernels/fast/runtime.ts";
import { useSystemBlas } from "../io/blas.ts";
import type { Registry } from "../registry.ts";
import { ModelCache } from "./_cache.ts";
import type { Log, ServerParts } from "./_context.ts";
import {
  BODY_IDLE_TIMEOUT_MS,
  type Front,
  HEADER_TIMEOUT_MS,
  MAX_CONNECTIONS,
  MAX_HEADER_BYTES,
  PEER_HEADER,
  startFront,
} from "./_front.ts";
import { LOCAL_ORIGINS, requestGuard } from "./_guard.ts";
import { jsonResponse } from "./_http.ts";
import { Limiter } from "./_limiter.ts";
import { BATCH_BUCKETS, LATENCY_BUCKETS, Metrics } from "./_metrics.ts";
import { ModelFolder } from "./_model_folder.ts";
import { ollamaRoutes } from "./_ollama.ts";
import { openaiRoutes } from "./_openai.ts";
import { movedRegistryRoutes, registryRoutes } from "./_registry_routes.ts";
import { dispatcher, type Route } from "./_router.ts";
import { uiRoutes } from "./_ui_routes.ts";

/** One structured log record (written as one JSON line). */
export interface LogEntry {
  /** ISO 8601 time. */
  time: string;
  /** `info`, `warn` or `error`. */
  level: "info" | "warn" | "error";
  /** What happened: `request`, `listening`, `model loaded`, … */
  msg: string;
  /** Event-specific fields (`method`, `path`, `status`, `ms`, `model` …). */
  [field: string]: unknown;
}

/** Options of {@link startServer}. */
export interface ServeOptions {
  /** The registry folder (model files and version folders). */
  dir: string;
  /** TCP port; 0 picks a free one. @default {8080} */
  port?: number;
  /** Interface to listen on. @default {"127.0.0.1"} */
  hostname?: string;
  /** Bearer token required to upload and delete models. @default {undefined} (no token) */
  token?: string;
  /**
   * `Host` names accepted besides `localhost`, `*.localhost`, IP literals
   * and `hostname` (DNS-rebinding protection); `*` accepts any, and
   * `*.example.com` patterns match subdomains. @default {[]}
   */
  allowedHosts?: readonly string[];
  /**
   * Origins a browser page may call from (CORS; `*` wildcards), besides
   * the server's own. Requests that change or run something (every method
   * but GET, HEAD, OPTIONS) from another origin are refused with 403
   * unless they carry the token. @default {LOCAL_ORIGINS} (http(s) on
   * localhost, 127.0.0.1 and [::1], any port)
   */
  allowedOrigins?: readonly string[];
  /** Most rows in one batched forward pass; 1 turns batching off. @default {32} */
  maxBatch?: number;
  /** Longest a prediction waits for others to join its batch, ms. @default {2} */
  maxWaitMs?: number;
  /** Largest JSON request body, bytes (413 above). @default {16777216} */
  maxBodyBytes?: number;
  /** Largest model upload, bytes (413 above). @default {8589934592} */
  maxUploadBytes?: number;
  /** Per-request time limit, ms (504 after it; a stream ends with an error line). @default {120000} */
  timeoutMs?: number;
  /** Time limit of an upload, ms. @default {3600000} */
  uploadTimeoutMs?: number;
  /** How long a client has to send a whole request head, ms (the connection is cut after it). @default {10000} */
  headerTimeoutMs?: number;
  /** Longest pause while a request body is still coming in, ms (the connection is cut after it). @default {30000} */
  bodyIdleTimeoutMs?: number;
  /** Most client connections at once (503 above). @default {1024} */
  maxConnections?: number;
  /**
   * Generations running at once, continuously batched per model (each
   * step one forward pass over all of a model's running sequences); more
   * wait in a queue. @default {8}
   */
  maxConcurrentGenerations?: number;
  /**
   * Most prompt tokens a batched step feeds while other sequences
   * generate (a newcomer's prompt is fed in chunks of this size, so it
   * does not stall the others). @default {64}
   */
  prefillChunk?: number;
  /**
   * Threads the kernels use (the calling one included): large matrix
   * products are split across them (`configureKernels`, process-wide).
   * @default {1}
   */
  threads?: number;
  /**
   * Whether F32 matrix products (encoder embeddings, F32 prefill) run on
   * the system OpenBLAS (`useSystemBlas` of io/blas.ts, process-wide, with
   * `threads` BLAS threads) where Deno may load it (`--allow-ffi`) and the
   * library is installed; the WebAssembly kernels run otherwise.
   * `modelhost serve` turns it on unless `--no-blas`. @default {false}
   */
  blas?: boolean;
  /** Generations waiting at most (503 above). @default {64} */
  maxQueuedGenerations?: number;
  /** Most tokens one request may generate. @default {4096} */
  maxTokens?: number;
  /** Memory budget of loaded models, bytes (least recently used dropped first). @default {2147483648} */
  cacheBytes?: number;
  /** How long a scan of the registry folder is reused, ms. @default {1000} */
  rescanMs?: number;
  /** Seed of the first request that gives none (then +1 per request). @default {0} */
  seed?: number;
  /** Format and layer plugins. @default {defaultRegistry()} */
  registry?: Registry;
  /**
   * Serves the web page (model explorer, quantization preview, playground,
   * registry view) at `/ui`, from the build committed in `ui/dist`.
   * @default {false}
   */
  ui?: boolean;
  /**
   * Where log records go: `true` writes JSON lines to stderr, `false`
   * silences them, a function receives each record. @default {true}
   */
  log?: boolean | ((entry: LogEntry) => void);
  /** Closes the server when aborted. */
  signal?: AbortSignal;
}

/**
 * Defaults of {@link ServeOptions}.
 *
 * @example
 * ```ts
 * import { serveDefaults } from "@modelhost/modelhost/serve";
 * import { assertEquals } from "@std/assert";
 * assertEquals(serveDefaults.hostname, "127.0.0.1");
 * ```
 */
export const serveDefaults = {
  port: 8080,
  hostname: "127.0.0.1",
  maxBatch: 32,
  maxWaitMs: 2,
  maxBodyBytes: 16 << 20,
  maxUploadBytes: 8 * 1024 ** 3,
  timeoutMs: 120_000,
  uploadTimeoutMs: 3_600_000,
  headerTimeoutMs: HEADER_TIMEOUT_MS,
  bodyIdleTimeoutMs: BODY_IDLE_TIMEOUT_MS,
  maxConnections: MAX_CONNECTIONS,
  maxConcurrentGenerations: 8,
  prefillChunk: 64,
  threads: 1,
  blas: false,
  maxQueuedGenerations: 64,
  maxTokens: 4096,
  cacheBytes: 2 * 1024 ** 3,
  rescanMs: 1000,
  seed: 0,
} as const satisfies Omit<ServeOptions, "dir">;

/** A running server. */
export interface Server {
  /** Base URL (`http://127.0.0.1:8080`). */
  readonly url: string;
  /** The interface it listens on. */
  readonly hostname: string;
  /** The port it listens on (the one picked, when asked for 0). */
  readonly port: number;
  /** Metrics in Prometheus text format (what `GET /metrics` answers). */
  metrics(): string;
  /** Stops accepting requests, ends running ones, and resolves when all is closed. */
  close(): Promise<void>;
  /** Resolves when the server has closed. */
  readonly finished: Promise<void>;
}

/**
 * Starts the server on `Deno.serve`: loads nothing up front (models are
 * loaded, warmed up and cached on first use), scans the registry folder,
 * and listens.
 *
 * | endpoint | what |
 * | --- | --- |
 * | `GET /registry/models`, `GET /registry/models/{name}[/versions/{v}]` | list the registry |
 * | `POST /registry/models/{name}[?version=V&format=F]` | upload a model file (bearer token when set) |
 * | `DELETE /registry/models/{name}[/versions/{v}]` | delete (bearer token when set) |
 * | `POST /registry/models/{name}[/versions/{v}]/predict` | `{"inputs": [[…], …]}` → `{"outputs": …}` |
 * | `GET /v1/models`; `POST /v1/chat/completions`, `/v1/completions`, `/v1/embeddings` | OpenAI API |
 * | `POST /api/generate`, `/api/chat`, `/api/embed`, `/api/show`, `/api/create`, …; `GET /api/tags`, `/api/ps` | Ollama API |
 * | `GET /metrics`, `GET /healthz` | Prometheus metrics, health |
 * | `GET /ui/` | the web page, with `ui: true` (see docs/ui.md) |
 *
 * @param options The registry folder, address, limits and logging.
 * @returns The running server; `close()` it when done.
 * @throws {Deno.errors.NotFound} When the folder does not exist.
 * @throws {TypeError} When `dir` is not a folder or an option is out of range.
 *
 * @example
 * ```ts
 * import { startServer } from "@modelhost/modelhost/serve";
 * import { assertEquals } from "@std/assert";
 * const dir = await Deno.makeTempDir();
 * const server = await startServer({ dir, port: 0, log: false });
 * const res = await fetch(`${server.url}/registry/models`);
 * assertEquals(await res.json(), { models: [] });
 * await server.close();
 * await Deno.remove(dir);
 * ```
 */
export async function startServer(options: ServeOptions): Promise<Server> {
  const o = withDefaults(options);
  const st = await Deno.stat(o.dir);
  if (!st.isDirectory) {
    throw new TypeError(`startServer: ${o.dir} is not a folder`);
  }
  const log = logTo(o.log);
  if (o.threads > 1) await configureKernels({ threads: o.threads });
  const blas = o.blas ? useSystemBlas({ threads: o.threads }) : undefined;
  const { parts, stop, release } = createParts(o, log);
  const swept = await parts.folder.sweep();
  if (swept.length > 0) {
    log("warn", "removed leftovers of interrupted uploads", { files: swept });
  }
  const requests = dispatcher(
    [
      ...serviceRoutes(parts),
      ...registryRoutes(parts),
      ...movedRegistryRoutes(),
      ...openaiRoutes(parts),
      ...ollamaRoutes(parts),
      ...(o.ui ? uiRoutes() : []),
    ],
    {
      metrics: parts.metrics,
      log,
      timeoutMs: o.timeoutMs,
      uploadTimeoutMs: o.uploadTimeoutMs,
      guard: requestGuard({
        hostname: o.hostname,
        allowedHosts: o.allowedHosts ?? [],
        allowedOrigins: o.allowedOrigins ?? LOCAL_ORIGINS,
        token: o.token,
      }),
    },
  );
  const { httpServer, front, removeSocket } = await listen(
    o,
    requests.handle,
    (status, reason, peer) => {
      parts.metrics.inc(
        "modelhost_connections_refused_total",
        "Connections the front door answered or cut itself",
        { status: String(status) },
      );
      log("warn", "connection refused", { status, reason, remote: peer });
    },
  );
  const addr = front.addr;
  const host = addr.hostname.includes(":")
    ? `[${addr.hostname}]`
    : addr.hostname;
  const url = `http://${host}:${addr.port}`;
  const models = await parts.folder.list();
  log("info", "listening", {
    url,
    dir: o.dir,
    models: models.size,
    token: o.token !== undefined,
    // where F32 products run when `blas` asked for the system BLAS
    ...(blas
      ? { f32: blas.backend?.name ?? `WebAssembly (${blas.note})` }
      : {}),
  });
  if (
    o.token === undefined &&
    !["127.0.0.1", "localhost", "::1"].includes(o.hostname)
  ) {
    log(
      "warn",
      "listening beyond loopback without --token: anyone who reaches it can upload and delete models",
      { hostname: o.hostname },
    );
  }

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      requests.close();
      stop();
      const stopping = front.close(1_000);
      await httpServer.shutdown();
      await stopping;
      await removeSocket();
      release();
      blas?.close();
      if (o.threads > 1) await shutdownKernels();
      log("info", "closed", { url });
    })();
    return closed;
  };
  options.signal?.addEventListener("abort", () => close(), { once: true });

  return {
    url,
    hostname: addr.hostname,
    port: addr.port,
    metrics: () => parts.metrics.render(),
    close,
    finished: httpServer.finished.then(() => closed).then(() => {}),
  };
}

/**
 * Starts `Deno.serve` on a private Unix socket (a loopback port on
 * Windows) and the front door on the asked address (see `_front.ts`: head
 * and body deadlines, early refusals, kept-alive connections). The
 * handler sees the client's address and an `http:` URL, as if it were
 * listening itself.
 */
async function listen(
  o: Resolved,
  handle: (req: Request, info: Deno.ServeHandlerInfo) => Promise<Response>,
  onRefuse: (status: number, reason: string, peer: string) => void,
): Promise<
  {
    httpServer: Deno.HttpServer;
    front: Front;
    removeSocket: () => Promise<void>;
  }
> {
  const handler = (req: Request, info: Deno.ServeHandlerInfo) => {
    const peer = req.headers.get(PEER_HEADER) ?? "unknown";
    const url = req.url.startsWith("http+unix:")
      ? "http:" + req.url.slice("http+unix:".length)
      : req.url;
    const headers = new Headers(req.headers);
    headers.delete(PEER_HEADER);
    const inner = new Request(url, {
      method: req.method,
      headers,
      body: req.body,
    });
    return handle(inner, {
      ...info,
      remoteAddr: { transport: "tcp", hostname: peer, port: 0 },
    });
  };
  const sockDir = Deno.build.os === "windows"
    ? undefined
    : await Deno.makeTempDir({ prefix: `modelhost-http-${Deno.pid}-` });
  if (sockDir) await sweepSockets(sockDir);
  const httpServer = sockDir
    ? Deno.serve({
      transport: "unix",
      path: `${sockDir}/http.sock`,
      onListen: () => {},
      handler,
    })
    : Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      onListen: () => {},
      handler,
    });
  let front: Front;
  try {
    front = startFront({
      hostname: o.hostname,
      port: o.port,
      backend: sockDir ? { transport: "unix", path: `${sockDir}/http.sock` } : {
        hostname: "127.0.0.1",
        port: (httpServer.addr as Deno.NetAddr).port,
      },
      headerTimeoutMs: o.headerTimeoutMs,
      bodyIdleTimeoutMs: o.bodyIdleTimeoutMs,
      maxHeaderBytes: MAX_HEADER_BYTES,
      maxConnections: o.maxConnections,
      maxBodyBytes: Math.max(o.maxBodyBytes, o.maxUploadBytes),
      onRefuse,
    });
  } catch (e) {
    await httpServer.shutdown();
    if (sockDir) await Deno.remove(sockDir, { recursive: true });
    throw e;
  }
  return {
    httpServer,
    front,
    removeSocket: async () => {
      if (sockDir) {
        await Deno.remove(sockDir, { recursive: true }).catch(() => {});
      }
    },
  };
}

/**
 * Removes the socket folders of servers that were killed (their process
 * is gone), beside the new one; Linux only (`/proc`), best effort.
 */
async function sweepSockets(mine: string): Promise<void> {
  const parent = mine.slice(0, mine.lastIndexOf("/"));
  try {
    await Deno.stat("/proc/self");
    for await (const e of Deno.readDir(parent)) {
      const m = e.name.match(/^modelhost-http-(\d+)-/);
      if (!m || !e.isDirectory || `${parent}/${e.name}` === mine) continue;
      const alive = await Deno.stat(`/proc/${m[1]}`).then(
        () => true,
        () => false,
      );
      if (!alive) {
        await Deno.remove(`${parent}/${e.name}`, { recursive: true });
      }
    }
  } catch { /* no /proc, or not ours to remove */ }
}

/** {@link ServeOptions} with every default filled in. */
type Resolved =
  & ServeOptions
  & Required<Pick<ServeOptions, keyof typeof serveDefaults>>;

/** Applies the defaults and checks every limit's range. */
function withDefaults(options: ServeOptions): Resolved {
  const o = { ...serveDefaults, ...options };
  for (
    const k of [
      "maxBatch",
      "maxBodyBytes",
      "maxUploadBytes",
      "timeoutMs",
      "uploadTimeoutMs",
      "headerTimeoutMs",
      "bodyIdleTimeoutMs",
      "maxConnections",
      "maxConcurrentGenerations",
      "prefillChunk",
      "threads",
      "maxTokens",
    ] as const
  ) {
    if (!(Number.isFinite(o[k]) && o[k] >= 1)) {
      throw new TypeError(`startServer: ${k} must be 1 or more, got ${o[k]}`);
    }
  }
  for (
    const k of [
      "maxWaitMs",
      "maxQueuedGenerations",
      "cacheBytes",
      "rescanMs",
      "port",
    ] as const
  ) {
    if (!(Number.isFinite(o[k]) && o[k] >= 0)) {
      throw new TypeError(`startServer: ${k} must be 0 or more, got ${o[k]}`);
    }
  }
  return o;
}

function defaultLog(entry: LogEntry): void {
  console.error(JSON.stringify(entry));
}

/** The log function for the `log` option. */
function logTo(option: ServeOptions["log"]): Log {
  const sink = option === false
    ? undefined
    : option === true || option === undefined
    ? defaultLog
    : option;
  return (level, msg, fields = {}) =>
    sink?.({ time: new Date().toISOString(), level, msg, ...fields });
}

/**
 * Builds what the handlers share: the model folder, the cache of loaded
 * models (its batches and loads counted in the metrics), the generation
 * queue and the gauges. `stop` ends generations and drops loaded models;
 * `release` frees the rest once the HTTP server has shut down.
 */
function createParts(
  o: Resolved,
  log: Log,
): { parts: ServerParts; stop(): void; release(): void } {
  const registry: Registry = o.registry ?? defaultRegistry();
  const metrics = new Metrics();
  const folder = new ModelFolder(o.dir, registry, {
    rescanMs: o.rescanMs,
    warn: (msg, fields) => log("warn", msg, fields),
  });
  const cache = new ModelCache(registry, {
    maxBytes: o.cacheBytes,
    batching: { maxBatch: o.maxBatch, maxWaitMs: o.maxWaitMs },
    onBatch(model, rows, requests, ms) {
      metrics.observe(
        "modelhost_predict_batch_size",
        "Rows per forward pass of a network",
        BATCH_BUCKETS,
        {},
        rows,
      );
      metrics.observe(
        "modelhost_predict_batch_requests",
        "Requests per forward pass of a network",
        BATCH_BUCKETS,
        {},
        requests,
      );
      metrics.observe(
        "modelhost_predict_forward_seconds",
        "Time of one forward pass of a network",
        LATENCY_BUCKETS,
        {},
        ms / 1000,
      );
      metrics.inc(
        "modelhost_predict_rows_total",
        "Rows predicted",
        { model },
        rows,
      );
    },
    onEvent(event, l) {
      const model = `${l.entry.name}@${l.entry.version}`;
      if (event === "load") {
        metrics.inc("modelhost_model_loads_total", "Models loaded", { model });
        metrics.observe(
          "modelhost_model_load_seconds",
          "Time to read, build and warm up a model",
          LATENCY_BUCKETS,
          {},
          (l.loadMs + l.warmupMs) / 1000,
        );
        log("info", "model loaded", {
          model,
          kind: l.kind,
          bytes: l.bytes,
          load_ms: +l.loadMs.toFixed(1),
          warmup_ms: +l.warmupMs.toFixed(1),
        });
      } else {
        metrics.inc("modelhost_model_evictions_total", "Models dropped", {});
        log("info", "model unloaded", { model, bytes: l.bytes });
      }
    },
  });
  const generations = new Limiter(
    o.maxConcurrentGenerations,
    o.maxQueuedGenerations,
  );
  metrics.gaugeFn(
    "modelhost_models_loaded",
    "Models in memory",
    () => [{ labels: {}, value: cache.entries().length }],
  );
  metrics.gaugeFn(
    "modelhost_model_cache_bytes",
    "Bytes of weights in memory",
    () => [{ labels: {}, value: cache.bytes }],
  );
  metrics.gaugeFn(
    "modelhost_generations_active",
    "Generations running",
    () => [{ labels: {}, value: generations.active }],
  );
  metrics.gaugeFn(
    "modelhost_generations_queued",
    "Generations waiting for a slot",
    () => [{ labels: {}, value: generations.queued }],
  );

  // Yields to other tasks (I/O, timers) between generated tokens without the
  // clamping of nested timers.
  const channel = new MessageChannel();
  const waiting: (() => void)[] = [];
  channel.port1.onmessage = () => waiting.shift()?.();
  let seed = o.seed;
  const parts: ServerParts = {
    registry,
    folder,
    cache,
    generations,
    metrics,
    yieldNow: () =>
      new Promise<void>((resolve) => {
        waiting.push(resolve);
        channel.port2.postMessage(null);
      }),
    nextSeed: () => seed++,
    maxTokens: o.maxTokens,
    maxConcurrentGenerations: o.maxConcurrentGenerations,
    prefillChunk: o.prefillChunk,
    maxBodyBytes: o.maxBodyBytes,
    maxUploadBytes: o.maxUploadBytes,
    token: o.token,
    log,
    version: denoJson.version,
  };
  return {
    parts,
    stop() {
      generations.close();
      cache.close();
    },
    release() {
      channel.port1.close();
      channel.port2.close();
      for (const w of waiting.splice(0)) w();
    },
  };
}

/** The server's own routes: `/`, `/healthz` and `/metrics`. */
function serviceRoutes(parts: ServerParts): Route[] {
  return [
    {
      pattern: "/",
      methods: {
        GET: () => Promise.resolve(new Response("modelhost is running\n")),
        HEAD: () => Promise.resolve(new Response(null)),
      },
    },
    {
      pattern: "/healthz",
      methods: {
        GET: async () =>
          jsonResponse({
            status: "ok",
            models: (await parts.folder.list()).size,
            loaded: parts.cache.entries().length,
          }),
      },
    },
    {
      pattern: "/metrics",
      methods: {
        GET: () =>
          Promise.resolve(
            new Response(parts.metrics.render(), {
              headers: {
                "content-type": "text/plain; version=0.0.4; charset=utf-8",
              },
            }),
          ),
      },
    },
  ];
}
