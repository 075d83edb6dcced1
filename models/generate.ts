/**
 * Text generation with a {@link Transformer}: the prompt (text, token ids
 * or chat messages) is fed in one batch (prefill), then one token per step
 * through the KV cache, each chosen greedily or sampled (temperature,
 * top-k, top-p, repetition penalty, a seeded generator). Tokens stream out
 * of an async iterator with the text they complete; generation ends at the
 * token limit, at an end-of-generation token, or at a stop string (which
 * is not part of the text).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildTransformer, configFromHf, generate, transformerNetwork } from "@modelhost/modelhost/models";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 16, hidden_size: 8, intermediate_size: 16,
 *   num_hidden_layers: 1, num_attention_heads: 2,
 * });
 * const model = buildTransformer(cfg, initNetwork(createRegistry().use(LAYER_PLUGINS), transformerNetwork(cfg), 7));
 * const ids: number[] = [];
 * for await (const tok of generate(model, [1, 2, 3], { maxTokens: 5, greedy: true })) ids.push(tok.id);
 * assert(ids.length === 5);
 * ```
 *
 * @module
 */

import { createRng, type Rng } from "../core/rng.ts";
import {
  type ChatMessage,
  type ChatTemplate,
  type ChatTemplateOptions,
  encodeChat,
  pickChatTemplate,
} from "../tokenizers/chat.ts";
import type { TokenConstraint } from "../tokenizers/constraint.ts";
import { sortedIds } from "./_sample_order.ts";
import type { Transformer, TransformerState } from "./transformer.ts";

/** What a prompt can be. */
export type Prompt = string | readonly number[] | readonly ChatMessage[];

/** Options of {@link generate}. Unset sampling fields take the model's `generation_config.json` defaults. */
export interface GenerateOptions {
  /** Most tokens to generate. @default {256} */
  maxTokens?: number;
  /** Always take the most likely token (lowest id on ties). @default {false, or true when temperature is 0} */
  greedy?: boolean;
  /** Softmax temperature; 0 means greedy. @default {1} */
  temperature?: number;
  /** Sample among the k most likely tokens only; 0 turns it off. @default {0} */
  topK?: number;
  /** Sample among the most likely tokens whose probabilities add up to p; 1 turns it off. @default {1} */
  topP?: number;
  /**
   * Divides positive logits (multiplies negative ones) of every token
   * already in the sequence, as Hugging Face does; 1 turns it off. @default {1}
   */
  repetitionPenalty?: number;
  /** How many recent tokens the penalty looks at; 0 means all. @default {0} */
  repetitionWindow?: number;
  /**
   * Subtracted from a token's logit once per time it was generated
   * (OpenAI's `frequency_penalty`; the prompt does not count). @default {0}
   */
  frequencyPenalty?: number;
  /** Subtracted from the logit of every token generated so far (OpenAI's `presence_penalty`). @default {0} */
  presencePenalty?: number;
  /** Added to the logits of these token ids before sampling (OpenAI's `logit_bias`). @default {undefined} */
  logitBias?: Readonly<Record<number, number>>;
  /** Report this many most likely alternatives with each token (`GeneratedToken.top`). @default {0} */
  topLogprobs?: number;
  /** Seed of the sampling generator. @default {0} */
  seed?: number;
  /** Stop when the text contains one of these; the stop string is not returned. @default {[]} */
  stop?: readonly string[];
  /** Stop at an end-of-generation token (EOS, `<|eot_id|>` …); it is not returned. @default {true} */
  stopAtEos?: boolean;
  /** Prepend BOS to a text prompt. @default {the tokenizer's setting} */
  addBos?: boolean;
  /** Continue this state (a conversation) instead of starting afresh. */
  state?: TransformerState;
  /** The chat template for message prompts. @default {picked from the tokenizer and model name} */
  chatTemplate?: ChatTemplate;
  /** Options passed to the chat template (system prompt, generation prompt). */
  chatOptions?: ChatTemplateOptions;
  /** Stops generation between tokens when aborted. */
  signal?: AbortSignal;
  /**
   * Limits which tokens may come next (structured output, see
   * `jsonConstraint` in `@modelhost/modelhost/tokenizers`): disallowed
   * tokens are masked before sampling, end-of-generation tokens are
   * allowed only once the output is complete, and generation stops when
   * nothing may follow. One constraint serves one generation.
   * @default {undefined} (no constraint)
   */
  constraint?: TokenConstraint;
}

