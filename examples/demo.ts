/**
 * The built-in example (`deno task demo`): what storing one million Gaussian
 * weights in each dtype costs in accuracy and bytes, for the plain float
 * dtypes and for the quantized forms with scales (`quantize`).
 *
 * @module
 */

import {
  createRng,
  decodeToF32,
  DTYPES,
  encodeFromF32,
  errorStats,
  quantize,
  type QuantizeOptions,
  toFloat32,
} from "../mod.ts";

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
const quantized: [string, QuantizeOptions][] = [
  ["I8, per tensor, symmetric", { dtype: "I8", symmetric: true }],
  ["I8, per tensor", { dtype: "I8" }],
  ["I8, per channel", { dtype: "I8", granularity: "channel" }],
  ["U8, per tensor", { dtype: "U8" }],
  ["U8, per channel", { dtype: "U8", granularity: "channel" }],
  ["F4 E2M1, scale per 32", { dtype: "F4" }],
];
for (const [label, options] of quantized) {
  const t = quantize("w", w, SHAPE, options);
  const q = t.quant!;
  const params = (typeof q.scale === "number" ? 1 : q.scale.length) *
    (q.zeroPoint === undefined ? 1 : 2);
  report(label, t.bytes.length + 4 * params, toFloat32(t));
}
