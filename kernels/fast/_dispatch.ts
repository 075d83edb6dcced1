/**
 * Kernel dispatch state shared by the fast kernels: the configured thread
 * count and thresholds, the idle timer that stops workers, and the helper
 * that splits a kernel's output units over the threads.
 *
 * @module
 */

import type { Engine } from "../wasm/_engine.ts";
import { READ_MARGIN } from "../wasm/_kernels_quant.ts";
import { weightEngines } from "../wasm/_shards.ts";

/** Option defaults (see `KernelOptions` in runtime.ts). */
export const DEFAULTS = {
  threads: 1,
  minParallelWork: 1 << 18,
  idleMs: 1000,
  spin: 20000,
  noRelaxedSimd: false,
  roundF16Activations: false,
};

/** The live configuration. */
export const state = {
  ...DEFAULTS,
  /** Tests only: output rows per grab of quantized jobs (0: automatic). */
  chunkRows: 0,
  /**
   * Tests and benchmarks: whether a one-token step of a `transformer_block`
   * with quantized weights runs as one kernel-memory pass
   * (`layers/_block_decode.ts`; same bits as the layer-by-layer path).
   */
  decodeStep: true,
  /**
   * Tests and benchmarks: whether many rows of one sequence through such a
   * block (a prefill) run as one kernel-memory pass
   * (`layers/_block_prefill.ts`; same bits as the layer-by-layer path).
   */
  prefillStep: true,
  /**
   * Benchmarks: least work (as `runSplit` counts it) at which the decode
   * step's attention and SwiGLU split over the threads, below the general
   * `minParallelWork` (both are the same bits on any split).
   */
  decodeSplitWork: Infinity,
  /**
   * About how many grabs of rows each thread makes in a shared quantized
   * job (see {@link quantGrabRows}). 4, not 16: with the
   * one-token block step, 576-wide 2-thread decode measured 6–14% faster
   * (Q4_0, Q8_0; Q4_K_M 1–10%) in three alternating runs on the AMD EPYC
   * of docs/performance.md, also with another process busy on one core;
   * wider models level or faster. Each grab restarts the thread's weight
   * streams and is an atomic add on a line both cores write.
   */
  grabsPerThread: 4,
  /**
   * Benchmarks only: least weight bytes per grab of a shared quantized job
   * (see {@link quantGrabRows}). Each grab restarts the
   * thread's weight streams, yet 16, 32 and 64 KiB measured within the
   * noise of a shared 2-vCPU host on the 576-wide test models' 2-thread
   * decode (docs/performance.md, "Two threads on a shared host").
   */
  minChunkBytes: 16384,
  /**
   * Quantized jobs with at least this many weight bytes touch them ahead
   * of where they read (see `PREFETCH_BYTES` in kernels/wasm; tests set 0
   * or Infinity). With 4 weight streams per chunk, a cold 4096 × 4096 Q8_0
   * matvec measured 1.10 ms with the touch loads and 1.15 without, while
   * SmolLM-135M Q8_0 decode (jobs of 0.35 to 1.9 MB and a 30 MB output
   * head) measured 85 tok/s with them on every job, 91 with them on jobs
   * of 8 MiB or more, the same as with none (Intel Xeon with AVX-VNNI).
   * On an AMD EPYC without AVX-VNNI the touch loads only cost: decode CPU
   * time per token with them on jobs of 8 MiB or more against none (means
   * of two or three alternating runs, 1 thread): 576×30 Q4_K_M 18.2 vs 16.1
   * ms, 576×30 Q8_0 17.4 vs 14.7, 2048×4 Q4_K_M 35.8 vs 34.7, 1024×12
   * Q4_K_M 16.6 vs 16.5. So
   * `undefined` (automatic) means 8 MiB where the engine has the unsigned
   * relaxed dot (`kernelInfo().unsignedDot`, the AVX-VNNI class where they
   * were measured to help) and never elsewhere; tests set 0 or Infinity.
   */
  readAheadMinBytes: undefined as number | undefined,
  /** Tests only: whether Q8_0 may use the `q8_0u` kernels where the engine allows them. */
  u8Dot: true,
  /**
   * Tests and benchmarks: whether Q8_0 jobs of several x rows may use the
   * `q8_0s` kernels (magnitudes and signs, two dots per block) where the
   * engine allows them and the `q8_0u` ones do not apply: the path of x86
   * CPUs without AVX-VNNI. Turning it off forces the four-dot path that
   * other CPUs (ARM) take, on any machine.
   */
  signDot: true,
  /**
   * Tests and benchmarks: whether Q8_0 jobs of one x row on the `signDot`
   * path use the `q8_0t` kernels (unsigned codes, x split in two parts;
   * `kernels/wasm/_kernels_quant_q8t.ts`) rather than the four-dot ones
   * (same bits either way).
   */
  split5: true,
  /**
   * Least x rows for which Q8_0 / Q4_0 jobs run as the register-blocked
   * GEMM (`kernels/wasm/_kernels_quant_gemm.ts`; same bits either way).
   * 0 chooses: 4 rows, but 8 for Q8_0 where the engine has the `q8_0s` /
   * `q8_0u` dot kernels (with weights streamed from memory, a batched
   * decode step of SmolLM-135M's shape on an AMD EPYC without AVX-VNNI,
   * on the i16 GEMM of `_kernels_quant_q8gemm.ts`, measured 57 CPU ms
   * against 54 on the dot kernels at 4 rows, 63 / 65 at 5, 77 / 75 at 6,
   * 83 / 85 at 7 and 85 / 100 at 8; before that GEMM, on the F32 tiles,
   * 73 / 59 at 4 and 106 / 100 at 8).
   * Tests and benchmarks set Infinity to force the dot-product path, 2 to
   * force the GEMM.
   */
  gemmMinRows: 0,
  /**
   * Tests and benchmarks only: whether Q8_0 / Q4_0 GEMMs run on integer
   * tiles (Q8_0 as i16, `kernels/wasm/_kernels_quant_q8gemm.ts`, both
   * modules; Q4_0 as bytes, `_kernels_quant_igemm.ts`, relaxed module)
   * rather than on exact integer products in F32 (same bits every way).
   */
  intGemm: true,
  /**
   * Tests and benchmarks only: whether Q4_K / Q6_K / Q5_0 jobs of several x
   * rows may run as the integer GEMMs (`kernels/wasm/_kernels_quant_kgemm.ts`,
   * relaxed module; same bits either way).
   */
  kGemm: true,
  /**
   * Tests and benchmarks only: whether Q8_0 jobs of several x rows prepare
   * each weight row once for all of them (`PREP_MIN_ROWS` in kernels/wasm).
   */
  prep: true,
  /**
   * Bytes of the predicted next job's weights a worker reads through once
   * its part is done (0: none; see {@link touchAfter}). SmolLM-135M-shaped
   * Q8_0 decode on 2 threads measured 72 tok/s with none, 77 with 256 KiB,
   * 80 with 1 and 2 MiB (the gaps between jobs are too short for more).
   */
  touchBytes: 1 << 20,
  /**
   * Whether a stalled worker sends jobs to one thread for a while (see
   * `WorkerPool.available` in kernels/wasm/_pool.ts). Off by default: on a
   * quiet 2-vCPU host it fired on ordinary jitter and cost 13-22% of the
   * 2-thread prefill's and decode's wall time (docs/performance.md, "Two
   * threads on a shared host"); turn it on where other tenants keep taking
   * the worker's core.
   */
  stallBackoff: false,
  /**
   * Benchmarks only: whether the threads of a quantized GEMM job share its
   * weight panels through an atomic counter, a few panels per grab (see
   * {@link runGemm}), rather than each taking a fixed half.
   */
  gemmGrab: true,
  /**
   * Benchmarks only: about how many grabs of panels each thread makes in a
   * quantized GEMM job (see {@link runGemm}).
   */
  gemmGrabsPerThread: 8,
  /**
   * Benchmarks only: chunks per thread of a job split by `runSplit` (its
   * units in that many ranges, claimed one at a time by whichever thread
   * is free; see {@link runSplit}); 1 gives each thread one fixed range.
   */
  splitChunks: 4,
  /** Benchmarks only: weight streams per chunk of a quantized job (0: the default, `WEIGHT_STREAMS`). */
  weightStreams: 0,
  note: undefined as string | undefined,
  starting: undefined as Promise<void> | undefined,
  lastParallel: 0,
  timer: undefined as ReturnType<typeof setTimeout> | undefined,
};

