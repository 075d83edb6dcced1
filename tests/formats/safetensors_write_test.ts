// SafeTensors writing: exact bytes, layout, dtypes, quantization, metadata,
// streaming, and the stored SHA-256 that validate checks.

import { assert, assertEquals, assertRejects } from "@std/assert";
import {
  readSafetensorsHeader,
  SAFETENSORS_KEYS,
  serializeSafetensors,
  validateSafetensors,
  writeSafetensors,
} from "../../formats/safetensors/mod.ts";
import { memoryTensorIndex } from "../../core/model.ts";
import { memorySource } from "../../core/sources.ts";
import { type Tensor, tensorFromF32, toFloat32 } from "../../core/tensor.ts";
import { dtypeInfo, type DTypeName } from "../../core/dtypes.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { collect, entry, model, read, stFile } from "./_safetensors.ts";

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
