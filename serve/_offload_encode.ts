// Long texts are tokenized off the event loop (issue 18): a prompt under the
// 413 limit (up to 16 characters per token of context: about 2 M characters
// for a 128K-context model) took about 0.5 s to tokenize on the request path,
// and every other request waited that long. Here the server runs its usual
// synchronous code (promptIds, chat templates, embed) with the model's
// tokenizer watched: the first text of OFFLOAD_MIN_CHARS or more that it
// asks to encode stops the run; the text is encoded in a worker
// (serve/_tokenize_worker.ts, the same tokenizer built from the same files by
// the same code, so the ids are the same), and the run starts again with the
// answer at hand. Shorter texts, and tokenizers whose files the worker
// cannot find, are encoded in place as before.

import type { EncodeOptions, Tokenizer } from "../tokenizers/tokenizer.ts";
import { checkPromptLength } from "./_prompt_limit.ts";

/** Texts this long or longer are encoded in the worker. */
export const OFFLOAD_MIN_CHARS = 16_384;

const sources = new WeakMap<Tokenizer, string>();

/** Records the model file or folder a loaded tokenizer was built from. */
export function registerTokenizerSource(
  tok: Tokenizer | undefined,
  path: string,
): void {
  if (tok) sources.set(tok, path);
}

const STOP = Symbol("encode in the worker");

interface Pending {
  text: string;
  options: EncodeOptions | undefined;
  key: string;
}

function keyOf(options: EncodeOptions | undefined): string {
  return JSON.stringify(options ?? {});
}

/**
 * The ids as a plain array, copied in slices with a yield between them:
 * `Array.from` on 2.4 M ids held the event loop for 0.35 s, one loop
 * over all of them for 0.19 s; slices joined by one `concat` take a few ms.
 */
async function toArray(ids: Int32Array): Promise<number[]> {
  const parts: number[][] = [];
  const step = 1 << 15;
  for (let at = 0; at < ids.length; at += step) {
    const end = Math.min(ids.length, at + step);
    const part = new Array<number>(end - at);
    for (let i = at; i < end; i++) part[i - at] = ids[i];
    parts.push(part);
    if (end < ids.length) await new Promise((r) => setTimeout(r, 0));
  }
  return ([] as number[]).concat(...parts);
}

/** One worker for the duration of one request's runs. */
class EncodeWorker {
  #worker: Worker | undefined;
  #next = 0;

  encode(
    path: string,
    text: string,
    options: EncodeOptions | undefined,
  ): Promise<number[]> {
    this.#worker ??= new Worker(
      new URL("./_tokenize_worker.ts", import.meta.url),
      { type: "module" },
    );
    const w = this.#worker;
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      const onMessage = (
        e: MessageEvent<
          {
            id: number;
            ids?: Int32Array;
            error?: { name: string; message: string };
          }
        >,
      ) => {
        if (e.data.id !== id) return;
        w.removeEventListener("message", onMessage);
        w.removeEventListener("error", onError);
        if (e.data.ids) {
          toArray(e.data.ids).then(resolve, reject);
          return;
        }
        const { name, message } = e.data.error!;
        const Ctor = name === "RangeError"
          ? RangeError
          : name === "TypeError"
          ? TypeError
          : name === "SyntaxError"
          ? SyntaxError
          : Error;
        reject(new Ctor(message));
      };
      const onError = (e: ErrorEvent) => {
        e.preventDefault();
        w.removeEventListener("message", onMessage);
        w.removeEventListener("error", onError);
        reject(new Error(`The tokenizer worker failed: ${e.message}`));
      };
      w.addEventListener("message", onMessage);
      w.addEventListener("error", onError);
      w.postMessage({ id, path, text, options });
    });
  }

  close(): void {
    this.#worker?.terminate();
    this.#worker = undefined;
  }
}

/**
 * Runs `fn` (synchronous code that tokenizes with `tok`) so that no text of
 * {@link OFFLOAD_MIN_CHARS} characters or more is encoded on the event
 * loop: such texts are encoded in a worker and `fn` runs again.
 *
 * @param tok The tokenizer `fn` uses (nothing is watched when undefined).
 * @param fn The work.
 * @param prefetch Texts (with their encode options) `fn` will ask for.
 * @returns What `fn` returns.
 */
export async function offloadEncode<T>(
  tok: Tokenizer | undefined,
  fn: () => T,
  prefetch: readonly { text: string; options?: EncodeOptions }[] = [],
): Promise<T> {
  const path = tok ? sources.get(tok) : undefined;
  if (!tok || path === undefined) return fn();
  const done = new Map<string, Map<string, number[]>>();
  const worker = new EncodeWorker();
  const own = Object.hasOwn(tok, "encode");
  const base = tok.encode;
  try {
    // Texts known to be asked for, encoded up front, so that work `fn` does
    // between encodes (an embedding's forward pass) is not done twice.
    for (const { text, options } of prefetch) {
      if (text.length < OFFLOAD_MIN_CHARS) continue;
      checkPromptLength(tok, text);
      const ids = await worker.encode(path, text, options);
      let byKey = done.get(text);
      if (!byKey) done.set(text, byKey = new Map());
      byKey.set(keyOf(options), ids);
    }
    for (let round = 0;; round++) {
      let pending: Pending | undefined;
      tok.encode = (text, options) => {
        if (text.length < OFFLOAD_MIN_CHARS) {
          return base.call(tok, text, options);
        }
        checkPromptLength(tok, text);
        const key = keyOf(options);
        const hit = done.get(text)?.get(key);
        if (hit) return hit.slice();
        if (round >= 64) return base.call(tok, text, options);
        pending = { text, options, key };
        throw STOP;
      };
      try {
        const out = fn();
        // a stop caught and swallowed on the way: run again with the ids
        if (pending === undefined) return out;
      } catch (e) {
        if (e !== STOP && !(pending && isStop(e))) throw e;
      } finally {
        if (own) tok.encode = base;
        else delete (tok as { encode?: unknown }).encode;
      }
      const p = pending!;
      const ids = await worker.encode(path, p.text, p.options);
      let byKey = done.get(p.text);
      if (!byKey) done.set(p.text, byKey = new Map());
      byKey.set(p.key, ids);
    }
  } finally {
    worker.close();
  }
}

/** Code between the tokenizer and `fn` may wrap the stop in its own error. */
function isStop(e: unknown): boolean {
  let x: unknown = e;
  for (let i = 0; i < 8 && x instanceof Error; i++) {
    if ((x as { cause?: unknown }).cause === STOP) return true;
    x = (x as { cause?: unknown }).cause;
  }
  return false;
}
