/**
 * An inference server for the models modelhost reads (Deno only): a model
 * registry on disk with versions, uploads and provenance; predictions for
 * networks with adaptive batching; Ollama-compatible generation for
 * Llama-family models; Prometheus metrics and JSON request logs.
 *
 * ```sh
 * deno run -A jsr:@modelhost/modelhost/cli serve ./models --port 8080
 * ```
 *
 * @example
 * ```ts
 * import { startServer } from "@modelhost/modelhost/serve";
 * import { assertEquals } from "@std/assert";
 * const dir = await Deno.makeTempDir();
 * const server = await startServer({ dir, port: 0, log: false });
 * const health = await (await fetch(`${server.url}/healthz`)).json();
 * assertEquals(health, { status: "ok", models: 0, loaded: 0 });
 * await server.close();
 * await Deno.remove(dir);
 * ```
 *
 * @module
 */

export { LOCAL_ORIGINS, OLLAMA_ORIGINS } from "./_guard.ts";
export {
  type LogEntry,
  serveDefaults,
  type ServeOptions,
  type Server,
  startServer,
} from "./server.ts";
