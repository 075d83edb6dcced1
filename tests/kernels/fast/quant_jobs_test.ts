// The parts of a quantized job around the dot products: the two-ended
// chunk counter and weight streams of `name_mm`, the `touch` kernel an
// idle worker runs, the job-sequence prediction that feeds it, the
// two-row `name_dot2`, the Q8_0 kernel with two dots per block where the
// relaxed dot takes unsigned bytes, and the bandwidth probe the matvec
// benchmarks compare against.

import { assert, assertEquals } from "@std/assert";
import { state, touchAfter } from "../../../kernels/fast/_dispatch.ts";
import { fastLinear, fastLinearMany } from "../../../kernels/fast/matmul.ts";
import { rowBytes } from "../../../kernels/quant_ref.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../../../kernels/fast/runtime.ts";
import { type Engine, getEngine } from "../../../kernels/wasm/_engine.ts";
import {
  READ_MARGIN,
  TOUCH_STEP,
  U8_DOT_PROBE,
} from "../../../kernels/wasm/_kernels_quant.ts";
import { cosines, makeWeight } from "./_helpers.ts";

type Fn = (...a: number[]) => number;
const fn = (e: Engine, name: string) => e.fn[name] as unknown as Fn;

/**
 * A weight and one quantized x row in kernel memory, ready for `name_mm`
 * (or `name_dot`); `free()` gives the memory back.
 */
function setUp(
  e: Engine,
  outF: number,
  inF: number,
  dtype: "Q8_0" | "Q4_0" | "Q5_0" | "Q4_K" | "Q6_K" = "Q8_0",
  x: Float32Array = cosines(inF, 2),
) {
  const w = makeWeight(dtype, outF, inF);
  const wp = e.alloc(w.bytes.length);
  e.u8.set(w.bytes, wp);
  const xs = e.alloc(inF * 4);
  e.f32.set(x, xs >> 2);
  const q8 = e.alloc(inF + 64), q16 = e.alloc(2 * inF + 64);
  const meta = e.alloc((inF / 32) * 16 + 64);
  fn(e, dtype.endsWith("_K") ? "quantize_xk" : "quantize_x")(
    xs,
    1,
    inF,
    q8,
    q16,
    meta,
  );
  const y = e.alloc(outF * 4), bias = e.alloc(outF * 4);
  e.f32.fill(0, bias >> 2, (bias >> 2) + outF);
  const desc = e.alloc(16), counter = e.alloc(64);
  new Int32Array(e.f32.buffer, desc, 4).set([wp, y, bias, outF]);
  const free = () => {
    for (const p of [wp, xs, q8, q16, meta, y, bias, desc, counter]) e.free(p);
  };
  return { w, wp, x, q8, q16, meta, y, desc, counter, free };
}

Deno.test("name_mm: chunks taken from the bottom and the top meet exactly once (counter halves), read in 1 to 4 streams", () => {
  const e = getEngine()!;
  const outF = 23, inF = 96, chunk = 3; // 8 chunks, the last one of 2 rows
  const s = setUp(e, outF, inF);
  const want = fastLinear(s.x, 1, s.w);
  const lim = e.f32.buffer.byteLength - READ_MARGIN;
  const counter = new Int32Array(e.f32.buffer, s.counter, 1);
  const kernels = ["q8_0_mm", ...(e.u8Dot ? ["q8_0u_mm"] : [])];
  for (
    const [kernel, streams] of kernels.flatMap((k) =>
      [1, 2, 3, 4].map((n) => [k, n] as const)
    )
  ) {
    for (const top of [0, 1]) {
      // [bottom chunks, top chunks] already taken by "other threads"
      for (const [lo, hi] of [[0, 0], [3, 2], [0, 8], [5, 0], [4, 4]]) {
        const y = new Float32Array(e.f32.buffer, s.y, outF);
        y.fill(NaN);
        counter[0] = lo | (hi << 16);
        fn(e, kernel)(
          s.desc,
          1,
          s.q8,
          s.q16,
          s.meta,
          1,
          inF,
          s.counter,
          chunk,
          outF,
          lim,
          top,
          streams,
        );
        const what =
          `${kernel} (${streams} streams) top ${top} after ${lo} + ${hi} chunks`;
        for (let o = 0; o < outF; o++) {
          const c = Math.floor(o / chunk);
          const taken = c < lo || c >= 8 - hi;
          if (taken) assert(Number.isNaN(y[o]), `${what}: row ${o} written`);
          else assertEquals(y[o], want[o], `${what}: row ${o}`);
        }
        // this thread took every chunk left, then one more look found none
        const after = counter[0];
        const took = 8 - lo - hi + 1;
        assertEquals(
          after,
          top ? lo | ((hi + took) << 16) : (lo + took) | (hi << 16),
          what,
        );
      }
    }
  }
  s.free();
});

