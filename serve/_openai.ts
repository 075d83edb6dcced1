// OpenAI-compatible routes under /v1: models (list, retrieve), chat
// completions and completions (streamed as server-sent events ending in
// `data: [DONE]`, or one object), embeddings. Model ids are the Ollama
// names (`name:latest` for a model's newest version, `name:version`);
// errors are OpenAI's `{"error": {"message", "type", "param", "code"}}`.

import type {
  GeneratedToken,
  GenerateOptions,
  GenerateResult,
} from "../models/generate.ts";
import { promptIds } from "../models/generate.ts";
import { offloadEncode } from "./_offload_encode.ts";
import type { Transformer } from "../models/transformer.ts";
import type { RequestContext, ServerParts } from "./_context.ts";
import { errorText, type GenerationJob, runGeneration } from "./_generate.ts";
import { HttpError, jsonResponse, readJsonObject, statusOf } from "./_http.ts";
import type { ModelVersion } from "./_model_info.ts";
import { chatTemplateOf, llmTags, loadLlm, resolveModel } from "./_ollama.ts";
import { embedInputs, loadEmbedder, shorten } from "./_ollama_embed.ts";
import { movedToRegistry } from "./_registry_routes.ts";
import {
  chatMessages,
  completionPrompts,
  field,
  inRange,
  isInt,
  OpenAiError,
  refuse,
  responseFormat,
  sampling,
} from "./_openai_request.ts";
import type { Route } from "./_router.ts";

const encoder = new TextEncoder();

/** An error in OpenAI's shape, with the status that fits. */
export function openaiError(e: unknown): Response {
  const status = statusOf(e);
  const message = e instanceof Error ? e.message : String(e);
  const type = status === 401
    ? "authentication_error"
    : status === 404
    ? "not_found_error"
    : status === 429 || status === 503
    ? "rate_limit_error"
    : status >= 500
    ? "server_error"
    : "invalid_request_error";
  const param = e instanceof OpenAiError ? e.param : null;
  const code = e instanceof OpenAiError
    ? e.code
    : status === 404 && /model/.test(message)
    ? "model_not_found"
    : null;
  return jsonResponse(
    { error: { message, type, param, code } },
    status,
    e instanceof HttpError ? e.headers : {},
  );
}

function finishReason(r: GenerateResult): "stop" | "length" {
  return r.finishReason === "length" ? "length" : "stop";
}

