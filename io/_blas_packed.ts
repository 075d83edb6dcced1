/**
 * F32 GEMM on weights packed once, for the system BLAS backend (io/blas.ts).
 *
 * `cblas_sgemm` copies W into its kernel's panel layout on every call;
 * ONNX Runtime packs constant weights once per session. OpenBLAS builds
 * with DYNAMIC_ARCH export the pieces of their level-3 driver per kernel
 * family (`sgemm_kernel_HASWELL`, `sgemm_incopy_HASWELL`,
 * `sgemm_oncopy_HASWELL`, …), so W can go through the library's own copy
 * routine once, at its first product, and each later product packs only
 * x and calls the kernel.
 *
 * The product `y = x·Wᵀ + b` (x `rows × in`, W `out × in`, y `rows × out`,
 * all row-major) is, read column-major, `C = Aᵀ·B` with A = W (`in × out`,
 * each output's weights contiguous), B = x (`in × rows`) and C = y
 * (`out × rows`, leading dimension `out`): OpenBLAS's "TN" case, whose
 * driver packs A with the `incopy` routine and B with `oncopy`. The
 * weight is cut into k-blocks of {@link PackedFamily.kc} inputs, each
 * packed over all outputs (panels of `unrollM` outputs, so the block of
 * outputs `m0..` starts `kl·m0` floats into it when `m0` is a multiple
 * of `unrollM`); x likewise, in panels of `unrollN` rows. Work is cut
 * into items of whole output columns groups (and row groups when rows are
 * many); each item runs its k-blocks in order, so every output sums its
 * inputs in the same order whichever thread runs it.
 *
 * @module
 */

import { type CopyBudget, WeightCopies } from "./_blas_transpose.ts";

/** A kernel family's sizes (OpenBLAS 0.3.21 param.h, x86_64). */
export interface PackedFamily {
  /** Symbol suffix (`sgemm_kernel_<suffix>`). */
  suffix: string;
  /** Outputs per A panel (SGEMM_DEFAULT_UNROLL_M). */
  unrollM: number;
  /** Rows per B panel (SGEMM_DEFAULT_UNROLL_N). */
  unrollN: number;
  /** Inputs per k-block (our choice, from SGEMM_DEFAULT_Q or measured). */
  kc: number;
  /** Outputs per kernel call (our choice, A sub-block kept in L2). */
  mc: number;
}

/**
 * The kernel families used, by the name `openblas_get_corename` gives.
 * Only these: their sizes were read from OpenBLAS 0.3.21's param.h and
 * KERNEL.* files (8×4 AVX2 kernel with 8-wide A copies for Haswell and
 * Zen; 16×4 AVX-512 kernel with 16-wide A copies for SkylakeX and
 * Cooperlake).
 */
export const PACKED_FAMILIES: Readonly<Record<string, PackedFamily>> = {
  Haswell: { suffix: "HASWELL", unrollM: 8, unrollN: 4, kc: 320, mc: 128 },
  Zen: { suffix: "ZEN", unrollM: 8, unrollN: 4, kc: 320, mc: 128 },
  // (k-blocks of up to 1024 inputs: on a Zen 4 EPYC the batch-64 MLP on
  // 2 threads ran 3-4% faster than with 320, where the AVX2 kernel did
  // not gain)
  SkylakeX: { suffix: "SKYLAKEX", unrollM: 16, unrollN: 4, kc: 1024, mc: 128 },
  Cooperlake: {
    suffix: "COOPERLAKE",
    unrollM: 16,
    unrollN: 4,
    kc: 320,
    mc: 128,
  },
};

/** The kernel: C += alpha·A·B on packed A and B (pointers as addresses). */
export function kernelSymbol(suffix: string) {
  return {
    name: `sgemm_kernel_${suffix}`,
    parameters: ["i64", "i64", "i64", "f32", "usize", "usize", "usize", "i64"],
    result: "i32",
    optional: true,
  } as const;
}

/** A copy routine: (m, n, a, lda, b). */
function copySymbol(name: string) {
  return {
    name,
    parameters: ["i64", "i64", "buffer", "i64", "buffer"],
    result: "i32",
    optional: true,
  } as const;
}

/** A copy routine with its arrays as addresses: (m, n, a, lda, b). */
export function copyAtSymbol(name: string) {
  return {
    name,
    parameters: ["i64", "i64", "usize", "i64", "usize"],
    result: "i32",
    optional: true,
  } as const;
}

