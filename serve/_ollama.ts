// Ollama-compatible routes: /api/generate and /api/chat (NDJSON streaming
// or one JSON object, `format` for structured output), /api/embed and
// /api/embeddings, /api/tags, /api/show, /api/ps, /api/version. Model
// names are `name[:tag]`, the tag being a registry version; the newest
// version of each model is listed as `name:latest` (and answers to its
// version too). Model management (/api/create, /api/copy, /api/delete,
// /api/pull) is in _ollama_models.ts, the embedding routes in
// _ollama_embed.ts.

import type {
  GeneratedToken,
  GenerateOptions,
  GenerateResult,
} from "../models/generate.ts";
import { promptIds } from "../models/generate.ts";
import { offloadEncode } from "./_offload_encode.ts";
import type { Transformer } from "../models/transformer.ts";
import {
  type ChatMessage,
  type ChatTemplate,
  pickChatTemplate,
} from "../tokenizers/chat.ts";
import { jsonConstraint } from "../tokenizers/constraint.ts";
import { renderOllamaTemplate } from "../tokenizers/go_template.ts";
import type { LoadedLlm } from "./_cache.ts";
import type { RequestContext, ServerParts } from "./_context.ts";
import {
  errorText,
  generateAll,
  type GenerationJob,
  runGeneration,
} from "./_generate.ts";
import { HttpError, jsonResponse, readJsonObject } from "./_http.ts";
import type { ModelVersion } from "./_model_info.ts";
import { ollamaModelRoutes } from "./_ollama_models.ts";
import { ollamaEmbedRoutes } from "./_ollama_embed.ts";
import type { Route } from "./_router.ts";

/** Ollama's sampling defaults, used where neither request nor checkpoint decides. */
const OLLAMA_DEFAULTS = {
  temperature: 0.8,
  topK: 40,
  topP: 0.9,
  repeatPenalty: 1.1,
  repeatLastN: 64,
};

/**
 * What `expires_at` reads for a loaded model: models stay loaded until the
 * memory budget needs room (or `keep_alive: 0`), never on a timer, so the
 * latest time RFC 3339 writes with a four-digit year.
 */
export const NEVER_EXPIRES = "9999-12-31T23:59:59Z";

const encoder = new TextEncoder();

/** Splits `name:tag` (the tag is a version; `latest` or none is the newest). */
export function parseOllamaName(
  model: unknown,
): { name: string; version?: string } {
  if (typeof model !== "string" || model === "") {
    throw new HttpError(400, 'The "model" field must be a model name');
  }
  const colon = model.lastIndexOf(":");
  const name = colon >= 0 ? model.slice(0, colon) : model;
  const tag = colon >= 0 ? model.slice(colon + 1) : undefined;
  return { name, version: tag === "latest" ? undefined : tag };
}

function humanCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(2)}K`;
  return String(n);
}

/** The dtype holding most bytes (Ollama's "quantization level"). */
function mainDtype(v: ModelVersion): string {
  let best = "", bytes = -1;
  for (const [d, b] of Object.entries(v.dtypes)) {
    if (b > bytes) [best, bytes] = [d, b];
  }
  return best;
}

function details(v: ModelVersion) {
  const family = v.llm?.architecture ?? v.format;
  return {
    parent_model: v.modelfile?.from ?? "",
    format: v.format === "gguf" ? "gguf" : v.format,
    family,
    families: [family],
    parameter_size: humanCount(v.parameters),
    quantization_level: mainDtype(v),
  };
}

/** An identifier of a registry entry (hash of its file name, size and time; not of its content). */
export async function digestOf(v: ModelVersion): Promise<string> {
  const key = `${v.file}|${v.bytes}|${v.modified?.getTime() ?? 0}`;
  const h = await crypto.subtle.digest("SHA-256", encoder.encode(key));
  return Array.from(new Uint8Array(h), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** The Ollama name of a version: `name:latest` for a model's newest, `name:version` otherwise. */
export function tagOf(v: ModelVersion, newest: boolean): string {
  return `${v.name}:${newest ? "latest" : v.version}`;
}

/** Every language-model version with its Ollama name, one entry per version. */
export async function llmTags(
  parts: ServerParts,
): Promise<{ tag: string; version: ModelVersion }[]> {
  const out: { tag: string; version: ModelVersion }[] = [];
  for (const versions of (await parts.folder.list()).values()) {
    const newest = versions[versions.length - 1];
    for (const v of versions) {
      if (v.kind === "llm") {
        out.push({ tag: tagOf(v, v === newest), version: v });
      }
    }
  }
  return out;
}

/** Resolves an Ollama model name to a registry version (404 with Ollama's message). */
export async function resolveModel(
  parts: ServerParts,
  model: unknown,
): Promise<ModelVersion> {
  const { name, version } = parseOllamaName(model);
  try {
    return await parts.folder.resolve(name, version);
  } catch (e) {
    if (e instanceof HttpError && e.status === 404) {
      throw new HttpError(404, `model "${model}" not found`);
    }
    throw e;
  }
}

/** Resolves an Ollama model name to a loaded Llama-family model. */
export async function loadLlm(
  parts: ServerParts,
  ctx: RequestContext,
  model: unknown,
): Promise<{ entry: ModelVersion; loaded: LoadedLlm; loadMs: number }> {
  const entry = await resolveModel(parts, model);
  ctx.log.model = entry.name;
  ctx.log.version = entry.version;
  if (entry.kind === "invalid") {
    throw new HttpError(
      500,
      `model "${model}" cannot be loaded: ${entry.error ?? "unreadable"}`,
    );
  }
  if (entry.kind !== "llm") {
    throw new HttpError(
      400,
      `"${model}" is a ${entry.kind} model (${entry.format}), not a Llama-family language model; use POST /registry/models/${entry.name}/predict`,
    );
  }
  const t0 = performance.now();
  const { loaded } = await parts.cache.get(entry);
  return {
    entry,
    loaded: loaded as LoadedLlm,
    loadMs: performance.now() - t0,
  };
}

function optional<T>(
  o: Record<string, unknown>,
  key: string,
  check: (v: unknown) => v is T,
  what: string,
): T | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!check(v)) {
    throw new HttpError(
      400,
      `options.${key} must be ${what}, got ${JSON.stringify(v)}`,
    );
  }
  return v;
}

const isNum = (v: unknown): v is number =>
  typeof v === "number" && Number.isFinite(v);
export const isInt = (v: unknown): v is number => Number.isSafeInteger(v);

/** The constraint for Ollama's `format`: `"json"`, a JSON schema, or none. */
export function formatConstraint(
  model: Transformer,
  format: unknown,
): GenerateOptions["constraint"] {
  if (format === undefined || format === null || format === "") return;
  if (
    format !== "json" && (typeof format !== "object" || Array.isArray(format))
  ) {
    throw new HttpError(
      400,
      `"format" must be "json" or a JSON schema object, got ${
        JSON.stringify(format)
      }`,
    );
  }
  if (!model.tokenizer) {
    throw new HttpError(400, "Structured output needs the model's tokenizer");
  }
  try {
    return jsonConstraint(model.tokenizer, format);
  } catch (e) {
    if (e instanceof TypeError) throw new HttpError(400, e.message);
    throw e;
  }
}

/** Turns Ollama `options` (over the Modelfile's parameters) into {@link GenerateOptions}. */
function samplingOptions(
  parts: ServerParts,
  entry: ModelVersion,
  model: Transformer,
  raw: unknown,
  promptLength: number,
): GenerateOptions {
  if (raw !== undefined && raw !== null && typeof raw !== "object") {
    throw new HttpError(400, '"options" must be an object');
  }
  const o = {
    ...entry.modelfile?.parameters,
    ...(raw ?? {}) as Record<string, unknown>,
  };
  const d = model.generationDefaults;
  const temperature = optional(o, "temperature", isNum, "a number") ??
    d.temperature ?? OLLAMA_DEFAULTS.temperature;
  const numCtx = optional(o, "num_ctx", isInt, "an integer");
  const ctxLimit = Math.min(
    numCtx && numCtx > 0 ? numCtx : Infinity,
    model.config.maxPositionEmbeddings,
  );
  if (promptLength >= ctxLimit) {
    throw new HttpError(
      400,
      `The prompt has ${promptLength} tokens; the context holds ${ctxLimit}`,
    );
  }
  const numPredict = optional(o, "num_predict", isInt, "an integer") ?? -1;
  const maxTokens = Math.min(
    numPredict >= 0 ? numPredict : Infinity,
    ctxLimit - promptLength,
    parts.maxTokens,
  );
  const lastN = optional(o, "repeat_last_n", isInt, "an integer") ??
    OLLAMA_DEFAULTS.repeatLastN;
  let stop = o.stop;
  if (typeof stop === "string") stop = [stop];
  if (
    stop !== undefined && stop !== null &&
    !(Array.isArray(stop) && stop.every((s) => typeof s === "string"))
  ) {
    throw new HttpError(
      400,
      "options.stop must be a string or a list of strings",
    );
  }
  return {
    maxTokens,
    temperature,
    greedy: temperature === 0,
    topK: optional(o, "top_k", isInt, "an integer") ?? d.topK ??
      OLLAMA_DEFAULTS.topK,
    topP: optional(o, "top_p", isNum, "a number") ?? d.topP ??
      OLLAMA_DEFAULTS.topP,
    repetitionPenalty: optional(o, "repeat_penalty", isNum, "a number") ??
      d.repetitionPenalty ?? OLLAMA_DEFAULTS.repeatPenalty,
    repetitionWindow: lastN < 0 ? 0 : lastN,
    ...(lastN === 0 ? { repetitionPenalty: 1 } : {}),
    frequencyPenalty: optional(o, "frequency_penalty", isNum, "a number"),
    presencePenalty: optional(o, "presence_penalty", isNum, "a number"),
    seed: optional(o, "seed", isInt, "an integer") ?? parts.nextSeed(),
    stop: (stop as string[] | undefined) ?? [],
  };
}

/** Refuses request fields we cannot honour rather than ignoring them. */
function refuseUnsupported(body: Record<string, unknown>): void {
  if (Array.isArray(body.images) && body.images.length > 0) {
    throw new HttpError(400, "images are not supported by this server");
  }
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    throw new HttpError(400, "tools are not supported by this server");
  }
  if (body.think === true || typeof body.think === "string") {
    throw new HttpError(400, "thinking is not supported by this server");
  }
  if (typeof body.suffix === "string" && body.suffix !== "") {
    throw new HttpError(400, '"suffix" (fill-in-the-middle) is not supported');
  }
}

/** A plain transcript, for models whose checkpoint names no chat format. */
const transcript: ChatTemplate = (messages, options) =>
  messages.map((m) => `${m.role}: ${m.content}\n`).join("") +
  (options?.addGenerationPrompt === false ? "" : "assistant:");

/**
 * The chat template of a request: its own `template` (Go syntax), the
 * Modelfile's `TEMPLATE`, the checkpoint's, or a plain transcript.
 */
export function chatTemplateOf(
  model: Transformer,
  goTemplate?: string,
): ChatTemplate {
  if (goTemplate !== undefined && goTemplate !== "") {
    return (messages) => renderOllamaTemplate(goTemplate, messages);
  }
  try {
    return pickChatTemplate({
      chatTemplate: model.tokenizer?.chatTemplate,
      tokenizer: model.tokenizer,
      family: model.name,
    });
  } catch {
    return transcript;
  }
}

function requestTemplate(
  body: Record<string, unknown>,
  entry: ModelVersion,
): string | undefined {
  if (body.template !== undefined && typeof body.template !== "string") {
    throw new HttpError(400, '"template" must be a string');
  }
  return (body.template as string | undefined) || entry.modelfile?.template;
}

/** Renders messages to ids with the request's template (400 on a template error). */
async function chatIds(
  model: Transformer,
  messages: ChatMessage[],
  template: string | undefined,
): Promise<number[]> {
  try {
    return await offloadEncode(
      model.tokenizer,
      () =>
        promptIds(model, messages, {
          chatTemplate: chatTemplateOf(model, template),
        }),
    );
  } catch (e) {
    // a template that does not parse, or refuses the conversation
    if (e instanceof SyntaxError || e instanceof TypeError) {
      throw new HttpError(400, `template: ${e.message}`);
    }
    throw e;
  }
}

export function nanos(ms: number): number {
  return Math.round(ms * 1e6);
}

function stats(
  ctx: RequestContext,
  loadMs: number,
  r: GenerateResult,
): Record<string, unknown> {
  return {
    done_reason: r.finishReason === "length" ? "length" : "stop",
    total_duration: nanos(performance.now() - ctx.started),
    load_duration: nanos(loadMs),
    prompt_eval_count: r.promptIds.length,
    prompt_eval_duration: nanos(r.prefillMs),
    eval_count: r.ids.length,
    eval_duration: nanos(r.decodeMs),
  };
}

/** Whether `keep_alive` asks to unload the model after the request (0, "0", "0s"). */
export function unloadAfter(keepAlive: unknown): boolean {
  return keepAlive === 0 ||
    (typeof keepAlive === "string" && /^0+(\.0*)?(ms|s|m|h)?$/.test(keepAlive));
}

/**
 * Answers a generation: one JSON object, or NDJSON lines (one per token,
 * then a final line with the statistics). An error after the stream has
 * started is sent as an `{"error": …}` line, as Ollama does.
 */
async function respond(
  job: GenerationJob,
  stream: boolean,
  chunk: (text: string, t: GeneratedToken) => Record<string, unknown>,
  final: (text: string, r: GenerateResult) => Record<string, unknown>,
  loadMs: number,
  collect?: (t: GeneratedToken) => void,
): Promise<Response> {
  const { ctx } = job;
  if (!stream) {
    let text = "";
    const r = await generateAll(job, (t) => {
      text += t.text;
      collect?.(t);
    });
    return jsonResponse({ ...final(text, r), ...stats(ctx, loadMs, r) });
  }
  // Wait for a generation slot before answering 200, so a full queue is a 503.
  const it = runGeneration(job);
  const first = await it.next();
  let finish!: () => void;
  ctx.finished = new Promise((r) => finish = r);
  const body = new ReadableStream<Uint8Array>({
    start: async (controller) => {
      const send = (obj: unknown) => {
        try {
          controller.enqueue(encoder.encode(JSON.stringify(obj) + "\n"));
        } catch { /* the client went away */ }
      };
      try {
        let r = first;
        let streamed = "";
        while (!r.done) {
          collect?.(r.value);
          streamed += r.value.text;
          if (r.value.text !== "") send(chunk(r.value.text, r.value));
          r = await it.next();
        }
        // Text held back until the end (the start of a stop string that
        // never completed, a character cut short) goes in the last line.
        const tail = r.value.text.slice(streamed.length);
        send({ ...final(tail, r.value), ...stats(ctx, loadMs, r.value) });
      } catch (e) {
        ctx.log.error = errorText(e);
        send({ error: errorText(e) });
      } finally {
        try {
          controller.close();
        } catch { /* cancelled */ }
        finish();
      }
    },
    cancel: () => {
      ctx.abort(new HttpError(499, "The client closed the connection"));
    },
  });
  return new Response(body, {
    headers: { "content-type": "application/x-ndjson" },
  });
}

function createdAt(): string {
  return new Date().toISOString();
}

/** Ollama's logprob entries for a token (with `top_logprobs` alternatives). */
function logprobEntry(model: Transformer, t: GeneratedToken) {
  const tok = model.tokenizer!;
  const text = (id: number) =>
    id < tok.vocabSize ? new TextDecoder().decode(tok.tokenBytes(id)) : "";
  return {
    token: text(t.id),
    logprob: t.logprob,
    ...(t.top
      ? {
        top_logprobs: t.top.map((x) => ({
          token: text(x.id),
          logprob: x.logprob,
        })),
      }
      : {}),
  };
}

function topLogprobsOf(body: Record<string, unknown>): number | undefined {
  const n = body.top_logprobs;
  if (n === undefined || n === null) return undefined;
  if (!isInt(n) || n < 0 || n > 20) {
    throw new HttpError(400, '"top_logprobs" must be an integer from 0 to 20');
  }
  return n;
}

/** `POST /api/generate`. */
export async function handleGenerate(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  const body = await readJsonObject(req, parts.maxBodyBytes);
  refuseUnsupported(body);
  const prompt = body.prompt ?? "";
  if (typeof prompt !== "string") {
    throw new HttpError(400, '"prompt" must be a string');
  }
  const context = body.context ?? [];
  if (!Array.isArray(context) || !context.every(isInt)) {
    throw new HttpError(400, '"context" must be a list of token ids');
  }
  const { entry, loaded, loadMs } = await loadLlm(parts, ctx, body.model);
  const system = body.system ?? entry.modelfile?.system ?? "";
  if (typeof system !== "string") {
    throw new HttpError(400, '"system" must be a string');
  }
  const model = loaded.model;
  const name = String(body.model);
  const unload = unloadAfter(body.keep_alive);
  if (prompt === "" && context.length === 0) {
    if (unload) parts.cache.evictPath(entry.path);
    return jsonResponse({
      model: name,
      created_at: createdAt(),
      response: "",
      done: true,
      done_reason: unload ? "unload" : "load",
    });
  }
  if (!model.tokenizer) {
    throw new HttpError(400, `"${name}" has no tokenizer; it cannot take text`);
  }
  const continuing = context.length > 0;
  const template = requestTemplate(body, entry);
  let ids: number[];
  if (
    body.raw === true ||
    (model.tokenizer.chatTemplate === undefined && template === undefined)
  ) {
    const text = body.raw !== true && system
      ? `${system}\n\n${prompt}`
      : prompt;
    ids = await offloadEncode(
      model.tokenizer,
      () => promptIds(model, text, continuing ? { addBos: false } : {}),
    );
  } else {
    const messages: ChatMessage[] = [
      ...(system ? [{ role: "system", content: system }] : []),
      { role: "user", content: prompt },
    ];
    ids = await chatIds(model, messages, template);
    const bos = model.tokenizer.bos;
    if (continuing && bos !== undefined && ids[0] === bos) ids.shift();
  }
  // concat, not spread: spreading 2.4 M ids held the event loop for 0.23 s
  if (context.length > 0) ids = context.concat(ids);
  const options = samplingOptions(
    parts,
    entry,
    model,
    body.options,
    ids.length,
  );
  options.constraint = formatConstraint(model, body.format);
  const wantLogprobs = body.logprobs === true;
  const top = topLogprobsOf(body);
  if (wantLogprobs && top) options.topLogprobs = top;
  const allLogprobs: unknown[] = [];
  return respond(
    { parts, ctx, entry, loaded, ids, options, unload },
    body.stream !== false,
    (text, t) => ({
      model: name,
      created_at: createdAt(),
      response: text,
      done: false,
      ...(wantLogprobs ? { logprobs: [logprobEntry(model, t)] } : {}),
    }),
    (text, r) => ({
      model: name,
      created_at: createdAt(),
      response: text,
      done: true,
      context: [...r.promptIds, ...r.ids],
      ...(wantLogprobs && text !== "" ? { logprobs: allLogprobs } : {}),
    }),
    loadMs,
    wantLogprobs ? (t) => allLogprobs.push(logprobEntry(model, t)) : undefined,
  );
}

function parseMessages(raw: unknown): ChatMessage[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    throw new HttpError(400, '"messages" must be a list of messages');
  }
  return raw.map((m, i) => {
    if (
      !m || typeof m !== "object" || typeof m.role !== "string" ||
      typeof (m.content ?? "") !== "string"
    ) {
      throw new HttpError(
        400,
        `messages[${i}] must be {"role": string, "content": string}`,
      );
    }
    if (Array.isArray(m.images) && m.images.length > 0) {
      throw new HttpError(400, "images are not supported by this server");
    }
    return { role: m.role, content: m.content ?? "" };
  });
}

/** `POST /api/chat`. */
export async function handleChat(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  const body = await readJsonObject(req, parts.maxBodyBytes);
  refuseUnsupported(body);
  let messages = parseMessages(body.messages);
  const { entry, loaded, loadMs } = await loadLlm(parts, ctx, body.model);
  const model = loaded.model;
  const name = String(body.model);
  const unload = unloadAfter(body.keep_alive);
  if (messages.length === 0) {
    if (unload) parts.cache.evictPath(entry.path);
    return jsonResponse({
      model: name,
      created_at: createdAt(),
      message: { role: "assistant", content: "" },
      done: true,
      done_reason: unload ? "unload" : "load",
    });
  }
  if (!model.tokenizer) {
    throw new HttpError(400, `"${name}" has no tokenizer; it cannot chat`);
  }
  const mf = entry.modelfile;
  if (mf) {
    if (mf.system && !messages.some((m) => m.role === "system")) {
      messages = [{ role: "system", content: mf.system }, ...messages];
    }
    if (mf.messages.length > 0) {
      const [sys, rest] = messages[0]?.role === "system"
        ? [[messages[0]], messages.slice(1)]
        : [[], messages];
      messages = [...sys, ...mf.messages, ...rest];
    }
  }
  const ids = await chatIds(model, messages, requestTemplate(body, entry));
  const options = samplingOptions(
    parts,
    entry,
    model,
    body.options,
    ids.length,
  );
  options.constraint = formatConstraint(model, body.format);
  const wantLogprobs = body.logprobs === true;
  const top = topLogprobsOf(body);
  if (wantLogprobs && top) options.topLogprobs = top;
  const allLogprobs: unknown[] = [];
  return respond(
    { parts, ctx, entry, loaded, ids, options, unload },
    body.stream !== false,
    (text, t) => ({
      model: name,
      created_at: createdAt(),
      message: { role: "assistant", content: text },
      done: false,
      ...(wantLogprobs ? { logprobs: [logprobEntry(model, t)] } : {}),
    }),
    (text) => ({
      model: name,
      created_at: createdAt(),
      message: { role: "assistant", content: text },
      done: true,
      ...(wantLogprobs && text !== "" ? { logprobs: allLogprobs } : {}),
    }),
    loadMs,
    wantLogprobs ? (t) => allLogprobs.push(logprobEntry(model, t)) : undefined,
  );
}

async function tagJson(v: ModelVersion, tag: string) {
  return {
    name: tag,
    model: tag,
    modified_at: (v.modified ?? new Date(0)).toISOString(),
    size: v.bytes,
    digest: await digestOf(v),
    details: details(v),
  };
}

/** `GET /api/tags`: every Llama-family version once (a model's newest as `name:latest`). */
export async function handleTags(parts: ServerParts): Promise<Response> {
  const models = [];
  for (const { tag, version } of await llmTags(parts)) {
    models.push(await tagJson(version, tag));
  }
  return jsonResponse({ models });
}

/** `POST /api/show`. */
export async function handleShow(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  const body = await readJsonObject(req, parts.maxBodyBytes);
  const model = body.model ?? body.name;
  const v = await resolveModel(parts, model);
  ctx.log.model = v.name;
  if (v.kind !== "llm" || !v.llm) {
    throw new HttpError(
      400,
      `"${model}" is a ${v.kind} model, not a Llama-family language model`,
    );
  }
  const mf = v.modelfile;
  const parameters = Object.entries(mf?.parameters ?? {}).flatMap(([k, x]) =>
    (Array.isArray(x) ? x : [x]).map((y) =>
      `${k.padEnd(30)} ${typeof y === "string" ? JSON.stringify(y) : y}`
    )
  ).join("\n");
  return jsonResponse({
    license: mf?.license.join("\n") ||
      (typeof v.provenance["general.license"] === "string"
        ? v.provenance["general.license"]
        : ""),
    modelfile: `# served by modelhost from ${v.file}\nFROM ${v.file}\n`,
    parameters,
    template: mf?.template ?? v.llm.chatTemplate ?? "{{ .Prompt }}",
    system: mf?.system ?? "",
    details: details(v),
    model_info: v.llm.modelInfo,
    capabilities: ["completion"],
    modified_at: (v.modified ?? new Date(0)).toISOString(),
  });
}

