/**
 * The inference server: a model registry on disk, predictions for networks
 * with adaptive batching, Ollama-compatible generation for Llama-family
 * models, Prometheus metrics and JSON request logs, on `Deno.serve`.
 *
 * @module
 */

import denoJson from "../deno.json" with { type: "json" };
import { defaultRegistry } from "../mod.ts";
import type { FloatTensor } from "../core/tensor.ts";
import type { Registry } from "../registry.ts";
import { type Loaded, type LoadedNetwork, ModelCache } from "./_cache.ts";
import type { RequestContext, ServerParts } from "./_context.ts";
import {
  checkDeclaredLength,
  errorResponse,
  HttpError,
  jsonResponse,
  readJsonObject,
  sameSecret,
  statusOf,
} from "./_http.ts";
import { Limiter } from "./_limiter.ts";
import { BATCH_BUCKETS, LATENCY_BUCKETS, Metrics } from "./_metrics.ts";
import {
  handleChat,
  handleGenerate,
  handlePs,
  handleShow,
  handleTags,
} from "./_ollama.ts";
import { ModelFolder } from "./_model_folder.ts";
import type { ModelVersion } from "./_model_info.ts";

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
  /** Generations running at once; more wait in a queue. @default {1} */
  maxConcurrentGenerations?: number;
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
 * import { serveDefaults } from "./server.ts";
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
  maxConcurrentGenerations: 1,
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

function defaultLog(entry: LogEntry): void {
  console.error(JSON.stringify(entry));
}

function versionJson(v: ModelVersion, loaded: boolean) {
  return {
    name: v.name,
    version: v.version,
    file: v.file,
    format: v.format,
    kind: v.kind,
    bytes: v.bytes,
    modified: v.modified?.toISOString() ?? null,
    loaded,
    models: v.models,
    tensors: v.tensors,
    parameters: v.parameters,
    dtypes: v.dtypes,
    provenance: v.provenance,
    metadata: v.metadata,
    ...(v.llm
      ? {
        llm: {
          architecture: v.llm.architecture,
          context_length: v.llm.contextLength,
          embedding_length: v.llm.embeddingLength,
          block_count: v.llm.blockCount,
          vocab_size: v.llm.vocabSize,
        },
      }
      : {}),
    ...(v.error ? { error: v.error } : {}),
  };
}

/** Parses `inputs`: a nested array of numbers, batch first (one row may come bare). */
function parseInputs(raw: unknown, inputSize: number | undefined): FloatTensor {
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new HttpError(
      400,
      '"inputs" must be a non-empty array of rows ([[…], …])',
    );
  }
  const shape: number[] = [];
  let cur: unknown = raw;
  while (Array.isArray(cur)) {
    shape.push(cur.length);
    cur = cur[0];
  }
  const count = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(count);
  let at = 0;
  const walk = (v: unknown, depth: number): void => {
    if (depth === shape.length) {
      if (typeof v !== "number") {
        throw new HttpError(
          400,
          `"inputs" must hold only numbers, found ${JSON.stringify(v)}`,
        );
      }
      data[at++] = v;
      return;
    }
    if (!Array.isArray(v) || v.length !== shape[depth]) {
      throw new HttpError(
        400,
        `"inputs" must be rectangular: shape [${
          shape.join(", ")
        }] expected, a row at depth ${depth} differs`,
      );
    }
    for (const x of v) walk(x, depth + 1);
  };
  walk(raw, 0);
  if (shape.length === 1) shape.unshift(1);
  const features = shape[shape.length - 1];
  if (inputSize !== undefined && features !== inputSize) {
    throw new HttpError(
      400,
      `"inputs" rows have ${features} features; the model takes ${inputSize}`,
    );
  }
  return { data, shape };
}

/** Nests a flat tensor into arrays by its shape. */
function nest(y: FloatTensor): unknown[] {
  const build = (off: number, d: number): unknown[] => {
    const n = y.shape[d];
    if (d === y.shape.length - 1) {
      return Array.from(y.data.subarray(off, off + n));
    }
    const step = y.shape.slice(d + 1).reduce((a, b) => a * b, 1);
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = build(off + i * step, d + 1);
    return out;
  };
  return build(0, 0);
}

