// Prefill of a 128-token prompt on the Llama-shaped models of
// bench/llama_sweep.ts (the same cached GGUF files, written first where
// missing), with the quantized GEMMs on integer tiles (the default: Q8_0
// as i16 `pmaddwd`, Q4_0 as bytes) against the tiles of exact integer
// products in F32 (`intGemm` off, the way before), alternating round by
// round in one process: CPU milliseconds of this process (user + system)
// and wall milliseconds, medians, and whether the logits of the two ways
// are bit for bit the same (they must be).
//
//   deno run -A bench/prefill_ab.ts [--types Q8_0] [--widths 576,2048]
//     [--tokens 128] [--rounds 7] [--threads 1]

import process from "node:process";
import { memorySource } from "../core/sources.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { state } from "../kernels/fast/_dispatch.ts";
import { configureKernels, kernelInfo } from "../kernels/fast/runtime.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import { SMOLLM_135M, smolLmShapeGguf } from "./_decode.ts";
import { cpuLine, median } from "./_peer.ts";

const args: Record<string, string> = {
  types: "Q8_0",
  widths: "576,2048",
  tokens: "128",
  rounds: "7",
  threads: "1",
};
for (let i = 0; i < Deno.args.length; i += 2) {
  args[Deno.args[i].replace(/^--/, "")] = Deno.args[i + 1];
}
const T = Number(args.tokens);
await configureKernels({ threads: Number(args.threads) });
console.log(cpuLine());
console.log(`kernels: ${JSON.stringify(kernelInfo())}`);

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const shapes: Record<number, [number, number, number]> = {
  576: [30, 1536, 49152],
  1024: [12, 2816, 32000],
  2048: [4, 5632, 32000],
};
console.log(
  "| model | integer tiles CPU ms | F32 tiles CPU ms | ratio (CPU) | wall ms, integer / F32 | logits identical |",
);
console.log("| ---- | ---- | ---- | ---- | ---- | ---- |");
for (const width of args.widths.split(",").map(Number)) {
  const [layers, intermediate, vocab] = shapes[width];
  const s = width === 576 ? SMOLLM_135M : {
    ...SMOLLM_135M,
    vocab,
    hidden: width,
    layers,
    heads: width / 64,
    kvHeads: Math.max(1, width / 256),
    intermediate,
  };
  for (const type of args.types.split(",") as ("Q8_0" | "Q4_0")[]) {
    const path = `${
      Deno.env.get("TMPDIR") ?? "/tmp"
    }/modelhost-llama-${width}x${layers}-${type}.gguf`;
    let bytes: Uint8Array;
    try {
      bytes = await Deno.readFile(path);
    } catch {
      bytes = await smolLmShapeGguf(type, 1, s);
      await Deno.writeFile(`${path}.tmp`, bytes);
      await Deno.rename(`${path}.tmp`, path);
    }
    const model = await transformerFromGguf(
      await readGguf(memorySource(bytes)),
    );
    const prompt = Array.from(
      { length: T },
      (_, i) => 3 + 256 + ((i * 7919) % (s.vocab - 260)),
    );
    const run = (ints: boolean) => {
      state.intGemm = ints;
      const c0 = cpu(), t0 = performance.now();
      const logits = model.forward(prompt, model.createState());
      return { cpu: cpu() - c0, wall: performance.now() - t0, logits };
    };
    const a = run(true), b = run(false); // warm-up
    let same = a.logits.length === b.logits.length &&
      a.logits.every((v, i) => Object.is(v, b.logits[i]));
    const ca: number[] = [], cb: number[] = [];
    const wa: number[] = [], wb: number[] = [];
    for (let r = 0; r < Number(args.rounds); r++) {
      const order = r % 2 === 0 ? [true, false] : [false, true];
      for (const ints of order) {
        const got = run(ints);
        (ints ? ca : cb).push(got.cpu);
        (ints ? wa : wb).push(got.wall);
        same &&= got.logits.every((v, i) => Object.is(v, a.logits[i]));
      }
    }
    console.log(
      `| ${width}×${layers} ${type} | ${median(ca).toFixed(0)} | ${
        median(cb).toFixed(0)
      } | ${(median(cb) / median(ca)).toFixed(2)}× | ${
        median(wa).toFixed(0)
      } / ${median(wb).toFixed(0)} | ${same ? "yes" : "NO"} |`,
    );
  }
}
state.intGemm = true;
