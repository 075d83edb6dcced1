/**
 * Sentence-embedding throughput against transformers.js, in one run:
 * a MiniLM-shaped BERT (384 wide, 6 layers, 12 heads, 1536 inner; random
 * weights from `bench/encoder_model.py`) embeds a batch of 32 inputs of
 * 128 tokens (mean pooling, normalized), here from the Hugging Face
 * folder (F32 safetensors) and from our F16 / Q8_0 GGUF of it, and in
 * transformers.js (`@huggingface/transformers`, ONNX Runtime) from
 * torch.onnx's export of the same weights, with the same thread count.
 * With `--blas` the F32 folder also runs with the system OpenBLAS as the
 * F32 GEMM backend (`openSystemBlas`, io/blas.ts; `--allow-ffi`), as a
 * side of its own (the backend is installed for that side only; OpenBLAS
 * threads `--blas-threads`, default `--threads`).
 * transformers.js runs under Deno on `onnxruntime-node` (native ONNX
 * Runtime, CPU execution provider; the version is printed).
 * The sides alternate round by round; printed: sentences/s per side (best
 * round), the median and range of the per-round ratios, the median
 * sentences per CPU-second of the process (all threads; /proc/self/stat),
 * the largest difference between the two sides' vectors, and the CPU.
 *
 * ```sh
 * /work/refpy/bin/python bench/encoder_model.py /tmp/minilm   # once
 * deno run -A bench/embed_compare.ts --model /tmp/minilm [--threads 2] [--rounds 7] \
 *   [--dtypes F32,F16,Q8_0] [--blas [--blas-threads N]] [--json FILE]
 * ```
 *
 * `--json FILE` also writes the rows as JSON (bench/_json.ts) for
 * tools/perf_table.ts.
 */

import { parseArgs } from "@std/cli";
import { join } from "@std/path";
import { AutoModel, env, Tensor } from "@huggingface/transformers";
import { configureKernels, shutdownKernels } from "../kernels/fast/runtime.ts";
import { setF32GemmBackend } from "../kernels/fast/backend.ts";
import { openSystemBlas } from "../io/blas.ts";
import { convertEncoderToGguf, loadEncoderModel } from "../io/encoder.ts";
import { embedSentences, type EncoderModel } from "../models/sentence.ts";
import { type BenchRow, roundRatios, writeBenchJson } from "./_json.ts";
import { cpuInfo } from "./_peer.ts";

const args = parseArgs(Deno.args, {
  string: [
    "model",
    "threads",
    "rounds",
    "batch",
    "tokens",
    "dtypes",
    "blas-threads",
    "json",
  ],
  boolean: ["blas"],
  default: {
    threads: "2",
    rounds: "7",
    batch: "32",
    tokens: "128",
    dtypes: "F32,F16,Q8_0",
  },
});
if (!args.model) {
  console.error(
    "usage: deno run -A bench/embed_compare.ts --model DIR (made by bench/encoder_model.py)",
  );
  Deno.exit(2);
}
const DIR: string = String(args.model);
const THREADS = Number(args.threads);
const ROUNDS = Number(args.rounds);
const B = Number(args.batch);
const T = Number(args.tokens);

function cpuDescription(): string {
  const { model, flags } = cpuInfo();
  if (model === undefined) return `${navigator.hardwareConcurrency} cores`;
  const want = ["avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni"];
  return `${model}; ${navigator.hardwareConcurrency} cores; flags ${
    want.filter((f) => flags.has(f)).join(" ")
  }`;
}

/** CPU seconds (user + system, all threads) of this process so far. */
function cpuSeconds(): number {
  try {
    const f = Deno.readTextFileSync("/proc/self/stat");
    const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
    // fields 14 and 15 (utime, stime) in clock ticks (100 per second on Linux)
    return (Number(rest[11]) + Number(rest[12])) / 100;
  } catch {
    return NaN;
  }
}

// the same inputs for both sides: [CLS] 126 seeded ids [SEP]
let seed = 12345;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const rows: number[][] = Array.from({ length: B }, () => [
  2,
  ...Array.from({ length: T - 2 }, () => 5 + Math.floor(rand() * 30000)),
  3,
]);

await configureKernels({ threads: THREADS });
const ours: [string, EncoderModel][] = [];
const tmp = await Deno.makeTempDir({ prefix: "embed-compare-" });
for (const dt of args.dtypes.split(",")) {
  if (dt === "F32") ours.push(["F32", await loadEncoderModel(DIR)]);
  else {
    const out = join(tmp, `minilm-${dt}.gguf`);
    await convertEncoderToGguf(DIR, out, {
      quantize: dt as "F16" | "Q8_0",
    });
    ours.push([dt, await loadEncoderModel(out)]);
  }
}

env.allowRemoteModels = false;
env.localModelPath = join(DIR, "..");
const name = DIR.split("/").filter((s: string) => s !== "").pop()!;
const ortVersions = (env.backends.onnx as { versions?: unknown }).versions;
const tjs = await AutoModel.from_pretrained(name, {
  dtype: "fp32",
  session_options: { intraOpNumThreads: THREADS, interOpNumThreads: 1 },
});

const flat = (f: (r: number[], i: number) => number) =>
  BigInt64Array.from(rows.flatMap((r) => r.map((_, i) => BigInt(f(r, i)))));
