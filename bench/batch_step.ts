// What one continuous-batching step costs by its number of rows: the
// SmolLM-135M-shaped Q8_0 model of bench/_decode.ts (random weights),
// `forwardBatch` over M sequences of one decode token each (every sequence
// 4 prompt tokens in), M = 1, 2, 4, 8 alternating round by round, in this
// process's CPU time (user + system, which the other tenants of a shared
// machine disturb far less than wall time) and wall time. Also times the
// 49152 × 576 output head alone on M rows, and (`--paths`) the same steps
// with the quantized GEMM tiles from 4 rows (`gemm4`, the default before
// Q8_0's threshold went to 10; 8 since the i16 GEMM) and with the tiles
// off (`dots`: the dot kernels on weight rows prepared once for all M
// rows). Then the
// engine (`BatchEngine`, in process, no HTTP): one stream, and 8 streams
// arriving together with `splitPrefill` on and off, alternating, 32 greedy
// tokens after 4-token prompts: tokens per CPU second and the median time
// to first token, in CPU time since the burst began (this process does
// nothing else) and in wall time.
//
//   deno run -A bench/batch_step.ts [--rows 1,2,4,8] [--rounds 5]
//     [--threads 1] [--paths] [--no-engine]

import { parseArgs } from "@std/cli";
import process from "node:process";
import { memorySource } from "../core/sources.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { state } from "../kernels/fast/_dispatch.ts";
import { fastLinear } from "../kernels/fast/matmul.ts";
import { configureKernels, kernelInfo } from "../kernels/fast/runtime.ts";
import { BatchEngine } from "../models/batch.ts";
import type { TransformerState } from "../models/transformer.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import { cpuLine, median } from "./_peer.ts";
import { smolLmShapeGguf } from "./_decode.ts";

const args = parseArgs(Deno.args, {
  string: ["rows", "rounds", "threads"],
  boolean: ["paths", "engine"],
  negatable: ["engine"],
  default: { rows: "1,2,4,8", rounds: "5", threads: "1", engine: true },
});
const ROWS = args.rows.split(",").map(Number);
const ROUNDS = Number(args.rounds);
await configureKernels({ threads: Number(args.threads) });

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const model = await transformerFromGguf(
  await readGguf(memorySource(await smolLmShapeGguf("Q8_0"))),
);
const head = model.tensors.get(`layers.${model.config.numLayers + 2}.weight`)!;
const d = model.config.hiddenSize;
console.log(cpuLine());
console.log(`kernels: ${JSON.stringify(kernelInfo())}`);
console.log(
  `model: SmolLM-135M shape, Q8_0, random weights; head ${head.dtype} ${
    head.shape.join(" × ")
  }; ${args.threads} thread(s); ${ROUNDS} rounds, sizes alternating`,
);

/** Fresh states with a 4-token prompt each. */
function fill(m: number): TransformerState[] {
  const ss = Array.from({ length: m }, () => model.createState());
  model.forwardBatch(
    ss.map((s, i) => ({ ids: [1, 300 + i, 400, 500], state: s })),
  );
  return ss;
}

const STEPS = 4;
type Key = string;
const cpu = new Map<Key, number[]>(), wall = new Map<Key, number[]>();
const note = (k: Key, c: number, w: number) => {
  (cpu.get(k) ?? cpu.set(k, []).get(k)!).push(c);
  (wall.get(k) ?? wall.set(k, []).get(k)!).push(w);
};
const paths = args.paths
  ? [["auto", 0], ["gemm4", 4], ["dots", Infinity]] as const
  : [["auto", 0]] as const;
const x = new Float32Array(8 * d).map((_, i) => Math.sin(i));

for (let r = -1; r < ROUNDS; r++) { // round -1 warms up
  for (const [path, min] of paths) {
    state.gemmMinRows = min;
    for (const m of r % 2 ? ROWS : [...ROWS].reverse()) {
      const ss = fill(m);
      let c0 = cpuMs(), w0 = performance.now();
      for (let s = 0; s < STEPS; s++) {
        model.forwardBatch(
          ss.map((st, i) => ({ ids: [600 + s + i], state: st })),
        );
      }
      if (r >= 0) {
        note(
          `${path} step ${m}`,
          (cpuMs() - c0) / STEPS,
          (performance.now() - w0) / STEPS,
        );
      }
      c0 = cpuMs(), w0 = performance.now();
      for (let s = 0; s < STEPS; s++) {
        fastLinear(x.subarray(0, m * d), m, head);
      }
      if (r >= 0) {
        note(
          `${path} head ${m}`,
          (cpuMs() - c0) / STEPS,
          (performance.now() - w0) / STEPS,
        );
      }
    }
  }
}
state.gemmMinRows = 0;

