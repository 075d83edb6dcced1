// What request handlers share: the model folder, the cache, the limits, the
// metrics, and the per-request context.

import type { ModelCache } from "./_cache.ts";
import type { Limiter } from "./_limiter.ts";
import type { Metrics } from "./_metrics.ts";
import type { ModelFolder } from "./_model_folder.ts";

/** Writes one structured log record (`LogEntry` in server.ts). */
export type Log = (
  level: "info" | "warn" | "error",
  msg: string,
  fields?: Record<string, unknown>,
) => void;

/** The server's parts, as handlers see them. */
export interface ServerParts {
  /** Models on disk. */
  folder: ModelFolder;
  /** Models in memory. */
  cache: ModelCache;
  /** Concurrent generations. */
  generations: Limiter;
  /** Counters and histograms. */
  metrics: Metrics;
  /** Lets other tasks (I/O, timers) run between generated tokens. */
  yieldNow(): Promise<void>;
  /** A fresh sampling seed for requests that give none. */
  nextSeed(): number;
  /** Cap on tokens generated per request. */
  maxTokens: number;
  /** Cap on JSON request bodies, bytes. */
  maxBodyBytes: number;
  /** Cap on model uploads, bytes. */
  maxUploadBytes: number;
  /** Bearer token that uploads and deletions need, when set. */
  token: string | undefined;
  /** The server's log. */
  log: Log;
  /** The package version. */
  version: string;
}

/** One request, as handlers see it. */
export interface RequestContext {
  /** Request id (echoed in `x-request-id`). */
  id: string;
  /** Aborts on timeout, client disconnect or server shutdown; the reason is the error to answer with. */
  signal: AbortSignal;
  /** Aborts the request's work (a streaming client went away). */
  abort(reason: unknown): void;
  /** `performance.now()` when the request arrived. */
  started: number;
  /** Extra fields for the request's log line. */
  log: Record<string, unknown>;
  /**
   * Set by handlers that stream: settles when the stream ends, which is
   * when the request counts as finished (log line, timeout cleared).
   */
  finished?: Promise<void>;
}
