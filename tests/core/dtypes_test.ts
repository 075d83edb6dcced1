import {
  assert,
  assertEquals,
  assertStrictEquals,
  assertThrows,
} from "@std/assert";
import { getFloat16, setFloat16 } from "@petamoriken/float16";
import {
  byteLengthOf,
  decodeToF32,
  dtypeFromGguf,
  dtypeFromSafetensors,
  dtypeInfo,
  type DTypeName,
  DTYPES,
  encodeFromF32,
} from "../../core/dtypes.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { createRng } from "../../core/rng.ts";

// Reference conversions written by tests/vectors/gen/dtypes.py (NumPy 1.24):
// F32 inputs and all outputs as bit patterns; null marks a NaN result.
interface Vectors {
  f16: { input: number[]; expected: (number | null)[] };
  bf16: { input: number[]; expected: (number | null)[] };
  F8_E4M3: MiniVectors;
  F8_E5M2: MiniVectors;
  F4: MiniVectors;
}
interface MiniVectors {
  decode: (number | null)[];
  input: number[];
  expected: number[];
}
const V: Vectors = JSON.parse(
  await Deno.readTextFile(new URL("../vectors/dtypes.json", import.meta.url)),
);

const f32OfBits = (bits: number[] | Uint32Array): Float32Array =>
  new Float32Array(Uint32Array.from(bits).buffer);
const bitsOfF32 = (v: Float32Array): Uint32Array =>
  new Uint32Array(v.buffer, v.byteOffset, v.length);
const hex = (n: number): string => "0x" + n.toString(16);
const u16 = (b: Uint8Array): Uint16Array =>
  new Uint16Array(b.buffer, b.byteOffset, b.length / 2);
/** Decoded values compared so that -0 differs from 0 and NaN equals NaN. */
function assertSameValues(
  actual: Float32Array,
  expected: ArrayLike<number>,
  what: string,
): void {
  assertEquals(actual.length, expected.length, what);
  for (let i = 0; i < actual.length; i++) {
    if (!Object.is(actual[i], expected[i])) {
      throw new Error(
        `${what}: element ${i} is ${actual[i]}, expected ${expected[i]}`,
      );
    }
  }
}

// ------------------------------------------------------------- table facts

