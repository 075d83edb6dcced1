/**
 * Configuration of the fast kernels: which instruction set runs, how many
 * threads share large kernels, and when idle workers stop.
 *
 * The kernels run single-threaded until {@link configureKernels} asks for
 * more threads. Workers then start (module workers over a
 * `SharedArrayBuffer`-backed WebAssembly memory) and serve every kernel big
 * enough to pay for the hand-off; after `idleMs` without such work they
 * stop, so an idle process can exit, and start again on the next large
 * call. {@link shutdownKernels} stops them at once (tests call it last).
 *
 * Where WebAssembly SIMD is missing, every fast kernel falls back to its
 * scalar `_ref` twin; where `SharedArrayBuffer` is missing (a browser page
 * without cross-origin isolation) they run single-threaded.
 *
 * @example
 * ```ts
 * import { configureKernels, kernelInfo, shutdownKernels } from "@modelhost/modelhost/kernels/fast";
 * await configureKernels({ threads: 2 });
 * console.log(kernelInfo().backend); // "wasm-relaxed-simd" on current V8
 * await shutdownKernels();
 * ```
 *
 * @module
 */

import {
  engineFailure,
  getEngine,
  MAX_WORKERS,
  resetEngine,
} from "../wasm/_engine.ts";
import {
  allocateWeightBytes,
  engineFor,
  weightEngines,
} from "../wasm/_shards.ts";
import { DEFAULTS, startWorkers, state, stopTimer } from "./_dispatch.ts";

/** Options of {@link configureKernels}. */
export interface KernelOptions {
  /**
   * Threads that share a large kernel, the calling thread included; 1 runs
   * everything on the calling thread.
   * @default {1}
   */
  threads?: number;
  /**
   * Smallest kernel, in multiply-adds, that is split across threads.
   * @default {262144}
   */
  minParallelWork?: number;
  /**
   * Stop the workers after this many milliseconds without parallel work
   * (they restart on the next large kernel); `Infinity` keeps them.
   * @default {1000}
   */
  idleMs?: number;
  /**
   * How many times an idle worker polls for the next job before it sleeps.
   * @default {20000}
   */
  spin?: number;
  /**
   * Use the plain-SIMD module even where relaxed SIMD validates.
   * @default {false}
   */
  noRelaxedSimd?: boolean;
  /**
   * Round activations to F16 before multiplying them by F16 weights, as
   * llama.cpp's CPU backend does (ggml multiplies F16 weights by F16
   * activations). Off, F16 weights are multiplied by F32 activations
   * (closer to the exact product); on, GGUF models agree with llama.cpp's
   * logits to F32 rounding where they hold F16 tensors (such as the F16
   * fallback of Q8_0 / Q4_0 files). Quantized weights always follow
   * llama.cpp's activation rules. Affects `fastLinear` and `linearRef`.
   * @default {false}
   */
  roundF16Activations?: boolean;
}

/** What {@link kernelInfo} reports. */
export interface KernelInfo {
  /** The instruction level in use; `"js"` when WebAssembly SIMD is missing. */
  backend: "wasm-relaxed-simd" | "wasm-simd" | "js";
  /** Threads configured (the caller's included). */
  threads: number;
  /** Workers running now. */
  workers: number;
  /** Whether the kernel memory is shared (workers possible). */
  shared: boolean;
  /** Bytes of kernel memory reserved, all memories together. */
  memoryBytes: number;
  /**
   * WebAssembly memories in use: 1, or more when weights past the first
   * memory's share (1.5 GiB) went into further ones (0 for `"js"`).
   */
  memories: number;
  /** Bytes of it holding resident weight copies. */
  residentBytes: number;
  /**
   * Whether the relaxed dot product here takes unsigned bytes without
   * saturating (x86 with AVX-VNNI, probed at start): Q8_0 weights then
   * take two dot instructions per block instead of four, same results.
   */
  unsignedDot: boolean;
  /**
   * Whether the relaxed dot product here reads its 7-bit operand as an
   * unsigned byte (x86, with or without VNNI; probed at start): where
   * `unsignedDot` is false, Q8_0 weights times several x rows (prefill,
   * batches) then take two dot instructions per block instead of four
   * (magnitudes of the weight codes times x with their signs), same
   * results.
   */
  signDot: boolean;
  /** Why the backend is `"js"` or why workers could not start, if so. */
  note?: string;
}

/**
 * Defaults of {@link KernelOptions}.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { kernelDefaults } from "@modelhost/modelhost/kernels/fast";
 * assert(kernelDefaults.threads === 1);
 * ```
 */
export const kernelDefaults: Readonly<Required<KernelOptions>> = DEFAULTS;

/**
 * Sets the kernel options (unset fields keep their current values) and, for
 * `threads > 1`, starts the workers; resolves when they are ready.
 *
 * @param opts The options to change.
 * @returns The resulting {@link KernelInfo}; its `note` says why workers
 * did not start, if they did not.
 * @throws {RangeError} When `threads` is not a positive integer.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { configureKernels, shutdownKernels } from "@modelhost/modelhost/kernels/fast";
 * const info = await configureKernels({ threads: 2, minParallelWork: 1 << 16 });
 * assert(info.threads === 2);
 * await shutdownKernels();
 * ```
 */
