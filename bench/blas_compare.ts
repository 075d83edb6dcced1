/**
 * The native F32 GEMM backend (io/blas.ts) in its configurations against
 * ONNX Runtime, all in one run with the sides alternating: the dense MLP
 * (batch 64, 1024 → 4096 → ReLU → 1024, F32) and single projections of an
 * encoder's shapes (4096 rows: 384 → 384, 384 → 1536, 1536 → 384).
 *
 * ```
 * ONNXRUNTIME_NODE_INSTALL=skip deno run -A bench/blas_compare.ts \
 *   [--rounds 15] [--threads 2] [--shapes mlp,encoder] \
 *   [--cores Haswell,Zen,SkylakeX,Cooperlake] [--libs name=path,...] \
 *   [--variants default,network,network:ROW,packed-core-Haswell,unpacked,packed-all,packed-spin0.5,packed-hspin0.3,packed-early,packed-pop,packed-g128,packed1,split,stored,one-thread,wasm] \
 *   [--mmap-threshold N|off] \
 *   [--timeouts 4,20,28] [--ort-no-prepack]
 * ```
 *
 * Rows: `default` is what `useSystemBlas()` installs, timed on `linear`
 * calls with a JS ReLU between them, and `network` the same backend
 * under the network's `forward` (the hidden layer in the network's
 * reused buffer, the ReLU in the product's threads; `network:ROW` the
 * same on another row's backend); `packed-core-F` runs the packed path on
 * OpenBLAS kernel family F (`packedCore`) (with
 * `--mmap-threshold N`, glibc's mmap threshold set to N bytes: it is set
 * once per process, so compare it across runs); `stored` multiplies
 * by W as stored (no transposed copy, no packed weights); `unpacked` is
 * the default without the weights packed once (`packedWeights: false`,
 * io/_blas_packed.ts: `cblas_sgemm` on the transposed copies), `packed`
 * the default with `packedWeights: true` stated, `packed-all` packed
 * weights at any row count (`packedRows: 2 ** 31`), `packed-spinN` the
 * same with its helper thread polling N ms for the next product
 * (`packedSpin`: both threads), `packed-hspinN` with the helper alone
 * polling (`packedHelperSpin`), `packed-early` with the helper woken
 * before y is allocated and x packed (`packedEarlyWake`), `packed-pop`
 * with fresh outputs populated first (`packedPopulate`), `packed-gN` with work
 * items of at most N outputs (`packedGroup`), `packed1`
 * the same on one thread; `split` runs each product as two
 * single-threaded column halves on two threads (`splitColumns`), `splitN`
 * as N column blocks; each `split*` and the `default` row also
 * comes as a row with the first layer's ReLU applied by the threads
 * (`gemmRelu`: by each column block or work item); `one-thread` is one BLAS thread
 * without packed weights;
 * `wasm` the WebAssembly kernels. `--cores` adds one OpenBLAS instance
 * per kernel family (`OPENBLAS_CORETYPE`; a copy of the library in a
 * temporary folder, since the variable is read once per loaded library),
 * copied from `--core-lib` (default Debian's amd64 path); `--timeouts`
 * one per `OPENBLAS_THREAD_TIMEOUT` (idle threads spin 2^N cycles before
 * they sleep); `--ort-no-prepack` adds ORT with its weights not pre-packed
 * (`session.disable_prepacking`, MLP only); `--libs` other libraries (e.g. `blis=/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4`).
 * Each round runs every row (order reversed every other round), each row
 * timed as the mean of 3 calls after one warm call; the ratio of a row is
 * ORT's time in the same round over the row's, so above 1 means faster
 * than ONNX Runtime. Printed: median ms, median ratio and its interquartile
 * range, and rounds where the row took over twice its median apart.
 */

import { parseArgs } from "@std/cli";
import { buildNetwork } from "../core/network.ts";
import { floatTensor, tensorFromF32 } from "../core/tensor.ts";
import { exportOnnx } from "../formats/onnx/mod.ts";
import { defaultRegistry } from "../mod.ts";
import { linear } from "../kernels/linear.ts";
import {
  type F32GemmBackend,
  setF32GemmBackend,
} from "../kernels/fast/backend.ts";
import { configureKernels, shutdownKernels } from "../kernels/fast/runtime.ts";
import { openSystemBlas, type SystemBlas } from "../io/blas.ts";
import { cpuLine, median } from "./_peer.ts";

