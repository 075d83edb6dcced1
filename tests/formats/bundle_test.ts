import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertRejects,
  assertStrictEquals,
} from "@std/assert";
import {
  byteLengthOf,
  dtypeInfo,
  type DTypeName,
  DTYPES,
} from "../../core/dtypes.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { loadAllTensors, memoryTensorIndex } from "../../core/model.ts";
import { buildNetwork, initNetwork } from "../../core/network.ts";
import { createRng } from "../../core/rng.ts";
import { memorySource } from "../../core/sources.ts";
import {
  floatTensor,
  type Tensor,
  tensorFromF32,
  toFloat32,
} from "../../core/tensor.ts";
import {
  bundleFormat,
  bundleModelIds,
  ChecksumError,
  detectBundle,
  loadBundle,
  saveBundle,
} from "../../formats/bundle/mod.ts";
import {
  parseJsonWithLongStrings,
  splitLongStrings,
} from "../../formats/bundle/_json.ts";
import { fromBase64, fromBase64Into, toBase64 } from "../../core/_base64.ts";
import { defaultRegistry } from "../../mod.ts";

// References written by tests/vectors/gen/bundle.py (NumPy 1.24, PyTorch 1.13).
interface Vectors {
  f32_bits: number[];
  f32_sha256: string;
  f32_base64: string;
  f16_bits: number[];
  bf16_bits: number[];
  python_bundle: string;
  encoder_input: number[];
  encoder_output: number[];
}
const V: Vectors = JSON.parse(
  await Deno.readTextFile(new URL("../vectors/bundle.json", import.meta.url)),
);
const INPUT = new Float32Array(Uint32Array.from(V.f32_bits).buffer);
const reg = defaultRegistry();

const tensor = (name: string, v: Float32Array, shape = [v.length]): Tensor =>
  tensorFromF32(name, v, shape);

async function roundTrip(
  t: Tensor,
  dtype?: DTypeName,
): Promise<{ text: string; back: Tensor }> {
  const text = await saveBundle([{ id: "m", tensors: [t] }], { dtype });
  const file = await loadBundle(text, "m");
  return { text, back: await file.models[0].tensors.load(t.name) };
}

function parsed(text: string): {
  models: {
    id: string;
    metadata: Record<string, unknown>;
    weights: { tensors: Record<string, Record<string, unknown>> };
  }[];
} {
  return JSON.parse(text);
}

Deno.test("writer: data, checksum and layout match Python's base64 / hashlib / json", async () => {
  const { text } = await roundTrip(tensor("x", INPUT));
  const e = parsed(text).models[0].weights.tensors.x;
  assertEquals(e.data, V.f32_base64);
  assertEquals(e.sha256, V.f32_sha256);
  assertEquals(e.dtype, "F32");
  assertEquals(e.shape, [64]);
  assert(text.startsWith('{"type":"modelhost/bundle","version":1,"models":[{'));
  assert(text.endsWith("]}\n"));
});

Deno.test("writer: a bundle written by Python in the canonical form loads and saves back byte for byte", async () => {
  const file = await loadBundle(V.python_bundle);
  assertEquals(file.models.map((m) => m.id), ["encoder", "decoder"]);
  assertStrictEquals(await saveBundle(file), V.python_bundle);
  // The same from bytes, and for one model picked by id.
  const bytes = new TextEncoder().encode(V.python_bundle);
  assertStrictEquals(
    await saveBundle(await loadBundle(bytes)),
    V.python_bundle,
  );
  const dec = await loadBundle(V.python_bundle, "decoder");
  assertEquals(dec.models.length, 1);
  assertEquals(dec.models[0].config?.layers[0].activation, "tanh");
});

