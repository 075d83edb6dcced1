// Q4_K_M quantization speed, ours (the GGUF writer, 1 and 2 worker
// threads) beside llama-quantize (1 and 2 threads) on the same F16 input,
// rounds alternating; prints MB/s of F16 input (medians) and the ratios.
//
//   LLAMA_CPP_BIN=/path/to/bin deno run -A bench/quantize_compare.ts [--rounds 3]
//     [--embd 2048 --ff 5632 --layers 2 --vocab 8192]
//
// The input is the synthetic gqa4 Llama of tests/vectors/gen/synthetic_llama.ts
// (by default 256 wide, 8 layers, about 6 MB of F16; the flags give it real
// widths: 2048/5632, 2 layers and 8192 tokens is about 250 MB). Without
// LLAMA_CPP_BIN only our numbers are printed.

import { parseArgs } from "@std/cli";
import { memorySource } from "../core/sources.ts";
import { readGguf, writeGgufBytes } from "../formats/gguf/mod.ts";
import { createQuantPool } from "../io/quant_pool.ts";
import { syntheticLlama } from "../tests/vectors/gen/synthetic_llama.ts";

const args = parseArgs(Deno.args, {
  string: ["rounds", "embd", "ff", "layers", "vocab"],
});
const rounds = Number(args.rounds ?? 3);
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
const cpu = (await Deno.readTextFile("/proc/cpuinfo")).split("\n");
const model = cpu.find((l) => l.startsWith("model name"))?.split(":")[1].trim();
const flags = cpu.find((l) => l.startsWith("flags"))?.split(":")[1] ?? "";
console.log(
  `${model}; ${
    ["avx2", "avx512f", "avx512_vnni"].filter((f) => flags.includes(` ${f}`))
      .join(" ")
  }; input ${mb.toFixed(1)} MB F16`,
);

async function ours(threads: number): Promise<number> {
  const file = await readGguf(memorySource(bytes));
  const pool = threads > 1 ? createQuantPool(threads) : undefined;
  const t0 = performance.now();
  try {
    await writeGgufBytes(file, { preset: "Q4_K_M", encode: pool?.encode });
  } finally {
    pool?.close();
  }
  return (performance.now() - t0) / 1000;
}

async function llama(threads: number): Promise<number> {
  const t0 = performance.now();
  const r = await new Deno.Command(`${bin}/llama-quantize`, {
    args: [input, `${dir}/out.gguf`, "Q4_K_M", String(threads)],
    stdout: "null",
    stderr: "null",
  }).output();
  if (!r.success) throw new Error("llama-quantize failed");
  return (performance.now() - t0) / 1000;
}

const sides: [string, () => Promise<number>][] = [
  ["ours 1 thread", () => ours(1)],
  ["ours 2 threads", () => ours(2)],
  ...(bin
    ? [
      ["llama-quantize 1 thread", () => llama(1)],
      ["llama-quantize 2 threads", () => llama(2)],
    ] as [string, () => Promise<number>][]
    : []),
];
const times = new Map<string, number[]>(sides.map(([n]) => [n, []]));
for (let r = 0; r < rounds; r++) {
  for (const [name, f] of r % 2 ? sides.slice().reverse() : sides) {
    times.get(name)!.push(await f());
  }
}
const median = (v: number[]) => v.slice().sort((a, b) => a - b)[v.length >> 1];
const rate = new Map<string, number>();
for (const [name, v] of times) {
  rate.set(name, mb / median(v));
  console.log(
    `${name.padEnd(26)} ${
      (mb / median(v)).toFixed(2).padStart(7)
    } MB/s (median of ${v.length}, ${v.map((s) => s.toFixed(2)).join(" ")} s)`,
  );
}
if (bin) {
  for (const t of [1, 2]) {
    const a = rate.get(`ours ${t} thread${t > 1 ? "s" : ""}`)!;
    const b = rate.get(`llama-quantize ${t} thread${t > 1 ? "s" : ""}`)!;
    console.log(
      `${t} thread(s): ours / llama-quantize = ${(a / b).toFixed(3)}`,
    );
  }
}
await Deno.remove(dir, { recursive: true });
