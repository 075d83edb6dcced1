/**
 * A small persistent pool of module workers sharing the kernel memory. The
 * calling thread posts one job per worker through a control slot in the
 * shared memory (sequence number, function id, f64 arguments), computes
 * its own part, then waits for the workers' done counters. No messages are
 * exchanged per job, so a job costs a few atomic operations, plus a futex
 * wake when a worker had gone to sleep.
 *
 * Workers are module workers created from `_worker.ts` next to this file;
 * where that fails (no Worker, no SharedArrayBuffer, a bundler that drops
 * the file) the pool reports the error and callers stay single-threaded.
 *
 * @module
 */

/** Bytes of one worker's control slot. */
export const SLOT_BYTES = 256;
const SEQ = 0;
const DONE = 1;
const FN = 2;
const NARGS = 3;
const ARGS_BYTE = 16;
const MAX_ARGS = 26;
/**
 * 1 once the worker has instantiated the kernels and read its first
 * sequence number, never cleared (Int32 index; after the arguments):
 * what {@link PendingPool.ready} looks for. `AWAKE` cannot tell it: a
 * worker with no job spins for a moment, then clears `AWAKE` and sleeps,
 * so a caller that looks between two long kernels (a prefill's GEMMs,
 * 30–60 ms apart) nearly always found 0 and never adopted the pool
 * (a 2048×4 Q8_0 prefill after the idle timer ran wholly on one thread).
 */
const READY = 57;
/**
 * Whether the worker is polling for work (1) rather than asleep or about
 * to sleep (0), as the worker last wrote it (Int32 index; after the
 * arguments).
 */
const AWAKE = 59;
/**
 * The sequence number of the last job claimed, by its worker or taken
 * back by the caller (Int32 index; after the arguments).
 */
const CLAIM = 60;
/**
 * The touch-after request (Int32 indices): a list of `(ptr, bytes)`
 * ranges the worker reads through once its part is done, while it would
 * otherwise wait (see the `touch` kernel), their count, and the read limit.
 */
const TOUCH_LIST = 61;
const TOUCH_N = 62;
const TOUCH_LIM = 63;
/**
 * 1 when the job is a list of chunks that the threads claim one at a time
 * (Int32 index; see {@link WorkerPool.runChunks}): the arguments then hold
 * the chunk table's address, the chunk count and the counter's address.
 */
const CHUNKED = 58;
/** How long the caller waits for a worker before giving up (a dead worker). */
const JOB_TIMEOUT_MS = 120_000;
/**
 * A wait this long (ms) for a worker's part after the caller's own (or a
 * half the caller's own part's time, if longer), or spent posting
 * the parts, counts as a stall: parts are shared in chunks of a few
 * microseconds (a thirty-second of a job, a sixteenth of a thread's
 * share), so only a worker thread that lost its core mid-chunk keeps the
 * caller waiting this long, and only a caller that lost its own (to the
 * worker it woke, where the other core is busy elsewhere) posts this long.
 */
const STALL_WAIT_MS = 0.5;
/** First and longest single-threaded period after a stall (ms). */
const BACKOFF_MIN_MS = 8;
const BACKOFF_MAX_MS = 128;
/** Stall-free time (ms) after which the backoff starts again from its least. */
const BACKOFF_RESET_MS = 1024;

/**
 * The realm's stall backoff (see {@link WorkerPool.available}): the end
 * of the current single-threaded period, its length, the last stall.
 */
const backoff = { soloUntil: 0, ms: 0, lastStall: -Infinity };

/** Options of {@link WorkerPool}. */
export interface PoolOptions {
  /** The compiled kernel module. */
  module: WebAssembly.Module;
  /** The shared memory the module imports. */
  memory: WebAssembly.Memory;
  /** Byte offset of the first control slot (one slot per worker). */
  ctrl: number;
  /** Export names; a job names its function by index into this list. */
  names: string[];
  /** Number of workers. */
  workers: number;
  /** Spin iterations a worker polls before sleeping. */
  spin: number;
}

/** One part of a job: the arguments for one thread. */
export type JobArgs = number[];

/** Whether `Atomics.wait` may block this thread (not a browser main thread). */
function canBlock(): boolean {
  try {
    const a = new Int32Array(new SharedArrayBuffer(4));
    Atomics.wait(a, 0, 1, 0); // value differs: returns at once, or throws
    return true;
  } catch {
    return false;
  }
}