Deno.test("reader: the Python bundle's encoder (F16, BF16, I8 affine, F4 block scales, F64) runs as NumPy computed", async () => {
  const [enc] = (await loadBundle(V.python_bundle, "encoder")).models;
  assertEquals(enc.metadata.provenance, {
    dataset_hash: "sha256:abc123",
    git_commit: "0123abcd",
    seed: 7,
  });
  const w1 = await enc.tensors.load("layers.1.weight");
  assertEquals(w1.dtype, "I8");
  assertEquals(w1.quant?.zeroPoint, 18);
  const w2 = await enc.tensors.load("layers.2.weight");
  assertEquals(w2.quant?.blockSize, 4);
  const net = buildNetwork(reg, enc.config, await loadAllTensors(enc.tensors));
  const y = net.forward(floatTensor(new Float32Array(V.encoder_input), [3, 6]));
  assertEquals(y.shape, [3, 2]);
  for (let i = 0; i < y.data.length; i++) {
    const e = V.encoder_output[i];
    assert(
      Math.abs(y.data[i] - e) <= 1e-5 * Math.max(1, Math.abs(e)),
      `output ${i}: ${y.data[i]} vs NumPy ${e}`,
    );
  }
});

Deno.test("writer: keys are sorted in every object below the top level, and no whitespace is written", async () => {
  const w = tensor("b.weight", new Float32Array([1, 2]));
  const text = await saveBundle([{
    id: "m",
    config: { zeta: 1, layers: [{ type: "dense", output_size: 2, alpha: 0 }] },
    metadata: { z: { y: 1, b: 2 }, a: [{ d: 1, c: 2 }] },
    tensors: [w, tensor("a.weight", new Float32Array([3]))],
  }], { provenance: { seed: 1, git_commit: "x" } });
  const check = (v: unknown, path: string): void => {
    if (Array.isArray(v)) v.forEach((x, i) => check(x, `${path}[${i}]`));
    else if (v && typeof v === "object") {
      const keys = Object.keys(v);
      assertEquals(keys, [...keys].sort(), path);
      for (const k of keys) check((v as Record<string, unknown>)[k], k);
    }
  };
  const doc = JSON.parse(text);
  assertEquals(Object.keys(doc), ["type", "version", "models"]);
  check(doc.models, "models");
  assert(
    !/\s/.test(text.slice(0, -1)),
    "no whitespace before the final newline",
  );
  assertEquals(doc.models[0].metadata.provenance, { git_commit: "x", seed: 1 });
});

Deno.test("writer: output depends only on the input; created is written only when asked", async () => {
  const ts = [tensor("w", INPUT.slice(0, 8), [2, 4])];
  const a = await saveBundle([{ id: "m", tensors: ts }], { dtype: "I8" });
  const b = await saveBundle([{ id: "m", tensors: ts }], { dtype: "I8" });
  assertStrictEquals(a, b);
  assert(!a.includes("created"));
  const fixed = await saveBundle([{ id: "m", tensors: ts }], {
    created: "2024-06-01T12:00:00.000Z",
  });
  assertEquals(
    parsed(fixed).models[0].metadata.created,
    "2024-06-01T12:00:00.000Z",
  );
  const now = await saveBundle([{ id: "m", tensors: ts }], { created: true });
  const stamp = parsed(now).models[0].metadata.created as string;
  assert(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(stamp), stamp);
  // A loaded bundle keeps its stamp when saved again.
  assertStrictEquals(await saveBundle(await loadBundle(fixed)), fixed);
});

Deno.test("F16 and BF16 storage holds exactly the codes NumPy and PyTorch produce", async () => {
  for (
    const [dtype, ref] of [["F16", V.f16_bits], ["BF16", V.bf16_bits]] as const
  ) {
    const { back } = await roundTrip(tensor("x", INPUT), dtype);
    assertEquals(back.dtype, dtype);
    const codes = new Uint16Array(back.bytes.buffer, back.bytes.byteOffset, 64);
    assertEquals([...codes], ref, dtype);
  }
});

// ---------------------------------------------------------------- every dtype

/** Raw bytes that are valid codes of a dtype (NaN-free for the float types). */
function codesFor(dtype: DTypeName, count: number, seed: number): Uint8Array {
  const d = dtypeInfo(dtype);
  const rng = createRng(seed);
  const bytes = new Uint8Array(byteLengthOf(d, count));
  for (let i = 0; i < bytes.length; i++) bytes[i] = rng.u32() & 0xff;
  if (d.kind === "float" && d.toF32) {
    // Replace NaN codes by re-encoding finite values.
    const v = d.toF32(bytes, count).map((x) => Number.isNaN(x) ? 1 : x);
    if (d.fromF32) return d.fromF32(v);
  }
  if (dtype === "BOOL") return bytes.map((b) => b & 1);
  return bytes;
}

