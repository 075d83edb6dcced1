/**
 * `modelhost.header_sha256` (issue 18): `modelhost.sha256` alone covers the
 * bytes only, so a dtype or shape relabel that keeps the byte length (U8 →
 * BOOL, [4] → [2, 2]) or an edited `modelhost.quant` scale read without
 * complaint before the header digest existed; these tests failed then. The
 * reference files and digests come from `tests/vectors/gen/safetensors_checksum.py`
 * (Python `safetensors` + hashlib, no modelhost code).
 */

import { assert, assertEquals, assertRejects } from "@std/assert";
import { decodeBase64 } from "@std/encoding";
import { join } from "@std/path";
import { memoryTensorIndex } from "../../core/model.ts";
import { memorySource } from "../../core/sources.ts";
import { tensorFromF32, toFloat32 } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import {
  readSafetensors,
  readSafetensorsHeader,
  serializeSafetensors,
  validateSafetensors,
} from "../../formats/safetensors/mod.ts";
import {
  digestTensorsOf,
  headerDigestText,
} from "../../formats/safetensors/_digest.ts";
import { openModel } from "../../io/open.ts";
import { openSafetensors } from "../../io/safetensors.ts";

interface VectorFile {
  name: string;
  header_sha256: string;
  digest_text: string;
  has_header_key: boolean;
  tensors: string[];
  bytes: string;
}

const VECTORS: { files: VectorFile[] } = JSON.parse(
  await Deno.readTextFile(
    new URL("../vectors/safetensors_checksum.json", import.meta.url),
  ),
);

function vector(name: string): Uint8Array {
  return decodeBase64(VECTORS.files.find((f) => f.name === name)!.bytes);
}

/** Rewrites the header JSON of a SafeTensors file, keeping the data section. */
function repack(
  b: Uint8Array,
  edit: (h: Record<string, Record<string, unknown>>) => void,
): Uint8Array {
  const n = Number(new DataView(b.buffer, b.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(b.subarray(8, 8 + n)));
  edit(header);
  const h = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + h.length + b.length - 8 - n);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  out.set(b.subarray(8 + n), 8 + h.length);
  return out;
}

Deno.test("header digest: Python-written files verify, and the digest text is Python's", async () => {
  for (const v of VECTORS.files) {
    const bytes = decodeBase64(v.bytes);
    const src = memorySource(bytes, `${v.name}.safetensors`);
    const header = await readSafetensorsHeader(src);
    const byteMap = new Map<string, string>(
      Object.entries(JSON.parse(header.metadata!["modelhost.sha256"])),
    );
    assertEquals(
      headerDigestText(
        digestTensorsOf(header.tensors, byteMap),
        header.metadata!["modelhost.quant"],
      ),
      v.digest_text,
      v.name,
    );
    assertEquals(
      Object.hasOwn(header.metadata!, "modelhost.header_sha256"),
      v.has_header_key,
    );
    const file = await readSafetensors(src);
    for (const n of v.tensors) await file.models[0].tensors.load(n);
    const report = await validateSafetensors(src);
    assert(report.ok, JSON.stringify(report.problems));
  }
});

const EDITS: [string, (h: Record<string, Record<string, unknown>>) => void][] =
  [
    ["dtype U8 relabelled BOOL", (h) => {
      h.mask.dtype = "BOOL";
    }],
    ["shape [4] relabelled [2, 2]", (h) => {
      h.mask.shape = [2, 2];
    }],
    ["I8 relabelled U8", (h) => {
      h.w.dtype = "U8";
    }],
    ["a quantization scale edited", (h) => {
      h.__metadata__["modelhost.quant"] = '{"w":{"scale":[0.5,0.5]}}';
    }],
    ["the quantization fields removed", (h) => {
      delete h.__metadata__["modelhost.quant"];
    }],
    ["tensors renamed into each other's place", (h) => {
      const b = h.b;
      h.b = h.mask;
      h.mask = b;
      const m = JSON.parse(h.__metadata__["modelhost.sha256"] as string);
      [m.b, m.mask] = [m.mask, m.b];
      h.__metadata__["modelhost.sha256"] = JSON.stringify(m);
    }],
  ];

