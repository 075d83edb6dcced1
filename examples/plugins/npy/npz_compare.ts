// Side by side with NumPy: `deno run -A examples/plugins/npy/npz_compare.ts`
// writes a 16 MiB .npz (16 F32 arrays of 512 × 512) stored and deflated,
// then times loading every array with this plugin and with NumPy's np.load
// (/usr/bin/python3), medians of 7 runs each, and prints the ratios.

import {
  memorySource,
  memoryTensorIndex,
  tensorFromF32,
} from "@modelhost/modelhost";
import { collectBytes } from "@modelhost/modelhost/testing";
import { readNpz, writeNpz } from "./mod.ts";

const RUNS = 7;
const N = 512 * 512;
const tensors = Array.from({ length: 16 }, (_, t) => {
  const v = new Float32Array(N);
  for (let i = 0; i < N; i++) v[i] = Math.cos(i * 0.001 + t);
  return tensorFromF32(`w${t}`, v, [512, 512]);
});
const file = {
  models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex(tensors) }],
};
const dir = await Deno.makeTempDir();
const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1];

try {
  for (const compress of [false, true]) {
    const bytes = await collectBytes(writeNpz(file, { compress }));
    const path = `${dir}/${compress ? "deflated" : "stored"}.npz`;
    await Deno.writeFile(path, bytes);
    const ours: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const t0 = performance.now();
      const data = await Deno.readFile(path);
      const m = (await readNpz(memorySource(data, path))).models[0];
      for (const n of m.tensors.names()) await m.tensors.load(n);
      ours.push(performance.now() - t0);
    }
    const script = `
import sys, time, numpy as np
times = []
for _ in range(${RUNS}):
    t0 = time.perf_counter()
    with np.load(sys.argv[1]) as z:
        arrays = [z[k] for k in z.files]
    times.append((time.perf_counter() - t0) * 1000)
print(sorted(times)[len(times) // 2])
`;
    const res = await new Deno.Command("/usr/bin/python3", {
      args: ["-c", script, path],
    }).output();
    if (res.code !== 0) throw new Error(new TextDecoder().decode(res.stderr));
    const numpy = Number(new TextDecoder().decode(res.stdout));
    const mine = median(ours);
    console.log(
      `${compress ? "deflated" : "stored  "} ${
        (bytes.byteLength / 2 ** 20).toFixed(1)
      } MiB: modelhost ${mine.toFixed(1)} ms, NumPy ${
        numpy.toFixed(1)
      } ms, ratio ${(mine / numpy).toFixed(2)}x`,
    );
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