const args = parseArgs(Deno.args, {
  boolean: ["ort-no-prepack"],
  string: [
    "rounds",
    "threads",
    "shapes",
    "cores",
    "core-lib",
    "libs",
    "variants",
    "mmap-threshold",
    "timeouts",
  ],
  default: {
    rounds: "15",
    threads: "2",
    shapes: "mlp,encoder",
    cores: "",
    timeouts: "",
    "core-lib": "/usr/lib/x86_64-linux-gnu/libopenblas.so.0",
    libs: "",
    variants: "default,stored,one-thread,wasm",
  },
});
const ROUNDS = Number(args.rounds);
const THREADS = Number(args.threads);
const VARIANTS = new Set(args.variants.split(","));
const REPS = 3;

// deno-lint-ignore no-import-prefix
const ort = await import("npm:onnxruntime-node@1.30.0");
await configureKernels({ threads: THREADS });

/** Deterministic values `scale · sin(freq · i + phase)`. */
function wave(n: number, scale: number, freq: number, phase = 0) {
  return Float32Array.from(
    { length: n },
    (_, i) => scale * Math.sin(freq * i + phase),
  );
}

/** `--mmap-threshold N|off` (default: the library's default, off). */
const MMAP = args["mmap-threshold"] === undefined
  ? undefined
  : args["mmap-threshold"] === "off"
  ? null
  : Number(args["mmap-threshold"]);
/** The backends to compare, by row name. */
const opened: SystemBlas[] = [];
const backends = new Map<string, F32GemmBackend | null>();
function open(
  row: string,
  opts: Parameters<typeof openSystemBlas>[0],
): void {
  const blas = openSystemBlas({ mmapThreshold: MMAP, ...opts });
  opened.push(blas);
  if (!blas.backend) {
    console.log(`${row}: not available (${blas.note})`);
    return;
  }
  backends.set(row, blas.backend);
}
if (VARIANTS.has("default")) {
  open("default", { threads: THREADS });
  console.log(`heap: ${opened[0].heap}`);
}
for (const v of VARIANTS as Set<string>) {
  // split: two column blocks on two threads; splitN: N blocks
  const m = /^split(\d*)$/.exec(v);
  if (m) open(v, { threads: THREADS, splitColumns: Number(m[1] || 2) });
}
if (VARIANTS.has("packed")) {
  open("packed", { threads: THREADS, packedWeights: true });
  console.log(`packed: ${opened.at(-1)!.packed}`);
}
if (VARIANTS.has("packed-pop")) {
  // fresh outputs populated (madvise) before the kernel calls write them
  open("packed-pop", { threads: THREADS, packedPopulate: true });
}
if (VARIANTS.has("packed-early")) {
  // the helper woken before y is allocated and x packed
  open("packed-early", { threads: THREADS, packedEarlyWake: true });
}
for (const v of VARIANTS as Set<string>) {
  // packed-gN: work items of at most N outputs
  const m = /^packed-g(\d+)$/.exec(v);
  if (m) open(v, { threads: THREADS, packedGroup: Number(m[1]) });
}
for (const v of VARIANTS as Set<string>) {
  // packed-hspinN: the helper alone polls N ms for the next product
  const m = /^packed-hspin([\d.]+)$/.exec(v);
  if (m) {
    open(v, {
      threads: THREADS,
      packedWeights: true,
      packedHelperSpin: Number(m[1]),
    });
  }
}
for (const v of VARIANTS as Set<string>) {
  // packed-spinN: both threads poll N ms (the helper for the next product)
  const m = /^packed-spin([\d.]+)$/.exec(v);
  if (m) {
    open(v, {
      threads: THREADS,
      packedWeights: true,
      packedSpin: Number(m[1]),
    });
  }
}
for (const v of VARIANTS as Set<string>) {
  // packed-core-F: the packed path on kernel family F (`packedCore`)
  const m = /^packed-core-(\w+)$/.exec(v);
  if (m) open(v, { threads: THREADS, packedCore: m[1] });
}
if (VARIANTS.has("packed1")) {
  open("packed1", { threads: 1, packedWeights: true });
}
if (VARIANTS.has("packed-all")) {
  // packed weights at any row count
  open("packed-all", { threads: THREADS, packedRows: 2 ** 31 });
}
if (VARIANTS.has("unpacked")) {
  open("unpacked", { threads: THREADS, packedWeights: false });
}
if (VARIANTS.has("stored")) {
  open("stored", { threads: THREADS, transposeRows: 0, packedWeights: false });
}
// Backends opened from one library share its thread count: the
// one-thread row and each kernel family get their own copy of the file.
const tmp = Deno.makeTempDirSync({ prefix: "blas_compare" });
const base = backends.size > 0 ? opened[0] : undefined;
if (VARIANTS.has("one-thread") && base) {
  const copy = `${tmp}/one-thread.so`;
  Deno.copyFileSync(args["core-lib"], copy);
  open("one-thread", { threads: 1, libraries: [copy], packedWeights: false });
}
for (const core of args.cores.split(",").filter((c: string) => c !== "")) {
  const lib = args["core-lib"];
  if (!base) break;
  const copy = `${tmp}/${core}.so`;
  Deno.copyFileSync(lib, copy);
  Deno.env.delete("OPENBLAS_CORETYPE");
  open(`OpenBLAS ${core}`, {
    threads: THREADS,
    libraries: [copy],
    coreType: core,
  });
}
for (const t of args.timeouts.split(",").filter((c: string) => c !== "")) {
  if (!base) break;
  const copy = `${tmp}/timeout${t}.so`;
  Deno.copyFileSync(args["core-lib"], copy);
  Deno.env.delete("OPENBLAS_THREAD_TIMEOUT");
  Deno.env.delete("OPENBLAS_CORETYPE"); // the default family, as `default`
  open(`thread timeout ${t}`, {
    threads: THREADS,
    libraries: [copy],
    threadTimeout: Number(t),
  });
}
for (const spec of args.libs.split(",").filter((c: string) => c !== "")) {
  const [name, path] = spec.split("=");
  open(name, { threads: THREADS, libraries: [path] });
}
if (VARIANTS.has("wasm")) backends.set("wasm", null);

