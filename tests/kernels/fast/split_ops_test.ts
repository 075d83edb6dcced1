// The element-wise and per-row kernels between a prefill's GEMMs (RMSNorm,
// SwiGLU, RoPE, the activations' quantization for Q8_0 / Q4_0 / Q4_K / Q6_K
// weights and their packing for the GEMMs) split over the kernel threads by rows, tokens or element ranges.
// Each part must write exactly the bytes one thread writes: results on two
// threads are compared bit for bit with one thread (and with the scalar
// references within their tolerances), and the kernels are checked to have
// really been split.

import { assert, assertEquals } from "@std/assert";
import { siluMul, siluMulRef } from "../../../kernels/activations.ts";
import { rmsNorm, rmsNormRef } from "../../../kernels/norms.ts";
import {
  applyRope,
  applyRopeRef,
  ropeFrequencies,
  ropeTable,
} from "../../../kernels/rope.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import {
  configureKernels,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";
import { state } from "../../../kernels/fast/_dispatch.ts";
import type { FastDType } from "../../../kernels/quant_ref.ts";
import { cosines, makeWeight } from "./_helpers.ts";

/** Every kernel the cases run, with the outputs. */
function cases(): { name: string; out: Float32Array }[] {
  const out: { name: string; out: Float32Array }[] = [];
  // 37 rows of 576: parts start mid-way through the rows
  const d = 576, rows = 37;
  const x = cosines(rows * d, 3);
  const w = cosines(d, 1, 0.5);
  out.push({ name: "rmsnorm_rows", out: rmsNorm(x, rows, d, w, 1e-5) });
  // 56833 values: 222 ranges of 256 and an odd tail of 1
  const g = cosines(37 * 1536 + 1, 2, 4), u = cosines(g.length, 5);
  out.push({ name: "swiglu", out: siluMul(g, u) });
  for (const style of ["neox", "interleaved"] as const) {
    const heads = 3, hd = 64, seq = 29, start = 7;
    const q = cosines(2 * seq * heads * hd, 4);
    const t = ropeTable(ropeFrequencies(hd), start + seq);
    applyRope(q, 2, seq, heads, t, style, start);
    out.push({ name: `rope_${style}`, out: q });
  }
  const dtypes: FastDType[] = ["Q8_0", "Q4_0", "Q4_K", "Q6_K"];
  for (const dt of dtypes) {
    const xs = cosines(rows * 512, 6);
    out.push({
      name: dt === "Q8_0" || dt === "Q4_0" ? "quantize_x" : "quantize_xk",
      out: fastLinear(xs, rows, makeWeight(dt, 64, 512)),
    });
  }
  // x packed for the GEMMs in panels of 5 rows: i16 (Q8_0), bytes (Q4_0
  // on the relaxed module), F32 (either, without the integer GEMMs)
  const xs = cosines(rows * 512, 7);
  for (const intGemm of [true, false]) {
    state.intGemm = intGemm;
    for (const dt of ["Q8_0", "Q4_0"] as const) {
      out.push({
        name: intGemm ? "pack" : "qg_pack_x",
        out: fastLinear(xs, rows, makeWeight(dt, 64, 512)),
      });
    }
  }
  state.intGemm = true;
  return out;
}

Deno.test("split ops: two threads write the bits of one thread, split by rows, tokens and ranges", async () => {
  const e = getEngine();
  if (!e) {
    console.log("skipped: no WebAssembly SIMD engine");
    return;
  }
  const one = cases();
  await configureKernels({ threads: 2, minParallelWork: 1 });
  const split = new Set<string>();
  const run = e.run;
  e.run = function (name, parts, touch) {
    if (parts.length > 1) split.add(name);
    return run.call(this, name, parts, touch);
  };
  // ranges claimed a chunk at a time (runSplit's default)
  const runChunks = e.runChunks;
  e.runChunks = function (name, chunks) {
    if (chunks.length > 1) split.add(name);
    return runChunks.call(this, name, chunks);
  };
  try {
    const two = cases();
    assertEquals(two.length, one.length);
    for (let i = 0; i < one.length; i++) {
      assertEquals(
        new Uint32Array(two[i].out.buffer),
        new Uint32Array(one[i].out.buffer),
        one[i].name,
      );
    }
    for (const name of one.map((c) => c.name)) {
      const names = name === "pack" ? ["qh_pack_x", "qi_pack_x"] : [name];
      assert(
        names.some((n) => split.has(n)),
        `${name} was not split over the threads`,
      );
    }
  } finally {
    e.run = run;
    e.runChunks = runChunks;
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});

Deno.test("split ops: the one-thread results agree with the scalar references", () => {
  const d = 576, rows = 37;
  const x = cosines(rows * d, 3);
  const w = cosines(d, 1, 0.5);
  const y = rmsNorm(x, rows, d, w, 1e-5), r = rmsNormRef(x, rows, d, w, 1e-5);
  for (let i = 0; i < y.length; i++) {
    assert(Math.abs(y[i] - r[i]) <= 1e-5 * (1 + Math.abs(r[i])), `rms ${i}`);
  }
  const g = cosines(37 * 1536 + 1, 2, 4), u = cosines(g.length, 5);
  const s = siluMul(g, u), sr = siluMulRef(g, u);
  for (let i = 0; i < s.length; i++) {
    assert(Math.abs(s[i] - sr[i]) <= 1e-5 * (1 + Math.abs(sr[i])), `silu ${i}`);
  }
  const heads = 3, hd = 64, seq = 29, start = 7;
  const q = cosines(2 * seq * heads * hd, 4), qr = q.slice();
  const t = ropeTable(ropeFrequencies(hd), start + seq);
  applyRope(q, 2, seq, heads, t, "neox", start);
  applyRopeRef(qr, 2, seq, heads, t, "neox", start);
  for (let i = 0; i < q.length; i++) {
    assert(Math.abs(q[i] - qr[i]) <= 1e-5, `rope ${i}`);
  }
});