export async function configureKernels(
  opts: KernelOptions = {},
): Promise<KernelInfo> {
  if (
    opts.threads !== undefined &&
    (!Number.isInteger(opts.threads) || opts.threads < 1)
  ) {
    throw new RangeError(
      `Cannot use ${opts.threads} kernel threads: expected an integer ≥ 1`,
    );
  }
  const relaxedChanged = opts.noRelaxedSimd !== undefined &&
    opts.noRelaxedSimd !== state.noRelaxedSimd;
  Object.assign(
    state,
    Object.fromEntries(
      Object.entries(opts).filter(([, v]) => v !== undefined),
    ),
  );
  state.threads = Math.min(state.threads, MAX_WORKERS + 1);
  if (relaxedChanged) {
    stopTimer();
    resetEngine({ noRelaxed: state.noRelaxedSimd });
  }
  const e = getEngine();
  if (e && state.threads > 1) {
    await startWorkers(e);
  } else if (e) {
    stopTimer();
    for (const s of weightEngines()) s.stopPool();
  }
  return kernelInfo();
}

/**
 * Stops the workers and their idle timer (the engine and its memory stay).
 * Call it before a test ends, or before a program that configured threads
 * wants to exit at once.
 *
 * @returns Resolves once the workers are terminated.
 *
 * @example
 * ```ts
 * import { shutdownKernels } from "@modelhost/modelhost/kernels/fast";
 * await shutdownKernels();
 * ```
 */
export async function shutdownKernels(): Promise<void> {
  await state.starting?.catch(() => {});
  stopTimer();
  for (const e of weightEngines()) e.stopPool();
}

/**
 * Reports the backend, threads and memory of the kernels.
 *
 * @returns The current {@link KernelInfo}.
 *
 * @example
 * ```ts
 * import { kernelInfo } from "@modelhost/modelhost/kernels/fast";
 * console.log(kernelInfo().backend);
 * ```
 */
export function kernelInfo(): KernelInfo {
  const e = getEngine();
  if (!e) {
    return {
      backend: "js",
      threads: 1,
      workers: 0,
      shared: false,
      memoryBytes: 0,
      memories: 0,
      residentBytes: 0,
      unsignedDot: false,
      signDot: false,
      note: engineFailure(),
    };
  }
  const all = weightEngines();
  return {
    backend: e.backend,
    threads: state.threads,
    workers: e.pool?.size ?? 0,
    shared: e.shared,
    memoryBytes: all.reduce((n, s) => n + s.memory.buffer.byteLength, 0),
    memories: all.length,
    residentBytes: all.reduce((n, s) => n + s.residentBytes(), 0),
    unsignedDot: e.u8Dot,
    signDot: e.signDot,
    ...(state.note ? { note: state.note } : {}),
  };
}

/**
 * A byte array inside kernel memory, freed when the array is garbage
 * collected. Weights whose bytes live here are used in place by the
 * quantized kernels (no copy on first use); F32, F16 and BF16 weights are
 * still repacked once into panels.
 *
 * @param n Bytes.
 * @returns The bytes (zeroed; a plain `Uint8Array` when WebAssembly SIMD or
 * `SharedArrayBuffer` is missing).
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { allocateKernelBytes } from "@modelhost/modelhost/kernels/fast";
 * const b = allocateKernelBytes(34);
 * assert(b.length === 34);
 * ```
 */
export function allocateKernelBytes(n: number): Uint8Array {
  // A plain memory detaches its old views when it grows: in-place use
  // needs the shared one. Past the first memory's share, further memories
  // take the bytes (kernels/wasm/_shards.ts).
  const b = allocateWeightBytes(n);
  if (!b) return new Uint8Array(n);
  b.fill(0);
  return b;
}

/**
 * Bytes of kernel memory holding a copy of a weight's bytes: F32/F16/BF16
 * panels, or quantized blocks that did not already lie in kernel memory
 * (weights read into {@link allocateKernelBytes} buffers are used in place
 * and count 0). 0 before the weight's first use and after it is forgotten
 * or evicted.
 *
 * @param bytes A weight tensor's `bytes` (or the array given to `fastMatmulF32`).
 * @returns The size of the copy in bytes.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { kernelCopyBytes } from "@modelhost/modelhost/kernels/fast";
 * import { fastLinear } from "@modelhost/modelhost/kernels/fast";
 * import { tensorFromF32 } from "@modelhost/modelhost/core";
 * const w = tensorFromF32("w", new Float32Array(8 * 8), [8, 8]);
 * assert(kernelCopyBytes(w.bytes) === 0);
 * fastLinear(new Float32Array(8), 1, w);
 * console.log(kernelCopyBytes(w.bytes)); // the 4-row panels of w (0 without WebAssembly SIMD)
 * ```
 */
export function kernelCopyBytes(bytes: object): number {
  const e = bytes instanceof Uint8Array ? engineFor(bytes) : getEngine();
  return e?.residentSize(bytes) ?? 0;
}