const PLAIN: DTypeName[] = DTYPES.filter((d) => d.toF32 && d.kind !== "quant")
  .map((d) => d.name);

Deno.test("every dtype of the table: stored codes come back bit for bit (shape [4, 8])", async () => {
  const names = DTYPES.map((d) => d.name);
  for (const dtype of names) {
    const d = dtypeInfo(dtype);
    const shape = d.blockSize > 1 && d.blockSize !== 2
      ? [2, d.blockSize]
      : [4, 8];
    const count = shape[0] * shape[1];
    const t: Tensor = {
      name: "w",
      dtype,
      shape,
      bytes: codesFor(dtype, count, names.indexOf(dtype) + 1),
    };
    const { back, text } = await roundTrip(t);
    assertEquals(back.dtype, dtype);
    assertEquals(back.shape, shape);
    assertEquals(back.bytes, t.bytes, dtype);
    assertStrictEquals(await saveBundle(await loadBundle(text)), text, dtype);
  }
});

Deno.test("every storable dtype from F32: lossless ones exact, lossy ones within their documented bound", async () => {
  const rng = createRng(99);
  const n = 4096;
  const gauss = new Float32Array(n).map(() => rng.normal() * 0.05);
  const ints = new Float32Array(n).map(() => rng.int(256) - 128);
  const bits = new Float32Array(n).map(() => rng.int(2));
  // Relative bound for the float dtypes (half an ulp), absolute from scales for the rest.
  const relative: Partial<Record<DTypeName, number>> = {
    F64: 0,
    F32: 0,
    F16: 2 ** -11,
    BF16: 2 ** -8,
    F8_E4M3: 2 ** -4,
    F8_E5M2: 2 ** -3,
  };
  for (const dtype of PLAIN) {
    const source = dtype === "BOOL"
      ? bits
      : dtypeInfo(dtype).kind === "int"
      ? (dtype.startsWith("U") ? ints.map(Math.abs) : ints)
      : gauss;
    const { back } = await roundTrip(tensor("w", source, [64, 64]), dtype);
    assertEquals(back.dtype, dtype);
    const got = toFloat32(back);
    const rel = relative[dtype];
    for (let i = 0; i < n; i++) {
      const x = source[i], y = got[i];
      let bound: number;
      if (dtype === "I8" || dtype === "U8") {
        bound = 0.5 * (back.quant!.scale as number) * (1 + 1e-6);
      } else if (dtype === "F4") {
        // Largest gap between E2M1 values is 2 (4 → 6): half of it times the block scale.
        bound = (back.quant!.scale as Float32Array)[Math.floor(i / 32)] *
          (1 + 1e-6);
      } else if (rel !== undefined) {
        // Below the smallest normal the step is absolute.
        const tiny = dtype === "F16"
          ? 2 ** -25
          : dtype === "F8_E4M3"
          ? 2 ** -10
          : dtype === "F8_E5M2"
          ? 2 ** -17
          : 0;
        bound = Math.abs(x) * rel + tiny;
      } else bound = 0; // integer dtypes and BOOL from values they hold exactly
      assert(
        Math.abs(x - y) <= bound,
        `${dtype} element ${i}: ${x} came back as ${y}, bound ${bound}`,
      );
    }
  }
});

