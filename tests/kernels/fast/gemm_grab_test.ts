// The quantized GEMM drivers share a job's weight panels between threads
// through an atomic counter, a few panels per grab (`runGemm` in
// kernels/fast/_dispatch.ts). Every panel must be computed exactly once
// and give the bits of the one-thread run, however the grabs fall: here
// with two threads and grab sizes from 2 panels to the whole job, and, on
// this thread alone, with the counter preset as if another thread had
// already taken the first grabs (a thread that starts late). The
// one-thread bits themselves are checked against the scalar reference by
// batch_bits_test.ts and kgemm_bits_test.ts.

import { assert, assertEquals } from "@std/assert";
import { state } from "../../../kernels/fast/_dispatch.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import {
  configureKernels,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import type { FastDType } from "../../../kernels/quant_ref.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";
import { makeWeight } from "./_helpers.ts";

const ROWS = 23; // four full tiles of 5 rows and a tail of 3
// 37 panels of 8 and a last panel of 3 outputs: an odd panel count
const OUT = 299;

/** The GEMM kernel each dtype runs on this engine at ROWS rows. */
const KERNELS: [FastDType, number, string[]][] = [
  ["Q8_0", 96, ["q8_0_hgemm", "q8_0_gemm"]],
  ["Q4_0", 96, ["q4_0_igemm", "q4_0_hgemm", "q4_0_gemm"]],
  ["Q4_K", 256, ["q4_k_kgemm"]],
  ["Q6_K", 256, ["q6_k_kgemm"]],
];

function input(rows: number, inF: number): Float32Array {
  return new Float32Array(rows * inF).map((_, i) =>
    Math.sin(i * 0.61) * (i % 7 === 0 ? 9 : 1)
  );
}

function same(a: Float32Array, b: Float32Array, what: string): void {
  assertEquals(a.length, b.length, what);
  for (let i = 0; i < a.length; i++) {
    if (!Object.is(a[i], b[i])) {
      throw new Error(`${what}: output ${i} is ${a[i]}, expected ${b[i]}`);
    }
  }
}

Deno.test("two threads grabbing panels give the one-thread bits, every grab size", async () => {
  const e = getEngine();
  if (!e) return;
  state.gemmMinRows = 2;
  try {
    for (const [dtype, inF] of KERNELS) {
      const w = makeWeight(dtype, OUT, inF);
      const x = input(ROWS, inF);
      await configureKernels({ threads: 1 });
      const want = fastLinear(x, ROWS, w);
      await configureKernels({ threads: 2, minParallelWork: 1 });
      assert(e.pool, "two threads");
      for (const per of [1, 3, 8, 1000]) {
        state.gemmGrabsPerThread = per;
        for (const grab of [true, false]) {
          state.gemmGrab = grab;
          same(
            fastLinear(x, ROWS, w),
            want,
            `${dtype}, ${per} grabs per thread, grab ${grab}`,
          );
        }
      }
      // every thread ends with one grab past the last panel: the counter
      // shows how many panels were grabbed, each once
      state.gemmGrab = true;
      state.gemmGrabsPerThread = 3;
      fastLinear(x, ROWS, w);
      const counter = e.scratch("gemmcounter", 64);
      const taken = new Int32Array(e.f32.buffer, counter, 1)[0];
      const panels = Math.ceil(OUT / 8);
      const grab = Math.ceil(panels / 6) + (Math.ceil(panels / 6) & 1);
      assertEquals(taken, (Math.ceil(panels / grab) + 2) * grab, dtype);
      await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    }
  } finally {
    state.gemmGrab = true;
    state.gemmGrabsPerThread = 8;
    state.gemmMinRows = 0;
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});

Deno.test("a late thread: the driver takes only the panels left past the counter", () => {
  const e = getEngine();
  if (!e) return;
  state.gemmMinRows = 2;
  const fn = e.fn as Record<string, (...a: number[]) => unknown>;
  try {
    for (const [dtype, inF, names] of KERNELS) {
      const name = names.find((n) => fn[n]);
      if (!name) continue;
      const w = makeWeight(dtype, OUT, inF);
      const x = input(ROWS, inF);
      // capture the driver's arguments from an ordinary one-thread call
      const kernel = fn[name];
      let args: number[] = [];
      fn[name] = (...a: number[]) => {
        args = a;
        return kernel(...a);
      };
      let want: Float32Array;
      try {
        want = fastLinear(x, ROWS, w);
      } finally {
        fn[name] = kernel;
      }
      assertEquals(args.length, 14, `${dtype}: ${name}'s arguments`);
      const [y, outF, p1] = [args[4], args[8], args[10]];
      assertEquals(outF, OUT);
      const counter = e.scratch("gemmtest", 64);
      const c = new Int32Array(e.f32.buffer, counter, 1);
      for (const [grab, before] of [[2, 6], [4, 36], [6, 0], [38, 0]]) {
        const got = new Float32Array(e.f32.buffer, y, ROWS * OUT);
        got.fill(NaN);
        // another thread took the panels [0, before) already
        if (before > 0) kernel(...args.slice(0, 9), 0, before, args[11], 0, 0);
        c[0] = before;
        kernel(...args.slice(0, 9), 0, p1, args[11], counter, grab);
        same(
          got.slice(),
          want,
          `${dtype} ${name}, grab ${grab}, ${before} taken`,
        );
        const grabs = Math.ceil((p1 - before) / grab);
        assertEquals(c[0], before + (grabs + 1) * grab, `${dtype} counter`);
        // a thread that starts after the job is done computes nothing
        got.fill(NaN);
        kernel(...args.slice(0, 9), 0, p1, args[11], counter, grab);
        assert(got.every(Number.isNaN), `${dtype}: no panel after the last`);
      }
    }
  } finally {
    state.gemmMinRows = 0;
  }
});