/**
 * Default {@link GenerateOptions}.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { GENERATE_DEFAULTS } from "@modelhost/modelhost/models";
 * assert(GENERATE_DEFAULTS.maxTokens === 256 && GENERATE_DEFAULTS.topP === 1);
 * ```
 */
export const GENERATE_DEFAULTS = {
  maxTokens: 256,
  temperature: 1,
  topK: 0,
  topP: 1,
  repetitionPenalty: 1,
  repetitionWindow: 0,
  seed: 0,
  stopAtEos: true,
} satisfies GenerateOptions;

/** One generated token. */
export interface GeneratedToken {
  /** Token id. */
  id: number;
  /**
   * Text released by this token: its own text, minus bytes of a character
   * not complete yet and text that might start a stop string (released by
   * a later token).
   */
  text: string;
  /** Index among the generated tokens (0 for the first). */
  index: number;
  /** Natural log of the token's probability under the model (temperature 1, no penalties). */
  logprob: number;
  /** The most likely tokens at this step with their log-probabilities, most likely first (with `topLogprobs`). */
  top?: { id: number; logprob: number }[];
}

/** Why generation ended. */
export type FinishReason = "length" | "eos" | "stop" | "aborted";

/** What generation returns when it ends (the iterator's return value). */
export interface GenerateResult {
  /** The generated ids (without the end-of-generation token). */
  ids: number[];
  /** The generated text (without a stop string and what followed it). */
  text: string;
  /** The prompt as token ids. */
  promptIds: number[];
  /** Why it ended. */
  finishReason: FinishReason;
  /** Milliseconds spent feeding the prompt. */
  prefillMs: number;
  /** Milliseconds spent generating after the prompt. */
  decodeMs: number;
  /** The state, to continue the sequence. */
  state: TransformerState;
}

/**
 * Turns a prompt into token ids: ids are used as given; text is encoded
 * (BOS as the tokenizer says, or `addBos`); messages go through the chat
 * template and are encoded with their control tokens.
 *
 * @param model The model.
 * @param prompt Text, ids or chat messages.
 * @param options `addBos`, `chatTemplate`, `chatOptions`; `state` (a
 *   continued sequence gets no BOS).
 * @returns The ids.
 * @throws {TypeError} When the prompt is text or messages and the model has no tokenizer.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { promptIds } from "@modelhost/modelhost/models";
 * import type { Transformer } from "@modelhost/modelhost/models";
 * assert(promptIds({ tokenizer: undefined } as Transformer, [1, 2]).join() === "1,2");
 * ```
 */
export function promptIds(
  model: Transformer,
  prompt: Prompt,
  options: GenerateOptions = {},
): number[] {
  if (
    typeof prompt !== "string" &&
    (prompt.length === 0 || typeof prompt[0] === "number")
  ) {
    return [...(prompt as readonly number[])];
  }
  const tok = model.tokenizer;
  if (!tok) {
    throw new TypeError(
      `Cannot encode a ${
        typeof prompt === "string" ? "text" : "chat"
      } prompt: ${model.name} has no tokenizer (pass token ids)`,
    );
  }
  const continuing = (options.state?.tokens.length ?? 0) > 0;
  if (typeof prompt === "string") {
    return tok.encode(prompt, {
      addSpecial: false,
      addBos: continuing ? false : options.addBos ?? tok.addBos,
    });
  }
  const template = options.chatTemplate ??
    pickChatTemplate({
      chatTemplate: tok.chatTemplate,
      tokenizer: tok,
      family: model.name,
    });
  const ids = encodeChat(tok, prompt as readonly ChatMessage[], {
    ...options.chatOptions,
    template,
  });
  if (continuing && tok.bos !== undefined && ids[0] === tok.bos) ids.shift();
  return ids;
}

function argmax(v: Float32Array): number {
  let best = 0, bv = v[0];
  for (let i = 1; i < v.length; i++) {
    if (v[i] > bv) {
      bv = v[i];
      best = i;
    }
  }
  return best;
}