Deno.test("storage choices: per tensor by function, per channel I8, symmetric U8, F4 block size", async () => {
  const rng = createRng(5);
  const w = tensor(
    "layers.0.weight",
    new Float32Array(64).map(() => rng.normal()),
    [4, 16],
  );
  const b = tensor(
    "layers.0.bias",
    new Float32Array(4).map(() => rng.normal()),
    [4],
  );
  const text = await saveBundle([{ id: "m", tensors: [w, b] }], {
    dtype: (info) =>
      info.name.endsWith(".bias")
        ? undefined
        : { dtype: "I8", granularity: "channel", symmetric: true },
  });
  const [m] = (await loadBundle(text)).models;
  const bw = await m.tensors.load("layers.0.weight");
  assertEquals(bw.dtype, "I8");
  assertEquals(bw.quant?.axis, 0);
  assertEquals((bw.quant?.scale as Float32Array).length, 4);
  assertEquals((await m.tensors.load("layers.0.bias")).dtype, "F32");
  const e = parsed(text).models[0].weights.tensors["layers.0.weight"];
  assertEquals((e.scale as { shape: number[] }).shape, [4]);
  assertEquals(e.axis, 0);

  const u8 = (await roundTrip(w, "U8")).back;
  assertEquals(u8.dtype, "U8");
  const f4 = await loadBundle(
    await saveBundle([{ id: "m", tensors: [w] }], {
      dtype: { dtype: "F4", blockSize: 16 },
    }),
  );
  const t4 = await f4.models[0].tensors.load("layers.0.weight");
  assertEquals(t4.quant?.blockSize, 16);
  assertEquals((t4.quant?.scale as Float32Array).length, 4);
});

Deno.test("reloaded networks compute exactly what the original computes (F32 bit-identical)", async () => {
  const cfg = {
    input_size: 8,
    layers: [
      { type: "dense", output_size: 16, activation: "gelu" },
      { type: "dense", output_size: 4, activation: "softmax" },
    ],
  };
  const weights = initNetwork(reg, cfg, 11);
  const original = buildNetwork(reg, cfg, weights);
  const x = floatTensor(new Float32Array(24).map((_, i) => Math.sin(i)), [
    3,
    8,
  ]);
  const text = await saveBundle([{
    id: "net",
    config: original.config,
    tensors: weights,
  }]);
  const [m] = (await loadBundle(text)).models;
  const again = buildNetwork(reg, m.config, await loadAllTensors(m.tensors));
  assertEquals(again.forward(x).data, original.forward(x).data);
  assertEquals(m.config, original.config);
});

// ---------------------------------------------------------------- models and ids

Deno.test("multi-model: ids pick one model; a missing id lists the ids present", async () => {
  const text = await saveBundle([
    { id: "encoder", tensors: [tensor("a", new Float32Array([1]))] },
    { id: "decoder", tensors: [tensor("b", new Float32Array([2]))] },
  ]);
  assertEquals(bundleModelIds(text), ["encoder", "decoder"]);
  const all = await loadBundle(text);
  assertEquals(all.models.map((m) => m.id), ["encoder", "decoder"]);
  const dec = (await loadBundle(text, "decoder")).models[0];
  assertEquals(toFloat32(await dec.tensors.load("b"))[0], 2);
  await assertRejects(
    () => loadBundle(text, "classifier"),
    RangeError,
    'No model "classifier" in the bundle; models present: "encoder", "decoder"',
  );
  await assertRejects(
    () => saveBundle([{ id: "a", tensors: [] }, { id: "a", tensors: [] }]),
    TypeError,
    'two models have the id "a"',
  );
});

// ---------------------------------------------------------------- bad input

async function oneTensorBundle(): Promise<string> {
  return await saveBundle([{
    id: "enc",
    tensors: [
      tensor("layers.0.weight", new Float32Array(128).fill(0.5), [16, 8]),
    ],
  }]);
}

function edit(
  text: string,
  fn: (e: Record<string, unknown>, doc: Record<string, unknown>) => void,
): string {
  const doc = JSON.parse(text);
  fn(doc.models[0].weights.tensors["layers.0.weight"], doc);
  return JSON.stringify(doc);
}

Deno.test("bad input: not JSON, wrong type, unknown version — typed errors", async () => {
  await assertRejects(() => loadBundle("{not json"), SyntaxError, "not JSON");
  await assertRejects(
    () => loadBundle(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])),
    SyntaxError,
    "not UTF-8",
  );
  const good = await oneTensorBundle();
  await assertRejects(
    () => loadBundle(edit(good, (_, d) => d.type = "other/bundle")),
    TypeError,
    '"type" is "other/bundle", expected "modelhost/bundle"',
  );
  await assertRejects(
    () => loadBundle(edit(good, (_, d) => d.version = 3)),
    TypeError,
    "unknown version 3",
  );
  await assertRejects(
    () => loadBundle(edit(good, (_, d) => d.version = 2)),
    TypeError,
    'Cannot read model "enc": unknown version 2',
  );
  await assertRejects(
    () => loadBundle("[1, 2]"),
    TypeError,
    "expected a JSON object",
  );
});

