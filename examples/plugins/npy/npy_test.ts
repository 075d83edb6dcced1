// Tests of the npy/npz plugin. The reference is NumPy: testdata/ holds files
// written by np.save / np.savez / np.savez_compressed and, in expected.json,
// NumPy's own reading of each array (testdata/gen_fixtures.py). The last
// test hands our output to NumPy (when /usr/bin/python3 has it).

import { assert, assertEquals, assertRejects } from "@std/assert";
import {
  createRegistry,
  type DTypeName,
  encodeFromF32,
  memorySource,
  memoryTensorIndex,
  type ModelFile,
  type Tensor,
  tensorFromF32,
  toFloat32,
  UnsupportedDTypeError,
} from "@modelhost/modelhost";
import {
  assertFormatRoundTrip,
  assertHostileInputs,
  collectBytes,
} from "@modelhost/modelhost/testing";
import plugins, {
  detectNpy,
  detectNpz,
  encodeNpy,
  npyFormat,
  npzFormat,
  readNpy,
  readNpz,
  writeNpz,
} from "./mod.ts";
import { crc32 } from "./_zip.ts";

interface Expected {
  arrays?: Record<string, { dtype: string; shape: number[]; hex: string }>;
  refused?: string;
}

const DATA = new URL("./testdata/", import.meta.url);
const EXPECTED: Record<string, Expected> = JSON.parse(
  await Deno.readTextFile(new URL("expected.json", DATA)),
);
const DTYPE_OF: Record<string, DTypeName> = {
  f2: "F16",
  f4: "F32",
  f8: "F64",
  i1: "I8",
  i2: "I16",
  i4: "I32",
  i8: "I64",
  u1: "U8",
  u2: "U16",
  u4: "U32",
  u8: "U64",
  b1: "BOOL",
};

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function fixture(name: string): Promise<Uint8Array> {
  return await Deno.readFile(new URL(name, DATA));
}

async function open(name: string): Promise<ModelFile> {
  const src = memorySource(await fixture(name), name);
  return name.endsWith(".npz") ? await readNpz(src) : await readNpy(src);
}

function modelOf(tensors: Tensor[]): ModelFile {
  return {
    models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex(tensors) }],
  };
}

function raw(
  name: string,
  dtype: DTypeName,
  shape: number[],
  bytes: number[] | Uint8Array,
): Tensor {
  return { name, dtype, shape, bytes: Uint8Array.from(bytes) };
}

/** One tensor of each NumPy dtype, with edge values. */
function everyDtype(): Tensor[] {
  const v = Float32Array.from([
    0,
    -0,
    1.5,
    -2.25,
    Infinity,
    -Infinity,
    NaN,
    1e-3,
  ]);
  const f = (d: DTypeName) => ({
    name: `t_${d.toLowerCase()}`,
    dtype: d,
    shape: [2, 4],
    bytes: encodeFromF32(d, v),
  });
  const ints = (
    d: DTypeName,
    arr: ArrayLike<number | bigint> & { buffer: ArrayBufferLike },
  ) => ({
    name: `t_${d.toLowerCase()}`,
    dtype: d,
    shape: [arr.length],
    bytes: new Uint8Array(arr.buffer),
  });
  return [
    f("F16"),
    f("F32"),
    {
      ...f("F32"),
      name: "t_f64",
      dtype: "F64",
      bytes: new Uint8Array(Float64Array.from(v).buffer),
    },
    ints("I8", Int8Array.of(0, 1, 127, -128)),
    ints("I16", Int16Array.of(0, -1, 32767, -32768)),
    ints("I32", Int32Array.of(0, -1, 2147483647, -2147483648)),
    ints(
      "I64",
      BigInt64Array.of(0n, -1n, 9223372036854775807n, -9223372036854775808n),
    ),
    ints("U8", Uint8Array.of(0, 1, 255)),
    ints("U16", Uint16Array.of(0, 65535)),
    ints("U32", Uint32Array.of(0, 4294967295)),
    ints("U64", BigUint64Array.of(0n, 18446744073709551615n)),
    raw("t_bool", "BOOL", [5], [1, 0, 0, 1, 1]),
  ];
}

