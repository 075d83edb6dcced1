// One 128-row quantized GEMM call's two halves, alone and side by side:
// the kernel's arguments captured from a `fastLinear` call, then replayed
// (a) the whole range on this thread, (b) one half on this thread with the
// worker idle, (c) both halves split over the pool (this thread's own part
// timed separately), (d) both halves on one thread. Rounds alternate the
// ways; medians in microseconds. Also a compute-only probe (`--l2`): each
// thread repeatedly runs the kernel on a tiny private problem that fits
// the L1 cache, alone and side by side, to see whether the two vCPUs share
// a core's execution units.
//
//   deno run -A bench/gemm_split_probe.ts [--shapes 1536x576,576x576,576x1536]
//     [--rows 128] [--rounds 200]

import { state } from "../kernels/fast/_dispatch.ts";
import { fastLinear } from "../kernels/fast/matmul.ts";
import { configureKernels } from "../kernels/fast/runtime.ts";
import { getEngine } from "../kernels/wasm/_engine.ts";
import { makeWeight } from "../tests/kernels/fast/_helpers.ts";
import { cpuLine, median } from "./_peer.ts";

const args: Record<string, string> = {
  shapes: "1536x576,576x576,576x1536,5632x2048",
  rows: "128",
  rounds: "200",
  type: "Q8_0",
};
for (let i = 0; i < Deno.args.length; i += 2) {
  args[Deno.args[i].replace(/^--/, "")] = Deno.args[i + 1];
}
console.log(cpuLine());
await configureKernels({ threads: 2, idleMs: Infinity });
const e = getEngine()!;
const fn = e.fn as Record<string, (...a: number[]) => unknown>;
const name = args.type === "Q8_0" ? "q8_0_hgemm" : "q4_0_igemm";
const kernel = fn[name];
let captured: number[] = [];
fn[name] = (...a: number[]) => {
  captured = a;
  return kernel(...a);
};
let ownMs = 0;
const timedKernel = (...a: number[]) => {
  const t = performance.now();
  kernel(...a);
  ownMs += performance.now() - t;
};
const rows = Number(args.rows);
for (const shape of args.shapes.split(",")) {
  const [outF, inF] = shape.split("x").map(Number);
  const w = makeWeight(args.type as "Q8_0", outF, inF);
  const x = new Float32Array(rows * inF).map((_, i) => Math.sin(i * 0.37));
  state.minParallelWork = Infinity; // capture one whole call
  fastLinear(x, rows, w);
  state.minParallelWork = 1 << 18;
  const a = captured.slice();
  const P = Math.ceil(outF / 8);
  const half = Math.floor(P / 2);
  const part = (p0: number, p1: number, s: number) => {
    const b = a.slice();
    b[9] = p0;
    b[10] = p1;
    b[11] = a[11] + s * (((b[11] - a[11]) | 0) + 0); // same scratch base
    return b;
  };
  // scratch per part: the engine allocated `stride × (workers + 1)`; use
  // the second slot for the second half (as quantGemmJob does)
  const stride = (inF * 16 + (inF / 32) * 32 + 5 * 5 * 32 + 192 + 63) & ~63;
  const A = part(0, half, 0), B = part(half, P, 0);
  B[11] = a[11] + stride;
  const ways: Record<string, () => number> = {
    whole: () => {
      const t = performance.now();
      kernel(...a);
      return performance.now() - t;
    },
    "half alone": () => {
      const t = performance.now();
      kernel(...A);
      return performance.now() - t;
    },
    "halves serial": () => {
      const t = performance.now();
      kernel(...A);
      kernel(...B);
      return performance.now() - t;
    },
    "split grab": () => {
      const counter = e.scratch("probecounter", 64);
      new Int32Array(e.f32.buffer, counter, 1)[0] = 0;
      const g = Math.max(2, Math.ceil(P / 16) + (Math.ceil(P / 16) & 1));
      const t = performance.now();
      e.run(name, [
        [...a.slice(0, 9), 0, P, a[11], counter, g],
        [...a.slice(0, 9), 0, P, a[11] + stride, counter, g],
      ]);
      return performance.now() - t;
    },
    "split wall": () => {
      ownMs = 0;
      const t = performance.now();
      const f0 = fn[name];
      fn[name] = timedKernel;
      e.run(name, [A, B]);
      fn[name] = f0;
      return performance.now() - t;
    },
  };
  const got: Record<string, number[]> = {};
  const own: number[] = [];
  const tb0 = e.pool!.takenBack;
  for (let r = 0; r < Number(args.rounds); r++) {
    const order = Object.keys(ways);
    if (r % 2) order.reverse();
    for (const k of order) {
      (got[k] ??= []).push(ways[k]());
      if (k === "split wall") own.push(ownMs);
    }
  }
  const m = (k: string) => median(got[k]) * 1000;
  console.log(
    `${shape} ${rows} rows: whole ${m("whole").toFixed(0)} µs, half alone ${
      m("half alone").toFixed(0)
    }, halves serial ${m("halves serial").toFixed(0)}, split wall ${
      m("split wall").toFixed(0)
    } (own part ${(median(own) * 1000).toFixed(0)}), split grab ${
      m("split grab").toFixed(0)
    } (taken back ${e.pool!.takenBack - tb0} of ${args.rounds}); scaling ×${
      (m("whole") / m("split wall")).toFixed(2)
    }`,
  );
}
await configureKernels({ threads: 1 });
