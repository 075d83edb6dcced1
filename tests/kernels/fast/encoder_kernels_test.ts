// The encoder kernels of kernels/wasm/_kernels_encoder.ts on both module
// variants: the inline exp against Math.exp, `attn_softmax_rows` (scale,
// key-padding mask, rows whose key count is no multiple of 4 or 8) against
// the scalar softmax (`softmaxRef`, itself checked against NumPy in
// tests/kernels/), `gelu_bias_rows` against `geluErfApprox` of x + bias
// and against Python's math.erf GELU (tests/vectors/gelu_erf.json, from
// tests/vectors/gen/gelu_erf.py).
import { assert } from "@std/assert";
import { configureKernels } from "../../../kernels/fast/runtime.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";
import { softmaxRef } from "../../../kernels/softmax.ts";
import { geluErfApprox } from "../../../kernels/gelu.ts";

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

for (const noRelaxedSimd of [false, true]) {
  const variant = noRelaxedSimd ? "plain SIMD" : "relaxed SIMD";

  Deno.test(`encoder kernels (${variant}): exp_fast is within 2e-7 of Math.exp on [-87, 0]`, async () => {
    await configureKernels({ noRelaxedSimd });
    try {
      const e = getEngine()!;
      const n = 1 << 16;
      const x = new Float32Array(n);
      for (let i = 0; i < n; i++) x[i] = -87 * (i / (n - 1));
      x[1] = -1e-30;
      const px = e.scratch("test_exp_x", n * 4),
        py = e.scratch("test_exp_y", n * 4);
      e.f32.set(x, px >> 2);
      e.fn.exp_fast(px, py, n);
      const y = e.f32.subarray(py >> 2, (py >> 2) + n);
      let worst = 0;
      for (let i = 0; i < n; i++) {
        const ref = Math.exp(x[i]);
        worst = Math.max(worst, Math.abs(y[i] - ref) / ref);
      }
      assert(worst < 2e-7, `worst relative error ${worst}`);
      assert(y[0] === 1, `exp(0) = ${y[0]}`);
    } finally {
      await configureKernels({ noRelaxedSimd: false });
    }
  });

  Deno.test(`encoder kernels (${variant}): attn_softmax_rows equals the scaled, masked scalar softmax`, async () => {
    await configureKernels({ noRelaxedSimd });
    try {
      const e = getEngine()!;
      const r = rng(7);
      for (
        const [rows, n, keys, scale] of [
          [5, 128, 128, 0.17677669],
          [3, 13, 11, 0.5],
          [4, 37, 37, 1],
          [2, 16, 9, 0.25],
          [3, 8, 1, 2],
          [1, 300, 259, 0.125],
        ]
      ) {
        const x = new Float32Array(rows * n);
        for (let i = 0; i < x.length; i++) x[i] = (r() - 0.5) * 60;
        const p = e.scratch("test_sm", x.byteLength + 64);
        e.f32.set(x, p >> 2);
        e.fn.attn_softmax_rows(p, rows, n, keys, scale);
        const got = e.f32.slice(p >> 2, (p >> 2) + x.length);
        for (let row = 0; row < rows; row++) {
          const scaled = new Float32Array(keys);
          for (let j = 0; j < keys; j++) scaled[j] = x[row * n + j] * scale;
          const ref = softmaxRef(scaled, 1, keys);
          let sum = 0;
          for (let j = 0; j < n; j++) {
            const g = got[row * n + j];
            sum += g;
            if (j >= keys) {
              assert(
                g === 0,
                `rows ${rows} n ${n} keys ${keys}: masked ${j} = ${g}`,
              );
              continue;
            }
            assert(
              Math.abs(g - ref[j]) <= 1e-6 * ref[j] + 1e-12,
              `rows ${rows} n ${n} keys ${keys} row ${row} key ${j}: ${g} vs ${
                ref[j]
              }`,
            );
          }
          assert(Math.abs(sum - 1) < 1e-5, `row sum ${sum}`);
        }
      }
    } finally {
      await configureKernels({ noRelaxedSimd: false });
    }
  });

  Deno.test(`encoder kernels (${variant}): gelu_bias_rows equals geluErfApprox(x + bias) and math.erf's GELU`, async () => {
    await configureKernels({ noRelaxedSimd });
    try {
      const e = getEngine()!;
      const r = rng(11);
      const rows = 7, n = 44;
      const x = new Float32Array(rows * n), b = new Float32Array(n);
      for (let i = 0; i < x.length; i++) x[i] = (r() - 0.5) * 16;
      for (let i = 0; i < n; i++) b[i] = (r() - 0.5) * 2;
      x[0] = -b[0]; // gelu(0)
      const px = e.scratch("test_gelu_x", x.byteLength + 64);
      const pb = e.scratch("test_gelu_b", b.byteLength + 64);
      e.f32.set(x, px >> 2);
      e.f32.set(b, pb >> 2);
      e.fn.gelu_bias_rows(px, pb, rows, n);
      const got = e.f32.slice(px >> 2, (px >> 2) + x.length);
      for (let i = 0; i < x.length; i++) {
        const v = Math.fround(x[i] + b[i % n]);
        const ref = geluErfApprox(v);
        assert(
          Math.abs(got[i] - ref) <= 1e-6 * Math.max(1, Math.abs(v)),
          `value ${i} (${v}): ${got[i]} vs ${ref}`,
        );
      }
      assert(got[0] === 0);

      // math.erf's GELU, zero bias: within 5e-7·(1 + |x|)
      const V: { x: number[]; y: number[] } = JSON.parse(
        await Deno.readTextFile(
          new URL("../../vectors/gelu_erf.json", import.meta.url),
        ),
      );
      const m = V.x.length & ~3;
      const pv = e.scratch("test_gelu_v", m * 4 + 64);
      const pz = e.scratch("test_gelu_z", m * 4 + 64);
      e.f32.set(V.x.slice(0, m), pv >> 2);
      e.f32.fill(0, pz >> 2, (pz >> 2) + m);
      e.fn.gelu_bias_rows(pv, pz, 1, m);
      const gv = e.f32.slice(pv >> 2, (pv >> 2) + m);
      for (let i = 0; i < m; i++) {
        assert(
          Math.abs(gv[i] - V.y[i]) <= 5e-7 * (1 + Math.abs(V.x[i])),
          `x = ${V.x[i]}: ${gv[i]}, math.erf gives ${V.y[i]}`,
        );
      }
    } finally {
      await configureKernels({ noRelaxedSimd: false });
    }
  });
}
