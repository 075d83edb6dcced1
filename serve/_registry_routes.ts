// The model-registry routes under /v1/models: list the folder's models
// and versions, upload and delete them (bearer token when one is set), and
// predict with a stored network through its batcher.

import type { FloatTensor } from "../core/tensor.ts";
import type { Loaded, LoadedNetwork } from "./_cache.ts";
import type { ServerParts } from "./_context.ts";
import {
  checkDeclaredLength,
  HttpError,
  jsonResponse,
  readJsonObject,
  sameSecret,
} from "./_http.ts";
import type { ModelVersion } from "./_model_info.ts";
import type { Route, RouteCall } from "./_router.ts";

/** A version as the registry routes list it (snake_case LLM facts). */
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

/** The network a prediction runs: by id, or the only one. */
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

/** Refuses (401) a request without the bearer token, when one is set. */
function requireToken(req: Request, token: string | undefined): void {
  if (token === undefined) return;
  const auth = req.headers.get("authorization") ?? "";
  const m = auth.match(/^Bearer\s+(.+)$/i);
  if (!m || !sameSecret(m[1], token)) {
    throw new HttpError(
      401,
      m
        ? "Invalid bearer token"
        : "This endpoint needs an Authorization: Bearer token",
      { "www-authenticate": 'Bearer realm="modelhost"' },
    );
  }
}

function loadedPaths(parts: ServerParts): Set<string> {
  return new Set(parts.cache.entries().map((l) => l.entry.path));
}

async function listModel(parts: ServerParts, name: string) {
  const versions = await parts.folder.versions(name);
  const loaded = loadedPaths(parts);
  return {
    name,
    latest: versions[versions.length - 1].version,
    versions: versions.map((v) => versionJson(v, loaded.has(v.path))),
  };
}

/** `POST /v1/models/{name}[/versions/{version}]/predict`. */
async function predict(
  parts: ServerParts,
  { req, ctx, url, params }: RouteCall,
): Promise<Response> {
  const { name, version } = params;
  const body = await readJsonObject(req, parts.maxBodyBytes);
  ctx.log.model = name;
  const entry = await parts.folder.resolve(name, version);
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
  const { loaded } = await parts.cache.get(entry);
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
}

/** `POST /v1/models/{name}[?version=V&format=F]`: the body is the model file. */
async function upload(
  parts: ServerParts,
  { req, ctx, url, params }: RouteCall,
): Promise<Response> {
  const { name } = params;
  requireToken(req, parts.token);
  checkDeclaredLength(req, parts.maxUploadBytes);
  ctx.log.model = name;
  const v = await parts.folder.upload(name, req.body, {
    version: url.searchParams.get("version") ?? undefined,
    format: url.searchParams.get("format") ?? undefined,
    maxBytes: parts.maxUploadBytes,
    signal: ctx.signal,
  });
  ctx.log.version = v.version;
  ctx.log.bytes_in = v.bytes;
  parts.log("info", "model uploaded", {
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
}

/** `DELETE /v1/models/{name}[/versions/{version}]`: one version, or all. */
async function remove(
  parts: ServerParts,
  { req, ctx, params }: RouteCall,
): Promise<Response> {
  const { name, version } = params;
  requireToken(req, parts.token);
  ctx.log.model = name;
  const removed = await parts.folder.remove(name, version);
  for (const r of removed) parts.cache.evictPath(r.path);
  parts.log("info", "model deleted", {
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
}

/** The model-registry routes, answering from the server's parts. */
export function registryRoutes(parts: ServerParts): Route[] {
  return [
    {
      pattern: "/v1/models",
      methods: {
        GET: async () => {
          const out = [];
          for (const k of (await parts.folder.list()).keys()) {
            out.push(await listModel(parts, k));
          }
          return jsonResponse({ models: out });
        },
      },
    },
    {
      pattern: "/v1/models/{name}",
      methods: {
        GET: async ({ params }) =>
          jsonResponse(await listModel(parts, params.name)),
        POST: (call) => upload(parts, call),
        DELETE: (call) => remove(parts, call),
      },
      uploads: ["POST"],
    },
    {
      pattern: "/v1/models/{name}/predict",
      methods: { POST: (call) => predict(parts, call) },
    },
    {
      pattern: "/v1/models/{name}/versions/{version}",
      methods: {
        GET: async ({ params }) => {
          const e = await parts.folder.resolve(params.name, params.version);
          return jsonResponse(versionJson(e, loadedPaths(parts).has(e.path)));
        },
        DELETE: (call) => remove(parts, call),
      },
    },
    {
      pattern: "/v1/models/{name}/versions/{version}/predict",
      methods: { POST: (call) => predict(parts, call) },
    },
  ];
}
