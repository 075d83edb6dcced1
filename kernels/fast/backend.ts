/**
 * A pluggable backend for F32 matrix products: a runtime with a native
 * BLAS (Deno through FFI: `useSystemBlas` in `@modelhost/modelhost/io`)
 * installs one here, and F32 `linear()` / `fastLinear` / `fastMatmulF32`
 * calls large enough for it go there instead of to the WebAssembly GEMM.
 * Without one (the default, and everywhere outside Deno) nothing changes.
 *
 * A native backend sums in its own order, so its results differ from the
 * WebAssembly kernels' by F32 rounding, and a row's bits may depend on how
 * many rows a call carries.
 *
 * @module
 */

/** A native F32 GEMM: `y = x · Wᵀ + b`. */
export interface F32GemmBackend {
  /** What it is (the library's name and configuration). */
  readonly name: string;
  /** Calls with fewer x rows stay on WebAssembly (decode's matvecs). */
  readonly minRows: number;
  /** Calls with fewer multiply-adds (`rows × in × out`) stay on WebAssembly. */
  readonly minWork: number;
  /**
   * `y = x · Wᵀ + b`.
   *
   * @param x Input rows, `rows × inF`, row-major.
   * @param rows Number of rows.
   * @param inF Input features.
   * @param w Weights `outF × inF`, row-major.
   * @param outF Output features.
   * @param bias Optional bias of length `outF`.
   * @returns The `rows × outF` output, a new array.
   */
  gemm(
    x: Float32Array,
    rows: number,
    inF: number,
    w: Float32Array,
    outF: number,
    bias?: Float32Array,
  ): Float32Array;
  /**
   * Optional: `y = max(0, x · Wᵀ + b)` with the ReLU applied by the
   * threads that computed each block of y, or null where the backend has
   * no such path for this product (the caller then runs `gemm` and its
   * own ReLU). Arguments as for {@link F32GemmBackend.gemm}.
   */
  gemmRelu?(
    x: Float32Array,
    rows: number,
    inF: number,
    w: Float32Array,
    outF: number,
    bias?: Float32Array,
  ): Float32Array | null;
  /**
   * Optional: `y = x · Wᵀ + b` (with `relu`, then `v > 0 ? v : 0`, the
   * dense layer's ReLU) written into the caller's `out`, whose first
   * `rows × outF` values are overwritten (the rest are left alone), so a
   * caller that runs layer after layer can keep the activations between
   * them in one reused buffer instead of a new array per layer. The same
   * values as {@link F32GemmBackend.gemm} (then the ReLU). Returns false
   * where the backend has no such path for this product (the caller then
   * runs `gemm`).
   *
   * @param x Input rows, `rows × inF`, row-major.
   * @param rows Number of rows.
   * @param inF Input features.
   * @param w Weights `outF × inF`, row-major.
   * @param outF Output features.
   * @param bias Optional bias of length `outF`, or undefined.
   * @param relu Whether to apply the ReLU.
   * @param out Where y goes; shares no memory with x, w or the bias.
   * @returns Whether y was written.
   * @throws {RangeError} When `out` holds fewer than `rows × outF` values
   * or overlaps an input.
   */
  gemmInto?(
    x: Float32Array,
    rows: number,
    inF: number,
    w: Float32Array,
    outF: number,
    bias: Float32Array | undefined,
    relu: boolean,
    out: Float32Array,
  ): boolean;
  /**
   * Optional: drops whatever the backend keeps derived from this weight
   * (e.g. a transposed copy), after its values were changed in place;
   * `forgetWeight` calls it.
   *
   * @param w The weight, as given to {@link F32GemmBackend.gemm}.
   */
  forget?(w: Float32Array): void;
  /**
   * Optional: BLAS `sgemm` on row-major strided matrices,
   * `C = α·op(A)·op(B) + β·C` with `op(A)` of `m × k` and `op(B)` of
   * `k × n` (`op` transposes where asked). The arrays start at their
   * matrices' first values (a `subarray` picks a column block); `lda`,
   * `ldb` and `ldc` are their row strides in values. Used for attention's
   * per-head products, which are column blocks of the projections.
   *
   * @param transA Whether A is stored transposed (`k × m`).
   * @param transB Whether B is stored transposed (`n × k`).
   * @param m Rows of C.
   * @param n Columns of C.
   * @param k The summed dimension.
   * @param alpha Scale of the product.
   * @param a A, from its first value.
   * @param lda A's row stride.
   * @param b B, from its first value.
   * @param ldb B's row stride.
   * @param beta Scale of C's previous values (0: C is only written).
   * @param c C, from its first value; overwritten.
   * @param ldc C's row stride.
   */
  sgemm?(
    transA: boolean,
    transB: boolean,
    m: number,
    n: number,
    k: number,
    alpha: number,
    a: Float32Array,
    lda: number,
    b: Float32Array,
    ldb: number,
    beta: number,
    c: Float32Array,
    ldc: number,
  ): void;
  /**
   * Optional: independent `sgemm` calls on matrices inside a shared
   * WebAssembly memory, run on this thread and on a helper thread at once
   * (attention's per-head products: each call too small for the library's
   * own threads to pay off). The list lies in the same memory: `count`
   * calls of {@link SGEMM_CALL_FIELDS} f64 values from byte offset `list`
   * (a multiple of 8): transA (0/1), transB, m, n, k, alpha, a, lda, b,
   * ldb, beta, c, ldc, where a, b and c are byte offsets in the memory.
   * The outputs must not overlap. Returns once every call is done.
   *
   * @param memory The (shared) memory holding the list and the matrices.
   * @param list Byte offset of the list.
   * @param count Number of calls.
   */
  sgemmMany?(memory: WebAssembly.Memory, list: number, count: number): void;
}

