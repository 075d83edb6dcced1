/**
 * SafeTensors conformance: every real file in ../shared/fixtures/safetensors
 * read by our reader and compared with facts from elsewhere:
 * - tests/vectors/safetensors_fixtures.json, written by an independent
 *   Python reader (tests/vectors/gen/safetensors_fixtures.py: struct +
 *   json + hashlib + NumPy): header length, metadata, dtypes, shapes,
 *   offsets, per-tensor SHA-256 and decoded values;
 * - the values the fixtures' sources document (hf-samples: [-3..2] cast to
 *   the dtype; Julia model.numpy: arange);
 * - malformed/hf-rust-tests/vectors.json: the reference implementation's
 *   outcome per file, and synthetic-vectors.json: digests per object.
 */

import { assert, assertEquals, assertRejects } from "@std/assert";
import { conformanceTest, fixture, REPO_ROOT } from "../_helpers/fixtures.ts";
import {
  readSafetensors,
  sha256Hex,
  typedArrayOf,
} from "../../formats/safetensors/mod.ts";
import {
  openSafetensors,
  validateSafetensorsFile,
} from "../../io/safetensors.ts";
import { fileSource } from "../../io/file.ts";
import { type ByteSource, memorySource } from "../../core/sources.ts";
import { toFloat32 } from "../../core/tensor.ts";
import { dtypeInfo } from "../../core/dtypes.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";

interface RefTensor {
  name: string;
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
  sha256: string;
  values?: (number | string)[];
}
interface RefFile {
  file: string;
  size: number;
  header_length: number;
  file_sha256: string;
  metadata: Record<string, string> | null;
  tensors: RefTensor[];
}
interface Reference {
  files: RefFile[];
  julia_sharded_index: {
    metadata: { total_size: number };
    weight_map: Record<string, string>;
  };
}

const REF: Reference = JSON.parse(
  await Deno.readTextFile(
    `${REPO_ROOT}/tests/vectors/safetensors_fixtures.json`,
  ),
);

function refValue(v: number | string): number {
  return v === "nan"
    ? NaN
    : v === "inf"
    ? Infinity
    : v === "-inf"
    ? -Infinity
    : Math.fround(v as number);
}

async function sha256File(path: string): Promise<string> {
  return await sha256Hex(await Deno.readFile(path));
}

conformanceTest(
  "safetensors: every real file matches the independent Python reading (shapes, dtypes, offsets, sha256, values)",
  async () => {
    let tensorsChecked = 0, valuesChecked = 0;
    for (const ref of REF.files) {
      const path = fixture("safetensors", ref.file);
      assertEquals(
        await sha256File(path),
        ref.file_sha256,
        `${ref.file} is the file the reference describes`,
      );
      const file = await openSafetensors(path);
      try {
        const m = file.models[0];
        assertEquals(m.metadata, ref.metadata ?? {}, ref.file);
        assertEquals(
          m.tensors.names(),
          ref.tensors.map((t) => t.name),
          ref.file,
        );
        for (const rt of ref.tensors) {
          const info = m.tensors.info(rt.name);
          assertEquals(
            [info.dtype, info.shape],
            [rt.dtype, rt.shape],
            `${ref.file} ${rt.name}`,
          );
          assertEquals(
            info.byteOffset,
            8 + ref.header_length + rt.data_offsets[0],
          );
          assertEquals(
            info.byteLength,
            rt.data_offsets[1] - rt.data_offsets[0],
          );
          const t = await m.tensors.load(rt.name);
          assertEquals(
            await sha256Hex(t.bytes),
            rt.sha256,
            `${ref.file} ${rt.name}`,
          );
          tensorsChecked++;
          if (!rt.values) continue;
          if (!dtypeInfo(t.dtype).toF32) {
            // F8 decoders arrive with the dtype table's F8/F4 rows; until then the type says so.
            let threw = false;
            try {
              toFloat32(t);
            } catch (e) {
              threw = e instanceof UnsupportedDTypeError;
            }
            assert(threw, `${rt.name}: expected UnsupportedDTypeError`);
            continue;
          }
          const got = toFloat32(t);
          assertEquals(got.length, rt.values.length);
          for (let i = 0; i < got.length; i++) {
            const want = refValue(rt.values[i]);
            assert(
              Object.is(got[i], want) || (got[i] === want),
              `${ref.file} ${rt.name}[${i}]: ${got[i]} vs ${want}`,
            );
            valuesChecked++;
          }
        }
      } finally {
        file.close();
      }
    }
    assertEquals(tensorsChecked, 160);
    assert(valuesChecked >= 4500, `checked ${valuesChecked} values`);
  },
);

