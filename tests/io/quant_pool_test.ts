// io/quant_pool.ts: rows encoded across workers give the bytes of the
// encoders on this thread (which tests/formats/gguf_presets_test.ts and
// gguf_imatrix_test.ts check against llama-quantize), with and without an
// importance matrix, for 2-D and expert (3-D) tensors; and whole files
// written through the pool equal llama-quantize's (sha256 in
// tests/vectors/gguf_presets.json, made by tests/vectors/gen/gguf_presets.sh).

import { assertEquals, assertRejects, assertThrows } from "@std/assert";
import { quantizeGguf } from "../../core/quants/mod.ts";
import { quantizeWithImatrix } from "../../core/quants/k_encode_imatrix.ts";
import { createQuantPool } from "../../io/quant_pool.ts";
import { encodeHex } from "@std/encoding";
import { decodeToF32, encodeFromF32 } from "../../core/dtypes.ts";
import { memorySource } from "../../core/sources.ts";
import { readGguf, writeGgufBytes } from "../../formats/gguf/mod.ts";
import { syntheticLlama } from "../vectors/gen/synthetic_llama.ts";

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

Deno.test("quant pool: small chunks across workers and tensors in flight together give the same bytes", async () => {
  const perRow = 512, rows = 11;
  const x = Float32Array.from(
    { length: rows * perRow },
    (_, i) => Math.cos(i * 0.11) * (1 + (i % 29)),
  );
  const w = Float32Array.from({ length: 4 * perRow }, (_, i) => 1 + (i % 3));
  // two rows (or one expert matrix of 2 rows) per chunk
  const pool = createQuantPool(2, { chunkValues: 2 * perRow });
  try {
    const types = ["Q4_K", "Q5_K", "Q6_K", "Q8_0"] as const;
    const got = await Promise.all(types.map((t) => pool.encode(t, x, perRow)));
    types.forEach((t, k) => assertEquals(got[k], quantizeGguf(t, x), t));
    const x4 = x.subarray(0, 8 * perRow);
    assertEquals(
      await pool.encode("Q4_K", x4, perRow, w, 2),
      quantizeWithImatrix("Q4_K", x4, perRow, w, 2),
    );
  } finally {
    pool.close();
  }
});

Deno.test("quant pool: a bad chunk size is refused; a closed pool rejects", async () => {
  assertThrows(() => createQuantPool(2, { chunkValues: 0 }), RangeError);
  const pool = createQuantPool(1);
  pool.close();
  await assertRejects(
    () => pool.encode("Q8_0", new Float32Array(64), 32),
    Error,
    "closed",
  );
});

Deno.test("quant pool: Q4_K_M files written through the pool (small chunks, next tensor read ahead) are llama-quantize's, byte for byte", async () => {
  const ref: {
    inputs: Record<string, string>;
    cases: { model: string; id: string; sha256?: string }[];
  } = JSON.parse(
    await Deno.readTextFile(
      new URL("../vectors/gguf_presets.json", import.meta.url),
    ),
  );
  const sha = async (b: Uint8Array) =>
    encodeHex(
      await crypto.subtle.digest("SHA-256", b as Uint8Array<ArrayBuffer>),
    );
  const pool = createQuantPool(2, { chunkValues: 3 * 256 });
  try {
    for (const variant of ["gqa4", "mha"] as const) {
      const bytes = await syntheticLlama(variant);
      assertEquals(await sha(bytes), ref.inputs[`syn-${variant}`]);
      for (const id of ["Q4_K_M", "Q6_K", "Q3_K_M"]) {
        const want = ref.cases.find((c) =>
          c.model === `syn-${variant}` && c.id === id
        )!.sha256;
        const file = await readGguf(memorySource(bytes));
        const out = await writeGgufBytes(file, {
          preset: id,
          encode: pool.encode,
        });
        assertEquals(await sha(out), want, `${variant} ${id}`);
        // the F16 rows widened by the workers themselves
        const stored = await writeGgufBytes(file, {
          preset: id,
          encode: pool.encode,
          encodeStored: pool.encodeStored,
        });
        assertEquals(await sha(stored), want, `${variant} ${id} from F16`);
      }
    }
  } finally {
    pool.close();
  }
});

Deno.test("quant pool: rows from stored F16 / BF16 / F32 bytes give the encoders' bytes of the widened values", async () => {
  const perRow = 512, rows = 5;
  const x = Float32Array.from(
    { length: rows * perRow },
    (_, i) => Math.sin(i * 0.23) * (1 + (i % 11)),
  );
  const pool = createQuantPool(2, { chunkValues: 2 * perRow });
  try {
    for (const from of ["F16", "BF16", "F32"] as const) {
      const stored = encodeFromF32(from, x);
      // an odd offset: the stored bytes need not be aligned
      const buf = new Uint8Array(stored.length + 1);
      buf.set(stored, 1);
      const widened = decodeToF32(from, stored, x.length);
      for (const t of ["Q4_K", "Q6_K", "Q8_0"] as const) {
        assertEquals(
          await pool.encodeStored(t, from, buf.subarray(1), perRow),
          quantizeGguf(t, widened),
          `${t} from ${from}`,
        );
      }
    }
    await assertRejects(
      () => pool.encodeStored("Q8_0", "Q8_0", new Uint8Array(34), 32),
      TypeError,
      "only F32, F16 and BF16",
    );
  } finally {
    pool.close();
  }
});