Deno.test("table: block layouts, SafeTensors names and GGUF ids match ggml and the SafeTensors spec", () => {
  // [name, block size, block bytes (ggml struct fields summed), GGUF id]
  const half = 2;
  const facts: [DTypeName, number, number, number | undefined][] = [
    ["BOOL", 1, 1, undefined],
    ["U8", 1, 1, undefined],
    ["I8", 1, 1, 24],
    ["I16", 1, 2, 25],
    ["U16", 1, 2, undefined],
    ["I32", 1, 4, 26],
    ["U32", 1, 4, undefined],
    ["I64", 1, 8, 27],
    ["U64", 1, 8, undefined],
    ["F16", 1, 2, 1],
    ["BF16", 1, 2, 30],
    ["F32", 1, 4, 0],
    ["F64", 1, 8, 28],
    ["F8_E4M3", 1, 1, undefined],
    ["F8_E5M2", 1, 1, undefined],
    ["F4", 2, 1, undefined],
    ["Q4_0", 32, half + 32 / 2, 2], // d, nibbles
    ["Q4_1", 32, 2 * half + 32 / 2, 3], // d, m, nibbles
    ["Q5_0", 32, half + 4 + 32 / 2, 6], // d, qh, nibbles
    ["Q5_1", 32, 2 * half + 4 + 32 / 2, 7],
    ["Q8_0", 32, half + 32, 8],
    ["Q8_1", 32, 2 * half + 32, 9],
    ["Q2_K", 256, 256 / 16 + 256 / 4 + 2 * half, 10],
    ["Q3_K", 256, 256 / 8 + 256 / 4 + 12 + half, 11],
    ["Q4_K", 256, 2 * half + 12 + 256 / 2, 12],
    ["Q5_K", 256, 2 * half + 12 + 256 / 8 + 256 / 2, 13],
    ["Q6_K", 256, 256 / 2 + 256 / 4 + 256 / 16 + half, 14],
    ["Q8_K", 256, 4 + 256 + (256 / 16) * 2, 15], // f32 d, qs, i16 bsums
    ["IQ2_XXS", 256, half + (256 / 8) * 2, 16],
    ["IQ2_XS", 256, half + (256 / 8) * 2 + 256 / 32, 17],
    ["IQ3_XXS", 256, half + (3 * 256) / 8, 18],
    ["IQ1_S", 256, half + 256 / 8 + (256 / 32) * 2, 19],
    ["IQ4_NL", 32, half + 32 / 2, 20],
    ["IQ3_S", 256, half + 256 / 4 + 256 / 32 + 256 / 8 + 256 / 64, 21],
    ["IQ2_S", 256, half + 256 / 4 + 256 / 32 + 256 / 32, 22],
    ["IQ4_XS", 256, half + 2 + 256 / 64 + 256 / 2, 23],
    ["IQ1_M", 256, 256 / 8 + 256 / 16 + 256 / 32, 29],
    ["TQ1_0", 256, (256 - (4 * 256) / 64) / 5 + 256 / 64 + half, 34],
    ["TQ2_0", 256, 256 / 4 + half, 35],
    ["MXFP4", 32, 1 + 32 / 2, 39], // E8M0 scale, nibbles
    ["NVFP4", 64, 4 + 64 / 2, 40], // four UE4M3 scales, nibbles
    ["Q1_0", 128, half + 128 / 8, 41], // d, sign bits
    ["Q2_0", 64, half + 64 / 4, 42], // d, 2-bit codes
  ];
  assertEquals(
    DTYPES.map((d) => d.name).sort(),
    facts.map((f) => f[0]).sort(),
    "every row is listed here",
  );
  for (const [name, bs, bytes, gguf] of facts) {
    const d = dtypeInfo(name);
    assertEquals([d.blockSize, d.blockBytes, d.gguf], [bs, bytes, gguf], name);
    if (gguf !== undefined) assertStrictEquals(dtypeFromGguf(gguf), d);
    if (d.kind !== "quant") {
      // Every scalar type has its SafeTensors spelling, which is its name.
      assertEquals(d.safetensors, name);
      assertStrictEquals(dtypeFromSafetensors(name), d);
    } else {
      assertEquals(d.safetensors, undefined, name);
    }
  }
  assertEquals(byteLengthOf("Q4_0", 32), 18);
  assertEquals(byteLengthOf("Q8_0", 64), 68);
  assertEquals(byteLengthOf("Q4_K", 512), 288);
  assertEquals(byteLengthOf("Q6_K", 256), 210);
  assertEquals(byteLengthOf("F4", 32), 16);
  assertEquals(byteLengthOf("BF16", 3), 6);
  assertThrows(
    () => byteLengthOf("Q4_K", 300),
    RangeError,
    "Cannot store 300 elements as Q4_K: the count must be a multiple of its block size 256",
  );
  assertThrows(() => byteLengthOf("F4", 3), RangeError, "block size 2");
  assertEquals(dtypeFromGguf(4), undefined); // removed Q4_2
  assertEquals(dtypeFromSafetensors("F8_E4M3FNUZ"), undefined);
});

Deno.test("lookup: names are case-insensitive; unknown names list the known ones", () => {
  assertStrictEquals(dtypeInfo("bf16"), dtypeInfo("BF16"));
  const err = assertThrows(
    () => dtypeInfo("F12"),
    UnsupportedDTypeError,
    "Unsupported dtype F12: unknown dtype; known: BOOL, U8, I8,",
  );
  assertEquals(err.dtype, "F12");
  for (const d of DTYPES) assert(err.message.includes(d.name), d.name);
});

Deno.test("every quantized type decodes; those without an encoder refuse it with the dtype in the message", () => {
  const decodeOnly = DTYPES.filter((d) => d.kind === "quant" && !d.fromF32);
  assertEquals(
    decodeOnly.map((d) => d.name),
    [
      "Q8_1",
      "Q8_K",
      "NVFP4",
      "Q1_0",
      "Q2_0",
    ],
  );
  for (const d of DTYPES.filter((d) => d.kind === "quant")) {
    const bytes = new Uint8Array(d.blockBytes);
    assertEquals(decodeToF32(d.name, bytes, d.blockSize).length, d.blockSize);
  }
  for (const d of decodeOnly) {
    const e = assertThrows(
      () => encodeFromF32(d.name, new Float32Array(d.blockSize)),
      UnsupportedDTypeError,
      `Unsupported dtype ${d.name}: no encoder from F32`,
    );
    assertEquals(e.dtype, d.name);
  }
  // IQ2_XS encodes with an importance matrix only (as ggml)
  assertThrows(
    () => encodeFromF32("IQ2_XS", new Float32Array(256)),
    TypeError,
    "needs an importance matrix",
  );
});

