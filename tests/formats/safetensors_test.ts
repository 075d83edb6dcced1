import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertRejects,
} from "@std/assert";
import {
  detectSafetensors,
  readSafetensors,
  readSafetensorsHeader,
  readSafetensorsShards,
  SAFETENSORS_KEYS,
  safetensorsFormat,
  serializeSafetensors,
  typedArrayOf,
  validateSafetensors,
  writeSafetensors,
  writeSafetensorsShards,
} from "../../formats/safetensors/mod.ts";
import {
  memoryTensorIndex,
  type Model,
  type ModelFile,
} from "../../core/model.ts";
import { type ByteSource, memorySource } from "../../core/sources.ts";
import { type Tensor, tensorFromF32, toFloat32 } from "../../core/tensor.ts";
import { dtypeInfo, type DTypeName } from "../../core/dtypes.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { defaultRegistry } from "../../mod.ts";

const enc = new TextEncoder();

/** A SafeTensors file from a header text and data bytes (no padding added). */
function stFile(
  header: string | Uint8Array,
  data: Uint8Array = new Uint8Array(),
): Uint8Array {
  const h = typeof header === "string" ? enc.encode(header) : header;
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

function entry(dtype: string, shape: unknown[], offsets: unknown[]): string {
  return `{"dtype":${JSON.stringify(dtype)},"shape":${
    JSON.stringify(shape)
  },"data_offsets":${JSON.stringify(offsets)}}`;
}

async function read(bytes: Uint8Array): Promise<ModelFile> {
  return await readSafetensors(memorySource(bytes, "t.safetensors"));
}

function model(tensors: Tensor[], extra: Partial<Model> = {}): ModelFile {
  return {
    models: [{
      id: "m",
      metadata: {},
      tensors: memoryTensorIndex(tensors),
      ...extra,
    }],
  };
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c.slice());
  const out = new Uint8Array(parts.reduce((s, p) => s + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Validation: one case per rule, class and message.

const I32_2x2 = entry("I32", [2, 2], [0, 16]);

Deno.test("validation: header length rules (too small, too large, past the end)", async () => {
  await assertRejects(
    () => read(new Uint8Array(5)),
    RangeError,
    "it has 5 bytes, too small for the 8-byte header length",
  );
  const big = new Uint8Array(16);
  new DataView(big.buffer).setBigUint64(0, 100_000_001n, true);
  await assertRejects(
    () => read(big),
    RangeError,
    "header length 100000001 is larger than the 100000000-byte limit",
  );
  new DataView(big.buffer).setBigUint64(0, 100_000_000n, true);
  await assertRejects(
    () => read(big),
    RangeError,
    "header length 100000000 runs past the end of the file (needs 100000008 bytes, the file has 16)",
  );
});

Deno.test("validation: header must be UTF-8 JSON object; BOM, trailing text and duplicates refused", async () => {
  await assertRejects(
    () => read(stFile(new Uint8Array([0x7b, 0xff, 0x7d]))),
    SyntaxError,
    "its 3 bytes are not valid UTF-8",
  );
  await assertRejects(
    () => read(stFile("{")),
    SyntaxError,
    "invalid JSON, expected a string key, found end of input at character 1",
  );
  await assertRejects(
    () => read(stFile("\uFEFF{}")),
    SyntaxError,
    "invalid JSON, expected a JSON value, found U+FEFF at character 0",
  );
  await assertRejects(
    () => read(stFile("{} x")),
    SyntaxError,
    'expected end of input after the value, found "x" at character 3',
  );
  await assertRejects(
    () => read(stFile("")),
    SyntaxError,
    "found end of input at character 0",
  );
  await assertRejects(
    () => read(stFile("[]")),
    TypeError,
    "expected a JSON object, got an array",
  );
  await assertRejects(
    () =>
      read(
        stFile(
          `{"a":${entry("U8", [1], [0, 1])},"a":${entry("U8", [1], [1, 2])}}`,
          new Uint8Array(2),
        ),
      ),
    SyntaxError,
    'duplicate key "a" at character 53',
  );
  await assertRejects(
    () => read(stFile(`{"a\\ud800":${entry("U8", [0], [0, 0])}}`)),
    SyntaxError,
    "lone leading surrogate",
  );
  await assertRejects(
    () => read(stFile("[".repeat(200) + "]".repeat(200))),
    SyntaxError,
    "nesting deeper than 128 levels",
  );
});

Deno.test("validation: JSON whitespace around the object is allowed, as in the reference", async () => {
  const f = await read(stFile(" \t\n{}\r\n "));
  assertEquals(f.models[0].tensors.names(), []);
});

Deno.test("validation: entry structure (not an object, missing and extra fields, field types)", async () => {
  await assertRejects(
    () => read(stFile('{"w":1}')),
    TypeError,
    'Invalid tensor "w" in SafeTensors file t.safetensors: expected an object with dtype, shape and data_offsets, got an integer',
  );
  await assertRejects(
    () => read(stFile('{"w":{"dtype":"U8","data_offsets":[0,0]}}')),
    TypeError,
    'missing field "shape"',
  );
  await assertRejects(
    () =>
      read(
        stFile(
          '{"w":{"dtype":"U8","shape":[],"data_offsets":[0,1],"foo":1}}',
          new Uint8Array(1),
        ),
      ),
    TypeError,
    'unexpected field "foo" (allowed: dtype, shape, data_offsets)',
  );
  await assertRejects(
    () =>
      read(stFile(`{"w":${entry("U8", [1], [0, 1]).replace('"U8"', "8")}}`)),
    TypeError,
    "dtype must be a string, got an integer",
  );
  await assertRejects(
    () => read(stFile('{"w":{"dtype":"U8","shape":{},"data_offsets":[0,1]}}')),
    TypeError,
    "shape must be an array of integers, got an object",
  );
  await assertRejects(
    () => read(stFile(`{"w":${entry("U8", [1], [0, 1, 2])}}`)),
    TypeError,
    "data_offsets must be [begin, end], two integers, got [0, 1, 2]",
  );
  await assertRejects(
    () => read(stFile(`{"w":${entry("U8", [1], ["0", 1])}}`)),
    TypeError,
    "got [a string, 1]",
  );
});

Deno.test("validation: unknown dtype is UnsupportedDTypeError naming the code", async () => {
  const err = await assertRejects(
    () =>
      read(stFile(`{"x":${entry("F128", [1], [0, 1])}}`, new Uint8Array(1))),
    UnsupportedDTypeError,
    "Unsupported dtype F128",
  );
  assertEquals((err as UnsupportedDTypeError).dtype, "F128");
  assertInstanceOf(err, TypeError);
});

Deno.test("validation: dims must be integers in 0..2^64-1 (negative, fractional, 2.0 and 2^64 refused)", async () => {
  await assertRejects(
    () => read(stFile(`{"w":${entry("U8", [-1], [0, 0])}}`)),
    RangeError,
    "shape dimension 0 is -1, expected an integer in 0..2^64-1",
  );
  await assertRejects(
    () =>
      read(stFile('{"w":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}}')),
    RangeError,
    "shape dimension 0 is 1.5",
  );
  await assertRejects(
    () =>
      read(
        stFile(
          '{"w":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}}',
          new Uint8Array(2),
        ),
      ),
    RangeError,
    "shape dimension 0 is 2, expected an integer",
  );
  await assertRejects(
    () =>
      read(
        stFile(
          '{"w":{"dtype":"U8","shape":[0,18446744073709551616],"data_offsets":[0,0]}}',
        ),
      ),
    RangeError,
    "shape dimension 1 is 18446744073709551616",
  );
  await assertRejects(
    () =>
      read(stFile('{"w":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}}')),
    RangeError,
    "data_offsets [-1, 0] must be integers in 0..2^64-1",
  );
  // The reference accepts this zero-element shape; a JS number cannot hold the second dimension.
  await assertRejects(
    () =>
      read(
        stFile(
          '{"w":{"dtype":"U8","shape":[0,9007199254740993],"data_offsets":[0,0]}}',
        ),
      ),
    RangeError,
    "shape dimension 1 is 9007199254740993, above 2^53-1",
  );
});

Deno.test("validation: offsets (reversed, hole, overlap) and coverage of the data section", async () => {
  await assertRejects(
    () => read(stFile(`{"w":${entry("U8", [0], [3, 2])}}`, new Uint8Array(3))),
    RangeError,
    "data_offsets [3, 2] end before they begin",
  );
  await assertRejects(
    () =>
      read(
        stFile(
          `{"a":${entry("U8", [2], [0, 2])},"b":${entry("U8", [2], [4, 6])}}`,
          new Uint8Array(6),
        ),
      ),
    RangeError,
    'Invalid tensor "b" in SafeTensors file t.safetensors: data_offsets [4, 6] leave a hole of 2 bytes after tensor "a", which ends at 2',
  );
  await assertRejects(
    () =>
      read(
        stFile(
          `{"a":${entry("U8", [4], [0, 4])},"b":${entry("U8", [2], [2, 4])}}`,
          new Uint8Array(4),
        ),
      ),
    RangeError,
    'Invalid tensor "b" in SafeTensors file t.safetensors: data_offsets [2, 4] overlap tensor "a", which ends at 4',
  );
  await assertRejects(
    () => read(stFile(`{"test":${I32_2x2}}`, new Uint8Array(20))),
    RangeError,
    "the tensors cover 16 bytes of a 20-byte data section; 4 trailing bytes belong to no tensor",
  );
  await assertRejects(
    () => read(stFile(`{"test":${I32_2x2}}`, new Uint8Array(10))),
    RangeError,
    "the tensors need 16 bytes of data, the file has 10 after the header",
  );
  // Header order does not matter, offsets do.
  const f = await read(
    stFile(
      `{"b":${entry("U8", [1], [1, 2])},"a":${entry("U8", [1], [0, 1])}}`,
      new Uint8Array([5, 6]),
    ),
  );
  assertEquals(f.models[0].tensors.names(), ["b", "a"]);
  assertEquals(
    (await f.models[0].tensors.load("b")).bytes,
    new Uint8Array([6]),
  );
});

Deno.test("validation: byte length = elements x dtype size, F4 two per byte, 64-bit overflow", async () => {
  await assertRejects(
    () =>
      read(
        stFile(`{"test":${entry("I32", [2, 2], [0, 4])}}`, new Uint8Array(4)),
      ),
    RangeError,
    "I32 [2, 2] needs 16 bytes, data_offsets [0, 4] give 4",
  );
  const f4 = await read(
    stFile(
      `{"q":${entry("F4", [3, 2], [0, 3])}}`,
      new Uint8Array([0x21, 0x43, 0x65]),
    ),
  );
  assertEquals(f4.models[0].tensors.info("q").byteLength, 3);
  await assertRejects(
    () => read(stFile(`{"q":${entry("F4", [3], [0, 2])}}`, new Uint8Array(2))),
    RangeError,
    "F4 packs 2 elements per 1-byte block; 3 elements do not fill whole blocks",
  );
  await assertRejects(
    () => read(stFile(`{"q":${entry("F4", [4], [0, 4])}}`, new Uint8Array(4))),
    RangeError,
    "F4 [4] needs 2 bytes",
  );
  await assertRejects(
    () =>
      read(
        stFile(
          '{"t":{"dtype":"I32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}',
        ),
      ),
    RangeError,
    "the element count of shape [4294967296, 4294967296] overflows 64 bits",
  );
  await assertRejects(
    () =>
      read(
        stFile(
          '{"t":{"dtype":"F64","shape":[4294967296,536870912],"data_offsets":[0,0]}}',
        ),
      ),
    RangeError,
    "the byte size of F64 [4294967296, 536870912] overflows 64 bits",
  );
});

Deno.test("validation: __metadata__ is string -> string; null means none; __proto__ is a plain name", async () => {
  await assertRejects(
    () => read(stFile('{"__metadata__":{"a":1}}')),
    TypeError,
    'the value of "a" must be a string, got an integer',
  );
  await assertRejects(
    () => read(stFile('{"__metadata__":["a"]}')),
    TypeError,
    "expected an object of strings, got an array",
  );
  const f = await read(stFile('{"__metadata__":null}'));
  assertEquals(f.models[0].metadata, {});
  const p = await read(
    stFile(
      `{"__metadata__":{"__proto__":"x"},"__proto__":${
        entry("U8", [1], [0, 1])
      }}`,
      new Uint8Array([9]),
    ),
  );
  assertEquals(Object.getOwnPropertyNames(p.models[0].metadata), ["__proto__"]);
  assertEquals((await p.models[0].tensors.load("__proto__")).bytes[0], 9);
});

Deno.test("validation: our metadata keys must be valid when present", async () => {
  await assertRejects(
    () => read(stFile('{"__metadata__":{"modelhost.config":"{"}}')),
    SyntaxError,
    '__metadata__["modelhost.config"] of t.safetensors: invalid JSON',
  );
  await assertRejects(
    () => read(stFile('{"__metadata__":{"modelhost.config":"[]"}}')),
    TypeError,
    'expected a network config object with a "layers" array',
  );
  await assertRejects(
    () =>
      read(
        stFile(
          `{"__metadata__":{"modelhost.quant":"{\\"w\\":{\\"scale\\":[1,2]}}"},"w":${
            entry("I8", [3, 1], [0, 3])
          }}`,
          new Uint8Array(3),
        ),
      ),
    TypeError,
    "2 scale values for shape [3, 1], expected 3",
  );
  await assertRejects(
    () =>
      read(
        stFile(
          '{"__metadata__":{"modelhost.quant":"{\\"nope\\":{\\"scale\\":1}}"}}',
        ),
      ),
    TypeError,
    'entry "nope" names no tensor of this file',
  );
});

// ---------------------------------------------------------------------------
// Lazy reading.

function countingSource(
  bytes: Uint8Array,
): ByteSource & { reads: [number, number][] } {
  const inner = memorySource(bytes, "counted");
  const reads: [number, number][] = [];
  return {
    name: inner.name,
    size: inner.size,
    reads,
    read(offset, length) {
      reads.push([offset, length]);
      return inner.read(offset, length);
    },
  };
}

Deno.test("lazy: opening reads only the length and the header; load reads only that tensor", async () => {
  const tensors = [
    tensorFromF32("a", new Float32Array(1000).fill(1), [1000]),
    tensorFromF32("b", new Float32Array(1000).fill(2), [10, 100]),
  ];
  const bytes = await serializeSafetensors(model(tensors));
  const src = countingSource(bytes);
  const file = await readSafetensors(src);
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assertEquals(src.reads, [[0, 8], [8, n]]);
  const info = file.models[0].tensors.info("b");
  assertEquals(info.shape, [10, 100]);
  const b = await file.models[0].tensors.load("b");
  assertEquals(src.reads.slice(2), [[info.byteOffset!, 4000]]);
  assertEquals(toFloat32(b)[999], 2);
  const header = await readSafetensorsHeader(memorySource(bytes));
  assertEquals(header.dataOffset, 8 + n);
  assertEquals(header.tensors.map((t) => t.dataOffsets), [[0, 4000], [
    4000,
    8000,
  ]]);
});

Deno.test("typedArrayOf: zero-copy when aligned, copy when not", () => {
  const buf = new Uint8Array(12);
  new Float32Array(buf.buffer).set([1, 2, 3]);
  const aligned = typedArrayOf({
    name: "x",
    dtype: "F32",
    shape: [2],
    bytes: buf.subarray(4, 12),
  });
  assert(aligned instanceof Float32Array && aligned.buffer === buf.buffer);
  assertEquals([...aligned], [2, 3]);
  const odd = new Uint8Array(9);
  odd.set(buf.subarray(4, 12), 1);
  const copied = typedArrayOf({
    name: "x",
    dtype: "F32",
    shape: [2],
    bytes: odd.subarray(1),
  });
  assert(copied.buffer !== odd.buffer);
  assertEquals([...copied], [2, 3]);
  const bf = typedArrayOf({
    name: "x",
    dtype: "BF16",
    shape: [1],
    bytes: new Uint8Array([0x80, 0x3f]),
  });
  assert(bf instanceof Uint16Array && bf[0] === 0x3f80);
  assert(
    typedArrayOf({
      name: "x",
      dtype: "F8_E4M3",
      shape: [1],
      bytes: new Uint8Array([1]),
    }) instanceof Uint8Array,
  );
});

// ---------------------------------------------------------------------------
// Writing.

Deno.test("write: exact bytes for a hand-built case (sorted names, space padding, contiguous offsets)", async () => {
  const file = model([
    { name: "b", dtype: "U8", shape: [2], bytes: new Uint8Array([1, 2]) },
    tensorFromF32("a", new Float32Array([0.5]), [1]),
  ]);
  const bytes = await serializeSafetensors(file);
  const json = '{"__metadata__":{"format":"pt"},' +
    '"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},' +
    '"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}}';
  const padded = json + " ".repeat((8 - (json.length % 8)) % 8);
  const expected = stFile(padded, new Uint8Array([0, 0, 0, 0x3f, 1, 2]));
  assertEquals(bytes, expected);
  assertEquals((8 + padded.length) % 8, 0);
  // Same input, same bytes; streaming gives the same bytes.
  assertEquals(await serializeSafetensors(file), bytes);
  assertEquals(await collect(writeSafetensors(file)), bytes);
});

Deno.test("write: data laid out by element size then name, so every tensor is aligned", async () => {
  const file = model([
    { name: "a_u8", dtype: "U8", shape: [3], bytes: new Uint8Array([1, 2, 3]) },
    {
      name: "b_f64",
      dtype: "F64",
      shape: [1],
      bytes: new Uint8Array(new Float64Array([7]).buffer),
    },
    {
      name: "c_f16",
      dtype: "F16",
      shape: [1],
      bytes: new Uint8Array([0, 0x3c]),
    },
  ]);
  const header = await readSafetensorsHeader(
    memorySource(await serializeSafetensors(file)),
  );
  const byName = Object.fromEntries(
    header.tensors.map((t) => [t.name, t.dataOffsets]),
  );
  assertEquals(byName, { a_u8: [10, 13], b_f64: [0, 8], c_f16: [8, 10] });
  assertEquals(header.tensors.map((t) => t.name), ["a_u8", "b_f64", "c_f16"]);
  assertEquals(header.dataOffset % 8, 0);
});

Deno.test("write: every SafeTensors dtype round-trips bit-exactly (raw bytes kept)", async () => {
  const dtypes: [DTypeName, number][] = [
    ["BOOL", 1],
    ["U8", 1],
    ["I8", 1],
    ["I16", 2],
    ["U16", 2],
    ["I32", 4],
    ["U32", 4],
    ["I64", 8],
    ["U64", 8],
    ["F16", 2],
    ["BF16", 2],
    ["F32", 4],
    ["F64", 8],
    ["F8_E4M3", 1],
    ["F8_E5M2", 1],
    ["F4", 0.5],
  ];
  const tensors = dtypes.map(([d, size]) => {
    const bytes = Uint8Array.from(
      { length: 6 * size },
      (_, i) => (i * 37 + d.length) & 255,
    );
    if (d === "BOOL") bytes.forEach((_, i) => (bytes[i] = i & 1));
    return { name: `t_${d}`, dtype: d, shape: [2, 3], bytes };
  });
  const back =
    (await read(await serializeSafetensors(model(tensors)))).models[0];
  for (const t of tensors) {
    const got = await back.tensors.load(t.name);
    assertEquals(got.dtype, t.dtype);
    assertEquals(got.shape, [2, 3]);
    assertEquals(got.bytes, t.bytes, t.name);
  }
});

Deno.test("write: dtype option converts float weights; int tensors are kept", async () => {
  const w = tensorFromF32("w", new Float32Array([1.5, -2, 0.1, 65504]), [2, 2]);
  const ids: Tensor = {
    name: "ids",
    dtype: "I64",
    shape: [2],
    bytes: new Uint8Array(new BigInt64Array([3n, 4n]).buffer),
  };
  const f16 =
    (await read(await serializeSafetensors(model([w, ids]), { dtype: "F16" })))
      .models[0];
  assertEquals(f16.tensors.info("w").dtype, "F16");
  assertEquals(f16.tensors.info("ids").dtype, "I64");
  // 0.1 rounds to the nearest F16, 0x2e66 = 0.0999755859375.
  assertEquals([...toFloat32(await f16.tensors.load("w"))], [
    1.5,
    -2,
    0.0999755859375,
    65504,
  ]);
  const bf16 =
    (await read(await serializeSafetensors(model([w]), { dtype: "BF16" })))
      .models[0];
  // 0.1 in BF16 is 0x3dcd = 0.10009765625; 65504 rounds to 65536.
  assertEquals([...toFloat32(await bf16.tensors.load("w"))], [
    1.5,
    -2,
    0.10009765625,
    65536,
  ]);
  await assertRejects(
    () => serializeSafetensors(model([w]), { dtype: "I16" }),
    UnsupportedDTypeError,
    "cannot convert weights to it on write",
  );
});

Deno.test("write: I8 stores codes plus per-row scales in metadata (hand-computed)", async () => {
  const w = tensorFromF32("w", new Float32Array([1, -2, 0.5, 0, 0, 0]), [2, 3]);
  const bytes = await serializeSafetensors(model([w]), { dtype: "I8" });
  const back = (await read(bytes)).models[0];
  const q = await back.tensors.load("w");
  assertEquals(q.dtype, "I8");
  // Row 0: scale 2/127; 1/scale = 63.5 rounds half-even to 64, 0.5/scale = 31.75 -> 32.
  assertEquals([...new Int8Array(q.bytes.buffer, q.bytes.byteOffset, 6)], [
    64,
    -127,
    32,
    0,
    0,
    0,
  ]);
  assertEquals([...(q.quant!.scale as Float32Array)], [
    Math.fround(2 / 127),
    1,
  ]);
  const quant = JSON.parse(back.metadata[SAFETENSORS_KEYS.quant] as string);
  assertEquals(quant.w.scale, [Math.fround(2 / 127), 1]);
  const values = toFloat32(q);
  assertEquals(values[1], Math.fround(-127 * Math.fround(2 / 127)));
  assert(Math.abs(values[0] - 1) <= Math.fround(2 / 127) / 2);
});

Deno.test("write: I8 error bound on deterministic weights, and quantized tensors re-save unchanged", async () => {
  const n = 64 * 48;
  const values = Float32Array.from(
    { length: n },
    (_, i) => 0.1 + 2 * Math.cos(i),
  );
  const file = model([tensorFromF32("w", values, [64, 48])]);
  const back =
    (await read(await serializeSafetensors(file, { dtype: "I8" }))).models[0];
  const t = await back.tensors.load("w");
  const got = toFloat32(t);
  const scales = t.quant!.scale as Float32Array;
  for (let i = 0; i < n; i++) {
    assert(
      Math.abs(got[i] - values[i]) <= scales[Math.floor(i / 48)] / 2 + 1e-7,
      `element ${i}`,
    );
  }
  // A model read back (I8 + quant) writes the same bytes again.
  const again = await serializeSafetensors({ models: [back] });
  assertEquals(again, await serializeSafetensors(file, { dtype: "I8" }));
  // Converting quantized codes to F32 dequantizes them.
  const wide = (await read(
    await serializeSafetensors({ models: [back] }, { dtype: "F32" }),
  )).models[0];
  assertEquals(toFloat32(await wide.tensors.load("w")), got);
  assertEquals(wide.metadata[SAFETENSORS_KEYS.quant], undefined);
});

Deno.test({
  name:
    "write: F8_E4M3, F8_E5M2 and F4 casts (needs the dtype table's F8/F4 encoders)",
  ignore: !dtypeInfo("F8_E4M3").fromF32 || !dtypeInfo("F4").fromF32,
  fn: async () => {
    // Values exactly representable in each format come back unchanged.
    const w = tensorFromF32("w", new Float32Array([0.5, -1.5, 2, 6]), [4]);
    for (const d of ["F8_E4M3", "F8_E5M2", "F4"] as const) {
      const back =
        (await read(await serializeSafetensors(model([w]), { dtype: d })))
          .models[0];
      assertEquals(back.tensors.info("w").byteLength, d === "F4" ? 2 : 4);
      assertEquals([...toFloat32(await back.tensors.load("w"))], [
        0.5,
        -1.5,
        2,
        6,
      ], d);
    }
  },
});

Deno.test("write: config, provenance and extra metadata round-trip; quantized GGUF-only types need a dtype", async () => {
  const config = {
    grid_rows: 1,
    layers: [{ type: "dense", input_size: 2, output_size: 1 }],
  };
  const file = model([
    tensorFromF32("layers.0.weight", new Float32Array([1, 2]), [1, 2]),
  ], { config });
  const bytes = await serializeSafetensors(file, {
    provenance: {
      gitCommit: "abc123",
      datasetSha256: "d".repeat(64),
      seed: 42,
      createdAt: "2024-01-02T03:04:05Z",
      extra: { run: "r7" },
    },
    metadata: { note: "hello" },
  });
  const back = (await read(bytes)).models[0];
  assertEquals(back.config, config);
  assertEquals(back.metadata, {
    format: "pt",
    note: "hello",
    "modelhost.config": JSON.stringify(config),
    "modelhost.provenance.created_at": "2024-01-02T03:04:05Z",
    "modelhost.provenance.dataset_sha256": "d".repeat(64),
    "modelhost.provenance.git_commit": "abc123",
    "modelhost.provenance.run": "r7",
    "modelhost.provenance.seed": "42",
  });
  const q4: Tensor = {
    name: "q",
    dtype: "Q4_0",
    shape: [32],
    bytes: new Uint8Array(18),
  };
  await assertRejects(
    () => serializeSafetensors(model([q4])),
    UnsupportedDTypeError,
    'tensor "q" cannot be stored in SafeTensors; pass a dtype option',
  );
  await assertRejects(
    () =>
      serializeSafetensors(
        model([{
          name: "__metadata__",
          dtype: "U8",
          shape: [1],
          bytes: new Uint8Array(1),
        }]),
      ),
    TypeError,
    "reserved",
  );
  await assertRejects(
    () =>
      serializeSafetensors(
        model([{
          name: "x",
          dtype: "U8",
          shape: [3],
          bytes: new Uint8Array(2),
        }]),
      ),
    RangeError,
    'Cannot write tensor "x": U8 [3] needs 3 bytes, the model gave 2',
  );
  await assertRejects(
    () => serializeSafetensors({ models: [] }),
    TypeError,
    "SafeTensors holds exactly one",
  );
});

Deno.test("write: streams one tensor at a time (loads happen while chunks are consumed)", async () => {
  const loads: string[] = [];
  const base = memoryTensorIndex([
    tensorFromF32("a", new Float32Array(1 << 18), [1 << 18]),
    tensorFromF32("b", new Float32Array(1 << 18), [1 << 18]),
  ]);
  const tensors = {
    ...base,
    load: (n: string) => (loads.push(n), base.load(n)),
  };
  const it = writeSafetensors({ models: [{ id: "m", metadata: {}, tensors }] })
    [Symbol.asyncIterator]();
  const first = await it.next(); // the header
  assertEquals(loads, []);
  assert(!first.done && first.value.byteLength < 1024);
  await it.next();
  assertEquals(loads, ["a"]);
  await it.next();
  assertEquals(loads, ["a", "b"]);
  assert((await it.next()).done);
});

// ---------------------------------------------------------------------------
// sha256 and validate.

Deno.test("validate: stored SHA-256 checked; damage, bad digests and unknown names all reported", async () => {
  const file = model([
    tensorFromF32("a", new Float32Array([1, 2, 3]), [3]),
    tensorFromF32("b", new Float32Array([4]), [1]),
  ]);
  const bytes = await serializeSafetensors(file, { sha256: true });
  const meta = (await read(bytes)).models[0].metadata;
  // SHA-256 of the F32 bytes of [4] (00 00 80 40), from `printf '\x00\x00\x80\x40' | sha256sum`.
  assertEquals(
    JSON.parse(meta[SAFETENSORS_KEYS.sha256] as string).b,
    "4f4b9b7d8b86633e2824e2f439819357b0cd010ab410ea1a691b12c5f94e91e0",
  );
  const ok = await validateSafetensors(memorySource(bytes));
  assertEquals(ok, { ok: true, problems: [], files: 1, tensors: 2, hashed: 2 });

  const bad = bytes.slice();
  bad[bad.length - 1] ^= 0x40; // last byte belongs to "a" (sorted a, b by name at the same size: b after a)
  const header = await readSafetensorsHeader(memorySource(bytes));
  const last = header.tensors.find((t) =>
    t.dataOffsets[1] === header.dataLength
  )!;
  const report = await validateSafetensors(memorySource(bad));
  assertEquals(report.ok, false);
  assertEquals(report.problems.length, 1);
  assertEquals(report.problems[0].tensor, last.name);
  assertEquals(report.problems[0].kind, "Mismatch");
  assert(
    report.problems[0].message.includes(
      `SHA-256 of its ${last.byteLength} bytes is`,
    ),
  );

  const forged = await serializeSafetensors(
    model([tensorFromF32("a", new Float32Array([1]), [1])]),
    {
      metadata: {
        [SAFETENSORS_KEYS.sha256]: JSON.stringify({
          a: "xyz",
          ghost: "0".repeat(64),
        }),
      },
    },
  );
  const r2 = await validateSafetensors(memorySource(forged), {
    requireSha256: true,
  });
  assertEquals(r2.problems.map((p) => p.message), [
    'The stored SHA-256 of "a" is not 64 lowercase hex digits',
    'A SHA-256 is stored for "ghost", which is not a tensor of this file',
    'Tensor "a" has no stored SHA-256',
  ]);
  const broken = await validateSafetensors(
    memorySource(
      stFile(`{"a":${entry("U8", [2], [0, 2])}}`, new Uint8Array(1)),
    ),
  );
  assertEquals(broken.ok, false);
  assertEquals(broken.problems[0].kind, "RangeError");
});

// ---------------------------------------------------------------------------
// Shards.

function shardResolver(files: Map<string, Uint8Array>) {
  return (name: string): Promise<ByteSource> => {
    const b = files.get(name);
    return b
      ? Promise.resolve(memorySource(b, name))
      : Promise.reject(new RangeError(`no file ${name}`));
  };
}

Deno.test("shards: maxShardSize splits in name order; index has total_size and weight_map; reads back as one model", async () => {
  const tensors = ["d", "a", "c", "b", "e"].map((n, i) =>
    tensorFromF32(n, new Float32Array(100).fill(i), [100])
  );
  const plan = await writeSafetensorsShards(model(tensors), {
    maxShardSize: 850,
    sha256: true,
  });
  assertEquals(plan.shards.map((s) => [s.fileName, s.tensors]), [
    ["model-00001-of-00003.safetensors", ["a", "b"]],
    ["model-00002-of-00003.safetensors", ["c", "d"]],
    ["model-00003-of-00003.safetensors", ["e"]],
  ]);
  const index = JSON.parse(new TextDecoder().decode(plan.index!.bytes));
  assertEquals(plan.index!.fileName, "model.safetensors.index.json");
  assertEquals(index.metadata, { total_size: 2000 });
  assertEquals(index.weight_map, {
    a: "model-00001-of-00003.safetensors",
    b: "model-00001-of-00003.safetensors",
    c: "model-00002-of-00003.safetensors",
    d: "model-00002-of-00003.safetensors",
    e: "model-00003-of-00003.safetensors",
  });
  const files = new Map<string, Uint8Array>();
  for (const s of plan.shards) {
    const b = await collect(s.chunks());
    assertEquals(b.byteLength, s.byteLength);
    files.set(s.fileName, b);
  }
  files.set(plan.index!.fileName, plan.index!.bytes);
  const resolve = shardResolver(files);
  const file = await readSafetensors(
    memorySource(plan.index!.bytes, "ckpt/model.safetensors.index.json"),
    { resolve },
  );
  const m = file.models[0];
  assertEquals(m.id, "model");
  assertEquals(m.tensors.names(), ["a", "b", "c", "d", "e"]);
  assertEquals(toFloat32(await m.tensors.load("d"))[99], 0);
  assertEquals(toFloat32(await m.tensors.load("e"))[0], 4);
  assertEquals(
    Object.keys(JSON.parse(m.metadata[SAFETENSORS_KEYS.sha256] as string)),
    ["a", "b", "c", "d", "e"],
  );
  const report = await validateSafetensors(memorySource(plan.index!.bytes), {
    resolve,
  });
  assertEquals([report.ok, report.files, report.hashed], [true, 3, 5]);
  // Without an index: the files merge.
  const merged = await readSafetensorsShards(
    plan.shards.map((s) => s.fileName),
    resolve,
  );
  assertEquals(merged.models[0].tensors.names(), ["a", "b", "c", "d", "e"]);
  await assertRejects(
    () => readSafetensors(memorySource(plan.index!.bytes)),
    TypeError,
    "opening its shards needs options.resolve",
  );
  await assertRejects(
    () => collect(writeSafetensors(model(tensors), { maxShardSize: 850 })),
    TypeError,
    "splits the model into 3 shards",
  );
});

Deno.test("shards: a tensor listed in the index but missing from its shard is an error; unsafe names refused", async () => {
  const shard = await serializeSafetensors(
    model([tensorFromF32("a", new Float32Array(1), [1])]),
  );
  const files = new Map([["s1.safetensors", shard]]);
  const index = enc.encode(
    JSON.stringify({
      weight_map: { a: "s1.safetensors", ghost: "s1.safetensors" },
    }),
  );
  await assertRejects(
    () =>
      readSafetensors(memorySource(index, "i.json"), {
        resolve: shardResolver(files),
      }),
    RangeError,
    'tensor "ghost" is listed in the index for s1.safetensors, but that shard has no such tensor',
  );
  const report = await validateSafetensors(memorySource(index, "i.json"), {
    resolve: shardResolver(files),
  });
  assertEquals(report.problems.map((p) => p.tensor), ["ghost"]);
  const wrongTotal = enc.encode(
    JSON.stringify({
      metadata: { total_size: 5 },
      weight_map: { a: "s1.safetensors" },
    }),
  );
  const r2 = await validateSafetensors(memorySource(wrongTotal, "i.json"), {
    resolve: shardResolver(files),
  });
  assertEquals(r2.problems.map((p) => p.message), [
    "The index declares total_size 5, the listed tensors hold 4 bytes",
  ]);
  for (
    const bad of ["../x.safetensors", "/etc/x.safetensors", "a//b.safetensors"]
  ) {
    const idx = enc.encode(JSON.stringify({ weight_map: { a: bad } }));
    await assertRejects(
      () =>
        readSafetensors(memorySource(idx, "i.json"), {
          resolve: shardResolver(files),
        }),
      TypeError,
      "must be a relative path inside the index's folder",
    );
  }
  const dup = new Map([["x.safetensors", shard], ["y.safetensors", shard]]);
  await assertRejects(
    () =>
      readSafetensorsShards(
        ["x.safetensors", "y.safetensors"],
        shardResolver(dup),
      ),
    TypeError,
    'tensor "a" is in both x.safetensors and y.safetensors',
  );
});

// ---------------------------------------------------------------------------
// Plugin and registry.

Deno.test("plugin: registered by default, detected by header shape and by index JSON", async () => {
  const reg = defaultRegistry();
  const plugin = reg.format("safetensors");
  assertEquals(plugin.extensions, [".safetensors"]);
  assertEquals(reg.formatForPath("x/model.safetensors").name, "safetensors");
  const bytes = await serializeSafetensors(
    model([tensorFromF32("a", new Float32Array(1), [1])]),
  );
  assertEquals(reg.detect(bytes.subarray(0, 16))?.name, "safetensors");
  assert(detectSafetensors(stFile(" \n{}")));
  assert(
    detectSafetensors(
      enc.encode('{\n  "metadata": {"total_size": 4},\n  "weight_map": {}}'),
    ),
  );
  assert(!detectSafetensors(enc.encode('{"type":"modelhost/bundle"}')));
  assert(
    !detectSafetensors(enc.encode("GGUF\x03\x00\x00\x00\x00\x00\x00\x00")),
  );
  assert(!detectSafetensors(new Uint8Array(16).fill(0xff)));
  const written = await collect(
    safetensorsFormat({ write: { format: null } }).write!(
      model([tensorFromF32("a", new Float32Array(1), [1])]),
    ) as AsyncIterable<Uint8Array>,
  );
  assertEquals(
    (await plugin.read!(memorySource(written))).models[0].metadata,
    {},
  );
});

// ---------------------------------------------------------------------------
// HTTP ranges.

Deno.test("http: lazy open over a loopback server transfers only the header, then one tensor by range", async () => {
  const { httpSource } = await import("../../core/sources.ts");
  const tensors = Array.from(
    { length: 8 },
    (_, i) =>
      tensorFromF32(`t${i}`, new Float32Array(1 << 16).fill(i), [256, 256]),
  );
  const bytes = await serializeSafetensors(model(tensors));
  let served = 0;
  const ac = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen() {},
  }, (req) => {
    const headers = {
      "accept-ranges": "bytes",
      "content-length": String(bytes.length),
    };
    if (req.method === "HEAD") return new Response(null, { headers });
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.get("range") ?? "");
    if (!m) return new Response("range required", { status: 416 });
    const start = Number(m[1]), end = Number(m[2]);
    const body = bytes.slice(start, end + 1);
    served += body.length;
    return new Response(body, {
      status: 206,
      headers: {
        "content-range": `bytes ${start}-${end}/${bytes.length}`,
        "content-length": String(body.length),
      },
    });
  });
  try {
    const src = await httpSource(
      `http://127.0.0.1:${server.addr.port}/model.safetensors`,
    );
    const file = await readSafetensors(src);
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    assertEquals(src.bytesTransferred, 8 + n);
    assertEquals(served, 8 + n);
    assert(
      8 + n < bytes.length / 100,
      `header ${8 + n} bytes of ${bytes.length}`,
    );
    assertEquals(file.models[0].id, "model");
    const t5 = await file.models[0].tensors.load("t5");
    assertEquals(src.bytesTransferred, 8 + n + 262144);
    assertEquals(src.requests, 4); // HEAD, length, header, one tensor
    assertEquals(toFloat32(t5)[12345], 5);
  } finally {
    ac.abort();
    await server.finished;
  }
});
