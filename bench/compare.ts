/**
 * Side-by-side ratios for the fast kernels, in one run (`deno task bench:compare`):
 *
 * 1. Dense MLP forward (batch 64, 1024 → 4096 → ReLU → 1024, F32) against
 *    ONNX Runtime (`npm:onnxruntime-node`, 2 intra-op threads) on our own
 *    ONNX export (`exportOnnx`) of the same network and weights. Our side
 *    is the network's `forward` (with the native backend the hidden layer
 *    stays in the network's reused buffer); two `fastLinear` calls with a
 *    JS ReLU between them are timed beside it for comparison.
 * 2. Matvec 4096 × 4096 (decode: one row) for Q8_0, Q4_0 (and the other
 *    fast dtypes) against the bandwidth bound: the time to stream the same
 *    weight bytes once through SIMD loads (`read_probe`, 8 interleaved
 *    runs per thread, the fastest way measured), on the same threads. "Cold" rows cycle through copies of the weight filling 512 MiB
 *    (and stream from a 512 MiB region), so the bytes come from memory;
 *    "hot" rows repeat one copy, which stays in the last-level cache.
 * 3. Llama decode: a SmolLM-135M-shaped model with seeded random weights,
 *    written as a Q8_0 GGUF by our writer, run by our network of registered
 *    layers (64 tokens from an empty cache) and, when `LLAMA_CPP_BIN` names
 *    a llama.cpp build (its `bin` folder), by `llama-bench -p 0 -n 64` on
 *    the same file with the same thread count.
 *
 * Timing: wall clock, the two sides of each ratio alternate in rounds; the
 * tables give each side's best round, and the median and range of the
 * per-round ratios (robust on a shared machine). Options: `--threads N`
 * (default 2), `--rounds N` (default 15; decode uses a third of it, at
 * least 3), `--only mlp,matvec,decode`, `--skip-ort`, `--tokens N` (64),
 * `--dtypes Q8_0,Q4_0,…` (the matvec rows), `--blas-threads N` (the
 * native backend's row, where the system OpenBLAS opens through FFI),
 * `--json FILE` (the MLP rows as JSON, bench/_json.ts, for
 * tools/perf_table.ts; ONNX Runtime missing is then a row without a peer).
 */

import { parseArgs } from "@std/cli";
import { buildNetwork } from "../core/network.ts";
import { floatTensor, tensorFromF32 } from "../core/tensor.ts";
import { exportOnnx } from "../formats/onnx/mod.ts";
import { fastLinear, forgetWeight } from "../kernels/fast/matmul.ts";
import { defaultRegistry } from "../mod.ts";
import { configureKernels, shutdownKernels } from "../kernels/fast/runtime.ts";
import { runSplit } from "../kernels/fast/_dispatch.ts";
import { getEngine } from "../kernels/wasm/_engine.ts";
import { setF32GemmBackend } from "../kernels/fast/backend.ts";
import { openSystemBlas } from "../io/blas.ts";
import { cpuInfo, cpuLine, median } from "./_peer.ts";
import { type BenchRow, writeBenchJson } from "./_json.ts";
import type { Tensor } from "../core/tensor.ts";
import type { FastDType } from "../kernels/quant_ref.ts";
import { makeWeight } from "../tests/kernels/fast/_helpers.ts";
import {
  decode,
  greedy,
  llamaBenchDecode,
  llamaBenchPath,
  llamaCppGreedy,
  networkFromGguf,
  SMOLLM_135M,
  smolLmShapeGguf,
} from "./_decode.ts";

