// The OpenAI routes' request parsing: typed fields with OpenAI's error
// shape (a 400 naming the parameter), refused options, stop lists,
// response_format, sampling, chat messages and completion prompts.

import type { GenerateOptions } from "../models/generate.ts";
import type { Transformer } from "../models/transformer.ts";
import type { ChatMessage } from "../tokenizers/chat.ts";
import { jsonConstraint } from "../tokenizers/constraint.ts";
import type { ServerParts } from "./_context.ts";
import { HttpError } from "./_http.ts";
import type { ModelVersion } from "./_model_info.ts";

/** A 400 naming the request field at fault. */
export class OpenAiError extends HttpError {
  constructor(
    message: string,
    readonly param: string | null,
    readonly code: string | null = null,
    status = 400,
  ) {
    super(status, message);
  }
}

export const isNum = (v: unknown): v is number =>
  typeof v === "number" && Number.isFinite(v);
export const isInt = (v: unknown): v is number => Number.isSafeInteger(v);

export function field<T>(
  body: Record<string, unknown>,
  key: string,
  check: (v: unknown) => v is T,
  what: string,
): T | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (!check(v)) {
    throw new OpenAiError(
      `'${key}' must be ${what}, got ${JSON.stringify(v)}`,
      key,
    );
  }
  return v;
}

export function inRange(
  body: Record<string, unknown>,
  key: string,
  lo: number,
  hi: number,
  int = false,
): number | undefined {
  const v = field(
    body,
    key,
    int ? isInt : isNum,
    int ? "an integer" : "a number",
  );
  if (v !== undefined && !(v >= lo && v <= hi)) {
    throw new OpenAiError(
      `'${key}' must be between ${lo} and ${hi}, got ${v}`,
      key,
    );
  }
  return v;
}

/** Fields we cannot honour are refused, not ignored. */
export function refuse(body: Record<string, unknown>): void {
  const nonEmpty = (v: unknown) =>
    v !== undefined && v !== null && v !== false &&
    !(Array.isArray(v) && v.length === 0);
  for (const k of ["tools", "functions", "audio", "prediction"]) {
    if (nonEmpty(body[k])) {
      throw new OpenAiError(`'${k}' is not supported by this server`, k);
    }
  }
  if (
    Array.isArray(body.modalities) &&
    body.modalities.some((m) => m !== "text")
  ) {
    throw new OpenAiError("only the text modality is supported", "modalities");
  }
}

export function stopList(body: Record<string, unknown>): string[] {
  const s = body.stop;
  if (s === undefined || s === null) return [];
  const list = typeof s === "string" ? [s] : s;
  if (
    !Array.isArray(list) || list.length > 4 ||
    !list.every((x) => typeof x === "string")
  ) {
    throw new OpenAiError(
      "'stop' must be a string or a list of at most 4 strings",
      "stop",
    );
  }
  return list;
}

/** The constraint of `response_format`. */
export function responseFormat(
  model: Transformer,
  raw: unknown,
): GenerateOptions["constraint"] {
  if (raw === undefined || raw === null) return undefined;
  const rf = raw as Record<string, unknown>;
  if (typeof rf !== "object" || typeof rf.type !== "string") {
    throw new OpenAiError(
      "'response_format' must be {type: 'text' | 'json_object' | 'json_schema'}",
      "response_format",
    );
  }
  if (rf.type === "text") return undefined;
  if (!model.tokenizer) {
    throw new OpenAiError(
      "structured output needs the model's tokenizer",
      "response_format",
    );
  }
  let schema: unknown;
  if (rf.type === "json_object") schema = "json";
  else if (rf.type === "json_schema") {
    const js = rf.json_schema as Record<string, unknown> | undefined;
    if (!js || typeof js !== "object") {
      throw new OpenAiError(
        "'response_format.json_schema' must be {name, schema}",
        "response_format.json_schema",
      );
    }
    schema = js.schema ?? {};
  } else {
    throw new OpenAiError(
      `unknown response_format type '${rf.type}'`,
      "response_format.type",
    );
  }
  try {
    return jsonConstraint(model.tokenizer, schema);
  } catch (e) {
    if (e instanceof TypeError) {
      throw new OpenAiError(e.message, "response_format.json_schema.schema");
    }
    throw e;
  }
}

