/**
 * The system BLAS as the F32 GEMM backend of the kernels, through Deno's
 * FFI (`cblas_sgemm`; Debian: `apt-get install libopenblas0`). Optional:
 * without the library or the `--allow-ffi` permission nothing is installed
 * and the WebAssembly kernels run, and {@link useSystemBlas} says why.
 *
 * @module
 */

import {
  type F32GemmBackend,
  setF32GemmBackend,
} from "../kernels/fast/backend.ts";
import { type CopyBudget, TransposedWeights } from "./_blas_transpose.ts";
import { GROUP, PackedGemm } from "./_blas_packed.ts";
import { addressOf, runPackedProduct } from "./_blas_packed_product.ts";
import { setMmapThreshold } from "./_heap.ts";
import {
  ADDRESS_FIELDS,
  SGEMM_POINTER_SYMBOL,
  sgemmFromAddresses,
  sgemmFromList,
} from "./_blas_list.ts";
import { SgemmHelper } from "./_blas_threads.ts";

/**
 * Libraries tried in order when no path is given, after the one named by
 * the environment variable `MODELHOST_BLAS` (a path or a name for the
 * dynamic loader, e.g. BLIS's `libblis.so.4`; read when `--allow-env`
 * grants it). The backend's `name` says which library runs.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { BLAS_LIBRARIES } from "@modelhost/modelhost/io";
 * assert(BLAS_LIBRARIES[0] === "libopenblas.so.0");
 * ```
 */
export const BLAS_LIBRARIES: readonly string[] = [
  "libopenblas.so.0",
  "/usr/lib/x86_64-linux-gnu/libopenblas.so.0",
  "/usr/lib/aarch64-linux-gnu/libopenblas.so.0",
  "libopenblas.dylib",
  "/opt/homebrew/opt/openblas/lib/libopenblas.dylib",
  "libopenblas.dll",
];

