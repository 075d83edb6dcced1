import {
  assert,
  assertAlmostEquals,
  assertEquals,
  assertStringIncludes,
} from "@std/assert";
import { join } from "@std/path";
import { runCli } from "./_cli.ts";
import {
  buildNetwork,
  defaultRegistry,
  floatTensor,
  initNetwork,
  memoryTensorIndex,
  type ModelFile,
  toFloat32,
} from "../../mod.ts";
import { openModel, writeModel } from "../../io/open.ts";
import { fixture, FIXTURES } from "../_helpers/fixtures.ts";

const run = runCli;

const CONFIG = {
  input_size: 64,
  layers: [
    { type: "dense", output_size: 32, activation: "gelu" },
    { type: "rms_norm" },
    { type: "dense", output_size: 5, activation: "softmax" },
  ],
};

async function savedNetwork(
  dir: string,
): Promise<{ path: string; file: ModelFile }> {
  const reg = defaultRegistry();
  const tensors = initNetwork(reg, CONFIG, 3);
  const file: ModelFile = {
    models: [{
      id: "net",
      config: CONFIG,
      metadata: {},
      tensors: memoryTensorIndex(tensors.values()),
    }],
  };
  const path = join(dir, "net.safetensors");
  await writeModel(reg.format("safetensors"), file, path);
  return { path, file };
}