const args = parseArgs(Deno.args, {
  string: [
    "threads",
    "rounds",
    "only",
    "tokens",
    "dtypes",
    "blas-threads",
    "json",
  ],
  boolean: ["skip-ort"],
  default: {
    threads: "2",
    rounds: "15",
    only: "mlp,matvec,decode",
    tokens: "64",
    dtypes: "Q8_0,Q4_0,Q4_K,Q6_K,F16,BF16,F32",
  },
});
const THREADS = Number(args.threads);
const ROUNDS = Number(args.rounds);
const ONLY = new Set(args.only.split(","));
const TOKENS = Number(args.tokens);
/** OpenBLAS threads of the native backend row (`--blas-threads`, default `--threads`). */
const BLAS_THREADS = Number(args["blas-threads"] ?? args.threads);

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
  const cpu = cpuInfo().model ?? "unknown CPU";
  return `${cpu}, ${navigator.hardwareConcurrency} logical CPUs, Deno ${Deno.version.deno} (V8 ${Deno.version.v8}), ${Deno.build.os}-${Deno.build.arch}`;
}

/** Alternates `a` and `b` for `rounds` rounds of `reps` calls each. */
async function compare(
  a: () => unknown,
  b: () => unknown,
  reps: number,
  rounds = ROUNDS,
): Promise<
  {
    a: number;
    b: number;
    ma: number;
    mb: number;
    ratio: number;
    lo: number;
    hi: number;
  }
> {
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
  const ratios: number[] = [], xs: number[] = [], ys: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const x = await time(a);
    const y = await time(b);
    ta = Math.min(ta, x);
    tb = Math.min(tb, y);
    xs.push(x);
    ys.push(y);
    ratios.push(x / y);
  }
  ratios.sort((p, q) => p - q);
  return {
    a: ta,
    b: tb,
    ma: median(xs),
    mb: median(ys),
    ratio: ratios[ratios.length >> 1],
    lo: ratios[0],
    hi: ratios[ratios.length - 1],
  };
}

const f1 = (v: number) => v.toFixed(1);
const f2 = (v: number) => v.toFixed(2);