const inputs = {
  input_ids: new Tensor("int64", flat((r, i) => r[i]), [B, T]),
  attention_mask: new Tensor("int64", flat(() => 1), [B, T]),
  token_type_ids: new Tensor("int64", flat(() => 0), [B, T]),
};

/** transformers.js: last_hidden_state, then mean pooling and normalization as sentence-transformers. */
async function theirs(): Promise<Float32Array[]> {
  const out = await tjs(inputs);
  const h = out.last_hidden_state.data as Float32Array;
  const d = 384;
  return rows.map((_, b) => {
    const v = new Float32Array(d);
    for (let t = 0; t < T; t++) {
      for (let j = 0; j < d; j++) v[j] += h[(b * T + t) * d + j] / T;
    }
    const n = Math.hypot(...v);
    return v.map((x) => x / n);
  });
}

const BLAS_THREADS = Number(args["blas-threads"] ?? THREADS);
const blas = args.blas ? openSystemBlas({ threads: BLAS_THREADS }) : undefined;
if (blas && !blas.backend) console.log(`no BLAS side: ${blas.note}`);
const f32 = ours.find(([dt]) => dt === "F32")?.[1];
if (blas?.backend && f32) ours.push(["F32+OpenBLAS", f32]);

function run(dt: string, m: EncoderModel): Float32Array[] {
  setF32GemmBackend(dt.endsWith("OpenBLAS") ? blas!.backend : null);
  return embedSentences(m.encoder, m.pipeline, rows, { batchSize: B })
    .embeddings;
}

// warm up both (V8 tiers up the WebAssembly; ORT plans its graph)
const ref = await theirs();
for (const [dt, m] of ours) {
  const v = run(dt, m);
  let worst = 0;
  for (let i = 0; i < B; i++) {
    for (let j = 0; j < v[i].length; j++) {
      worst = Math.max(worst, Math.abs(v[i][j] - ref[i][j]));
    }
  }
  console.log(
    `${dt}: largest |difference| to transformers.js ${worst.toExponential(2)}`,
  );
}

const times = new Map<string, number[]>();
const cpu = new Map<string, number[]>();
for (let r = 0; r < ROUNDS; r++) {
  const sides: [string, () => Promise<unknown> | unknown][] = [
    ["transformers.js", theirs],
    ...ours.map(([dt, m]) =>
      [`modelhost ${dt}`, () => run(dt, m)] as [string, () => unknown]
    ),
  ];
  if (r % 2 === 1) sides.reverse();
  for (const [label, f] of sides) {
    const c0 = cpuSeconds(), t0 = performance.now();
    await f();
    const ms = performance.now() - t0;
    times.set(label, [...(times.get(label) ?? []), ms]);
    cpu.set(label, [...(cpu.get(label) ?? []), cpuSeconds() - c0]);
  }
}
setF32GemmBackend(null);
blas?.close();
await shutdownKernels();
await Deno.remove(tmp, { recursive: true });

const median = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)];
};
const base = times.get("transformers.js")!;
console.log(
  `\n# Embedding throughput, batch ${B} × ${T} tokens, ${THREADS} threads, ${ROUNDS} rounds`,
);
console.log(`cpu: ${cpuDescription()}`);
console.log(
  `transformers.js on onnxruntime ${JSON.stringify(ortVersions)}${
    blas?.backend
      ? `; BLAS: ${blas.backend.name}, ${BLAS_THREADS} thread(s), OPENBLAS_THREAD_TIMEOUT=${
        Deno.env.get("OPENBLAS_THREAD_TIMEOUT") ?? "unset"
      }`
      : ""
  }; load average ${Deno.loadavg().map((x) => x.toFixed(1)).join(" ")}`,
);
console.log(
  `| side | best sentences/s | median sentences/s | ratio to transformers.js (median, range) | sentences per CPU-second (median) |`,
);
console.log(`| --- | --- | --- | --- | --- |`);
for (const [label, ms] of times) {
  const ratios = ms.map((m, i) => base[i] / m);
  console.log(
    `| ${label} | ${(B / (Math.min(...ms) / 1000)).toFixed(1)} | ${
      (B / (median(ms) / 1000)).toFixed(1)
    } | ${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${
      Math.max(...ratios).toFixed(2)
    }) | ${(B / median(cpu.get(label)!)).toFixed(1)} |`,
  );
}
if (args.json) {
  const rows: BenchRow[] = [];
  const tjsCpu = cpu.get("transformers.js")!;
  for (const [label, ms] of times) {
    if (label === "transformers.js") continue;
    const wall = roundRatios(ms, base);
    rows.push({
      id: `embed:${label.replace("modelhost ", "")}`,
      what: `embeddings, MiniLM shape, batch ${B} × ${T} tokens, ${
        label.replace("modelhost ", "")
      }`,
      unit: "sentences/s",
      ours: B / (median(ms) / 1000),
      peer: B / (median(base) / 1000),
      peerName: `transformers.js (onnxruntime ${
        JSON.stringify(ortVersions ?? "?")
      })`,
      ratio: wall.ratio,
      ratioLo: wall.lo,
      ratioHi: wall.hi,
      ratioCpu: roundRatios(cpu.get(label)!, tjsCpu).ratio,
    });
  }
  await writeBenchJson(args.json, {
    bench: "embed_compare",
    threads: THREADS,
    rounds: ROUNDS,
    rows,
    notes: [],
  });
}
