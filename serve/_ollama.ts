// Ollama-compatible routes: /api/generate and /api/chat (NDJSON
// streaming or one JSON object), /api/tags, /api/show, /api/ps,
// /api/version. Model names are `name[:tag]`, the tag being a registry
// version (`latest`, or none, for the newest).

import {
  type ChatMessage,
  type ChatTemplate,
  pickChatTemplate,
} from "../tokenizers/chat.ts";
import {
  generate,
  type GeneratedToken,
  type GenerateOptions,
  type GenerateResult,
  promptIds,
} from "../models/generate.ts";
import type { Transformer } from "../models/transformer.ts";
import type { LoadedLlm } from "./_cache.ts";
import type { RequestContext, ServerParts } from "./_context.ts";
import { HttpError, jsonResponse, readJsonObject } from "./_http.ts";
import type { ModelVersion } from "./_model_info.ts";
import type { Route } from "./_router.ts";

/** Ollama's sampling defaults, used where neither request nor checkpoint decides. */
const OLLAMA_DEFAULTS = {
  temperature: 0.8,
  topK: 40,
  topP: 0.9,
  repeatPenalty: 1.1,
  repeatLastN: 64,
};

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

function ollamaName(v: ModelVersion, tag = v.version): string {
  return `${v.name}:${tag}`;
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
    parent_model: "",
    format: v.format === "gguf" ? "gguf" : v.format,
    family,
    families: [family],
    parameter_size: humanCount(v.parameters),
    quantization_level: mainDtype(v),
  };
}