Deno.test("bad input: bad base64, wrong length, checksum mismatch, unknown dtype — each names model and tensor", async () => {
  const good = await oneTensorBundle();
  await assertRejects(
    () =>
      loadBundle(edit(good, (e) => e.data = "$" + (e.data as string).slice(1))),
    SyntaxError,
    'tensor "layers.0.weight" of model "enc": "data" is not valid base64',
  );
  await assertRejects(
    () =>
      loadBundle(edit(good, (e) => e.data = (e.data as string).slice(0, -8))),
    RangeError,
    'tensor "layers.0.weight" of model "enc": F32 [16, 8] needs 512 bytes, "data" holds 507',
  );
  await assertRejects(
    () => loadBundle(edit(good, (e) => e.shape = [16, 9])),
    RangeError,
    "F32 [16, 9] needs 576 bytes",
  );
  const tampered = edit(good, (e) => {
    const b = Uint8Array.fromBase64(e.data as string);
    b[100] ^= 1;
    e.data = b.toBase64();
  });
  const err = await assertRejects(() => loadBundle(tampered), ChecksumError);
  assertEquals(err.model, "enc");
  assertEquals(err.tensor, "layers.0.weight");
  assert(err.message.includes('tensor "layers.0.weight" of model "enc"'));
  // verify: false skips the check.
  const skipped = await loadBundle(tampered, undefined, { verify: false });
  assertEquals(skipped.models.length, 1);
  await assertRejects(
    () => loadBundle(edit(good, (e) => e.dtype = "F128")),
    UnsupportedDTypeError,
    'tensor "layers.0.weight" of model "enc"',
  );
  await assertRejects(
    () => loadBundle(edit(good, (e) => e.sha256 = "xyz")),
    TypeError,
    '"sha256" must be 64 lower-case hex digits',
  );
  await assertRejects(
    () => loadBundle(edit(good, (e) => e.shape = [16, -8])),
    TypeError,
    '"shape" must be an array of non-negative integers',
  );
  await assertRejects(
    () =>
      loadBundle(
        edit(good, (e) =>
          e.scale = { dtype: "F32", shape: [3], data: "AAAAAAAAAAAAAAAA" }),
      ),
    TypeError,
    "axis 0 has 16 channels, got 3 scales",
  );
});

Deno.test("bad input: a shape far larger than the data is refused before allocating", async () => {
  const good = await oneTensorBundle();
  await assertRejects(
    () => loadBundle(edit(good, (e) => e.shape = [1e6, 1e6])),
    RangeError,
    "needs 4000000000000 bytes",
  );
});

Deno.test("writer errors name the model and tensor", async () => {
  const bad: Tensor = {
    name: "w",
    dtype: "F32",
    shape: [4],
    bytes: new Uint8Array(12),
  };
  await assertRejects(
    () => saveBundle([{ id: "m", tensors: [bad] }]),
    RangeError,
    'tensor "w" of model "m": F32 [4] needs 16 bytes, the tensor has 12',
  );
  await assertRejects(
    () =>
      saveBundle([{
        id: "m",
        tensors: [tensor("w", new Float32Array([NaN, 1]))],
      }], {
        dtype: "I8",
      }),
    TypeError,
    'Cannot store tensor "w" of model "m" as I8',
  );
  await assertRejects(
    () =>
      saveBundle([{ id: "m", metadata: { when: new Date(0) }, tensors: [] }]),
    TypeError,
    "metadata.when: a Date is not a JSON value",
  );
  await assertRejects(
    () => saveBundle([{ id: "m", metadata: { x: Infinity }, tensors: [] }]),
    TypeError,
    "Infinity is not a finite number",
  );
});

// ---------------------------------------------------------------- parsing and detection