Deno.test("every scalar dtype has both converters; short input is a RangeError naming the sizes", () => {
  for (const d of DTYPES.filter((d) => d.kind !== "quant")) {
    assert(d.toF32 && d.fromF32, d.name);
    const need = Math.ceil(4 / d.blockSize) * d.blockBytes;
    assertThrows(
      () => decodeToF32(d, new Uint8Array(need - 1), 4),
      RangeError,
      `Cannot decode ${d.name}: needs ${need} bytes, got ${need - 1}`,
    );
  }
});

// ------------------------------------------------------------- edge values

/** [input F32 value, value after encoding to the dtype and decoding again]. */
const EDGES: Partial<Record<DTypeName, [number, number][]>> = {
  BOOL: [[0, 0], [-0, 0], [1, 1], [-3, 1], [1e-45, 1], [NaN, 1], [
    Infinity,
    1,
  ]],
  // Integers: round half to even, saturate at the limits, NaN -> 0, -0 -> 0.
  U8: [
    [0, 0],
    [-0, 0],
    [255, 255],
    [255.5, 255],
    [256, 255],
    [-1, 0],
    [
      2.5,
      2,
    ],
    [3.5, 4],
    [254.5, 254],
    [NaN, 0],
    [Infinity, 255],
    [-Infinity, 0],
  ],
  I8: [
    [127, 127],
    [-128, -128],
    [127.5, 127],
    [-128.5, -128],
    [-0.5, 0],
    [
      -1.5,
      -2,
    ],
    [0.5, 0],
    [NaN, 0],
    [Infinity, 127],
    [-Infinity, -128],
    [-0, 0],
  ],
  I16: [
    [32767, 32767],
    [-32768, -32768],
    [40000, 32767],
    [-1e9, -32768],
    [
      -2.5,
      -2,
    ],
    [NaN, 0],
    [Infinity, 32767],
  ],
  U16: [[65535, 65535], [65535.5, 65535], [-7, 0], [1.5, 2], [NaN, 0], [
    -Infinity,
    0,
  ]],
  // 2^31 - 1 has no F32; the saturated code reads back as the nearest F32, 2^31.
  I32: [
    [2 ** 31, 2 ** 31],
    [-(2 ** 31), -(2 ** 31)],
    [1e12, 2 ** 31],
    [
      -1e12,
      -(2 ** 31),
    ],
    [16777217, 16777216],
    [-2.5, -2],
    [NaN, 0],
    [-Infinity, -(2 ** 31)],
  ],
  U32: [
    [2 ** 32, 2 ** 32],
    [1e12, 2 ** 32],
    [-1, 0],
    [4294967040, 4294967040],
    [
      NaN,
      0,
    ],
    [Infinity, 2 ** 32],
  ],
  I64: [
    [2 ** 63, 2 ** 63],
    [-(2 ** 63), -(2 ** 63)],
    [1e30, 2 ** 63],
    [
      -1e30,
      -(2 ** 63),
    ],
    [2 ** 40 + 4096, 2 ** 40 + 4096],
    [-6.5, -6],
    [NaN, 0],
    [-0, 0],
    [
      Infinity,
      2 ** 63,
    ],
  ],
  U64: [
    [2 ** 64, 2 ** 64],
    [1e30, 2 ** 64],
    [-5, 0],
    [2 ** 52 + 2 ** 30, 2 ** 52 + 2 ** 30],
    [
      0.5,
      0,
    ],
    [NaN, 0],
    [-Infinity, 0],
  ],
  F16: [
    [65504, 65504],
    [-65504, -65504],
    [65519.99, 65504],
    [
      65520,
      Infinity,
    ],
    [2 ** -24, 2 ** -24],
    [-(2 ** -24), -(2 ** -24)],
    [2 ** -25, 0],
    [
      2 ** -25 * 1.5,
      2 ** -24,
    ],
    [2 ** -14, 2 ** -14],
    [-0, -0],
    [Infinity, Infinity],
    [
      -Infinity,
      -Infinity,
    ],
    [NaN, NaN],
    [1e-45, 0],
    [-1e-45, -0],
  ],
  BF16: [
    [3.3895313892515355e38, 3.3895313892515355e38],
    [
      -3.3895313892515355e38,
      -3.3895313892515355e38,
    ],
    [3.4028234663852886e38, Infinity],
    [2 ** -133, 2 ** -133],
    [
      2 ** -126,
      2 ** -126,
    ],
    [2 ** -134, 0],
    [-(2 ** -134) * 1.5, -(2 ** -133)],
    [-0, -0],
    [
      Infinity,
      Infinity,
    ],
    [-Infinity, -Infinity],
    [NaN, NaN],
  ],
  F32: [
    [3.4028234663852886e38, 3.4028234663852886e38],
    [2 ** -149, 2 ** -149],
    [
      -0,
      -0,
    ],
    [Infinity, Infinity],
    [-Infinity, -Infinity],
    [NaN, NaN],
  ],
  F64: [
    [3.4028234663852886e38, 3.4028234663852886e38],
    [
      -(2 ** -149),
      -(2 ** -149),
    ],
    [-0, -0],
    [Infinity, Infinity],
    [-Infinity, -Infinity],
    [NaN, NaN],
  ],
  // E4M3FN: max 448, smallest subnormal 2^-9, no Inf: overflow and Inf -> NaN.
  F8_E4M3: [
    [448, 448],
    [-448, -448],
    [464, 448],
    [464.00003, NaN],
    [
      480,
      NaN,
    ],
    [1e6, NaN],
    [Infinity, NaN],
    [-Infinity, NaN],
    [NaN, NaN],
    [
      2 ** -9,
      2 ** -9,
    ],
    [-(2 ** -9), -(2 ** -9)],
    [2 ** -10, 0],
    [2 ** -10 * 1.01, 2 ** -9],
    [
      2 ** -6,
      2 ** -6,
    ],
    [-0, -0],
    [1e-30, 0],
    [-1e-30, -0],
  ],
  // E5M2: max 57344, smallest subnormal 2^-16, IEEE overflow to Inf.
  F8_E5M2: [
    [57344, 57344],
    [-57344, -57344],
    [61439.996, 57344],
    [
      61440,
      Infinity,
    ],
    [-1e6, -Infinity],
    [Infinity, Infinity],
    [-Infinity, -Infinity],
    [
      NaN,
      NaN,
    ],
    [2 ** -16, 2 ** -16],
    [-(2 ** -16), -(2 ** -16)],
    [2 ** -17, 0],
    [
      2 ** -14,
      2 ** -14,
    ],
    [-0, -0],
    [1e-30, 0],
  ],
  // F4 E2M1: max 6, smallest subnormal 0.5, saturating, NaN -> -0.
  F4: [
    [6, 6],
    [-6, -6],
    [7, 6],
    [1e9, 6],
    [-1e9, -6],
    [Infinity, 6],
    [
      -Infinity,
      -6,
    ],
    [0.5, 0.5],
    [-0.5, -0.5],
    [0.25, 0],
    [-0.25, -0],
    [0.2500001, 0.5],
    [
      -0,
      -0,
    ],
    [NaN, -0],
  ],
};

