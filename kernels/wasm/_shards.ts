/**
 * Weights in more than one WebAssembly memory: models past 4 GiB.
 *
 * A 32-bit WebAssembly memory holds at most 4 GiB, and every kernel of the
 * module addresses one memory. Weights that do not fit the realm's engine
 * (`getEngine()`, which also holds the KV caches, the scratch regions and
 * the packed F32/F16/BF16 panels) go into further engines: each is the same
 * compiled module instantiated on its own memory, with its own allocator,
 * scratch and (when threads are configured) workers. A matmul runs on the
 * engine whose memory holds its weight: x is copied into that memory's
 * scratch and y out of it, so every kernel and every result is what one
 * memory gives, bit for bit. Everything else (attention, norms, RoPE)
 * stays on the first engine.
 *
 * Cost per extra memory: one module instance (the compiled code is shared),
 * the 64 KiB reserved page and its scratch (x, quantized x, y: a few MiB at
 * prefill sizes), and `threads − 1` idle workers.
 *
 * Memory64 would avoid the split, and V8 15 in Deno 2.9.6 validates it
 * (`WebAssembly.Memory({ address: "i64" })`), but the kernel module's
 * addresses are 32-bit throughout; see docs/performance.md.
 *
 * @module
 */

import { Engine, getEngine } from "./_engine.ts";

const MiB = 1 << 20;
/**
 * What weights may fill of one memory: 2 GiB, not the 4 GiB a 32-bit
 * memory can address. The JavaScript side of the kernels indexes kernel
 * memory with signed shifts (`ptr >> 2`), so scratch regions above 2 GiB
 * (allocated after the weights, above them) would be misaddressed; keeping
 * each memory under 2 GiB keeps every address positive.
 */
const MEMORY_BYTES = 2048 * MiB;

/**
 * Bytes of weights placed in one memory before the next is used (default
 * 1.5 GiB: the first memory keeps 512 MiB under 2 GiB for KV caches,
 * scratch and packed F32 panels; see {@link MEMORY_BYTES}).
 */
export const DEFAULT_WEIGHT_BYTES: number = 1536 * MiB;

/**
 * Knobs (tests force a small `weightBytesPerMemory` so that a small model
 * spreads over several memories).
 */
export const shardState: { weightBytesPerMemory: number } = {
  weightBytesPerMemory: DEFAULT_WEIGHT_BYTES,
};

let primary: Engine | null = null;
let extra: Engine[] = [];

/** The realm's engine; drops the extra memories when it was replaced. */
function sync(): Engine | null {
  const e = getEngine();
  if (e !== primary) {
    for (const s of extra) s.stopPool();
    extra = [];
    primary = e;
  }
  return e;
}

/**
 * Every engine that holds weights: the realm's engine first, then the
 * extra memories (empty where WebAssembly SIMD is missing).
 *
 * @returns The engines.
 */
export function weightEngines(): Engine[] {
  const e = sync();
  return e ? [e, ...extra] : [];
}

/**
 * The engine a weight's kernels run on: the extra memory that holds
 * `bytes`, else the realm's engine (null without WebAssembly SIMD).
 *
 * @param bytes A weight's bytes.
 * @returns The engine.
 */
export function engineFor(bytes: Uint8Array): Engine | null {
  const e = sync();
  if (!e || extra.length === 0) return e;
  for (const s of extra) if (s.owns(bytes)) return s;
  return e;
}

/**
 * The one engine all of `list` run on, or null when they lie in different
 * memories (or there is no engine).
 *
 * @param list Weights' bytes.
 * @returns The common engine, or null.
 */
export function commonEngine(list: Uint8Array[]): Engine | null {
  const e = list.length > 0 ? engineFor(list[0]) : sync();
  for (let i = 1; i < list.length; i++) {
    if (engineFor(list[i]) !== e) return null;
  }
  return e;
}

/**
 * `n` bytes of kernel memory for a weight used in place: in the first
 * engine with room under {@link shardState}.weightBytesPerMemory, else in a
 * new memory. Null without a shared engine (the caller keeps plain bytes).
 *
 * @param n Bytes.
 * @returns The bytes (not zeroed), or null.
 * @throws {RangeError} When `n` is more than one memory can hold.
 */
export function allocateWeightBytes(n: number): Uint8Array | null {
  const e = sync();
  if (!e || !e.shared) return null;
  if (n > MEMORY_BYTES - 64 * MiB) {
    throw new RangeError(
      `Cannot place a weight of ${n} bytes in kernel memory: one WebAssembly memory takes at most ${
        MEMORY_BYTES - 64 * MiB
      } bytes of weights`,
    );
  }
  const limit = shardState.weightBytesPerMemory;
  for (const s of [e, ...extra]) {
    const under = s.usedBytes() + n <= limit ||
      (s !== e && s.usedBytes() === 0);
    if (under && s.usedBytes() + n + 64 * MiB <= MEMORY_BYTES) {
      return s.bytes(n);
    }
  }
  const s = new Engine({
    noRelaxed: e.backend !== "wasm-relaxed-simd",
    module: e.module,
  });
  extra.push(s);
  return s.bytes(n);
}
