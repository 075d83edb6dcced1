/**
 * Side-by-side in one run: GGUF metadata + tensor-info parse of the largest
 * vocab GGUF fixture, modelhost vs `@huggingface/gguf` (both reading the
 * same bytes from memory through ranged reads), and Q8_0 / Q4_0 quantize and
 * dequantize throughput. Prints medians and ratios.
 *
 * deno run -A bench/gguf_compare.ts [rounds=15]
 */

import { gguf as hfGguf } from "@huggingface/gguf";
import { parseGgufHeader, readGgufHeader } from "../formats/gguf/mod.ts";
import { memorySource } from "../core/sources.ts";
import { dequantizeGguf, quantizeGguf } from "../core/quants/mod.ts";
import { memoryFetch, vocabGguf, weights } from "./_gguf_inputs.ts";

const rounds = Number(Deno.args[0] ?? 15);

async function median(fn: () => unknown): Promise<number> {
  await fn(); // warm-up
  const t: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    await fn();
    t.push(performance.now() - t0);
  }
  t.sort((a, b) => a - b);
  return t[t.length >> 1];
}

const vocab = await vocabGguf();
const fetchMem = memoryFetch(vocab.bytes);
const hf = await median(() =>
  hfGguf("https://example.invalid/model.gguf", { fetch: fetchMem })
);
const ours = await median(() => readGgufHeader(memorySource(vocab.bytes)));
const oursSync = await median(() => parseGgufHeader(vocab.bytes));
const mb = (vocab.bytes.length / 1e6).toFixed(2);
console.log(
  `GGUF header parse, ${vocab.name} (${mb} MB), median of ${rounds}:`,
);
console.log(
  `  @huggingface/gguf 0.1.18        ${hf.toFixed(1).padStart(8)} ms`,
);
console.log(
  `  modelhost readGgufHeader        ${ours.toFixed(1).padStart(8)} ms   ${
    (hf / ours).toFixed(1)
  }× faster`,
);
console.log(
  `  modelhost parseGgufHeader       ${oursSync.toFixed(1).padStart(8)} ms   ${
    (hf / oursSync).toFixed(1)
  }× faster`,
);

const N = 4 * 1024 * 1024;
const x = weights(N);
const mbF32 = (N * 4) / 1e6;
console.log(
  `\nBlock quantization of ${N} weights (${
    mbF32.toFixed(1)
  } MB of F32), median of ${rounds}:`,
);
for (const type of ["Q8_0", "Q4_0"] as const) {
  const q = quantizeGguf(type, x);
  const tq = await median(() => quantizeGguf(type, x));
  const td = await median(() => dequantizeGguf(type, q, N));
  console.log(
    `  ${type}: quantize ${
      (mbF32 / (tq / 1000)).toFixed(0).padStart(5)
    } MB/s   dequantize ${
      (mbF32 / (td / 1000)).toFixed(0).padStart(5)
    } MB/s   (F32 MB per second; dequantize/quantize ${(tq / td).toFixed(1)}×)`,
  );
}
