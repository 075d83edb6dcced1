import { assertEquals, assertRejects, assertThrows } from "@std/assert";
import { decodeHex } from "@std/encoding";
import {
  type GgufArray,
  ggufFormat,
  GgufType,
  type GgufValue,
  ggufValue,
  parseGgufHeader,
  readGguf,
  readGgufHeader,
} from "../../formats/gguf/mod.ts";
import { memorySource } from "../../core/sources.ts";
import type { ByteSource } from "../../core/sources.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import { Bytes } from "./_gguf_builder.ts";

const VEC = `${REPO_ROOT}/tests/vectors`;

/** Expected values from the generator: bigints as {bigint: "..."}, arrays as {type, items}. */
function fromExpected(v: unknown): GgufValue {
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if ("bigint" in o) return BigInt(o.bigint as string);
    return {
      type: o.type as GgufType,
      items: (o.items as unknown[]).map(fromExpected),
    };
  }
  return v as GgufValue;
}

/** A source that records which ranges were read. */
function countingSource(
  bytes: Uint8Array,
): ByteSource & { reads: [number, number][] } {
  const inner = memorySource(bytes, "counted.gguf");
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

Deno.test("gguf reader: every metadata type, nested arrays, alignment and tensors of a Python-built file", async () => {
  const bytes = await Deno.readFile(`${VEC}/gguf_all_types.gguf`);
  const exp = JSON.parse(await Deno.readTextFile(`${VEC}/gguf_all_types.json`));
  const h = await readGgufHeader(memorySource(bytes, "all_types.gguf"));
  assertEquals(h.version, 3);
  assertEquals(h.alignment, exp.alignment);
  assertEquals(h.dataOffset, exp.data_offset);
  assertEquals(
    h.metadata.map((m) => ({ key: m.key, type: m.type, value: m.value })),
    exp.metadata.map((m: { key: string; type: GgufType; value: unknown }) => ({
      key: m.key,
      type: m.type,
      value: fromExpected(m.value),
    })),
  );
  for (let i = 0; i < exp.tensors.length; i++) {
    const e = exp.tensors[i];
    const t = h.tensors[i];
    assertEquals([t.name, t.dims, t.ggmlType, t.offset], [
      e.name,
      e.dims,
      e.ggml_type,
      e.offset,
    ]);
    assertEquals(t.shape, e.dims.slice().reverse());
  }
  const file = await readGguf(memorySource(bytes));
  const m = file.models[0];
  assertEquals(m.tensors.info("a.weight").shape, [2, 3]);
  assertEquals(m.tensors.info("q.weight").dtype, "Q8_0");
  assertEquals(
    (await m.tensors.load("q.weight")).bytes,
    decodeHex(exp.tensors[1].hex),
  );
  assertEquals(m.metadata["test.u64"], 18446744073709551615n);
  assertEquals(m.metadata["test.arr_nested"], [[1, 2], ["x"], [[-3]]]);
  const types = m.metadata["gguf.types"] as Record<string, string>;
  assertEquals(
    [types["test.u8"], types["test.arr_str"], types["test.arr_nested"]],
    [
      "UINT8",
      "ARRAY<STRING>",
      "ARRAY<ARRAY<UINT8>|ARRAY<STRING>|ARRAY<ARRAY<INT16>>>",
    ],
  );
  assertEquals(ggufValue(h, "test.arr_str"), ["a", "", "Ġthe", "日本", "🙂"]);
});

Deno.test("gguf reader: small windows give the same header and stop near the header's end", async () => {
  // The Python-built file followed by 4 MiB of tensor data that must not be read.
  const head = await Deno.readFile(`${VEC}/gguf_all_types.gguf`);
  const bytes = new Uint8Array(head.length + 4 * 1024 * 1024);
  bytes.set(head);
  const whole = parseGgufHeader(head, "all_types.gguf");
  for (const initialRead of [1, 7, 24, 100, 333]) {
    const src = countingSource(bytes);
    const h = await readGgufHeader(src, { initialRead });
    assertEquals(h.metadata, whole.metadata);
    assertEquals(h.tensors, whole.tensors);
    const end = Math.max(...src.reads.map(([off, len]) => off + len));
    if (end > h.dataOffset + 64 * 1024) {
      throw new Error(
        `read up to ${end}, far past the header end ${h.dataOffset}`,
      );
    }
  }
});

Deno.test("gguf reader: a string array split across windows decodes the same (invalid UTF-8 → U+FFFD)", async () => {
  const items = ["Ġa", "b\u00e9", "\u{1F642}", "plain", ""];
  const b = new Bytes().head(3, 0, 1).str("v").u32(GgufType.ARRAY).u32(
    GgufType.STRING,
  ).u64(items.length + 1);
  for (const s of items) b.str(s);
  b.u64(3).raw([0x61, 0xff, 0x62]); // "a", invalid byte, "b"
  const bytes = b.bytes();
  for (const initialRead of [30, 45, 1 << 20]) {
    const h = await readGgufHeader(memorySource(bytes), { initialRead });
    assertEquals((h.metadata[0].value as GgufArray).items, [
      ...items,
      "a\uFFFDb",
    ]);
  }
});

Deno.test("gguf reader: version 1, version 4, big-endian and bad magic are refused", () => {
  const v1 = new Bytes().raw([0x47, 0x47, 0x55, 0x46]).u32(1).u32(0).u32(0)
    .bytes();
  assertThrows(
    () => parseGgufHeader(v1, "old.gguf"),
    SyntaxError,
    "old.gguf: GGUF version 1",
  );
  const v4 = new Bytes().head(4, 0, 0).bytes();
  assertThrows(
    () => parseGgufHeader(v4),
    SyntaxError,
    "unsupported GGUF version 4",
  );
  const be = new Bytes().raw([0x47, 0x47, 0x55, 0x46, 0, 0, 0, 3]).u64(0).u64(0)
    .bytes();
  assertThrows(
    () => parseGgufHeader(be),
    SyntaxError,
    "big-endian GGUF (version 3",
  );
  const bad = new Bytes().raw([0x50, 0x4b, 3, 4]).u32(3).u64(0).u64(0).bytes();
  assertThrows(
    () => parseGgufHeader(bad),
    SyntaxError,
    "the magic is 50 4b 03 04",
  );
  assertThrows(
    () => parseGgufHeader(new Uint8Array(2)),
    SyntaxError,
    "too few",
  );
});

Deno.test("gguf reader: absurd counts and lengths are RangeErrors before any allocation", () => {
  const t = (b: Bytes, msg: string) =>
    assertThrows(() => parseGgufHeader(b.bytes(), "h.gguf"), RangeError, msg);
  t(
    new Bytes().head(3, 1e15, 0),
    "declares 1000000000000000 tensor infos, which need at least 24000000000000000 bytes; the file has 0 left",
  );
  t(new Bytes().head(3, 0, 2 ** 40), "declares 1099511627776 metadata pairs");
  t(
    new Bytes().head(3, 2n ** 63n, 0),
    "the tensor count at offset 8 is 9223372036854775808, past 2^53-1",
  );
  t(
    new Bytes().head(3, 0, 1).u64(70000).raw(new Uint8Array(8)),
    "the key of metadata pair 0 at offset 24 is 70000 bytes long, the limit is 65535",
  );
  t(
    new Bytes().head(3, 0, 1).str("k").u32(GgufType.STRING).u64(1000).raw([
      1,
      2,
    ]),
    'metadata "k" needs 1000 bytes at offset 45, the file has 2 left',
  );
  t(
    new Bytes().head(3, 0, 1).str("k").u32(GgufType.ARRAY).u32(GgufType.UINT32)
      .u64(1e9),
    'metadata "k" at offset 37 declares 1000000000 UINT32 items, which need at least 4000000000 bytes; the file has 0 left',
  );
  t(
    new Bytes().head(3, 0, 1).str("k").u32(GgufType.ARRAY).u32(GgufType.STRING)
      .u64(2).u64(1).raw([0x61]).u64(2n ** 40n),
    'metadata "k" item 1 at offset 58 is 1099511627776 bytes long',
  );
  // Nested arrays 9 deep.
  const deep = new Bytes().head(3, 0, 1).str("k").u32(GgufType.ARRAY);
  for (let i = 0; i < 9; i++) deep.u32(GgufType.ARRAY).u64(1);
  deep.u32(GgufType.UINT8).u64(0);
  t(deep, "nests arrays 9 deep, the limit is 8");
  // Truncated inside a value.
  t(
    new Bytes().head(3, 0, 1).str("k").u32(GgufType.UINT64).raw([1, 2, 3]),
    'metadata "k" needs 8 bytes at offset 37, the file has 3 left',
  );
});

Deno.test("gguf reader: unknown value types, duplicate keys and bad alignment are refused", () => {
  assertThrows(
    () =>
      parseGgufHeader(
        new Bytes().head(3, 0, 1).str("k").u32(13).u32(0).bytes(),
      ),
    SyntaxError,
    'metadata "k" at offset 24 has unknown value type 13',
  );
  assertThrows(
    () =>
      parseGgufHeader(
        new Bytes().head(3, 0, 1).str("k").u32(9).u32(77).u64(0).bytes(),
      ),
    SyntaxError,
    "unknown element type 77",
  );
  const dup = new Bytes().head(3, 0, 2).str("k").u32(GgufType.UINT8).u8(1).str(
    "k",
  ).u32(GgufType.UINT8).u8(2);
  assertThrows(
    () => parseGgufHeader(dup.bytes()),
    SyntaxError,
    'duplicate metadata key "k" at offset 38',
  );
  const align = (type: number, v: number) =>
    new Bytes().head(3, 0, 1).str("general.alignment").u32(type).u32(v).bytes();
  assertThrows(
    () => parseGgufHeader(align(GgufType.UINT32, 24)),
    RangeError,
    "general.alignment is 24; it must be a power of two",
  );
  assertThrows(
    () => parseGgufHeader(align(GgufType.UINT32, 0)),
    RangeError,
    "general.alignment is 0",
  );
  assertThrows(
    () => parseGgufHeader(align(GgufType.INT32, 64)),
    TypeError,
    "general.alignment at offset 24 is INT32",
  );
  assertEquals(parseGgufHeader(align(GgufType.UINT32, 64)).alignment, 64);
});

Deno.test("gguf reader: tensor infos: dims, types, offsets, overlap, alignment, truncation", () => {
  const one = (
    dims: number[],
    type: number,
    offset: number,
    dataBytes: number,
  ) => {
    const b = new Bytes().head(3, 1, 0).tensor("t", dims, type, offset).pad(32);
    for (let i = 0; i < dataBytes; i++) b.u8(0);
    return b.bytes();
  };
  assertThrows(
    () => parseGgufHeader(one([1, 1, 1, 1, 1], 0, 0, 4)),
    RangeError,
    'tensor "t" at offset 24 has 5 dimensions, the limit is 4',
  );
  assertThrows(
    () => parseGgufHeader(one([2 ** 30, 2 ** 30, 2 ** 30], 0, 0, 0)),
    RangeError,
    "whose element count overflows 2^53-1",
  );
  assertThrows(
    () => parseGgufHeader(one([3], 0, 0, 8)),
    RangeError,
    'tensor "t" needs 12 bytes at offset 64, the file has 8 left',
  );
  assertThrows(
    () => parseGgufHeader(one([3], 0, 16, 64)),
    RangeError,
    'tensor "t" has data offset 16, not a multiple of the alignment 32',
  );
  assertThrows(
    () => parseGgufHeader(one([48], 2, 0, 64)),
    RangeError,
    'tensor "t" is Q4_0 with rows of 48 elements, not a multiple of its block size 32',
  );
  assertThrows(
    () => parseGgufHeader(one([4], 5, 0, 64)),
    UnsupportedDTypeError,
    'ggml type 5: tensor "t"',
  );
  assertEquals(
    parseGgufHeader(one([256, 2], 16, 0, 132)).tensors[0].dtype,
    "IQ2_XXS",
  );
  const two = new Bytes().head(3, 2, 0).tensor("a", [16], 0, 0).tensor(
    "b",
    [4],
    0,
    32,
  ).pad(32).raw(new Uint8Array(96));
  assertThrows(
    () => parseGgufHeader(two.bytes()),
    RangeError,
    'tensors "a" (bytes 0..64) and "b" (from 32) overlap',
  );
  const dupT = new Bytes().head(3, 2, 0).tensor("a", [4], 0, 0).tensor(
    "a",
    [4],
    0,
    32,
  ).pad(32).raw(new Uint8Array(64));
  assertThrows(
    () => parseGgufHeader(dupT.bytes()),
    SyntaxError,
    'duplicate tensor name "a"',
  );
  const h = parseGgufHeader(one([3, 2], 0, 0, 24));
  assertEquals([
    h.tensors[0].dims,
    h.tensors[0].shape,
    h.tensors[0].byteLength,
    h.dataOffset,
  ], [[3, 2], [2, 3], 24, 96]);
});

Deno.test("gguf plugin: detect by magic, extension, read through the registry contract", async () => {
  const gguf = ggufFormat();
  assertEquals(gguf.detect!(new TextEncoder().encode("GGUF")), true);
  assertEquals(gguf.detect!(new TextEncoder().encode("GGU")), false);
  assertEquals(gguf.extensions, [".gguf"]);
  const bytes = await Deno.readFile(`${VEC}/gguf_all_types.gguf`);
  const file = await gguf.read!(memorySource(bytes));
  assertEquals(file.format, "gguf");
  assertEquals(file.models[0].tensors.names(), ["a.weight", "q.weight"]);
  await assertRejects(
    () => file.models[0].tensors.load("nope"),
    RangeError,
    'No tensor named "nope"',
  );
});

Deno.test("gguf reader: 3000 seeded mutations and truncations of a valid file give typed errors only", async () => {
  const { createRng } = await import("../../core/rng.ts");
  const original = await Deno.readFile(`${VEC}/gguf_all_types.gguf`);
  const rng = createRng(20240611);
  const allowed = [RangeError, TypeError, SyntaxError];
  let parsed = 0;
  for (let k = 0; k < 3000; k++) {
    let bytes = original.slice();
    if (k % 3 === 0) {
      bytes = bytes.slice(0, rng.int(bytes.length));
    } else {
      const flips = 1 + rng.int(4);
      for (let f = 0; f < flips; f++) {
        // Bias toward the header, where the counts and lengths are.
        const at = rng.int(k % 2 ? 1344 : 64);
        bytes[at] = k % 5 === 0 ? 0xff : rng.int(256);
      }
    }
    try {
      const file = await readGguf(memorySource(bytes, `fuzz-${k}.gguf`));
      for (const name of file.models[0].tensors.names()) {
        await file.models[0].tensors.load(name);
      }
      parsed++;
    } catch (e) {
      if (!allowed.some((c) => e instanceof c)) throw e;
      // Messages name the file.
      if (
        !(e as Error).message.includes(`fuzz-${k}.gguf`) &&
        !(e instanceof UnsupportedDTypeError)
      ) {
        throw new Error(`error without the file name: ${(e as Error).message}`);
      }
    }
  }
  if (parsed === 0 || parsed === 3000) {
    throw new Error(`parsed ${parsed} of 3000`);
  }
});

Deno.test("gguf reader over HTTP ranges: the header and one tensor travel, the rest of the file does not", async () => {
  // The Python-built file, then 8 MiB of a third tensor we never load.
  const head = await Deno.readFile(`${VEC}/gguf_all_types.gguf`);
  const data = new Uint8Array(head.length + 8 * 1024 * 1024);
  data.set(head);
  const ac = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen() {},
  }, (req) => {
    if (req.method === "HEAD") {
      return new Response(null, {
        headers: { "content-length": String(data.length) },
      });
    }
    const m = req.headers.get("range")!.match(/^bytes=(\d+)-(\d+)$/)!;
    const start = Number(m[1]);
    const end = Math.min(Number(m[2]), data.length - 1);
    return new Response(data.slice(start, end + 1), {
      status: 206,
      headers: { "content-range": `bytes ${start}-${end}/${data.length}` },
    });
  });
  try {
    const { httpSource } = await import("../../core/sources.ts");
    const src = await httpSource(`http://127.0.0.1:${server.addr.port}/m.gguf`);
    const file = await readGguf(src, { initialRead: 4096 });
    const t = await file.models[0].tensors.load("q.weight");
    assertEquals(t.bytes.length, 34);
    if (src.bytesTransferred > 4096 + 34) {
      throw new Error(
        `transferred ${src.bytesTransferred} bytes of ${data.length}`,
      );
    }
  } finally {
    ac.abort();
    await server.finished;
  }
});
