import { assertEquals, assertRejects, assertThrows } from "@std/assert";
import {
  type GgufTensorPlan,
  GgufType,
  planGguf,
  readGguf,
  readGgufHeader,
  writeGguf,
  writeGgufBytes,
} from "../../formats/gguf/mod.ts";
import { memorySource } from "../../core/sources.ts";
import type { ModelFile, TensorInfo } from "../../core/model.ts";
import { memoryTensorIndex } from "../../core/model.ts";
import type { Tensor } from "../../core/tensor.ts";
import { tensorFromF32 } from "../../core/tensor.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";

const VEC = `${REPO_ROOT}/tests/vectors`;

function model(
  tensors: Tensor[],
  metadata: Record<string, unknown> = {},
): ModelFile {
  return {
    models: [{ id: "m", metadata, tensors: memoryTensorIndex(tensors) }],
  };
}

function f32(
  name: string,
  shape: number[],
  fill = (i: number) => 0.1 + 2 * Math.cos(i),
): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return tensorFromF32(
    name,
    Float32Array.from({ length: n }, (_, i) => fill(i)),
    shape,
  );
}

Deno.test("gguf writer: reproduces the Python-built all-types file byte for byte, from the ModelFile and from typed metadata", async () => {
  const original = await Deno.readFile(`${VEC}/gguf_all_types.gguf`);
  const src = memorySource(original);
  const file = await readGguf(src);
  assertEquals(await writeGgufBytes(file), original);
  const header = await readGgufHeader(src);
  assertEquals(
    await writeGgufBytes(file, { metadata: header.metadata }),
    original,
  );
});

Deno.test("gguf writer: infers GGUF types for plain metadata", async () => {
  const bytes = await writeGgufBytes(model([], {
    s: "x",
    u: 5,
    neg: -3,
    half: 0.5,
    tenth: 0.1,
    big: 2n ** 40n,
    huge: 2n ** 63n,
    flag: true,
    ints: [1, -2],
    wide: [0, 3_000_000_000],
    floats: [0.5, 0.25],
    doubles: [0.1],
    strings: ["a", "b"],
    nested: [[1], ["x", "y"]],
    typed: new Uint16Array([7]),
    obj: { a: 1 },
    skipped: null,
  }));
  const h = await readGgufHeader(memorySource(bytes));
  const T = GgufType;
  assertEquals(
    h.metadata.map((e) => [e.key, e.type, e.value]),
    [
      ["s", T.STRING, "x"],
      ["u", T.UINT32, 5],
      ["neg", T.INT32, -3],
      ["half", T.FLOAT32, 0.5],
      ["tenth", T.FLOAT64, 0.1],
      ["big", T.INT64, 2n ** 40n],
      ["huge", T.UINT64, 2n ** 63n],
      ["flag", T.BOOL, true],
      ["ints", T.ARRAY, { type: T.INT32, items: [1, -2] }],
      ["wide", T.ARRAY, { type: T.UINT32, items: [0, 3_000_000_000] }],
      ["floats", T.ARRAY, { type: T.FLOAT32, items: [0.5, 0.25] }],
      ["doubles", T.ARRAY, { type: T.FLOAT64, items: [0.1] }],
      ["strings", T.ARRAY, { type: T.STRING, items: ["a", "b"] }],
      ["nested", T.ARRAY, {
        type: T.ARRAY,
        items: [{ type: T.INT32, items: [1] }, {
          type: T.STRING,
          items: ["x", "y"],
        }],
      }],
      ["typed", T.ARRAY, { type: T.UINT16, items: [7] }],
      ["obj", T.STRING, '{"a":1}'],
    ],
  );
});