const info = await configureKernels({ threads: THREADS });
console.log(`# Fast kernels vs peers\n`);
console.log(`Machine: ${machine()}`);
console.log(cpuLine());
console.log(
  `Kernels: ${info.backend}${
    info.unsignedDot ? " (unsigned relaxed dot: 2-dot Q8_0)" : ""
  }, ${info.threads} thread(s) (${info.workers} worker(s))${
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

/** The MLP as a network of our dense layers (what users call). */
const mlpNet = buildNetwork(
  defaultRegistry(),
  {
    input_size: D,
    layers: [
      { type: "dense", output_size: H, activation: "relu" },
      { type: "dense", output_size: D },
    ],
  },
  new Map([
    ["layers.0.weight", tensorFromF32("layers.0.weight", w1, [H, D])],
    ["layers.0.bias", tensorFromF32("layers.0.bias", b1, [H])],
    ["layers.1.weight", tensorFromF32("layers.1.weight", w2, [D, H])],
    ["layers.1.bias", tensorFromF32("layers.1.bias", b2, [D])],
  ]),
);
const xt = floatTensor(x, [B, D]);

/** The measured side: the network's forward. */
function ours(): Float32Array {
  return mlpNet.forward(xt).data;
}

/** For comparison: two `fastLinear` calls with a JS ReLU between them. */
function oursLinear(): Float32Array {
  const h = fastLinear(x, B, t1, b1);
  for (let i = 0; i < h.length; i++) if (h[i] < 0) h[i] = 0;
  return fastLinear(h, B, t2, b2);
}

/** The same MLP exported by `exportOnnx`. */
function onnxModel(): Uint8Array {
  return exportOnnx(mlpNet);
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
const range = (r: { lo: number; hi: number }) => `${f2(r.lo)}–${f2(r.hi)}×`;

const jsonRows: BenchRow[] = [];
const jsonNotes: string[] = [];
/** ONNX Runtime, or undefined (with a note) where it does not load. */
async function loadOrt() {
  try {
    // The peer, pinned here rather than in deno.json: only this script uses it.
    // deno-lint-ignore no-import-prefix
    return await import("npm:onnxruntime-node@1.30.0");
  } catch (e) {
    if (!args.json) throw e;
    jsonNotes.push(`ONNX Runtime not available: ${(e as Error).message}`);
    return undefined;
  }
}
const ort = ONLY.has("mlp") && !args["skip-ort"] ? await loadOrt() : undefined;
if (ort) {
  const model = onnxModel();
  // No spin-waiting after a run: ORT's idle threads would otherwise keep
  // both cores busy during our half of each round.
  const noSpin = { session: { intra_op: { allow_spinning: "0" } } };
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 2,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
    extra: noSpin,
  });
  const [inName] = session.inputNames, [outName] = session.outputNames;
  const feeds = { [inName]: new ort.Tensor("float32", x, [B, D]) };
  const theirs = async () =>
    (await session.run(feeds))[outName].data as Float32Array;
  const yo = ours(), yt = await theirs();
  let diff = 0;
  for (let i = 0; i < yo.length; i++) {
    diff = Math.max(diff, Math.abs(yo[i] - yt[i]));
  }
  const r = await compare(ours, theirs, 3);
  // The native backend (system BLAS through FFI), when it opens here.
  const blas = openSystemBlas({ threads: BLAS_THREADS });
  const native = blas.backend;
  const withNative = (f: () => Float32Array) => () => {
    setF32GemmBackend(native);
    try {
      return f();
    } finally {
      setF32GemmBackend(null);
    }
  };
  const oursNative = withNative(ours);
  let nativeDiff = 0;
  const nr = native ? await compare(oursNative, theirs, 3) : undefined;
  // the fastLinear calls on the same backend, for comparison
  const lr = native
    ? await compare(withNative(oursLinear), theirs, 3)
    : undefined;
  if (native) {
    const yn = oursNative();
    for (let i = 0; i < yn.length; i++) {
      nativeDiff = Math.max(nativeDiff, Math.abs(yn[i] - yt[i]));
    }
  }
  // ONNX Runtime on one thread, for the record (its per-thread speed).
  const single = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
    extra: noSpin,
  });
  const one = await compare(
    async () => await single.run(feeds),
    theirs,
    3,
    Math.max(3, Math.ceil(ROUNDS / 3)),
  );
  console.log(
    `## Dense MLP forward, batch ${B}, ${D} → ${H} → ReLU → ${D}, F32\n`,
  );
  console.log(
    `ONNX model: our \`exportOnnx\` of the same two dense layers (${model.length} bytes).\n`,
  );
  console.log(`| runtime | best ms | GFLOP/s |`);
  console.log(`| --- | ---: | ---: |`);
  console.log(
    `| modelhost (${info.backend}, ${THREADS} threads) | ${f2(r.a)} | ${
      f1(flops / r.a / 1e6)
    } |`,
  );
  if (nr && lr) {
    console.log(
      `| modelhost network forward, native backend (${
        native!.name
      }, ${BLAS_THREADS} threads) | ${f2(nr.a)} | ${f1(flops / nr.a / 1e6)} |`,
    );
    console.log(
      `| modelhost fastLinear + JS ReLU, native backend | ${f2(lr.a)} | ${
        f1(flops / lr.a / 1e6)
      } |`,
    );
  }
  console.log(
    `| ONNX Runtime 1.30.0 (2 intra-op threads, no spinning) | ${f2(r.b)} | ${
      f1(flops / r.b / 1e6)
    } |`,
  );
  console.log(
    `| ONNX Runtime 1.30.0 (1 intra-op thread) | ${f2(one.a)} | ${
      f1(flops / one.a / 1e6)
    } |`,
  );
  console.log(
    `\nThroughput ratio modelhost / ONNX Runtime: **${
      f2(1 / r.ratio)
    }×** (median of rounds, range ${f2(1 / r.hi)}–${
      f2(1 / r.lo)
    }×; best-vs-best ${f2(r.b / r.a)}×). Max |difference| of outputs: ${
      diff.toExponential(1)
    }.`,
  );
  console.log(
    nr
      ? `With the native backend (\`useSystemBlas\`, io/blas.ts): **${
        f2(1 / nr.ratio)
      }×** ONNX Runtime (median of its own alternating rounds, range ${
        f2(1 / nr.hi)
      }–${
        f2(1 / nr.lo)
      }×; the network's forward). Max |difference| of outputs: ${
        nativeDiff.toExponential(1)
      }. fastLinear + JS ReLU on the same backend: ${
        f2(1 / lr!.ratio)
      }× (range ${f2(1 / lr!.hi)}–${f2(1 / lr!.lo)}×).`
      : `Native backend: not measured (${blas.note}).`,
  );
  blas.close();
  const peak = fmaPeak();
  const share = (flops / r.a / 1e6) / (peak * THREADS);
  const gflops = (ms: number) => flops / ms / 1e6;
  const ortName = `ONNX Runtime 1.30.0 (${THREADS} threads)`;
  jsonRows.push({
    id: "mlp:wasm",
    what: `MLP F32 ${B}×${D}→${H}→${D}, WebAssembly`,
    unit: "GFLOP/s",
    ours: gflops(r.ma),
    peer: gflops(r.mb),
    peerName: ortName,
    ratio: 1 / r.ratio,
    ratioLo: 1 / r.hi,
    ratioHi: 1 / r.lo,
    note: `best round at ${
      f1(share * 100)
    }% of ${THREADS} × the 128-bit WebAssembly FMA peak (${
      f1(peak)
    } GFLOP/s per thread)`,
  });
  jsonRows.push({
    id: "mlp:native",
    what: `MLP F32 ${B}×${D}→${H}→${D}, native backend${
      native
        ? ` (${
          native.name.split(" ").slice(0, 2).join(" ")
        }, ${BLAS_THREADS} threads)`
        : ""
    }`,
    unit: "GFLOP/s",
    ours: nr ? gflops(nr.ma) : null,
    peer: nr ? gflops(nr.mb) : gflops(r.mb),
    peerName: ortName,
    ratio: nr ? 1 / nr.ratio : null,
    ratioLo: nr ? 1 / nr.hi : null,
    ratioHi: nr ? 1 / nr.lo : null,
    note: nr
      ? "the network's forward (hidden layer in its reused buffer)"
      : `native backend not available: ${blas.note}`,
  });
  if (lr) {
    jsonRows.push({
      id: "mlp:native-linear",
      what: `MLP F32 ${B}×${D}→${H}→${D}, fastLinear + JS ReLU, native backend`,
      unit: "GFLOP/s",
      ours: gflops(lr.ma),
      peer: gflops(lr.mb),
      peerName: ortName,
      ratio: 1 / lr.ratio,
      ratioLo: 1 / lr.hi,
      ratioHi: 1 / lr.lo,
    });
  }
  jsonNotes.push(
    `ONNX Runtime on 1 thread: ${f1(gflops(one.ma))} GFLOP/s (median)`,
  );
  console.log(
    `WebAssembly 128-bit FMA peak (register-only loop): ${
      f1(peak)
    } GFLOP/s per thread; the MLP runs at ${
      f1(share * 100)
    }% of ${THREADS} × that.\n`,
  );
  await session.release();
  await single.release();
}

