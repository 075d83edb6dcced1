/**
 * Continuous batching: many generations on one model at once, each step
 * one batched forward pass over every running sequence
 * ({@link Transformer.forwardBatch}: the projections see all their rows
 * together, so the weights are read once per step, while each sequence
 * attends over its own KV cache and samples with its own generator).
 * Sequences join and leave between steps; a newcomer's prompt is fed in
 * chunks of at most `prefillChunk` tokens per step (together with one
 * token of every sequence already generating), so a long prompt does not
 * stall the others. Each sequence gets exactly the tokens
 * {@link generate} gives it alone: the same sampler, and logits that the
 * batched pass computes bit for bit as a pass of its own would.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { BatchEngine, buildTransformer, configFromHf, generateText, transformerNetwork } from "@modelhost/modelhost/models";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 16, hidden_size: 8, intermediate_size: 16,
 *   num_hidden_layers: 1, num_attention_heads: 2,
 * });
 * const model = buildTransformer(cfg, initNetwork(createRegistry().use(LAYER_PLUGINS), transformerNetwork(cfg), 7));
 * const engine = new BatchEngine(model);
 * const prompts = [[1, 2], [1, 5, 6, 7], [3]];
 * const texts = await Promise.all(prompts.map((p) =>
 *   Array.fromAsync(engine.generate(p, { maxTokens: 6, greedy: true }), (t) => t.id)
 * ));
 * for (const [i, p] of prompts.entries()) {
 *   const alone = await generateText(model, p, { maxTokens: 6, greedy: true });
 *   assert(alone.ids.join() === texts[i].join());
 * }
 * engine.close();
 * ```
 *
 * @module
 */

import {
  type GeneratedToken,
  type GenerateOptions,
  type GenerateResult,
  type Prompt,
  type Sequence,
  startSequence,
} from "./generate.ts";
import type { BatchItem, Transformer } from "./transformer.ts";

/** What one step of a {@link BatchEngine} did (for metrics). */
export interface BatchStep {
  /** Sequences in the forward pass. */
  sequences: number;
  /** Token rows in the forward pass (prompt chunks plus one per generating sequence). */
  rows: number;
  /** Of those, prompt tokens. */
  promptRows: number;
  /** Milliseconds of the forward pass and sampling. */
  ms: number;
}

/** Options of {@link BatchEngine}. */
export interface BatchEngineOptions {
  /** Sequences that run at once; more wait, first come first served. @default {8} */
  maxSequences?: number;
  /**
   * Most prompt tokens fed in one step while other sequences generate
   * (shared by the newcomers, oldest first); a step with no sequence
   * generating takes up to four times as many. @default {64}
   */
  prefillChunk?: number;
  /**
   * Lets other work run between steps (streamed tokens flush, requests
   * are answered). @default {a MessageChannel round trip, and a timer turn every 8 ms}
   */
  yieldNow?: () => Promise<void>;
  /**
   * Whether prompts that wait together are prefilled over several steps:
   * each step takes whole prompts (oldest first) until it holds more than
   * half of the prompts still waiting, so that the median newcomer gets
   * its first token from the first step while the others follow a step
   * later. Where the quantized products are compute-bound, a step costs
   * in proportion to its rows, and eight prompts arriving together would
   * otherwise all wait for one step of all their tokens. Every sequence
   * gets the same tokens either way. @default {true}
   */
  splitPrefill?: boolean;
  /**
   * Milliseconds an idle engine waits before its first step, so that
   * generations started together (a burst of requests, which a server
   * takes several event-loop turns each to parse and route) join that
   * step rather than the later ones; 0 waits one yield only. @default {5}
   */
  gatherMs?: number;
  /** Told about every step. */
  onStep?: (step: BatchStep) => void;
}

/** A sequence in the engine, with what its reader has not taken yet. */
interface Slot {
  seq: Sequence;
  tokens: GeneratedToken[];
  error?: unknown;
  /** The reader is waiting: wake it. */
  wake?: () => void;
  /** The reader left (the generator was closed). */
  left: boolean;
  signal?: AbortSignal;
}

/**
 * Yields to the event loop between steps: a MessageChannel round trip
 * (a `setTimeout(0)` chain is clamped to ~4 ms a turn), but a real timer
 * turn once 8 ms have passed since the last one, without which timers
 * (request time limits, other clients' timeouts) were measured waiting
 * 100–250 ms behind a busy engine.
 */
