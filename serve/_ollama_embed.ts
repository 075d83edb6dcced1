// Embeddings in the Ollama routes, /api/embed and /api/embeddings, and the
// pieces the OpenAI route /v1/embeddings shares with them: which model
// answers (a language model pools its last hidden states, an encoder or a
// sentence-transformers folder its own way), inputs tokenized off the event
// loop, and Matryoshka shortening.

import { embed } from "../models/embed.ts";
import { embedSentences } from "../models/sentence.ts";
import type { LoadedEncoder, LoadedLlm } from "./_cache.ts";
import type { RequestContext, ServerParts } from "./_context.ts";
import { HttpError, jsonResponse, readJsonObject } from "./_http.ts";
import type { ModelVersion } from "./_model_info.ts";
import { offloadEncode } from "./_offload_encode.ts";
import { isInt, loadLlm, nanos, resolveModel, unloadAfter } from "./_ollama.ts";
import type { Route } from "./_router.ts";
import type { Transformer } from "../models/transformer.ts";

/** Loads a model that answers embeddings: a language model or an encoder (400 for others). */
export async function loadEmbedder(
  parts: ServerParts,
  ctx: RequestContext,
  model: unknown,
): Promise<
  { entry: ModelVersion; loaded: LoadedLlm | LoadedEncoder; loadMs: number }
> {
  const entry = await resolveModel(parts, model);
  if (entry.kind !== "encoder") return loadLlm(parts, ctx, model);
  ctx.log.model = entry.name;
  ctx.log.version = entry.version;
  const t0 = performance.now();
  const { loaded } = await parts.cache.get(entry);
  return {
    entry,
    loaded: loaded as LoadedEncoder,
    loadMs: performance.now() - t0,
  };
}

/**
 * Embeds inputs with a loaded model (an encoder pools as its
 * sentence-transformers configuration says; a language model averages its
 * last hidden states); 400 for inputs it cannot take.
 */
export async function embedInputs(
  loaded: LoadedLlm | LoadedEncoder | Transformer,
  inputs: (string | number[])[],
  options: { normalize: boolean; truncate: boolean },
): Promise<{ embeddings: Float32Array[]; promptTokens: number }> {
  if ("kind" in loaded && loaded.kind === "encoder") {
    return embedInputsNow(loaded, inputs, options);
  }
  const tok = ("kind" in loaded ? loaded.model : loaded).tokenizer;
  const prefetch = tok && !("kind" in loaded && loaded.pipeline)
    ? inputs.filter((x): x is string => typeof x === "string").map((text) => ({
      text,
      options: { addSpecial: false, addBos: tok.addBos },
    }))
    : [];
  return await offloadEncode(
    tok,
    () => embedInputsNow(loaded, inputs, options),
    prefetch,
  );
}

function embedInputsNow(
  loaded: LoadedLlm | LoadedEncoder | Transformer,
  inputs: (string | number[])[],
  options: { normalize: boolean; truncate: boolean },
): { embeddings: Float32Array[]; promptTokens: number } {
  try {
    if ("kind" in loaded && loaded.kind === "encoder") {
      const { encoder, pipeline } = loaded.model;
      return embedSentences(encoder, pipeline, inputs, {
        truncate: options.truncate,
        normalize: options.normalize && pipeline.normalize,
      });
    }
    if ("kind" in loaded && loaded.pipeline) {
      return embedSentences(loaded.model, loaded.pipeline, inputs, {
        truncate: options.truncate,
        normalize: options.normalize && loaded.pipeline.normalize,
      });
    }
    const model = "kind" in loaded ? loaded.model : loaded;
    return embed(model, inputs, options);
  } catch (e) {
    if (e instanceof RangeError || e instanceof TypeError) {
      throw new HttpError(400, e.message);
    }
    throw e;
  }
}

/** Keeps the first `n` values of each vector and scales them back to unit length. */
export function shorten(v: Float32Array, n: number | undefined): Float32Array {
  if (n === undefined || n >= v.length) return v;
  const out = v.slice(0, n);
  let s = 0;
  for (const x of out) s += x * x;
  const norm = Math.sqrt(s);
  if (norm > 0) { for (let i = 0; i < n; i++) out[i] /= norm; }
  return out;
}

/** `POST /api/embed`: `input` (text or a list) → normalized vectors. */
async function handleEmbed(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  const body = await readJsonObject(req, parts.maxBodyBytes);
  const input = body.input ?? [];
  const list = typeof input === "string" ? [input] : input;
  if (!Array.isArray(list) || !list.every((x) => typeof x === "string")) {
    throw new HttpError(400, '"input" must be a string or a list of strings');
  }
  const dims = body.dimensions;
  if (dims !== undefined && (!isInt(dims) || dims < 1)) {
    throw new HttpError(400, '"dimensions" must be a positive integer');
  }
  const { entry, loaded, loadMs } = await loadEmbedder(parts, ctx, body.model);
  const t0 = performance.now();
  const r = list.length === 0
    ? { embeddings: [], promptTokens: 0 }
    : await embedInputs(loaded, list as string[], {
      normalize: true,
      truncate: body.truncate !== false,
    });
  ctx.log.prompt_tokens = r.promptTokens;
  loaded.lastUsed = Date.now();
  if (unloadAfter(body.keep_alive)) parts.cache.evictPath(entry.path);
  return jsonResponse({
    model: String(body.model),
    embeddings: r.embeddings.map((v) =>
      Array.from(shorten(v, dims as number | undefined))
    ),
    total_duration: nanos(performance.now() - ctx.started),
    load_duration: nanos(loadMs),
    prompt_eval_count: r.promptTokens,
    prompt_eval_duration: nanos(performance.now() - t0),
  });
}

/** `POST /api/embeddings` (the older API): `prompt` → one vector, not normalized. */
async function handleEmbeddings(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  const body = await readJsonObject(req, parts.maxBodyBytes);
  const prompt = body.prompt ?? "";
  if (typeof prompt !== "string") {
    throw new HttpError(400, '"prompt" must be a string');
  }
  const { loaded } = await loadEmbedder(parts, ctx, body.model);
  if (prompt === "") return jsonResponse({ embedding: [] });
  const r = await embedInputs(loaded, [prompt], {
    normalize: false,
    truncate: true,
  });
  ctx.log.prompt_tokens = r.promptTokens;
  loaded.lastUsed = Date.now();
  return jsonResponse({ embedding: Array.from(r.embeddings[0]) });
}

/** The Ollama embedding routes: /api/embed and the older /api/embeddings. */
export function ollamaEmbedRoutes(parts: ServerParts): Route[] {
  return [
    {
      pattern: "/api/embed",
      methods: { POST: ({ req, ctx }) => handleEmbed(req, parts, ctx) },
    },
    {
      pattern: "/api/embeddings",
      methods: { POST: ({ req, ctx }) => handleEmbeddings(req, parts, ctx) },
    },
  ];
}