/** An identifier of a registry entry (hash of its file name, size and time; not of its content). */
async function digestOf(v: ModelVersion): Promise<string> {
  const key = `${v.file}|${v.bytes}|${v.modified?.getTime() ?? 0}`;
  const h = await crypto.subtle.digest("SHA-256", encoder.encode(key));
  return Array.from(new Uint8Array(h), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** Resolves an Ollama model name to a loaded Llama-family model. */
async function loadLlm(
  parts: ServerParts,
  ctx: RequestContext,
  model: unknown,
): Promise<{ entry: ModelVersion; loaded: LoadedLlm; loadMs: number }> {
  const { name, version } = parseOllamaName(model);
  ctx.log.model = name;
  let entry: ModelVersion;
  try {
    entry = await parts.folder.resolve(name, version);
  } catch (e) {
    if (e instanceof HttpError && e.status === 404) {
      throw new HttpError(404, `model "${model}" not found`);
    }
    throw e;
  }
  ctx.log.version = entry.version;
  if (entry.kind !== "llm") {
    throw new HttpError(
      400,
      `"${model}" is a ${entry.kind} model (${entry.format}), not a Llama-family language model; use POST /v1/models/${name}/predict`,
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
const isInt = (v: unknown): v is number => Number.isSafeInteger(v);

/** Turns Ollama `options` into {@link GenerateOptions} for one request. */
function samplingOptions(
  parts: ServerParts,
  model: Transformer,
  raw: unknown,
  promptLength: number,
): GenerateOptions {
  if (raw !== undefined && raw !== null && typeof raw !== "object") {
    throw new HttpError(400, '"options" must be an object');
  }
  const o = (raw ?? {}) as Record<string, unknown>;
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
    seed: optional(o, "seed", isInt, "an integer") ?? parts.nextSeed(),
    stop: (stop as string[] | undefined) ?? [],
  };
}

/** Refuses request fields we cannot honour rather than ignoring them. */
function refuseUnsupported(body: Record<string, unknown>): void {
  const f = body.format;
  if (f !== undefined && f !== null && f !== "") {
    throw new HttpError(
      400,
      '"format" (structured output) is not supported by this server',
    );
  }
  if (Array.isArray(body.images) && body.images.length > 0) {
    throw new HttpError(400, "images are not supported by this server");
  }
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    throw new HttpError(400, "tools are not supported by this server");
  }
  if (body.think === true || typeof body.think === "string") {
    throw new HttpError(400, "thinking is not supported by this server");
  }
  if (typeof body.template === "string" && body.template !== "") {
    throw new HttpError(
      400,
      '"template" (Go templates) is not supported; send "raw": true with a rendered prompt',
    );
  }
  if (typeof body.suffix === "string" && body.suffix !== "") {
    throw new HttpError(400, '"suffix" (fill-in-the-middle) is not supported');
  }
}

/** A plain transcript, for models whose checkpoint names no chat format. */
const transcript: ChatTemplate = (messages, options) =>
  messages.map((m) => `${m.role}: ${m.content}\n`).join("") +
  (options?.addGenerationPrompt === false ? "" : "assistant:");

/** The prompt ids of a conversation; a template that refuses it is the client's error. */
function chatIds(model: Transformer, messages: ChatMessage[]): number[] {
  try {
    return promptIds(model, messages, { chatTemplate: chatTemplateOf(model) });
  } catch (e) {
    if (e instanceof TypeError || e instanceof SyntaxError) {
      throw new HttpError(400, e.message);
    }
    throw e;
  }
}

function chatTemplateOf(model: Transformer): ChatTemplate {
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

function nanos(ms: number): number {
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

interface Job {
  parts: ServerParts;
  ctx: RequestContext;
  entry: ModelVersion;
  loaded: LoadedLlm;
  ids: number[];
  options: GenerateOptions;
  /** Unload the model when the request ends (`keep_alive: 0`). */
  unload: boolean;
}

/** Whether `keep_alive` asks to unload the model after the request (0, "0", "0s"). */
function unloadAfter(keepAlive: unknown): boolean {
  return keepAlive === 0 ||
    (typeof keepAlive === "string" && /^0+(\.0*)?(ms|s|m|h)?$/.test(keepAlive));
}

/**
 * Runs one generation under the concurrency limit, handing each token to
 * `onToken`; yields to other tasks between tokens. Throws the abort reason
 * when the request times out or the client leaves.
 */
async function runGeneration(
  job: Job,
  release: () => void,
  onToken: (t: GeneratedToken) => void,
): Promise<GenerateResult> {
  const { parts, ctx, loaded } = job;
  const m = parts.metrics;
  const labels = { model: `${job.entry.name}@${job.entry.version}` };
  try {
    const it = generate(loaded.model, job.ids, {
      ...job.options,
      signal: ctx.signal,
    });
    let r = await it.next();
    while (!r.done) {
      onToken(r.value);
      await parts.yieldNow();
      r = await it.next();
    }
    const result = r.value;
    loaded.lastUsed = Date.now();
    m.inc(
      "modelhost_generate_prompt_tokens_total",
      "Prompt tokens fed to language models",
      labels,
      result.promptIds.length,
    );
    m.inc(
      "modelhost_generate_tokens_total",
      "Tokens generated by language models",
      labels,
      result.ids.length,
    );
    m.inc(
      "modelhost_generate_seconds_total",
      "Seconds spent generating, by phase (prefill: the prompt; decode: the new tokens)",
      { ...labels, phase: "prefill" },
      result.prefillMs / 1000,
    );
    m.inc(
      "modelhost_generate_seconds_total",
      "Seconds spent generating, by phase (prefill: the prompt; decode: the new tokens)",
      { ...labels, phase: "decode" },
      result.decodeMs / 1000,
    );
    if (result.ids.length > 0 && result.decodeMs > 0) {
      m.set(
        "modelhost_generate_tokens_per_second",
        "Decode speed of the last finished generation, tokens per second",
        labels,
        result.ids.length / (result.decodeMs / 1000),
      );
    }
    ctx.log.prompt_tokens = result.promptIds.length;
    ctx.log.tokens = result.ids.length;
    if (result.finishReason === "aborted") throw ctx.signal.reason;
    return result;
  } finally {
    release();
    if (job.unload) parts.cache.evictPath(job.entry.path);
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Answers a generation: one JSON object, or NDJSON lines (one per token,
 * then a final line with the statistics). An error after the stream has
 * started is sent as an `{"error": …}` line, as Ollama does.
 */
async function respond(
  job: Job,
  stream: boolean,
  chunk: (
    text: string,
    t: GeneratedToken | undefined,
  ) => Record<string, unknown>,
  final: (text: string, r: GenerateResult) => Record<string, unknown>,
  loadMs: number,
  collect?: (t: GeneratedToken) => void,
): Promise<Response> {
  const { parts, ctx } = job;
  const release = await parts.generations.acquire(ctx.signal);
  if (!stream) {
    let text = "";
    const r = await runGeneration(job, release, (t) => {
      text += t.text;
      collect?.(t);
    });
    return jsonResponse({ ...final(text, r), ...stats(ctx, loadMs, r) });
  }
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
        const r = await runGeneration(job, release, (t) => {
          collect?.(t);
          if (t.text !== "") send(chunk(t.text, t));
        });
        send({ ...final("", r), ...stats(ctx, loadMs, r) });
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
  const system = body.system ?? "";
  if (typeof system !== "string") {
    throw new HttpError(400, '"system" must be a string');
  }
  const context = body.context ?? [];
  if (!Array.isArray(context) || !context.every(isInt)) {
    throw new HttpError(400, '"context" must be a list of token ids');
  }
  const { entry, loaded, loadMs } = await loadLlm(parts, ctx, body.model);
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
  let ids: number[];
  if (body.raw === true || model.tokenizer.chatTemplate === undefined) {
    const text = body.raw !== true && system
      ? `${system}\n\n${prompt}`
      : prompt;
    ids = promptIds(model, text, continuing ? { addBos: false } : {});
  } else {
    const messages: ChatMessage[] = [
      ...(system ? [{ role: "system", content: system }] : []),
      { role: "user", content: prompt },
    ];
    ids = chatIds(model, messages);
    const bos = model.tokenizer.bos;
    if (continuing && bos !== undefined && ids[0] === bos) ids.shift();
  }
  ids = [...context, ...ids];
  const options = samplingOptions(parts, model, body.options, ids.length);
  const wantLogprobs = body.logprobs === true;
  const logprob = (t: GeneratedToken) => ({
    token: model.tokenizer!.decode([t.id]),
    logprob: t.logprob,
  });
  const allLogprobs: { token: string; logprob: number }[] = [];
  return respond(
    { parts, ctx, entry, loaded, ids, options, unload },
    body.stream !== false,
    (text, t) => ({
      model: name,
      created_at: createdAt(),
      response: text,
      done: false,
      ...(wantLogprobs && t ? { logprobs: [logprob(t)] } : {}),
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
    wantLogprobs ? (t) => allLogprobs.push(logprob(t)) : undefined,
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
  const messages = parseMessages(body.messages);
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
  const ids = chatIds(model, messages);
  const options = samplingOptions(parts, model, body.options, ids.length);
  return respond(
    { parts, ctx, entry, loaded, ids, options, unload },
    body.stream !== false,
    (text) => ({
      model: name,
      created_at: createdAt(),
      message: { role: "assistant", content: text },
      done: false,
    }),
    (text) => ({
      model: name,
      created_at: createdAt(),
      message: { role: "assistant", content: text },
      done: true,
    }),
    loadMs,
  );
}

async function tagOf(v: ModelVersion, tag: string) {
  return {
    name: ollamaName(v, tag),
    model: ollamaName(v, tag),
    modified_at: (v.modified ?? new Date(0)).toISOString(),
    size: v.bytes,
    digest: await digestOf(v),
    details: details(v),
  };
}

/** `GET /api/tags`: every Llama-family version, and `name:latest` for the newest. */
export async function handleTags(parts: ServerParts): Promise<Response> {
  const models = [];
  for (const versions of (await parts.folder.list()).values()) {
    const llms = versions.filter((v) => v.kind === "llm");
    if (llms.length === 0) continue;
    const newest = versions[versions.length - 1];
    if (newest.kind === "llm") models.push(await tagOf(newest, "latest"));
    for (const v of llms) models.push(await tagOf(v, v.version));
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
  const { name, version } = parseOllamaName(model);
  ctx.log.model = name;
  let v: ModelVersion;
  try {
    v = await parts.folder.resolve(name, version);
  } catch (e) {
    if (e instanceof HttpError && e.status === 404) {
      throw new HttpError(404, `model "${model}" not found`);
    }
    throw e;
  }
  if (v.kind !== "llm" || !v.llm) {
    throw new HttpError(
      400,
      `"${model}" is a ${v.kind} model, not a Llama-family language model`,
    );
  }
  return jsonResponse({
    license: typeof v.provenance["general.license"] === "string"
      ? v.provenance["general.license"]
      : "",
    modelfile: `# served by modelhost from ${v.file}\nFROM ${v.file}\n`,
    parameters: "",
    template: v.llm.chatTemplate ?? "{{ .Prompt }}",
    system: "",
    details: details(v),
    model_info: v.llm.modelInfo,
    capabilities: ["completion"],
    modified_at: (v.modified ?? new Date(0)).toISOString(),
  });
}

/** `GET /api/ps`: the Llama-family models in memory. */
export async function handlePs(parts: ServerParts): Promise<Response> {
  const models = [];
  for (const l of parts.cache.entries()) {
    if (l.kind !== "llm") continue;
    models.push({
      ...(await tagOf(l.entry, l.entry.version)),
      expires_at: new Date(8.64e15).toISOString(),
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
  ];
}