function logSoftmaxAt(v: Float32Array, id: number): number {
  let m = -Infinity;
  for (let i = 0; i < v.length; i++) if (v[i] > m) m = v[i];
  let s = 0;
  for (let i = 0; i < v.length; i++) s += Math.exp(v[i] - m);
  return v[id] - m - Math.log(s);
}

/** The `k` most likely ids of `v` with their log-softmax, most likely first (lowest id on ties). */
function topLogSoftmax(
  v: Float32Array,
  k: number,
): { id: number; logprob: number }[] {
  let m = -Infinity;
  for (let i = 0; i < v.length; i++) if (v[i] > m) m = v[i];
  let s = 0;
  for (let i = 0; i < v.length; i++) s += Math.exp(v[i] - m);
  const lse = m + Math.log(s);
  const best: number[] = [];
  for (let i = 0; i < v.length; i++) {
    if (best.length === k && v[i] <= v[best[k - 1]]) continue;
    let j = best.length < k ? best.length : k - 1;
    best[j] = i;
    while (j > 0 && v[best[j - 1]] < v[i]) {
      best[j] = best[j - 1];
      best[--j] = i;
    }
  }
  return best.map((id) => ({ id, logprob: v[id] - lse }));
}

interface Sampling {
  greedy: boolean;
  temperature: number;
  topK: number;
  topP: number;
  penalty: number;
  window: number;
}

/**
 * Picks the next token from logits (modified in place by the penalty).
 * Order: repetition penalty, temperature, top-k, top-p, draw.
 */
function pick(
  logits: Float32Array,
  history: readonly number[],
  s: Sampling,
  rng: Rng,
): number {
  if (s.penalty !== 1) {
    const from = s.window > 0 ? Math.max(0, history.length - s.window) : 0;
    const seen = new Set<number>();
    for (let i = from; i < history.length; i++) seen.add(history[i]);
    for (const id of seen) {
      if (id < 0 || id >= logits.length) continue;
      const l = logits[id];
      logits[id] = l > 0 ? l / s.penalty : l * s.penalty;
    }
  }
  if (s.greedy) return argmax(logits);
  const v = logits.length;
  const order = sortedIds(logits, s.topK > 0 && s.topK < v ? s.topK : v);
  const probs = new Float64Array(order.length);
  const top = logits[order[0]];
  let sum = 0;
  for (let i = 0; i < order.length; i++) {
    probs[i] = Math.exp((logits[order[i]] - top) / s.temperature);
    sum += probs[i];
  }
  let keep = order.length;
  if (s.topP < 1) {
    let acc = 0;
    for (let i = 0; i < order.length; i++) {
      acc += probs[i] / sum;
      if (acc >= s.topP) {
        keep = i + 1;
        break;
      }
    }
  }
  let total = 0;
  for (let i = 0; i < keep; i++) total += probs[i];
  let r = rng.next() * total;
  for (let i = 0; i < keep; i++) {
    r -= probs[i];
    if (r < 0) return order[i];
  }
  return order[keep - 1];
}

/** How many trailing characters of `text` could begin one of the stop strings. */
function holdBack(text: string, stops: readonly string[]): number {
  let keep = 0;
  for (const s of stops) {
    for (let n = Math.min(s.length - 1, text.length); n > keep; n--) {
      if (text.endsWith(s.slice(0, n))) {
        keep = n;
        break;
      }
    }
  }
  return keep;
}

