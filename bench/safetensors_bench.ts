/**
 * SafeTensors micro-benchmarks (`deno bench -A bench/safetensors_bench.ts`).
 * Inputs are built once, outside the measured functions; each group has a
 * baseline. The 512 MiB comparison with printed ratios is
 * `bench/safetensors_compare.ts`.
 */

import { memoryTensorIndex } from "../core/model.ts";
import { memorySource } from "../core/sources.ts";
import { type Tensor, tensorFromF32, toFloat32 } from "../core/tensor.ts";
import {
  readSafetensorsHeader,
  serializeSafetensors,
} from "../formats/safetensors/mod.ts";
import { openSafetensors } from "../io/safetensors.ts";

// 64 MiB file of 16 F32 tensors, in a temporary folder removed at exit.
const tensors: Tensor[] = Array.from({ length: 16 }, (_, i) => {
  const v = new Float32Array(1 << 20);
  for (let j = 0; j < v.length; j++) v[j] = ((j + i) % 997) * 0.01;
  return tensorFromF32(`layers.${i}.weight`, v, [1024, 1024]);
});
const fileBytes = await serializeSafetensors({
  models: [{ id: "b", metadata: {}, tensors: memoryTensorIndex(tensors) }],
});
const dir = await Deno.makeTempDir({ prefix: "modelhost-st-bench-" });
const path = `${dir}/model.safetensors`;
await Deno.writeFile(path, fileBytes);
globalThis.addEventListener(
  "unload",
  () => Deno.removeSync(dir, { recursive: true }),
);

// A large header: 4,000 tiny tensors with long names, as in a big checkpoint.
const many: Tensor[] = Array.from({ length: 4000 }, (_, i) => ({
  name: `model.layers.${i >> 4}.block_sparse_moe.experts.${i & 15}.w${
    i % 3
  }.weight`,
  dtype: "F16",
  shape: [2],
  bytes: new Uint8Array(4),
}));
const manyBytes = await serializeSafetensors({
  models: [{ id: "h", metadata: {}, tensors: memoryTensorIndex(many) }],
});
const headerLength = Number(
  new DataView(manyBytes.buffer).getBigUint64(0, true),
);
const headerText = new TextDecoder().decode(
  manyBytes.subarray(8, 8 + headerLength),
);
const manySource = memorySource(manyBytes);

// 16 Mi F16 elements.
const halves = new Uint16Array(1 << 24);
for (let i = 0; i < halves.length; i++) halves[i] = (i * 2654435761) & 0x7bff;
const f16: Tensor = {
  name: "h",
  dtype: "F16",
  shape: [halves.length],
  bytes: new Uint8Array(halves.buffer),
};
const f16View = new Float16Array(halves.buffer);

Deno.bench({
  name: "Deno.readFile 64 MiB",
  group: "read 64 MiB",
  baseline: true,
  async fn() {
    await Deno.readFile(path);
  },
});
Deno.bench({
  name: "openSafetensors + load every tensor",
  group: "read 64 MiB",
  async fn() {
    const file = await openSafetensors(path);
    const idx = file.models[0].tensors;
    for (const n of idx.names()) await idx.load(n);
    file.close();
  },
});

Deno.bench({
  name: "JSON.parse of the header text",
  group: `header, ${headerLength} bytes`,
  baseline: true,
  fn() {
    JSON.parse(headerText);
  },
});
Deno.bench({
  name: "readSafetensorsHeader (strict parse + validation)",
  group: `header, ${headerLength} bytes`,
  async fn() {
    await readSafetensorsHeader(manySource);
  },
});

Deno.bench({
  name: "Float32Array.set(Float16Array)",
  group: "widen 16 Mi F16",
  baseline: true,
  fn() {
    new Float32Array(f16View.length).set(f16View);
  },
});
Deno.bench({
  name: "toFloat32 (dtype table F16 row)",
  group: "widen 16 Mi F16",
  fn() {
    toFloat32(f16);
  },
});

Deno.bench({
  name: "copy 64 MiB (Uint8Array.slice)",
  group: "write 64 MiB",
  baseline: true,
  fn() {
    fileBytes.slice();
  },
});
Deno.bench({
  name: "serializeSafetensors",
  group: "write 64 MiB",
  async fn() {
    await serializeSafetensors({
      models: [{ id: "b", metadata: {}, tensors: memoryTensorIndex(tensors) }],
    });
  },
});