const HF_SAMPLES: Record<string, [string, number[]]> = {
  B: ["U8", [253, 254, 255, 0, 1, 2]],
  H: ["U16", [65533, 65534, 65535, 0, 1, 2]],
  I: ["U32", [4294967293, 4294967294, 4294967295, 0, 1, 2]],
  b: ["I8", [-3, -2, -1, 0, 1, 2]],
  h: ["I16", [-3, -2, -1, 0, 1, 2]],
  i: ["I32", [-3, -2, -1, 0, 1, 2]],
  e: ["F16", [-3, -2, -1, 0, 1, 2]],
  f: ["F32", [-3, -2, -1, 0, 1, 2]],
  d: ["F64", [-3, -2, -1, 0, 1, 2]],
};

conformanceTest(
  "safetensors: hf-samples hold [-3..2] cast to each dtype (documented values)",
  async () => {
    for (const name of [...Object.keys(HF_SAMPLES), "overall"]) {
      const file = await openSafetensors(
        fixture("safetensors", "hf-samples", `${name}.safetensors`),
      );
      try {
        const m = file.models[0];
        assertEquals(m.metadata, { test: "a" });
        const names = name === "overall" ? Object.keys(HF_SAMPLES) : [name];
        assertEquals([...m.tensors.names()].sort(), [...names].sort());
        for (const t of names) {
          const [dtype, values] = HF_SAMPLES[t];
          const tensor = await m.tensors.load(t);
          assertEquals([tensor.dtype, tensor.shape], [dtype, [6]]);
          assertEquals(
            Array.from(typedArrayOf(tensor), Number),
            values,
            `${name}/${t}`,
          );
        }
      } finally {
        file.close();
      }
    }
  },
);

conformanceTest(
  "safetensors: Julia model.numpy holds arange(prod(shape)) in every dtype (bools: arange % 2)",
  async () => {
    const file = await openSafetensors(
      fixture("safetensors", "julia", "non_sharded", "model.numpy.safetensors"),
    );
    try {
      const m = file.models[0];
      assertEquals(m.tensors.names().length, 27);
      for (const name of m.tensors.names()) {
        const dims = name.split("_").pop()!.split("").map(Number);
        const t = await m.tensors.load(name);
        assertEquals(t.shape, dims, name);
        const n = dims.reduce((a, b) => a * b, 1);
        const want = Array.from(
          { length: n },
          (_, i) => (name.startsWith("bool") ? i % 2 : i),
        );
        assertEquals(Array.from(typedArrayOf(t), Number), want, name);
        assertEquals(Array.from(toFloat32(t)), want, `${name} widened`);
      }
    } finally {
      file.close();
    }
  },
);

