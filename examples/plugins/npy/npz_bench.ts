// `deno bench -A examples/plugins/npy/npz_bench.ts`: reading and writing a
// 16 MiB .npz (16 F32 tensors of 512 × 512, cosine values), stored and
// deflated, against copying the same bytes (the baseline).

import {
  memorySource,
  memoryTensorIndex,
  type ModelFile,
  tensorFromF32,
} from "@modelhost/modelhost";
import { collectBytes } from "@modelhost/modelhost/testing";
import { readNpz, writeNpz } from "./mod.ts";

const N = 512 * 512;
const tensors = Array.from({ length: 16 }, (_, t) => {
  const v = new Float32Array(N);
  for (let i = 0; i < N; i++) v[i] = Math.cos(i * 0.001 + t);
  return tensorFromF32(`layers.${t}.weight`, v, [512, 512]);
});
const file: ModelFile = {
  models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex(tensors) }],
};
const stored = await collectBytes(writeNpz(file));
const deflated = await collectBytes(writeNpz(file, { compress: true }));

async function loadAll(bytes: Uint8Array): Promise<number> {
  const m = (await readNpz(memorySource(bytes, "b.npz"))).models[0];
  let total = 0;
  for (const n of m.tensors.names()) {
    total += (await m.tensors.load(n)).bytes.byteLength;
  }
  return total;
}

Deno.bench("copy 16 MiB (baseline)", { group: "read", baseline: true }, () => {
  stored.slice();
});
Deno.bench(
  "read stored .npz, load every tensor",
  { group: "read" },
  async () => {
    await loadAll(stored);
  },
);
Deno.bench(
  "read deflated .npz, load every tensor",
  { group: "read" },
  async () => {
    await loadAll(deflated);
  },
);
Deno.bench("copy 16 MiB (baseline)", { group: "write", baseline: true }, () => {
  stored.slice();
});
Deno.bench("write stored .npz", { group: "write" }, async () => {
  await collectBytes(writeNpz(file));
});
Deno.bench("write deflated .npz", { group: "write" }, async () => {
  await collectBytes(writeNpz(file, { compress: true }));
});
