/**
 * Side-by-side ratios for the fast kernels, in one run (`deno task bench:compare`):
 *
 * 1. Dense MLP forward (batch 64, 1024 → 4096 → ReLU → 1024, F32) against
 *    ONNX Runtime (`npm:onnxruntime-node`, 2 intra-op threads) on an ONNX
 *    model of the same MLP with the same weights. Our ONNX exporter does not
 *    exist yet, so this script writes the weights to a temp folder and builds
 *    the model bytes there with the `onnx` Python helper of /usr/bin/python3
 *    (to be switched to our exporter).
 * 2. Matvec 4096 × 4096 (decode: one row) for Q8_0, Q4_0 (and the other
 *    fast dtypes) against the bandwidth bound: the time to stream the same
 *    weight bytes once through SIMD loads (`read_probe`), on the same
 *    threads.
 *
 * Timing: wall clock, the two sides of each ratio alternate in rounds; the
 * tables give each side's best round and the median of the per-round ratios
 * (robust on a shared machine). Options: `--threads N` (default 2),
 * `--rounds N` (default 15), `--skip-ort`.
 */

import { parseArgs } from "@std/cli";
import { fastLinear } from "../kernels/fast/matmul.ts";
import { configureKernels, shutdownKernels } from "../kernels/fast/runtime.ts";
import { runSplit } from "../kernels/fast/_dispatch.ts";
import { getEngine } from "../kernels/wasm/_engine.ts";
import type { Tensor } from "../core/tensor.ts";
import type { FastDType } from "../kernels/fast/quant_ref.ts";
import { makeWeight } from "../tests/kernels/fast/_helpers.ts";

const args = parseArgs(Deno.args, {
  string: ["threads", "rounds"],
  boolean: ["skip-ort"],
  default: { threads: "2", rounds: "15" },
});
const THREADS = Number(args.threads);
const ROUNDS = Number(args.rounds);

function loadAverage(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(
      " ",
    );
  } catch {
    return "unknown";
  }
}

function machine(): string {
  let cpu = "unknown CPU";
  try {
    const info = Deno.readTextFileSync("/proc/cpuinfo");
    cpu = /model name\s*:\s*(.*)/.exec(info)?.[1] ?? cpu;
  } catch { /* not Linux */ }
  return `${cpu}, ${navigator.hardwareConcurrency} logical CPUs, Deno ${Deno.version.deno} (V8 ${Deno.version.v8}), ${Deno.build.os}-${Deno.build.arch}`;
}

/** Alternates `a` and `b` for `rounds` rounds of `reps` calls each. */
async function compare(
  a: () => unknown,
  b: () => unknown,
  reps: number,
  rounds = ROUNDS,
): Promise<{ a: number; b: number; ratio: number }> {
  const time = async (f: () => unknown) => {
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) await f();
    return (performance.now() - t0) / reps;
  };
  for (let i = 0; i < 3; i++) {
    await a();
    await b();
  }
  let ta = Infinity, tb = Infinity;
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const x = await time(a);
    const y = await time(b);
    ta = Math.min(ta, x);
    tb = Math.min(tb, y);
    ratios.push(x / y);
  }
  ratios.sort((p, q) => p - q);
  return { a: ta, b: tb, ratio: ratios[ratios.length >> 1] };
}

const f1 = (v: number) => v.toFixed(1);
const f2 = (v: number) => v.toFixed(2);

const info = await configureKernels({ threads: THREADS });
console.log(`# Fast kernels vs peers\n`);
console.log(`Machine: ${machine()}`);
console.log(
  `Kernels: ${info.backend}, ${info.threads} thread(s) (${info.workers} worker(s))${
    info.note ? ` — ${info.note}` : ""
  }`,
);
console.log(`Load average at start: ${loadAverage()}\n`);

// ------------------------------------------------------------ MLP vs ORT

const B = 64, D = 1024, H = 4096;
const w1 = Float32Array.from(
  { length: H * D },
  (_, i) => 0.05 * Math.sin(0.37 * i),
);
const b1 = Float32Array.from({ length: H }, (_, i) => 0.01 * Math.cos(i));
const w2 = Float32Array.from(
  { length: D * H },
  (_, i) => 0.03 * Math.cos(0.11 * i),
);
const b2 = Float32Array.from({ length: D }, (_, i) => 0.01 * Math.sin(i));
const x = Float32Array.from({ length: B * D }, (_, i) => 0.1 + 2 * Math.cos(i));
const t1: Tensor = {
  name: "w1",
  dtype: "F32",
  shape: [H, D],
  bytes: new Uint8Array(w1.buffer),
};
const t2: Tensor = {
  name: "w2",
  dtype: "F32",
  shape: [D, H],
  bytes: new Uint8Array(w2.buffer),
};

function ours(): Float32Array {
  const h = fastLinear(x, B, t1, b1);
  for (let i = 0; i < h.length; i++) if (h[i] < 0) h[i] = 0;
  return fastLinear(h, B, t2, b2);
}

const PY = `
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
d, B, D, H = sys.argv[1], ${B}, ${D}, ${H}
ld = lambda n, s: numpy_helper.from_array(np.fromfile(f"{d}/{n}.bin", dtype="<f4").reshape(s), n)
nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["hr"]),
         helper.make_node("Gemm", ["hr", "w2", "b2"], ["y"], transB=1)]
g = helper.make_graph(nodes, "mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, D])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, D])],
    [ld("w1", (H, D)), ld("b1", (H,)), ld("w2", (D, H)), ld("b2", (D,))])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
onnx.checker.check_model(m)
onnx.save(m, f"{d}/mlp.onnx")
`;