/** Starts the configured number of workers (once; concurrent calls share the start). */
export function startWorkers(e: Engine): Promise<void> {
  const want = state.threads - 1;
  if (e.pool && e.pool.size === want) return Promise.resolve();
  if (state.starting) return state.starting;
  state.starting = e.startPool(want, state.spin).then(
    () => {
      state.note = undefined;
      state.lastParallel = performance.now();
      armTimer();
    },
    (err) => {
      state.note = String(err instanceof Error ? err.message : err);
      state.threads = 1;
    },
  ).finally(() => state.starting = undefined);
  return state.starting;
}

/** Clears the idle timer. */
export function stopTimer(): void {
  if (state.timer !== undefined) clearTimeout(state.timer);
  state.timer = undefined;
}

function armTimer(): void {
  if (state.timer !== undefined || !Number.isFinite(state.idleMs)) return;
  const wait = Math.max(
    1,
    state.lastParallel + state.idleMs - performance.now(),
  );
  state.timer = setTimeout(() => {
    state.timer = undefined;
    const es = weightEngines();
    if (!es.some((e) => e.pool)) return;
    if (performance.now() - state.lastParallel >= state.idleMs) {
      for (const e of es) e.stopPool();
    } else armTimer();
  }, wait);
}

/**
 * How many per-thread scratch slots a job needs: the configured threads,
 * or the running pool and the caller where that is more. A pool restarted
 * after the idle timer can be adopted between the moment a job sizes its
 * scratch and the moment it splits (see {@link partsFor}), so scratch
 * sized by the pool alone could be one slot short.
 *
 * @param e The engine.
 * @returns Slots, at least 1.
 */
