// `serve`: runs the inference server on a registry folder until SIGINT or
// SIGTERM. The URL goes to stdout (so `--port 0` can be read back); JSON
// request logs go to stderr unless --quiet.

import { serveDefaults, startServer } from "../serve/server.ts";
import { LOCAL_ORIGINS, OLLAMA_ORIGINS } from "../serve/_guard.ts";
import type { Registry } from "../registry.ts";
import { type FlagSpec, parseFlags, UsageError } from "./_args.ts";
import type { Command } from "./_command.ts";

/** The port Ollama listens on, taken with `--ollama`. */
const OLLAMA_PORT = 11434;

/** Flags of `serve`. */
const SERVE_FLAGS: FlagSpec[] = [
  {
    name: "port",
    short: "p",
    type: "number",
    value: "PORT",
    description: "TCP port; 0 picks a free one",
    default: serveDefaults.port,
  },
  {
    name: "host",
    type: "string",
    value: "ADDR",
    description: "Interface to listen on (0.0.0.0 for every one)",
    default: serveDefaults.hostname,
  },
  {
    name: "ollama",
    type: "boolean",
    description:
      "Stand in for Ollama: port 11434 (Ollama's) unless --port says otherwise, Ollama's CORS origins",
  },
  {
    name: "token",
    type: "string",
    value: "T",
    description:
      "Bearer token required to upload and delete models (or MODELHOST_TOKEN)",
  },
  {
    name: "allowed-hosts",
    type: "string",
    value: "H,…",
    description:
      "Host names accepted besides localhost, IP literals and --host (DNS-rebinding protection; * accepts any)",
  },
  {
    name: "allowed-origins",
    type: "string",
    value: "O,…",
    description:
      "Origins browser pages may call from (CORS; * wildcards); default http(s)://localhost|127.0.0.1|[::1] on any port, Ollama's list with --ollama (or OLLAMA_ORIGINS added)",
  },
  {
    name: "ui",
    type: "boolean",
    description: "Serve the web page at /ui (explorer, playground, registry)",
  },
  {
    name: "max-batch",
    type: "number",
    value: "N",
    description: "Most rows in one batched forward pass; 1 turns batching off",
    default: serveDefaults.maxBatch,
  },
  {
    name: "max-wait-ms",
    type: "number",
    value: "MS",
    description: "Longest a prediction waits for others to join its batch",
    default: serveDefaults.maxWaitMs,
  },
  {
    name: "max-body-bytes",
    type: "number",
    value: "N",
    description: "Largest JSON request body (413 above)",
    default: serveDefaults.maxBodyBytes,
  },
  {
    name: "max-upload-bytes",
    type: "number",
    value: "N",
    description: "Largest model upload (413 above)",
    default: serveDefaults.maxUploadBytes,
  },
  {
    name: "timeout-ms",
    type: "number",
    value: "MS",
    description: "Per-request time limit (504 after it)",
    default: serveDefaults.timeoutMs,
  },
  {
    name: "header-timeout-ms",
    type: "number",
    value: "MS",
    description:
      "Time a client has to send a request head (the connection is cut after it)",
    default: serveDefaults.headerTimeoutMs,
  },
  {
    name: "body-idle-timeout-ms",
    type: "number",
    value: "MS",
    description:
      "Longest pause inside a request body (the connection is cut after it)",
    default: serveDefaults.bodyIdleTimeoutMs,
  },
  {
    name: "max-connections",
    type: "number",
    value: "N",
    description: "Client connections at once (503 above)",
    default: serveDefaults.maxConnections,
  },
  {
    name: "max-concurrent-generations",
    type: "number",
    value: "N",
    description:
      "Generations running at once, batched per model (one forward pass per step for all); more wait in a queue",
    default: serveDefaults.maxConcurrentGenerations,
  },
  {
    name: "threads",
    type: "number",
    value: "N",
    description: "Threads the kernels split large matrix products over",
    default: serveDefaults.threads,
  },
  {
    name: "no-blas",
    type: "boolean",
    description:
      "Keep F32 products (encoder embeddings) on the WebAssembly kernels where the system OpenBLAS could run them (it does with --allow-ffi and libopenblas0)",
  },
  {
    name: "prefill-chunk",
    type: "number",
    value: "N",
    description:
      "Most prompt tokens fed per step while other generations run (long prompts go in chunks)",
    default: serveDefaults.prefillChunk,
  },
  {
    name: "max-queued-generations",
    type: "number",
    value: "N",
    description: "Generations waiting at most (503 above)",
    default: serveDefaults.maxQueuedGenerations,
  },
  {
    name: "max-tokens",
    type: "number",
    value: "N",
    description: "Most tokens one request may generate",
    default: serveDefaults.maxTokens,
  },
  {
    name: "cache-bytes",
    type: "number",
    value: "N",
    description: "Memory budget of loaded models (least recently used dropped)",
    default: serveDefaults.cacheBytes,
  },
];

