// Decode-step benchmarks on the layers wired to the fast kernels: a
// SmolLM-135M-shaped Llama cut to 4 layers (same widths, same 49152-token
// lm_head), random weights written as Q8_0 GGUF by our writer, decoding 8
// tokens from an empty KV cache per iteration. The side-by-side with
// llama.cpp (all 30 layers) is `deno task bench:compare --only decode`.
//
//   deno bench -A bench/decode_bench.ts

import { configureKernels } from "../kernels/fast/runtime.ts";
import {
  decode,
  networkFromGguf,
  type Shape,
  SMOLLM_135M,
  smolLmShapeGguf,
} from "./_decode.ts";

const shape: Shape = { ...SMOLLM_135M, layers: 4 };
const net = await networkFromGguf(
  await smolLmShapeGguf("Q8_0", 1, shape),
  shape,
);
decode(net, 8); // upload the weights once

Deno.bench({
  name: "decode 8 tokens, 1 thread",
  group: "smollm-shape-4-layers-q8_0",
  baseline: true,
  async fn(b) {
    await configureKernels({ threads: 1 });
    b.start();
    decode(net, 8);
    b.end();
  },
});

Deno.bench({
  name: "decode 8 tokens, 2 threads",
  group: "smollm-shape-4-layers-q8_0",
  async fn(b) {
    await configureKernels({ threads: 2 }); // workers stop 1 s after the last run
    b.start();
    decode(net, 8);
    b.end();
  },
});