Deno.test("edge values survive or saturate as documented, both ways, for every scalar dtype", () => {
  const scalars = DTYPES.filter((d) => d.kind !== "quant");
  for (const d of scalars) {
    const cases = EDGES[d.name];
    if (!cases) throw new Error(`no edge cases listed for ${d.name}`);
    const input = Float32Array.from(cases.map((c) => c[0]));
    const back = decodeToF32(d, encodeFromF32(d, input), input.length);
    assertSameValues(back, cases.map((c) => Math.fround(c[1])), d.name);
  }
});

Deno.test("NaN keeps its sign where the target has a signed NaN", () => {
  const negNaN = f32OfBits([0xffc00000]);
  for (const name of ["F16", "BF16", "F32", "F8_E4M3", "F8_E5M2"] as const) {
    const back = decodeToF32(name, encodeFromF32(name, negNaN), 1);
    assert(Number.isNaN(back[0]), name);
    assertEquals(bitsOfF32(back)[0] >>> 31, 1, `${name} NaN sign`);
  }
});

Deno.test("round half to even at exact midpoints", () => {
  const cases: [DTypeName, number, number][] = [
    // F16: ulp 2^-10 at 1.
    ["F16", 1 + 2 ** -11, 1],
    ["F16", 1 + 3 * 2 ** -11, 1 + 2 ** -9],
    ["F16", -(1 + 3 * 2 ** -11), -(1 + 2 ** -9)],
    ["F16", 2 ** -25 * 3, 2 ** -23], // between subnormals 1 and 2 units -> 2
    ["F16", 2048 + 1, 2048],
    ["F16", 2048 + 3, 2052],
    // BF16: ulp 2^-7 at 1.
    ["BF16", 1 + 2 ** -8, 1],
    ["BF16", 1 + 3 * 2 ** -8, 1 + 2 ** -6],
    ["BF16", 256 + 1, 256],
    ["BF16", 256 + 3, 260],
    // E4M3: ulp 0.125 at 1.
    ["F8_E4M3", 1.0625, 1],
    ["F8_E4M3", 1.1875, 1.25],
    ["F8_E4M3", 2 ** -9 * 1.5, 2 ** -8],
    ["F8_E4M3", 2 ** -9 * 2.5, 2 ** -8],
    ["F8_E4M3", 416, 416], // 1.625 * 256: exact
    ["F8_E4M3", 432, 448], // between 416 (odd) and 448 (even)
    // E5M2: ulp 0.25 at 1.
    ["F8_E5M2", 1.125, 1],
    ["F8_E5M2", 1.375, 1.5],
    ["F8_E5M2", 2 ** -16 * 1.5, 2 ** -15],
    // F4: 0 0.5 1 1.5 2 3 4 6.
    ["F4", 0.75, 1],
    ["F4", 1.25, 1],
    ["F4", 1.75, 2],
    ["F4", 2.5, 2],
    ["F4", 3.5, 4],
    ["F4", 5, 4],
    ["F4", -5, -4],
    // Integers.
    ["I8", 0.5, 0],
    ["I8", 1.5, 2],
    ["I8", 2.5, 2],
    ["I8", -2.5, -2],
    ["U8", 3.5, 4],
    ["I16", -3.5, -4],
    ["I32", 12345.5, 12346],
    ["I64", 7.5, 8],
  ];
  for (const [name, x, want] of cases) {
    const input = Float32Array.of(x, 0);
    const got = decodeToF32(name, encodeFromF32(name, input), 2)[0];
    assertEquals(got, Math.fround(want), `${name} ${x}`);
  }
});

