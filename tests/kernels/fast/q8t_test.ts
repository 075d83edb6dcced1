// Q8_0 times one x row through the `q8_0t` kernels (x86 without AVX-VNNI:
// weight codes made unsigned, x split into `x & 31` and `x >> 5`) must
// give the bits of the four-dot kernel that every other CPU runs, which
// matmul_test.ts checks against linearRef and NumPy. Weight codes cover
// −128…127 and activations reach ±127 (the bounds of the i16 lanes).

import { assert, assertEquals } from "@std/assert";
import { state } from "../../../kernels/fast/_dispatch.ts";
import { fastLinear, fastLinearMany } from "../../../kernels/fast/matmul.ts";
import {
  configureKernels,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";
import { cosines, makeWeight } from "./_helpers.ts";

/** Outputs on the four-dot path, then on the default one (`q8_0t` where it applies). */
function both(run: () => Float32Array[]): [Float32Array[], Float32Array[]] {
  const saved = [state.u8Dot, state.signDot, state.split5];
  try {
    state.u8Dot = false;
    state.signDot = false;
    const four = run();
    [state.u8Dot, state.signDot, state.split5] = saved;
    return [four, run()];
  } finally {
    [state.u8Dot, state.signDot, state.split5] = saved;
  }
}

Deno.test("Q8_0, one x row: the q8_0t kernels (unsigned codes, x in two parts) equal the four-dot kernel bit for bit", async () => {
  const e = getEngine()!;
  if (!e.signDot || e.u8Dot) {
    console.log(
      `  skipped: q8_0t runs only where the relaxed dot reads unsigned bytes and saturates (signDot ${e.signDot}, unsignedDot ${e.u8Dot})`,
    );
    return;
  }
  // the kernel the default path takes for one row
  assert(e.fn.q8_0t_mm && e.fn.q8_split5);
  // 1, 3, 4, 8, 13, 18, 21, 48 blocks per row
  const shapes = [
    [32, 9],
    [96, 5],
    [128, 7],
    [256, 11],
    [416, 3],
    [
      576,
      37,
    ],
    [672, 4],
    [1536, 6],
  ];
  for (const threads of [1, 2]) {
    await configureKernels({ threads, minParallelWork: 1 });
    try {
      for (const [inF, outF] of shapes) {
        const w = makeWeight("Q8_0", outF, inF);
        for (const amp of [2, 1e6, 0.5]) {
          const x = cosines(inF, 1, amp);
          const [a, b] = both(() => [fastLinear(x, 1, w)]);
          assertEquals(b, a, `${threads} thread(s), 1×${inF}→${outF}, ${amp}`);
        }
      }
      const ws = [makeWeight("Q8_0", 70, 576), makeWeight("Q8_0", 30, 576)];
      const x = cosines(576, 5);
      const [a, b] = both(() => fastLinearMany(x, 1, ws));
      assertEquals(b, a, `${threads} thread(s), shared job`);
    } finally {
      await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
      await shutdownKernels();
    }
  }
});

Deno.test("q8_split5 writes x & 31, then x >> 5, per 32 codes", () => {
  const e = getEngine()!;
  if (!e.fn.q8_split5) {
    console.log("  skipped: plain-SIMD module (no q8_0t kernels)");
    return;
  }
  const n = 64;
  const q8 = e.alloc(n), q16 = e.alloc(2 * n);
  try {
    const codes = Int8Array.from(
      { length: n },
      (_, i) => ((i * 37) % 256) - 128,
    );
    new Int8Array(e.u8.buffer, q8, n).set(codes);
    (e.fn.q8_split5 as unknown as (...a: number[]) => void)(q8, q16, n);
    const out = new Int8Array(e.u8.buffer, q16, 2 * n);
    for (let i = 0; i < n; i++) {
      const b = i >> 5, k = i & 31;
      assertEquals(out[64 * b + k], codes[i] & 31, `x5 of ${codes[i]}`);
      assertEquals(out[64 * b + 32 + k], codes[i] >> 5, `xh of ${codes[i]}`);
      assertEquals(out[64 * b + k] + 32 * out[64 * b + 32 + k], codes[i]);
    }
  } finally {
    e.free(q8);
    e.free(q16);
  }
});