/**
 * Values per call in an {@link F32GemmBackend.sgemmMany} list: transA,
 * transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { SGEMM_CALL_FIELDS } from "@modelhost/modelhost/kernels/fast";
 * assert(SGEMM_CALL_FIELDS === 13);
 * ```
 */
export const SGEMM_CALL_FIELDS = 13;

let current: F32GemmBackend | null = null;

/**
 * Installs (or, with null, removes) the native F32 GEMM backend.
 *
 * @param backend The backend, or null for the WebAssembly kernels alone.
 * @returns The backend installed before.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { fastMatmulF32, setF32GemmBackend } from "@modelhost/modelhost/kernels/fast";
 * let calls = 0;
 * const before = setF32GemmBackend({
 *   name: "counting", minRows: 1, minWork: 1,
 *   gemm(x, rows, inF, w, outF) {
 *     calls++;
 *     const y = new Float32Array(rows * outF);
 *     for (let r = 0; r < rows; r++) {
 *       for (let o = 0; o < outF; o++) {
 *         for (let i = 0; i < inF; i++) y[r * outF + o] += x[r * inF + i] * w[o * inF + i];
 *       }
 *     }
 *     return y;
 *   },
 * });
 * const y = fastMatmulF32(new Float32Array([1, 2]), 1, 2, new Float32Array([3, 4]), 1);
 * setF32GemmBackend(before);
 * assert(y[0] === 11 && calls === 1);
 * ```
 */
export function setF32GemmBackend(
  backend: F32GemmBackend | null,
): F32GemmBackend | null {
  const before = current;
  current = backend;
  return before;
}

/**
 * The installed native backend, whatever the size of the product.
 *
 * @returns The backend, or null when none is installed.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { currentF32GemmBackend } from "@modelhost/modelhost/kernels/fast";
 * assert(currentF32GemmBackend() === null); // none installed
 * ```
 */
export function currentF32GemmBackend(): F32GemmBackend | null {
  return current;
}

/**
 * The native backend that takes an F32 product of this size, if one is
 * installed and the size reaches its thresholds.
 *
 * @param rows x rows.
 * @param inF Input features.
 * @param outF Output features.
 * @returns The backend, or null.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { f32GemmBackendFor } from "@modelhost/modelhost/kernels/fast";
 * assert(f32GemmBackendFor(64, 1024, 4096) === null); // none installed
 * ```
 */
export function f32GemmBackendFor(
  rows: number,
  inF: number,
  outF: number,
): F32GemmBackend | null {
  if (!current || rows < current.minRows) return null;
  return rows * inF * outF >= current.minWork ? current : null;
}
