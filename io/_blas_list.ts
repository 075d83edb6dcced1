/**
 * Runs a range of an `sgemmMany` call list (see `F32GemmBackend.sgemmMany`)
 * through `cblas_sgemm` with pointers into the shared WebAssembly memory:
 * shared by the main thread (io/blas.ts) and its helper
 * (io/_blas_helper.ts).
 *
 * @module
 */

import { SGEMM_CALL_FIELDS } from "../kernels/fast/backend.ts";

/** `cblas_sgemm` with its matrices as raw pointers. */
export const SGEMM_POINTER_SYMBOL = {
  name: "cblas_sgemm",
  parameters: [
    "i32",
    "i32",
    "i32",
    "i32",
    "i32",
    "i32",
    "f32",
    "pointer",
    "i32",
    "pointer",
    "i32",
    "f32",
    "pointer",
    "i32",
  ],
  result: "void",
} as const;

/** The symbol's function type. */
export type SgemmPointerFn = (
  order: number,
  ta: number,
  tb: number,
  m: number,
  n: number,
  k: number,
  alpha: number,
  a: Deno.PointerValue,
  lda: number,
  b: Deno.PointerValue,
  ldb: number,
  beta: number,
  c: Deno.PointerValue,
  ldc: number,
) => void;

const ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112;

/**
 * Runs the calls of the list at byte offset `list` of `memory` that
 * `next` hands out (each index once across the threads taking part; an
 * index ≥ `count` ends the loop). Shared memories never move, so the base
 * address stays valid as the memory grows.
 *
 * @param sgemm The pointer-typed `cblas_sgemm`.
 * @param memory The memory holding the list and the matrices.
 * @param list Byte offset of the list.
 * @param count Calls in the list.
 * @param next The next call to run.
 * @throws {RangeError} When a call's matrices reach past the memory.
 */
export function sgemmFromList(
  sgemm: SgemmPointerFn,
  memory: WebAssembly.Memory,
  list: number,
  count: number,
  next: () => number,
): void {
  if (count <= 0) return;
  const bytes = new Uint8Array(memory.buffer);
  const base = Deno.UnsafePointer.of(bytes);
  const f = new Float64Array(memory.buffer, list, count * SGEMM_CALL_FIELDS);
  const end = bytes.byteLength;
  for (let i = next(); i < count; i = next()) {
    const o = i * SGEMM_CALL_FIELDS;
    const [ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc] = f.subarray(
      o,
      o + SGEMM_CALL_FIELDS,
    );
    // the last value each matrix touches, in bytes
    const lastA = a + ((ta ? k : m) - 1) * lda * 4 + (ta ? m : k) * 4;
    const lastB = b + ((tb ? n : k) - 1) * ldb * 4 + (tb ? k : n) * 4;
    const lastC = c + (m - 1) * ldc * 4 + n * 4;
    if (
      Math.max(lastA, lastB, lastC) > end || Math.min(a, b, c) < 0
    ) {
      throw new RangeError(
        `Cannot run sgemm call ${i} (${m}×${n}×${k}): its matrices reach byte ${
          Math.max(lastA, lastB, lastC)
        } of a ${end}-byte memory`,
      );
    }
    sgemm(
      ROW_MAJOR,
      ta ? TRANS : NO_TRANS,
      tb ? TRANS : NO_TRANS,
      m,
      n,
      k,
      alpha,
      Deno.UnsafePointer.offset(base!, a),
      lda,
      Deno.UnsafePointer.offset(base!, b),
      ldb,
      beta,
      Deno.UnsafePointer.offset(base!, c),
      ldc,
    );
  }
}

/** Values per call in an address list (see {@link sgemmFromAddresses}). */
export const ADDRESS_FIELDS = 14;

/**
 * Runs the calls of an address list that `next` hands out:
 * {@link ADDRESS_FIELDS} values per call, those of a memory list with a,
 * b and c absolute addresses in this process (the arrays of
 * `F32GemmBackend.gemm`, kept alive and unmoved by the caller, which
 * waits for every call to finish), then 1 to apply ReLU to the call's C
 * block right after its product (0: none).
 *
 * @param sgemm The pointer-typed `cblas_sgemm`.
 * @param list The calls, {@link ADDRESS_FIELDS} values each.
 * @param count Calls in the list.
 * @param next The next call to run.
 */
export function sgemmFromAddresses(
  sgemm: SgemmPointerFn,
  list: Float64Array,
  count: number,
  next: () => number,
): void {
  for (let i = next(); i < count; i = next()) {
    const o = i * ADDRESS_FIELDS;
    const [ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, relu] = list
      .subarray(o, o + ADDRESS_FIELDS);
    const cp = Deno.UnsafePointer.create(BigInt(c));
    sgemm(
      ROW_MAJOR,
      ta ? TRANS : NO_TRANS,
      tb ? TRANS : NO_TRANS,
      m,
      n,
      k,
      alpha,
      Deno.UnsafePointer.create(BigInt(a)),
      lda,
      Deno.UnsafePointer.create(BigInt(b)),
      ldb,
      beta,
      cp,
      ldc,
    );
    if (relu === 1 && m > 0 && n > 0) {
      const y = new Float32Array(
        Deno.UnsafePointerView.getArrayBuffer(cp!, ((m - 1) * ldc + n) * 4),
      );
      reluRows(y, m, n, ldc);
    }
  }
}

/** ReLU in place on `m` rows of `n` values, `ldc` apart. */
function reluRows(y: Float32Array, m: number, n: number, ldc: number): void {
  for (let r = 0; r < m; r++) {
    for (let j = r * ldc, e = j + n; j < e; j++) if (y[j] < 0) y[j] = 0;
  }
}
