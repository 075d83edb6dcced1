/**
 * GGUF conformance: every real GGUF fixture parses, and its metadata and
 * tensor infos equal gguf-py's dumps (`reference/gguf-dumps`); synthetic and
 * malformed files are refused with the right error classes.
 */

import { assert, assertEquals, assertRejects } from "@std/assert";
import { encodeHex } from "@std/encoding";
import { basename } from "@std/path";
import { conformanceTest, fixture, FIXTURES } from "../_helpers/fixtures.ts";
import {
  GGUF_TYPE_NAMES,
  type GgufArray,
  GgufType,
  type GgufValue,
  readGguf,
  readGgufHeader,
  writeGgufBytes,
} from "../../formats/gguf/mod.ts";
import { fileSource } from "../../io/file.ts";
import { memorySource } from "../../core/sources.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { dequantizeGguf } from "../../core/quants/mod.ts";

/** Every GGUF fixture that has a gguf-py dump: real files, then reference outputs. */
function ggufFixtures(): string[] {
  if (!FIXTURES) return [];
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(dir)) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory && e.name !== "malformed" && e.name !== "synthetic") {
        walk(p);
      } else if (e.isFile && e.name.endsWith(".gguf")) out.push(p);
    }
  };
  walk(fixture("gguf"));
  walk(fixture("reference"));
  return out.sort();
}

async function sha256(bytes: Uint8Array): Promise<string> {
  const copy = new Uint8Array(bytes);
  return encodeHex(new Uint8Array(await crypto.subtle.digest("SHA-256", copy)));
}

/** JSON numbers for bigints (the dumps hold Python ints), recursively. */
function jsonItems(v: GgufValue): unknown {
  if (typeof v === "bigint") return Number(v);
  if (typeof v === "object") {
    return (v as GgufArray).items.map(jsonItems);
  }
  return v;
}

interface DumpEntry {
  key: string;
  type: string;
  kv_offset: number;
  value?: unknown;
  array_type?: string;
  length?: number;
  first?: unknown[];
  last?: unknown[];
  sha256_json?: string;
}

interface DumpTensor {
  name: string;
  ne: number[];
  type: string;
  type_id: number;
  offset: number;
  n_bytes: number;
  sha256: string;
}

conformanceTest(
  "gguf: every fixture's metadata and tensor infos equal gguf-py's dump",
  async () => {
    const files = ggufFixtures();
    assert(files.length >= 20, `only ${files.length} GGUF fixtures found`);
    const enc = new TextEncoder();
    for (const path of files) {
      const dumpPath = fixture(
        "reference",
        "gguf-dumps",
        `${basename(path)}.json`,
      );
      const dump = JSON.parse(await Deno.readTextFile(dumpPath));
      const src = await fileSource(path);
      try {
        const h = await readGgufHeader(src);
        const where = basename(path);
        assertEquals(h.version, dump.version, where);
        assertEquals(h.alignment, dump.alignment, where);
        assertEquals(h.dataOffset, dump.data_offset, where);
        assertEquals(h.metadata.length, dump.kv_count, where);
        assertEquals(h.tensors.length, dump.tensor_count, where);
        const entries = dump.metadata as DumpEntry[];
        for (let i = 0; i < entries.length; i++) {
          const d = entries[i];
          const m = h.metadata[i];
          const at = `${where} ${d.key}`;
          assertEquals(m.key, d.key, at);
          assertEquals(GGUF_TYPE_NAMES[m.type], d.type, at);
          assertEquals(m.offset, d.kv_offset, at);
          if (m.type !== GgufType.ARRAY) {
            assertEquals(jsonItems(m.value), d.value, at);
            continue;
          }
          const arr = m.value as GgufArray;
          assertEquals(GGUF_TYPE_NAMES[arr.type], d.array_type, at);
          assertEquals(arr.items.length, d.length, at);
          const items = jsonItems(arr) as unknown[];
          assertEquals(items.slice(0, 20), d.first, at);
          assertEquals(items.slice(-20), d.last, at);
          assertEquals(
            await sha256(enc.encode(JSON.stringify(items))),
            d.sha256_json,
            at,
          );
        }
        const tensors = dump.tensors as DumpTensor[];
        for (let i = 0; i < tensors.length; i++) {
          const d = tensors[i];
          const t = h.tensors[i];
          const at = `${where} ${d.name}`;
          assertEquals(
            [t.name, t.dims, t.dtype, t.ggmlType, t.offset, t.byteLength],
            [d.name, d.ne, d.type, d.type_id, d.offset, d.n_bytes],
            at,
          );
          assertEquals(t.shape, d.ne.slice().reverse(), at);
        }
        // Lazy reads: the bytes of the first and last tensor hash as in the dump.
        if (tensors.length > 0) {
          const file = await readGguf(src);
          for (const d of [tensors[0], tensors[tensors.length - 1]]) {
            const t = await file.models[0].tensors.load(d.name);
            assertEquals(
              await sha256(t.bytes.slice()),
              d.sha256,
              `${where} ${d.name}`,
            );
          }
        }
      } finally {
        src.close();
      }
    }
  },
);