export function threadSlots(e: Engine): number {
  return Math.max(state.threads, (e.pool?.size ?? 0) + 1, 1);
}

/**
 * How many parts to split a kernel of `work` multiply-adds over `units`
 * independent output units into (1 when it stays on this thread). Restarts
 * stopped workers in the background when threads are configured.
 *
 * @param e The engine.
 * @param work Multiply-adds (or comparable element operations).
 * @param units Units the work divides into (rows, panels, heads).
 * @returns Number of parts, at least 1.
 */
export function partsFor(e: Engine, work: number, units: number): number {
  if (state.threads <= 1 || work < state.minParallelWork || units < 2) {
    return 1;
  }
  // workers stopped by the idle timer restart in the background; a long
  // synchronous pass (a prefill) adopts them as soon as they are ready
  const pool = e.pollPool() ? e.pool : undefined;
  if (!pool) {
    startWorkers(e);
    return 1;
  }
  const now = performance.now();
  state.lastParallel = now;
  armTimer();
  // after a worker stalled (its core taken by the host): one thread a while
  if (state.stallBackoff && !pool.available(now)) return 1;
  return Math.min(pool.size + 1, units);
}

/**
 * Splits `units` into contiguous ranges and runs `name` on each, with the
 * range placed by `args(start, end)`: `state.splitChunks` ranges per
 * thread (at most one per unit) that the threads claim one at a time, or
 * one fixed range per thread when that comes to the same count.
 *
 * @param e The engine.
 * @param name Kernel export name.
 * @param work Multiply-adds, for the parallel threshold.
 * @param units Output units to split.
 * @param args The kernel's arguments for one range.
 */
export function runSplit(
  e: Engine,
  name: string,
  work: number,
  units: number,
  args: (start: number, end: number) => number[],
): void {
  const parts = partsFor(e, work, units);
  if (parts === 1) {
    e.fn[name](...args(0, units));
    return;
  }
  // a few ranges per thread, claimed one at a time, so that a worker that
  // starts late (its core given to another process for a moment) runs
  // fewer of them instead of keeping the caller waiting for its share
  const n = Math.min(units, parts * Math.max(1, state.splitChunks));
  const list: number[][] = [];
  for (let p = 0; p < n; p++) {
    const a = Math.floor((units * p) / n);
    const b = Math.floor((units * (p + 1)) / n);
    list.push(args(a, b));
  }
  if (n === parts) e.run(name, list);
  else e.runChunks(name, list);
}

/**
 * Runs `name` with the same `args` on every thread of the split (one call
 * when it stays on this thread): for kernels that share their work out
 * themselves, through an atomic counter in kernel memory.
 *
 * @param e The engine.
 * @param name Kernel export name.
 * @param work Multiply-adds, for the parallel threshold.
 * @param units Work units, for the parallel threshold.
 * @param args The kernel's arguments given the number of threads taking part.
 * @param touch What the workers read through once done (see `WorkerPool.run`).
 */