// ------------------------------------------------------------ matvec vs bandwidth

const N = 4096;
/**
 * Interleaved runs each thread of the bandwidth bound reads in turn: the
 * memory serves several streams per core faster than one (cold, 2
 * threads: 16 GB/s with 1, 20 with 2, 25 with 4, 27 with 8), and the
 * quantized matvecs read 2 (`WEIGHT_STREAMS` in
 * kernels/fast/_dispatch.ts).
 */
const READ_STREAMS = 8;

/** MiB of weight copies (and of the streamed region) in the cold matvec rows. */
const COLD_MIB = 512;
const e = getEngine()!;
if (ONLY.has("matvec")) await matvecs();

async function matvecs(): Promise<void> {
  const xv = Float32Array.from({ length: N }, (_, i) => 0.1 + 2 * Math.cos(i));
  console.log(
    `## Matvec ${N} × ${N} (one row, decode) vs streaming the weights once\n`,
  );
  console.log(
    `Cold: each call reads a different copy of the weight, the copies filling ${COLD_MIB} MiB (far past this machine's effective last-level cache), so weights come from memory; the bound streams the same number of bytes from a ${COLD_MIB} MiB region, each thread reading ${READ_STREAMS} interleaved runs (faster than one run on this kind of machine). Hot: one copy, called again and again (it stays in cache).\n`,
  );
  console.log(
    `| weights | bytes | cold matvec ms | cold stream ms | GB/s streamed | **cold matvec / stream** (range) | hot matvec ms | hot stream ms | hot ratio |`,
  );
  console.log(
    `| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |`,
  );
  const region = COLD_MIB << 20;
  const big = e.alloc(region);
  e.u8.fill(1, big, big + region);
  const out = e.alloc(64);
  for (const dtype of args.dtypes.split(",") as FastDType[]) {
    const first = makeWeight(dtype, N, N);
    const bytes = first.bytes.length;
    const copies = Math.max(2, Math.ceil(region / bytes));
    const ws = [first];
    for (let i = 1; i < copies; i++) {
      ws.push({ ...first, bytes: first.bytes.slice() });
    }
    for (const w of ws) fastLinear(xv, 1, w); // upload every copy once
    const chunks = Math.floor(bytes / 64);
    const slots = Math.floor(region / (chunks * 64));
    let k = 0, s = 0;
    const coldMatvec = () => fastLinear(xv, 1, ws[k++ % copies]);
    const coldStream = () => {
      const p = big + (s++ % slots) * chunks * 64;
      runSplit(e, "read_probe", chunks * 16, chunks, (a, b) => [
        p,
        out,
        a,
        b,
        READ_STREAMS,
      ]);
    };
    const cold = await compare(coldMatvec, coldStream, copies, ROUNDS);
    const hotStream = () =>
      runSplit(
        e,
        "read_probe",
        chunks * 16,
        chunks,
        (a, b) => [big, out, a, b, READ_STREAMS],
      );
    const hot = await compare(
      () => fastLinear(xv, 1, first),
      hotStream,
      3,
      ROUNDS,
    );
    for (const w of ws) forgetWeight(w);
    console.log(
      `| ${dtype} | ${(bytes / 2 ** 20).toFixed(1)} MiB | ${f2(cold.a)} | ${
        f2(cold.b)
      } | ${f1(bytes / cold.b / 1e6)} | **${f2(cold.ratio)}×** (${
        range(cold)
      }) | ${f2(hot.a)} | ${f2(hot.b)} | ${f2(hot.ratio)}× |`,
    );
  }
  e.free(big);
  e.free(out);
  console.log("");
}