function packedSymbols(suffix: string) {
  return {
    kernel: kernelSymbol(suffix),
    incopy: copySymbol(`sgemm_incopy_${suffix}`),
    oncopy: copySymbol(`sgemm_oncopy_${suffix}`),
    oncopyAt: copyAtSymbol(`sgemm_oncopy_${suffix}`),
    corename: {
      name: "openblas_get_corename",
      parameters: [],
      result: "pointer",
      optional: true,
    },
  } as const;
}

/**
 * The kernel's function type (as the helper thread opens it too). Deno's
 * FFI takes numbers for its 64-bit integer parameters; its types say
 * bigint, so the symbols are cast to these types.
 */
export type PackedKernelFn = (
  m: number,
  n: number,
  k: number,
  alpha: number,
  a: number,
  b: number,
  c: number,
  ldc: number,
) => number;

/** A copy routine on addresses (see {@link copyAtSymbol}). */
export type CopyAtFn = (
  m: number,
  n: number,
  a: number,
  lda: number,
  b: number,
) => number;

/**
 * The sync words of a packed job, four int32 over its descriptor's shared
 * buffer from byte 768 (past the descriptor's fields): [0] the next x
 * packing task, [1] tasks done, plus 1 once the calling thread has put
 * y's address into the descriptor, [2] threads sleeping until [1]
 * changes, [3] 1 when a task failed (the calling thread then packs x
 * again itself and the helper runs no item).
 */
export function packSync(d: Float64Array): Int32Array {
  return new Int32Array(d.buffer, 768, 4);
}

/** Counts one task done and wakes a thread waiting for the count. */
export function markDone(sync: Int32Array): void {
  Atomics.add(sync, 1, 1);
  if (Atomics.load(sync, 2) > 0) Atomics.notify(sync, 1);
}

/**
 * Packs x's tasks from the shared counter, as many as this thread gets:
 * task t is k-block ⌊t / [19]⌋ of rows `(t mod [19])·[18]…` (row groups
 * a multiple of the unroll, so each lands where the whole-x copy puts
 * it: `kl·r0` floats into its k-block). Descriptor fields beyond
 * {@link runPackedItems}': [16] x's address, [17] the number of tasks,
 * [18] rows per task, [19] row groups.
 *
 * @param oncopy The family's `oncopy`, on addresses.
 * @param d The descriptor.
 * @param sync Its sync words ({@link packSync}).
 */
export function runPackTasks(
  oncopy: CopyAtFn,
  d: Float64Array,
  sync: Int32Array,
): void {
  const sb = d[1], rows = d[4], inF = d[5], kc = d[6];
  const xAt = d[16], tasks = d[17], pg = d[18], groups = d[19];
  for (
    let t = Atomics.add(sync, 0, 1);
    t < tasks;
    t = Atomics.add(sync, 0, 1)
  ) {
    const kb = Math.floor(t / groups), r0 = (t - kb * groups) * pg;
    const ls = kb * kc, kl = Math.min(kc, inF - ls);
    try {
      oncopy(
        kl,
        Math.min(pg, rows - r0),
        xAt + (r0 * inF + ls) * 4,
        inF,
        sb + (ls * rows + kl * r0) * 4,
      );
    } catch (e) {
      Atomics.store(sync, 3, 1);
      throw e;
    } finally {
      markDone(sync);
    }
  }
}

/**
 * Whether `total` tasks are done within a short spin (the other thread is
 * inside a task of a few µs, unless the system took its core away).
 */
export function packedSoon(sync: Int32Array, total: number): boolean {
  for (let i = 0; i < 2000; i++) {
    if (Atomics.load(sync, 1) >= total) return true;
  }
  return false;
}

/**
 * Waits until `total` tasks are done: a short spin, then sleeps until
 * woken (the helper's side; the calling thread packs x itself instead).
 */
export function awaitPacked(sync: Int32Array, total: number): void {
  if (packedSoon(sync, total)) return;
  Atomics.add(sync, 2, 1);
  try {
    for (let v = Atomics.load(sync, 1); v < total; v = Atomics.load(sync, 1)) {
      Atomics.wait(sync, 1, v, 5);
    }
  } finally {
    Atomics.sub(sync, 2, 1);
  }
}

