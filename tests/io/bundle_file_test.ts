import {
  assert,
  assertEquals,
  assertRejects,
  assertStrictEquals,
} from "@std/assert";
import { tensorFromF32, toFloat32 } from "../../core/tensor.ts";
import { loadBundle, saveBundle } from "../../formats/bundle/mod.ts";
import { loadBundleFile, saveBundleFile } from "../../io/bundle.ts";

const w = (name: string, values: number[], shape = [values.length]) =>
  tensorFromF32(name, new Float32Array(values), shape);

async function listDir(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) names.push(e.name);
  return names.sort();
}

Deno.test("file: save writes exactly the string API's bytes; load reads it back, one model or all", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/pair.bundle.json`;
  const models = [
    {
      id: "encoder",
      config: { input_size: 2, layers: [{ type: "dense", output_size: 2 }] },
      tensors: [
        w("layers.0.weight", [1, 2, 3, 4], [2, 2]),
        w("layers.0.bias", [0.5, -0.5]),
      ],
    },
    { id: "decoder", tensors: [w("w", [0.25, -8])] },
  ];
  const n = await saveBundleFile(path, models, { dtype: "BF16" });
  const text = await saveBundle(models, { dtype: "BF16" });
  const onDisk = await Deno.readTextFile(path);
  assertStrictEquals(onDisk, text);
  assertEquals(n, new TextEncoder().encode(text).length);
  const all = await loadBundleFile(path);
  assertEquals(all.models.map((m) => m.id), ["encoder", "decoder"]);
  const dec = await loadBundleFile(path, "decoder");
  assertEquals([...toFloat32(await dec.models[0].tensors.load("w"))], [
    0.25,
    -8,
  ]);
  // Saving the loaded file gives the same bytes again.
  await saveBundleFile(`${dir}/again.bundle.json`, all);
  assertStrictEquals(
    await Deno.readTextFile(`${dir}/again.bundle.json`),
    onDisk,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("file: a failed save leaves the old file as it was and no temporary file behind", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/m.bundle.json`;
  await saveBundleFile(path, [{ id: "m", tensors: [w("a", [1])] }]);
  const before = await Deno.readTextFile(path);
  await assertRejects(
    () =>
      saveBundleFile(path, [{ id: "m", tensors: [w("a", [NaN])] }], {
        dtype: "I8",
      }),
    TypeError,
    'Cannot store tensor "a" of model "m" as I8',
  );
  assertStrictEquals(await Deno.readTextFile(path), before);
  assertEquals(await listDir(dir), ["m.bundle.json"]);
  await assertRejects(
    () =>
      saveBundleFile(`${dir}/missing/m.bundle.json`, [{
        id: "m",
        tensors: [],
      }]),
    Deno.errors.NotFound,
  );
  assertEquals(await listDir(dir), ["m.bundle.json"]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("file: errors name the file, the model and the ids present", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/m.bundle.json`;
  await saveBundleFile(path, [{ id: "a", tensors: [] }, {
    id: "b",
    tensors: [],
  }]);
  await assertRejects(
    () => loadBundleFile(path, "c"),
    RangeError,
    'No model "c" in the bundle; models present: "a", "b"',
  );
  await Deno.writeTextFile(`${dir}/x.json`, '{"type": "x"}');
  await assertRejects(
    () => loadBundleFile(`${dir}/x.json`),
    TypeError,
    `Cannot read ${dir}/x.json: "type" is "x"`,
  );
  await Deno.writeTextFile(`${dir}/y.json`, "{oops");
  await assertRejects(
    () => loadBundleFile(`${dir}/y.json`),
    SyntaxError,
    `Cannot read ${dir}/y.json: not JSON`,
  );
  await assertRejects(
    () => loadBundleFile(`${dir}/none.json`),
    Deno.errors.NotFound,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("file: a Loom bundle on disk reads like its text", async () => {
  const V = JSON.parse(
    await Deno.readTextFile(new URL("../vectors/loom.json", import.meta.url)),
  );
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/loom.json`, V.example.bundle);
  const fromFile = await loadBundleFile(`${dir}/loom.json`, "example");
  const fromText = await loadBundle(V.example.bundle, "example");
  assertEquals(fromFile.models[0].config, fromText.models[0].config);
  assert(fromFile.models[0].tensors.has("layers.1.weight"));
  await Deno.remove(dir, { recursive: true });
});