Deno.test("gguf writer: gguf.types descriptors are kept while the value fits them", async () => {
  const bytes = await writeGgufBytes(model([], {
    a: 7,
    b: 300,
    c: [1, 2],
    "gguf.types": { a: "UINT8", b: "UINT8", c: "ARRAY<INT16>" },
  }));
  const h = await readGgufHeader(memorySource(bytes));
  assertEquals(
    h.metadata.map((e) => [e.key, e.type]),
    [["a", GgufType.UINT8], ["b", GgufType.UINT32], ["c", GgufType.ARRAY]],
  );
  assertEquals(h.metadata[2].value, { type: GgufType.INT16, items: [1, 2] });
});

Deno.test("gguf writer: alignment option, general.alignment honored, padding and offsets", async () => {
  const tensors = [f32("a", [3]), f32("b", [5])];
  const a64 = await writeGgufBytes(model(tensors), { alignment: 64 });
  const h64 = await readGgufHeader(memorySource(a64));
  assertEquals([
    h64.alignment,
    h64.dataOffset % 64,
    h64.tensors.map((t) => t.offset),
  ], [64, 0, [0, 64]]);
  assertEquals(a64.length, h64.dataOffset + 128);
  const fromMeta = await writeGgufBytes(
    model(tensors, { "general.alignment": 128 }),
  );
  const h128 = await readGgufHeader(memorySource(fromMeta));
  assertEquals([h128.alignment, h128.tensors[1].offset], [128, 128]);
  const plain = await readGgufHeader(
    memorySource(await writeGgufBytes(model(tensors))),
  );
  assertEquals([
    plain.alignment,
    plain.metadata.length,
    plain.tensors[1].offset,
  ], [32, 0, 32]);
  await assertRejects(
    () => writeGgufBytes(model(tensors), { alignment: 24 }),
    RangeError,
    "the alignment option is 24; it must be a power of two",
  );
});

Deno.test("gguf writer: deterministic, streamed header first then one tensor at a time", async () => {
  const file = model([f32("w.weight", [4, 32]), f32("b", [4])], {
    "general.name": "m",
  });
  const one = await writeGgufBytes(file, { quantize: "Q8_0" });
  const two = await writeGgufBytes(file, { quantize: "Q8_0" });
  assertEquals(one, two);
  const chunks: Uint8Array[] = [];
  for await (const c of writeGguf(file, { quantize: "Q8_0" })) chunks.push(c);
  const h = await readGgufHeader(memorySource(one));
  assertEquals(chunks[0].length, h.dataOffset);
  assertEquals(chunks.map((c) => c.length), [
    h.dataOffset,
    4 * 34,
    0x20 - (136 % 32),
    16,
    16,
  ]);
  // An empty model is the 24-byte preamble and nothing else.
  assertEquals((await writeGgufBytes(model([]))).length, 24);
});

Deno.test("gguf writer: llama.cpp-like quantization rules and fallbacks, all reported", () => {
  const file = model([
    f32("token_embd.weight", [8, 256]),
    f32("blk.0.attn_norm.weight", [256]),
    f32("blk.0.ffn_norm.weight", [2, 256]),
    f32("blk.0.ffn_gate_inp.weight", [4, 256]),
    f32("blk.0.attn_q.bias", [2, 256]),
    f32("blk.0.w96.weight", [2, 96]),
    f32("blk.0.w48.weight", [2, 48]),
    {
      name: "ids.weight",
      dtype: "I32",
      shape: [2, 256],
      bytes: new Uint8Array(2048),
    },
  ]);
  const show = (p: GgufTensorPlan[]) =>
    p.map((x) => [x.name, x.to, x.action, x.reason ?? ""]);
  assertEquals(show(planGguf(file, { quantize: "Q4_K" })), [
    ["token_embd.weight", "Q4_K", "quantize", ""],
    ["blk.0.attn_norm.weight", "F32", "copy", "1-D tensors stay as they are"],
    ["blk.0.ffn_norm.weight", "F32", "copy", "norms stay as they are"],
    [
      "blk.0.ffn_gate_inp.weight",
      "F32",
      "copy",
      "expert gating tensors stay as they are",
    ],
    ["blk.0.attn_q.bias", "F32", "copy", "only weights are quantized"],
    [
      "blk.0.w96.weight",
      "Q5_0",
      "quantize",
      "rows of 96 do not divide the Q4_K block size 256; Q5_0 instead",
    ],
    [
      "blk.0.w48.weight",
      "F16",
      "convert",
      "rows of 48 do not divide the Q4_K block size 256; F16 instead",
    ],
    ["ids.weight", "I32", "copy", "I32 is not a float type"],
  ]);
  const to = (q: "Q2_K" | "Q3_K" | "Q5_K" | "Q6_K" | "Q8_0") =>
    planGguf(model([f32("w96.weight", [2, 96])]), { quantize: q })[0].to;
  assertEquals([to("Q2_K"), to("Q3_K"), to("Q5_K"), to("Q6_K"), to("Q8_0")], [
    "Q4_0",
    "Q4_0",
    "Q5_1",
    "Q8_0",
    "Q8_0",
  ]);
  const custom = planGguf(file, {
    quantize: "Q8_0",
    typeFor: (i: TensorInfo) =>
      i.name === "token_embd.weight" ? "F16" : undefined,
  });
  assertEquals([custom[0].to, custom[0].reason], ["F16", "chosen by typeFor"]);
});