/** Sampling options from an OpenAI request (OpenAI's defaults: temperature 1, top_p 1, no penalties). */
export function sampling(
  parts: ServerParts,
  entry: ModelVersion,
  model: Transformer,
  body: Record<string, unknown>,
  promptLength: number,
  maxKey: string[],
): GenerateOptions {
  const mf = entry.modelfile?.parameters ?? {};
  const num = (k: string) => (isNum(mf[k]) ? mf[k] as number : undefined);
  const temperature = inRange(body, "temperature", 0, 2) ??
    num("temperature") ??
    1;
  const ctxLimit = model.config.maxPositionEmbeddings;
  if (promptLength >= ctxLimit) {
    throw new OpenAiError(
      `This model's maximum context length is ${ctxLimit} tokens; the prompt has ${promptLength}`,
      "messages",
      "context_length_exceeded",
    );
  }
  let max: number | undefined;
  for (const k of maxKey) {
    max ??= field(body, k, isInt, "an integer");
    if (max !== undefined && max < 0) {
      throw new OpenAiError(`'${k}' must be ≥ 0`, k);
    }
  }
  const bias = body.logit_bias;
  if (
    bias !== undefined && bias !== null &&
    (typeof bias !== "object" ||
      !Object.entries(bias).every(([k, v]) => /^\d+$/.test(k) && isNum(v)))
  ) {
    throw new OpenAiError(
      "'logit_bias' must map token ids to numbers",
      "logit_bias",
    );
  }
  return {
    maxTokens: Math.min(
      max ?? Infinity,
      ctxLimit - promptLength,
      parts.maxTokens,
    ),
    temperature,
    greedy: temperature === 0,
    topP: inRange(body, "top_p", 0, 1) ?? num("top_p") ?? 1,
    topK: 0,
    repetitionPenalty: 1,
    frequencyPenalty: inRange(body, "frequency_penalty", -2, 2) ?? 0,
    presencePenalty: inRange(body, "presence_penalty", -2, 2) ?? 0,
    logitBias: bias as Record<number, number> | undefined,
    seed: field(body, "seed", isInt, "an integer") ?? parts.nextSeed(),
    stop: [...stopList(body), ...((mf.stop as string[] | undefined) ?? [])],
  };
}

/** Parses chat messages (text content, or a list of text parts). */
export function chatMessages(raw: unknown): ChatMessage[] {
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new OpenAiError("'messages' must be a non-empty list", "messages");
  }
  return raw.map((m, i) => {
    if (!m || typeof m !== "object" || typeof m.role !== "string") {
      throw new OpenAiError(
        `messages[${i}] must be {role, content}`,
        `messages[${i}]`,
      );
    }
    let content = m.content ?? "";
    if (Array.isArray(content)) {
      content = content.map((p: Record<string, unknown>, j: number) => {
        if (p?.type !== "text" || typeof p.text !== "string") {
          throw new OpenAiError(
            `messages[${i}].content[${j}]: only text parts are supported`,
            `messages[${i}].content`,
          );
        }
        return p.text;
      }).join("");
    }
    if (typeof content !== "string") {
      throw new OpenAiError(
        `messages[${i}].content must be a string or a list of text parts`,
        `messages[${i}].content`,
      );
    }
    if (m.tool_calls?.length) {
      throw new OpenAiError("tool calls are not supported", `messages[${i}]`);
    }
    // OpenAI's "developer" role is the system prompt of newer models.
    const role = m.role === "developer" ? "system" : m.role;
    return { role, content };
  });
}

/** The prompts of a completions request: text, a list of texts, ids, or lists of ids. */
export function completionPrompts(raw: unknown): (string | number[])[] {
  if (typeof raw === "string") return [raw];
  if (Array.isArray(raw) && raw.length > 0) {
    if (raw.every((x) => typeof x === "string")) return raw as string[];
    if (raw.every(isInt)) return [raw as number[]];
    if (raw.every((x) => Array.isArray(x) && x.every(isInt))) {
      return raw as number[][];
    }
  }
  throw new OpenAiError(
    "'prompt' must be a string, a list of strings, a list of token ids, or a list of those",
    "prompt",
  );
}

/** `POST /v1/completions`. */