conformanceTest(
  "safetensors: Julia sharded checkpoint opens as one model (folder and index), same tensors as the single file",
  async () => {
    const single = new Map(
      REF.files.find((f) => f.file === "julia/non_sharded/model.safetensors")!
        .tensors.map((t) => [t.name, t]),
    );
    const index = REF.julia_sharded_index;
    for (
      const path of [
        fixture("safetensors", "julia", "sharded"),
        fixture(
          "safetensors",
          "julia",
          "sharded",
          "model.safetensors.index.json",
        ),
      ]
    ) {
      const file = await openSafetensors(path);
      try {
        assertEquals(file.paths.length, 7);
        const m = file.models[0];
        assertEquals(m.id, "model");
        assertEquals(m.tensors.names(), Object.keys(index.weight_map));
        assertEquals(m.metadata, { format: "pt" });
        let total = 0;
        for (const name of m.tensors.names()) {
          const t = await m.tensors.load(name);
          const ref = single.get(name)!;
          assertEquals([t.dtype, t.shape], [ref.dtype, ref.shape], name);
          assertEquals(await sha256Hex(t.bytes), ref.sha256, name);
          total += t.bytes.byteLength;
        }
        assertEquals(total, index.metadata.total_size);
      } finally {
        file.close();
      }
    }
    const report = await validateSafetensorsFile(
      fixture("safetensors", "julia", "sharded"),
    );
    assertEquals([report.ok, report.files, report.tensors], [true, 6, 36]);
  },
);

conformanceTest("safetensors: validate passes every real file", async () => {
  for (const ref of REF.files) {
    const report = await validateSafetensorsFile(
      fixture("safetensors", ref.file),
    );
    assertEquals(report.problems, [], ref.file);
    assertEquals(report.tensors, ref.tensors.length);
  }
});

// The reference's error kind -> our class and a message check.
const KINDS: Record<string, [ErrorConstructor, RegExp]> = {
  HeaderTooSmall: [
    RangeError,
    /has \d+ bytes, too small for the 8-byte header length/,
  ],
  HeaderTooLarge: [
    RangeError,
    /header length \d+ is larger than the 100000000-byte limit/,
  ],
  InvalidHeaderLength: [
    RangeError,
    /header length \d+ runs past the end of the file \(needs \d+ bytes, the file has \d+\)/,
  ],
  InvalidHeader: [SyntaxError, /its \d+ bytes are not valid UTF-8/],
  InvalidHeaderDeserialization: [
    SyntaxError,
    /invalid JSON, .* at character \d+/,
  ],
  TensorInvalidInfo: [
    RangeError,
    /I32 \[2, 2\] needs 16 bytes, data_offsets \[0, 4\] give 4/,
  ],
  MetadataIncompleteBuffer: [
    RangeError,
    /the tensors (cover \d+ bytes of a \d+-byte data section; \d+ trailing bytes belong to no tensor|need \d+ bytes of data, the file has \d+ after the header)/,
  ],
  ValidationOverflow: [RangeError, /overflows 64 bits/],
  InvalidOffset: [RangeError, /end before they begin|leave a hole|overlap/],
};

const OK_CONTENTS: Record<string, [string, string, number[], number][]> = {
  "test_empty_shapes_allowed.safetensors": [["test", "I32", [], 4]],
  "test_deserialization.safetensors": [["test", "I32", [2, 2], 16]],
  "test_lifetimes.safetensors": [["test", "I32", [2, 2], 16]],
  "test_zero_sized_tensor.safetensors": [["test", "I32", [2, 0], 0]],
  "test_whitespace_padded_header.safetensors": [],
  "test_whitespace_leading_padded_header.safetensors": [],
};

async function readPath(path: string) {
  const src = await fileSource(path);
  try {
    const file = await readSafetensors(src);
    const m = file.models[0];
    const loaded = [];
    for (const n of m.tensors.names()) loaded.push(await m.tensors.load(n));
    return loaded;
  } finally {
    src.close();
  }
}

