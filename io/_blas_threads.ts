/**
 * The main thread's side of `sgemmMany`'s helper thread (io/_blas_helper.ts):
 * starts the worker on first use (the main thread runs every call until it
 * is ready), shares each list with it through a call counter, waits for
 * it, and stops it after `IDLE_MS` without lists (so an idle process can
 * exit) or on `stop()`. When a call fails on the helper, the main thread
 * runs that call itself and the helper is not used again.
 *
 * @module
 */

import { ADDRESS_FIELDS } from "./_blas_list.ts";

/** How long the helper stays without work before it stops. */
const IDLE_MS = 1000;

/** Control words, see io/_blas_helper.ts. */
const JOB = 0,
  DONE = 1,
  LIST = 2,
  NEXT = 3,
  COUNT = 4,
  READY = 5,
  FAILED = 6,
  ADDRESSES = 7,
  GO = 8;

/** Calls an address list holds (see {@link SgemmHelper.addresses}). */
export const ADDRESS_CALLS = 8;

/** A helper thread for lists of independent `cblas_sgemm` calls. */
export class SgemmHelper {
  #library: string;
  #packed: string | undefined;
  #spin: number;
  #worker: Worker | undefined;
  #memory: WebAssembly.Memory | null | undefined;
  /**
   * The address list (shared with the helper): {@link ADDRESS_CALLS}
   * calls of `ADDRESS_FIELDS` values whose matrices are absolute
   * addresses (io/_blas_list.ts), for `start(null, 0, count)`.
   */
  readonly addresses: Float64Array = new Float64Array(
    new SharedArrayBuffer(ADDRESS_CALLS * ADDRESS_FIELDS * 8),
  );
  #ctrl = new Int32Array(new SharedArrayBuffer(64));
  #job = 0;
  #pending = false;
  #broken = false;
  #last = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /**
   * @param library The BLAS library path the helper opens.
   * @param packed The kernel family suffix of packed jobs
   * (io/_blas_packed.ts), for a helper that runs them.
   * @param spin Milliseconds the helper polls for the next list after
   * each one before it sleeps.
   */
  constructor(library: string, packed?: string, spin = 0) {
    this.#library = library;
    this.#packed = packed;
    this.#spin = spin;
  }

  /** Whether the helper thread is running and takes lists. */
  get ready(): boolean {
    return this.#worker !== undefined && Atomics.load(this.#ctrl, READY) === 1;
  }

  /** Whether a call failed on the helper (it is not used again). */
  get broken(): boolean {
    return this.#broken;
  }

  /**
   * Shares a list with the helper when it is ready.
   *
   * @param memory The memory holding the list, or null for the address
   * list {@link addresses} (a helper serves one of the two kinds: with
   * the other kind it restarts).
   * @param packed With a null memory: the address list holds a packed
   * job's descriptor (`runPackedItems`), not calls.
   * @param deferred Wake the helper now but let it read the list only
   * after {@link go} (the caller fills the list while the helper wakes;
   * `finish` calls `go` if the caller did not).
   * @returns The counter the main thread takes its calls from.
   */
  start(
    memory: WebAssembly.Memory | null,
    list: number,
    count: number,
    packed = false,
    deferred = false,
  ): () => number {
    let k = 0;
    const alone = () => k++;
    if (
      this.#broken || count < 2 ||
      (memory !== null && !(memory.buffer instanceof SharedArrayBuffer))
    ) return alone;
    if (this.#worker && this.#memory !== memory) this.stop();
    if (!this.#worker) {
      this.#spawn(memory);
      return alone;
    }
    const ctrl = this.#ctrl;
    if (Atomics.load(ctrl, READY) !== 1) return alone;
    ctrl[LIST] = list;
    ctrl[COUNT] = count;
    ctrl[ADDRESSES] = memory === null ? (packed ? 2 : 1) : 0;
    Atomics.store(ctrl, NEXT, 0);
    ++this.#job;
    if (!deferred) Atomics.store(ctrl, GO, this.#job);
    Atomics.store(ctrl, JOB, this.#job);
    Atomics.notify(ctrl, JOB);
    this.#pending = true;
    return () => Atomics.add(ctrl, NEXT, 1);
  }

  /**
   * Lets the helper read the list of a deferred {@link start} (no-op
   * when none is pending or it was already let go).
   */
  go(): void {
    if (!this.#pending || Atomics.load(this.#ctrl, GO) === this.#job) return;
    Atomics.store(this.#ctrl, GO, this.#job);
    Atomics.notify(this.#ctrl, GO);
  }

  /**
   * Waits for the helper's calls of the list given to {@link start},
   * polling for up to `spin` ms before sleeping (the calling thread waits
   * either way; a wake-up from `Atomics.wait` took 70-120 µs on the 2-core
   * VM).
   *
   * @param spin Milliseconds to poll before sleeping.
   * @returns The call that failed on the helper (the caller runs it), or −1.
   */
  finish(spin = 0): number {
    if (!this.#pending) return -1;
    this.go();
    this.#pending = false;
    const ctrl = this.#ctrl;
    if (spin > 0) {
      const until = performance.now() + spin;
      while (
        Atomics.load(ctrl, DONE) !== this.#job && performance.now() < until
      ) {
        // poll
      }
    }
    for (;;) {
      const done = Atomics.load(ctrl, DONE);
      if (done === this.#job) break;
      Atomics.wait(ctrl, DONE, done);
    }
    this.#last = performance.now();
    this.#arm();
    const failed = Atomics.load(ctrl, FAILED) - 1;
    if (failed >= 0) {
      this.#broken = true;
      this.stop();
    }
    return failed;
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

  #spawn(memory: WebAssembly.Memory | null): void {
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
      memory: memory ?? undefined,
      ctrl: this.#ctrl,
      addrs: this.addresses,
      packed: this.#packed,
      spin: this.#spin,
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
