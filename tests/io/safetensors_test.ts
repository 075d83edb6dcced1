import { assert, assertEquals, assertRejects } from "@std/assert";
import {
  openSafetensors,
  saveSafetensors,
  validateSafetensorsFile,
} from "../../io/safetensors.ts";
import { memoryTensorIndex, type ModelFile } from "../../core/model.ts";
import { tensorFromF32, toFloat32 } from "../../core/tensor.ts";
import { SAFETENSORS_KEYS } from "../../formats/safetensors/mod.ts";

function model(n: number, size = 100): ModelFile {
  const tensors = Array.from(
    { length: n },
    (_, i) =>
      tensorFromF32(
        `layers.${i}.weight`,
        new Float32Array(size).fill(i + 0.5),
        [size],
      ),
  );
  return {
    models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex(tensors) }],
  };
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "st-io-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function list(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).sort();
}

Deno.test("io: save one file, open it lazily, validate it", () =>
  withDir(async (dir) => {
    const path = `${dir}/net.safetensors`;
    const saved = await saveSafetensors(path, model(3), { sha256: true });
    assertEquals(saved.paths, [path]);
    assertEquals(saved.bytes, (await Deno.stat(path)).size);
    const file = await openSafetensors(path);
    assertEquals(file.paths, [path]);
    assertEquals(file.models[0].id, "net");
    assertEquals(
      toFloat32(await file.models[0].tensors.load("layers.2.weight"))[7],
      2.5,
    );
    file.close();
    await assertRejects(() => file.models[0].tensors.load("layers.0.weight"));
    const report = await validateSafetensorsFile(path);
    assertEquals([report.ok, report.hashed], [true, 3]);
    assertEquals(list(dir), ["net.safetensors"]);
  }));

Deno.test("io: sharded save writes shards + index with no leftovers; folder and index open as one model", () =>
  withDir(async (dir) => {
    const saved = await saveSafetensors(`${dir}/model.safetensors`, model(5), {
      maxShardSize: 800,
    });
    const names = [1, 2, 3].map((i) => `model-0000${i}-of-00003.safetensors`);
    assertEquals(saved.paths, [
      ...names.map((n) => `${dir}/${n}`),
      `${dir}/model.safetensors.index.json`,
    ]);
    assertEquals(list(dir), [...names, "model.safetensors.index.json"]);
    const index = JSON.parse(
      await Deno.readTextFile(`${dir}/model.safetensors.index.json`),
    );
    assertEquals(index.metadata.total_size, 2000);
    for (const path of [dir, `${dir}/model.safetensors.index.json`]) {
      const file = await openSafetensors(path);
      assertEquals(file.paths.length, 4);
      assertEquals(file.models[0].tensors.names().length, 5);
      assertEquals(
        toFloat32(await file.models[0].tensors.load("layers.4.weight"))[0],
        4.5,
      );
      file.close();
    }
    assertEquals((await validateSafetensorsFile(dir)).ok, true);
  }));

Deno.test("io: a failing sharded save leaves the folder as it was", () =>
  withDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/keep.txt`, "x");
    const base = model(4).models[0];
    const tensors = {
      ...base.tensors,
      load: (n: string) =>
        n === "layers.3.weight"
          ? Promise.reject(new Error("disk gone"))
          : base.tensors.load(n),
    };
    await assertRejects(
      () =>
        saveSafetensors(`${dir}/model.safetensors`, {
          models: [{ ...base, tensors }],
        }, { maxShardSize: 800 }),
      Error,
      "disk gone",
    );
    assertEquals(list(dir), ["keep.txt"]);
  }));

Deno.test("io: a folder of shards without an index merges; an empty folder is NotFound", () =>
  withDir(async (dir) => {
    const one = (name: string, v: number) => ({
      models: [{
        id: "x",
        metadata: {},
        tensors: memoryTensorIndex([
          tensorFromF32(name, new Float32Array([v]), [1]),
        ]),
      }],
    });
    await saveSafetensors(`${dir}/a.safetensors`, one("x", 1));
    await saveSafetensors(`${dir}/b.safetensors`, one("y", 2));
    const file = await openSafetensors(dir);
    assertEquals(file.models[0].tensors.names(), ["x", "y"]);
    file.close();
    const report = await validateSafetensorsFile(dir);
    assertEquals([report.ok, report.files], [true, 2]);
    const empty = await Deno.makeTempDir({ dir });
    await assertRejects(
      () => openSafetensors(empty),
      Deno.errors.NotFound,
      "No .safetensors file or index in folder",
    );
  }));

Deno.test("io: re-saving a lazily opened file over itself (dtype change) is safe", () =>
  withDir(async (dir) => {
    const path = `${dir}/m.safetensors`;
    const config = {
      layers: [{ type: "dense", input_size: 100, output_size: 1 }],
    };
    await saveSafetensors(path, {
      models: [{ ...model(2).models[0], config }],
    });
    const file = await openSafetensors(path);
    await saveSafetensors(path, file, { dtype: "BF16" });
    file.close();
    const again = await openSafetensors(path);
    const m = again.models[0];
    assertEquals(m.tensors.info("layers.1.weight").dtype, "BF16");
    assertEquals(toFloat32(await m.tensors.load("layers.1.weight"))[0], 1.5);
    assertEquals(m.config, config);
    assert(m.metadata[SAFETENSORS_KEYS.config] !== undefined);
    again.close();
    assertEquals(list(dir), ["m.safetensors"]);
  }));
