/**
 * The kernel engine: one WebAssembly memory (shared where the platform
 * allows), the compiled kernel module instantiated on it, an allocator for
 * that memory, the resident copies of weights, and the optional worker pool.
 *
 * There is one engine per JavaScript realm, created on first use. It is the
 * one piece of module-level state in the kernels: like a GPU context, it
 * owns memory that every call shares, and it is reached only through
 * `kernels/fast/runtime.ts`, which documents how to size and stop it.
 *
 * @module
 */

import { decodeBase64 } from "@std/encoding";
import { RELAXED_BASE64, SIMD_BASE64 } from "./_module_bytes.ts";
import { f32x4, get, i32x4, ModuleBuilder, T, v128 } from "./_asm.ts";
import { PANEL_COLS, PANEL_ROWS } from "./_kernels.ts";
import { U8_DOT_PROBE } from "./_kernels_quant.ts";
import { SIGN_DOT_PROBE } from "./_kernels_quant_prep.ts";
import { kernelTableBytes, TABLES_AT } from "./_kernels_tables.ts";
import {
  type JobArgs,
  type PendingPool,
  SLOT_BYTES,
  startPool,
  type WorkerPool,
} from "./_pool.ts";

const PAGE = 65536;
/** Bytes below this offset are never allocated: the null page, the pool's control slots and the kernels' constant tables. */
const RESERVED = 65536;
/** Control slots start here (one per worker, {@link SLOT_BYTES} each). */
const CTRL = 1024;
/** Largest pool: control slots must fit below the kernels' constant tables. */
export const MAX_WORKERS = Math.floor((TABLES_AT - CTRL) / SLOT_BYTES);
/** Allocation granularity and alignment. */
const ALIGN = 64;
/** The 32-bit memory's limit in pages (4 GiB). */
const MAX_PAGES = 65536;

/** Instruction-set level the engine runs. */
export type Backend = "wasm-relaxed-simd" | "wasm-simd";

/** Signature of every exported kernel: numbers in, nothing out. */
export type KernelFn = (...args: number[]) => void;

/** Checks that a tiny module using the given instructions validates. */
function supports(kind: "simd" | "relaxed"): boolean {
  try {
    const m = new ModuleBuilder({ shared: false, minPages: 1, maxPages: 1 });
    const f = m.func("f", [["a", T.v128]], [T.v128]);
    const a = get(f.params.a);
    f.body(
      kind === "simd" ? f32x4.add(a, a) : v128.or(
        f32x4.relaxed_madd(a, a, a),
        i32x4.relaxed_dot_i8x16_i7x16_add_s(a, a, a),
      ),
    );
    return WebAssembly.validate(m.encode() as Uint8Array<ArrayBuffer>);
  } catch {
    return false;
  }
}

/** Turns the shared-memory import of a module into a plain one. */
export function unshare(bytes: Uint8Array): Uint8Array {
  const b = bytes.slice();
  let p = 8;
  const leb = () => {
    let n = 0, s = 0, x;
    do {
      x = b[p++];
      n |= (x & 0x7f) << s;
      s += 7;
    } while (x & 0x80);
    return n;
  };
  while (p < b.length) {
    const id = b[p++];
    const size = leb();
    if (id !== 2) {
      p += size;
      continue;
    }
    leb(); // import count (1)
    // Read each length before moving p: `p += leb()` would add to the old p.
    const moduleName = leb();
    p += moduleName;
    const fieldName = leb();
    p += fieldName;
    p++; // kind: memory
    b[p] = b[p] & ~0x02; // limits flag: drop "shared"
    return b;
  }
  throw new Error("kernel module has no memory import");
}

/** A weight kept in kernel memory in the layout its kernel reads. */
export interface Resident {
  /** Byte offset in kernel memory. */
  ptr: number;
  /** Bytes held (0 when the tensor's own bytes live in kernel memory). */
  size: number;
  /** Last use, for eviction. */
  tick: number;
  /** Whether this engine allocated `ptr` (and frees it). */
  owned: boolean;
  /** Layout name (`"f32-panels"`, `"q8_0"`, ...); one bytes object has one. */
  kind: string;
  /** Sampled source bytes at upload, to notice in-place changes. */
  print?: Uint8Array;
}