function checkOptions(o: GenerateOptions): void {
  const bad = (field: string, want: string, v: unknown) =>
    new RangeError(`generate: ${field} must be ${want}, got ${v}`);
  if (
    o.maxTokens !== undefined &&
    (!Number.isInteger(o.maxTokens) || o.maxTokens < 0)
  ) {
    throw bad("maxTokens", "an integer ≥ 0", o.maxTokens);
  }
  if (o.temperature !== undefined && !(o.temperature >= 0)) {
    throw bad("temperature", "≥ 0", o.temperature);
  }
  if (o.topK !== undefined && (!Number.isInteger(o.topK) || o.topK < 0)) {
    throw bad("topK", "an integer ≥ 0", o.topK);
  }
  if (o.topP !== undefined && !(o.topP > 0 && o.topP <= 1)) {
    throw bad("topP", "in (0, 1]", o.topP);
  }
  if (o.repetitionPenalty !== undefined && !(o.repetitionPenalty > 0)) {
    throw bad("repetitionPenalty", "above 0", o.repetitionPenalty);
  }
  for (const k of ["frequencyPenalty", "presencePenalty"] as const) {
    if (o[k] !== undefined && !Number.isFinite(o[k])) {
      throw bad(k, "a finite number", o[k]);
    }
  }
  if (
    o.topLogprobs !== undefined &&
    (!Number.isInteger(o.topLogprobs) || o.topLogprobs < 0)
  ) {
    throw bad("topLogprobs", "an integer ≥ 0", o.topLogprobs);
  }
}

/**
 * One sequence's generation taken step by step, for callers that run the
 * model themselves (the continuous-batching engine in `models/batch.ts`
 * feeds many of them through one batched forward pass). Feed
 * {@link Sequence.pending} (all of it, in one call or several) to the
 * model with {@link Sequence.state}, then hand the logits of the last fed
 * position to {@link Sequence.next}, which picks the next token and puts
 * it in `pending`; repeat until {@link Sequence.done}. {@link generate} is
 * this loop with one sequence.
 */
export interface Sequence {
  /** The prompt as token ids. */
  readonly promptIds: readonly number[];
  /** The sequence's state (KV caches, token history). */
  readonly state: TransformerState;
  /**
   * Ids to feed before the next call of {@link Sequence.next}: the prompt
   * first, then the last picked token. The caller takes them out
   * (`pending.splice(0, n)`) as it feeds them; empty once done.
   */
  readonly pending: number[];
  /** Whether generation has ended. */
  readonly done: boolean;
  /** Tokens generated so far (0 while the prompt is being fed). */
  readonly generated: number;
  /**
   * Picks the next token from the logits of the last fed position
   * (modified in place by penalties and constraints).
   *
   * @param logits `vocab` logits.
   * @returns The token and the text it releases, or undefined when
   * generation ends here (end-of-generation token, token limit, abort).
   */
  next(logits: Float32Array): GeneratedToken | undefined;
  /** Ends generation now, as an abort does (finish reason `aborted`). */
  abort(): void;
  /** What generation returned; complete once {@link Sequence.done}. */
  result(): GenerateResult;
}

/**
 * Starts a {@link Sequence}: checks the options, encodes the prompt, and
 * readies the sampler. Nothing runs the model yet.
 *
 * @param model The model.
 * @param prompt Text, token ids, or chat messages.
 * @param options As for {@link generate}.
 * @returns The sequence.
 * @throws {RangeError} On an invalid option, or an empty prompt without a state.
 * @throws {TypeError} When a text prompt meets a model without tokenizer.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildTransformer, configFromHf, startSequence, transformerNetwork } from "@modelhost/modelhost/models";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 16, hidden_size: 8, intermediate_size: 16,
 *   num_hidden_layers: 1, num_attention_heads: 2,
 * });
 * const model = buildTransformer(cfg, initNetwork(createRegistry().use(LAYER_PLUGINS), transformerNetwork(cfg), 7));
 * const seq = startSequence(model, [1, 2], { maxTokens: 3, greedy: true });
 * while (!seq.done) seq.next(model.forward(seq.pending.splice(0), seq.state));
 * assert(seq.result().ids.length === 3);
 * ```
 */
