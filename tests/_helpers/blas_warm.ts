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