// ------------------------------------------------------- exhaustive codes

Deno.test("all 65536 F16 codes: F16 -> F32 equals two other decoders; F32 -> F16 gives the code back (NaN: sign kept, payload not)", () => {
  const codes = new Uint16Array(65536).map((_, i) => i);
  const bytes = new Uint8Array(codes.buffer);
  const wide = decodeToF32("F16", bytes, 65536);
  const dv = new DataView(codes.buffer);
  const back = u16(encodeFromF32("F16", wide));
  for (let i = 0; i < 65536; i++) {
    const viaDataView = dv.getFloat16(2 * i, true);
    const viaPackage = getFloat16(dv, 2 * i, true);
    const isNaN = (i & 0x7c00) === 0x7c00 && (i & 0x3ff) !== 0;
    if (isNaN) {
      assert(Number.isNaN(wide[i]) && Number.isNaN(viaPackage), hex(i));
      // Widening keeps the payload bit for bit (a signaling NaN stays signaling).
      assertEquals(
        bitsOfF32(wide)[i],
        ((i & 0x8000) << 16 | 0x7f800000 | (i & 0x3ff) << 13) >>> 0,
        hex(i),
      );
      // Narrowing writes the canonical quiet NaN with the sign.
      assertEquals(back[i], (i & 0x8000) | 0x7e00, hex(i));
    } else {
      assert(Object.is(wide[i], viaDataView), hex(i));
      assert(Object.is(wide[i], viaPackage), hex(i));
      assertEquals(back[i], i, hex(i));
    }
  }
});

Deno.test("all 65536 BF16 codes: BF16 -> F32 is the upper half; F32 -> BF16 gives the code back (signaling NaN gets the quiet bit)", () => {
  const codes = new Uint16Array(65536).map((_, i) => i);
  const wide = decodeToF32("BF16", new Uint8Array(codes.buffer), 65536);
  const wideBits = bitsOfF32(wide);
  const back = u16(encodeFromF32("BF16", wide));
  for (let i = 0; i < 65536; i++) {
    assertEquals(wideBits[i], (i << 16) >>> 0, hex(i));
    const isNaN = (i & 0x7f80) === 0x7f80 && (i & 0x7f) !== 0;
    assertEquals(back[i], isNaN ? i | 0x40 : i, hex(i));
  }
});