export function runShared(
  e: Engine,
  name: string,
  work: number,
  units: number,
  args: (parts: number, part: number) => number[],
  touch?: () => { list: number; n: number; lim: number } | undefined,
): void {
  const parts = partsFor(e, work, units);
  if (parts === 1) e.fn[name](...args(1, 0));
  else {
    e.run(
      name,
      Array.from({ length: parts }, (_, p) => args(parts, p)),
      touch?.(),
    );
  }
}

/**
 * Per engine, the quantized job seen last and, for each job (keyed by its
 * first weight's address), the weight ranges of the job that came right
 * after it last time. Decoding repeats the same sequence of jobs every
 * token, so this predicts the next job's weights well; the workers read
 * through them while the caller works alone between jobs.
 */
const followers = new WeakMap<
  Engine,
  { last: number; next: Map<number, number[]> }
>();

/** Most jobs remembered by {@link touchAfter} before it starts over. */
const MAX_FOLLOWERS = 4096;

/**
 * Records job `key` (the kernel-memory address of its first weight) with
 * its weights' byte `ranges` (flat `ptr, bytes` pairs) as the follower of
 * the job before it, and writes the top {@link state}.touchBytes of the
 * job that followed `key` last time into kernel memory as a touch list for
 * `WorkerPool.run` (the workers take output rows from the top, see
 * `name_mm`). Returns undefined when nothing is predicted.
 *
 * @param e The engine.
 * @param key The job's first weight address.
 * @param ranges The job's weight ranges.
 * @returns The touch request, or undefined.
 */
export function touchAfter(
  e: Engine,
  key: number,
  ranges: number[],
): { list: number; n: number; lim: number } | undefined {
  let t = followers.get(e);
  if (!t) followers.set(e, t = { last: -1, next: new Map() });
  if (t.next.size >= MAX_FOLLOWERS) t.next.clear();
  if (t.last >= 0 && t.last !== key) t.next.set(t.last, ranges);
  t.last = key;
  const next = t.next.get(key);
  if (!next || state.touchBytes <= 0) return undefined;
  const list = e.scratch("touch", next.length * 4 + 64);
  const d = new Int32Array(e.f32.buffer, list, next.length);
  // the top of the job, which the workers take first (see `name_mm`)
  let budget = state.touchBytes, n = 0;
  for (let i = next.length - 2; i >= 0 && budget > 0; i -= 2, n++) {
    const take = Math.min(next[i + 1], budget);
    d[2 * n] = next[i] + next[i + 1] - take;
    d[2 * n + 1] = take;
    budget -= take;
  }
  return {
    list,
    n,
    lim: Math.max(0, e.f32.buffer.byteLength - READ_MARGIN),
  };
}

/**
 * Weight streams per chunk of a quantized job: a thread takes the rows of
 * its chunk from this many evenly spaced places in turn, so the core's
 * prefetchers follow several streams of weight bytes at once. On the Xeon
 * of docs/performance.md SmolLM-135M Q8_0 decode on 2 threads (7
 * alternating rounds in one process) measured 76 tok/s with 1, 83 with 2,
 * 84 with 3 and 4, 78 with 8. On the AMD EPYC of the same page, one
 * thread, per CPU second, without touch loads: 2048 × 4 Q8_0 24.6 ms per
 * token with 2 against 27.9 with 4 (55 with 1, 39 with 8), 576 × 30 Q8_0
 * and 1024 × 12 Q8_0 equal or better with 2.
 */
const WEIGHT_STREAMS = 2;

/** Weight streams per chunk of a quantized job (`state.weightStreams`, else {@link WEIGHT_STREAMS}). */
export function quantWeightStreams(): number {
  return state.weightStreams || WEIGHT_STREAMS;
}

/**
 * Output rows per grab of a shared quantized job on `parts` threads:
 * about `state.grabsPerThread` grabs per thread (so a late or slow thread
 * costs at most that fraction of its share), each of at least
 * `state.minChunkBytes` of weights, so that the atomic grab and the
 * restart of the weight streams cost little beside it; `state.chunkRows`
 * overrides (tests), and no job takes more than 32768 grabs.
 *
 * @param total Output rows of the job.
 * @param parts Threads taking part.
 * @param rowBytes Weight bytes of one output row.
 * @returns Rows per grab.
 */
