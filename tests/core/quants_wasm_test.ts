// The WebAssembly scale search of Q4_K / Q5_K (core/quants/_k_wasm.ts)
// against the scalar port of ggml's make_qkx2_quants (itself checked
// against llama-quantize's files in tests/formats/gguf_presets_test.ts,
// which now run through the WebAssembly path): same bytes on varied
// blocks, including all-equal sub-blocks and zero blocks; and the stored
// module is the one the kernel source emits.

import { assertEquals } from "@std/assert";
import { k4SearchWasm, kWasmState } from "../../core/quants/_k_wasm.ts";
import { K_QUANT_WASM_BASE64 } from "../../core/quants/_k_wasm_bytes.ts";
import {
  quantizeQ4_K,
  quantizeQ5_K,
  quantizeQ6_K,
} from "../../core/quants/k_encode.ts";
import { renderQuantizeKBytesFile } from "../../kernels/wasm/_kernels_quantize_k.ts";

function input(blocks: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const rnd = () => (s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const x = new Float32Array(256 * blocks);
  for (let i = 0; i < x.length; i++) {
    const scale = [0.02, 1, 40, 1e-6][(i >> 8) % 4];
    x[i] = (rnd() - 0.5) * scale + (i % 7 === 0 ? rnd() * scale : 0);
  }
  x.fill(0.25, 256 * 3, 256 * 3 + 32); // one all-equal sub-block
  x.fill(0, 256 * 5, 256 * 6); // a zero block
  x.fill(-1.5, 256 * 9 + 64, 256 * 9 + 96); // negative, all equal
  for (let i = 0; i < 256; i++) x[256 * 11 + i] = i % 2 ? 3 : -3; // two levels
  // a sub-block far below the others: its 6-bit scale rounds to 0 (d = 0)
  for (let i = 256 * 13; i < 256 * 13 + 32; i++) x[i] *= 1e-7;
  for (let i = 256 * 14 + 64; i < 256 * 14 + 96; i++) {
    x[i] = Math.abs(x[i]) * 1e-7;
  }
  return x;
}

Deno.test("quants wasm: Q4_K, Q5_K and Q6_K searches give the scalar code's bytes", () => {
  // the WebAssembly path really runs here (not a silent fallback)
  const probe = new Float32Array(256).map((_, i) => Math.sin(i));
  const z = () => new Float32Array(8);
  assertEquals(
    k4SearchWasm(probe, 0, 1, 15, -1, 0.1, 20, z(), z(), new Int32Array(256)),
    true,
  );
  // 150 blocks: two full chunks of 64 and a partial one
  for (const seed of [1, 7]) {
    const x = input(150, seed);
    for (const f of [quantizeQ4_K, quantizeQ5_K, quantizeQ6_K]) {
      kWasmState.enabled = false;
      let scalar: Uint8Array;
      try {
        scalar = f(x);
      } finally {
        kWasmState.enabled = true;
      }
      assertEquals(f(x), scalar, `${f.name} seed ${seed}`);
    }
  }
});

Deno.test("quants wasm: the stored module is current", () => {
  const text = renderQuantizeKBytesFile();
  assertEquals(text.includes(K_QUANT_WASM_BASE64.slice(0, 60)), true);
  const stored = text.split("\n").filter((l) => l.startsWith('  "')).map((
    l,
  ) => l.trim().replace(/^"|" \+$|";$/g, "")).join("");
  assertEquals(stored, K_QUANT_WASM_BASE64);
});
