/**
 * For the native backend's tests: wait until the helper worker of a
 * two-thread `SystemBlas` has taken part in a product (it starts lazily,
 * on the first products that are large enough).
 */

import type { SystemBlas } from "../../io/blas.ts";
import { uniformF32 } from "./f32_product.ts";

/** Calls until the helper thread has run some packed items (at most 1000 tries, 10 ms apart). */
export async function warmHelper(blas: SystemBlas): Promise<void> {
  const x = uniformF32(64 * 64, 9), w = uniformF32(512 * 64, 10);
  for (let i = 0; i < 1000 && blas.packedStats!.helperItems === 0; i++) {
    blas.backend!.gemm(x, 64, 64, w, 512);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Repeats `product` (which checks its own result) until the helper thread
 * has run more packed items than `since`, at most `tries` times, 10 ms
 * apart: on a busy machine the calling thread can take every item of a
 * test's products, and the test still needs one product the helper took
 * part in. Returns at once when the helper already has.
 */
export async function untilHelperRuns(
  blas: SystemBlas,
  since: number,
  product: (attempt: number) => void,
  tries = 500,
): Promise<void> {
  for (let i = 0; i < tries && blas.packedStats!.helperItems <= since; i++) {
    product(i);
    if (blas.packedStats!.helperItems > since) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}