/** Source bytes sampled per weight to notice in-place edits. */
const PRINT_SAMPLES = 64;
/** Weights up to this size are compared in full. */
const PRINT_FULL = 4096;

/** A fingerprint of `b`: all of it when small, else 64 spread 4-byte samples. */
function fingerprint(b: Uint8Array): Uint8Array {
  if (b.length <= PRINT_FULL) return b.slice();
  const out = new Uint8Array(PRINT_SAMPLES * 4);
  const step = Math.floor((b.length - 4) / (PRINT_SAMPLES - 1));
  for (let i = 0; i < PRINT_SAMPLES; i++) {
    out.set(b.subarray(i * step, i * step + 4), i * 4);
  }
  return out;
}

function samePrint(p: Uint8Array, b: Uint8Array): boolean {
  if (b.length <= PRINT_FULL) {
    if (p.length !== b.length) return false;
    for (let i = 0; i < p.length; i++) if (p[i] !== b[i]) return false;
    return true;
  }
  const step = Math.floor((b.length - 4) / (PRINT_SAMPLES - 1));
  for (let i = 0; i < PRINT_SAMPLES; i++) {
    for (let j = 0; j < 4; j++) {
      if (p[i * 4 + j] !== b[i * step + j]) return false;
    }
  }
  return true;
}

interface Block {
  start: number;
  size: number;
}

/** Options the engine is created with. */
export interface EngineOptions {
  /** Force the plain-SIMD module even when relaxed SIMD validates. */
  noRelaxed?: boolean;
  /** A compiled kernel module to instantiate (shared so tiering is shared). */
  module?: WebAssembly.Module;
}

/** The engine. Get it from {@link getEngine}. */
export class Engine {
  /** The instruction level in use. */
  readonly backend: Backend;
  /** The kernel memory. */
  readonly memory: WebAssembly.Memory;
  /** Whether the memory is shared (workers possible). */
  readonly shared: boolean;
  /** The compiled module (workers instantiate it too). */
  readonly module: WebAssembly.Module;
  /** Kernel exports by name. */
  readonly fn: Record<string, KernelFn>;
  /** Export names, in function-id order for the pool. */
  readonly names: string[];
  #ids = new Map<string, number>();
  #free: Block[] = [];
  #sizes = new Map<number, number>();
  #scratch = new Map<string, { ptr: number; size: number }>();
  #residents = new WeakMap<object, Resident>();
  #residentList = new Set<{ key: WeakRef<object>; r: Resident }>();
  #buffers = new Set<ArrayBufferLike>();
  #tick = 0;
  #used = 0;
  #finalizer = new FinalizationRegistry<Resident>((r) => this.#release(r));
  /** The worker pool, when started. */
  pool: WorkerPool | undefined;
  /**
   * Whether the relaxed dot product reads its 7-bit operand as an unsigned
   * byte without saturating (x86 AVX-VNNI), so the `q8_0u` kernels are
   * exact here (probed at start).
   */
  readonly u8Dot: boolean;
  /**
   * Whether the relaxed dot product reads its 7-bit operand as an unsigned
   * byte (0x80 as +128), so that the `q8_0s` kernels (magnitudes and signs)
   * are exact here (probed at start; x86 with or without VNNI).
   */
  readonly signDot: boolean;