console.log(
  "path  | rows | step CPU ms | per row | × one row | step wall ms | head CPU ms | head per row",
);
for (const [path] of paths) {
  const one = median(cpu.get(`${path} step 1`) ?? [NaN]);
  for (const m of ROWS) {
    const c = median(cpu.get(`${path} step ${m}`)!);
    const w = median(wall.get(`${path} step ${m}`)!);
    const h = median(cpu.get(`${path} head ${m}`)!);
    console.log(
      `${path.padEnd(5)} | ${String(m).padStart(4)} | ${
        c.toFixed(1).padStart(11)
      } | ${(c / m).toFixed(1).padStart(7)} | ${
        (c / one).toFixed(2).padStart(9)
      } | ${w.toFixed(1).padStart(12)} | ${h.toFixed(1).padStart(11)} | ${
        (h / m).toFixed(2)
      }`,
    );
  }
}
console.log(`load at end ${Deno.loadavg().map((v) => v.toFixed(1)).join(" ")}`);

/** What a burst of `n` streams measured. */
interface Burst {
  ttftCpu: number;
  ttftWall: number;
  tokPerCpuS: number;
  tokPerS: number;
}

/** `n` generations started together on a fresh engine. */
async function burst(n: number, splitPrefill: boolean): Promise<Burst> {
  const engine = new BatchEngine(model, { splitPrefill });
  const c0 = cpuMs(), w0 = performance.now();
  const firstCpu: number[] = [], firstWall: number[] = [];
  let tokens = 0;
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const it = engine.generate([1, 300 + 7 * i, 400 + i, 500 + 3 * i], {
        maxTokens: 32,
        greedy: true,
        logitBias: { 2: -100 },
      });
      for await (const t of it) {
        tokens++;
        if (t.index === 0) {
          firstCpu.push(cpuMs() - c0);
          firstWall.push(performance.now() - w0);
        }
      }
    }),
  );
  const c = cpuMs() - c0, w = performance.now() - w0;
  engine.close();
  return {
    ttftCpu: median(firstCpu),
    ttftWall: median(firstWall),
    tokPerCpuS: tokens / (c / 1000),
    tokPerS: tokens / (w / 1000),
  };
}

if (args.engine) {
  const kinds = [
    ["one stream", 1, true],
    ["8 streams, splitPrefill", 8, true],
    ["8 streams, all prompts in one step", 8, false],
  ] as const;
  const got = new Map<string, Burst[]>(kinds.map(([k]) => [k, []]));
  await burst(2, true); // warm up
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, n, half] of r % 2 ? [...kinds].reverse() : kinds) {
      got.get(name)!.push(await burst(n, half));
    }
  }
  const one = got.get("one stream")!;
  console.log(
    "engine                             | tok/CPU s | × one | tok/s (wall) | × one | p50 TTFT CPU ms | × one | p50 TTFT wall ms | × one",
  );
  for (const [name] of kinds) {
    const b = got.get(name)!;
    // ratios per round (sides alternate), then their median
    const ratio = (f: (x: Burst) => number) =>
      median(b.map((x, i) => f(x) / f(one[i]))).toFixed(2);
    const med = (f: (x: Burst) => number) => median(b.map(f));
    console.log(
      `${name.padEnd(34)} | ${
        med((x) => x.tokPerCpuS).toFixed(1).padStart(9)
      } | ${ratio((x) => x.tokPerCpuS).padStart(5)} | ${
        med((x) => x.tokPerS).toFixed(1).padStart(12)
      } | ${ratio((x) => x.tokPerS).padStart(5)} | ${
        med((x) => x.ttftCpu).toFixed(0).padStart(15)
      } | ${ratio((x) => x.ttftCpu).padStart(5)} | ${
        med((x) => x.ttftWall).toFixed(0).padStart(16)
      } | ${ratio((x) => x.ttftWall).padStart(5)}`,
    );
  }
  console.log(
    `load at end ${Deno.loadavg().map((v) => v.toFixed(1)).join(" ")}`,
  );
}
