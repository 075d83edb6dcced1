import { assertEquals, assertThrows } from "@std/assert";
import { decodeVarint, encodeVarint } from "@std/encoding";
import { ProtoWriter, writeVarint } from "../../formats/onnx/_protobuf.ts";

const hex = (b: Uint8Array) =>
  Array.from(b, (x) => x.toString(16).padStart(2, "0")).join(" ");

Deno.test("protobuf: hand-encoded fields (protobuf encoding guide examples)", () => {
  // Field 1 = 150 → 08 96 01; field 2 = "testing" → 12 07 74 65 73 74 69 6e 67.
  assertEquals(hex(new ProtoWriter().int(1, 150).finish()), "08 96 01");
  assertEquals(
    hex(new ProtoWriter().string(2, "testing").finish()),
    "12 07 74 65 73 74 69 6e 67",
  );
  // Nested: field 3 holding {1: 150} → 1a 03 08 96 01.
  assertEquals(
    hex(new ProtoWriter().message(3, new ProtoWriter().int(1, 150)).finish()),
    "1a 03 08 96 01",
  );
  // int64 −1: ten bytes of two's complement.
  assertEquals(
    hex(new ProtoWriter().int(1, -1).finish()),
    "08 ff ff ff ff ff ff ff ff ff 01",
  );
  // float 1.0 (fixed32, wire type 5): 15 00 00 80 3f.
  assertEquals(hex(new ProtoWriter().float(2, 1).finish()), "15 00 00 80 3f");
  // packed [3, 270, 86942] in field 4 → 22 06 03 8e 02 9e a7 05.
  assertEquals(
    hex(new ProtoWriter().packedInts(4, [3, 270, 86942]).finish()),
    "22 06 03 8e 02 9e a7 05",
  );
  assertThrows(() => new ProtoWriter().int(1, 0.5), RangeError, "0.5");
});

Deno.test("protobuf: varints agree with @std/encoding from 0 to 2^53 − 1", () => {
  const buf = new Uint8Array(10);
  const values = [
    0,
    1,
    127,
    128,
    255,
    16383,
    16384,
    2 ** 31 - 1,
    2 ** 31,
    2 ** 32,
    2 ** 35 + 7,
    2 ** 53 - 1,
  ];
  for (let v = 1; v < 2 ** 53; v = v * 3 + 1) values.push(v);
  for (const v of values) {
    const n = writeVarint(buf, 0, v);
    assertEquals(buf.slice(0, n), encodeVarint(BigInt(v))[0], `${v}`);
    assertEquals(decodeVarint(buf.slice(0, n)), [BigInt(v), n]);
  }
});

Deno.test("protobuf: large bytes fields are kept by reference until finish", () => {
  const big = new Uint8Array(1000).fill(7);
  const w = new ProtoWriter().int(1, 5).bytes(9, big).int(2, 6);
  const chunks = w.chunks();
  assertEquals(chunks.some((c) => c === big), true);
  const all = w.finish();
  assertEquals(all.length, 2 + 3 + 1000 + 2);
  assertEquals(hex(all.subarray(0, 5)), "08 05 4a e8 07");
  assertEquals(all[5 + 999], 7);
  assertEquals(hex(all.subarray(1005)), "10 06");
});