Deno.test("gguf writer: quantize-on-write sets file type and quantization version, requantizes, converts", async () => {
  const file = model([f32("w.weight", [2, 64])], { "general.file_type": 0 });
  const out = await writeGgufBytes(file, { quantize: "Q4_0" });
  const h = await readGgufHeader(memorySource(out));
  assertEquals(
    h.metadata.map((e) => [e.key, e.type, e.value]),
    [["general.file_type", GgufType.UINT32, 2], [
      "general.quantization_version",
      GgufType.UINT32,
      2,
    ]],
  );
  assertEquals(h.tensors[0].dtype, "Q4_0");
  const again = await readGguf(memorySource(out));
  const plan = planGguf(again, { quantize: "Q8_0" });
  assertEquals([plan[0].from, plan[0].to, plan[0].action], [
    "Q4_0",
    "Q8_0",
    "requantize",
  ]);
  const f16 = await readGguf(
    memorySource(await writeGgufBytes(file, { quantize: "F16" })),
  );
  const t = await f16.models[0].tensors.load("w.weight");
  assertEquals([t.dtype, t.bytes.length], ["F16", 256]);
  // 0.1 + 2cos(0) = 2.1 → F16 0x4033 (2.099609375)
  assertEquals([t.bytes[0], t.bytes[1]], [0x33, 0x40]);
});

Deno.test("gguf writer: types without a GGUF id are widened losslessly or refused", async () => {
  const u8: Tensor = {
    name: "u8",
    dtype: "U8",
    shape: [3],
    bytes: new Uint8Array([0, 200, 255]),
  };
  const bool: Tensor = {
    name: "mask",
    dtype: "BOOL",
    shape: [2],
    bytes: new Uint8Array([1, 0]),
  };
  let plan: GgufTensorPlan[] = [];
  const out = await writeGgufBytes(model([u8, bool]), {
    onPlan: (p) => (plan = p),
  });
  assertEquals(plan.map((p) => [p.to, p.reason]), [
    ["I16", "GGUF has no U8; I16 holds it exactly"],
    ["I8", "GGUF has no BOOL; I8 holds it exactly"],
  ]);
  const back = (await readGguf(memorySource(out))).models[0].tensors;
  assertEquals(
    Array.from(new Int16Array((await back.load("u8")).bytes.slice().buffer)),
    [0, 200, 255],
  );
  const u64: Tensor = {
    name: "x",
    dtype: "U64",
    shape: [1],
    bytes: new Uint8Array(8),
  };
  assertThrows(
    () => planGguf(model([u64])),
    UnsupportedDTypeError,
    'tensor "x": GGUF has no U64',
  );
  const scaled: Tensor = {
    name: "q",
    dtype: "I8",
    shape: [2],
    bytes: new Uint8Array([2, 4]),
    quant: { scale: 0.5 },
  };
  await assertRejects(
    () => writeGgufBytes(model([scaled])),
    TypeError,
    "carry a scale/zero point",
  );
  const asF32 = await writeGgufBytes(model([scaled]), { typeFor: () => "F32" });
  const q = await (await readGguf(memorySource(asF32))).models[0].tensors.load(
    "q",
  );
  assertEquals(Array.from(new Float32Array(q.bytes.slice().buffer)), [1, 2]);
});