/** Options of {@link openSystemBlas} and {@link useSystemBlas}. */
export interface SystemBlasOptions {
  /** Library paths or names to try (default `MODELHOST_BLAS`, then {@link BLAS_LIBRARIES}). */
  libraries?: readonly string[];
  /** BLAS threads (OpenBLAS and BLIS; default: the library's own choice). */
  threads?: number;
  /** Calls with fewer x rows stay on WebAssembly (default 4). */
  minRows?: number;
  /** Calls with fewer multiply-adds stay on WebAssembly (default 2^20). */
  minWork?: number;
  /**
   * How long OpenBLAS's idle threads spin before they sleep, as the power
   * of two of CPU cycles that its `OPENBLAS_THREAD_TIMEOUT` takes (4 to
   * 30; OpenBLAS's default is 28, about 0.1 s). Set in the environment
   * before the library loads, when `OPENBLAS_THREAD_TIMEOUT` is unset and
   * `--allow-env` is granted; it has no effect once the library is loaded.
   * Default 4: between the products of a forward pass, the spinning
   * threads take the cores from the WebAssembly workers (measured on an
   * encoder, 2 OpenBLAS threads: 2.00 CPU-seconds per batch with 28, 1.71
   * with 4).
   */
  threadTimeout?: number;
  /**
   * OpenBLAS's kernel family (`OPENBLAS_CORETYPE`), set in the environment
   * before the library loads when that variable is unset and `--allow-env`
   * is granted; `null` leaves the library's own choice. Default: `"Haswell"`
   * on AMD processors with AVX-512 (Zen 4 runs 512-bit vectors as two
   * 256-bit halves, and the AVX2 kernels measured faster there: a batch-64
   * 1024 → 4096 → 1024 MLP, 2 threads, best 14.1 ms against 27.7 ms with
   * the `Cooperlake` kernels OpenBLAS picks and 26.6 ms with `SkylakeX`),
   * elsewhere the library's choice.
   */
  coreType?: string | null;
  /**
   * Products with fewer x rows than this multiply by a transposed copy of
   * W (`in × out`), made on the first call and kept while the weight's
   * buffer lives; 0 turns the copies off. Default 256: OpenBLAS packs W
   * again on every call, faster from that layout, which shows when the
   * rows are few (batch-64 MLP 1024 → 4096 → 1024 on a Zen 4 EPYC, one
   * thread per layer: 87 against 75 GFLOP/s for the first layer; with 4096
   * rows both layouts run the same). A weight changed in place needs
   * `forgetWeight` (`@modelhost/modelhost/kernels/fast`), as for the
   * WebAssembly kernels' copy.
   */
  transposeRows?: number;
  /**
   * With more than one BLAS thread, products that use a transposed copy
   * (see {@link transposeRows}) run as column blocks (true: two; a number
   * 2..8: that many), each one single-threaded `cblas_sgemm` call, taken
   * by the calling thread and `sgemmMany`'s helper thread from one counter
   * (each thread packs only its blocks of W; no hand-over inside the
   * library). Turns on the backend's `gemmRelu` for such products (each
   * thread applies the ReLU to its blocks right after their product).
   * Default false: on the batch-64 MLP it ran level with OpenBLAS's own
   * threads, not faster (docs/performance.md).
   */
  splitColumns?: boolean | number;
  /**
   * Most bytes of transposed and packed copies together (default 256
   * MiB); past it W is used as stored.
   */
  transposeBytes?: number;
  /**
   * Multiply by weights packed once into the kernel's own layout
   * (io/_blas_packed.ts): on the first product with a weight, OpenBLAS's
   * copy routine packs it (kept while the weight's buffer lives, within
   * {@link transposeBytes}, dropped by `forgetWeight`); each product then
   * packs only x and calls the kernel directly, on the calling thread and,
   * with more than one BLAS thread, a helper thread (disjoint output
   * columns, the same bits on one or two threads). Needs an OpenBLAS that
   * exports its per-family routines (DYNAMIC_ARCH builds such as
   * Debian's) for the family it runs (Haswell, Zen, SkylakeX,
   * Cooperlake); elsewhere the other paths run, and `packed` says why.
   * Products with at least {@link packedRows} rows use the other paths.
   * Default true, unless {@link splitColumns} is set: on the batch-64 MLP
   * (2 threads, quiet AMD EPYC) 0.98× and 0.92× of ONNX Runtime where
   * the transposed copies gave 0.94× and 0.88× (docs/performance.md).
   */
  packedWeights?: boolean;
  /**
   * The OpenBLAS kernel family of the packed path (see
   * {@link packedWeights}; Haswell, Zen, SkylakeX or Cooperlake), or null
   * for the library's own (`openblas_get_corename`). Default: SkylakeX on
   * processors with AVX-512 (F, BW, DQ, VL) where the library runs an
   * AVX2 family (as {@link coreType} asks on AMD), else the library's.
   * On a Zen 4 EPYC the AVX-512 kernel on packed weights measured
   * 2.5–5% faster than the AVX2 one on one thread (the batch-64 MLP),
   * while `cblas_sgemm` with AVX-512 kernels measured 2× slower.
   */
  packedCore?: string | null;
  /**
   * Products with this many rows or more skip the packed weights
   * (default: {@link transposeRows}; with thousands of rows OpenBLAS's own
   * packing is a small share of the work).
   */
  packedRows?: number;
  /**
   * Milliseconds the packed path's threads poll before they sleep: the
   * helper for the next product, the calling thread for the helper's last
   * items (default 0: both sleep at once, as a wake-up takes 70-120 µs on
   * a 2-vCPU VM; polling gained 1-2% on the MLP when the machine was
   * quiet and lost 10% when another process held one of the two cores).
   */
  packedSpin?: number;
  /**
   * Milliseconds the packed path's helper thread alone polls for the next
   * product after its last item before it sleeps (the calling thread
   * sleeps at once unless {@link packedSpin} says otherwise), so the next
   * layer's product finds it awake. Default 0: 0.3 ms measured no faster
   * on the batch-64 MLP on a quiet machine and 7-10% slower with another
   * process on one of the two cores (docs/performance.md).
   */
  packedHelperSpin?: number;
  /**
   * Wake the packed path's helper thread before the output is allocated
   * and x packed, so its wake-up (70-120 µs on a 2-vCPU VM) overlaps
   * that work; it polls up to 0.3 ms for the product to be ready, then
   * sleeps. Default false: on the batch-64 MLP it measured level with the
   * late wake-up on a quiet machine and 1-4% slower with another process
   * on one of the two cores (its polling takes the calling thread's core;
   * docs/performance.md).
   */
  packedEarlyWake?: boolean;
  /**
   * Most outputs per work item of the packed path (rounded up to the
   * kernel's unroll; default 256). Smaller items balance the two threads
   * better when one is slowed; the plan, and so the bits, depend on it,
   * never on the thread count.
   */
  packedGroup?: number;
  /**
   * Map a fresh output's pages in with one `madvise(MADV_POPULATE_WRITE)`
   * (Linux 5.14+, outputs of 128 KiB or more) before the packed product
   * writes it, instead of a page fault per 4 KiB inside the kernel calls
   * of both threads. Default false: a probe of the MLP's pieces measured
   * its kernel calls 4-15% faster this way, but the batch-64 MLP bench
   * showed no gain over six runs (docs/performance.md).
   */
  packedPopulate?: boolean;
  /**
   * glibc's mmap threshold for this process (`mallopt(M_MMAP_THRESHOLD)`,
   * at most 32 MiB), set once when a library opens; default `null` leaves
   * malloc alone. Below it, freed output arrays return to the heap and the
   * next product's output reuses them instead of page-faulting fresh
   * memory in (a 1 MiB array allocated and filled on the AMD EPYC VM:
   * 0.5–0.8 ms fresh, 0.1 ms reused). Off by default: it changes malloc
   * for the whole process, and on the batch-64 MLP (6–8 ms on 2 threads)
   * the ratio to ONNX Runtime moved by no more than the noise (0.95× and
   * 0.99× with 32 MiB, 0.94× and 0.97× without). No effect outside
   * Linux/glibc.
   */
  mmapThreshold?: number | null;
}

