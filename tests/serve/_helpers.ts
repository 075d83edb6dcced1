// Shared pieces of the server tests: the NumPy reference network, model
// files built from it, a server on a temporary folder, folder listings.

import { join } from "@std/path";
import { memoryTensorIndex } from "../../core/model.ts";
import type { NetworkConfig } from "../../core/model.ts";
import { type Tensor, tensorFromF32 } from "../../core/tensor.ts";
import { saveBundle } from "../../formats/bundle/mod.ts";
import { serializeSafetensors } from "../../formats/safetensors/mod.ts";
import { type LogEntry, type Server, startServer } from "../../serve/mod.ts";
import type { ServeOptions } from "../../serve/mod.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";

/** The NumPy reference (tests/vectors/gen/serve_predict.py). */
export interface PredictVectors {
  config: NetworkConfig;
  weights: Record<string, { shape: number[]; data: number[] }>;
  inputs: number[][];
  outputs: number[][];
}

/** Reads tests/vectors/serve_predict.json. */
export async function predictVectors(): Promise<PredictVectors> {
  return JSON.parse(
    await Deno.readTextFile(
      join(REPO_ROOT, "tests/vectors/serve_predict.json"),
    ),
  );
}

/** The reference weights as tensors. */
export function vectorTensors(v: PredictVectors): Tensor[] {
  return Object.entries(v.weights).map(([name, w]) =>
    tensorFromF32(name, Float32Array.from(w.data), w.shape)
  );
}

/** The reference network as a bundle (with provenance). */
export async function bundleBytes(v: PredictVectors): Promise<Uint8Array> {
  const text = await saveBundle([{
    id: "mlp",
    config: v.config,
    tensors: vectorTensors(v),
    metadata: { task: "test" },
  }], { provenance: { git_commit: "0123abc", seed: 7 } });
  return new TextEncoder().encode(text);
}

/** The reference network as SafeTensors with its config in the metadata. */
export function safetensorsBytes(
  v: PredictVectors,
  config: NetworkConfig = v.config,
): Promise<Uint8Array> {
  return serializeSafetensors({
    models: [{
      id: "mlp",
      config,
      metadata: {},
      tensors: memoryTensorIndex(vectorTensors(v)),
    }],
  }, { provenance: { gitCommit: "4567def", datasetSha256: "feed" } });
}

/** A server on a fresh temporary folder, with its log records. */
export interface TestServer {
  server: Server;
  dir: string;
  logs: LogEntry[];
  url: string;
}

/** Runs `fn` with a server on a temporary folder; closes and removes both. */
export async function withServer(
  options: Partial<ServeOptions>,
  fn: (s: TestServer) => Promise<void>,
  setup?: (dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "modelhost-serve-" });
  const logs: LogEntry[] = [];
  try {
    await setup?.(dir);
    const server = await startServer({
      port: 0,
      log: (e) => logs.push(e),
      ...options,
      dir,
    });
    try {
      await fn({ server, dir, logs, url: server.url });
    } finally {
      await server.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Every path under a folder (recursive, sorted) with its size: what a test compares before and after. */
export async function listing(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, rel: string) => {
    for await (const e of Deno.readDir(d)) {
      const p = join(d, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory) {
        out.push(`${r}/`);
        await walk(p, r);
      } else out.push(`${r} ${(await Deno.lstat(p)).size}`);
    }
  };
  await walk(dir, "");
  return out.sort();
}

/** Sends a request and reads the JSON answer (the body is always consumed). */
export async function call(
  url: string,
  init: RequestInit & { json?: unknown } = {},
): Promise<{ status: number; body: Record<string, unknown>; res: Response }> {
  const { json, ...rest } = init;
  const res = await fetch(url, {
    ...rest,
    ...(json !== undefined
      ? { method: rest.method ?? "POST", body: JSON.stringify(json) }
      : {}),
  });
  const text = await res.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text);
  } catch {
    body = { text };
  }
  return { status: res.status, body, res };
}

/** Uploads bytes as a model. */
export function upload(
  url: string,
  name: string,
  bytes: Uint8Array | ReadableStream<Uint8Array>,
  query = "",
  headers: Record<string, string> = {},
): ReturnType<typeof call> {
  return call(`${url}/v1/models/${name}${query}`, {
    method: "POST",
    body: bytes as BodyInit,
    headers,
  });
}
