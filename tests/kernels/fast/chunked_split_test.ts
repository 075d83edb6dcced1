// Jobs split by `runSplit` go out as a few ranges per thread that the
// threads claim one at a time (`WorkerPool.runChunks`). Every range must
// run exactly once, whether the worker is polling, asleep (woken late), or
// never gets its part (taken back by the caller). SwiGLU written in place
// (`out` = `g`) shows a range run twice (it would apply the gate again)
// or not at all (it would keep the input); the expected values are the
// one-thread kernel's on a copy, which tests/kernels/fast/ops_test.ts
// checks against the scalar reference.

import { assert, assertEquals } from "@std/assert";
import { runSplit, state } from "../../../kernels/fast/_dispatch.ts";
import {
  configureKernels,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";

Deno.test("ranges claimed a chunk at a time each run exactly once, worker polling or asleep", async () => {
  const e = getEngine();
  if (!e) return;
  const n = 256 * 37 + 12; // 38 units of 256 values, the last one short
  const g0 = new Float32Array(n).map((_, i) => Math.sin(i * 0.37) * 4);
  const u = new Float32Array(n).map((_, i) => Math.cos(i * 0.11));
  const gp = e.scratch("test_g", n * 4 + 64);
  const up = e.scratch("test_u", n * 4 + 64);
  e.f32.set(u, up >> 2);
  e.f32.set(g0, gp >> 2);
  e.fn.swiglu(gp, up, gp, n);
  const want = e.f32.slice(gp >> 2, (gp >> 2) + n);
  assert(want.some((v, i) => v !== g0[i]));
  const units = Math.ceil(n / 256);
  const split = (a: number, b: number) => [
    gp + a * 1024,
    up + a * 1024,
    gp + a * 1024,
    Math.min(b * 256, n) - a * 256,
  ];
  try {
    // spin 0: the worker sleeps between jobs and often starts late or
    // loses its part to the caller; spin 1e6: it polls
    for (const spin of [0, 1e6]) {
      await configureKernels({ threads: 2, minParallelWork: 1, spin });
      for (const chunks of [1, 3, 4, 40]) {
        state.splitChunks = chunks;
        for (let round = 0; round < 40; round++) {
          e.f32.set(g0, gp >> 2);
          runSplit(e, "swiglu", n * 24, units, split);
          const got = e.f32.subarray(gp >> 2, (gp >> 2) + n);
          for (let i = 0; i < n; i++) {
            if (!Object.is(got[i], want[i])) {
              throw new Error(
                `spin ${spin}, ${chunks} chunks per thread, round ${round}: value ${i} is ${
                  got[i]
                }, expected ${want[i]}`,
              );
            }
          }
        }
      }
      await shutdownKernels();
    }
    assertEquals(state.splitChunks, 40);
  } finally {
    state.splitChunks = 4;
    await configureKernels({
      threads: 1,
      minParallelWork: 1 << 18,
      spin: 20000,
    });
    await shutdownKernels();
  }
});
