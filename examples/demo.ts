/**
 * The built-in example (`deno task demo`): what storing one million Gaussian
 * weights in each dtype costs in accuracy and bytes, for the plain float
 * dtypes and for the quantized forms with scales (`quantizeAffine`); then a
 * network saved in every format, reopened and run, quantized and exported.
 *
 * @module
 */

import {
  buildNetwork,
  createRng,
  decodeToF32,
  defaultRegistry,
  DTYPES,
  encodeFromF32,
  errorStats,
  floatTensor,
  initNetwork,
  loadAllTensors,
  memoryTensorIndex,
  quantizeAffine,
  type QuantizeAffineOptions,
  toFloat32,
} from "../mod.ts";
import { openModel, writeModel } from "../io/mod.ts";
import { exportOnnx } from "../formats/onnx/mod.ts";

const N = 1 << 20;
const SHAPE = [1024, 1024];
const rng = createRng(42);
const w = new Float32Array(N);
for (let i = 0; i < N; i++) w[i] = rng.normal() * 0.02;

console.log(
  `modelhost demo: ${N} Gaussian weights (σ = 0.02, seed 42, shape [${SHAPE}]) stored in each dtype\n`,
);
console.log(
  "| stored as                      |     bytes | cosine similarity | max abs error |",
);
console.log(
  "| ------------------------------ | --------: | ----------------: | ------------: |",
);

function report(label: string, bytes: number, back: Float32Array): void {
  const s = errorStats(w, back);
  console.log(
    `| ${label.padEnd(30)} | ${String(bytes).padStart(9)} | ${
      s.cosine.toFixed(9).padStart(17)
    } | ${s.maxAbsError.toExponential(2).padStart(13)} |`,
  );
}

// Plain floats: narrowed element by element, no scale. F4 alone cannot hold
// weights this small (every one rounds to 0), so it appears with block scales below.
for (const d of DTYPES) {
  if (d.kind !== "float" || !d.fromF32 || !d.toF32 || d.name === "F4") {
    continue;
  }
  const bytes = encodeFromF32(d, w);
  report(d.name, bytes.length, decodeToF32(d, bytes, N));
}

// Codes plus scales: the bytes count the codes and the F32 scales / zero points.
const quantized: [string, QuantizeAffineOptions][] = [
  ["I8, per tensor, symmetric", { dtype: "I8", symmetric: true }],
  ["I8, per tensor", { dtype: "I8" }],
  ["I8, per channel", { dtype: "I8", granularity: "channel" }],
  ["U8, per tensor", { dtype: "U8" }],
  ["U8, per channel", { dtype: "U8", granularity: "channel" }],
  ["F4 E2M1, scale per 32", { dtype: "F4" }],
];
for (const [label, options] of quantized) {
  const t = quantizeAffine("w", w, SHAPE, options);
  const q = t.quant!;
  const params = (typeof q.scale === "number" ? 1 : q.scale.length) *
    (q.zeroPoint === undefined ? 1 : 2);
  report(label, t.bytes.length + 4 * params, toFloat32(t));
}

// The main job on a built-in example: a network built from a JSON config is
// saved in every format, reopened (format detected from the bytes) and run;
// its weights are quantized to Q8_0 GGUF; it is exported to ONNX.
const reg = defaultRegistry();
const config = {
  input_size: 32,
  layers: [
    { type: "dense", output_size: 64, activation: "gelu" },
    { type: "rms_norm" },
    {
      type: "parallel",
      combine_mode: "filter", // a gated mixture of two experts
      filter_gate: { type: "dense" },
      branches: [
        { type: "dense", output_size: 8, activation: "tanh" },
        { type: "kmeans", num_clusters: 8 },
      ],
    },
    { type: "softmax" },
  ],
};
const weights = initNetwork(reg, config, 7);
const x = floatTensor(
  Float32Array.from({ length: 4 * 32 }, (_, i) => Math.sin(i * 0.3)),
  [4, 32],
);
const expected = buildNetwork(reg, config, weights).forward(x);
const file = {
  models: [{
    id: "demo",
    config,
    metadata: {},
    tensors: memoryTensorIndex(weights.values()),
  }],
};
const dir = await Deno.makeTempDir({ prefix: "modelhost-demo-" });
console.log(
  `\nA network (dense → rms_norm → gated mixture of a dense and a kmeans expert → softmax), 4 rows:\n`,
);
console.log(
  "saved as                     bytes   reopened as   max |Δ output| vs the original",
);
for (
  const [name, file_] of [["bundle", "net.bundle.json"], [
    "safetensors",
    "net.safetensors",
  ], ["gguf", "net.gguf"]]
) {
  const path = `${dir}/${file_}`;
  const written = await writeModel(reg.format(name), file, path);
  const opened = await openModel(reg, path);
  const m = opened.file.models[0];
  const y = buildNetwork(reg, m.config!, await loadAllTensors(m.tensors))
    .forward(x);
  opened.close();
  console.log(
    `${file_.padEnd(22)} ${String(written.bytes).padStart(10)}   ${
      opened.format.name.padEnd(11)
    }   ${maxDiff(y.data, expected.data).toExponential(2)}`,
  );
}
const q8 = `${dir}/net-q8_0.gguf`;
const q8Bytes =
  (await writeModel(reg.format("gguf"), file, q8, { quantize: "Q8_0" })).bytes;
const opened = await openModel(reg, q8);
const yq = buildNetwork(
  reg,
  config,
  await loadAllTensors(opened.file.models[0].tensors),
).forward(x);
opened.close();
console.log(
  `${"net-q8_0.gguf".padEnd(22)} ${
    String(q8Bytes).padStart(10)
  }   gguf Q8_0     ${maxDiff(yq.data, expected.data).toExponential(2)}`,
);
const onnxBytes = exportOnnx(buildNetwork(reg, config, weights), {
  opsetVersion: 17,
});
console.log(
  `${"net.onnx".padEnd(22)} ${
    String(onnxBytes.length).padStart(10)
  }   (export; run it in ONNX Runtime)`,
);
await Deno.remove(dir, { recursive: true });
console.log(
  "\nNext: deno task cli inspect ../shared/fixtures/gguf/stories260K.gguf, or deno task cli --help",
);

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