function newId(prefix: string): string {
  const b = crypto.getRandomValues(new Uint8Array(12));
  return prefix +
    Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** A token's own text (its bytes as UTF-8, a lone byte as U+FFFD) and bytes, for logprobs. */
export function tokenInfo(
  model: Transformer,
  id: number,
): { token: string; bytes: number[] } {
  const tok = model.tokenizer;
  // ids past the tokenizer (a padded config.vocab_size) have no bytes
  const b = tok && id < tok.vocabSize ? tok.tokenBytes(id) : new Uint8Array(0);
  return { token: new TextDecoder().decode(b), bytes: [...b] };
}

function chatLogprob(model: Transformer, t: GeneratedToken) {
  return {
    ...tokenInfo(model, t.id),
    logprob: t.logprob,
    top_logprobs: (t.top ?? []).map((x) => ({
      ...tokenInfo(model, x.id),
      logprob: x.logprob,
    })),
  };
}

/** Server-sent events: `data: {json}` per chunk, then `data: [DONE]`. */
function sse(
  ctx: RequestContext,
  produce: (send: (obj: unknown) => void) => Promise<void>,
): Response {
  let finish!: () => void;
  ctx.finished = new Promise((r) => finish = r);
  const body = new ReadableStream<Uint8Array>({
    start: async (controller) => {
      const write = (text: string) => {
        try {
          controller.enqueue(encoder.encode(text));
        } catch { /* the client went away */ }
      };
      const send = (obj: unknown) => write(`data: ${JSON.stringify(obj)}\n\n`);
      try {
        await produce(send);
      } catch (e) {
        ctx.log.error = errorText(e);
        const r = openaiError(e);
        send(await r.json());
      } finally {
        write("data: [DONE]\n\n");
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
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
    },
  });
}

/**
 * Starts `n` generations (seeds `seed`, `seed + 1`, …) and waits until
 * each has its slot and first token, so a full queue answers 503 before
 * any byte is sent.
 */
async function startChoices(
  base: Job,
  n: number,
): Promise<
  {
    it: AsyncGenerator<GeneratedToken, GenerateResult, void>;
    first: IteratorResult<GeneratedToken, GenerateResult>;
  }[]
> {
  const its = Array.from({ length: n }, (_, i) =>
    runGeneration({
      ...base,
      options: {
        ...base.options,
        seed: (base.options.seed ?? 0) + i,
        constraint: i === 0 ? base.options.constraint : base.constraintFor?.(),
      },
    }));
  const firsts = await Promise.allSettled(its.map((it) => it.next()));
  const failed = firsts.find((f) => f.status === "rejected");
  if (failed) {
    await Promise.all(its.map((it) => it.return(undefined as never)));
    throw (failed as PromiseRejectedResult).reason;
  }
  return its.map((it, i) => ({
    it,
    first: (firsts[i] as PromiseFulfilledResult<
      IteratorResult<GeneratedToken, GenerateResult>
    >).value,
  }));
}

/** Runs the choices, calling `onToken` per token, and returns their results. */
async function runChoices(
  choices: Awaited<ReturnType<typeof startChoices>>,
  onToken: (choice: number, t: GeneratedToken) => void,
): Promise<GenerateResult[]> {
  return await Promise.all(choices.map(async ({ it, first }, i) => {
    let r = first;
    while (!r.done) {
      onToken(i, r.value);
      r = await it.next();
    }
    return r.value;
  }));
}

interface Job extends GenerationJob {
  /** A fresh constraint for each further choice (constraints follow one generation). */
  constraintFor?: () => GenerateOptions["constraint"];
}

function usage(promptTokens: number, results: GenerateResult[]) {
  const completion = results.reduce((a, r) => a + r.ids.length, 0);
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: promptTokens + completion,
  };
}

/** `POST /v1/chat/completions`. */
async function chatCompletions(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  const body = await readJsonObject(req, parts.maxBodyBytes);
  refuse(body);
  if (typeof body.model !== "string") {
    throw new OpenAiError("'model' must be a model id", "model");
  }
  let messages = chatMessages(body.messages);
  const n = inRange(body, "n", 1, 16, true) ?? 1;
  const wantLogprobs = body.logprobs === true;
  const top = inRange(body, "top_logprobs", 0, 20, true);
  const { entry, loaded } = await loadLlm(parts, ctx, body.model);
  const model = loaded.model;
  if (!model.tokenizer) {
    throw new OpenAiError(
      `'${body.model}' has no tokenizer; it cannot chat`,
      "model",
    );
  }
  const mf = entry.modelfile;
  if (mf?.system && !messages.some((m) => m.role === "system")) {
    messages = [{ role: "system", content: mf.system }, ...messages];
  }
  const ids = await offloadEncode(
    model.tokenizer,
    () =>
      promptIds(model, messages, {
        chatTemplate: chatTemplateOf(model, mf?.template),
      }),
  );
  const options = sampling(parts, entry, model, body, ids.length, [
    "max_completion_tokens",
    "max_tokens",
  ]);
  options.constraint = responseFormat(model, body.response_format);
  if (wantLogprobs && top) options.topLogprobs = top;
  const job: Job = {
    parts,
    ctx,
    entry,
    loaded,
    ids,
    options,
    unload: false,
    constraintFor: () => responseFormat(model, body.response_format),
  };
  const id = newId("chatcmpl-");
  const created = Math.floor(Date.now() / 1000);
  const name = body.model;
  const fingerprint = `modelhost-${parts.version}`;
  const choices = await startChoices(job, n);
  if (body.stream !== true) {
    const texts = Array.from({ length: n }, () => "");
    const lps: unknown[][] = Array.from({ length: n }, () => []);
    const results = await runChoices(choices, (i, t) => {
      texts[i] += t.text;
      if (wantLogprobs) lps[i].push(chatLogprob(model, t));
    });
    return jsonResponse({
      id,
      object: "chat.completion",
      created,
      model: name,
      system_fingerprint: fingerprint,
      choices: results.map((r, i) => ({
        index: i,
        message: { role: "assistant", content: r.text, refusal: null },
        logprobs: wantLogprobs ? { content: lps[i], refusal: null } : null,
        finish_reason: finishReason(r),
      })),
      usage: usage(ids.length, results),
    });
  }
  const so = body.stream_options as Record<string, unknown> | undefined;
  const includeUsage = so?.include_usage === true;
  const chunk = (choices: unknown[]) => ({
    id,
    object: "chat.completion.chunk",
    created,
    model: name,
    system_fingerprint: fingerprint,
    choices,
    ...(includeUsage ? { usage: null } : {}),
  });
  return sse(ctx, async (send) => {
    for (let i = 0; i < n; i++) {
      send(chunk([{
        index: i,
        delta: { role: "assistant", content: "" },
        logprobs: null,
        finish_reason: null,
      }]));
    }
    const streamed = choices.map(() => "");
    const results = await runChoices(choices, (i, t) => {
      streamed[i] += t.text;
      if (t.text === "" && !wantLogprobs) return;
      send(chunk([{
        index: i,
        delta: { content: t.text },
        logprobs: wantLogprobs
          ? { content: [chatLogprob(model, t)], refusal: null }
          : null,
        finish_reason: null,
      }]));
    });
    for (const [i, r] of results.entries()) {
      // Text held back until the end (the start of a stop string that
      // never completed, a character cut short) comes last.
      const tail = r.text.slice(streamed[i].length);
      if (tail !== "") {
        send(chunk([{
          index: i,
          delta: { content: tail },
          logprobs: null,
          finish_reason: null,
        }]));
      }
      send(chunk([{
        index: i,
        delta: {},
        logprobs: null,
        finish_reason: finishReason(r),
      }]));
    }
    if (includeUsage) {
      send({
        id,
        object: "chat.completion.chunk",
        created,
        model: name,
        system_fingerprint: fingerprint,
        choices: [],
        usage: usage(ids.length, results),
      });
    }
  });
}

async function completions(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  const body = await readJsonObject(req, parts.maxBodyBytes);
  refuse(body);
  if (typeof body.model !== "string") {
    throw new OpenAiError("'model' must be a model id", "model");
  }
  if (typeof body.suffix === "string" && body.suffix !== "") {
    throw new OpenAiError(
      "'suffix' (fill-in-the-middle) is not supported",
      "suffix",
    );
  }
  const prompts = completionPrompts(body.prompt ?? "");
  const n = inRange(body, "n", 1, 16, true) ?? 1;
  const bestOf = inRange(body, "best_of", 1, 16, true);
  if (bestOf !== undefined && bestOf !== n) {
    throw new OpenAiError(
      "'best_of' other than 'n' is not supported",
      "best_of",
    );
  }
  const logprobs = inRange(body, "logprobs", 0, 5, true);
  const echo = body.echo === true;
  const { entry, loaded } = await loadLlm(parts, ctx, body.model);
  const model = loaded.model;
  const jobs: { job: Job; text: string }[] = [];
  let promptTokens = 0;
  for (const p of prompts) {
    if (typeof p === "string" && !model.tokenizer) {
      throw new OpenAiError(
        `'${body.model}' has no tokenizer; send token ids`,
        "prompt",
      );
    }
    const ids = await offloadEncode(model.tokenizer, () => promptIds(model, p));
    if (ids.length === 0) {
      throw new OpenAiError("the prompt has no tokens", "prompt");
    }
    promptTokens += ids.length;
    const options = sampling(parts, entry, model, body, ids.length, [
      "max_tokens",
    ]);
    if (body.max_tokens === undefined) {
      // OpenAI's completions default to 16 tokens.
      options.maxTokens = Math.min(16, options.maxTokens!);
    }
    options.constraint = responseFormat(model, body.response_format);
    if (logprobs) options.topLogprobs = logprobs;
    const text = typeof p === "string"
      ? p
      : model.tokenizer
      ? model.tokenizer.decode(p)
      : "";
    jobs.push({
      job: {
        parts,
        ctx,
        entry,
        loaded,
        ids,
        options,
        unload: false,
        constraintFor: () => responseFormat(model, body.response_format),
      },
      text,
    });
  }
  const id = newId("cmpl-");
  const created = Math.floor(Date.now() / 1000);
  const name = body.model;
  const started: Awaited<ReturnType<typeof startChoices>> = [];
  for (const { job } of jobs) started.push(...await startChoices(job, n));
  const promptText = (i: number) => jobs[Math.floor(i / n)].text;
  const lp = (t: GeneratedToken) => {
    const text = tokenInfo(model, t.id).token;
    return {
      token: text,
      logprob: t.logprob,
      top: Object.fromEntries(
        (t.top ?? []).map((x) => [tokenInfo(model, x.id).token, x.logprob]),
      ),
    };
  };
  const logprobsJson = (items: ReturnType<typeof lp>[], offset: number) => {
    const offsets: number[] = [];
    let at = offset;
    for (const it of items) {
      offsets.push(at);
      at += it.token.length;
    }
    return {
      tokens: items.map((x) => x.token),
      token_logprobs: items.map((x) => x.logprob),
      top_logprobs: items.map((x) => x.top),
      text_offset: offsets,
    };
  };
  if (body.stream !== true) {
    const texts = started.map(() => "");
    const lps: ReturnType<typeof lp>[][] = started.map(() => []);
    const results = await runChoices(started, (i, t) => {
      texts[i] += t.text;
      if (logprobs !== undefined) lps[i].push(lp(t));
    });
    return jsonResponse({
      id,
      object: "text_completion",
      created,
      model: name,
      system_fingerprint: `modelhost-${parts.version}`,
      choices: results.map((r, i) => ({
        index: i,
        text: (echo ? promptText(i) : "") + r.text,
        logprobs: logprobs !== undefined
          ? logprobsJson(lps[i], echo ? promptText(i).length : 0)
          : null,
        finish_reason: finishReason(r),
      })),
      usage: usage(promptTokens, results),
    });
  }
  const so = body.stream_options as Record<string, unknown> | undefined;
  const includeUsage = so?.include_usage === true;
  const chunk = (choices: unknown[]) => ({
    id,
    object: "text_completion",
    created,
    model: name,
    system_fingerprint: `modelhost-${parts.version}`,
    choices,
    ...(includeUsage ? { usage: null } : {}),
  });
  return sse(ctx, async (send) => {
    if (echo) {
      started.forEach((_, i) =>
        send(chunk([{
          index: i,
          text: promptText(i),
          logprobs: null,
          finish_reason: null,
        }]))
      );
    }
    const streamed = started.map(() => "");
    const results = await runChoices(started, (i, t) => {
      streamed[i] += t.text;
      if (t.text === "" && logprobs === undefined) return;
      send(chunk([{
        index: i,
        text: t.text,
        logprobs: logprobs !== undefined ? logprobsJson([lp(t)], 0) : null,
        finish_reason: null,
      }]));
    });
    for (const [i, r] of results.entries()) {
      send(chunk([{
        index: i,
        text: r.text.slice(streamed[i].length),
        logprobs: null,
        finish_reason: finishReason(r),
      }]));
    }
    if (includeUsage) {
      send({
        id,
        object: "text_completion",
        created,
        model: name,
        system_fingerprint: `modelhost-${parts.version}`,
        choices: [],
        usage: usage(promptTokens, results),
      });
    }
  });
}

/** Little-endian F32 bytes of a vector, base64 (OpenAI's `encoding_format: "base64"`). */
function base64F32(v: Float32Array): string {
  const le = new Uint8Array(v.length * 4);
  const dv = new DataView(le.buffer);
  for (let i = 0; i < v.length; i++) dv.setFloat32(i * 4, v[i], true);
  let bin = "";
  for (let i = 0; i < le.length; i += 0x8000) {
    bin += String.fromCharCode(...le.subarray(i, i + 0x8000));
  }
  return btoa(bin);
}

/** `POST /v1/embeddings`. */
async function embeddings(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  const body = await readJsonObject(req, parts.maxBodyBytes);
  if (typeof body.model !== "string") {
    throw new OpenAiError("'model' must be a model id", "model");
  }
  let inputs: (string | number[])[];
  try {
    inputs = completionPrompts(body.input);
  } catch {
    throw new OpenAiError(
      "'input' must be a string, a list of strings, a list of token ids, or a list of those",
      "input",
    );
  }
  const format = body.encoding_format ?? "float";
  if (format !== "float" && format !== "base64") {
    throw new OpenAiError(
      "'encoding_format' must be 'float' or 'base64'",
      "encoding_format",
    );
  }
  const dims = field(body, "dimensions", isInt, "an integer");
  if (dims !== undefined && dims < 1) {
    throw new OpenAiError("'dimensions' must be at least 1", "dimensions");
  }
  const { loaded } = await loadEmbedder(parts, ctx, body.model);
  const r = await embedInputs(loaded, inputs, {
    normalize: true,
    truncate: false,
  });
  ctx.log.prompt_tokens = r.promptTokens;
  loaded.lastUsed = Date.now();
  return jsonResponse({
    object: "list",
    data: r.embeddings.map((v, i) => {
      const e = shorten(v, dims);
      return {
        object: "embedding",
        index: i,
        embedding: format === "base64" ? base64F32(e) : Array.from(e),
      };
    }),
    model: body.model,
    usage: { prompt_tokens: r.promptTokens, total_tokens: r.promptTokens },
  });
}

function modelJson(tag: string, v: ModelVersion) {
  return {
    id: tag,
    object: "model",
    created: Math.floor((v.modified?.getTime() ?? 0) / 1000),
    owned_by: "modelhost",
  };
}

/** OpenAI's routes under /v1, answering in OpenAI's error shape. */
export function openaiRoutes(parts: ServerParts): Route[] {
  const routes: Route[] = [
    {
      pattern: "/v1/models",
      methods: {
        GET: async () =>
          jsonResponse({
            object: "list",
            data: (await llmTags(parts)).map((t) =>
              modelJson(t.tag, t.version)
            ),
          }),
      },
    },
    {
      pattern: "/v1/models/{model}",
      methods: {
        GET: async ({ params }) => {
          const v = await resolveModel(parts, params.model);
          if (v.kind !== "llm") {
            throw new OpenAiError(
              `The model '${params.model}' does not exist`,
              "model",
              "model_not_found",
              404,
            );
          }
          return jsonResponse(modelJson(params.model, v));
        },
        // The registry's upload and delete lived here until 0.2.
        POST: movedToRegistry,
        DELETE: movedToRegistry,
      },
    },
    {
      pattern: "/v1/chat/completions",
      methods: { POST: ({ req, ctx }) => chatCompletions(req, parts, ctx) },
    },
    {
      pattern: "/v1/completions",
      methods: { POST: ({ req, ctx }) => completions(req, parts, ctx) },
    },
    {
      pattern: "/v1/embeddings",
      methods: { POST: ({ req, ctx }) => embeddings(req, parts, ctx) },
    },
  ];
  return routes.map((r) => ({ ...r, onError: openaiError }));
}