Deno.test("touch: reads one i32 per 64-byte line of each range, top down, and stops on a new job or at the limit", () => {
  const e = getEngine()!;
  const touch = fn(e, "touch");
  const lines = 3 * (TOUCH_STEP / 64) + 5; // several steps and a partial one
  const base = e.alloc(lines * 64 + 64);
  const i32 = new Int32Array(e.f32.buffer);
  for (let k = 0; k < lines; k++) i32[(base >> 2) + 16 * k] = k + 1;
  const list = e.alloc(64), seqWord = e.alloc(64);
  const L = new Int32Array(e.f32.buffer, list, 8);
  i32[seqWord >> 2] = 7;
  const lim = e.f32.buffer.byteLength - READ_MARGIN;
  const sum = (from: number, to: number) => {
    let s = 0;
    for (let k = from; k < to; k++) s += k + 1;
    return s;
  };
  // two ranges: all lines, then lines 2..4
  L.set([base, lines * 64, base + 2 * 64, 3 * 64]);
  assertEquals(touch(list, 2, seqWord, 7, lim), sum(0, lines) + sum(2, 5));
  // a new job posted: nothing read
  assertEquals(touch(list, 2, seqWord, 6, lim), 0);
  // the limit cuts the range: only lines below it
  assertEquals(touch(list, 1, seqWord, 7, base + 10 * 64), sum(0, 10));
  // a range that wraps around the address space ends at the limit
  L.set([base + 64 * (lines - 2), -64]);
  assertEquals(
    touch(list, 1, seqWord, 7, base + lines * 64),
    sum(lines - 2, lines),
  );
  // ranges in the reserved low memory are skipped
  L.set([64, 1024]);
  assertEquals(touch(list, 1, seqWord, 7, lim), 0);
  e.free(base);
  e.free(list);
  e.free(seqWord);
});

Deno.test("touchAfter: each job predicts the one that followed it last time, its top bytes first, within the budget", () => {
  const e = getEngine()!;
  const read = (t: { list: number; n: number } | undefined) =>
    t ? [...new Int32Array(e.f32.buffer, t.list, 2 * t.n)] : undefined;
  const saved = state.touchBytes;
  try {
    state.touchBytes = 1000;
    const A = [100_000, 5000], B = [200_000, 600, 300_000, 700];
    const C = [400_000, 64];
    assertEquals(read(touchAfter(e, A[0], A)), undefined); // nothing seen yet
    assertEquals(read(touchAfter(e, B[0], B)), undefined);
    assertEquals(read(touchAfter(e, C[0], C)), undefined);
    // A came after C; B after A: the top of B's last segment, then of its first
    assertEquals(read(touchAfter(e, A[0], A)), [300_000, 700, 200_300, 300]);
    assertEquals(read(touchAfter(e, B[0], B)), [400_000, 64]);
    assertEquals(read(touchAfter(e, C[0], C)), [104_000, 1000]);
    state.touchBytes = 0;
    assertEquals(read(touchAfter(e, A[0], A)), undefined);
  } finally {
    state.touchBytes = saved;
  }
});

/** Q8_0 outputs with the unsigned-dot kernels allowed or not. */
function both(
  run: () => Float32Array[],
): [Float32Array[], Float32Array[]] {
  state.u8Dot = false;
  try {
    const split = run();
    state.u8Dot = true;
    return [split, run()];
  } finally {
    state.u8Dot = true;
  }
}

