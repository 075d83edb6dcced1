// Q4_K_M quantization speed, ours (the GGUF writer, 1 and 2 worker
// threads) beside llama-quantize (1 and 2 threads) on the same F16 input,
// rounds alternating; prints MB/s of F16 input (medians), MB per CPU-second
// (user + system time of all threads: ours from /proc/self/stat, the
// child's from its rusage, so the load of others on a shared machine
// matters less) and the ratios.
//
//   LLAMA_CPP_BIN=/path/to/bin deno run -A bench/quantize_compare.ts [--rounds 3]
//     [--embd 2048 --ff 5632 --layers 2 --vocab 8192] [--threads 1,2] [--json FILE]
//
// The input is the synthetic gqa4 Llama of tests/vectors/gen/synthetic_llama.ts
// (by default 256 wide, 8 layers, about 6 MB of F16; the flags give it real
// widths: 2048/5632, 2 layers and 8192 tokens is about 250 MB). Without
// LLAMA_CPP_BIN only our numbers are printed. `--json FILE` also writes the
// rows as JSON (bench/_json.ts) for tools/perf_table.ts.

import { parseArgs } from "@std/cli";
import { memorySource } from "../core/sources.ts";
import { readGguf, writeGgufBytes } from "../formats/gguf/mod.ts";
import { createQuantPool } from "../io/quant_pool.ts";
import { syntheticLlama } from "../tests/vectors/gen/synthetic_llama.ts";
import { type BenchRow, roundRatios, writeBenchJson } from "./_json.ts";
import { cpuInfo } from "./_peer.ts";

const args = parseArgs(Deno.args, {
  string: ["rounds", "embd", "ff", "layers", "vocab", "threads", "json"],
});
const rounds = Number(args.rounds ?? 3);
const threadCounts = String(args.threads ?? "1,2").split(",").map(Number);
const bin = Deno.env.get("LLAMA_CPP_BIN");
const shape = Object.fromEntries(
  (["embd", "ff", "layers", "vocab"] as const).filter((k) => args[k]).map((
    k,
  ) => [k, Number(args[k])]),
);
if (shape.embd) {
  Object.assign(shape, { heads: shape.embd / 64, kvHeads: shape.embd / 256 });
}
const bytes = await syntheticLlama("gqa4", shape);
const dir = await Deno.makeTempDir();
const input = `${dir}/in.gguf`;
await Deno.writeFile(input, bytes);
const mb = bytes.length / 1e6;
const { model, flags } = cpuInfo();
console.log(
  `${model}; ${
    ["avx2", "avx512f", "avx512_vnni"].filter((f) => flags.has(f)).join(" ")
  }; input ${mb.toFixed(1)} MB F16; load average ${
    (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ")
  } on ${navigator.hardwareConcurrency} CPUs`,
);

/** CPU seconds (user + system) of this process and of its waited-for children. */
function cpuSeconds(): { self: number; children: number } {
  const f = Deno.readTextFileSync("/proc/self/stat").split(") ")[1].split(" ");
  const tick = 100; // USER_HZ
  return {
    self: (Number(f[11]) + Number(f[12])) / tick,
    children: (Number(f[13]) + Number(f[14])) / tick,
  };
}

interface Run {
  wall: number;
  cpu: number;
}

async function ours(threads: number): Promise<Run> {
  const file = await readGguf(memorySource(bytes));
  const c0 = cpuSeconds().self;
  const t0 = performance.now();
  const pool = threads > 1 ? createQuantPool(threads) : undefined;
  try {
    await writeGgufBytes(file, {
      preset: "Q4_K_M",
      encode: pool?.encode,
      encodeStored: pool?.encodeStored,
    });
  } finally {
    pool?.close();
  }
  return {
    wall: (performance.now() - t0) / 1000,
    cpu: cpuSeconds().self - c0,
  };
}

async function llama(threads: number): Promise<Run> {
  const c0 = cpuSeconds().children;
  const t0 = performance.now();
  const r = await new Deno.Command(`${bin}/llama-quantize`, {
    args: [input, `${dir}/out.gguf`, "Q4_K_M", String(threads)],
    stdout: "null",
    stderr: "null",
  }).output();
  if (!r.success) throw new Error("llama-quantize failed");
  return {
    wall: (performance.now() - t0) / 1000,
    cpu: cpuSeconds().children - c0,
  };
}

const label = (who: string, t: number) =>
  `${who} ${t} thread${t > 1 ? "s" : ""}`;
const sides: [string, () => Promise<Run>][] = [
  ...threadCounts.map((t) =>
    [label("ours", t), () => ours(t)] as [string, () => Promise<Run>]
  ),
  ...(bin
    ? threadCounts.map((t) =>
      [label("llama-quantize", t), () => llama(t)] as [
        string,
        () => Promise<Run>,
      ]
    )
    : []),
];
const runs = new Map<string, Run[]>(sides.map(([n]) => [n, []]));
for (let r = 0; r < rounds; r++) {
  for (const [name, f] of r % 2 ? sides.slice().reverse() : sides) {
    runs.get(name)!.push(await f());
  }
}
const median = (v: number[]) => v.slice().sort((a, b) => a - b)[v.length >> 1];
const rate = new Map<string, number>();
const perCpu = new Map<string, number>();
for (const [name, v] of runs) {
  rate.set(name, median(v.map((r) => mb / r.wall)));
  perCpu.set(name, median(v.map((r) => mb / r.cpu)));
  console.log(
    `${name.padEnd(26)} ${rate.get(name)!.toFixed(2).padStart(7)} MB/s, ${
      perCpu.get(name)!.toFixed(2).padStart(7)
    } MB per CPU-s (medians of ${v.length}; ${
      v.map((r) => `${r.wall.toFixed(2)} s / ${r.cpu.toFixed(2)} CPU-s`).join(
        ", ",
      )
    })`,
  );
}
if (bin) {
  for (const t of threadCounts) {
    const a = label("ours", t), b = label("llama-quantize", t);
    console.log(
      `${t} thread(s): ours / llama-quantize = ${
        (rate.get(a)! / rate.get(b)!).toFixed(3)
      } (MB/s), ${(perCpu.get(a)! / perCpu.get(b)!).toFixed(3)} (per CPU-s)`,
    );
  }
}
if (args.json) {
  const rows: BenchRow[] = threadCounts.map((t) => {
    const a = runs.get(label("ours", t))!;
    const b = bin ? runs.get(label("llama-quantize", t))! : [];
    const wall = roundRatios(a.map((r) => r.wall), b.map((r) => r.wall));
    const cpu = roundRatios(a.map((r) => r.cpu), b.map((r) => r.cpu));
    return {
      id: `quantize:Q4_K_M:${t}`,
      what: `Q4_K_M quantization of ${mb.toFixed(0)} MB F16, ${t} thread${
        t > 1 ? "s" : ""
      }`,
      unit: "MB/s",
      ours: rate.get(label("ours", t))!,
      peer: bin ? rate.get(label("llama-quantize", t))! : null,
      peerName: "llama-quantize",
      ratio: wall.ratio,
      ratioLo: wall.lo,
      ratioHi: wall.hi,
      ratioCpu: cpu.ratio,
      note: bin
        ? undefined
        : "llama-quantize not available (LLAMA_CPP_BIN unset)",
    };
  });
  await writeBenchJson(args.json, {
    bench: "quantize_compare",
    threads: Math.max(...threadCounts),
    rounds,
    rows,
    notes: [],
  });
}
await Deno.remove(dir, { recursive: true });