/** Rows per x packing task: about a quarter of x, a multiple of the unroll. */
export function packRows(fam: PackedFamily, rows: number): number {
  const un = fam.unrollN;
  return Math.max(un, Math.ceil(rows / 4 / un) * un);
}

/** A copy routine's function type (see {@link PackedKernelFn}). */
type CopyFn = (
  m: number,
  n: number,
  a: ArrayBufferView,
  lda: number,
  b: ArrayBufferView,
) => number;

/**
 * Runs the items of a packed product that `next` hands out. The
 * descriptor `d` holds: [0] packed W's address, [1] packed x's address,
 * [2] y's address, [3] out, [4] rows, [5] in, [6] inputs per k-block
 * (`blockK`), [7] mc, [8] outputs
 * per item (a multiple of unrollM), [9] rows per item (a multiple of
 * unrollN), [10] items across the outputs, [11] items in all, [12] the
 * bias's address (0: none), [13] that of at least [9] ones. y starts
 * zeroed; each item adds the bias first, then its k-blocks. Item `i` covers
 * outputs `(i mod [10])·[8]…` and rows `⌊i / [10]⌋·[9]…`. [14] 1: each
 * item then sets its outputs that are not above 0 to 0 (the dense layer's
 * ReLU, `v > 0 ? v : 0`) through `y`, while they are still in cache. [15]
 * 1: y is a reused buffer, not a zeroed new one: each item first zeroes
 * its block through `y`.
 *
 * @param kernel The family's kernel.
 * @param d The descriptor.
 * @param next The next item (each index once across the threads; one ≥
 * the count ends the loop).
 * @param y A view of the output [2] (`rows × out` values), for the ReLU
 * and the zeroing.
 */
export function runPackedItems(
  kernel: PackedKernelFn,
  d: Float64Array,
  next: () => number,
  y?: Float32Array,
): void {
  const [sa, sb, c, outF, rows, inF, kc, mc, gm, gn, mItems, count] = d;
  const bias = d[12], ones = d[13];
  const relu = d[14] === 1 ? y : undefined;
  const zero = d[15] === 1 ? y : undefined;
  for (let i = next(); i < count; i = next()) {
    const m0 = (i % mItems) * gm, m1 = Math.min(outF, m0 + gm);
    const n0 = Math.floor(i / mItems) * gn, n = Math.min(gn, rows - n0);
    if (m1 <= m0 || n <= 0) continue;
    if (zero) zeroBlock(zero, outF | 0, n0 | 0, (n0 + n) | 0, m0 | 0, m1 | 0);
    const cAt = c + (n0 * outF) * 4;
    if (bias !== 0) {
      // the bias as a product over one input: A = b (k = 1 packs as the
      // plain vector), B = ones
      for (let ms = m0; ms < m1; ms += mc) {
        const m = Math.min(mc, m1 - ms);
        kernel(m, n, 1, 1, bias + ms * 4, ones, cAt + ms * 4, outF);
      }
    }
    for (let ls = 0; ls < inF; ls += kc) {
      const kl = Math.min(kc, inF - ls);
      const aBlock = sa + ls * outF * 4, bAt = sb + (ls * rows + kl * n0) * 4;
      for (let ms = m0; ms < m1; ms += mc) {
        const m = Math.min(mc, m1 - ms);
        kernel(m, n, kl, 1, aBlock + kl * ms * 4, bAt, cAt + ms * 4, outF);
      }
    }
    // (int32 bounds: the descriptor's doubles as loop bounds made the
    // loop 3× slower)
    if (relu) reluBlock(relu, outF | 0, n0 | 0, (n0 + n) | 0, m0 | 0, m1 | 0);
  }
}

/**
 * Sets the values of rows `r0..r1`, columns `c0..c1` of y that are not
 * above 0 (negatives, −0, NaN) to 0, as the dense layer's ReLU does.
 */
function reluBlock(
  y: Float32Array,
  cols: number,
  r0: number,
  r1: number,
  c0: number,
  c1: number,
): void {
  for (let r = r0; r < r1; r++) {
    const o = r * cols;
    for (let i = o + c0, e = o + c1; i < e; i++) if (!(y[i] > 0)) y[i] = 0;
  }
}

