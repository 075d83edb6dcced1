// io/quant_pool.ts: rows encoded across workers give the bytes of the
// encoders on this thread (which tests/formats/gguf_presets_test.ts and
// gguf_imatrix_test.ts check against llama-quantize), with and without an
// importance matrix, for 2-D and expert (3-D) tensors.

import { assertEquals } from "@std/assert";
import { quantizeGguf } from "../../core/quants/mod.ts";
import { quantizeWithImatrix } from "../../core/quants/k_encode_imatrix.ts";
import { createQuantPool } from "../../io/quant_pool.ts";

Deno.test("quant pool: the same bytes as one thread", async () => {
  const perRow = 512, rows = 7;
  const x = Float32Array.from(
    { length: rows * perRow },
    (_, i) => Math.sin(i * 0.37) * (1 + (i % 13)),
  );
  const w = Float32Array.from({ length: perRow }, (_, i) => 0.5 + (i % 5));
  const pool = createQuantPool(3);
  try {
    for (const t of ["Q4_K", "Q6_K", "Q8_0", "Q5_0"] as const) {
      assertEquals(await pool.encode(t, x, perRow), quantizeGguf(t, x), t);
      assertEquals(
        await pool.encode(t, x, perRow, w),
        quantizeWithImatrix(t, x, perRow, w),
        `${t} with an importance matrix`,
      );
    }
    // 3 experts of 2 rows, one weight row per expert
    const x3 = x.subarray(0, 6 * perRow);
    const w3 = Float32Array.from({ length: 3 * perRow }, (_, i) => 1 + (i % 7));
    assertEquals(
      await pool.encode("Q4_K", x3, perRow, w3, 2),
      quantizeWithImatrix("Q4_K", x3, perRow, w3, 2),
    );
  } finally {
    pool.close();
  }
});