for (const name of ["F8_E4M3", "F8_E5M2"] as const) {
  Deno.test(`all 256 ${name} codes decode to the spec's values and encode back`, () => {
    const codes = new Uint8Array(256).map((_, i) => i);
    const wide = decodeToF32(name, codes, 256);
    const expected = V[name].decode;
    const back = encodeFromF32(name, wide);
    for (let c = 0; c < 256; c++) {
      const want = expected[c];
      if (want === null) {
        assert(Number.isNaN(wide[c]), hex(c));
        assertEquals(bitsOfF32(wide)[c] >>> 31, c >>> 7, `${hex(c)} sign`);
        // Every NaN encodes as the one NaN code of its sign (PyTorch's choice).
        assertEquals(back[c], (c & 0x80) | 0x7f, hex(c));
      } else {
        assertEquals(bitsOfF32(wide)[c], want, hex(c));
        assertEquals(back[c], c, hex(c));
      }
    }
  });
}

Deno.test("all 16 F4 codes: low nibble first, decode to the spec's values, encode back", () => {
  const bytes = new Uint8Array(256).map((_, i) => i);
  const wide = decodeToF32("F4", bytes, 512);
  const table = V.F4.decode as number[];
  for (let b = 0; b < 256; b++) {
    assertEquals(bitsOfF32(wide)[2 * b], table[b & 15], `byte ${hex(b)} low`);
    assertEquals(
      bitsOfF32(wide)[2 * b + 1],
      table[b >> 4],
      `byte ${hex(b)} high`,
    );
  }
  assertEquals(encodeFromF32("F4", wide), bytes);
  assertEquals(
    Array.from(decodeToF32("F4", Uint8Array.of(0x10, 0x32, 0x54, 0x76), 8)),
    [0, 0.5, 1, 1.5, 2, 3, 4, 6],
  );
  assertEquals(Array.from(decodeToF32("F4", Uint8Array.of(0xf9), 1)), [-0.5]);
});

// -------------------------------------------------- NumPy reference vectors

Deno.test("F32 -> F16 matches NumPy's float16 cast on the committed vectors", () => {
  const input = f32OfBits(V.f16.input);
  const got = u16(encodeFromF32("F16", input));
  V.f16.expected.forEach((want, i) => {
    const x = V.f16.input[i];
    if (want === null) {
      assertEquals(got[i] & 0x7c00, 0x7c00, hex(x));
      assert((got[i] & 0x3ff) !== 0, hex(x));
      assertEquals(got[i] >> 15, x >>> 31, `${hex(x)} sign`);
    } else {
      assertEquals(got[i], want, `input ${hex(x)}`);
    }
  });
});

Deno.test("F32 -> BF16 matches the float64 nearest-even reference on the committed vectors", () => {
  const input = f32OfBits(V.bf16.input);
  const got = u16(encodeFromF32("BF16", input));
  V.bf16.expected.forEach((want, i) => {
    const x = V.bf16.input[i];
    if (want === null) {
      assertEquals(got[i] & 0x7f80, 0x7f80, hex(x));
      assert((got[i] & 0x7f) !== 0, hex(x));
      assertEquals(got[i] >> 15, x >>> 31, `${hex(x)} sign`);
    } else {
      assertEquals(got[i], want, `input ${hex(x)}`);
    }
  });
});

for (const name of ["F8_E4M3", "F8_E5M2", "F4"] as const) {
  Deno.test(`F32 -> ${name} matches the brute-force nearest-even reference on the committed vectors`, () => {
    const v = V[name];
    const input = f32OfBits(v.input);
    const bytes = encodeFromF32(name, input);
    const code = (i: number): number =>
      name === "F4" ? (bytes[i >> 1] >> ((i & 1) * 4)) & 15 : bytes[i];
    for (let i = 0; i < input.length; i++) {
      if (code(i) !== v.expected[i]) {
        throw new Error(
          `${name}: input ${hex(v.input[i])} (${input[i]}) gave ${
            hex(code(i))
          }, expected ${hex(v.expected[i])}`,
        );
      }
    }
  });
}

// ---------------------------------------------------------- seeded random