Deno.test("Q8_0 with two dots per block (unsigned relaxed dot) equals the four-dot kernel bit for bit", async () => {
  const e = getEngine()!;
  const probe = fn(e, "probe_u8dot")();
  assertEquals(kernelInfo().unsignedDot, probe === U8_DOT_PROBE);
  if (!e.u8Dot) {
    console.log(
      `  skipped: this engine's relaxed dot gives ${probe} on the probe, not ${U8_DOT_PROBE} (no unsigned-byte dot), so Q8_0 always takes the four-dot kernel`,
    );
    return;
  }
  // 1, 3, 4, 8, 13, 18, 48 blocks per row; codes cover −128..127
  const shapes = [[32, 9], [96, 5], [128, 7], [256, 11], [416, 3], [
    576,
    37,
  ], [1536, 6]];
  for (const threads of [1, 2]) {
    await configureKernels({ threads, minParallelWork: 1 });
    try {
      for (const [inF, outF] of shapes) {
        const w = makeWeight("Q8_0", outF, inF);
        for (const rows of [1, 3]) {
          // large activations too: codes ±127 against weights of −128
          const x = cosines(rows * inF, 1, rows === 3 ? 1e6 : 2);
          const [a, b] = both(() => [fastLinear(x, rows, w)]);
          assertEquals(b, a, `${threads} thread(s), ${rows}×${inF}→${outF}`);
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
  assert(rowBytes("Q8_0", 576) === 612);
});

Deno.test("name_dot2 gives each of its two rows exactly what name_dot gives it", () => {
  const e = getEngine()!;
  type D = "Q8_0" | "Q4_0" | "Q5_0" | "Q4_K" | "Q6_K";
  const kinds: [string, D][] = [
    ["q8_0", "Q8_0"],
    ["q4_0", "Q4_0"],
    ["q5_0", "Q5_0"],
    ["q4_k", "Q4_K"],
    ["q6_k", "Q6_K"],
    ...(e.u8Dot ? [["q8_0u", "Q8_0"] as [string, "Q8_0"]] : []),
  ];
  const lim = e.f32.buffer.byteLength - READ_MARGIN;
  // 1 to 21 blocks (8- and 4-block groups, 0 to 3 left over) and 48
  for (const nb of [...Array.from({ length: 21 }, (_, i) => i + 1), 48]) {
    for (const [kind, dtype] of kinds) {
      // the K-quants: 1 to 21 and 48 blocks of 256 would be slow; 1 to 7
      if (dtype.endsWith("_K") && nb > 7) continue;
      const inF = (dtype.endsWith("_K") ? 256 : 32) * nb;
      const { wp, q8, q16, meta, free } = setUp(
        e,
        5,
        inF,
        dtype,
        cosines(inF, nb, 3),
      );
      const rb = rowBytes(dtype, inF);
      const one = (o: number) =>
        fn(e, `${kind}_dot`)(wp + o * rb, nb, q8, q16, meta, inF / 8, lim);
      const two = e.fn[`${kind}_dot2`] as unknown as (
        ...a: number[]
      ) => number[];
      // rows in either order, apart or the same
      for (const [a, b] of [[0, 1], [4, 2], [3, 3]]) {
        assertEquals(
          two(wp + a * rb, wp + b * rb, nb, q8, q16, meta, inF / 8, lim),
          [one(a), one(b)],
          `${kind} ${nb} blocks, rows ${a} and ${b}`,
        );
      }
      free();
    }
  }
});

Deno.test("read_probe (the benchmarks' bandwidth bound) reads every chunk of its range once, in 1 to 8 runs", () => {
  const e = getEngine()!;
  const chunks = 37; // not a multiple of the run counts
  const p = e.alloc(chunks * 64 + 64), out = e.alloc(64);
  const i32 = new Int32Array(e.f32.buffer);
  for (let k = 0; k < chunks * 16; k++) i32[(p >> 2) + k] = k * 7 + 1;
  // lane l of the checksum sums the words at indices ≡ l (mod 4)
  const want = (c0: number, c1: number) =>
    [0, 1, 2, 3].map((l) => {
      let s = 0;
      for (let k = c0 * 16 + l; k < c1 * 16; k += 4) s += k * 7 + 1;
      return s;
    });
  for (const streams of [1, 2, 3, 8]) {
    for (const [c0, c1] of [[0, chunks], [5, 30], [3, 4], [9, 9]]) {
      fn(e, "read_probe")(p, out, c0, c1, streams);
      assertEquals(
        [...new Int32Array(e.f32.buffer, out, 4)],
        want(c0, c1),
        `${streams} runs over chunks ${c0}..${c1}`,
      );
    }
  }
  e.free(p);
  e.free(out);
});