/** What {@link openSystemBlas} found. */
export interface SystemBlas {
  /** The backend, or null when no library could be used. */
  backend: F32GemmBackend | null;
  /** The library that was opened. */
  library?: string;
  /** Why there is no backend (missing permission or library). */
  note?: string;
  /** What was done to malloc (see {@link SystemBlasOptions.mmapThreshold}). */
  heap?: string;
  /** Whether products use packed weights, or why not (see {@link SystemBlasOptions.packedWeights}). */
  packed?: string;
  /**
   * Counts of the packed path so far: products, their work items, and
   * the items the helper thread ran (the rest ran on the calling thread).
   */
  packedStats?: { products: number; items: number; helperItems: number };
  /** Closes the library (after removing the backend, if installed). */
  close(): void;
}

/**
 * The OpenBLAS kernel family to ask for on this CPU: `"Haswell"` on AMD
 * processors with AVX-512 (see {@link SystemBlasOptions.coreType}), else
 * null (the library's own choice, also when /proc/cpuinfo is unreadable).
 */
function defaultCoreType(): string | null {
  try {
    if (
      Deno.permissions.querySync({ name: "read", path: "/proc/cpuinfo" })
        .state !== "granted"
    ) return null;
    const head = Deno.readTextFileSync("/proc/cpuinfo").split("\n\n")[0];
    const amd = /vendor_id\s*:\s*AuthenticAMD/.test(head);
    const avx512 = /^flags\s*:.*\bavx512f\b/m.test(head);
    return amd && avx512 ? "Haswell" : null;
  } catch {
    return null;
  }
}

/**
 * Whether /proc/cpuinfo lists AVX-512 F, BW, DQ and VL (what OpenBLAS's
 * SkylakeX kernels use); false when unreadable.
 */
function avx512Cpu(): boolean {
  try {
    if (
      Deno.permissions.querySync({ name: "read", path: "/proc/cpuinfo" })
        .state !== "granted"
    ) return false;
    const head = Deno.readTextFileSync("/proc/cpuinfo").split("\n\n")[0];
    const flags = /^flags\s*:(.*)$/m.exec(head)?.[1].split(/\s+/) ?? [];
    return ["avx512f", "avx512bw", "avx512dq", "avx512vl"].every((f) =>
      flags.includes(f)
    );
  } catch {
    return false;
  }
}

/** A new `rows × outF` array with `bias` in every row (zeros without). */
function biasRows(
  rows: number,
  outF: number,
  bias: Float32Array | undefined,
): Float32Array {
  return fillBiasRows(new Float32Array(rows * outF), outF, bias);
}

/** Writes `bias` into every row of `y` (zeros without); returns y. */
function fillBiasRows(
  y: Float32Array,
  outF: number,
  bias: Float32Array | undefined,
): Float32Array {
  if (!bias) return y.fill(0);
  if (y.length > 0) {
    // by doubling copies
    y.set(bias.subarray(0, outF));
    for (let n = outF; n < y.length; n *= 2) {
      y.copyWithin(n, 0, Math.min(n, y.length - n));
    }
  }
  return y;
}