Deno.test("npy: every NumPy fixture reads as NumPy reads it", async () => {
  let checked = 0;
  for (const [name, exp] of Object.entries(EXPECTED)) {
    if (!exp.arrays) continue;
    const file = await open(name);
    assertEquals(file.models.length, 1);
    const m = file.models[0];
    assertEquals(
      [...m.tensors.names()].sort(),
      Object.keys(exp.arrays).sort(),
      name,
    );
    for (const [tname, a] of Object.entries(exp.arrays)) {
      const t = await m.tensors.load(tname);
      assertEquals(
        t.dtype,
        DTYPE_OF[a.dtype.slice(1)],
        `${name}:${tname} dtype`,
      );
      assertEquals(t.shape, a.shape, `${name}:${tname} shape`);
      assertEquals(hex(t.bytes), a.hex, `${name}:${tname} bytes`);
      checked++;
    }
  }
  assertEquals(checked, 33);
});

Deno.test("npy: the writer gives np.save's bytes for every little-endian C-order fixture", async () => {
  const names = Object.keys(EXPECTED).filter((n) =>
    /^(dtype_|scalar_|empty_)/.test(n)
  );
  assertEquals(names.length, 14);
  for (const name of names) {
    const bytes = await fixture(name);
    const t = await (await open(name)).models[0].tensors.load("arr_0");
    assertEquals(hex(encodeNpy(t)), hex(bytes), name);
  }
});

Deno.test("npy: big-endian data is swapped and Fortran-order data transposed", async () => {
  const be = await (await open("big_endian_f4.npy")).models[0].tensors.load(
    "arr_0",
  );
  assertEquals(Array.from(toFloat32(be).subarray(0, 4)), [0, -0, 1.5, -2.25]);
  const f = await open("fortran_i4.npy");
  assertEquals(f.models[0].metadata["npy.fortran_order"], true);
  const t = await f.models[0].tensors.load("arr_0");
  // np.arange(24).reshape(2, 3, 4) in C order is 0, 1, 2, ...
  assertEquals(
    Array.from(toFloat32(t)),
    Array.from({ length: 24 }, (_, i) => i),
  );
  // Only plain arrays report a byte offset (readable in place).
  assertEquals(f.models[0].tensors.info("arr_0").byteOffset, undefined);
  assertEquals(
    (await open("dtype_f4.npy")).models[0].tensors.info("arr_0").byteOffset,
    128,
  );
});

Deno.test("npy: NumPy types without a modelhost dtype and zip64 archives are refused", async () => {
  for (const [name, exp] of Object.entries(EXPECTED)) {
    if (!exp.refused) continue;
    if (exp.refused === "zip64") {
      await assertRejects(
        () => open(name),
        RangeError,
        "zip64 archives are not supported",
      );
      continue;
    }
    const err = await assertRejects(() => open(name), UnsupportedDTypeError);
    assertEquals(err.dtype, exp.refused, name);
  }
  await assertRejects(
    () => open("unsupported_c8.npy"),
    UnsupportedDTypeError,
    'NumPy type "<c8" has no modelhost dtype',
  );
});

Deno.test("npy: detect tells .npy and .npz from other files", async () => {
  assert(detectNpy(await fixture("dtype_f4.npy")));
  assert(!detectNpy(await fixture("savez.npz")));
  assert(detectNpz((await fixture("savez.npz")).subarray(0, 64)));
  assert(detectNpz((await fixture("savez_compressed.npz")).subarray(0, 64)));
  assert(!detectNpz(await fixture("dtype_f4.npy")));
  // A PyTorch checkpoint is a zip too; its first entry is not an array.
  const torchLike = await collectBytes(
    writeNpz(
      modelOf([tensorFromF32("archive/data.pkl", new Float32Array(1), [1])]),
    ),
  );
  torchLike.set(
    new TextEncoder().encode("pkl"),
    30 + "archive/data.pkl.npy".length - 3,
  );
  assert(!detectNpz(torchLike.subarray(0, 64)));
  const reg = createRegistry().use(plugins);
  assertEquals(reg.formatForPath("x.npz").name, "npz");
  assertEquals(reg.detect(await fixture("dtype_i8.npy"))?.name, "npy");
});

Deno.test("npy: round trips keep every dtype byte for byte", async () => {
  for (const t of everyDtype()) {
    const one = modelOf([{ ...t, name: "arr_0" }]);
    await assertFormatRoundTrip(npyFormat(), one, { metadata: "ignore" });
  }
  const all = modelOf(everyDtype());
  await assertFormatRoundTrip(npzFormat(), all, { metadata: "ignore" });
  const { bytes } = await assertFormatRoundTrip(npzFormat(), all, {
    metadata: "ignore",
    write: { compress: true },
  });
  const stored = await collectBytes(npzFormat().write!(all));
  assert(bytes.byteLength < stored.byteLength, "deflate made it smaller");
  // 1 MiB of zeros deflates to about 1 KiB: the reader's buffer grows past
  // its first guess.
  const zeros = modelOf([
    tensorFromF32("z", new Float32Array(1 << 18), [512, 512]),
  ]);
  const small = await assertFormatRoundTrip(npzFormat(), zeros, {
    metadata: "ignore",
    write: { compress: true },
  });
  assert(small.bytes.byteLength < 4096, String(small.bytes.byteLength));
});