  /** Creates the engine; use {@link getEngine}. */
  constructor(opts: EngineOptions = {}) {
    if (!supports("simd")) {
      throw new Error("WebAssembly SIMD is not supported here");
    }
    const relaxed = !opts.noRelaxed && supports("relaxed");
    this.backend = relaxed ? "wasm-relaxed-simd" : "wasm-simd";
    let bytes: Uint8Array = decodeBase64(
      relaxed ? RELAXED_BASE64 : SIMD_BASE64,
    );
    let memory: WebAssembly.Memory;
    try {
      memory = new WebAssembly.Memory({
        initial: RESERVED / PAGE + 16,
        maximum: MAX_PAGES,
        shared: true,
      });
      this.shared = memory.buffer instanceof SharedArrayBuffer;
    } catch {
      memory = new WebAssembly.Memory({
        initial: RESERVED / PAGE + 16,
        maximum: MAX_PAGES,
      });
      this.shared = false;
    }
    if (!this.shared) bytes = unshare(bytes);
    this.memory = memory;
    this.module = opts.module ??
      new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
    const inst = new WebAssembly.Instance(this.module, { env: { memory } });
    this.fn = {};
    this.names = [];
    for (const [name, v] of Object.entries(inst.exports)) {
      if (typeof v !== "function") continue;
      this.#ids.set(name, this.names.length);
      this.names.push(name);
      this.fn[name] = v as KernelFn;
    }
    const probe = this.fn.probe_u8dot as unknown as (() => number) | undefined;
    this.u8Dot = relaxed && probe?.() === U8_DOT_PROBE;
    const sprobe = this.fn.probe_sdot as unknown as (() => number) | undefined;
    this.signDot = relaxed && sprobe?.() === SIGN_DOT_PROBE;
    // the kernels' constant tables, once per memory (workers share it)
    new Uint8Array(memory.buffer).set(kernelTableBytes(), TABLES_AT);
    this.#free.push({
      start: RESERVED,
      size: memory.buffer.byteLength - RESERVED,
    });
    this.#buffers.add(memory.buffer);
  }

  /** Current view of the memory as bytes. */
  get u8(): Uint8Array {
    return new Uint8Array(this.#buffer());
  }
  /** Current view of the memory as f32. */
  get f32(): Float32Array {
    return new Float32Array(this.#buffer());
  }

  #buffer(): ArrayBufferLike {
    const b = this.memory.buffer;
    this.#buffers.add(b);
    return b;
  }

  /** Whether `bytes` already lie in this engine's memory. */
  owns(bytes: Uint8Array): boolean {
    return this.#buffers.has(bytes.buffer) ||
      bytes.buffer === this.memory.buffer;
  }

  // ------------------------------------------------------------ allocator

  /**
   * Allocates `n` bytes (64-byte aligned), growing the memory, then evicting
   * least recently used weight copies, when needed.
   *
   * @throws {RangeError} When 4 GiB cannot hold it.
   */
  alloc(n: number): number {
    const size = Math.max(ALIGN, Math.ceil(n / ALIGN) * ALIGN);
    for (;;) {
      const i = this.#free.findIndex((b) => b.size >= size);
      if (i >= 0) {
        const b = this.#free[i];
        const ptr = b.start;
        b.start += size;
        b.size -= size;
        if (b.size === 0) this.#free.splice(i, 1);
        this.#sizes.set(ptr, size);
        this.#used += size;
        return ptr;
      }
      if (this.#grow(size)) continue;
      if (!this.#evictOne()) {
        throw new RangeError(
          `Cannot allocate ${size} bytes of kernel memory: the 4 GiB WebAssembly memory is full (${this.memory.buffer.byteLength} bytes in use)`,
        );
      }
    }
  }

  /** Frees a block from {@link alloc}. */
  free(ptr: number): void {
    const size = this.#sizes.get(ptr);
    if (size === undefined) return;
    this.#sizes.delete(ptr);
    this.#used -= size;
    // insert sorted, merge neighbours
    let i = 0;
    while (i < this.#free.length && this.#free[i].start < ptr) i++;
    this.#free.splice(i, 0, { start: ptr, size });
    const prev = this.#free[i - 1];
    const cur = this.#free[i];
    const next = this.#free[i + 1];
    if (next && cur.start + cur.size === next.start) {
      cur.size += next.size;
      this.#free.splice(i + 1, 1);
    }
    if (prev && prev.start + prev.size === cur.start) {
      prev.size += cur.size;
      this.#free.splice(i, 1);
    }
  }

  /** Bytes allocated now (weights, copies, scratch). */
  usedBytes(): number {
    return this.#used;
  }

  #grow(size: number): boolean {
    const have = this.memory.buffer.byteLength;
    const room = MAX_PAGES - have / PAGE;
    const need = Math.ceil(size / PAGE);
    if (need > room) return false;
    // Grow by a quarter of the current size at least, to keep growth rare.
    return this.#growBy(
      Math.min(room, Math.max(need, Math.ceil(have / PAGE / 4))),
      have,
    ) ||
      this.#growBy(need, have);
  }

  #growBy(pages: number, have: number): boolean {
    try {
      this.memory.grow(pages);
    } catch {
      return false;
    }
    this.#buffer();
    const last = this.#free[this.#free.length - 1];
    if (last && last.start + last.size === have) last.size += pages * PAGE;
    else this.#free.push({ start: have, size: pages * PAGE });
    return true;
  }

  /**
   * A scratch region of at least `n` bytes, reused across calls under the
   * same name (calls never overlap: kernels run to completion).
   */
  scratch(name: string, n: number): number {
    const s = this.#scratch.get(name);
    if (s && s.size >= n) return s.ptr;
    if (s) this.free(s.ptr);
    const size = Math.max(n, s ? s.size * 2 : 0, 4096);
    const ptr = this.alloc(size);
    this.#scratch.set(name, { ptr, size });
    return ptr;
  }

  // ------------------------------------------------------------ residents

  /**
   * The resident copy of a weight, made on first use by `upload` (which
   * returns the pointer and size it allocated). Keyed by an object the
   * caller keeps stable (a tensor's `bytes`). `source` is sampled at upload
   * and on each use: a change seen in the samples re-uploads (edits that
   * miss every sample need {@link forget}).
   */
  resident(
    key: object,
    kind: string,
    source: Uint8Array,
    upload: (e: Engine) => { ptr: number; size: number; owned: boolean },
  ): Resident {
    let r = this.#residents.get(key);
    if (r && (r.kind !== kind || (r.print && !samePrint(r.print, source)))) {
      this.forget(key);
      r = undefined;
    }
    if (!r) {
      const u = upload(this);
      r = {
        ...u,
        kind,
        tick: 0,
        print: u.owned ? fingerprint(source) : undefined,
      };
      this.#residents.set(key, r);
      if (u.owned) {
        this.#residentList.add({ key: new WeakRef(key), r });
        this.#finalizer.register(key, r);
      }
    }
    r.tick = ++this.#tick;
    return r;
  }

  /** Drops the resident copy of a weight (after its bytes changed, say). */
  forget(key: object): void {
    const r = this.#residents.get(key);
    if (!r) return;
    this.#residents.delete(key);
    this.#release(r);
  }

  #release(r: Resident): void {
    if (r.owned && r.size > 0) {
      this.free(r.ptr);
      r.size = 0;
    }
    for (const e of this.#residentList) {
      if (e.r === r) this.#residentList.delete(e);
    }
  }

  #evictOne(): boolean {
    let oldest: { key: WeakRef<object>; r: Resident } | undefined;
    for (const e of this.#residentList) {
      // never the weight of the call in progress (the latest tick)
      if (e.r.tick === this.#tick) continue;
      if (!oldest || e.r.tick < oldest.r.tick) oldest = e;
    }
    if (!oldest) return false;
    const key = oldest.key.deref();
    if (key) this.#residents.delete(key);
    this.#release(oldest.r);
    return true;
  }

  /**
   * A block of kernel memory that lives as long as the returned view (freed
   * when it is garbage collected). Weights read into it are used in place.
   */
  bytes(n: number): Uint8Array {
    const ptr = this.alloc(n);
    const view = new Uint8Array(this.#buffer(), ptr, n);
    this.#finalizer.register(view, {
      ptr,
      size: n,
      tick: 0,
      owned: true,
      kind: "bytes",
    });
    return view;
  }

  /**
   * Bytes of the copy kept for `key` (0 when there is none, or when the
   * weight is used in place).
   */
  residentSize(key: object): number {
    return this.#residents.get(key)?.size ?? 0;
  }

  /** Bytes held by resident weights. */
  residentBytes(): number {
    let n = 0;
    for (const e of this.#residentList) n += e.r.size;
    return n;
  }

  // ------------------------------------------------------------ running

  /**
   * Runs kernel `name` once per part: on the pool when `parts` has more than
   * one entry (part 0 on this thread), else here.
   */
  run(
    name: string,
    parts: JobArgs[],
    touch?: { list: number; n: number; lim: number },
  ): void {
    const f = this.fn[name];
    if (parts.length === 1 || !this.pool) {
      for (const p of parts) f(...p);
      return;
    }
    this.pool.run(this.#ids.get(name)!, (a) => f(...a), parts, touch);
  }

  /**
   * Runs kernel `name` once per chunk (argument lists of one length), the
   * caller and the workers claiming chunks one at a time (see
   * `WorkerPool.runChunks`); all here when there is no pool.
   */
  runChunks(name: string, chunks: JobArgs[]): void {
    const f = this.fn[name];
    if (chunks.length === 1 || !this.pool) {
      for (const c of chunks) f(...c);
      return;
    }
    const nargs = chunks[0].length;
    const table = this.scratch("chunks", chunks.length * nargs * 8 + 64);
    const counter = this.scratch("chunkcounter", 64);
    this.pool.runChunks(
      this.#ids.get(name)!,
      (a) => f(...a),
      chunks,
      this.memory,
      table,
      counter,
    );
  }

  /** The pool being started, until it is adopted or stopped. */
  #pending: PendingPool | undefined;

  /**
   * Starts `n` workers (replacing a running pool). Resolves once they
   * are ready, or at once when {@link Engine.stopPool} cancels the start;
   * {@link Engine.pollPool} may adopt the pool earlier.
   */
  async startPool(n: number, spin: number): Promise<void> {
    this.stopPool();
    if (!this.shared) {
      throw new Error(
        "Cannot start kernel workers: SharedArrayBuffer is unavailable (a browser page needs cross-origin isolation)",
      );
    }
    const p = startPool({
      module: this.module,
      memory: this.memory,
      ctrl: CTRL,
      names: this.names,
      workers: Math.min(n, MAX_WORKERS),
      spin,
    });
    this.#pending = p;
    try {
      const pool = await p.done;
      if (this.#pending === p) {
        this.pool = pool;
        this.#pending = undefined;
      }
    } catch (e) {
      if (this.#pending !== p) return; // cancelled by stopPool
      this.#pending = undefined;
      throw e;
    }
  }

  /**
   * Adopts the pool being started if its workers are all ready (read
   * from their control slots, no event-loop turn needed).
   *
   * @returns Whether a pool is running now.
   */
  pollPool(): boolean {
    if (this.pool) return true;
    const pool = this.#pending?.ready();
    if (!pool) return false;
    this.pool = pool;
    this.#pending = undefined;
    return true;
  }

  /** Stops the workers, if any, and any start under way. */
  stopPool(): void {
    this.pool?.close();
    this.pool = undefined;
    const p = this.#pending;
    this.#pending = undefined;
    p?.cancel();
  }
}

/** Sizes of the dense panel layout, for callers packing or splitting work. */
export const PANEL = { rows: PANEL_ROWS, cols: PANEL_COLS } as const;

let engine: Engine | null | undefined;
let engineError: string | undefined;

/**
 * The realm's engine, created on first call; `null` where WebAssembly SIMD
 * is unavailable (callers then use the scalar reference kernels).
 */
export function getEngine(): Engine | null {
  if (engine === undefined) {
    try {
      engine = new Engine();
    } catch (e) {
      engine = null;
      engineError = String(e);
    }
  }
  return engine;
}

/** Why {@link getEngine} returned null, if it did. */
export function engineFailure(): string | undefined {
  return engineError;
}

/** Replaces the engine (tests use this to run the plain-SIMD variant). */
export function resetEngine(opts?: EngineOptions): Engine | null {
  engine?.stopPool();
  engine = undefined;
  engineError = undefined;
  if (opts) {
    try {
      engine = new Engine(opts);
    } catch (e) {
      engine = null;
      engineError = String(e);
    }
  }
  return getEngine();
}
