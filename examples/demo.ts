/**
 * The built-in example (`deno task demo`): what storing one million Gaussian
 * weights in each dtype costs in accuracy and bytes.
 *
 * @module
 */

import { createRng, decodeToF32, DTYPES, encodeFromF32 } from "../mod.ts";

const N = 1 << 20;
const rng = createRng(42);
const w = new Float32Array(N);
for (let i = 0; i < N; i++) w[i] = rng.normal() * 0.02;

console.log(
  `modelhost demo: ${N} Gaussian weights (σ = 0.02) stored in each dtype\n`,
);
console.log("dtype      bytes      cosine        max abs error");
for (const d of DTYPES) {
  if (d.kind !== "float" || !d.fromF32 || !d.toF32) continue;
  const back = decodeToF32(d, encodeFromF32(d, w), N);
  let dot = 0, na = 0, nb = 0, maxErr = 0;
  for (let i = 0; i < N; i++) {
    dot += w[i] * back[i];
    na += w[i] * w[i];
    nb += back[i] * back[i];
    maxErr = Math.max(maxErr, Math.abs(w[i] - back[i]));
  }
  const cos = dot / Math.sqrt(na * nb);
  const bytes = (N / d.blockSize) * d.blockBytes;
  console.log(
    `${d.name.padEnd(10)} ${String(bytes).padStart(8)}  ${cos.toFixed(9)}  ${
      maxErr.toExponential(3)
    }`,
  );
}
