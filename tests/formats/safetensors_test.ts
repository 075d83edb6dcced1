// SafeTensors reading: lazy and ranged loads, typed views, sharded
// checkpoints, the plugin and the registry.

import { assert, assertEquals, assertRejects } from "@std/assert";
import {
  detectSafetensors,
  readSafetensors,
  readSafetensorsHeader,
  readSafetensorsShards,
  SAFETENSORS_KEYS,
  safetensorsFormat,
  serializeSafetensors,
  typedArrayOf,
  validateSafetensors,
  writeSafetensors,
  writeSafetensorsShards,
} from "../../formats/safetensors/mod.ts";
import { type ByteSource, memorySource } from "../../core/sources.ts";
import { tensorFromF32, toFloat32 } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import { collect, enc, model, stFile } from "./_safetensors.ts";

// ---------------------------------------------------------------------------
// Lazy reading.

function countingSource(
  bytes: Uint8Array,
): ByteSource & { reads: [number, number][] } {
  const inner = memorySource(bytes, "counted");
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

Deno.test("lazy: opening reads only the length and the header; load reads only that tensor", async () => {
  const tensors = [
    tensorFromF32("a", new Float32Array(1000).fill(1), [1000]),
    tensorFromF32("b", new Float32Array(1000).fill(2), [10, 100]),
  ];
  const bytes = await serializeSafetensors(model(tensors));
  const src = countingSource(bytes);
  const file = await readSafetensors(src);
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assertEquals(src.reads, [[0, 8], [8, n]]);
  const info = file.models[0].tensors.info("b");
  assertEquals(info.shape, [10, 100]);
  const b = await file.models[0].tensors.load("b");
  assertEquals(src.reads.slice(2), [[info.byteOffset!, 4000]]);
  assertEquals(toFloat32(b)[999], 2);
  const header = await readSafetensorsHeader(memorySource(bytes));
  assertEquals(header.dataOffset, 8 + n);
  assertEquals(header.tensors.map((t) => t.dataOffsets), [[0, 4000], [
    4000,
    8000,
  ]]);
});

Deno.test("typedArrayOf: zero-copy when aligned, copy when not", () => {
  const buf = new Uint8Array(12);
  new Float32Array(buf.buffer).set([1, 2, 3]);
  const aligned = typedArrayOf({
    name: "x",
    dtype: "F32",
    shape: [2],
    bytes: buf.subarray(4, 12),
  });
  assert(aligned instanceof Float32Array && aligned.buffer === buf.buffer);
  assertEquals([...aligned], [2, 3]);
  const odd = new Uint8Array(9);
  odd.set(buf.subarray(4, 12), 1);
  const copied = typedArrayOf({
    name: "x",
    dtype: "F32",
    shape: [2],
    bytes: odd.subarray(1),
  });
  assert(copied.buffer !== odd.buffer);
  assertEquals([...copied], [2, 3]);
  const bf = typedArrayOf({
    name: "x",
    dtype: "BF16",
    shape: [1],
    bytes: new Uint8Array([0x80, 0x3f]),
  });
  assert(bf instanceof Uint16Array && bf[0] === 0x3f80);
  assert(
    typedArrayOf({
      name: "x",
      dtype: "F8_E4M3",
      shape: [1],
      bytes: new Uint8Array([1]),
    }) instanceof Uint8Array,
  );
});

// ---------------------------------------------------------------------------
// Shards.

function shardResolver(files: Map<string, Uint8Array>) {
  return (name: string): Promise<ByteSource> => {
    const b = files.get(name);
    return b
      ? Promise.resolve(memorySource(b, name))
      : Promise.reject(new RangeError(`no file ${name}`));
  };
}

Deno.test("shards: maxShardSize splits in name order; index has total_size and weight_map; reads back as one model", async () => {
  const tensors = ["d", "a", "c", "b", "e"].map((n, i) =>
    tensorFromF32(n, new Float32Array(100).fill(i), [100])
  );
  const plan = await writeSafetensorsShards(model(tensors), {
    maxShardSize: 850,
    sha256: true,
  });
  assertEquals(plan.shards.map((s) => [s.fileName, s.tensors]), [
    ["model-00001-of-00003.safetensors", ["a", "b"]],
    ["model-00002-of-00003.safetensors", ["c", "d"]],
    ["model-00003-of-00003.safetensors", ["e"]],
  ]);
  const index = JSON.parse(new TextDecoder().decode(plan.index!.bytes));
  assertEquals(plan.index!.fileName, "model.safetensors.index.json");
  assertEquals(index.metadata, { total_size: 2000 });
  assertEquals(index.weight_map, {
    a: "model-00001-of-00003.safetensors",
    b: "model-00001-of-00003.safetensors",
    c: "model-00002-of-00003.safetensors",
    d: "model-00002-of-00003.safetensors",
    e: "model-00003-of-00003.safetensors",
  });
  const files = new Map<string, Uint8Array>();
  for (const s of plan.shards) {
    const b = await collect(s.chunks());
    assertEquals(b.byteLength, s.byteLength);
    files.set(s.fileName, b);
  }
  files.set(plan.index!.fileName, plan.index!.bytes);
  const resolve = shardResolver(files);
  const file = await readSafetensors(
    memorySource(plan.index!.bytes, "ckpt/model.safetensors.index.json"),
    { resolve },
  );
  const m = file.models[0];
  assertEquals(m.id, "model");
  assertEquals(m.tensors.names(), ["a", "b", "c", "d", "e"]);
  assertEquals(toFloat32(await m.tensors.load("d"))[99], 0);
  assertEquals(toFloat32(await m.tensors.load("e"))[0], 4);
  assertEquals(
    Object.keys(JSON.parse(m.metadata[SAFETENSORS_KEYS.sha256] as string)),
    ["a", "b", "c", "d", "e"],
  );
  const report = await validateSafetensors(memorySource(plan.index!.bytes), {
    resolve,
  });
  assertEquals([report.ok, report.files, report.hashed], [true, 3, 5]);
  // Without an index: the files merge.
  const merged = await readSafetensorsShards(
    plan.shards.map((s) => s.fileName),
    resolve,
  );
  assertEquals(merged.models[0].tensors.names(), ["a", "b", "c", "d", "e"]);
  await assertRejects(
    () => readSafetensors(memorySource(plan.index!.bytes)),
    TypeError,
    "opening its shards needs options.resolve",
  );
  await assertRejects(
    () => collect(writeSafetensors(model(tensors), { maxShardSize: 850 })),
    TypeError,
    "splits the model into 3 shards",
  );
});

Deno.test("shards: a tensor listed in the index but missing from its shard is an error; unsafe names refused", async () => {
  const shard = await serializeSafetensors(
    model([tensorFromF32("a", new Float32Array(1), [1])]),
  );
  const files = new Map([["s1.safetensors", shard]]);
  const index = enc.encode(
    JSON.stringify({
      weight_map: { a: "s1.safetensors", ghost: "s1.safetensors" },
    }),
  );
  await assertRejects(
    () =>
      readSafetensors(memorySource(index, "i.json"), {
        resolve: shardResolver(files),
      }),
    RangeError,
    'tensor "ghost" is listed in the index for s1.safetensors, but that shard has no such tensor',
  );
  const report = await validateSafetensors(memorySource(index, "i.json"), {
    resolve: shardResolver(files),
  });
  assertEquals(report.problems.map((p) => p.tensor), ["ghost"]);
  const wrongTotal = enc.encode(
    JSON.stringify({
      metadata: { total_size: 5 },
      weight_map: { a: "s1.safetensors" },
    }),
  );
  const r2 = await validateSafetensors(memorySource(wrongTotal, "i.json"), {
    resolve: shardResolver(files),
  });
  assertEquals(r2.problems.map((p) => p.message), [
    "The index declares total_size 5, the listed tensors hold 4 bytes",
  ]);
  for (
    const bad of ["../x.safetensors", "/etc/x.safetensors", "a//b.safetensors"]
  ) {
    const idx = enc.encode(JSON.stringify({ weight_map: { a: bad } }));
    await assertRejects(
      () =>
        readSafetensors(memorySource(idx, "i.json"), {
          resolve: shardResolver(files),
        }),
      TypeError,
      "must be a relative path inside the index's folder",
    );
  }
  const dup = new Map([["x.safetensors", shard], ["y.safetensors", shard]]);
  await assertRejects(
    () =>
      readSafetensorsShards(
        ["x.safetensors", "y.safetensors"],
        shardResolver(dup),
      ),
    TypeError,
    'tensor "a" is in both x.safetensors and y.safetensors',
  );
});

// ---------------------------------------------------------------------------
// Plugin and registry.

Deno.test("plugin: registered by default, detected by header shape and by index JSON", async () => {
  const reg = defaultRegistry();
  const plugin = reg.format("safetensors");
  assertEquals(plugin.extensions, [".safetensors"]);
  assertEquals(reg.formatForPath("x/model.safetensors").name, "safetensors");
  const bytes = await serializeSafetensors(
    model([tensorFromF32("a", new Float32Array(1), [1])]),
  );
  assertEquals(reg.detect(bytes.subarray(0, 16))?.name, "safetensors");
  assert(detectSafetensors(stFile(" \n{}")));
  assert(
    detectSafetensors(
      enc.encode('{\n  "metadata": {"total_size": 4},\n  "weight_map": {}}'),
    ),
  );
  assert(!detectSafetensors(enc.encode('{"type":"modelhost/bundle"}')));
  assert(
    !detectSafetensors(enc.encode("GGUF\x03\x00\x00\x00\x00\x00\x00\x00")),
  );
  assert(!detectSafetensors(new Uint8Array(16).fill(0xff)));
  const written = await collect(
    safetensorsFormat({ write: { format: null } }).write!(
      model([tensorFromF32("a", new Float32Array(1), [1])]),
    ) as AsyncIterable<Uint8Array>,
  );
  assertEquals(
    (await plugin.read!(memorySource(written))).models[0].metadata,
    {},
  );
});

// ---------------------------------------------------------------------------
// HTTP ranges.

Deno.test("http: lazy open over a loopback server transfers only the header, then one tensor by range", async () => {
  const { httpSource } = await import("../../core/sources.ts");
  const tensors = Array.from(
    { length: 8 },
    (_, i) =>
      tensorFromF32(`t${i}`, new Float32Array(1 << 16).fill(i), [256, 256]),
  );
  const bytes = await serializeSafetensors(model(tensors));
  let served = 0;
  const ac = new AbortController();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen() {},
  }, (req) => {
    const headers = {
      "accept-ranges": "bytes",
      "content-length": String(bytes.length),
    };
    if (req.method === "HEAD") return new Response(null, { headers });
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.get("range") ?? "");
    if (!m) return new Response("range required", { status: 416 });
    const start = Number(m[1]), end = Number(m[2]);
    const body = bytes.slice(start, end + 1);
    served += body.length;
    return new Response(body, {
      status: 206,
      headers: {
        "content-range": `bytes ${start}-${end}/${bytes.length}`,
        "content-length": String(body.length),
      },
    });
  });
  try {
    const src = await httpSource(
      `http://127.0.0.1:${server.addr.port}/model.safetensors`,
    );
    const file = await readSafetensors(src);
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    assertEquals(src.bytesTransferred, 8 + n);
    assertEquals(served, 8 + n);
    assert(
      8 + n < bytes.length / 100,
      `header ${8 + n} bytes of ${bytes.length}`,
    );
    assertEquals(file.models[0].id, "model");
    const t5 = await file.models[0].tensors.load("t5");
    assertEquals(src.bytesTransferred, 8 + n + 262144);
    assertEquals(src.requests, 4); // HEAD, length, header, one tensor
    assertEquals(toFloat32(t5)[12345], 5);
  } finally {
    ac.abort();
    await server.finished;
  }
});
