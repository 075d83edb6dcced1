import { assertAlmostEquals, assertEquals, assertThrows } from "@std/assert";
import { dtypeInfo } from "../../core/dtypes.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import {
  BLOCKS,
  dequantizeRowRef,
  FAST_DTYPES,
  halfToFloat,
  rowBytes,
} from "../../kernels/quant_ref.ts";
import { bytesOf, VECTORS } from "./fast/_helpers.ts";

Deno.test("block layouts agree with ggml and the dtype table", () => {
  assertEquals(BLOCKS.Q8_0, { elems: 32, bytes: 34 });
  assertEquals(BLOCKS.Q4_0, { elems: 32, bytes: 18 });
  assertEquals(BLOCKS.Q4_K, { elems: 256, bytes: 144 });
  assertEquals(BLOCKS.Q6_K, { elems: 256, bytes: 210 });
  for (const d of FAST_DTYPES) {
    const row = dtypeInfo(d);
    assertEquals([row.blockSize, row.blockBytes], [
      BLOCKS[d].elems,
      BLOCKS[d].bytes,
    ], d);
  }
  assertEquals(rowBytes("Q6_K", 512), 420);
  assertThrows(
    () => rowBytes("Q4_K", 100),
    RangeError,
    "multiple of the block size 256",
  );
});

Deno.test("halfToFloat decodes normals, subnormals, infinities and NaN", () => {
  assertEquals(halfToFloat(0x3c00), 1);
  assertEquals(halfToFloat(0x3555), 0.333251953125);
  assertEquals(halfToFloat(0x7bff), 65504);
  assertEquals(halfToFloat(0x0001), 2 ** -24);
  assertEquals(halfToFloat(0x8400), -(2 ** -14));
  assertEquals(halfToFloat(0xfc00), -Infinity);
  assertEquals(halfToFloat(0x7e00), NaN);
  assertEquals(Object.is(halfToFloat(0x8000), -0), true);
});

Deno.test("dequantizeRowRef reproduces the NumPy block decoders row by row", () => {
  const [, inF, outF] = VECTORS.linear.shape;
  // the IQ types are checked against ggml itself (tests/core/iq_quants_test.ts),
  // Q5_0 in tests/kernels/fast/q5_test.ts
  for (
    const dtype of FAST_DTYPES.filter((d) =>
      !["Q5_0", "IQ4_NL", "MXFP4", "IQ4_XS", "IQ3_S", "IQ2_XS"].includes(d)
    )
  ) {
    const bytes = bytesOf(VECTORS.blocks[dtype].bytes);
    const values: number[] = VECTORS.blocks[dtype].values;
    for (let o = 0; o < outF; o++) {
      const row = dequantizeRowRef(dtype, bytes, o, inF);
      for (let i = 0; i < inF; i++) {
        const e = values[o * inF + i];
        assertAlmostEquals(
          row[i],
          e,
          1e-6 * (1 + Math.abs(e)),
          `${dtype} row ${o} [${i}]`,
        );
      }
    }
  }
});

Deno.test("dequantizeRowRef on hand-built blocks", () => {
  // Q4_0: d = 2 (0x4000); byte j = (hi << 4) | lo with lo = j, hi = 15 - j
  const q4 = new Uint8Array(18);
  q4[1] = 0x40;
  for (let j = 0; j < 16; j++) q4[2 + j] = ((15 - j) << 4) | j;
  const r = dequantizeRowRef("Q4_0", q4, 0, 32);
  assertEquals(r[0], -16); // (0 - 8)·2
  assertEquals(r[15], 14); // (15 - 8)·2
  assertEquals(r[16], 14); // high nibble of byte 0 is 15
  assertEquals(r[31], -16);
  // BF16 1.5 = 0x3fc0
  assertEquals(
    dequantizeRowRef("BF16", new Uint8Array([0xc0, 0x3f]), 0, 1)[0],
    1.5,
  );
});

Deno.test("dequantizeRowRef errors", () => {
  assertThrows(
    () => dequantizeRowRef("Q8_0", new Uint8Array(34), 1, 32),
    RangeError,
    "needs 34 bytes at offset 34, have 34",
  );
  assertThrows(
    () => dequantizeRowRef("Q5_1", new Uint8Array(24), 0, 32),
    UnsupportedDTypeError,
    "Q5_1",
  );
});