const noSpin = { session: { intra_op: { allow_spinning: "0" } } };
/** ORT's weights not pre-packed (`session.disable_prepacking`). */
const noPrepack = {
  session: { intra_op: { allow_spinning: "0" }, disable_prepacking: "1" },
};
async function session(model: Uint8Array, threads: number, prepack = true) {
  return await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: "sequential",
    graphOptimizationLevel: "all",
    extra: prepack ? noSpin : noPrepack,
  });
}

type Run = () => unknown;
/** Alternating rounds of `rows` against `rows[peer]`; prints the table. */
async function table(
  title: string,
  flops: number,
  rows: Map<string, Run>,
  peer: string,
): Promise<void> {
  const names = [...rows.keys()];
  const times = new Map(names.map((n) => [n, [] as number[]]));
  for (const n of names) await rows.get(n)!();
  for (let r = 0; r < ROUNDS; r++) {
    for (const n of r % 2 ? [...names].reverse() : names) {
      const f = rows.get(n)!;
      await f();
      const t0 = performance.now();
      for (let k = 0; k < REPS; k++) await f();
      times.get(n)!.push((performance.now() - t0) / REPS);
    }
  }
  const q = (xs: number[], p: number) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.floor(p * s.length))];
  };
  console.log(`\n## ${title}\n`);
  console.log(cpuLine());
  console.log(
    `\n| row | median ms | GFLOP/s (median) | ratio to ${peer} (median, IQR) | stalled rounds |`,
  );
  console.log("| --- | ---: | ---: | ---: | ---: |");
  const pt = times.get(peer)!;
  for (const n of names) {
    const t = times.get(n)!, m = median(t);
    const ratios = t.map((x, i) => pt[i] / x);
    const stalled = t.filter((x) => x > 2 * m).length;
    console.log(
      `| ${n} | ${m.toFixed(2)} | ${(flops / m / 1e6).toFixed(1)} | ${
        median(ratios).toFixed(2)
      }× (${q(ratios, 0.25).toFixed(2)}–${
        q(ratios, 0.75).toFixed(2)
      }) | ${stalled} |`,
    );
  }
}

/** `linear` with `backend` installed (null: the WebAssembly kernels). */
function withBackend<T>(backend: F32GemmBackend | null, f: () => T): T {
  const before = setF32GemmBackend(backend);
  try {
    return f();
  } finally {
    setF32GemmBackend(before);
  }
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
}

console.log("# Native F32 GEMM backend vs ONNX Runtime 1.30.0");
console.log(
  `\n${cpuLine()}\nBackends: ${
    [...backends].map(([k, b]) => `${k} = ${b?.name ?? "WebAssembly"}`).join(
      "; ",
    )
  }`,
);