/** Independent decoders of one element at byte offset `o` (DataView, spec formulas). */
const READERS: Partial<Record<DTypeName, (dv: DataView, i: number) => number>> =
  {
    BOOL: (dv, i) => dv.getUint8(i) === 0 ? 0 : 1,
    U8: (dv, i) => dv.getUint8(i),
    I8: (dv, i) => dv.getInt8(i),
    I16: (dv, i) => dv.getInt16(2 * i, true),
    U16: (dv, i) => dv.getUint16(2 * i, true),
    I32: (dv, i) => dv.getInt32(4 * i, true),
    U32: (dv, i) => dv.getUint32(4 * i, true),
    I64: (dv, i) => Number(dv.getBigInt64(8 * i, true)),
    U64: (dv, i) => Number(dv.getBigUint64(8 * i, true)),
    F16: (dv, i) => getFloat16(dv, 2 * i, true),
    BF16: (dv, i) => {
      const t = new DataView(new ArrayBuffer(4));
      t.setUint32(0, dv.getUint16(2 * i, true) << 16, true);
      return t.getFloat32(0, true);
    },
    F32: (dv, i) => dv.getFloat32(4 * i, true),
    F64: (dv, i) => dv.getFloat64(8 * i, true),
  };

Deno.test("seeded random codes: every scalar dtype decodes like an independent reader and re-encodes to the same bytes", () => {
  const rng = createRng(7);
  const n = 4096;
  for (const d of DTYPES.filter((d) => d.kind !== "quant")) {
    const bytes = new Uint8Array(byteLengthOf(d, n));
    for (let i = 0; i < bytes.length; i++) bytes[i] = rng.u32() & 255;
    if (d.name === "BOOL") { for (let i = 0; i < n; i++) bytes[i] &= 1; }
    const wide = decodeToF32(d, bytes, n);
    const reader = READERS[d.name];
    const dv = new DataView(bytes.buffer);
    for (let i = 0; i < n; i++) {
      let want: number;
      if (reader) want = Math.fround(reader(dv, i));
      else {
        const table = V[d.name as "F8_E4M3" | "F8_E5M2" | "F4"].decode;
        const code = d.name === "F4"
          ? (bytes[i >> 1] >> ((i & 1) * 4)) & 15
          : bytes[i];
        const bits = table[code];
        want = bits === null ? NaN : f32OfBits([bits])[0];
      }
      if (!Object.is(wide[i], want)) {
        throw new Error(`${d.name} element ${i}: ${wide[i]} != ${want}`);
      }
    }
    if (d.exactInF32) {
      // Re-encoding is bit exact except for NaN codes, which become canonical.
      const again = encodeFromF32(d, wide);
      const nan = (i: number): boolean => Number.isNaN(wide[i]);
      const per = d.blockBytes;
      for (let i = 0; i < n; i++) {
        if (nan(i) || d.name === "F4") continue;
        for (let k = 0; k < per; k++) {
          assertEquals(
            again[i * per + k],
            bytes[i * per + k],
            `${d.name} ${i}`,
          );
        }
      }
      if (d.name === "F4") assertEquals(again, bytes);
    }
  }
});

Deno.test("seeded random F32 values: F16 narrowing agrees with @petamoriken/float16, integers round and saturate", () => {
  const rng = createRng(11);
  const n = 20000;
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    // Magnitudes from 2^-30 to 2^20, both signs.
    x[i] = (rng.next() < 0.5 ? -1 : 1) * 2 ** (rng.next() * 50 - 30);
  }
  const got = u16(encodeFromF32("F16", x));
  const dv = new DataView(new ArrayBuffer(2));
  for (let i = 0; i < n; i++) {
    setFloat16(dv, 0, x[i], true);
    assertEquals(got[i], dv.getUint16(0, true), `F16 of ${x[i]}`);
  }
  const ints: [DTypeName, number, number][] = [
    ["I8", -128, 127],
    ["U8", 0, 255],
    ["I16", -32768, 32767],
    ["U16", 0, 65535],
    ["I32", -(2 ** 31), 2 ** 31 - 1],
  ];
  const y = x.map((v) => v * 3); // magnitudes up to 3e6: inside and past each range
  for (const [name, lo, hi] of ints) {
    const back = decodeToF32(name, encodeFromF32(name, y), n);
    for (let i = 0; i < n; i++) {
      const v = y[i];
      const f = Math.floor(v), frac = v - f;
      const r = frac > 0.5 || (frac === 0.5 && f % 2 !== 0) ? f + 1 : f;
      const want = Math.fround(Math.min(hi, Math.max(lo, r)));
      assertEquals(back[i], want + 0, `${name} of ${v}`);
    }
  }
});