/** Whether the first `n` values of `out` share memory with `a`. */
function overlaps(out: Float32Array, n: number, a: Float32Array): boolean {
  if (out.buffer !== a.buffer) return false;
  const o0 = out.byteOffset, o1 = o0 + n * 4;
  return a.byteOffset < o1 && o0 < a.byteOffset + a.byteLength;
}

/** `sgemm` calls with fewer multiply-adds run on one OpenBLAS thread. */
const SMALL_SGEMM = 1 << 22;

/**
 * The environment variable that names a BLAS library (a path or a name for
 * the dynamic loader) to try before {@link BLAS_LIBRARIES}.
 */
const BLAS_ENV = "MODELHOST_BLAS";

/** {@link BLAS_ENV}'s library, when it is set and readable, then the defaults. */
function librariesToTry(): readonly string[] {
  try {
    if (
      Deno.permissions.querySync({ name: "env", variable: BLAS_ENV }).state ===
        "granted"
    ) {
      const path = Deno.env.get(BLAS_ENV);
      if (path) return [path, ...BLAS_LIBRARIES];
    }
  } catch {
    // no permission API: the defaults
  }
  return BLAS_LIBRARIES;
}

/** The OpenBLAS thread count last set, per loaded library. */
const threadCounts = new Map<number | bigint | null, { now: number }>();

const CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112;

const SYMBOLS = {
  cblas_sgemm: {
    parameters: [
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "f32",
      "buffer",
      "i32",
      "buffer",
      "i32",
      "f32",
      "buffer",
      "i32",
    ],
    result: "void",
  },
  cblas_sgemm_at: SGEMM_POINTER_SYMBOL,
  openblas_set_num_threads: {
    parameters: ["i32"],
    result: "void",
    optional: true,
  },
  openblas_get_config: { parameters: [], result: "pointer", optional: true },
  openblas_get_num_threads: { parameters: [], result: "i32", optional: true },
  bli_thread_set_num_threads: {
    parameters: ["i64"],
    result: "void",
    optional: true,
  },
  bli_info_get_version_str: {
    parameters: [],
    result: "pointer",
    optional: true,
  },
} as const;

/**
 * Opens the system BLAS as an F32 GEMM backend, without installing it.
 *
 * @param opts Libraries to try, threads, thresholds.
 * @returns The backend, or a note saying why there is none.
 * @throws {RangeError} When `threads` is not a positive integer, `threadTimeout` is outside 4..30, `splitColumns` a number outside 2..8, `mmapThreshold` outside 0..2^25, `packedSpin` outside 0..100, or `transposeRows` / `transposeBytes` / `packedRows` negative or fractional.
 *
 * @example
 * ```ts
 * import { openSystemBlas } from "@modelhost/modelhost/io";
 * const blas = openSystemBlas();
 * console.log(blas.backend?.name ?? blas.note);
 * blas.close();
 * ```
 */