Deno.test("npy: dtypes NumPy lacks are widened to float32, or refused with strictDtypes", async () => {
  const v = Float32Array.from([1.5, -2, 0.25, 3]);
  const tensors: Tensor[] = [
    {
      name: "bf16",
      dtype: "BF16",
      shape: [4],
      bytes: encodeFromF32("BF16", v),
    },
    { ...raw("q", "I8", [4], [2, 254, 10, 0]), quant: { scale: 0.5 } },
  ];
  const back = await assertFormatRoundTrip(npzFormat(), modelOf(tensors), {
    metadata: "ignore",
    dtypes: { bf16: "F32", q: "F32" },
  });
  const loaded = back.file.models[0].tensors;
  assertEquals(Array.from(toFloat32(await loaded.load("q"))), [1, -1, 5, 0]);
  assertEquals(Array.from(toFloat32(await loaded.load("bf16"))), Array.from(v));
  await assertRejects(
    () =>
      collectBytes(
        npzFormat().write!(modelOf(tensors), { strictDtypes: true }),
      ),
    UnsupportedDTypeError,
    'tensor "bf16" has a dtype NumPy lacks',
  );
});

Deno.test("npy: writers refuse what the format cannot hold", async () => {
  const two = modelOf([
    tensorFromF32("a", new Float32Array(1), [1]),
    tensorFromF32("b", new Float32Array(1), [1]),
  ]);
  await assertRejects(
    () => npyFormat().write!(two) as Promise<Uint8Array>,
    TypeError,
    'it holds one array, model "m" has 2 tensors (a, b)',
  );
  const twoModels: ModelFile = {
    models: [two.models[0], { ...two.models[0], id: "n" }],
  };
  await assertRejects(
    () => collectBytes(writeNpz(twoModels)),
    TypeError,
    "the file has 2 (m, n)",
  );
  for (const bad of ["../evil", "/abs", "a//b", "a\\b"]) {
    await assertRejects(
      () =>
        collectBytes(
          writeNpz(modelOf([tensorFromF32(bad, new Float32Array(1), [1])])),
        ),
      TypeError,
      "must be a relative path",
    );
  }
  await assertRejects(
    () =>
      npyFormat().write!(
        modelOf([raw("arr_0", "F32", [3], [0, 0, 0, 0])]),
      ) as Promise<Uint8Array>,
    RangeError,
    "needs 12 bytes, it has 4",
  );
});

Deno.test("npz: CRC-32 gives the standard check values, in pieces too", () => {
  const enc = new TextEncoder();
  // The check value of the CRC-32/ISO-HDLC catalogue entry, and zlib.crc32.
  assertEquals(crc32(enc.encode("123456789")), 0xcbf43926);
  const fox = enc.encode("The quick brown fox jumps over the lazy dog");
  assertEquals(crc32(fox), 0x414fa339);
  assertEquals(crc32(fox.subarray(13), crc32(fox.subarray(0, 13))), 0x414fa339);
  assertEquals(crc32(new Uint8Array()), 0);
});

// ---------------------------------------------------------------------------
// Hostile input: hand-made cases with their messages, then seeded mutations.

function npyWithHeader(text: string, data = new Uint8Array()): Uint8Array {
  const h = new TextEncoder().encode(text);
  const out = new Uint8Array(10 + h.byteLength + data.byteLength);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  new DataView(out.buffer).setUint16(8, h.byteLength, true);
  out.set(h, 10);
  out.set(data, 10 + h.byteLength);
  return out;
}

const readBytes = (b: Uint8Array) => readNpy(memorySource(b, "bad.npy"));
const readZip = (b: Uint8Array) => readNpz(memorySource(b, "bad.npz"));

