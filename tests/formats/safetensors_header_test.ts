// SafeTensors header validation: one case per rule, with its error class and
// message (the rules of formats/safetensors/mod.ts).

import { assertEquals, assertInstanceOf, assertRejects } from "@std/assert";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { entry, read, stFile } from "./_safetensors.ts";

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
