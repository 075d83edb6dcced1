import { assert, assertEquals, assertThrows } from "@std/assert";
import { memoryTensorIndex } from "../../core/model.ts";
import { buildNetwork, initNetwork } from "../../core/network.ts";
import { createRng } from "../../core/rng.ts";
import { floatTensor } from "../../core/tensor.ts";
import { exportOnnx, exportOnnxFiles } from "../../formats/onnx/mod.ts";
import { saveOnnx } from "../../io/onnx.ts";
import { writeModel } from "../../io/open.ts";
import { defaultRegistry } from "../../mod.ts";
import { assertAllClose } from "../_helpers/close.ts";
import { openOrt } from "../formats/_ort.ts";

const reg = defaultRegistry();
const CFG = {
  input_size: 16,
  layers: [
    { type: "dense", output_size: 32, activation: "silu" },
    { type: "layer_norm" },
    { type: "dense", output_size: 4 },
  ],
};

Deno.test("saveOnnx: external data past a small threshold runs in ORT like the inline model", async () => {
  const net = buildNetwork(reg, CFG, initNetwork(reg, CFG, 2));
  const dir = await Deno.makeTempDir();
  try {
    const saved = await saveOnnx(`${dir}/net.onnx`, net, {
      externalData: true,
      externalDataThreshold: 256,
    });
    assertEquals(saved.dataPath, `${dir}/net.onnx.data`);
    // The two matrices (16·32 and 32·4 floats) move; every one starts at a 4096 multiple.
    assertEquals(saved.dataBytes, 4096 + 32 * 4 * 4);
    const data = await Deno.readFile(saved.dataPath!);
    assertEquals(data.length, saved.dataBytes);
    const inline = exportOnnx(net);
    assert(saved.modelBytes < inline.length - 16 * 32 * 4);
    const model = await Deno.readFile(`${dir}/net.onnx`);
    const text = new TextDecoder().decode(model);
    assert(text.includes("net.onnx.data") && text.includes("location"));

    const rng = createRng(3);
    const x = Float32Array.from({ length: 5 * 16 }, () => rng.normal());
    const expected = net.forward(floatTensor(x, [5, 16]));
    const s = await openOrt(`${dir}/net.onnx`);
    try {
      const got = await s.run("input", x, [5, 16]);
      assertAllClose(got.data, expected.data, "external", 1e-4, 1e-6);
    } finally {
      await s.close();
    }
    // Atomic writes leave no temporary files behind.
    const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assertEquals(names, ["net.onnx", "net.onnx.data"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("saveOnnx: small models stay in one file by default; the same bytes as exportOnnx", async () => {
  const net = buildNetwork(reg, CFG, initNetwork(reg, CFG, 2));
  const dir = await Deno.makeTempDir();
  try {
    const saved = await saveOnnx(`${dir}/a.onnx`, net, { opsetVersion: 13 });
    assertEquals(saved.dataPath, undefined);
    assertEquals(
      await Deno.readFile(`${dir}/a.onnx`),
      exportOnnx(net, { opsetVersion: 13 }),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("exportOnnxFiles: options are checked", () => {
  const net = buildNetwork(reg, CFG, initNetwork(reg, CFG, 2));
  assertThrows(
    () => exportOnnxFiles(net, { weightDtype: "Q4" as "I8" }),
    TypeError,
    "weightDtype must be keep, F16 or I8",
  );
  assertThrows(
    () => exportOnnxFiles(net, { gumbelMaxRows: 0 }),
    RangeError,
    "gumbelMaxRows must be a positive integer, got 0",
  );
  assertThrows(
    () => exportOnnxFiles(net, { externalData: "yes" as "auto" }),
    TypeError,
    'externalData must be true, false or "auto"',
  );
});

Deno.test("convert path: the onnx plugin's writeFiles gives .onnx + .onnx.data that ORT loads", async () => {
  const tensors = initNetwork(reg, CFG, 6);
  const file = {
    models: [{
      id: "m",
      config: CFG,
      metadata: {},
      tensors: memoryTensorIndex(tensors.values()),
    }],
  };
  const dir = await Deno.makeTempDir();
  try {
    const plugin = reg.format("onnx");
    const written = await writeModel(plugin, file, `${dir}/out.onnx`, {
      externalData: "true",
      externalDataThreshold: 256,
    });
    assertEquals(written.paths, [`${dir}/out.onnx`, `${dir}/out.onnx.data`]);
    const net = buildNetwork(reg, CFG, tensors);
    const rng = createRng(8);
    const x = Float32Array.from({ length: 2 * 16 }, () => rng.normal());
    const s = await openOrt(`${dir}/out.onnx`);
    try {
      assertAllClose(
        (await s.run("input", x, [2, 16])).data,
        net.forward(floatTensor(x, [2, 16])).data,
        "writeFiles",
        1e-4,
        1e-6,
      );
    } finally {
      await s.close();
    }
    // Without external data: one file at the requested path.
    const one = await writeModel(plugin, file, `${dir}/single.onnx`, {});
    assertEquals(one.paths, [`${dir}/single.onnx`]);
    assertEquals(
      await Deno.readFile(`${dir}/single.onnx`),
      exportOnnx(net),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