Deno.test("long-string parsing gives exactly what JSON.parse gives", () => {
  const long = "A".repeat(5000);
  const cases = [
    { a: long, b: [long, { c: long }], "\u0000": "\u00001", d: "x\u0000y" },
    { escaped: '"quoted\\' + long + "\n\u2028" + long, n: 1.5e-7 },
    { [long]: long, key: long },
    [long, long],
    { a: "\\u0000" + long },
  ];
  for (const c of cases) {
    for (const text of [JSON.stringify(c), JSON.stringify(c, null, 2)]) {
      assertEquals(parseJsonWithLongStrings(text), JSON.parse(text));
    }
  }
  // The fast path is taken: the skeleton is small and parses on its own.
  const text = JSON.stringify({ a: long, b: { c: long }, d: "short" });
  const split = splitLongStrings(text)!;
  assertEquals(split.blobs, [long, long]);
  assert(split.skeleton.length < 100, split.skeleton);
  JSON.parse(split.skeleton);
  let threw: unknown;
  try {
    parseJsonWithLongStrings(`{"a": "${long}", "b": }`);
  } catch (e) {
    threw = e;
  }
  assertInstanceOf(threw, SyntaxError);
});

Deno.test("detect: our output and Loom's indented header are bundles; other JSON is not", async () => {
  const enc = new TextEncoder();
  assert(detectBundle(enc.encode(await oneTensorBundle())));
  assert(
    detectBundle(
      enc.encode('{\n  "type": "modelhost/bundle",\n  "version": 2,'),
    ),
  );
  assert(
    detectBundle(
      enc.encode('\uFEFF{"version": 1, "type": "modelhost/bundle"}'),
    ),
  );
  assert(!detectBundle(enc.encode('{"type": "other"}')));
  assert(
    !detectBundle(enc.encode('{"models": [], "type": "modelhost/bundle"}')),
  );
  assert(!detectBundle(new Uint8Array([0x47, 0x47, 0x55, 0x46])));
});

Deno.test("plugin: found by extension and by content; read and write match the string API", async () => {
  assertEquals(reg.formatForPath("model.bundle.json").name, "bundle");
  assertEquals(reg.formatForPath("/tmp/x/net.json").name, "bundle");
  const text = await oneTensorBundle();
  const bytes = new TextEncoder().encode(text);
  assertEquals(reg.detect(bytes.subarray(0, 64))?.name, "bundle");
  const file = await bundleFormat().read!(memorySource(bytes, "mem"), {
    id: "enc",
  });
  assertEquals(file.models.map((m) => m.id), ["enc"]);
  const chunks: Uint8Array[] = [];
  for await (
    const c of bundleFormat().write!(file) as AsyncIterable<Uint8Array>
  ) {
    chunks.push(c);
  }
  const joined = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let off = 0;
  for (const c of chunks) joined.set(c, off), off += c.length;
  assertStrictEquals(new TextDecoder().decode(joined), text);
});

Deno.test("saving accepts a TensorIndex, a Map or a list, and a ModelFile", async () => {
  const a = tensor("a", new Float32Array([1, 2]));
  const b = tensor("b", new Float32Array([3]));
  const fromList = await saveBundle([{ id: "m", tensors: [b, a] }]);
  const fromMap = await saveBundle([{
    id: "m",
    tensors: new Map([["b", b], ["a", a]]),
  }]);
  const fromIndex = await saveBundle({
    models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex([a, b]) }],
  });
  assertStrictEquals(fromMap, fromList);
  assertStrictEquals(fromIndex, fromList);
});

