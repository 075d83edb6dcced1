// A counting semaphore with a bounded FIFO queue: at most `max` holders at
// once, at most `maxQueue` waiting; more are refused with 503.

import { HttpError } from "./_http.ts";

interface Waiter {
  grant(release: () => void): void;
  fail(e: unknown): void;
}

/** Limits concurrent work (generations) and queues the rest in order. */
export class Limiter {
  #max: number;
  #maxQueue: number;
  #active = 0;
  #queue: Waiter[] = [];

  constructor(max: number, maxQueue: number) {
    this.#max = Math.max(1, max);
    this.#maxQueue = Math.max(0, maxQueue);
  }

  /** Holders now. */
  get active(): number {
    return this.#active;
  }

  /** Waiting now. */
  get queued(): number {
    return this.#queue.length;
  }

  #release(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.#queue.shift();
      if (next) next.grant(this.#release());
      else this.#active--;
    };
  }

  /**
   * Waits for a slot; resolves with the function that gives it back.
   * Rejects with 503 when the queue is full, or with the signal's reason
   * when it aborts while waiting.
   */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#active < this.#max) {
      this.#active++;
      return Promise.resolve(this.#release());
    }
    if (this.#queue.length >= this.#maxQueue) {
      return Promise.reject(
        new HttpError(
          503,
          `Too many generations: ${this.#active} running and ${this.#queue.length} queued (the queue holds ${this.#maxQueue})`,
          { "retry-after": "1" },
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.#queue.indexOf(w);
        if (i >= 0) this.#queue.splice(i, 1);
        reject(signal!.reason);
      };
      const w: Waiter = {
        grant: (release) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(release);
        },
        fail: reject,
      };
      this.#queue.push(w);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Fails every waiter (the server is closing). */
  close(): void {
    for (const w of this.#queue.splice(0)) {
      w.fail(new HttpError(503, "The server is closing"));
    }
  }
}