// ------------------------------------------------------------ Llama decode

if (ONLY.has("decode")) await decodeVsLlamaCpp();

async function decodeVsLlamaCpp(): Promise<void> {
  const s = SMOLLM_135M;
  const rounds = Math.max(3, Math.ceil(ROUNDS / 3));
  const bench = llamaBenchPath();
  const gguf = await smolLmShapeGguf("Q8_0");
  const dir = await Deno.makeTempDir({ prefix: "modelhost-decode-" });
  const file = `${dir}/smollm-135m-shape-q8_0.gguf`;
  try {
    await Deno.writeFile(file, gguf);
    const net = await networkFromGguf(gguf);
    decode(net, 8); // upload the weights, warm the kernels up
    const ours: number[] = [], theirs: number[] = [], ratios: number[] = [];
    let build = "";
    for (let r = 0; r < rounds; r++) {
      // Warm up as llama-bench does before its timed run. Our workers stop
      // after a second idle (the idle timer) while llama-bench runs, and a
      // synchronous decode loop never yields to let them restart, so start
      // them first (an application decoding steadily keeps them running).
      await configureKernels({ threads: THREADS });
      decode(net, 4);
      const a = decode(net, TOKENS).tokensPerSecond;
      ours.push(a);
      if (bench) {
        const b = await llamaBenchDecode(bench, file, THREADS, TOKENS, 1);
        theirs.push(b.tokensPerSecond);
        build = b.build;
        ratios.push(a / b.tokensPerSecond);
      }
    }
    const sorted = (v: number[]) => v.slice().sort((p, q) => p - q);
    const med = (v: number[]) => sorted(v)[v.length >> 1];
    const span = (v: number[]) =>
      `${f1(sorted(v)[0])}–${f1(sorted(v)[v.length - 1])}`;
    console.log(
      `## Llama decode, SmolLM-135M shape (${s.layers} layers, d ${s.hidden}, ${s.heads}/${s.kvHeads} heads, vocab ${s.vocab}), random weights, Q8_0\n`,
    );
    console.log(
      `GGUF written by our writer (${
        (gguf.length / 2 ** 20).toFixed(1)
      } MiB); ${TOKENS} tokens decoded one at a time from an empty cache, ${rounds} rounds alternating both sides, ${THREADS} threads each.\n`,
    );
    console.log(`| runtime | tokens/s (median) | range | best |`);
    console.log(`| --- | ---: | ---: | ---: |`);
    console.log(
      `| modelhost (${info.backend}) | ${f1(med(ours))} | ${span(ours)} | ${
        f1(sorted(ours)[ours.length - 1])
      } |`,
    );
    if (bench) {
      console.log(
        `| llama.cpp ${build} (llama-bench -t ${THREADS} -p 0 -n ${TOKENS}) | ${
          f1(med(theirs))
        } | ${span(theirs)} | ${f1(sorted(theirs)[theirs.length - 1])} |`,
      );
      console.log(
        `\nDecode ratio modelhost / llama.cpp: **${
          f2(med(ratios))
        }×** (median of rounds, range ${f2(sorted(ratios)[0])}–${
          f2(sorted(ratios)[ratios.length - 1])
        }×; best-vs-best ${
          f2(sorted(ours)[ours.length - 1] / sorted(theirs)[theirs.length - 1])
        }×).\n`,
      );
      const prompt = [1, 1000];
      const theirIds = await llamaCppGreedy(bench, file, prompt, 16);
      if (theirIds) {
        const ourIds = greedy(net, prompt, 16);
        const same = ourIds.every((v, i) => v === theirIds[i]);
        console.log(
          `Same model on both sides: 16 greedy ids after [${prompt}] ${
            same ? "are identical" : "DIFFER"
          } (ours ${ourIds.join(" ")}; llama.cpp ${theirIds.join(" ")}).\n`,
        );
      }
    } else {
      console.log(
        `\n(llama.cpp column skipped: set LLAMA_CPP_BIN to the folder of a llama.cpp build's binaries, see DEVELOPERS.md.)\n`,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

console.log(
  `(Goals: MLP ≥ 0.5× ONNX Runtime; Q8_0 and Q4_0 matvec within 2× of streaming the weights; decode ≥ 0.5× llama.cpp.)`,
);
console.log(`Load average at end: ${loadAverage()}`);
if (args.json) {
  if (ONLY.has("mlp") && !ort) {
    // our side alone, so the row still says how fast we are
    ours();
    const ms: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      ours();
      ms.push(performance.now() - t0);
    }
    jsonRows.push({
      id: "mlp:wasm",
      what: `MLP F32 ${B}×${D}→${H}→${D}, WebAssembly`,
      unit: "GFLOP/s",
      ours: flops / median(ms) / 1e6,
      peer: null,
      peerName: "ONNX Runtime",
      ratio: null,
      note: args["skip-ort"] ? "--skip-ort" : "ONNX Runtime not available",
    });
  }
  await writeBenchJson(args.json, {
    bench: "compare",
    threads: THREADS,
    rounds: ROUNDS,
    rows: jsonRows,
    notes: jsonNotes,
  });
}
await shutdownKernels();