Deno.test("npy: malformed headers give typed errors naming the problem", async () => {
  const cases: [string, new (...a: never[]) => Error, string][] = [
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ",
      SyntaxError,
      "unexpected end",
    ],
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,), }",
      SyntaxError,
      "found a float",
    ],
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x",
      SyntaxError,
      "unexpected text after the header dict",
    ],
    [
      "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
      SyntaxError,
      "duplicate key 'descr'",
    ],
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': " + "(".repeat(40),
      SyntaxError,
      "nesting deeper than 16",
    ],
    ["[1, 2]", TypeError, "the .npy header is [1, 2], expected a dict"],
    ["{'descr': '<f4', 'fortran_order': False}", TypeError, "lacks 'shape'"],
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
      TypeError,
      "unexpected key 'x'",
    ],
    [
      "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}",
      TypeError,
      "'fortran_order' is 0, expected True or False",
    ],
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': [2]}",
      TypeError,
      "'shape' is [2], expected a tuple",
    ],
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': ('2',)}",
      TypeError,
      "dimension 0 of 'shape' is '2'",
    ],
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
      RangeError,
      "dimension 0 is -2",
    ],
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
      RangeError,
      "beyond 2^53-1",
    ],
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + "1, ".repeat(65) +
      ")}",
      RangeError,
      "65 dimensions, more than 64",
    ],
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4194304, 4194304, 4194304)}",
      RangeError,
      "overflows 2^53-1",
    ],
    [
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
      RangeError,
      "needs 8 bytes at offset",
    ],
    [
      "{'descr': '<f3', 'fortran_order': False, 'shape': (2,)}",
      UnsupportedDTypeError,
      '"<f3"',
    ],
  ];
  for (const [text, cls, msg] of cases) {
    await assertRejects(() => readBytes(npyWithHeader(text)), cls, msg);
  }
  const ok = npyWithHeader(
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
    new Uint8Array(8),
  );
  assertEquals((await readBytes(ok)).models[0].tensors.info("arr_0").shape, [
    2,
  ]);
  const trailing = new Uint8Array(ok.byteLength + 3);
  trailing.set(ok);
  await assertRejects(
    () => readBytes(trailing),
    RangeError,
    "the file has 11 there",
  );
  await assertRejects(
    () => readBytes(new Uint8Array(5)),
    RangeError,
    "5 bytes is too few",
  );
  await assertRejects(
    () => readBytes(new Uint8Array(10)),
    SyntaxError,
    "not a NumPy .npy file",
  );
  const v4 = ok.slice();
  v4[6] = 4;
  await assertRejects(
    () => readBytes(v4),
    SyntaxError,
    ".npy version 4.0 is not supported",
  );
  const huge = ok.slice();
  huge[6] = 2;
  new DataView(huge.buffer).setUint32(8, 0x7fffffff, true);
  await assertRejects(
    () => readBytes(huge),
    RangeError,
    "more than the 1048576-byte limit",
  );
});

Deno.test("npz: damaged archives give typed errors naming the entry", async () => {
  const stored = await fixture("savez.npz");
  const deflated = await fixture("savez_compressed.npz");
  // A flipped data byte in a stored entry: the CRC catches it on load.
  const flipped = stored.slice();
  flipped[findCentral(stored)[0].dataOffset + 128 + 5] ^= 0x40;
  const file = await readZip(flipped);
  await assertRejects(
    () => file.models[0].tensors.load("layers.0.weight"),
    SyntaxError,
    'entry "layers.0.weight.npy" of bad.npz: CRC-32 mismatch',
  );
  // A corrupt deflate stream.
  const entries = findCentral(deflated);
  const big = entries.find((e) => e.name === "big.npy")!;
  const broken = deflated.slice();
  broken.fill(0xff, big.dataOffset + 40, big.dataOffset + 60);
  await assertRejects(
    () => readZip(broken),
    SyntaxError,
    'Cannot inflate entry "big.npy" of bad.npz',
  );
  // An entry claiming more than deflate can expand to.
  const bomb = deflated.slice();
  new DataView(bomb.buffer).setUint32(
    big.central + 24,
    big.compressed * 2000,
    true,
  );
  await assertRejects(
    () => readZip(bomb),
    RangeError,
    "more than deflate's 1032:1 can expand",
  );
  // An unsupported method, encryption, a bad end record, truncation.
  const bzip = stored.slice();
  new DataView(bzip.buffer).setUint16(
    findCentral(stored)[0].central + 10,
    12,
    true,
  );
  await assertRejects(
    () => readZip(bzip),
    TypeError,
    "compression method 12 is not supported",
  );
  const locked = stored.slice();
  locked[findCentral(stored)[0].central + 8] |= 1;
  await assertRejects(() => readZip(locked), TypeError, "it is encrypted");
  await assertRejects(
    () => readZip(stored.subarray(0, stored.byteLength - 1)),
    SyntaxError,
    "no zip end-of-central-directory record",
  );
  await assertRejects(
    () => readZip(new Uint8Array(4)),
    RangeError,
    "too small for a zip archive",
  );
  // Two directory entries pointing at the same local header overlap.
  const twice = stored.slice();
  const es = findCentral(stored);
  new DataView(twice.buffer).setUint32(es[1].central + 42, es[0].local, true);
  await assertRejects(
    () => readZip(twice),
    SyntaxError,
    "its local header names it",
  );
});