if (args.shapes.includes("mlp")) {
  const B = 64, D = 1024, H = 4096;
  const w1 = wave(H * D, 0.05, 0.37), b1 = wave(H, 0.01, 1, Math.PI / 2);
  const w2 = wave(D * H, 0.03, 0.11, Math.PI / 2), b2 = wave(D, 0.01, 1);
  const x = wave(B * D, 2, 1, Math.PI / 2).map((v) => v + 0.1);
  const t1 = tensorFromF32("layers.0.weight", w1, [H, D]);
  const t2 = tensorFromF32("layers.1.weight", w2, [D, H]);
  const net = buildNetwork(
    defaultRegistry(),
    {
      input_size: D,
      layers: [
        { type: "dense", output_size: H, activation: "relu" },
        { type: "dense", output_size: D },
      ],
    },
    new Map([
      ["layers.0.weight", t1],
      ["layers.0.bias", tensorFromF32("layers.0.bias", b1, [H])],
      ["layers.1.weight", t2],
      ["layers.1.bias", tensorFromF32("layers.1.bias", b2, [D])],
    ]),
  );
  const model = exportOnnx(net);
  const s2 = await session(model, THREADS), s1 = await session(model, 1);
  const feeds = { [s2.inputNames[0]]: new ort.Tensor("float32", x, [B, D]) };
  const out = s2.outputNames[0];
  const ours = () => {
    const h = linear(x, B, t1, b1);
    for (let i = 0; i < h.length; i++) if (h[i] < 0) h[i] = 0;
    return linear(h, B, t2, b2);
  };
  const rows = new Map<string, Run>();
  const want = (await s2.run(feeds))[out].data as Float32Array;
  for (const [name, b] of backends) {
    const f = () => withBackend(b, ours);
    console.log(`${name}: max |difference| to ORT ${maxDiff(f(), want)}`);
    rows.set(name, f);
    if (b?.gemmRelu && /^(split|default)/.test(name)) {
      // the first layer's ReLU applied by the threads of its blocks
      const fused = () =>
        withBackend(b, () => {
          const h = b.gemmRelu!(x, B, D, w1, H, b1);
          if (!h) throw new Error(`${name}: no gemmRelu path`);
          return linear(h, B, t2, b2);
        });
      console.log(
        `${name} ReLU in threads: max |difference| to ORT ${
          maxDiff(fused(), want)
        }`,
      );
      rows.set(`${name} ReLU in threads`, fused);
    }
  }
  for (const v of VARIANTS as Set<string>) {
    // what users call: the network's forward, the hidden layer in its
    // reused buffer with the ReLU in the product's threads (`network`:
    // on the default backend, `network:ROW` on that row's)
    const m = /^network(?::(.+))?$/.exec(v);
    if (!m) continue;
    const b = backends.get(m[1] ?? "default");
    if (!b) throw new Error(`${v}: no row ${m[1] ?? "default"}`);
    const xt = floatTensor(x, [B, D]);
    const f = () => withBackend(b, () => net.forward(xt).data);
    console.log(`${v}: max |difference| to ORT ${maxDiff(f(), want)}`);
    rows.set(v, f);
  }
  rows.set(`ORT ${THREADS} threads`, () => s2.run(feeds));
  if (THREADS !== 1) rows.set("ORT 1 thread", () => s1.run(feeds));
  const s3 = args["ort-no-prepack"]
    ? await session(model, THREADS, false)
    : undefined;
  if (s3) {
    rows.set(
      `ORT ${THREADS} threads, weights not pre-packed`,
      () => s3.run(feeds),
    );
  }
  await table(
    `Dense MLP, batch ${B}, ${D} → ${H} → ReLU → ${D}, F32`,
    2 * B * D * H * 2,
    rows,
    `ORT ${THREADS} threads`,
  );
  await s1.release();
  await s2.release();
  await s3?.release();
}

if (args.shapes.includes("encoder")) {
  const M = 4096;
  for (const [inF, outF] of [[384, 384], [384, 1536], [1536, 384]]) {
    const w = wave(outF * inF, 0.05, 0.37), b = wave(outF, 0.01, 1);
    const x = wave(M * inF, 1, 0.7, 0.3);
    const t = tensorFromF32("layers.0.weight", w, [outF, inF]);
    const net = buildNetwork(
      defaultRegistry(),
      { input_size: inF, layers: [{ type: "dense", output_size: outF }] },
      new Map([
        ["layers.0.weight", t],
        ["layers.0.bias", tensorFromF32("layers.0.bias", b, [outF])],
      ]),
    );
    const s = await session(exportOnnx(net), THREADS);
    const feeds = { [s.inputNames[0]]: new ort.Tensor("float32", x, [M, inF]) };
    const rows = new Map<string, Run>();
    for (const [name, bk] of backends) {
      if (name === "stored" || name === "one-thread") continue;
      rows.set(name, () => withBackend(bk, () => linear(x, M, t, b)));
    }
    rows.set(`ORT ${THREADS} threads`, () => s.run(feeds));
    await table(
      `Projection ${M} rows × ${inF} → ${outF}, F32 (an encoder's shapes)`,
      2 * M * inF * outF,
      rows,
      `ORT ${THREADS} threads`,
    );
    await s.release();
  }
}

for (const b of opened) b.close();
Deno.removeSync(tmp, { recursive: true });
shutdownKernels();
