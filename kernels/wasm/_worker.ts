/**
 * Worker entry of the kernel pool. It receives the compiled kernel module
 * and the shared memory, instantiates them, then serves jobs posted through
 * a control slot in that memory (see `_pool.ts`) until told to quit. It
 * waits with `Atomics.wait` after a short spin, so a job posted while it is
 * spinning starts within microseconds.
 *
 * @module
 */

/** The message that starts a worker. */
interface Start {
  module: WebAssembly.Module;
  memory: WebAssembly.Memory;
  /** Byte offset of this worker's control slot. */
  slot: number;
  /** Export names, in job function-id order. */
  names: string[];
  /** Spin iterations before sleeping. */
  spin: number;
}

// Slot layout (Int32 indices from the slot start): 0 seq, 1 done, 2 fn,
// 3 status, 57 ready, 59 awake, 60 claim; f64 arguments from byte 16.
const SEQ = 0;
const DONE = 1;
const FN = 2;
const STATUS = 3;
const ARGS = 16;
const MAX_ARGS = 26;
/** Int32 index of the ready flag: set once, when this worker can take jobs (see `_pool.ts`). */
const READY = 57;
/** Int32 index of the polling flag: 1 while this worker polls for work, 0 asleep (see `_pool.ts`). */
const AWAKE = 59;
/**
 * Int32 index of the chunked-job flag: 1 when the arguments are a chunk
 * table's address, its chunk count, a counter's address and the arguments
 * per chunk (see `WorkerPool.runChunks`).
 */
const CHUNKED = 58;
/** Int32 index of the last claimed sequence number (see `_pool.ts`). */
const CLAIM = 60;
/** Int32 indices of the touch-after list: its address, its range count, the read limit. */
const TOUCH_LIST = 61;
const TOUCH_N = 62;
const TOUCH_LIM = 63;

/** The worker global scope, typed without the worker lib. */
const scope = globalThis as unknown as {
  onmessage: ((e: MessageEvent<Start>) => void) | null;
  postMessage(message: unknown): void;
  close(): void;
};

scope.onmessage = (e: MessageEvent<Start>) => {
  const { module, memory, slot, names, spin } = e.data;
  let fns: ((...a: number[]) => unknown)[];
  try {
    const inst = new WebAssembly.Instance(module, { env: { memory } });
    fns = names.map((n) => inst.exports[n] as (...a: number[]) => unknown);
  } catch (err) {
    scope.postMessage({ ready: false, error: String(err) });
    return;
  }
  const ctrl = new Int32Array(memory.buffer, slot, TOUCH_LIM + 1);
  const touch = fns[names.indexOf("touch")];
  const args = new Float64Array(memory.buffer, slot + ARGS, MAX_ARGS);
  // Read the sequence number before announcing readiness: the caller may
  // post its first job the moment it hears "ready", and a worker that read
  // `last` after that job was posted would take it for an old one and
  // sleep through it (the caller then waited for ever).
  let last = Atomics.load(ctrl, SEQ);
  // AWAKE set only now also says "ready" through the memory: a caller
  // busy in a long synchronous forward pass (which never turns its event
  // loop to hear the message) adopts the pool when it sees it
  // (`PendingPool.ready`), and `last` is already read by then
  Atomics.store(ctrl, AWAKE, 1);
  Atomics.store(ctrl, READY, 1);
  scope.postMessage({ ready: true });
  // one argument list per arity, reused: no allocation between jobs, so
  // no collection of this isolate's heap delays a job
  const lists: number[][] = [];
  for (;;) {
    let s = Atomics.load(ctrl, SEQ);
    for (let i = 0; s === last && i < spin; i++) s = Atomics.load(ctrl, SEQ);
    if (s === last) {
      Atomics.store(ctrl, AWAKE, 0);
      Atomics.wait(ctrl, SEQ, last);
      Atomics.store(ctrl, AWAKE, 1);
      continue;
    }
    last = s;
    const fn = ctrl[FN];
    if (fn < 0) break;
    // the caller may have taken this job back while we slept
    if (Atomics.compareExchange(ctrl, CLAIM, s - 1, s) !== s - 1) continue;
    const n = ctrl[STATUS]; // argument count in, status out
    const a = lists[n] ??= new Array<number>(n).fill(0);
    for (let i = 0; i < n; i++) a[i] = args[i];
    let status = 0;
    try {
      if (ctrl[CHUNKED] === 1) {
        // claim chunks until none is left (views made per job: the
        // memory may have grown since the last one)
        const [table, count, counter, per] = a;
        const c = new Int32Array(memory.buffer, counter, 1);
        const t = new Float64Array(memory.buffer, table, count * per);
        const b = lists[per] ??= new Array<number>(per).fill(0);
        for (
          let i = Atomics.add(c, 0, 1);
          i < count;
          i = Atomics.add(c, 0, 1)
        ) {
          for (let k = 0; k < per; k++) b[k] = t[i * per + k];
          fns[fn].apply(null, b);
        }
      } else fns[fn].apply(null, a);
    } catch {
      status = -1;
    }
    ctrl[STATUS] = status;
    // read the touch-after request before announcing done: the caller may
    // post the next job (and a new request) right after
    const tn = ctrl[TOUCH_N], tl = ctrl[TOUCH_LIST], lim = ctrl[TOUCH_LIM];
    Atomics.store(ctrl, DONE, s);
    Atomics.notify(ctrl, DONE);
    // Idle until the next job: pull the weights it will probably read into
    // this core's caches (stops as soon as a job is posted).
    if (tn > 0 && touch) touch(tl, tn, slot + 4 * SEQ, s, lim);
  }
  scope.close();
};