/** Central directory entries of an archive, parsed independently of the reader. */
function findCentral(zip: Uint8Array) {
  const v = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const end = zip.byteLength - 22;
  assertEquals(v.getUint32(end, true), 0x06054b50);
  let at = v.getUint32(end + 16, true);
  const out = [];
  for (let i = 0; i < v.getUint16(end + 10, true); i++) {
    const n = v.getUint16(at + 28, true);
    const local = v.getUint32(at + 42, true);
    out.push({
      central: at,
      local,
      compressed: v.getUint32(at + 20, true),
      name: new TextDecoder().decode(zip.subarray(at + 46, at + 46 + n)),
      dataOffset: local + 30 + v.getUint16(local + 26, true) +
        v.getUint16(local + 28, true),
    });
    at += 46 + n + v.getUint16(at + 30, true) + v.getUint16(at + 32, true);
  }
  return out;
}

Deno.test("npy: seeded truncations and bit flips read or throw typed errors", async () => {
  for (
    const [name, plugin] of [
      ["dtype_f4.npy", npyFormat()],
      ["fortran_f8.npy", npyFormat()],
      ["version_3_0.npy", npyFormat()],
      ["savez.npz", npzFormat()],
      ["savez_compressed.npz", npzFormat()],
    ] as const
  ) {
    const report = await assertHostileInputs(plugin, await fixture(name), {
      seed: 11,
      mutations: 500,
    });
    assert(report.cases > 500 && Object.keys(report.refused).length > 0, name);
  }
});

// ---------------------------------------------------------------------------
// NumPy reads what we write.

async function hasNumpy(): Promise<boolean> {
  try {
    const { code } = await new Deno.Command("/usr/bin/python3", {
      args: ["-c", "import numpy"],
      stdout: "null",
      stderr: "null",
    }).output();
    return code === 0;
  } catch {
    return false;
  }
}

Deno.test({
  name:
    "npy: NumPy loads our .npy and .npz files (stored and deflated) to the same values",
  ignore: !(await hasNumpy()),
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const tensors = everyDtype();
      const file = modelOf(tensors);
      await Deno.writeFile(`${dir}/s.npz`, await collectBytes(writeNpz(file)));
      await Deno.writeFile(
        `${dir}/c.npz`,
        await collectBytes(writeNpz(file, { compress: true })),
      );
      await Deno.writeFile(`${dir}/one.npy`, encodeNpy(tensors[5]));
      const script = `
import json, sys, numpy as np
out = {}
for name in ["s.npz", "c.npz"]:
    with np.load(sys.argv[1] + "/" + name) as z:
        out[name] = {k: [z[k].dtype.str, list(z[k].shape), z[k].astype(z[k].dtype.newbyteorder("<")).tobytes().hex()] for k in z.files}
a = np.load(sys.argv[1] + "/one.npy")
out["one.npy"] = {"arr_0": [a.dtype.str, list(a.shape), a.tobytes().hex()]}
print(json.dumps(out))
`;
      const res = await new Deno.Command("/usr/bin/python3", {
        args: ["-c", script, dir],
      }).output();
      assertEquals(res.code, 0, new TextDecoder().decode(res.stderr));
      const seen = JSON.parse(new TextDecoder().decode(res.stdout));
      const want = Object.fromEntries(
        tensors.map((t) => [t.name, [t.dtype, t.shape, hex(t.bytes)]]),
      );
      for (const name of ["s.npz", "c.npz"]) {
        const got = Object.fromEntries(
          Object.entries(
            seen[name] as Record<string, [string, number[], string]>,
          )
            .map(([k, [d, s, h]]) => [k, [DTYPE_OF[d.slice(1)], s, h]]),
        );
        assertEquals(got, want, name);
      }
      assertEquals(seen["one.npy"].arr_0[0], "<i4");
      assertEquals(seen["one.npy"].arr_0[2], hex(tensors[5].bytes));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