/** Zeroes rows `r0..r1`, columns `c0..c1` of y (a memset per row). */
function zeroBlock(
  y: Float32Array,
  cols: number,
  r0: number,
  r1: number,
  c0: number,
  c1: number,
): void {
  for (let r = r0; r < r1; r++) y.fill(0, r * cols + c0, r * cols + c1);
}

/**
 * A thread's view of the output at an address, kept while the next job's
 * output has the same address and size (freed and reallocated arrays
 * often come back at the same place), so a view is made per new buffer,
 * not per job.
 */
export class OutputView {
  #at = -1;
  #n = -1;
  #view: Float32Array | undefined;

  /** A view of `n` floats at address `at`. */
  get(at: number, n: number): Float32Array {
    if (at !== this.#at || n !== this.#n || !this.#view) {
      const p = Deno.UnsafePointer.create(BigInt(at));
      if (p === null) throw new RangeError(`Cannot view output at ${at}`);
      this.#view = new Float32Array(
        Deno.UnsafePointerView.getArrayBuffer(p, n * 4),
      );
      this.#at = at;
      this.#n = n;
    }
    return this.#view;
  }
}

/** A float array on its own off-heap buffer, 64-byte aligned, and its address. */
function aligned(n: number): { a: Float32Array; at: number } {
  const buf = new ArrayBuffer(n * 4 + 64);
  const base = Number(
    Deno.UnsafePointer.value(Deno.UnsafePointer.of(new Uint8Array(buf))),
  );
  const skip = (64 - (base % 64)) % 64;
  return { a: new Float32Array(buf, skip, n), at: base + skip };
}

/**
 * Throws when `a` holds fewer than `r·c` values: the copy routines read
 * native memory and would read past the array.
 */
function short(what: string, a: Float32Array, r: number, c: number): void {
  if (a.length < r * c) {
    throw new RangeError(
      `Cannot multiply by a packed weight: the ${what} has ${a.length} values, ${r}×${c} = ${
        r * c
      } expected`,
    );
  }
}

/** One weight packed for the kernel. */
interface Packed {
  a: Float32Array;
  at: number;
}

/**
 * Inputs per k-block for `inF` inputs: the family's `kc` or less, the
 * blocks as even as possible (1024 inputs: 4 × 256, not 3 × 320 + 64).
 */
export function blockK(fam: PackedFamily, inF: number): number {
  return Math.ceil(inF / Math.ceil(inF / fam.kc));
}

/** How a packed product is cut into items (see {@link runPackedItems}). */
export interface PackedPlan {
  /** Outputs per item. */
  gm: number;
  /** Rows per item. */
  gn: number;
  /** Items across the outputs. */
  mItems: number;
  /** Items in all. */
  count: number;
}

/** Most outputs per item (each item reads all of packed x again). */
export const GROUP = 256;

/**
 * The items of a `rows × in → out` product: an even number of output
 * groups of at most {@link GROUP} (a multiple of the unroll), rows in
 * groups whose part of y stays near 256 KiB. Items are taken from one
 * counter, so a helper that wakes late leaves more of them to the
 * calling thread: the smaller the items, the less it waits at the end.
 * The plan does not depend on the thread count: OpenBLAS's kernel computes an output
 * with different instruction sequences depending on the call's m and n
 * (the Haswell kernel's 12-column and 16-row paths), so the same bits on
 * one and two threads need the same cuts.
 */
export function planPacked(
  fam: PackedFamily,
  rows: number,
  outF: number,
  group: number = GROUP,
): PackedPlan {
  const per = 2 * Math.ceil(outF / (2 * group));
  const um = fam.unrollM, un = fam.unrollN;
  const gm = Math.max(um, Math.ceil(outF / per / um) * um);
  const mItems = Math.ceil(outF / gm);
  const fit = Math.max(un, Math.floor((1 << 16) / gm / un) * un);
  const nGroups = Math.ceil(rows / fit);
  const gn = Math.ceil(rows / nGroups / un) * un;
  return { gm, gn, mItems, count: mItems * Math.ceil(rows / gn) };
}

/**
 * The packed GEMM of one loaded OpenBLAS: its copy routines and kernel,
 * the weights packed so far (weakly by buffer, within the shared budget)
 * and the buffer x is packed into.
 */