export function quantGrabRows(
  total: number,
  parts: number,
  rowBytes: number,
): number {
  const rows = parts === 1 ? total : Math.max(
    Math.ceil(total / (parts * state.grabsPerThread)),
    Math.ceil(state.minChunkBytes / rowBytes),
    1,
  );
  return Math.max(state.chunkRows || rows, Math.ceil(total / 32768));
}

/**
 * The one-row-and-more dot kernel of a quantized `kind` on this engine:
 * `${kind}_mm`, and for Q8_0 the variant of the relaxed dot this CPU
 * class has (`q8_0u_mm` with unsigned bytes, `q8_0s_mm` with its 7-bit
 * operand read as unsigned, else `q8_0_mm`).
 *
 * @param e The engine.
 * @param kind Kernel family (`q8_0`, `q4_k`, …).
 * @returns The kernel's export name.
 */
export function quantMmKernel(e: Engine, kind: string): string {
  if (kind !== "q8_0") return `${kind}_mm`;
  if (e.u8Dot && state.u8Dot) return "q8_0u_mm";
  return e.signDot && state.signDot ? "q8_0s_mm" : "q8_0_mm";
}

/**
 * The read-ahead limit a quantized job passes its kernel: the end of
 * kernel memory less the kernels' read margin for a job of at least
 * `state.readAheadMinBytes` of weights (default 8 MiB where the engine has
 * unsigned dots, else never), 0 (no read-ahead) below.
 *
 * @param e The engine.
 * @param weightBytes The job's weight bytes.
 * @returns The limit, or 0.
 */
export function quantReadAhead(e: Engine, weightBytes: number): number {
  const min = state.readAheadMinBytes ?? (e.u8Dot ? 8 << 20 : Infinity);
  return weightBytes >= min
    ? Math.max(0, e.f32.buffer.byteLength - READ_MARGIN)
    : 0;
}

/**
 * Runs a quantized GEMM driver (`kernels/wasm/_kernels_quant_util.ts`,
 * `quantGemmDriver`) over `panels` weight panels: on this thread alone
 * when the job is small, else on every thread with the panels shared out
 * through an atomic counter, a few at a time. A fixed split (half the
 * panels each) made a job wait for a worker that started late or lost its
 * core to another process for a moment, and the pool then ran the
 * worker's whole half after its own (docs/performance.md, "Where the
 * second thread's time goes"); with grabs the late thread just takes
 * fewer panels. Which thread runs a panel does not change its bits.
 *
 * @param e The engine.
 * @param name The driver's export name.
 * @param work Multiply-adds, for the parallel threshold.
 * @param panels Weight panels of the job.
 * @param head The driver's arguments before `p0, p1, scr, counter, grab`.
 * @param scr Each thread's panel scratch: thread `t` at `scr + t · stride`.
 * @param stride Bytes of one thread's scratch.
 */
export function runGemm(
  e: Engine,
  name: string,
  work: number,
  panels: number,
  head: number[],
  scr: number,
  stride: number,
): void {
  const parts = partsFor(e, work, panels);
  if (parts === 1) {
    e.fn[name](...head, 0, panels, scr, 0, 0);
    return;
  }
  if (!state.gemmGrab) {
    const list: number[][] = [];
    for (let p = 0; p < parts; p++) {
      const a = Math.floor((panels * p) / parts);
      const b = Math.floor((panels * (p + 1)) / parts);
      list.push([...head, a, b, scr + p * stride, 0, 0]);
    }
    e.run(name, list);
    return;
  }
  // an even count of panels per grab (two panels of 8 outputs are 64 bytes
  // of each output row), about `gemmGrabsPerThread` grabs per thread
  let grab = Math.ceil(panels / (parts * state.gemmGrabsPerThread));
  grab = Math.max(2, grab + (grab & 1));
  const counter = e.scratch("gemmcounter", 64);
  new Int32Array(e.f32.buffer, counter, 1)[0] = 0;
  e.run(
    name,
    Array.from(
      { length: parts },
      (_, p) => [...head, 0, panels, scr + p * stride, counter, grab],
    ),
  );
}