export function openSystemBlas(opts: SystemBlasOptions = {}): SystemBlas {
  if (
    opts.threads !== undefined &&
    (!Number.isInteger(opts.threads) || opts.threads < 1)
  ) {
    throw new RangeError(
      `Cannot use ${opts.threads} BLAS threads: expected an integer ≥ 1`,
    );
  }
  const mmapMax = 2 ** 25; // glibc's upper limit on 64-bit systems
  if (
    opts.mmapThreshold != null &&
    (!Number.isInteger(opts.mmapThreshold) || opts.mmapThreshold < 0 ||
      opts.mmapThreshold > mmapMax)
  ) {
    throw new RangeError(
      `Cannot use malloc mmap threshold ${opts.mmapThreshold}: expected an integer 0..${mmapMax}`,
    );
  }
  const sc = opts.splitColumns;
  if (
    typeof sc === "number" && (!Number.isInteger(sc) || sc < 2 || sc > 8)
  ) {
    throw new RangeError(
      `Cannot split products into ${sc} column blocks: expected an integer 2..8`,
    );
  }
  const pg = opts.packedGroup;
  if (pg !== undefined && (!Number.isSafeInteger(pg) || pg < 1)) {
    throw new RangeError(
      `Cannot use packedGroup ${pg}: expected an integer ≥ 1`,
    );
  }
  for (const k of ["transposeRows", "transposeBytes", "packedRows"] as const) {
    const v = opts[k];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) {
      throw new RangeError(`Cannot use ${k} ${v}: expected an integer ≥ 0`);
    }
  }
  for (const k of ["packedSpin", "packedHelperSpin"] as const) {
    const ps = opts[k];
    if (ps !== undefined && !(ps >= 0 && ps <= 100)) {
      throw new RangeError(
        `Cannot poll ${ps} ms for the packed path's threads (${k}): expected 0..100`,
      );
    }
  }
  const timeout = opts.threadTimeout ?? 4;
  if (!Number.isInteger(timeout) || timeout < 4 || timeout > 30) {
    throw new RangeError(
      `Cannot use OpenBLAS thread timeout ${timeout}: expected an integer 4..30`,
    );
  }
  const none = (note: string): SystemBlas => ({
    backend: null,
    note,
    close() {},
  });
  if (typeof Deno?.dlopen !== "function") {
    return none("no FFI in this runtime");
  }
  if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") {
    return none("no --allow-ffi permission: the WebAssembly kernels run");
  }
  if (
    Deno.permissions.querySync({
        name: "env",
        variable: "OPENBLAS_THREAD_TIMEOUT",
      }).state === "granted" &&
    Deno.env.get("OPENBLAS_THREAD_TIMEOUT") === undefined
  ) {
    Deno.env.set("OPENBLAS_THREAD_TIMEOUT", String(timeout));
  }
  const coreType = opts.coreType === undefined
    ? defaultCoreType()
    : opts.coreType;
  if (
    coreType !== null &&
    Deno.permissions.querySync({ name: "env", variable: "OPENBLAS_CORETYPE" })
        .state === "granted" &&
    Deno.env.get("OPENBLAS_CORETYPE") === undefined
  ) {
    Deno.env.set("OPENBLAS_CORETYPE", coreType);
  }
  const tried: string[] = [];
  const transposeRows = opts.transposeRows ?? 256;
  const budget: CopyBudget = {
    bytes: 0,
    limit: opts.transposeBytes ?? 2 ** 28,
  };
  const transposed = new TransposedWeights(budget);
  for (const path of opts.libraries ?? librariesToTry()) {
    let lib: Deno.DynamicLibrary<typeof SYMBOLS>;
    try {
      lib = Deno.dlopen(path, SYMBOLS);
    } catch (e) {
      tried.push(`${path}: ${e instanceof Error ? e.message : e}`);
      continue;
    }
    const s = lib.symbols;
    if (opts.threads !== undefined) {
      s.openblas_set_num_threads?.(opts.threads);
      s.bli_thread_set_num_threads?.(BigInt(opts.threads));
    }
    const config = s.openblas_get_config?.();
    const blis = s.bli_info_get_version_str?.();
    const name = config
      ? Deno.UnsafePointerView.getCString(config)
      : blis
      ? `BLIS ${Deno.UnsafePointerView.getCString(blis)} (${path})`
      : `cblas_sgemm from ${path}`;
    // OpenBLAS splits a product of more than 2^18 multiply-adds over its
    // threads; attention's per-head products (128 × 128 × 32) then spend
    // more on the hand-over than on the work, so `sgemm` below 2^22 runs
    // on one thread. The thread count is switched only when the next
    // product needs the other one (a layer's hundreds of per-head
    // products run between two switches, not two FFI calls each).
    // Backends opened on one loaded library share its thread count: the
    // count last set is kept per library (its config string's address).
    const threads = s.openblas_get_num_threads?.() ?? 1;
    const key = config ? Deno.UnsafePointer.value(config) : null;
    const state = threadCounts.get(key) ?? { now: threads };
    state.now = threads;
    if (key !== null) threadCounts.set(key, state);
    const use = s.openblas_set_num_threads
      ? (n: number) => {
        if (state.now !== n) s.openblas_set_num_threads!(state.now = n);
      }
      : () => {};
    const helper = new SgemmHelper(path);
    const splitter = new SgemmHelper(path);
    const opened = (opts.packedWeights ?? !opts.splitColumns)
      ? PackedGemm.open(
        path,
        budget,
        opts.packedCore ?? undefined,
        opts.packedCore === undefined && avx512Cpu(),
      )
      : { packed: null, note: "off" };
    const packed = opened.packed;
    const spin = opts.packedSpin ?? 0;
    const packer = packed
      ? new SgemmHelper(
        path,
        packed.family.suffix,
        Math.max(spin, opts.packedHelperSpin ?? 0),
      )
      : null;
    const packedRows = opts.packedRows ?? transposeRows;
    const earlyWake = opts.packedEarlyWake ?? false;
    const group = opts.packedGroup ?? GROUP;
    const populate = opts.packedPopulate ?? false;
    const stats = { products: 0, items: 0, helperItems: 0 };
    const runner = packed && packer
      ? {
        packed,
        packer,
        threads,
        packedRows,
        earlyWake,
        group,
        populate,
        spin,
        stats,
      }
      : null;
    /** `y = x·Wᵀ + b` on packed W, or null (see `packedProduct`). */
    const packedProduct = (
      x: Float32Array,
      rows: number,
      inF: number,
      w: Float32Array,
      outF: number,
      bias: Float32Array | undefined,
      relu = false,
      into?: Float32Array,
    ): Float32Array | null =>
      runner &&
      runPackedProduct(runner, x, rows, inF, w, outF, bias, relu, into);
    const address = addressOf;
    const parts = opts.splitColumns === true ? 2 : opts.splitColumns || 0;
    const split = parts > 1 && threads > 1;
    /** `y += x·wt` as column blocks on two threads (see `splitColumns`). */
    const blocks = (
      x: Float32Array,
      rows: number,
      inF: number,
      wt: Float32Array,
      outF: number,
      beta: number,
      y: Float32Array,
      relu: boolean,
    ) => {
      use(1);
      // blocks of a multiple of 16 columns (64-byte aligned B and C)
      const width = Math.ceil(outF / parts / 16) * 16;
      const l = splitter.addresses, xa = address(x);
      const wa = address(wt), ya = address(y);
      let count = 0;
      for (let c0 = 0; c0 < outF; c0 += width, count++) {
        const n = Math.min(width, outF - c0);
        l.set([
          0,
          0,
          rows,
          n,
          inF,
          1,
          xa,
          inF,
          wa + c0 * 4,
          outF,
          beta,
          ya + c0 * 4,
          outF,
          relu ? 1 : 0,
        ], count * ADDRESS_FIELDS);
      }
      const next = splitter.start(null, 0, count);
      try {
        sgemmFromAddresses(s.cblas_sgemm_at, l, count, next);
      } finally {
        const failed = splitter.finish();
        if (failed >= 0) {
          // the call that failed on the helper, here
          let once = failed;
          sgemmFromAddresses(s.cblas_sgemm_at, l, count, () => {
            const i = once;
            once = count;
            return i;
          });
        }
      }
    };
    /** `y += x·Wᵀ` through `cblas_sgemm` (y holds the bias rows or zeros). */
    const unpacked = (
      x: Float32Array,
      rows: number,
      inF: number,
      w: Float32Array,
      outF: number,
      beta: number,
      y: Float32Array,
    ): Float32Array => {
      use(threads);
      const wt = rows < transposeRows ? transposed.get(w, outF, inF) : null;
      if (wt && split && outF >= 16 * parts && !splitter.broken) {
        blocks(x, rows, inF, wt, outF, beta, y, false);
        return y;
      }
      if (wt) {
        // C = 1·A·B + β·C with B = Wᵀ (inF × outF)
        s.cblas_sgemm(
          CBLAS_ROW_MAJOR,
          CBLAS_NO_TRANS,
          CBLAS_NO_TRANS,
          rows,
          outF,
          inF,
          1,
          x,
          inF,
          wt,
          outF,
          beta,
          y,
          outF,
        );
        return y;
      }
      // C = 1·A·Bᵀ + β·C with A = x (rows × inF), B = w (outF × inF)
      s.cblas_sgemm(
        CBLAS_ROW_MAJOR,
        CBLAS_NO_TRANS,
        CBLAS_TRANS,
        rows,
        outF,
        inF,
        1,
        x,
        inF,
        w,
        inF,
        beta,
        y,
        outF,
      );
      return y;
    };
    const backend: F32GemmBackend = {
      name,
      minRows: opts.minRows ?? 4,
      minWork: opts.minWork ?? 1 << 20,
      gemm(x, rows, inF, w, outF, bias) {
        const p = packedProduct(x, rows, inF, w, outF, bias);
        if (p) return p;
        const y = biasRows(rows, outF, bias);
        return unpacked(x, rows, inF, w, outF, bias ? 1 : 0, y);
      },
      gemmInto(x, rows, inF, w, outF, bias, relu, out) {
        const n = rows * outF;
        if (out.length < n) {
          throw new RangeError(
            `Cannot write a ${rows}×${outF} product into ${out.length} values`,
          );
        }
        for (
          const [what, a] of [["input", x], ["weight", w], [
            "bias",
            bias,
          ]] as const
        ) {
          if (a && overlaps(out, n, a)) {
            throw new RangeError(
              `Cannot write a product into memory that holds its ${what}`,
            );
          }
        }
        const y = out.subarray(0, n);
        if (packedProduct(x, rows, inF, w, outF, bias, relu, y)) return true;
        fillBiasRows(y, outF, bias);
        unpacked(x, rows, inF, w, outF, bias ? 1 : 0, y);
        if (relu) {
          for (let i = 0; i < n; i++) if (!(y[i] > 0)) y[i] = 0;
        }
        return true;
      },
      gemmRelu(x, rows, inF, w, outF, bias) {
        const p = packedProduct(x, rows, inF, w, outF, bias, true);
        if (p) return p;
        if (
          !split || splitter.broken || outF < 16 * parts ||
          rows >= transposeRows
        ) return null;
        const wt = transposed.get(w, outF, inF);
        if (!wt) return null;
        const y = biasRows(rows, outF, bias);
        blocks(x, rows, inF, wt, outF, bias ? 1 : 0, y, true);
        return y;
      },
      forget(w) {
        transposed.forget(w);
        packed?.forget(w);
      },
      sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
        use(m * n * k < SMALL_SGEMM ? 1 : threads);
        s.cblas_sgemm(
          CBLAS_ROW_MAJOR,
          ta ? CBLAS_TRANS : CBLAS_NO_TRANS,
          tb ? CBLAS_TRANS : CBLAS_NO_TRANS,
          m,
          n,
          k,
          alpha,
          a,
          lda,
          b,
          ldb,
          beta,
          c,
          ldc,
        );
      },
      sgemmMany(memory, list, count) {
        // each call on one thread; with more than one BLAS thread the
        // helper takes calls from the same counter
        use(1);
        const next = threads > 1
          ? helper.start(memory, list, count)
          : ((k) => () => k++)(0);
        try {
          sgemmFromList(s.cblas_sgemm_at, memory, list, count, next);
        } finally {
          const failed = helper.finish();
          if (failed >= 0) {
            let once = failed;
            sgemmFromList(s.cblas_sgemm_at, memory, list, count, () => {
              const i = once;
              once = count;
              return i;
            });
          }
        }
      },
    };
    const mmap = opts.mmapThreshold ?? null;
    return {
      backend,
      library: path,
      heap: mmap === null ? "malloc left alone" : setMmapThreshold(mmap),
      packed: opened.note,
      packedStats: packed ? stats : undefined,
      close() {
        helper.stop();
        splitter.stop();
        packer?.stop();
        packed?.close();
        const installed = setF32GemmBackend(null);
        // another backend was installed since: leave it
        if (installed !== backend) setF32GemmBackend(installed);
        use(threads);
        lib.close();
      },
    };
  }
  return none(`no BLAS library found (${tried.join("; ")})`);
}

/**
 * Installs the system BLAS as the kernels' F32 GEMM backend, or leaves the
 * WebAssembly kernels in place when the library or `--allow-ffi` is missing.
 *
 * @param opts As for {@link openSystemBlas}.
 * @returns What was found; `close()` uninstalls it and closes the library.
 *
 * @example
 * ```ts
 * import { useSystemBlas } from "@modelhost/modelhost/io";
 * const blas = useSystemBlas({ threads: 2 });
 * console.log(blas.backend ? `F32 GEMMs on ${blas.backend.name}` : blas.note);
 * blas.close();
 * ```
 */
export function useSystemBlas(opts: SystemBlasOptions = {}): SystemBlas {
  const blas = openSystemBlas(opts);
  if (blas.backend) setF32GemmBackend(blas.backend);
  return blas;
}