Deno.test("header digest: relabelled dtype or shape, edited quant are refused at open; verify: false reads", async () => {
  const good = vector("i8_quant");
  for (const [what, edit] of EDITS) {
    const bad = repack(good, edit);
    const src = memorySource(bad, "q.safetensors");
    await assertRejects(
      () => readSafetensors(src),
      RangeError,
      "Checksum mismatch in the header of q.safetensors",
      what,
    );
    const report = await validateSafetensors(src);
    assert(
      report.problems.some((p) =>
        p.kind === "Mismatch" && p.message.includes("header_sha256")
      ),
      `${what}: ${JSON.stringify(report.problems)}`,
    );
    const loose = await readSafetensors(src, { verify: false });
    for (const n of loose.models[0].tensors.names()) {
      await loose.models[0].tensors.load(n);
    }
  }
});

Deno.test("header digest: openSafetensors and openModel refuse a relabelled file", async () => {
  const bad = repack(vector("i8_quant"), (h) => {
    h.mask.dtype = "BOOL";
  });
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "q.safetensors");
    await Deno.writeFile(path, bad);
    await assertRejects(() => openSafetensors(path), RangeError, "header");
    await assertRejects(
      () => openModel(defaultRegistry(), path),
      RangeError,
      "header",
    );
    (await openSafetensors(path, { verify: false })).close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("header digest: files with only modelhost.sha256 (written before it) still read with their bytes checked; a header digest without the byte map is refused", async () => {
  const old = vector("bytes_only");
  const relabelled = repack(old, (h) => {
    h.w.dtype = "U8";
  });
  // The documented limit of older files: only bytes are covered.
  await readSafetensors(memorySource(relabelled));
  const flipped = old.slice();
  flipped[flipped.length - 1] ^= 1;
  const f = await readSafetensors(memorySource(flipped));
  await assertRejects(
    () => f.models[0].tensors.load("w"),
    RangeError,
    "Checksum mismatch in tensor",
  );

  const stripped = repack(vector("i8_quant"), (h) => {
    delete h.__metadata__["modelhost.sha256"];
  });
  await assertRejects(
    () => readSafetensors(memorySource(stripped)),
    TypeError,
    "a removed checksum",
  );
  const report = await validateSafetensors(memorySource(stripped));
  assert(!report.ok);
});

Deno.test("header digest: modelhost writes it (I8 with scales, sharded), reads it back, and a rewrite does not copy a stale one", async () => {
  const tensors = memoryTensorIndex([
    tensorFromF32("a", new Float32Array([1, -2, 3, 4, 0.5, 6]), [2, 3]),
    tensorFromF32("c", new Float32Array([7, 8, 9, 10]), [4]),
  ]);
  const file = { models: [{ id: "m", metadata: {}, tensors }] };
  const bytes = await serializeSafetensors(file, { dtype: "I8", sha256: true });
  const header = await readSafetensorsHeader(memorySource(bytes));
  assert(/^[0-9a-f]{64}$/.test(header.metadata!["modelhost.header_sha256"]));
  const back = await readSafetensors(memorySource(bytes));
  const a = toFloat32(await back.models[0].tensors.load("a"));
  assert(Math.abs(a[1] + 2) < 0.05);
  const edited = repack(bytes, (h) => {
    const q = JSON.parse(h.__metadata__["modelhost.quant"] as string);
    q.a.scale[0] *= 2;
    h.__metadata__["modelhost.quant"] = JSON.stringify(q);
  });
  await assertRejects(() => readSafetensors(memorySource(edited)), RangeError);

  // Rewriting the read model as F32 without checksums drops the old digest.
  const f32 = await serializeSafetensors(back, { dtype: "F32" });
  const h2 = await readSafetensorsHeader(memorySource(f32));
  assert(!Object.hasOwn(h2.metadata ?? {}, "modelhost.header_sha256"));
  await readSafetensors(memorySource(f32));

  const dir = await Deno.makeTempDir();
  try {
    const { saveSafetensors } = await import("../../io/safetensors.ts");
    const saved = await saveSafetensors(join(dir, "model.safetensors"), file, {
      sha256: true,
      maxShardSize: 20,
    });
    assertEquals(saved.paths.length, 3);
    const opened = await openSafetensors(dir);
    try {
      assertEquals(
        toFloat32(await opened.models[0].tensors.load("c"))[3],
        10,
      );
      assert(
        !Object.hasOwn(opened.models[0].metadata, "modelhost.header_sha256"),
      );
    } finally {
      opened.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
