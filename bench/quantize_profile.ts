// Where one Q4_K_M write's time goes, on this thread: tensor load, F16 → F32
// widening and each encoder, in CPU-seconds of this process (user + system
// from /proc/self/stat, so other users' load matters less) and wall
// seconds, for the synthetic gqa4 Llama at the given widths.
//
//   deno run -A bench/quantize_profile.ts [--embd 2048 --ff 5632 --layers 1 --vocab 4096]

import { parseArgs } from "@std/cli";
import { toFloat32 } from "../core/tensor.ts";
import { memorySource } from "../core/sources.ts";
import { quantizeGguf } from "../core/quants/mod.ts";
import type { DTypeName } from "../core/dtypes.ts";
import { planGguf, readGguf } from "../formats/gguf/mod.ts";
import { syntheticLlama } from "../tests/vectors/gen/synthetic_llama.ts";
import { cpuInfo } from "./_peer.ts";

const args = parseArgs(Deno.args, {
  string: ["embd", "ff", "layers", "vocab"],
});
const embd = Number(args.embd ?? 2048);
const bytes = await syntheticLlama("gqa4", {
  embd,
  ff: Number(args.ff ?? 5632),
  layers: Number(args.layers ?? 1),
  vocab: Number(args.vocab ?? 4096),
  heads: embd / 64,
  kvHeads: embd / 256,
});
const { model, flags } = cpuInfo();
console.log(
  `${model}; ${
    ["avx2", "avx512f", "avx512_vnni"].filter((f) => flags.has(f)).join(" ")
  }; ${(bytes.length / 1e6).toFixed(1)} MB of F16; load average ${
    (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ")
  }`,
);

function cpu(): number {
  const f = Deno.readTextFileSync("/proc/self/stat").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

const file = await readGguf(memorySource(bytes));
const plan = planGguf(file, { preset: "Q4_K_M" });
const phases = new Map<string, { cpu: number; wall: number; mb: number }>();
const time = <T>(name: string, mb: number, f: () => T): T => {
  const c = cpu(), t = performance.now();
  const r = f();
  const p = phases.get(name) ?? { cpu: 0, wall: 0, mb: 0 };
  p.cpu += cpu() - c;
  p.wall += (performance.now() - t) / 1000;
  p.mb += mb;
  phases.set(name, p);
  return r;
};
// warm the encoders (the WebAssembly module compiles once)
quantizeGguf("Q4_K", new Float32Array(256 * 64).map((_, i) => Math.sin(i)));
quantizeGguf("Q6_K", new Float32Array(256 * 64).map((_, i) => Math.sin(i)));
for (const p of plan) {
  const t = await file.models[0].tensors.load(p.name);
  const mb = t.bytes.length / 1e6;
  const values = time("widen to F32", mb, () => toFloat32(t));
  if (p.action === "quantize") {
    time(`encode ${p.to}`, mb, () => quantizeGguf(p.to as DTypeName, values));
  }
}
const total = [...phases.values()].reduce((a, p) => a + p.cpu, 0);
for (const [name, p] of phases) {
  console.log(
    `${name.padEnd(14)} ${p.mb.toFixed(1).padStart(7)} MB  ${
      p.cpu.toFixed(2).padStart(6)
    } CPU-s (${(100 * p.cpu / total).toFixed(0).padStart(3)}%, ${
      (p.mb / p.cpu).toFixed(0).padStart(4)
    } MB per CPU-s)  ${p.wall.toFixed(2).padStart(6)} s`,
  );
}