/** `GET /api/ps`: the Llama-family models in memory. */
export async function handlePs(parts: ServerParts): Promise<Response> {
  const newest = new Map<string, string>();
  for (const [name, versions] of await parts.folder.list()) {
    newest.set(name, versions[versions.length - 1].path);
  }
  const models = [];
  for (const l of parts.cache.entries()) {
    if (l.kind !== "llm") continue;
    const tag = tagOf(l.entry, newest.get(l.entry.name) === l.entry.path);
    models.push({
      ...(await tagJson(l.entry, tag)),
      expires_at: NEVER_EXPIRES,
      size_vram: 0,
    });
  }
  return jsonResponse({ models });
}

/** The Ollama API routes under /api, answering from the server's parts. */
export function ollamaRoutes(parts: ServerParts): Route[] {
  return [
    {
      pattern: "/api/generate",
      methods: { POST: ({ req, ctx }) => handleGenerate(req, parts, ctx) },
    },
    {
      pattern: "/api/chat",
      methods: { POST: ({ req, ctx }) => handleChat(req, parts, ctx) },
    },
    ...ollamaEmbedRoutes(parts),
    {
      pattern: "/api/show",
      methods: { POST: ({ req, ctx }) => handleShow(req, parts, ctx) },
    },
    { pattern: "/api/tags", methods: { GET: () => handleTags(parts) } },
    { pattern: "/api/ps", methods: { GET: () => handlePs(parts) } },
    {
      pattern: "/api/version",
      methods: {
        GET: () => Promise.resolve(jsonResponse({ version: parts.version })),
      },
    },
    ...ollamaModelRoutes(parts),
  ];
}