function channelYield(): { yieldNow: () => Promise<void>; close(): void } {
  const timer = () => new Promise<void>((r) => setTimeout(r, 0));
  if (typeof MessageChannel === "undefined") {
    return { yieldNow: timer, close() {} };
  }
  const channel = new MessageChannel();
  const waiting: (() => void)[] = [];
  channel.port1.onmessage = () => waiting.shift()?.();
  let lastTimer = performance.now();
  return {
    yieldNow: () => {
      const now = performance.now();
      if (now - lastTimer >= 8) {
        lastTimer = now;
        return timer();
      }
      return new Promise<void>((resolve) => {
        waiting.push(resolve);
        channel.port2.postMessage(null);
      });
    },
    close() {
      channel.port1.close();
      channel.port2.close();
      for (const w of waiting.splice(0)) w();
    },
  };
}

/**
 * Runs generations on one model as a continuously batched whole (see the
 * module notes). Each {@link BatchEngine.generate} call behaves like
 * {@link generate} with the same arguments.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { BatchEngine, buildTransformer, configFromHf, transformerNetwork } from "@modelhost/modelhost/models";
 * import { initNetwork } from "@modelhost/modelhost/core";
 * import { LAYER_PLUGINS } from "@modelhost/modelhost/layers";
 * import { createRegistry } from "@modelhost/modelhost/registry";
 * const cfg = configFromHf({
 *   model_type: "llama", vocab_size: 16, hidden_size: 8, intermediate_size: 16,
 *   num_hidden_layers: 1, num_attention_heads: 2,
 * });
 * const model = buildTransformer(cfg, initNetwork(createRegistry().use(LAYER_PLUGINS), transformerNetwork(cfg), 3));
 * const steps: number[] = [];
 * const engine = new BatchEngine(model, { onStep: (s) => steps.push(s.sequences) });
 * await Promise.all([[1], [2, 3]].map((p) => Array.fromAsync(engine.generate(p, { maxTokens: 4, greedy: true }))));
 * assert(steps.includes(2)); // both sequences in one forward pass
 * engine.close();
 * ```
 */
export class BatchEngine {
  /** The model. */
  readonly model: Transformer;
  #max: number;
  #chunk: number;
  #yield: () => Promise<void>;
  #closeYield: () => void;
  #onStep?: (step: BatchStep) => void;
  #split: boolean;
  #gather: number;
  #running: Slot[] = [];
  #waiting: Slot[] = [];
  #looping = false;
  #closed = false;

