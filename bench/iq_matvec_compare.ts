/**
 * One-row matvec time of the IQ4_NL, IQ4_XS, MXFP4, IQ3_S and IQ2_XS
 * WebAssembly kernels beside Q4_0 and Q4_K (same shape, same run, sides
 * alternating), and of the scalar rule (`linearRef`) they replace. IQ3_S
 * and IQ2_XS weights are seeded random blocks with small f16 scales (the
 * kernels' time does not depend on the values). Prints medians and ratios with the
 * CPU model and flags.
 *
 * Run: deno run -A bench/iq_matvec_compare.ts [rows=4096] [cols=4096]
 *
 * @module
 */

import { quantizeGguf } from "../core/quants/mod.ts";
import type { Tensor } from "../core/tensor.ts";
import { fastLinear } from "../kernels/fast/matmul.ts";
import { linearRef } from "../kernels/linear.ts";
import { cpuInfo } from "./_peer.ts";

const outF = Number(Deno.args[0] ?? 4096), inF = Number(Deno.args[1] ?? 4096);
const cpu = (() => {
  const { model, flags } = cpuInfo();
  if (model === undefined) return "?";
  return `${model} [${
    ["avx2", "avx512f", "avx512_vnni", "avx_vnni"].filter((f) => flags.has(f))
      .join(" ")
  }]`;
})();
const vals = Float32Array.from(
  { length: outF * inF },
  (_, i) => 0.3 * Math.sin(0.37 * i) + 0.05 * Math.cos(3.1 * i),
);
const types = [
  "Q4_0",
  "Q8_0",
  "Q4_K",
  "IQ4_NL",
  "IQ4_XS",
  "MXFP4",
  "IQ3_S",
  "IQ2_XS",
] as const;
/** Seeded random blocks of `bytes` bytes, f16 scales near 2^-8. */
function randomBlocks(bytes: number): Uint8Array {
  const blocks = (outF * inF) / 256, out = new Uint8Array(blocks * bytes);
  let s = 1;
  for (let i = 0; i < out.length; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    out[i] = s >>> 24;
  }
  for (let b = 0; b < blocks; b++) out[b * bytes + 1] = 0x1c;
  return out;
}
const ws: Tensor[] = types.map((t) => ({
  name: t,
  dtype: t,
  shape: [outF, inF],
  bytes: t === "IQ3_S"
    ? randomBlocks(110)
    : t === "IQ2_XS"
    ? randomBlocks(74)
    : quantizeGguf(t, vals),
}));
const x = Float32Array.from({ length: inF }, (_, i) => Math.cos(i));
const times = new Map<string, number[]>(types.map((t) => [t, []]));
for (const w of ws) for (let i = 0; i < 20; i++) fastLinear(x, 1, w); // warm up (Liftoff → TurboFan)
for (let round = 0; round < 30; round++) {
  for (const w of round % 2 ? ws : [...ws].reverse()) {
    const t0 = performance.now();
    fastLinear(x, 1, w);
    times.get(w.dtype)!.push(performance.now() - t0);
  }
}
const med = (a: number[]) => a.slice().sort((p, q) => p - q)[a.length >> 1];
console.log(`${outF} × ${inF} matvec, 1 thread, ${cpu}`);
const base = med(times.get("Q4_0")!);
for (const t of types) {
  const m = med(times.get(t)!);
  console.log(
    `${t.padEnd(7)} ${m.toFixed(3)} ms  ×${(m / base).toFixed(2)} of Q4_0`,
  );
}
for (const t of ["IQ4_NL", "IQ4_XS", "MXFP4", "IQ3_S", "IQ2_XS"]) {
  const w = ws.find((w) => w.dtype === t)!;
  const r: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    linearRef(x, 1, w);
    r.push(performance.now() - t0);
  }
  const k = med(times.get(t)!);
  console.log(
    `${t.padEnd(7)} scalar rule ${med(r).toFixed(1)} ms: kernel ${
      (med(r) / k).toFixed(1)
    }× faster`,
  );
}