/** Runs `serve DIR …`; resolves with the exit code once the server has stopped. */
async function runServe(
  args: string[],
  reg: Registry,
  quiet: boolean,
  out: (line: string) => void,
): Promise<number> {
  const { flags, positional } = parseFlags(args, SERVE_FLAGS);
  if (positional.length !== 1) {
    throw new UsageError("serve takes one registry folder: serve DIR");
  }
  const num = (name: string) => flags[name] as number;
  const portGiven = args.some((a) =>
    a === "--port" || a.startsWith("--port=") || a === "-p" ||
    /^-p\d/.test(a)
  );
  const port = flags.ollama && !portGiven ? OLLAMA_PORT : num("port");
  const list = (v: unknown) =>
    typeof v === "string"
      ? v.split(",").map((x) => x.trim()).filter((x) => x !== "")
      : [];
  // Ollama's rule: OLLAMA_ORIGINS adds to the defaults; --allowed-origins replaces them.
  const allowedOrigins = flags["allowed-origins"] !== undefined
    ? list(flags["allowed-origins"])
    : flags.ollama
    ? [...OLLAMA_ORIGINS, ...list(Deno.env.get("OLLAMA_ORIGINS"))]
    : [...LOCAL_ORIGINS];
  const stop = new AbortController();
  const server = await startServer({
    dir: positional[0],
    port,
    hostname: flags.host as string,
    allowedHosts: list(flags["allowed-hosts"]),
    allowedOrigins,
    token: (flags.token as string | undefined) ??
      Deno.env.get("MODELHOST_TOKEN"),
    maxBatch: num("max-batch"),
    maxWaitMs: num("max-wait-ms"),
    maxBodyBytes: num("max-body-bytes"),
    maxUploadBytes: num("max-upload-bytes"),
    timeoutMs: num("timeout-ms"),
    headerTimeoutMs: num("header-timeout-ms"),
    bodyIdleTimeoutMs: num("body-idle-timeout-ms"),
    maxConnections: num("max-connections"),
    maxConcurrentGenerations: num("max-concurrent-generations"),
    prefillChunk: num("prefill-chunk"),
    threads: num("threads"),
    blas: flags["no-blas"] !== true,
    maxQueuedGenerations: num("max-queued-generations"),
    maxTokens: num("max-tokens"),
    cacheBytes: num("cache-bytes"),
    registry: reg,
    ui: flags.ui === true,
    log: !quiet,
    signal: stop.signal,
  });
  out(`listening on ${server.url}`);
  if (flags.ui === true) out(`web page at ${server.url}/ui/`);
  const signals: Deno.Signal[] = Deno.build.os === "windows"
    ? ["SIGINT"]
    : ["SIGINT", "SIGTERM"];
  const onSignal = () => stop.abort();
  for (const s of signals) Deno.addSignalListener(s, onSignal);
  try {
    await server.finished;
  } finally {
    for (const s of signals) Deno.removeSignalListener(s, onSignal);
  }
  return 0;
}

/** `modelhost serve DIR`. */
export const serveCommand: Command = {
  name: "serve",
  summary:
    "Serve a folder of models over HTTP (registry, batched predictions, Ollama API, metrics)",
  usage:
    "serve DIR [--port 8080 | --ollama] [--host 127.0.0.1] [--token T] [--max-batch N] [--max-wait-ms N] [limits]",
  flags: () => SERVE_FLAGS,
  run: (args, ctx) => runServe(args, ctx.reg, ctx.quiet, ctx.io.out),
};