/** The pool. Create with {@link startPool}. */
export class WorkerPool {
  /** Number of workers (the caller's thread is not counted). */
  readonly size: number;
  readonly #workers: Worker[];
  readonly #ctrl: Int32Array[];
  readonly #args: Float64Array[];
  readonly #seq: number[];
  readonly #block: boolean;
  #closed = false;
  /** Parts taken back from workers that had not started them (a count, for tests and tuning). */
  takenBack = 0;
  /**
   * Jobs on which a worker stalled (a count, for tests and tuning): it was
   * polling for work when the job was posted yet had not claimed its part
   * by the time the caller had run its own, or the caller waited more than
   * {@link STALL_WAIT_MS} (or half its own part's time) for its
   * part, or took that long to post the job. Either way the worker's thread was
   * runnable but not running: the host (a VM's other tenants, another
   * process) holds its core. See {@link WorkerPool.available}.
   */
  stalls = 0;
  /**
   * Time spent in {@link WorkerPool.run} (ms, a running total, for
   * benchmarks): posting the parts, running this thread's own part and
   * the parts taken back, and waiting for the workers' parts.
   */
  readonly time = { post: 0, own: 0, wait: 0 };

  /** Use {@link startPool}. */
  constructor(workers: Worker[], memory: WebAssembly.Memory, ctrl: number) {
    this.size = workers.length;
    this.#workers = workers;
    this.#ctrl = workers.map((_, i) =>
      new Int32Array(memory.buffer, ctrl + i * SLOT_BYTES, SLOT_BYTES / 4)
    );
    this.#args = workers.map((_, i) =>
      new Float64Array(
        memory.buffer,
        ctrl + i * SLOT_BYTES + ARGS_BYTE,
        MAX_ARGS,
      )
    );
    this.#seq = this.#ctrl.map((c) => Atomics.load(c, SEQ));
    this.#block = canBlock();
  }

  /**
   * Whether jobs should be split over the workers now: false for a while
   * after a stall. Where two threads get one core's time (a loaded host),
   * a worker that polls for work takes that time from the caller and
   * every job waits for its share, so a split decode runs at half the
   * speed of one thread; single-threaded meanwhile, the idle worker goes
   * to sleep and the caller gets the core. The period doubles with each
   * stall that follows a retry (8 ms up to 128 ms) and starts again
   * from 8 ms after 1 s without one. The load is the machine's, not the
   * pool's: every pool of the realm shares this state, and a pool started
   * after the idle timer stopped the last one starts where it stood.
   *
   * @param now `performance.now()`.
   * @returns Whether to split.
   */
  available(now: number): boolean {
    return now >= backoff.soloUntil;
  }

  #stalled(): void {
    this.stalls++;
    const now = performance.now();
    backoff.ms = now - backoff.lastStall > BACKOFF_RESET_MS
      ? BACKOFF_MIN_MS
      : Math.min(BACKOFF_MAX_MS, Math.max(BACKOFF_MIN_MS, 2 * backoff.ms));
    backoff.lastStall = now;
    backoff.soloUntil = now + backoff.ms;
  }

  /**
   * Runs `parts[0]` on this thread through `local` and `parts[1..]` on the
   * workers (one each), and returns when all are done.
   *
   * @param fn Function id (index into the pool's names).
   * @param local Runs one part on this thread.
   * @param parts Argument lists, at most `size + 1`.
   * @param touch Ranges for the workers to read through after their part
   * (`list`: address of `n` i32 pairs `ptr, bytes`; `lim`: read limit), or
   * none.
   * @throws {Error} When a worker's kernel trapped or a worker stopped answering.
   */
  run(
    fn: number,
    local: (args: JobArgs) => void,
    parts: JobArgs[],
    touch?: { list: number; n: number; lim: number },
    chunked = false,
  ): void {
    if (this.#closed) throw new Error("Kernel worker pool is closed");
    if (parts.length - 1 > this.size) {
      throw new RangeError(
        `Cannot split a job in ${parts.length} parts over ${this.size} workers and the caller`,
      );
    }
    let polling = 0; // bit w: worker w was polling when its part was posted
    const posted = performance.now();
    for (let w = 0; w + 1 < parts.length; w++) {
      const a = parts[w + 1];
      if (a.length > MAX_ARGS) {
        throw new RangeError(
          `A kernel job takes at most ${MAX_ARGS} arguments, got ${a.length}`,
        );
      }
      const ctrl = this.#ctrl[w];
      this.#args[w].set(a);
      ctrl[FN] = fn;
      ctrl[NARGS] = a.length;
      ctrl[CHUNKED] = chunked ? 1 : 0;
      ctrl[TOUCH_N] = touch?.n ?? 0;
      ctrl[TOUCH_LIST] = touch?.list ?? 0;
      ctrl[TOUCH_LIM] = touch?.lim ?? 0;
      const s = ++this.#seq[w];
      Atomics.store(ctrl, SEQ, s);
      // A worker that still polls after the new sequence number is out
      // sees it without a wake-up (it clears the flag before it sleeps,
      // and its wait returns at once once the number moved), so only a
      // sleeping one costs the futex call.
      if (Atomics.load(ctrl, AWAKE) === 1) polling |= 1 << w;
      else Atomics.notify(ctrl, SEQ);
    }
    // Posting takes a microsecond; longer, this thread lost its core (to
    // the worker it woke, where the other core is busy elsewhere).
    const started = performance.now();
    let stalled = started - posted > STALL_WAIT_MS;
    let error: unknown;
    try {
      local(parts[0]);
    } catch (e) {
      error = e;
    }
    // A worker's last chunk may keep the caller waiting about a chunk's
    // time (a sixteenth of a thread's share in shared jobs; static splits
    // are near equal): a long part (a large model's output head, a
    // prefill GEMM) allows a longer wait.
    const ownEnd = performance.now();
    const limit = Math.max(STALL_WAIT_MS, (ownEnd - started) / 2);
    let takenMs = 0;
    for (let w = 0; w + 1 < parts.length; w++) {
      const ctrl = this.#ctrl[w];
      const s = this.#seq[w];
      // A worker that has not started its part yet (asleep, or its core
      // busy elsewhere) loses it: this thread runs it instead of waiting
      // for the wake-up. Exactly one side claims each job.
      if (Atomics.compareExchange(ctrl, CLAIM, s - 1, s) === s - 1) {
        this.takenBack++;
        // polling all along the caller's part, yet not started: not running
        if (polling & (1 << w)) stalled = true;
        const t = performance.now();
        try {
          local(parts[w + 1]);
        } catch (e) {
          error ??= e;
        }
        takenMs += performance.now() - t;
        continue;
      }
      if (Atomics.load(ctrl, DONE) === s) {
        if (ctrl[NARGS] !== 0) {
          error ??= new Error(`A kernel trapped in worker ${w}`);
        }
        continue;
      }
      const t0 = performance.now();
      const deadline = t0 + JOB_TIMEOUT_MS;
      // Poll until a wait would count as a stall anyway, then sleep: a
      // worker's last chunk can take tens of microseconds (the output
      // head's), and waking a sleeping thread costs as much in a VM.
      let spins = 0;
      while (Atomics.load(ctrl, DONE) !== s) {
        if ((++spins & 255) !== 0) continue;
        // the clock costs more than a poll: read it now and then
        const now = performance.now();
        if (now > deadline) {
          throw new Error(
            `Kernel worker ${w} did not finish a job within ${JOB_TIMEOUT_MS} ms`,
          );
        }
        if (this.#block && now - t0 >= limit) {
          Atomics.wait(ctrl, DONE, Atomics.load(ctrl, DONE), 50);
        }
      }
      if (performance.now() - t0 > limit) stalled = true;
      if (ctrl[NARGS] !== 0) {
        error ??= new Error(`A kernel trapped in worker ${w}`);
      }
    }
    const time = this.time;
    time.post += started - posted;
    time.own += ownEnd - started + takenMs;
    time.wait += performance.now() - ownEnd - takenMs;
    if (stalled) this.#stalled();
    if (error !== undefined) throw error;
  }

  /**
   * Runs the argument lists `chunks` of function `fn`, each once, on this
   * thread and every worker at once, each thread claiming the next chunk
   * through the i32 at `counter` until none is left: a worker that starts
   * late, or loses its core for a while, runs fewer chunks, where a fixed
   * part would keep the caller waiting (or be taken back whole). The
   * chunks' arguments are written to `table` (`chunks.length × nargs`
   * f64 in the shared memory, all lists of one length `nargs`).
   *
   * @param fn Function id (index into the pool's names).
   * @param local Runs one chunk on this thread.
   * @param chunks Argument lists, one per chunk, of one length.
   * @param memory The shared memory holding `table` and `counter`.
   * @param table Byte address of the chunk table (8-byte aligned).
   * @param counter Byte address of an i32 the threads count with.
   * @throws {Error} When a worker's kernel trapped or a worker stopped answering.
   */
  runChunks(
    fn: number,
    local: (args: JobArgs) => void,
    chunks: JobArgs[],
    memory: WebAssembly.Memory,
    table: number,
    counter: number,
  ): void {
    const n = chunks.length, nargs = chunks[0]?.length ?? 0;
    const t = new Float64Array(memory.buffer, table, n * nargs);
    chunks.forEach((a, i) => t.set(a, i * nargs));
    // this thread runs the first chunk in any case (as it runs the first
    // part of a fixed split), the workers start from the second
    const c = new Int32Array(memory.buffer, counter, 1);
    Atomics.store(c, 0, 1);
    let first = true;
    this.run(
      fn,
      () => {
        if (first) local(chunks[0]);
        first = false;
        for (let i = Atomics.add(c, 0, 1); i < n; i = Atomics.add(c, 0, 1)) {
          local(chunks[i]);
        }
      },
      Array.from({ length: this.size + 1 }, () => [table, n, counter, nargs]),
      undefined,
      true,
    );
  }

  /** Tells every worker to quit and terminates it. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#workers.forEach((wk, w) => {
      const ctrl = this.#ctrl[w];
      ctrl[FN] = -1;
      Atomics.store(ctrl, SEQ, ++this.#seq[w]);
      Atomics.notify(ctrl, SEQ);
      wk.terminate();
    });
  }
}

/**
 * Starts `opts.workers` module workers and resolves once every one has
 * instantiated the module.
 *
 * @param opts Module, memory, control area and sizes.
 * @returns The ready pool.
 * @throws {Error} When a worker cannot start (the workers started are terminated).
 */
/** A pool being started (see {@link startPool}). */
export interface PendingPool {
  /**
   * The pool once every worker has instantiated the module and announced
   * itself through its control slot, else undefined. Synchronous: a
   * caller that cannot yield to its event loop (a long forward pass)
   * polls this between kernels instead of waiting for the messages.
   */
  ready(): WorkerPool | undefined;
  /** The pool when every worker's "ready" message has arrived (the same object `ready()` returns). */
  done: Promise<WorkerPool>;
  /** Stops the start: terminates the workers; `done` rejects. */
  cancel(): void;
}

/**
 * Starts `opts.workers` workers on the shared memory.
 *
 * @param opts Module, memory, control slots, export names, workers, spin.
 * @returns The pending pool.
 */
export function startPool(opts: PoolOptions): PendingPool {
  const workers: Worker[] = [];
  const ctrls: Int32Array[] = [];
  let pool: WorkerPool | undefined;
  let failed = false;
  let fail: (why: string) => void = () => {};
  let settle: (p: WorkerPool) => void = () => {};
  const make = (): WorkerPool => {
    if (!pool) {
      for (const x of workers) x.onerror = null;
      pool = new WorkerPool(workers, opts.memory, opts.ctrl);
    }
    return pool;
  };
  const done = new Promise<WorkerPool>((resolve, reject) => {
    let ready = 0;
    settle = resolve;
    fail = (why: string) => {
      if (failed) return;
      failed = true;
      for (const w of workers) w.terminate();
      reject(new Error(`Cannot start kernel workers: ${why}`));
    };
    try {
      for (let i = 0; i < opts.workers; i++) {
        const w = new Worker(new URL("./_worker.ts", import.meta.url), {
          type: "module",
        });
        workers.push(w);
        // Zero the slot before the worker reads its first sequence number.
        const c = new Int32Array(
          opts.memory.buffer,
          opts.ctrl + i * SLOT_BYTES,
          SLOT_BYTES / 4,
        );
        c.fill(0);
        ctrls.push(c);
        w.onmessage = (e: MessageEvent<{ ready: boolean; error?: string }>) => {
          w.onmessage = null;
          if (!e.data.ready) {
            return fail(e.data.error ?? "instantiation failed");
          }
          if (++ready === opts.workers && !failed) resolve(make());
        };
        w.onerror = (e: ErrorEvent) => {
          e.preventDefault();
          fail(e.message);
        };
        w.postMessage({
          module: opts.module,
          memory: opts.memory,
          slot: opts.ctrl + i * SLOT_BYTES,
          names: opts.names,
          spin: opts.spin,
        });
      }
    } catch (e) {
      fail(String(e));
    }
  });
  return {
    done,
    ready(): WorkerPool | undefined {
      if (pool || failed || ctrls.length !== opts.workers) return pool;
      for (const c of ctrls) if (Atomics.load(c, READY) !== 1) return undefined;
      // settled here too: once adopted, the pool may be closed (its
      // workers terminated) before their messages arrive
      settle(make());
      return pool;
    },
    cancel(): void {
      fail("the start was cancelled");
    },
  };
}