export class PackedGemm {
  /** The kernel family's sizes. */
  readonly family: PackedFamily;
  /** The kernel, for the calling thread. */
  readonly kernel: PackedKernelFn;
  /** `oncopy` on addresses, for x's packing tasks. */
  readonly oncopyAt: CopyAtFn;
  #incopy: CopyFn;
  #oncopy: CopyFn;
  #lib: Deno.DynamicLibrary<ReturnType<typeof packedSymbols>>;
  #weights: WeightCopies<Packed>;
  #x: { a: Float32Array; at: number } | null = null;
  #bias: { a: Float32Array; at: number } | null = null;
  #ones: { a: Float32Array; at: number } | null = null;

  private constructor(
    lib: Deno.DynamicLibrary<ReturnType<typeof packedSymbols>>,
    family: PackedFamily,
    budget: CopyBudget,
  ) {
    this.#lib = lib;
    this.family = family;
    this.kernel = lib.symbols.kernel as unknown as PackedKernelFn;
    this.#incopy = lib.symbols.incopy as unknown as CopyFn;
    this.#oncopy = lib.symbols.oncopy as unknown as CopyFn;
    this.oncopyAt = lib.symbols.oncopyAt as unknown as CopyAtFn;
    this.#weights = new WeightCopies(budget);
  }

  /**
   * Opens the packed routines of `library` for the kernel family that
   * `openblas_get_corename` names (or `core`, when given); with `avx512`,
   * the AVX-512 family (SkylakeX) where that name is an AVX2 one (Haswell,
   * Zen): io/blas.ts keeps `cblas_sgemm` on the AVX2 kernels on AMD
   * processors with AVX-512, where they measured faster, but the packed
   * path calls the kernel alone, which measured faster with AVX-512.
   *
   * @returns The packed GEMM, or a note saying why there is none.
   */
  static open(
    library: string,
    budget: CopyBudget,
    core?: string,
    avx512 = false,
  ): { packed: PackedGemm | null; note: string } {
    let name = core;
    if (name === undefined) {
      let lib;
      try {
        lib = Deno.dlopen(library, packedSymbols("HASWELL"));
      } catch (e) {
        return { packed: null, note: `cannot open ${library}: ${e}` };
      }
      const p = lib.symbols.corename?.();
      name = p ? Deno.UnsafePointerView.getCString(p) : "";
      lib.close();
      if (!name) {
        return {
          packed: null,
          note: `${library} has no openblas_get_corename`,
        };
      }
      name = name.trim();
      if (avx512 && (name === "Haswell" || name === "Zen")) name = "SkylakeX";
    }
    const family = PACKED_FAMILIES[name.trim()];
    if (!family) {
      return { packed: null, note: `no packed kernels for core ${name}` };
    }
    let lib;
    try {
      lib = Deno.dlopen(library, packedSymbols(family.suffix));
    } catch (e) {
      return { packed: null, note: `cannot open ${library}: ${e}` };
    }
    const s = lib.symbols;
    if (!s.kernel || !s.incopy || !s.oncopy || !s.oncopyAt) {
      lib.close();
      return {
        packed: null,
        note:
          `${library} does not export sgemm_kernel/incopy/oncopy_${family.suffix}`,
      };
    }
    return {
      packed: new PackedGemm(lib, family, budget),
      note: `${name} kernels, weights packed once`,
    };
  }

