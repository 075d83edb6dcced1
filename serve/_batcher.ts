// Adaptive batching of prediction requests: requests that arrive together
// (within `maxWaitMs` of the first one waiting, up to `maxBatch` rows) are
// concatenated along the batch dimension, run as one forward pass, and the
// output rows are handed back to each request.

import type { FloatTensor } from "../core/tensor.ts";

/** Options of a {@link Batcher}. */
export interface BatcherOptions {
  /** Most rows in one forward; 1 turns batching off. */
  maxBatch: number;
  /** Longest a request waits for others to join its batch, in milliseconds. */
  maxWaitMs: number;
  /** Told about every forward run: rows, requests in it, milliseconds. */
  onBatch?: (rows: number, requests: number, ms: number) => void;
}

interface Pending {
  x: FloatTensor;
  rows: number;
  resolve(y: FloatTensor): void;
  reject(e: unknown): void;
}

interface Queue {
  items: Pending[];
  rows: number;
  timer?: ReturnType<typeof setTimeout>;
}

/** The batch size (leading dimension) of a tensor; rank 1 counts as one row. */
function rowsOf(x: FloatTensor): number {
  return x.shape.length <= 1 ? 1 : x.shape[0];
}

/**
 * Collects forward requests and runs them in batches. Requests are grouped
 * by their shape past the batch dimension, so only tensors that stack are
 * concatenated.
 */
export class Batcher {
  #run: (x: FloatTensor) => FloatTensor;
  #opts: BatcherOptions;
  #queues = new Map<string, Queue>();
  #closed = false;

  constructor(run: (x: FloatTensor) => FloatTensor, options: BatcherOptions) {
    this.#run = run;
    this.#opts = options;
  }

  /** Queues one request; resolves with its own output rows. */
  submit(x: FloatTensor): Promise<FloatTensor> {
    if (this.#closed) {
      return Promise.reject(new Error("The model was unloaded"));
    }
    const rows = rowsOf(x);
    return new Promise<FloatTensor>((resolve, reject) => {
      const item: Pending = { x, rows, resolve, reject };
      if (this.#opts.maxBatch <= 1 || rows >= this.#opts.maxBatch) {
        this.#runBatch([item]);
        return;
      }
      const key = x.shape.slice(1).join(",");
      let q = this.#queues.get(key);
      if (!q) {
        q = { items: [], rows: 0 };
        this.#queues.set(key, q);
      }
      q.items.push(item);
      q.rows += rows;
      if (q.rows >= this.#opts.maxBatch) this.#drain(key, q, false);
      else if (q.timer === undefined) {
        q.timer = setTimeout(() => {
          q!.timer = undefined;
          this.#drain(key, q!, true);
        }, this.#opts.maxWaitMs);
      }
    });
  }

  /** Runs full batches (and, when `all`, what is left). */
  #drain(key: string, q: Queue, all: boolean): void {
    while (q.items.length > 0 && (all || q.rows >= this.#opts.maxBatch)) {
      const batch: Pending[] = [];
      let rows = 0;
      while (
        q.items.length > 0 &&
        (batch.length === 0 || rows + q.items[0].rows <= this.#opts.maxBatch)
      ) {
        const it = q.items.shift()!;
        rows += it.rows;
        batch.push(it);
      }
      q.rows -= rows;
      this.#runBatch(batch);
    }
    if (q.items.length === 0) {
      if (q.timer !== undefined) clearTimeout(q.timer);
      this.#queues.delete(key);
    }
  }

  #runBatch(batch: Pending[]): void {
    const t0 = performance.now();
    if (batch.length === 1) {
      const it = batch[0];
      try {
        const y = this.#run(it.x);
        this.#opts.onBatch?.(it.rows, 1, performance.now() - t0);
        it.resolve(y);
      } catch (e) {
        it.reject(e);
      }
      return;
    }
    const rest = batch[0].x.shape.slice(1);
    const rowSize = rest.reduce((a, b) => a * b, 1);
    const total = batch.reduce((a, b) => a + b.rows, 0);
    const data = new Float32Array(total * rowSize);
    let off = 0;
    for (const it of batch) {
      data.set(it.x.data.subarray(0, it.rows * rowSize), off);
      off += it.rows * rowSize;
    }
    let y: FloatTensor;
    try {
      y = this.#run({ data, shape: [total, ...rest] });
    } catch {
      // One bad request must not fail the others: run each on its own.
      for (const it of batch) this.#runBatch([it]);
      return;
    }
    this.#opts.onBatch?.(total, batch.length, performance.now() - t0);
    const outRest = y.shape.slice(1);
    const outRow = outRest.reduce((a, b) => a * b, 1);
    let at = 0;
    for (const it of batch) {
      it.resolve({
        data: y.data.slice(at * outRow, (at + it.rows) * outRow),
        shape: [it.rows, ...outRest],
      });
      at += it.rows;
    }
  }

  /** Runs everything waiting now (before the model is dropped). */
  flush(): void {
    for (const [key, q] of [...this.#queues]) this.#drain(key, q, true);
  }

  /** Stops the timers and fails whatever is still waiting. */
  close(): void {
    this.#closed = true;
    for (const q of this.#queues.values()) {
      if (q.timer !== undefined) clearTimeout(q.timer);
      for (const it of q.items) it.reject(new Error("The server is closing"));
    }
    this.#queues.clear();
  }
}