conformanceTest(
  "gguf: synthetic vectors (v2 F32, v3 Q4_0) parse; version 4 and type 43 are refused",
  async () => {
    const open = (n: string) => fileSource(fixture("gguf", "synthetic", n));
    const v2 = await open("gguf-v2-f32.bin");
    const h2 = await readGgufHeader(v2);
    assertEquals([
      h2.version,
      h2.dataOffset,
      h2.tensors[0].name,
      h2.tensors[0].dims,
    ], [2, 96, "dense.weight", [2]]);
    const t2 = await (await readGguf(v2)).models[0].tensors.load(
      "dense.weight",
    );
    assertEquals(new TextDecoder().decode(t2.bytes), "ABCDEFGH");
    v2.close();

    const v3 = await open("gguf-v3-q4-0.bin");
    const h3 = await readGgufHeader(v3);
    assertEquals([h3.version, h3.tensors[0].dtype, h3.tensors[0].byteLength], [
      3,
      "Q4_0",
      18,
    ]);
    v3.close();

    const v4 = await open("gguf-unsupported-version.bin");
    await assertRejects(
      () => readGgufHeader(v4),
      SyntaxError,
      "unsupported GGUF version 4",
    );
    v4.close();

    const t43 = await open("gguf-unknown-type.bin");
    await assertRejects(
      () => readGgufHeader(t43),
      UnsupportedDTypeError,
      "ggml type 43",
    );
    t43.close();
  },
);

conformanceTest(
  "gguf: the UTF-8-mangled vocab file is refused with a RangeError naming the key and offset",
  async () => {
    const src = await fileSource(
      fixture(
        "gguf",
        "malformed",
        "ggml-vocab-llama-spm.utf8-mangled-copy.gguf",
      ),
    );
    await assertRejects(
      () => readGgufHeader(src),
      RangeError,
      "the key of metadata pair 9 at offset 399 is 73939795391 bytes long",
    );
    src.close();
  },
);

interface DequantTensor {
  name: string;
  type: string;
  n_elements: number;
  dequant_sha256: string;
  first: number[];
  last: number[];
}

conformanceTest(
  "gguf: dequantized values of every reference/quant file equal gguf-py's (edges and sha256 of all)",
  async () => {
    const dir = fixture("reference", "quant");
    const index = JSON.parse(await Deno.readTextFile(`${dir}/index.json`));
    const names = [
      "synthetic-llama-f32.dequant.json",
      ...index.files.map((f: { dequant_json: string }) => f.dequant_json),
    ];
    assertEquals(names.length, 11);
    for (const jsonName of names) {
      const ref = JSON.parse(await Deno.readTextFile(`${dir}/${jsonName}`));
      const src = await fileSource(`${dir}/${ref.file}`);
      try {
        const model = (await readGguf(src)).models[0];
        for (const t of ref.tensors as DequantTensor[]) {
          const at = `${ref.file} ${t.name}`;
          const stored = await model.tensors.load(t.name);
          assertEquals(stored.dtype, t.type, at);
          const v = dequantizeGguf(stored.dtype, stored.bytes, t.n_elements);
          const n = Math.min(4096, v.length);
          // The JSON holds 9 significant digits: they round-trip float32 exactly.
          assertEquals(
            Array.from(v.subarray(0, n)),
            t.first.map(Math.fround),
            at,
          );
          assertEquals(
            Array.from(v.subarray(v.length - n)),
            t.last.map(Math.fround),
            at,
          );
          assertEquals(
            await sha256(new Uint8Array(v.buffer)),
            t.dequant_sha256,
            at,
          );
        }
      } finally {
        src.close();
      }
    }
  },
);

conformanceTest(
  "gguf: read → write gives the original file byte for byte (every fixture), and metadata round-trips",
  async () => {
    const files = ggufFixtures();
    for (const path of files) {
      const src = await fileSource(path);
      try {
        const file = await readGguf(src);
        const out = await writeGgufBytes(file);
        const orig = await Deno.readFile(path);
        assertEquals(out.length, orig.length, basename(path));
        assertEquals(
          await sha256(out.slice()),
          await sha256(orig),
          basename(path),
        );
        const again = await readGgufHeader(memorySource(out));
        const first = await readGgufHeader(src);
        assertEquals(
          again.metadata.map((m) => [m.key, m.type, m.value]),
          first.metadata.map((m) => [m.key, m.type, m.value]),
          basename(path),
        );
        // And a file we wrote is reproduced exactly by a second round.
        const twice = await writeGgufBytes(await readGguf(memorySource(out)));
        assertEquals(
          await sha256(twice.slice()),
          await sha256(out.slice()),
          basename(path),
        );
      } finally {
        src.close();
      }
    }
  },
);