Deno.test("long values: escaped base64, long scale arrays and long metadata strings read like JSON.parse would", async () => {
  const rng = createRng(3);
  const big = tensor("w", new Float32Array(65536).map(() => rng.normal()), [
    256,
    256,
  ]);
  const note = 'line\n"quoted" é \u2028 '.repeat(500); // escapes in a long string
  const text = await saveBundle([{
    id: "m",
    metadata: { note },
    tensors: [big],
  }], {
    dtype: "F4",
  });
  const [m] = (await loadBundle(text)).models;
  assertEquals(m.metadata.note, note);
  const t = await m.tensors.load("w");
  assertEquals((t.quant!.scale as Float32Array).length, 2048);
  assertStrictEquals(await saveBundle(await loadBundle(text)), text);
  // A writer may escape any character of a JSON string, base64 included.
  const half = tensor("h", new Float32Array(2048).fill(0.5));
  const plain = await saveBundle([{ id: "m", tensors: [half] }]);
  const escaped = plain.replace(/"data":"A/, '"data":"\\u0041');
  assert(escaped !== plain && splitLongStrings(escaped)!.blobs.length === 1);
  const e = await loadBundle(escaped);
  assertEquals(toFloat32(await e.models[0].tensors.load("h")), toFloat32(half));
  await assertRejects(
    () => loadBundle(plain.replace(/"data":"A/, '"data":"\\u0024')),
    SyntaxError,
    'tensor "h" of model "m": "data" is not valid base64',
  );
});

Deno.test("hostile input: truncated and byte-flipped bundles give typed errors, never anything else", async () => {
  const rng = createRng(17);
  const w = tensor(
    "layers.0.weight",
    new Float32Array(2048).map(() => rng.normal()),
    [32, 64],
  );
  const text = await saveBundle([{
    id: "m",
    config: { input_size: 64, layers: [{ type: "dense", output_size: 32 }] },
    tensors: [w, tensor("s", new Float32Array(64).fill(1), [64])],
  }], { dtype: (t) => t.name === "s" ? "I8" : { dtype: "F4", blockSize: 16 } });
  const bytes = new TextEncoder().encode(text);
  const typed = [
    SyntaxError,
    TypeError,
    RangeError,
    ChecksumError,
    UnsupportedDTypeError,
  ];
  const attempt = async (input: Uint8Array, what: string) => {
    try {
      await loadBundle(input);
    } catch (e) {
      assert(typed.some((C) => e instanceof C), `${what}: ${e}`);
    }
  };
  for (let cut = 0; cut < bytes.length; cut += 97) {
    await attempt(bytes.subarray(0, cut), `truncated at ${cut}`);
  }
  for (let i = 0; i < 300; i++) {
    const b = bytes.slice();
    for (let k = 0; k < 3; k++) b[rng.int(b.length)] = rng.int(256);
    await attempt(b, `flip round ${i}`);
  }
});

Deno.test("base64: the @std/encoding fallback gives what the native methods give", () => {
  const rng = createRng(23);
  for (const n of [0, 1, 2, 3, 4, 5, 63, 64, 65, 1000]) {
    const bytes = new Uint8Array(n).map(() => rng.int(256));
    const native = toBase64(bytes, true);
    assertEquals(toBase64(bytes, false), native, `encode ${n}`);
    assertEquals(fromBase64(native, false), bytes, `decode ${n}`);
    const unpadded = native.replace(/=+$/, "");
    assertEquals(fromBase64(unpadded, false), fromBase64(unpadded, true));
    const target = new Uint8Array(n);
    assert(fromBase64Into(native, target, false));
    assertEquals(target, bytes);
    assert(!fromBase64Into(native, new Uint8Array(n + 1), false));
    assert(!fromBase64Into(native, new Uint8Array(n + 1), true));
  }
  for (const bad of ["A$AA", "A===", "AAAAA", "AA=A"]) {
    let nativeError: unknown, fallbackError: unknown;
    try {
      fromBase64(bad, true);
    } catch (e) {
      nativeError = e;
    }
    try {
      fromBase64(bad, false);
    } catch (e) {
      fallbackError = e;
    }
    assertInstanceOf(nativeError, SyntaxError, bad);
    assertInstanceOf(fallbackError, SyntaxError, bad);
  }
});

Deno.test("storage: an unknown dtype name is an UnsupportedDTypeError naming the model and tensor", async () => {
  await assertRejects(
    () =>
      saveBundle([{
        id: "m",
        tensors: [tensor("w", new Float32Array([1, 2]))],
      }], {
        dtype: "F12" as DTypeName,
      }),
    UnsupportedDTypeError,
    'Cannot store tensor "w" of model "m"',
  );
});