conformanceTest(
  "safetensors: the reference implementation's test files give its outcome (vectors.json)",
  async () => {
    const dir = fixture("safetensors", "malformed", "hf-rust-tests");
    const vectors: { file: string; expected: string; sha256: string }[] = JSON
      .parse(await Deno.readTextFile(`${dir}/vectors.json`));
    assertEquals(vectors.length, 16);
    let refused = 0;
    for (const v of vectors) {
      const path = `${dir}/${v.file}`;
      assertEquals(await sha256File(path), v.sha256, v.file);
      if (v.expected.startsWith("OK")) {
        const tensors = await readPath(path);
        assertEquals(
          tensors.map((t) => [t.name, t.dtype, t.shape, t.bytes.byteLength]),
          OK_CONTENTS[v.file],
          v.file,
        );
        assert(tensors.every((t) => t.bytes.every((b) => b === 0)));
        continue;
      }
      const kind = /SafeTensorError::(\w+)/.exec(v.expected)![1];
      const [cls, pattern] = KINDS[kind];
      const err = await assertRejects(() => readPath(path), cls);
      assert(
        pattern.test((err as Error).message),
        `${v.file} (${kind}): ${(err as Error).message}`,
      );
      assert(
        (err as Error).message.includes(v.file),
        "the message names the file",
      );
      refused++;
    }
    assertEquals(refused, 10);
  },
);

conformanceTest(
  "safetensors: safetensors-cpp abuse file (header length past the end) is refused",
  async () => {
    await assertRejects(
      () =>
        readPath(
          fixture(
            "safetensors",
            "malformed",
            "syoyo-safetensors_abuse_attempt_1.safetensors",
          ),
        ),
      RangeError,
      "header length 1000 runs past the end of the file (needs 1008 bytes, the file has 88)",
    );
  },
);

/** The stored bytes followed by zeros up to `size` (the vectors' `zero_tail`). */
function zeroTailSource(
  head: Uint8Array,
  size: number,
  name: string,
): ByteSource {
  return {
    name,
    size,
    read(offset, length) {
      const out = new Uint8Array(length);
      if (offset < head.length) {
        out.set(head.subarray(offset, Math.min(head.length, offset + length)));
      }
      return Promise.resolve(out);
    },
  };
}

conformanceTest(
  "safetensors: synthetic-vectors.json object digests (header, tensors) and refusals",
  async () => {
    const doc = JSON.parse(
      await Deno.readTextFile(fixture("synthetic-vectors.json")),
    );
    const cases = doc.cases.filter((c: { name: string }) =>
      c.name.startsWith("safetensors-")
    );
    assertEquals(cases.length, 6);
    for (const c of cases) {
      const bytes = await Deno.readFile(
        fixture("safetensors", "synthetic", `${c.name}.bin`),
      );
      const size = c.expected.file_size;
      const src = c.zero_tail
        ? zeroTailSource(bytes, size, c.name)
        : memorySource(bytes, c.name);
      assertEquals(src.size, size);
      if (c.classification === "fallback") {
        const err = await assertRejects(() => readSafetensors(src));
        if (c.name === "safetensors-gap") {
          assert(
            err instanceof RangeError &&
              err.message.includes(
                "data_offsets [1, 2] leave a hole of 1 byte",
              ),
            String(err),
          );
        } else {
          assert(
            err instanceof UnsupportedDTypeError && err.dtype === "F128",
            String(err),
          );
        }
        continue;
      }
      const m = (await readSafetensors(src)).models[0];
      const infos = m.tensors.names().map((n) => m.tensors.info(n)).sort((
        a,
        b,
      ) => a.byteOffset! - b.byteOffset!);
      const dataStart = infos.length ? infos[0].byteOffset! : size;
      const objects = [{
        offset: 0,
        length: dataStart,
        kind: "header",
        digest: `sha256:${await sha256Hex(await src.read(0, dataStart))}`,
      }];
      for (const info of infos) {
        const t = await m.tensors.load(info.name);
        objects.push({
          offset: info.byteOffset!,
          length: info.byteLength,
          kind: "tensor",
          digest: `sha256:${await sha256Hex(t.bytes)}`,
        });
      }
      assertEquals(objects, c.expected.objects, c.name);
    }
  },
);
