// Workers stopped by the idle timer restart on the next large kernel. A
// synchronous pass (a prefill, which never yields to the event loop) used
// to run on one thread to its end, since the workers' "ready" messages
// wait for an event-loop turn; it now adopts them from their control
// slots as soon as they are up (`Engine.pollPool`), where the runtime
// lets a worker start while its parent is busy. The split job's
// values must equal the one-thread kernel's (checked against the scalar
// reference by tests/kernels/fast/ops_test.ts).

import { assert, assertEquals } from "@std/assert";
import { partsFor, runSplit, state } from "../../../kernels/fast/_dispatch.ts";
import {
  configureKernels,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";
import { kquantGemmScratchBytes } from "../../../kernels/wasm/_kernels_quant_kgemm.ts";
import { quantHgemmScratchBytes } from "../../../kernels/wasm/_kernels_quant_q8gemm.ts";
import { makeWeight } from "./_helpers.ts";

Deno.test("restarted workers: adopted from their slots during a synchronous pass, same values, a cancelled start leaves no pool", async () => {
  const e = getEngine();
  if (!e) return;
  if (!e.shared) {
    console.log("skipped: no SharedArrayBuffer, no workers");
    return;
  }
  const n = 256 * 64;
  const g0 = new Float32Array(n).map((_, i) => Math.sin(i * 0.37) * 4);
  const u = new Float32Array(n).map((_, i) => Math.cos(i * 0.11));
  const gp = e.scratch("adopt_g", n * 4 + 64);
  const up = e.scratch("adopt_u", n * 4 + 64);
  const op = e.scratch("adopt_o", n * 4 + 64);
  e.f32.set(u, up >> 2);
  e.f32.set(g0, gp >> 2);
  e.fn.swiglu(gp, up, op, n);
  const want = e.f32.slice(op >> 2, (op >> 2) + n);
  try {
    await configureKernels({ threads: 2, minParallelWork: 1 });
    assert(e.pool, "configureKernels started the pool");
    // what the idle timer does after `idleMs` without parallel work
    await state.starting;
    e.stopPool();
    assertEquals(e.pool, undefined);
    // the first large kernel starts the workers and runs on this thread
    assertEquals(partsFor(e, 1 << 30, 64), 1);
    // a synchronous loop, as in a forward pass: no await until adopted.
    // Whether a worker can get ready while its parent never turns its
    // event loop is the runtime's affair (Deno mostly lets it; a browser
    // may not), so a pass that waits 3 s in vain goes on one thread and
    // the pool arrives with the next turn, as before
    const t0 = performance.now();
    let parts = 1;
    while (parts === 1 && performance.now() - t0 < 3000) {
      parts = partsFor(e, 1 << 30, 64);
    }
    console.log(
      parts === 2
        ? `adopted without an event-loop turn after ${
          (performance.now() - t0).toFixed(0)
        } ms`
        : "not ready within 3 s without an event-loop turn; waiting for the messages",
    );
    if (parts === 1) {
      await state.starting;
      assert(e.pollPool(), "the pool is there after the start settles");
      parts = partsFor(e, 1 << 30, 64);
    }
    assertEquals(parts, 2);
    assert(e.pool, "the pool was adopted");
    assertEquals(e.pool?.size, 1);
    // the adopted pool runs jobs: split SwiGLU equals the one-thread values
    for (let round = 0; round < 20; round++) {
      e.f32.fill(0, op >> 2, (op >> 2) + n);
      runSplit(e, "swiglu", 1 << 30, 64, (a, b) => [
        gp + a * 1024,
        up + a * 1024,
        op + a * 1024,
        (b - a) * 256,
      ]);
      const got = e.f32.subarray(op >> 2, (op >> 2) + n);
      for (let i = 0; i < n; i++) {
        if (!Object.is(got[i], want[i])) {
          throw new Error(
            `round ${round}: value ${i} is ${got[i]}, expected ${want[i]}`,
          );
        }
      }
    }
    // the start's own promise settles on the same pool (no second pool)
    await state.starting;
    assert(e.pool !== undefined);
    // a start cancelled before its workers are ready leaves no pool and
    // does not turn the threads off
    e.stopPool();
    partsFor(e, 1 << 30, 64);
    const starting = state.starting;
    e.stopPool();
    await starting;
    assertEquals(e.pool, undefined);
    assertEquals(state.threads, 2);
    assertEquals(state.note, undefined);
  } finally {
    await shutdownKernels();
  }
});

Deno.test("restarted workers: adopted when looked for only now and then (a worker with no job sleeps, still ready)", async () => {
  const e = getEngine();
  if (!e?.shared) return;
  try {
    await configureKernels({ threads: 2, minParallelWork: 1 });
    await state.starting;
    e.stopPool();
    assertEquals(partsFor(e, 1 << 30, 64), 1); // starts the workers
    // a prefill looks between kernels tens of ms apart; by then a worker
    // that is up has spun and gone to sleep: it must still be adopted
    const t0 = performance.now();
    let parts = 1, looks = 0;
    while (parts === 1 && performance.now() - t0 < 3000) {
      const busy = performance.now();
      while (performance.now() - busy < 50) { /* a kernel, no polling */ }
      parts = partsFor(e, 1 << 30, 64);
      looks++;
    }
    console.log(
      `adopted at look ${looks}, after ${
        (performance.now() - t0).toFixed(0)
      } ms`,
    );
    assertEquals(parts, 2);
  } finally {
    await shutdownKernels();
  }
});

Deno.test("restarted workers: quantized GEMM jobs run while the pool is stopped size their per-thread scratch for the configured threads, and keep the one-thread bits when it is adopted part-way", async () => {
  const e = getEngine();
  if (!e?.shared) return;
  // A job sizes its per-thread scratch, then splits; the pool can be
  // adopted in between (at the x packing), and the GEMM then runs on two
  // threads. Scratch sized by the pool of the moment (none) had one slot,
  // the second thread wrote past it, and a 128-token prefill after the
  // idle timer trapped ("memory access out of bounds") where the region
  // ended the memory. Widths larger than any before in this file, so the
  // regions are made here (the one-thread run makes them one slot wide).
  const rows = 23;
  const gemmMin = state.gemmMinRows;
  state.gemmMinRows = 2;
  try {
    const cases = [
      ["Q8_0", 299, 1536, "qgscr", quantHgemmScratchBytes, "q8_0_hgemm"],
      ["Q4_K", 77, 1024, "qkscr", kquantGemmScratchBytes, "q4_k_kgemm"],
    ] as const;
    for (const [dtype, outF, inF, name, bytes, kernel] of cases) {
      const w = makeWeight(dtype, outF, inF);
      const x = new Float32Array(rows * inF).map((_, i) =>
        Math.sin(i * 0.61) * (i % 7 === 0 ? 9 : 1)
      );
      await configureKernels({ threads: 1 });
      const want = fastLinear(x, rows, w);
      const stride = (bytes(inF) + 63) & ~63;
      let adopted = 0;
      for (let round = 0; round < 6; round++) {
        await configureKernels({ threads: 2, minParallelWork: 1 });
        await state.starting;
        e.stopPool();
        // no await from here until the pool is adopted, as in a prefill
        const t0 = performance.now();
        let calls = 0;
        do {
          const got = fastLinear(x, rows, w);
          if (calls++ === 0 && e.fn[kernel]) {
            // the region the job used holds a slot per configured thread
            const at = e.scratch(name, 1);
            assertEquals(
              e.scratch(name, 2 * stride),
              at,
              `${dtype}: ${name} too small for two threads`,
            );
          }
          for (let i = 0; i < got.length; i++) {
            if (!Object.is(got[i], want[i])) {
              throw new Error(
                `${dtype} round ${round} call ${calls}: output ${i} is ${
                  got[i]
                }, expected ${want[i]}`,
              );
            }
          }
        } while (!e.pool && performance.now() - t0 < 3000);
        if (e.pool) adopted++;
      }
      console.log(
        `${dtype}: adopted during ${adopted} of 6 synchronous passes`,
      );
    }
  } finally {
    state.gemmMinRows = gemmMin;
    await shutdownKernels();
  }
});