Deno.test("gguf writer: refuses what GGUF or llama.cpp cannot hold", async () => {
  assertThrows(
    () => planGguf(model([f32("x".repeat(64), [1])])),
    RangeError,
    "its name is 64 bytes, ggml's limit is 63",
  );
  assertThrows(
    () => planGguf(model([f32("x", [1, 1, 1, 1, 1])])),
    RangeError,
    "it has 5 dimensions [1, 1, 1, 1, 1], ggml holds at most 4",
  );
  await assertRejects(
    () => writeGgufBytes(model([], { f: () => 1 })),
    TypeError,
    'metadata "f" to GGUF: a function value has no GGUF type',
  );
  await assertRejects(
    () => writeGgufBytes(model([], { m: [1, "a"] })),
    TypeError,
    'metadata "m" to GGUF: an array mixing value kinds',
  );
  const two: ModelFile = {
    models: [
      { id: "a", metadata: {}, tensors: memoryTensorIndex([]) },
      {
        id: "b",
        metadata: { "general.name": "b" },
        tensors: memoryTensorIndex([]),
      },
    ],
  };
  await assertRejects(
    () => writeGgufBytes(two),
    TypeError,
    "the file holds 2 models (a, b)",
  );
  const b = await readGguf(
    memorySource(await writeGgufBytes(two, { model: "b" })),
  );
  assertEquals(b.models[0].id, "b");
  await assertRejects(
    () => writeGgufBytes(two, { model: "c" }),
    TypeError,
    'no model "c"; models: a, b',
  );
});

Deno.test("gguf writer: a network config travels as modelhost.config and comes back as config", async () => {
  const config = { layers: [{ type: "dense", input_size: 2, output_size: 3 }] };
  const file: ModelFile = {
    models: [{
      id: "net",
      config,
      metadata: {},
      tensors: memoryTensorIndex([f32("layers.0.weight", [3, 2])]),
    }],
  };
  const back = await readGguf(memorySource(await writeGgufBytes(file)));
  assertEquals(back.models[0].config, config);
  assertEquals(back.models[0].tensors.info("layers.0.weight").shape, [3, 2]);
});

Deno.test("gguf plugin: found by the default registry; its streamed write goes to disk and reads back", async () => {
  const { defaultRegistry } = await import("../../mod.ts");
  const { fileSource, writeFileAtomic } = await import("../../io/file.ts");
  const reg = defaultRegistry();
  const plugin = reg.formatForPath("model.gguf");
  assertEquals(plugin.name, "gguf");
  const original = await Deno.readFile(`${VEC}/gguf_all_types.gguf`);
  assertEquals(reg.detect(original.subarray(0, 8))?.name, "gguf");
  const file = await plugin.read!(memorySource(original));
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/out.gguf`;
    const written = await writeFileAtomic(
      path,
      plugin.write!(file, { quantize: "Q8_0" }) as AsyncIterable<Uint8Array>,
    );
    const src = await fileSource(path);
    const back = await plugin.read!(src);
    assertEquals(written, src.size);
    // a.weight is 2×3: rows of 3 do not divide 32, so F16; q.weight is already Q8_0.
    assertEquals(
      back.models[0].tensors.names().map((n) =>
        back.models[0].tensors.info(n).dtype
      ),
      ["F16", "Q8_0"],
    );
    src.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
