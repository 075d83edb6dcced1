/**
 * ONNX export benchmarks (`deno bench -A bench/onnx_bench.ts`):
 *
 * - varints: our number-based writer vs `@std/encoding`'s `encodeVarint`
 *   (the baseline), on the sizes an ONNX file holds (dims, tags, lengths);
 * - export: `exportOnnx` of the 1024 → 4096 → 1024 MLP (32 MiB of weights)
 *   vs copying the same bytes once (the baseline, a lower bound);
 * - forward: our forward vs ONNX Runtime (1 thread) on our export, batch 64.
 */

import { encodeVarint } from "@std/encoding";
import * as ort from "onnxruntime-node";
import { floatTensor } from "../core/tensor.ts";
import { writeVarint } from "../formats/onnx/_protobuf.ts";
import { exportOnnx } from "../formats/onnx/mod.ts";
import { B, D, mlpInput, mlpNetwork } from "./_onnx_mlp.ts";

const values = Array.from(
  { length: 4096 },
  (_, i) => (i * 2654435761) % 2 ** 28,
);
const buf = new Uint8Array(10);

Deno.bench("varint: @std/encoding encodeVarint", {
  group: "varint",
  baseline: true,
}, () => {
  for (const v of values) encodeVarint(v, buf);
});

Deno.bench(
  "varint: formats/onnx/_protobuf writeVarint",
  { group: "varint" },
  () => {
    for (const v of values) writeVarint(buf, 0, v);
  },
);

const net = mlpNetwork();
const weights = [...net.tensors!.values()].map((t) => t.bytes);
const total = weights.reduce((a, b) => a + b.length, 0);

Deno.bench("export: copy the weight bytes once", {
  group: "export",
  baseline: true,
  n: 10,
  warmup: 2,
}, () => {
  const out = new Uint8Array(total);
  let off = 0;
  for (const w of weights) {
    out.set(w, off);
    off += w.length;
  }
});

Deno.bench("export: exportOnnx (transpose + protobuf)", {
  group: "export",
  n: 10,
  warmup: 2,
}, () => {
  exportOnnx(net);
});

const x = mlpInput();
const session = await ort.InferenceSession.create(exportOnnx(net), {
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
});
const feed = { input: new ort.Tensor("float32", x, [B, D]) };

Deno.bench("forward: modelhost network.forward", {
  group: "forward",
  baseline: true,
  n: 3,
  warmup: 1,
}, () => {
  net.forward(floatTensor(x, [B, D]));
});

Deno.bench("forward: ONNX Runtime (1 thread) on our export", {
  group: "forward",
  n: 20,
  warmup: 2,
}, async () => {
  await session.run(feed);
});
