/**
 * Cost of verifying `modelhost.sha256` on load: one SafeTensors file of
 * 64 MiB of F32 read tensor by tensor with `verify` on and off, sides
 * alternating, medians of 7. `deno run -A bench/checksum_verify.ts`
 */

import { memoryTensorIndex } from "../core/model.ts";
import { memorySource } from "../core/sources.ts";
import { tensorFromF32 } from "../core/tensor.ts";
import {
  readSafetensors,
  serializeSafetensors,
} from "../formats/safetensors/mod.ts";
import { cpuInfo } from "./_peer.ts";

const MIB = 2 ** 20;
const tensors = Array.from(
  { length: 16 },
  (_, i) => tensorFromF32(`t${i}`, new Float32Array(MIB).fill(i), [1024, 1024]),
);
const bytes = await serializeSafetensors(
  { models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex(tensors) }] },
  { sha256: true },
);

async function loadAll(verify: boolean): Promise<number> {
  const t0 = performance.now();
  const f = await readSafetensors(memorySource(bytes), { verify });
  for (const n of f.models[0].tensors.names()) {
    await f.models[0].tensors.load(n);
  }
  return performance.now() - t0;
}

const on: number[] = [], off: number[] = [];
for (let i = 0; i < 7; i++) {
  off.push(await loadAll(false));
  on.push(await loadAll(true));
}
const med = (x: number[]) => x.sort((a, b) => a - b)[x.length >> 1];
const info = (() => {
  const { model, flags } = cpuInfo();
  if (model === undefined && flags.size === 0) return Deno.build.arch;
  return `${model} (${
    ["avx2", "avx512f", "avx512_vnni"].filter((f) => flags.has(f)).join(" ")
  })`;
})();
const mb = bytes.byteLength / MIB;
console.log(`CPU ${info}; ${mb.toFixed(0)} MiB in 16 tensors`);
console.log(
  `verify off: ${med(off).toFixed(1)} ms, verify on: ${
    med(on).toFixed(1)
  } ms (${(mb / (med(on) / 1000)).toFixed(0)} MiB/s), ratio ${
    (med(on) / med(off)).toFixed(1)
  }x`,
);