Deno.test("cli convert: --quant/--dtype map to each format's option; choices are checked", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { path } = await savedNetwork(dir);
    const gg = join(dir, "net.gguf");
    const c = await run(["convert", path, "-o", gg, "--quant", "q8_0"]);
    assertEquals(c.code, 0, c.err);
    const reg = defaultRegistry();
    const back = await openModel(reg, gg);
    const types = Object.fromEntries(
      back.file.models[0].tensors.names().map((
        n,
      ) => [n, back.file.models[0].tensors.info(n).dtype]),
    );
    back.close();
    // 2-D weights quantized, 1-D (biases, norm) kept, as llama.cpp does
    assertEquals(types["layers.0.weight"], "Q8_0");
    assertEquals(types["layers.1.weight"], "F32");
    assertEquals(types["layers.0.bias"], "F32");
    const st = join(dir, "half.safetensors");
    assertEquals(
      (await run(["convert", gg, "-o", st, "--dtype", "f16"])).code,
      0,
    );
    const half = await openModel(reg, st);
    assertEquals(
      half.file.models[0].tensors.info("layers.1.weight").dtype,
      "F16",
    );
    half.close();
    const bad = await run([
      "convert",
      path,
      "-o",
      join(dir, "x.safetensors"),
      "--dtype",
      "q4_0",
    ]);
    assertEquals(bad.code, 2);
    assertStringIncludes(
      bad.err,
      'format "safetensors" cannot store q4_0; choices: f32, f16, bf16',
    );
    const typo = await run([
      "convert",
      path,
      "-o",
      join(dir, "x.gguf"),
      "--quant",
      "q8_O",
    ]);
    assertEquals(typo.code, 2);
    assertStringIncludes(typo.err, "did you mean q8_0?");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli convert: --max-shard-size writes shards and an index that open as one model", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { path } = await savedNetwork(dir);
    const outDir = join(dir, "sharded");
    await Deno.mkdir(outDir);
    const c = await run([
      "convert",
      path,
      "-o",
      join(outDir, "model.safetensors"),
      "--max-shard-size",
      "4096",
    ]);
    assertEquals(c.code, 0, c.err);
    const names = [...Deno.readDirSync(outDir)].map((e) => e.name).sort();
    assert(names.includes("model.safetensors.index.json"), names.join(","));
    assert(
      names.filter((n) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(n))
        .length >= 2,
      names.join(","),
    );
    const a = JSON.parse((await run(["inspect", path, "--json"])).out);
    const b = JSON.parse((await run(["inspect", outDir, "--json"])).out);
    assertEquals(b.models[0].tensorCount, a.models[0].tensorCount);
    assertEquals(b.models[0].params, a.models[0].params);
    assertEquals((await run(["validate", outDir])).code, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli run: forward pass of a stored network from JSON, stdin-free inline and .npy input", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { path, file } = await savedNetwork(dir);
    const reg = defaultRegistry();
    const tensors = new Map();
    for (const n of file.models[0].tensors.names()) {
      tensors.set(n, await file.models[0].tensors.load(n));
    }
    const net = buildNetwork(reg, CONFIG, tensors);
    const x = Float32Array.from(
      { length: 2 * 64 },
      (_, i) => Math.sin(i * 0.37),
    );
    const want = net.forward(floatTensor(x, [2, 64]));
    const rows = [Array.from(x.subarray(0, 64)), Array.from(x.subarray(64))];
    const inline = await run(["run", path, "--input", JSON.stringify(rows)]);
    assertEquals(inline.code, 0, inline.err);
    const got = JSON.parse(inline.out);
    assertEquals(got.shape, [2, 5]);
    got.data.forEach((v: number, i: number) =>
      assertAlmostEquals(v, want.data[i], 1e-6)
    );
    // the same input as a .npy file (float32, C order), built by hand from the format spec
    const header =
      `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 64), }`;
    const pad = 64 - ((10 + header.length + 1) % 64);
    const h = new TextEncoder().encode(header + " ".repeat(pad) + "\n");
    const npy = new Uint8Array(10 + h.length + x.byteLength);
    npy.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
    new DataView(npy.buffer).setUint16(8, h.length, true);
    npy.set(h, 10);
    npy.set(new Uint8Array(x.buffer), 10 + h.length);
    const npyPath = join(dir, "x.npy");
    await Deno.writeFile(npyPath, npy);
    const fromNpy = JSON.parse(
      (await run(["run", path, "--input", npyPath])).out,
    );
    assertEquals(fromNpy, got);
    const noCfg = join(dir, "plain.gguf");
    assertEquals((await run(["convert", path, "-o", noCfg])).code, 0);
    const viaGguf = await run(["run", noCfg, "--input", JSON.stringify(rows)]);
    assertEquals(
      JSON.parse(viaGguf.out),
      got,
      "GGUF keeps the network config too",
    );
    const missing = await run(["run", path]);
    assertEquals([missing.code, missing.err.split("\n")[0]], [
      2,
      "error: missing --input",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "conformance: cli quantize gives llama-quantize's bytes and reports per-tensor error",
  ignore: !FIXTURES,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const out = join(dir, "q8.gguf");
      const r = await run([
        "quantize",
        fixture("reference/quant/synthetic-llama-f32.gguf"),
        out,
        "q8_0",
        "--json",
      ]);
      assertEquals(r.code, 0, r.err);
      const rep = JSON.parse(r.out);
      assertEquals(rep.type, "Q8_0");
      const reg = defaultRegistry();
      const ours = await openModel(reg, out),
        ref = await openModel(
          reg,
          fixture("reference/quant/synthetic-llama-Q8_0.gguf"),
        );
      try {
        const mo = ours.file.models[0].tensors, mr = ref.file.models[0].tensors;
        assertEquals(mo.names().sort(), mr.names().sort());
        for (const n of mr.names()) {
          assertEquals(mo.info(n).dtype, mr.info(n).dtype, n);
          assertEquals((await mo.load(n)).bytes, (await mr.load(n)).bytes, n);
        }
        // the report's error of each tensor, recomputed here from llama.cpp's file
        for (const row of rep.tensors) {
          const src = toFloat32(
            await (await openModel(
              reg,
              fixture("reference/quant/synthetic-llama-f32.gguf"),
            )).file.models[0].tensors.load(row.name),
          );
          const q = toFloat32(await mr.load(row.name));
          let se = 0;
          for (let i = 0; i < src.length; i++) se += (src[i] - q[i]) ** 2;
          assertAlmostEquals(row.rmse, Math.sqrt(se / src.length), 1e-7);
          assert(row.cosine > 0.9999, `${row.name} cosine ${row.cosine}`);
        }
      } finally {
        ours.close();
        ref.close();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