export function startSequence(
  model: Transformer,
  prompt: Prompt,
  options: GenerateOptions = {},
): Sequence {
  checkOptions(options);
  const d = model.generationDefaults;
  const temperature = options.temperature ?? d.temperature ??
    GENERATE_DEFAULTS.temperature;
  const sampling: Sampling = {
    greedy: options.greedy ??
      (temperature === 0 ||
        (options.temperature === undefined && d.doSample === false)),
    temperature,
    topK: options.topK ?? d.topK ?? GENERATE_DEFAULTS.topK,
    topP: options.topP ?? d.topP ?? GENERATE_DEFAULTS.topP,
    penalty: options.repetitionPenalty ?? d.repetitionPenalty ??
      GENERATE_DEFAULTS.repetitionPenalty,
    window: options.repetitionWindow ?? GENERATE_DEFAULTS.repetitionWindow,
  };
  const maxTokens = options.maxTokens ?? GENERATE_DEFAULTS.maxTokens;
  const stops = (options.stop ?? []).filter((s) => s.length > 0);
  const stopAtEos = options.stopAtEos ?? GENERATE_DEFAULTS.stopAtEos;
  const rng = createRng(options.seed ?? GENERATE_DEFAULTS.seed);
  const constraint = options.constraint;
  const frequency = options.frequencyPenalty ?? 0;
  const presence = options.presencePenalty ?? 0;
  const counts = new Map<number, number>();
  const bias = options.logitBias
    ? Object.entries(options.logitBias).map(([k, v]) => [Number(k), v] as const)
      .filter(([k, v]) => Number.isInteger(k) && k >= 0 && Number.isFinite(v))
    : undefined;
  const topN = options.topLogprobs ?? 0;
  const tok = model.tokenizer;
  const eog = new Set<number>(
    tok ? tok.eog : model.config.eosTokenIds,
  );
  if (tok?.eos !== undefined) eog.add(tok.eos);

  const state = options.state ?? model.createState();
  const continuing = state.tokens.length > 0;
  const ids = promptIds(model, prompt, options);
  if (ids.length === 0 && !continuing) {
    throw new RangeError(
      "generate: the prompt is empty (give at least BOS, or text with a tokenizer that adds it)",
    );
  }
  const stripLead = !continuing && tok !== undefined &&
    ids.every((id) => tok.tokenBytes(id).length === 0);
  const decoder = tok?.createStreamDecoder({
    stripLeadingSpace: stripLead && tok.addSpacePrefix,
  });

  const pending: number[] = [...ids];
  if (ids.length === 0) {
    // A continued state with nothing new: predict from its last token again.
    const last = state.tokens.pop()!;
    for (const l of state.layers) {
      const kv = l.kv as { length: number } | undefined;
      if (kv) kv.length--;
    }
    pending.push(last);
  }
  const out: number[] = [];
  let text = "", held = "";
  let finishReason: FinishReason = "length";
  let done = false;
  const t0 = performance.now();
  let t1: number | undefined, t2: number | undefined;
  const finish = (why: FinishReason) => {
    finishReason = why;
    done = true;
    pending.length = 0;
    t1 ??= performance.now();
    t2 = performance.now();
    if (why !== "stop") {
      text += held + (decoder ? decoder.flush() : "");
      held = "";
    }
  };
  const seq: Sequence = {
    promptIds: ids,
    state,
    pending,
    get done() {
      return done;
    },
    get generated() {
      return out.length;
    },
    next(logits: Float32Array): GeneratedToken | undefined {
      if (done) return undefined;
      t1 ??= performance.now();
      const step = out.length;
      if (step >= maxTokens) return void finish("length");
      if (options.signal?.aborted) return void finish("aborted");
      const raw = logits.slice();
      if (counts.size > 0) {
        for (const [t, c] of counts) {
          if (t < logits.length) {
            logits[t] -= frequency * c + (presence !== 0 ? presence : 0);
          }
        }
      }
      if (bias) {
        for (const [t, b] of bias) if (t < logits.length) logits[t] += b;
      }
      if (constraint) {
        if (constraint.finished()) return void finish("stop");
        constraint.mask(logits);
        if (!constraint.complete()) {
          for (const e of eog) logits[e] = -Infinity;
        } else if (stopAtEos) {
          // Complete: an end-of-generation token may end it here.
          for (const e of eog) if (e < logits.length) logits[e] = raw[e];
        }
      }
      const id = pick(logits, state.tokens, sampling, rng);
      if (constraint && logits[id] === -Infinity) {
        throw new RangeError(
          `generate: no token of the vocabulary can continue the constrained output after ${
            JSON.stringify(text + held)
          }`,
        );
      }
      if (stopAtEos && eog.has(id)) return void finish("eos");
      constraint?.accept(id);
      out.push(id);
      // ids past the tokenizer (a config.vocab_size padded for alignment) have no text
      held += decoder && id < tok!.vocabSize ? decoder.decodeToken(id) : "";
      let release: string;
      let stopped = false;
      let cut = -1;
      for (const s of stops) {
        const at = held.indexOf(s);
        if (at >= 0 && (cut < 0 || at < cut)) cut = at;
      }
      if (cut >= 0) {
        release = held.slice(0, cut);
        held = "";
        stopped = true;
      } else {
        const keep = holdBack(held, stops);
        release = held.slice(0, held.length - keep);
        held = held.slice(held.length - keep);
      }
      text += release;
      const token: GeneratedToken = {
        id,
        text: release,
        index: step,
        logprob: logSoftmaxAt(raw, id),
      };
      if (topN > 0) token.top = topLogSoftmax(raw, Math.min(topN, raw.length));
      if (frequency !== 0 || presence !== 0) {
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
      if (stopped) finish("stop");
      else if (step + 1 >= maxTokens) finish("length");
      else if (constraint?.finished()) finish("stop");
      else pending.push(id);
      return token;
    },
    abort() {
      if (!done) finish("aborted");
    },
    result(): GenerateResult {
      const end = t2 ?? performance.now();
      return {
        ids: out,
        text,
        promptIds: ids,
        finishReason,
        prefillMs: (t1 ?? end) - t0,
        decodeMs: end - (t1 ?? end),
        state,
      };
    },
  };
  return seq;
}

/**
 * Generates tokens from a prompt. The prompt is fed in one batch, then one
 * token per step through the KV cache. Each yielded token carries the text
 * it releases; the iterator's return value ({@link GenerateResult}) has the
 * whole text, the finish reason, timings and the state.
 *
 * Text of a SentencePiece model starts without the space the tokenizer
 * puts in front of text when the prompt holds no text (only BOS).
 *
 * @param model The model.
 * @param prompt Text, token ids, or chat messages (rendered with the
 *   model's chat template).
 * @param options Sampling, limits, stop strings, seed.
 * @returns An async generator of tokens.
 * @throws {RangeError} On an invalid option, or an empty prompt without a state.
 * @throws {TypeError} When a text prompt meets a model without tokenizer.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildTransformer, configFromHf, generate, transformerNetwork } from "@modelhost/modelhost/models";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 16, hidden_size: 8, intermediate_size: 16,
 *   num_hidden_layers: 1, num_attention_heads: 2,
 * });
 * const model = buildTransformer(cfg, initNetwork(createRegistry().use(LAYER_PLUGINS), transformerNetwork(cfg), 7));
 * const run = (seed: number) =>
 *   Array.fromAsync(generate(model, [1], { maxTokens: 8, temperature: 0.9, topK: 5, seed }), (t) => t.id);
 * assert((await run(3)).join() === (await run(3)).join());
 * ```
 */
export async function* generate(
  model: Transformer,
  prompt: Prompt,
  options: GenerateOptions = {},
): AsyncGenerator<GeneratedToken, GenerateResult, void> {
  const seq = startSequence(model, prompt, options);
  while (!seq.done) {
    const t = seq.next(model.forward(seq.pending.splice(0), seq.state));
    if (t) yield t;
  }
  return seq.result();
}

/**
 * Runs {@link generate} to the end and returns its result.
 *
 * @param model The model.
 * @param prompt Text, token ids, or chat messages.
 * @param options As for {@link generate}.
 * @returns The ids, text, finish reason, timings and state.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { buildTransformer, configFromHf, generateText, transformerNetwork } from "@modelhost/modelhost/models";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 16, hidden_size: 8, intermediate_size: 16,
 *   num_hidden_layers: 1, num_attention_heads: 2,
 * });
 * const model = buildTransformer(cfg, initNetwork(createRegistry().use(LAYER_PLUGINS), transformerNetwork(cfg), 7));
 * const r = await generateText(model, [1], { maxTokens: 4, greedy: true });
 * assert(r.ids.length === 4 && r.finishReason === "length");
 * ```
 */
export async function generateText(
  model: Transformer,
  prompt: Prompt,
  options: GenerateOptions = {},
): Promise<GenerateResult> {
  const it = generate(model, prompt, options);
  while (true) {
    const r = await it.next();
    if (r.done) return r.value;
  }
}