  /**
   * W (`outF × inF`) packed, made on first use; null when the budget has
   * no room for it.
   *
   * @throws {RangeError} When `w` holds fewer than `outF·inF` values.
   */
  weight(w: Float32Array, outF: number, inF: number): Packed | null {
    short("weight", w, outF, inF);
    return this.#weights.get(w, outF, inF, outF * inF * 4 + 64, () => {
      const p = aligned(outF * inF);
      const kc = blockK(this.family, inF);
      for (let ls = 0; ls < inF; ls += kc) {
        const kl = Math.min(kc, inF - ls);
        this.#incopy(
          kl,
          outF,
          w.subarray(ls),
          inF,
          p.a.subarray(ls * outF),
        );
      }
      return p;
    });
  }

  /** Drops the packed copies of `w`'s buffer at its offset. */
  forget(w: Float32Array): void {
    this.#weights.forget(w);
  }

  /**
   * Throws what {@link packX} and {@link biasOnes} would throw, before
   * any thread is told about the product.
   *
   * @throws {RangeError} When `x` or `bias` is shorter than its shape.
   */
  check(
    x: Float32Array,
    rows: number,
    inF: number,
    bias: Float32Array | undefined,
    outF: number,
  ): void {
    short("input", x, rows, inF);
    if (bias) short("bias", bias, 1, outF);
  }

  /**
   * The address of the reused buffer x is packed into, grown to `n`
   * values (for {@link runPackTasks}).
   */
  xBuffer(n: number): number {
    if (!this.#x || this.#x.a.length < n) this.#x = aligned(n);
    return this.#x.at;
  }

  /**
   * x (`rows × inF`) packed into the reused buffer, k-block by k-block;
   * returns the buffer's address.
   *
   * @throws {RangeError} When `x` holds fewer than `rows·inF` values.
   */
  packX(x: Float32Array, rows: number, inF: number): number {
    short("input", x, rows, inF);
    const n = rows * inF;
    if (!this.#x || this.#x.a.length < n) this.#x = aligned(n);
    const dst = this.#x.a, kc = blockK(this.family, inF);
    for (let ls = 0; ls < inF; ls += kc) {
      const kl = Math.min(kc, inF - ls);
      this.#oncopy(
        kl,
        rows,
        x.subarray(ls),
        inF,
        dst.subarray(ls * rows),
      );
    }
    return this.#x.at;
  }

  /**
   * The bias copied to a reused buffer and a vector of `rows` ones, for
   * the kernel (addresses; 0 and 0 without a bias).
   *
   * @throws {RangeError} When `bias` holds fewer than `outF` values.
   */
  biasOnes(
    bias: Float32Array | undefined,
    outF: number,
    rows: number,
  ): [number, number] {
    if (!bias) return [0, 0];
    short("bias", bias, 1, outF);
    if (!this.#bias || this.#bias.a.length < outF) this.#bias = aligned(outF);
    this.#bias.a.set(bias.subarray(0, outF));
    if (!this.#ones || this.#ones.a.length < rows) {
      this.#ones = aligned(rows);
      this.#ones.a.fill(1);
    }
    return [this.#bias.at, this.#ones.at];
  }

  /** Closes this handle on the library. */
  close(): void {
    this.#lib.close();
  }
}

/** `madvise` advice: fault the range in, writable (Linux 5.14+). */
const MADV_POPULATE_WRITE = 23;
/** Outputs at least this large are populated (smaller ones are heap memory). */
const POPULATE_BYTES = 1 << 17;

type Madvise = (p: Deno.PointerValue, len: bigint, advice: number) => number;
/** libc's `madvise` (undefined: not looked up yet; null: none or refused). */
let madvise: Madvise | null | undefined;

function populator(): Madvise | null {
  if (madvise !== undefined) return madvise;
  madvise = null;
  if (Deno.build.os !== "linux") return null;
  try {
    const lib = Deno.dlopen("libc.so.6", {
      madvise: { parameters: ["pointer", "usize", "i32"], result: "i32" },
    });
    madvise = lib.symbols.madvise as Madvise;
  } catch {
    // no glibc: outputs are faulted in by the items
  }
  return madvise;
}

/**
 * A zeroed `rows × outF` array on its own off-heap buffer (its address
 * stays put while other threads write it), and its address. A fresh large
 * buffer's pages are otherwise faulted in one by one by the threads'
 * kernel calls; with `populate` they are mapped by one
 * `madvise(MADV_POPULATE_WRITE)` first (where the kernel has it; one that
 * refuses turns it off for the process).
 */
export function outputRows(
  rows: number,
  outF: number,
  populate = false,
): { y: Float32Array; at: number } {
  const y = new Float32Array(new ArrayBuffer(rows * outF * 4));
  const at = y.length === 0
    ? 0
    : Number(Deno.UnsafePointer.value(Deno.UnsafePointer.of(y)));
  const f = populate && y.byteLength >= POPULATE_BYTES ? populator() : null;
  if (f) {
    // whole pages inside the buffer
    const a0 = Math.ceil(at / 4096) * 4096;
    const a1 = Math.floor((at + y.byteLength) / 4096) * 4096;
    const p = a1 > a0 ? Deno.UnsafePointer.create(BigInt(a0)) : null;
    if (p && f(p, BigInt(a1 - a0), MADV_POPULATE_WRITE) !== 0) madvise = null;
  }
  return { y, at };
}
