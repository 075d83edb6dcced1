import { assert, assertEquals, assertRejects } from "@std/assert";
import {
  allocateKernelBytes,
  configureKernels,
  kernelDefaults,
  kernelInfo,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { fastLinear } from "../../../kernels/fast/matmul.ts";
import { getEngine } from "../../../kernels/wasm/_engine.ts";
import { state } from "../../../kernels/fast/_dispatch.ts";
import { cosines, makeWeight } from "./_helpers.ts";

Deno.test("kernels start single-threaded on the relaxed-SIMD module", () => {
  const info = kernelInfo();
  assertEquals(info.backend, "wasm-relaxed-simd");
  assertEquals([info.threads, info.workers], [1, 0]);
  assert(info.shared);
  assertEquals(kernelDefaults.threads, 1);
});

Deno.test("workers start on request, stop when idle, and restart on the next large kernel", async () => {
  try {
    const info = await configureKernels({
      threads: 2,
      idleMs: 50,
      minParallelWork: 1,
    });
    assertEquals(info.workers, 1, info.note);
    const w = makeWeight("Q8_0", 8, 64);
    fastLinear(cosines(64), 1, w);
    await new Promise((r) => setTimeout(r, 200));
    assertEquals(kernelInfo().workers, 0); // idle timer stopped them
    fastLinear(cosines(64), 1, w); // runs here, restarts them in the background
    for (let i = 0; i < 100 && kernelInfo().workers === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assertEquals(kernelInfo().workers, 1);
  } finally {
    await configureKernels({
      threads: 1,
      idleMs: 1000,
      minParallelWork: 1 << 18,
    });
    await shutdownKernels();
  }
  assertEquals(kernelInfo().workers, 0);
});

Deno.test("a job posted the moment the workers are ready is served (20 restarts)", async () => {
  // Regression: a worker used to read its slot's sequence number only after
  // saying "ready", so a job posted at once was taken for an old one and the
  // caller waited for ever (about every other start, on a quiet machine).
  const w = makeWeight("Q8_0", 64, 64);
  const x = cosines(64);
  const want = fastLinear(x, 1, w);
  try {
    for (let i = 0; i < 20; i++) {
      await configureKernels({ threads: 2, minParallelWork: 1 });
      assertEquals(fastLinear(x, 1, w), want, `start ${i}`);
      await shutdownKernels();
    }
  } finally {
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});

Deno.test("configureKernels refuses a bad thread count", async () => {
  await assertRejects(
    () => configureKernels({ threads: 0 }),
    RangeError,
    "Cannot use 0 kernel threads",
  );
  await assertRejects(
    () => configureKernels({ threads: 1.5 }),
    RangeError,
    "expected an integer ≥ 1",
  );
});

Deno.test("weights read into kernel memory are used in place", () => {
  const w = makeWeight("Q6_K", 4, 256);
  const inKernel = allocateKernelBytes(w.bytes.length);
  inKernel.set(w.bytes);
  const before = kernelInfo().residentBytes;
  const a = fastLinear(cosines(256), 1, w);
  const b = fastLinear(cosines(256), 1, { ...w, bytes: inKernel });
  assertEquals(a, b);
  // the first weight was copied, the second used where it lies
  assertEquals(kernelInfo().residentBytes - before, w.bytes.length);
});

Deno.test("a part its worker has not started is taken back and run by the caller, with the same results", async () => {
  // spin 0: the worker sleeps between jobs, so small jobs usually end on
  // the calling thread before it wakes; static (F32) and shared (Q8_0) splits
  const ws = [makeWeight("F32", 24, 40), makeWeight("Q8_0", 40, 64)];
  const xs = [cosines(3 * 40), cosines(3 * 64)];
  const want = ws.map((w, i) => fastLinear(xs[i], 3, w));
  try {
    await configureKernels({ threads: 2, minParallelWork: 1, spin: 0 });
    // every job split, stalls or not (a loaded machine's would send them to
    // one thread)
    state.stallBackoff = false;
    const pool = getEngine()!.pool!;
    for (let i = 0; i < 200; i++) {
      ws.forEach((w, j) => assertEquals(fastLinear(xs[j], 3, w), want[j]));
    }
    assert(pool.takenBack > 0, "no part was taken back in 400 jobs");
  } finally {
    state.stallBackoff = false;
    await configureKernels({ threads: 1, minParallelWork: 1 << 18 });
    await shutdownKernels();
  }
});

Deno.test("a worker that keeps the caller waiting counts as a stall, and jobs stay on one thread for a while after it", async () => {
  try {
    // workers that poll long between jobs (an earlier test may have set 0)
    // (and no idle timer stopping them while this test waits below)
    await configureKernels({
      threads: 2,
      minParallelWork: 1,
      spin: 1 << 20,
      idleMs: 60_000,
    });
    const e = getEngine()!;
    const pool = e.pool!;
    // the worker's part reads 64 MiB, the caller's 64 bytes: the caller
    // waits for the worker (or, where the other core is busy, loses its
    // own to the worker it woke) far longer than a stall's 0.5 ms
    const chunks = 1 << 20;
    const p = e.alloc(chunks * 64 + 64), out = e.alloc(128);
    const i32 = new Int32Array(e.f32.buffer, p, chunks * 16);
    for (let k = 0; k < i32.length; k++) i32[k] = k & 255;
    const before = pool.stalls;
    // an earlier test's stall may still keep jobs on one thread (the
    // backoff is the realm's, at most 128 ms)
    for (let i = 0; i < 150 && !pool.available(performance.now()); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert(pool.available(performance.now()));
    // small jobs first, until the worker runs its part itself: then it
    // polls for the next one (a sleeping worker's part would be taken back,
    // which is no stall)
    for (let i = 0, k = -1; i < 1000 && k !== pool.takenBack; i++) {
      k = pool.takenBack;
      e.run("read_probe", [[p, out, 0, 1, 1], [p, out + 64, 0, 4096, 1]]);
    }
    const t = performance.now();
    e.run("read_probe", [[p, out, 0, 1, 1], [p, out + 64, 0, chunks, 2]]);
    // both parts ran: lane sums of the first chunk and of all of them
    const lanes = (c1: number) =>
      [0, 1, 2, 3].map((l) => {
        let s = 0;
        for (let k = l; k < c1 * 16; k += 4) s = (s + (k & 255)) | 0;
        return s;
      });
    assertEquals([...new Int32Array(e.f32.buffer, out, 4)], lanes(1));
    assertEquals([...new Int32Array(e.f32.buffer, out + 64, 4)], lanes(chunks));
    assert(pool.stalls > before, "no stall counted");
    assert(!pool.available(t), "still splitting jobs right after a stall");
    assert(pool.available(t + 1000), "one thread for more than 1 s");
    e.free(p);
    e.free(out);
  } finally {
    await configureKernels({
      threads: 1,
      minParallelWork: 1 << 18,
      spin: kernelDefaults.spin,
      idleMs: kernelDefaults.idleMs,
    });
    await shutdownKernels();
  }
});
