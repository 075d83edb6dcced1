/**
 * A float32 GEMM backend that forwards every product to another one and
 * counts the calls, with the size thresholds off, so that a test on tiny
 * models can tell the library computed its products.
 */

import type { F32GemmBackend } from "../../kernels/fast/backend.ts";

/** The counting backend and its counts, read after the products ran. */
export interface CountingBackend {
  backend: F32GemmBackend;
  counts: { gemms: number; sgemms: number; lists: number };
}

/** Wraps `real` (which must have `sgemm`) in a counting backend. */
export function countingBackend(real: F32GemmBackend): CountingBackend {
  const counts = { gemms: 0, sgemms: 0, lists: 0 };
  const backend: F32GemmBackend = {
    name: real.name,
    minRows: 1,
    minWork: 1,
    gemm(...a) {
      counts.gemms++;
      return real.gemm(...a);
    },
    sgemm(...a) {
      counts.sgemms++;
      real.sgemm!(...a);
    },
    ...(real.sgemmMany
      ? {
        sgemmMany(...a: Parameters<NonNullable<F32GemmBackend["sgemmMany"]>>) {
          counts.lists++;
          real.sgemmMany!(...a);
        },
      }
      : {}),
  };
  return { backend, counts };
}
