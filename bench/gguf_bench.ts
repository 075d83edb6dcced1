/**
 * GGUF benchmarks: header parse of the largest vocab GGUF (ours vs
 * `@huggingface/gguf`, both from memory), and Q8_0 / Q4_0 quantize and
 * dequantize of 4 Mi weights.
 *
 * deno bench -A bench/gguf_bench.ts
 */

import { gguf as hfGguf } from "@huggingface/gguf";
import { parseGgufHeader, readGgufHeader } from "../formats/gguf/mod.ts";
import { memorySource } from "../core/sources.ts";
import { dequantizeGguf, quantizeGguf } from "../core/quants/mod.ts";
import { encodeFromF32 } from "../core/dtypes.ts";
import { memoryFetch, vocabGguf, weights } from "./_gguf_inputs.ts";

const vocab = await vocabGguf();
const fetchMem = memoryFetch(vocab.bytes);

Deno.bench({
  name: `@huggingface/gguf: ${vocab.name} metadata + tensor infos`,
  group: "gguf header",
  baseline: true,
  async fn() {
    await hfGguf("https://example.invalid/model.gguf", { fetch: fetchMem });
  },
});
Deno.bench({
  name: `modelhost readGgufHeader (ranged source): ${vocab.name}`,
  group: "gguf header",
  async fn() {
    await readGgufHeader(memorySource(vocab.bytes));
  },
});
Deno.bench({
  name: `modelhost parseGgufHeader (bytes in hand): ${vocab.name}`,
  group: "gguf header",
  fn() {
    parseGgufHeader(vocab.bytes);
  },
});

const N = 4 * 1024 * 1024;
const x = weights(N);
const q8 = quantizeGguf("Q8_0", x);
const q4 = quantizeGguf("Q4_0", x);

Deno.bench({
  name: "F32 → F16 (16 MiB of F32)",
  group: "quantize",
  baseline: true,
  fn() {
    encodeFromF32("F16", x);
  },
});
Deno.bench({
  name: "F32 → Q8_0 (16 MiB of F32)",
  group: "quantize",
  fn() {
    quantizeGguf("Q8_0", x);
  },
});
Deno.bench({
  name: "F32 → Q4_0 (16 MiB of F32)",
  group: "quantize",
  fn() {
    quantizeGguf("Q4_0", x);
  },
});

const f16 = encodeFromF32("F16", x);
Deno.bench({
  name: "F16 → F32 (16 MiB of F32)",
  group: "dequantize",
  baseline: true,
  fn() {
    dequantizeGguf("F16", f16, N);
  },
});
Deno.bench({
  name: "Q8_0 → F32 (16 MiB of F32)",
  group: "dequantize",
  fn() {
    dequantizeGguf("Q8_0", q8, N);
  },
});
Deno.bench({
  name: "Q4_0 → F32 (16 MiB of F32)",
  group: "dequantize",
  fn() {
    dequantizeGguf("Q4_0", q4, N);
  },
});
