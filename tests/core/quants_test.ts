import { assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { decodeHex, encodeHex } from "@std/encoding";
import {
  DEQUANTIZE_TYPES,
  dequantizeGguf,
  QUANTIZE_TYPES,
  quantizeGguf,
} from "../../core/quants/mod.ts";
import { dtypeInfo, type DTypeName, DTYPES } from "../../core/dtypes.ts";
import { quantizeIQ2_XS } from "../../core/quants/iq_encode_grid.ts";
import {
  quantizeIQ1_S,
  quantizeIQ2_XXS,
} from "../../core/quants/iq_encode_low.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { type Tensor, toFloat32 } from "../../core/tensor.ts";
import { nearestInt, roundAway } from "../../core/quants/_common.ts";
import {
  F16_TO_F32_BITS,
  HALF_TO_F32,
  halfToFloat,
} from "../../core/quants/f16.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";

const vectors = JSON.parse(
  await Deno.readTextFile(`${REPO_ROOT}/tests/vectors/quant_legacy.json`),
);

function f32FromHex(hex: string): Float32Array {
  const b = decodeHex(hex);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

Deno.test("quants: block layouts (ggml's block structs)", () => {
  const layout = Object.fromEntries(
    DTYPES.filter((d) => d.kind === "quant").map((
      d,
    ) => [d.name, [d.blockSize, d.blockBytes]]),
  );
  assertEquals(
    [
      layout.Q4_0,
      layout.Q4_1,
      layout.Q5_0,
      layout.Q5_1,
      layout.Q8_0,
      layout.Q8_1,
    ],
    [[32, 18], [32, 20], [32, 22], [32, 24], [32, 34], [32, 36]],
  );
  // Q2_K = 16 scales + 64 qs + d + dmin; Q3_K = 32 hmask + 64 qs + 12 scales + d;
  // Q4_K = d + dmin + 12 scales + 128 qs; Q5_K = ... + 32 qh; Q6_K = 128 ql + 64 qh + 16 scales + d;
  // Q8_K = f32 d + 256 qs + 16 i16 bsums.
  assertEquals(
    [
      layout.Q2_K,
      layout.Q3_K,
      layout.Q4_K,
      layout.Q5_K,
      layout.Q6_K,
      layout.Q8_K,
    ],
    [
      [256, 16 + 64 + 4],
      [256, 32 + 64 + 12 + 2],
      [256, 4 + 12 + 128],
      [256, 4 + 12 + 32 + 128],
      [256, 128 + 64 + 16 + 2],
      [256, 4 + 256 + 32],
    ],
  );
  for (const t of QUANTIZE_TYPES) {
    const d = dtypeInfo(t);
    assertEquals(
      encode(t, new Float32Array(d.blockSize * 3)).length,
      3 * d.blockBytes,
      t,
    );
  }
});

Deno.test("quants: ggml rounding helpers (nearest_int is round-half-even, roundf away from zero)", () => {
  assertEquals([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999997, 7.5].map(nearestInt), [
    0,
    2,
    2,
    0,
    -2,
    0,
    8,
  ]);
  assertEquals([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997].map(roundAway), [
    1,
    2,
    3,
    -1,
    -3,
    0,
  ]);
  // Past ±4194303 ggml reads mantissa bits; NaN gives 0.
  assertEquals(nearestInt(NaN), 0);
  // 5e6 + 1.5·2^23 = 17582912 = 2^24 · (1 + 402848·2^-23): mantissa 402848 − 2^22.
  assertEquals(nearestInt(5e6), 402848 - 4194304);
});

for (const type of ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]) {
  Deno.test(`quants: ${type} bytes and values equal the NumPy reference (ties, zeros, tiny and large blocks)`, () => {
    const x = f32FromHex(vectors.input_f32_hex);
    const exp = vectors.types[type];
    const q = quantizeGguf(type as "Q8_0", x);
    assertEquals(encodeHex(q), exp.bytes_hex);
    const y = dequantizeGguf(type as "Q8_0", q, x.length);
    assertEquals(encodeHex(new Uint8Array(y.buffer)), exp.dequant_f32_hex);
  });
}

Deno.test("quants: Q4_0 hand-computed block (d = max/-8, codes min(15, trunc(x/d + 8.5)))", () => {
  const x = new Float32Array(32);
  x[0] = -8; // the signed max: d = 1, id = 1
  x[1] = 3.4; // trunc(3.4 + 8.5) = 11
  x[16] = -1.6; // trunc(6.9) = 6
  x[17] = 7.9; // min(15, trunc(16.4)) = 15
  const q = quantizeGguf("Q4_0", x);
  assertEquals([q[0], q[1]], [0x00, 0x3c]); // f16 1.0
  assertEquals([q[2], q[3], q[4]], [
    0 | (6 << 4),
    11 | (15 << 4),
    8 | (8 << 4),
  ]);
  assertEquals(Array.from(dequantizeGguf("Q4_0", q, 32).subarray(0, 3)), [
    -8,
    3,
    0,
  ]);
});

Deno.test("quants: K-type hand-made blocks decode to hand-computed values", () => {
  // Q6_K: d = 0.5, scale[0] = 3, code 40 at element 0 (ql low nibble 8, qh bits 2) → 0.5·3·(40−32) = 12
  const q6 = new Uint8Array(210);
  q6[0] = 8;
  q6[128] = 2;
  q6[192] = 3;
  q6[208] = 0x00;
  q6[209] = 0x38;
  assertEquals(dequantizeGguf("Q6_K", q6, 256)[0], 12);
  // Q4_K: d = 1, dmin = 0.5, sub-block 0 scale 2, min 4: x = 1·2·q − 0.5·4 with q = 7 → 12
  const q4 = new Uint8Array(144);
  q4[1] = 0x3c;
  q4[3] = 0x38;
  q4[4] = 2;
  q4[8] = 4;
  q4[16] = 7;
  assertEquals(dequantizeGguf("Q4_K", q4, 256)[0], 12);
  // Q8_K: d = -2 (f32), q = 5 → −10
  const q8 = new Uint8Array(292);
  new DataView(q8.buffer).setFloat32(0, -2, true);
  q8[4] = 5;
  assertEquals(dequantizeGguf("Q8_K", q8, 256)[0], -10);
});

Deno.test("quants: round-trip error of every quantizer on 0.1 + 2cos(i) stays within its budget", () => {
  const n = 4096;
  const x = Float32Array.from({ length: n }, (_, i) => 0.1 + 2 * Math.cos(i));
  // Max abs error bounds (llama.cpp's own quantizations of these values stay under them, reference/quant/index.json).
  const budget: Record<string, number> = {
    Q8_0: 0.01,
    Q4_0: 0.14,
    Q4_1: 0.14,
    Q5_0: 0.07,
    Q5_1: 0.07,
    Q2_K: 0.7,
    Q3_K: 0.4,
    Q4_K: 0.16,
    Q5_K: 0.12,
    Q6_K: 0.04,
    IQ4_NL: 0.19,
    IQ4_XS: 0.2,
    MXFP4: 0.26,
    // 512 of 8^4 (IQ3_S) and 512 of 3^8 (IQ2_XS) lattice points
    IQ3_S: 0.8,
    IQ2_XS: 1.4,
    IQ3_XXS: 1.4, // weights x² without a matrix: small values count little
    IQ2_XXS: 1.4,
    IQ2_S: 1.4,
    IQ1_S: 2.2,
    IQ1_M: 2.2,
    TQ1_0: 1.2, // ternary: {-1, 0, 1} × the block's absolute maximum
    TQ2_0: 1.2,
  };
  for (const t of QUANTIZE_TYPES) {
    const y = dequantizeGguf(t, encode(t, x), n);
    let err = 0;
    for (let i = 0; i < n; i++) err = Math.max(err, Math.abs(y[i] - x[i]));
    if (!(err < budget[t])) {
      throw new Error(`${t}: max error ${err} over budget ${budget[t]}`);
    }
  }
});

/** `quantizeGguf`, but the types that need one with a flat importance matrix. */
function encode(t: DTypeName, x: Float32Array): Uint8Array {
  const flat = new Float32Array(x.length).fill(1);
  return t === "IQ2_XS"
    ? quantizeIQ2_XS(x, x.length, flat)
    : t === "IQ2_XXS"
    ? quantizeIQ2_XXS(x, x.length, flat)
    : t === "IQ1_S"
    ? quantizeIQ1_S(x, x.length, flat)
    : quantizeGguf(t, x);
}

Deno.test("quants: types without an encoder are refused by name; bad sizes are RangeErrors", () => {
  for (const t of ["NVFP4", "Q1_0", "Q2_0"]) {
    assertThrows(
      () => quantizeGguf(t as "Q4_0", new Float32Array(256)),
      UnsupportedDTypeError,
      t,
    );
  }
  assertThrows(
    () => quantizeGguf("Q8_K", new Float32Array(256)),
    UnsupportedDTypeError,
    "cannot quantize to Q8_K",
  );
  assertThrows(
    () => quantizeGguf("Q4_K", new Float32Array(100)),
    RangeError,
    "multiple of its block size 256",
  );
  assertThrows(
    () => dequantizeGguf("Q8_0", new Uint8Array(33), 32),
    RangeError,
    "needs 34 bytes (1 blocks of 34), got 33",
  );
  assertThrows(
    () => dequantizeGguf("IQ2_XS", new Uint8Array(73), 256),
    RangeError,
    "needs 74 bytes (1 blocks of 74), got 73",
  );
  const t: Tensor = {
    name: "w",
    dtype: "IQ2_XS",
    shape: [256],
    bytes: new Uint8Array(74),
  };
  assertEquals(toFloat32(t).length, 256);
  assertEquals(DEQUANTIZE_TYPES.length, 35);
});

Deno.test("quants: plain types decode through the same entry point (F16, BF16, F64, I8..I64)", () => {
  assertEquals(
    Array.from(
      dequantizeGguf("F16", new Uint8Array([0x00, 0x3c, 0x00, 0xc0]), 2),
    ),
    [1, -2],
  );
  assertEquals(
    Array.from(dequantizeGguf("BF16", new Uint8Array([0x80, 0x3f]), 1)),
    [1],
  );
  assertEquals(Array.from(dequantizeGguf("I8", new Uint8Array([0xff]), 1)), [
    -1,
  ]);
  assertEquals(
    Array.from(
      dequantizeGguf("I64", new Uint8Array(new BigInt64Array([-7n]).buffer), 1),
    ),
    [-7],
  );
  assertEquals(
    Array.from(
      dequantizeGguf("F64", new Uint8Array(new Float64Array([0.5]).buffer), 1),
    ),
    [0.5],
  );
});

Deno.test("quants: formats/gguf keeps the old names quantize / dequantize for one release", async () => {
  const gguf = await import("../../formats/gguf/mod.ts");
  assertStrictEquals(gguf.quantize, quantizeGguf);
  assertStrictEquals(gguf.dequantize, dequantizeGguf);
  assertStrictEquals(gguf.quantizeGguf, quantizeGguf);
  const x = Float32Array.from({ length: 32 }, (_, i) => i - 16);
  assertEquals(gguf.quantize("Q8_0", x), quantizeGguf("Q8_0", x));
});

Deno.test("quants: the one F16 table equals the platform's Float16Array on all 65536 codes, NaN payloads kept", () => {
  const codes = Uint16Array.from({ length: 65536 }, (_, i) => i);
  const platform = new Float32Array(new Float16Array(codes.buffer));
  const bits = new Uint32Array(HALF_TO_F32.buffer);
  let nan = 0;
  for (let h = 0; h < 65536; h++) {
    const v = platform[h];
    if (Number.isNaN(v)) {
      nan++;
      assertEquals(Number.isNaN(halfToFloat(h)), true);
      // sign, all-ones exponent, the 10 payload bits moved up by 13
      assertEquals(
        bits[h],
        (((h & 0x8000) << 16) | 0x7f800000 | ((h & 0x3ff) << 13)) >>> 0,
      );
    } else {
      assertStrictEquals(HALF_TO_F32[h], v, `code ${h}`);
      assertStrictEquals(halfToFloat(h), v);
    }
  }
  assertEquals(nan, 2 * 1023);
  assertStrictEquals(HALF_TO_F32.buffer, F16_TO_F32_BITS.buffer); // one table
});