  /**
   * An engine for one model; its loop runs while it has sequences.
   *
   * @param model The model.
   * @param options Limits and hooks.
   */
  constructor(model: Transformer, options: BatchEngineOptions = {}) {
    this.model = model;
    this.#max = options.maxSequences ?? 8;
    this.#chunk = options.prefillChunk ?? 64;
    if (!(Number.isInteger(this.#max) && this.#max >= 1)) {
      throw new RangeError(
        `BatchEngine: maxSequences must be an integer ≥ 1, got ${this.#max}`,
      );
    }
    if (!(Number.isInteger(this.#chunk) && this.#chunk >= 1)) {
      throw new RangeError(
        `BatchEngine: prefillChunk must be an integer ≥ 1, got ${this.#chunk}`,
      );
    }
    if (options.yieldNow) {
      this.#yield = options.yieldNow;
      this.#closeYield = () => {};
    } else {
      const c = channelYield();
      this.#yield = c.yieldNow;
      this.#closeYield = c.close;
    }
    this.#onStep = options.onStep;
    this.#split = options.splitPrefill ?? true;
    this.#gather = options.gatherMs ?? 5;
    if (!(Number.isFinite(this.#gather) && this.#gather >= 0)) {
      throw new RangeError(
        `BatchEngine: gatherMs must be a number ≥ 0, got ${this.#gather}`,
      );
    }
  }

  /** Sequences in the running batch. */
  get active(): number {
    return this.#running.length;
  }

  /** Sequences waiting for a place in it. */
  get queued(): number {
    return this.#waiting.length;
  }

  /**
   * Generates from a prompt inside the batch; the same contract and the
   * same tokens as {@link generate}. Closing the iterator early (a
   * `break`) takes the sequence out at the next step.
   *
   * @param prompt Text, token ids, or chat messages.
   * @param options As for {@link generate} (a `state` continues a sequence).
   * @returns An async generator of tokens whose return value is the result.
   * @throws {RangeError} On an invalid option or an empty prompt (at the first `next()`).
   * @throws {Error} When the engine was closed.
   */
  async *generate(
    prompt: Prompt,
    options: GenerateOptions = {},
  ): AsyncGenerator<GeneratedToken, GenerateResult, void> {
    if (this.#closed) throw new Error("BatchEngine: closed");
    const slot: Slot = {
      seq: startSequence(this.model, prompt, options),
      tokens: [],
      left: false,
      signal: options.signal,
    };
    this.#waiting.push(slot);
    this.#start();
    try {
      while (true) {
        if (slot.tokens.length > 0) {
          yield slot.tokens.shift()!;
          continue;
        }
        if (slot.error !== undefined) throw slot.error;
        if (slot.seq.done) return slot.seq.result();
        await new Promise<void>((r) => slot.wake = r);
        slot.wake = undefined;
      }
    } finally {
      slot.left = true;
    }
  }

  /** Ends every sequence (their readers get an error) and refuses new ones. */
  close(): void {
    this.#closed = true;
    const err = new Error("BatchEngine: closed");
    for (const s of [...this.#running, ...this.#waiting]) {
      s.error ??= err;
      s.seq.abort();
      s.wake?.();
    }
    this.#running = [];
    this.#waiting = [];
    this.#closeYield();
  }

  #start(): void {
    if (this.#looping) return;
    this.#looping = true;
    this.#run().catch((e) => {
      // Not expected (#step catches model errors): fail everyone rather than hang.
      this.#looping = false;
      for (const s of [...this.#running, ...this.#waiting]) {
        s.error ??= e;
        s.seq.abort();
        s.wake?.();
      }
      this.#running = [];
      this.#waiting = [];
    });
  }

  async #run(): Promise<void> {
    // Let callers that start together join the first step.
    if (this.#gather > 0) {
      await new Promise((r) => setTimeout(r, this.#gather));
    } else await this.#yield();
    while (true) {
      if (this.#closed) {
        this.#looping = false;
        return;
      }
      while (this.#running.length < this.#max && this.#waiting.length > 0) {
        this.#running.push(this.#waiting.shift()!);
      }
      // Readers that left, and aborted sequences, go now.
      for (const s of this.#running) {
        if (!s.seq.done && (s.left || s.signal?.aborted)) s.seq.abort();
      }
      this.#running = this.#running.filter((s) => {
        if (s.seq.done) s.wake?.();
        return !s.seq.done;
      });
      if (this.#running.length === 0) {
        if (this.#waiting.length === 0) {
          // Decided in the same turn as the check: a later generate() starts a new loop.
          this.#looping = false;
          return;
        }
        continue;
      }
      this.#step();
      await this.#yield();
    }
  }

  /** One forward pass over every running sequence, and what follows from it. */
  #step(): void {
    const t0 = performance.now();
    const generating = this.#running.filter((s) => s.seq.generated > 0).length;
    let budget = generating > 0 ? this.#chunk : 4 * this.#chunk;
    // Prompts waiting together are split over steps (see `splitPrefill`):
    // this one takes them until it holds more than half of them.
    let most = Infinity;
    if (this.#split) {
      let waiting = 0;
      for (const s of this.#running) if (s.seq.generated === 0) waiting++;
      most = (waiting >> 1) + 1;
    }
    const items: BatchItem[] = [];
    const fed: Slot[] = [];
    let promptRows = 0, prompts = 0;
    for (const s of this.#running) {
      const pending = s.seq.pending;
      const decoding = s.seq.generated > 0;
      if (!decoding && prompts >= most) continue;
      const n = decoding ? 1 : Math.min(pending.length, budget);
      if (n === 0) continue;
      if (!decoding) {
        budget -= n;
        promptRows += n;
        prompts++;
      }
      items.push({ ids: pending.splice(0, n), state: s.seq.state });
      fed.push(s);
    }
    let logits: Float32Array[];
    try {
      logits = this.model.forwardBatch(items);
    } catch (e) {
      for (const s of fed) {
        s.error = e;
        s.seq.abort();
        s.wake?.();
      }
      return;
    }
    for (const [i, s] of fed.entries()) {
      if (s.seq.pending.length > 0) continue; // more of its prompt to come
      try {
        const t = s.seq.next(logits[i]);
        if (t) s.tokens.push(t);
      } catch (e) {
        s.error = e;
        s.seq.abort();
      }
      s.wake?.();
    }
    this.#onStep?.({
      sequences: items.length,
      rows: items.reduce((a, it) => a + it.ids.length, 0),
      promptRows,
      ms: performance.now() - t0,
    });
  }
}
