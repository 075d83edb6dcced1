/**
 * The main thread's side of `sgemmMany`'s helper thread (io/_blas_helper.ts):
 * starts the worker on first use (the main thread runs every call until it
 * is ready), hands it the second half of each list, waits for it, and
 * stops it after `idleMs` without lists (so an idle process can exit) or
 * on `stop()`. When the helper fails, its half runs on the main thread and
 * the helper is not used again.
 *
 * @module
 */

/** How long the helper stays without work before it stops. */
const IDLE_MS = 1000;

/** Control words, see io/_blas_helper.ts. */
const JOB = 0, DONE = 1, LIST = 2, FROM = 3, TO = 4, READY = 5, FAILED = 6;

/** A helper thread for lists of independent `cblas_sgemm` calls. */
export class SgemmHelper {
  #library: string;
  #worker: Worker | undefined;
  #memory: WebAssembly.Memory | undefined;
  #ctrl = new Int32Array(new SharedArrayBuffer(64));
  #job = 0;
  #pending: { from: number; to: number; list: number } | undefined;
  #broken = false;
  #last = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** @param library The BLAS library path the helper opens. */
  constructor(library: string) {
    this.#library = library;
  }

  /**
   * Gives the helper the second half of a list when it is ready.
   *
   * @returns How many calls, from the first, the main thread runs.
   */
  start(memory: WebAssembly.Memory, list: number, count: number): number {
    if (
      this.#broken || count < 2 ||
      !(memory.buffer instanceof SharedArrayBuffer)
    ) return count;
    if (this.#worker && this.#memory !== memory) this.stop();
    if (!this.#worker) {
      this.#spawn(memory);
      return count;
    }
    const ctrl = this.#ctrl;
    if (Atomics.load(ctrl, READY) !== 1) return count;
    const half = count >> 1;
    ctrl[LIST] = list;
    ctrl[FROM] = half;
    ctrl[TO] = count;
    Atomics.store(ctrl, JOB, ++this.#job);
    Atomics.notify(ctrl, JOB);
    this.#pending = { from: half, to: count, list };
    return half;
  }

  /**
   * Waits for the helper's half of the list given to {@link start}.
   *
   * @returns The range the helper failed on (the caller runs it), or undefined.
   */
  finish(): { from: number; to: number } | undefined {
    const p = this.#pending;
    if (!p) return undefined;
    this.#pending = undefined;
    const ctrl = this.#ctrl;
    for (;;) {
      const done = Atomics.load(ctrl, DONE);
      if (done === this.#job) break;
      Atomics.wait(ctrl, DONE, done);
    }
    this.#last = performance.now();
    this.#arm();
    if (Atomics.load(ctrl, FAILED) !== 0) {
      this.#broken = true;
      this.stop();
      return { from: p.from, to: p.to };
    }
    return undefined;
  }

  /** Stops the helper (it starts again on the next list). */
  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#worker) return;
    Atomics.store(this.#ctrl, JOB, -1);
    Atomics.notify(this.#ctrl, JOB);
    this.#worker.terminate();
    this.#worker = undefined;
    this.#memory = undefined;
  }

  #spawn(memory: WebAssembly.Memory): void {
    this.#ctrl = new Int32Array(new SharedArrayBuffer(64));
    this.#job = 0;
    try {
      this.#worker = new Worker(
        new URL("./_blas_helper.ts", import.meta.url).href,
        { type: "module" },
      );
    } catch {
      this.#broken = true;
      return;
    }
    this.#worker.onerror = (e) => {
      e.preventDefault();
      this.#broken = true;
      this.stop();
    };
    this.#memory = memory;
    this.#worker.postMessage({
      library: this.#library,
      memory,
      ctrl: this.#ctrl,
    });
    this.#last = performance.now();
    this.#arm();
  }

  #arm(): void {
    if (this.#timer !== undefined) return;
    const wait = Math.max(1, this.#last + IDLE_MS - performance.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (performance.now() - this.#last >= IDLE_MS) this.stop();
      else this.#arm();
    }, wait);
  }
}