function pickNetwork(
  loaded: Loaded,
  id: string | undefined,
  label: string,
): LoadedNetwork {
  if (loaded.kind !== "network") {
    throw new HttpError(
      400,
      `${label} is a language model; use POST /api/generate or /api/chat`,
    );
  }
  const nets = loaded.networks;
  if (id !== undefined) {
    const n = nets.find((x) => x.id === id);
    if (!n) {
      throw new HttpError(
        404,
        `${label} holds no network "${id}" (ids: ${
          nets.map((x) => x.id).join(", ")
        })`,
      );
    }
    return n;
  }
  if (nets.length !== 1) {
    throw new HttpError(
      400,
      `${label} holds ${nets.length} networks (${
        nets.map((x) => x.id).join(", ")
      }); pick one with "id"`,
    );
  }
  return nets[0];
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

interface Route {
  /** Route pattern for metrics and logs (`/v1/models/{name}/predict`). */
  route: string;
  /** Per-method handlers. */
  methods: Record<string, () => Promise<Response>>;
}

/**
 * Starts the server on `Deno.serve`: loads nothing up front (models are
 * loaded, warmed up and cached on first use), scans the registry folder,
 * and listens.
 *
 * | endpoint | what |
 * | --- | --- |
 * | `GET /v1/models`, `GET /v1/models/{name}[/versions/{v}]` | list the registry |
 * | `POST /v1/models/{name}[?version=V&format=F]` | upload a model file (bearer token when set) |
 * | `DELETE /v1/models/{name}[/versions/{v}]` | delete (bearer token when set) |
 * | `POST /v1/models/{name}[/versions/{v}]/predict` | `{"inputs": [[…], …]}` → `{"outputs": …}` |
 * | `POST /api/generate`, `/api/chat`, `/api/show`; `GET /api/tags`, `/api/ps`, `/api/version` | Ollama API |
 * | `GET /metrics`, `GET /healthz` | Prometheus metrics, health |
 *
 * @param options The registry folder, address, limits and logging.
 * @returns The running server; `close()` it when done.
 * @throws {Deno.errors.NotFound} When the folder does not exist.
 * @throws {TypeError} When `dir` is not a folder or an option is out of range.
 *
 * @example
 * ```ts
 * import { startServer } from "./server.ts";
 * import { assertEquals } from "@std/assert";
 * const dir = await Deno.makeTempDir();
 * const server = await startServer({ dir, port: 0, log: false });
 * const res = await fetch(`${server.url}/v1/models`);
 * assertEquals(await res.json(), { models: [] });
 * await server.close();
 * await Deno.remove(dir);
 * ```
 */
export async function startServer(options: ServeOptions): Promise<Server> {
  const o = { ...serveDefaults, ...options };
  for (
    const k of [
      "maxBatch",
      "maxBodyBytes",
      "maxUploadBytes",
      "timeoutMs",
      "uploadTimeoutMs",
      "maxConcurrentGenerations",
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
  const st = await Deno.stat(o.dir);
  if (!st.isDirectory) {
    throw new TypeError(`startServer: ${o.dir} is not a folder`);
  }
  const registry = o.registry ?? defaultRegistry();
  const sink = o.log === false
    ? undefined
    : o.log === true || o.log === undefined
    ? defaultLog
    : o.log;
  const log = (
    level: LogEntry["level"],
    msg: string,
    fields: Record<string, unknown> = {},
  ) => sink?.({ time: new Date().toISOString(), level, msg, ...fields });

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
  const inflight = new Set<AbortController>();
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
  metrics.gaugeFn(
    "modelhost_requests_in_flight",
    "Requests being answered",
    () => [{ labels: {}, value: inflight.size }],
  );

  // Yields to other tasks (I/O, timers) between generated tokens without the
  // clamping of nested timers.
  const channel = new MessageChannel();
  const waiting: (() => void)[] = [];
  channel.port1.onmessage = () => waiting.shift()?.();
  let seed = o.seed;
  const parts: ServerParts = {
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
    maxBodyBytes: o.maxBodyBytes,
    version: denoJson.version,
  };

  const requireToken = (req: Request): void => {
    if (o.token === undefined) return;
    const auth = req.headers.get("authorization") ?? "";
    const m = auth.match(/^Bearer\s+(.+)$/i);
    if (!m || !sameSecret(m[1], o.token)) {
      throw new HttpError(
        401,
        m
          ? "Invalid bearer token"
          : "This endpoint needs an Authorization: Bearer token",
        { "www-authenticate": 'Bearer realm="modelhost"' },
      );
    }
  };

  const loadedPaths = () => new Set(cache.entries().map((l) => l.entry.path));

  const listModel = async (name: string) => {
    const versions = await folder.versions(name);
    const loaded = loadedPaths();
    return {
      name,
      latest: versions[versions.length - 1].version,
      versions: versions.map((v) => versionJson(v, loaded.has(v.path))),
    };
  };

  const predict = async (
    req: Request,
    ctx: RequestContext,
    url: URL,
    name: string,
    version: string | undefined,
  ): Promise<Response> => {
    const body = await readJsonObject(req, o.maxBodyBytes);
    ctx.log.model = name;
    const entry = await folder.resolve(name, version);
    ctx.log.version = entry.version;
    const label = `Model ${name}@${entry.version}`;
    if (entry.kind === "llm") {
      throw new HttpError(
        400,
        `${label} is a language model; use POST /api/generate or /api/chat`,
      );
    }
    const id = typeof body.id === "string"
      ? body.id
      : url.searchParams.get("id") ?? undefined;
    const { loaded } = await cache.get(entry);
    const net = pickNetwork(loaded, id, label);
    const x = parseInputs(body.inputs, net.inputSize);
    ctx.log.rows = x.shape[0];
    let y: FloatTensor;
    try {
      y = await net.batcher.submit(x);
    } catch (e) {
      if (e instanceof TypeError || e instanceof RangeError) {
        throw new HttpError(
          400,
          `${label} cannot take these inputs: ${e.message}`,
        );
      }
      throw e;
    }
    loaded.lastUsed = Date.now();
    return jsonResponse({
      model: name,
      version: entry.version,
      ...(net.id !== name ? { id: net.id } : {}),
      shape: y.shape,
      outputs: nest(y),
    });
  };

  const upload = async (
    req: Request,
    ctx: RequestContext,
    url: URL,
    name: string,
  ): Promise<Response> => {
    requireToken(req);
    checkDeclaredLength(req, o.maxUploadBytes);
    ctx.log.model = name;
    const v = await folder.upload(name, req.body, {
      version: url.searchParams.get("version") ?? undefined,
      format: url.searchParams.get("format") ?? undefined,
      maxBytes: o.maxUploadBytes,
      signal: ctx.signal,
    });
    ctx.log.version = v.version;
    ctx.log.bytes_in = v.bytes;
    log("info", "model uploaded", {
      model: name,
      version: v.version,
      file: v.file,
      format: v.format,
      bytes: v.bytes,
    });
    return jsonResponse(versionJson(v, false), 201, {
      location: `/v1/models/${encodeURIComponent(name)}/versions/${
        encodeURIComponent(v.version)
      }`,
    });
  };

  const remove = async (
    req: Request,
    ctx: RequestContext,
    name: string,
    version?: string,
  ): Promise<Response> => {
    requireToken(req);
    ctx.log.model = name;
    const removed = await folder.remove(name, version);
    for (const r of removed) cache.evictPath(r.path);
    log("info", "model deleted", {
      model: name,
      versions: removed.map((r) => r.version),
    });
    return jsonResponse({
      deleted: removed.map((r) => ({
        name: r.name,
        version: r.version,
        file: r.file,
      })),
    });
  };

  const match = (
    req: Request,
    url: URL,
    ctx: RequestContext,
  ): Route | undefined => {
    let seg: string[];
    try {
      seg = url.pathname.split("/").filter((s) => s !== "").map(
        decodeURIComponent,
      );
    } catch {
      throw new HttpError(400, `Malformed path ${url.pathname}`);
    }
    const [a, b, name, d, v, f] = seg;
    const n = seg.length;
    if (n === 0) {
      return {
        route: "/",
        methods: {
          GET: () => Promise.resolve(new Response("modelhost is running\n")),
          HEAD: () => Promise.resolve(new Response(null)),
        },
      };
    }
    if (n === 1 && a === "healthz") {
      return {
        route: "/healthz",
        methods: {
          GET: async () =>
            jsonResponse({
              status: "ok",
              models: (await folder.list()).size,
              loaded: cache.entries().length,
            }),
        },
      };
    }
    if (n === 1 && a === "metrics") {
      return {
        route: "/metrics",
        methods: {
          GET: () =>
            Promise.resolve(
              new Response(metrics.render(), {
                headers: {
                  "content-type": "text/plain; version=0.0.4; charset=utf-8",
                },
              }),
            ),
        },
      };
    }
    if (a === "v1" && b === "models") {
      if (n === 2) {
        return {
          route: "/v1/models",
          methods: {
            GET: async () => {
              const out = [];
              for (const k of (await folder.list()).keys()) {
                out.push(await listModel(k));
              }
              return jsonResponse({ models: out });
            },
          },
        };
      }
      if (n === 3) {
        return {
          route: "/v1/models/{name}",
          methods: {
            GET: async () => jsonResponse(await listModel(name)),
            POST: () => upload(req, ctx, url, name),
            DELETE: () => remove(req, ctx, name),
          },
        };
      }
      if (n === 4 && d === "predict") {
        return {
          route: "/v1/models/{name}/predict",
          methods: { POST: () => predict(req, ctx, url, name, undefined) },
        };
      }
      if (n === 5 && d === "versions") {
        return {
          route: "/v1/models/{name}/versions/{version}",
          methods: {
            GET: async () => {
              const e = await folder.resolve(name, v);
              return jsonResponse(versionJson(e, loadedPaths().has(e.path)));
            },
            DELETE: () => remove(req, ctx, name, v),
          },
        };
      }
      if (n === 6 && d === "versions" && f === "predict") {
        return {
          route: "/v1/models/{name}/versions/{version}/predict",
          methods: { POST: () => predict(req, ctx, url, name, v) },
        };
      }
      return undefined;
    }
    if (a === "api" && n === 2) {
      const ollama: Record<string, Route["methods"]> = {
        generate: { POST: () => handleGenerate(req, parts, ctx) },
        chat: { POST: () => handleChat(req, parts, ctx) },
        show: { POST: () => handleShow(req, parts, ctx) },
        tags: { GET: () => handleTags(parts) },
        ps: { GET: () => handlePs(parts) },
        version: {
          GET: () => Promise.resolve(jsonResponse({ version: parts.version })),
        },
      };
      if (Object.hasOwn(ollama, b)) {
        return { route: `/api/${b}`, methods: ollama[b] };
      }
    }
    return undefined;
  };

  let closing = false;
  let seq = 0;
  const idBase = Date.now().toString(36);

  const handler = async (
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
    let res: Response;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      if (closing) throw new HttpError(503, "The server is shutting down");
      const r = match(req, url, ctx);
      if (!r) {
        throw new HttpError(
          404,
          `No route for ${req.method} ${url.pathname}`,
        );
      }
      route = r.route;
      const h = r.methods[req.method];
      if (!h) {
        throw new HttpError(
          405,
          `${req.method} is not allowed on ${r.route}; allowed: ${
            Object.keys(r.methods).join(", ")
          }`,
          { allow: Object.keys(r.methods).join(", ") },
        );
      }
      const limit = req.method === "POST" && route === "/v1/models/{name}"
        ? o.uploadTimeoutMs
        : o.timeoutMs;
      timer = setTimeout(
        () =>
          ctl.abort(
            new HttpError(504, `The request timed out after ${limit} ms`),
          ),
        limit,
      );
      res = await raceAbort(h(), ctl.signal);
    } catch (e) {
      res = errorResponse(e);
      const status = statusOf(e);
      ctx.log.error = e instanceof Error ? e.message : String(e);
      if (status >= 500 && !(e instanceof HttpError)) {
        ctx.log.stack = e instanceof Error ? e.stack : undefined;
      }
    }
    res.headers.set("x-request-id", id);
    const status = res.status;
    const done = () => {
      clearTimeout(timer);
      inflight.delete(ctl);
      const seconds = (performance.now() - started) / 1000;
      metrics.inc(
        "modelhost_http_requests_total",
        "HTTP requests answered",
        { method: req.method, route, status: String(status) },
      );
      metrics.observe(
        "modelhost_http_request_duration_seconds",
        "Time from request to the end of the response",
        LATENCY_BUCKETS,
        { route },
        seconds,
      );
      log(status >= 500 ? "error" : "info", "request", {
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

  const httpServer = Deno.serve({
    port: o.port,
    hostname: o.hostname,
    onListen: () => {},
    handler,
  });
  const addr = httpServer.addr as Deno.NetAddr;
  const host = addr.hostname.includes(":")
    ? `[${addr.hostname}]`
    : addr.hostname;
  const url = `http://${host}:${addr.port}`;
  const models = await folder.list();
  log("info", "listening", {
    url,
    dir: o.dir,
    models: models.size,
    token: o.token !== undefined,
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
      closing = true;
      for (const c of inflight) {
        c.abort(new HttpError(503, "The server is shutting down"));
      }
      generations.close();
      cache.close();
      await httpServer.shutdown();
      channel.port1.close();
      channel.port2.close();
      for (const w of waiting.splice(0)) w();
      log("info", "closed", { url });
    })();
    return closed;
  };
  options.signal?.addEventListener("abort", () => close(), { once: true });

  return {
    url,
    hostname: addr.hostname,
    port: addr.port,
    metrics: () => metrics.render(),
    close,
    finished: httpServer.finished.then(() => closed).then(() => {}),
  };
}