async function buildOnnx(dir: string): Promise<string> {
  for (
    const [n, a] of [["w1", w1], ["b1", b1], ["w2", w2], ["b2", b2]] as const
  ) {
    await Deno.writeFile(`${dir}/${n}.bin`, new Uint8Array(a.buffer));
  }
  await Deno.writeTextFile(`${dir}/make.py`, PY);
  const out = await new Deno.Command("/usr/bin/python3", {
    args: [`${dir}/make.py`, dir],
  }).output();
  if (!out.success) {
    throw new Error(
      `building the ONNX model failed: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return `${dir}/mlp.onnx`;
}

const flops = 2 * B * D * H * 2;

/** GFLOP/s of the register-only FMA loop on one thread (best of 5). */
function fmaPeak(): number {
  const e = getEngine()!;
  const out = e.alloc(64);
  const n = 2_000_000;
  e.fn.fma_probe(n, out);
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    e.fn.fma_probe(n, out);
    best = Math.min(best, performance.now() - t0);
  }
  e.free(out);
  return (n * 12 * 8) / best / 1e6;
}
if (!args["skip-ort"]) {
  const dir = await Deno.makeTempDir({ prefix: "modelhost-bench-" });
  try {
    // The peer, pinned here rather than in deno.json: only this script uses it.
    // deno-lint-ignore no-import-prefix
    const ort = await import("npm:onnxruntime-node@1.30.0");
    const session = await ort.InferenceSession.create(await buildOnnx(dir), {
      intraOpNumThreads: 2,
      interOpNumThreads: 1,
      executionMode: "sequential",
      graphOptimizationLevel: "all",
    });
    const feeds = { x: new ort.Tensor("float32", x, [B, D]) };
    const theirs = async () =>
      (await session.run(feeds)).y.data as Float32Array;
    const yo = ours(), yt = await theirs();
    let diff = 0;
    for (let i = 0; i < yo.length; i++) {
      diff = Math.max(diff, Math.abs(yo[i] - yt[i]));
    }
    const r = await compare(ours, theirs, 3);
    console.log(
      `## Dense MLP forward, batch ${B}, ${D} → ${H} → ReLU → ${D}, F32\n`,
    );
    console.log(`| runtime | best ms | GFLOP/s |`);
    console.log(`| --- | ---: | ---: |`);
    console.log(
      `| modelhost (${info.backend}, ${THREADS} threads) | ${f2(r.a)} | ${
        f1(flops / r.a / 1e6)
      } |`,
    );
    console.log(
      `| ONNX Runtime 1.30.0 (2 intra-op threads) | ${f2(r.b)} | ${
        f1(flops / r.b / 1e6)
      } |`,
    );
    console.log(
      `\nThroughput ratio modelhost / ONNX Runtime: **${
        f2(1 / r.ratio)
      }×** (median of rounds; best-vs-best ${
        f2(r.b / r.a)
      }×). Max |difference| of outputs: ${diff.toExponential(1)}.`,
    );
    const peak = fmaPeak();
    const share = (flops / r.a / 1e6) / (peak * THREADS);
    console.log(
      `WebAssembly 128-bit FMA peak (register-only loop): ${
        f1(peak)
      } GFLOP/s per thread; the MLP runs at ${
        f1(share * 100)
      }% of ${THREADS} × that.\n`,
    );
    await session.release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

// ------------------------------------------------------------ matvec vs bandwidth

const N = 4096;
const e = getEngine()!;
const xv = Float32Array.from({ length: N }, (_, i) => 0.1 + 2 * Math.cos(i));
console.log(
  `## Matvec ${N} × ${N} (one row, decode) vs streaming the weights once\n`,
);
console.log(
  `| weights | bytes | matvec ms | GFLOP/s | stream ms | GB/s streamed | matvec / stream |`,
);
console.log(`| --- | ---: | ---: | ---: | ---: | ---: | ---: |`);
for (
  const dtype of [
    "Q8_0",
    "Q4_0",
    "Q4_K",
    "Q6_K",
    "F16",
    "BF16",
    "F32",
  ] as FastDType[]
) {
  const w = makeWeight(dtype, N, N);
  fastLinear(xv, 1, w); // upload once
  const bytes = w.bytes.length;
  const p = e.alloc(bytes);
  e.u8.set(w.bytes, p);
  const out = e.alloc(64);
  const chunks = Math.floor(bytes / 64);
  const stream = () =>
    runSplit(e, "read_probe", chunks * 16, chunks, (a, b) => [p, out, a, b]);
  const r = await compare(
    () => fastLinear(xv, 1, w),
    stream,
    3,
    3 * ROUNDS - 4,
  );
  e.free(p);
  e.free(out);
  console.log(
    `| ${dtype} | ${(bytes / 2 ** 20).toFixed(1)} MiB | ${f2(r.a)} | ${
      f1((2 * N * N) / r.a / 1e6)
    } | ${f2(r.b)} | ${f1(bytes / r.b / 1e6)} | **${f2(r.ratio)}×** |`,
  );
}
console.log(
  `\n(Goal: MLP ≥ 0.5× ONNX Runtime; Q8_0 and Q4_0 matvec within 2× of streaming the weights.)`,
);
console.log(`Load average at end: ${loadAverage()}`);
await shutdownKernels();
