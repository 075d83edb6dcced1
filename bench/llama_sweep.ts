// Prefill and decode of Llama-shaped models (random weights, written by our
// own GGUF writer) against llama.cpp through node-llama-cpp
// (bench/_nlc_peer.mjs), over a sweep of widths and weight types, as one
// table. Per model: the two sides alternate round by round (which side
// goes first alternates too); each cell is the median of the per-round
// ratios over the rounds where neither side stalled (a round slower than
// twice that side's median; stalled rounds are counted apart), in wall
// time and per CPU second (each process's user + system time, which the
// other tenants of a shared machine disturb far less). A greedy check
// compares 16 greedy ids after the 128-token prompt on both sides.
//
//   NODE_PATH=/work/nlc/node_modules deno run -A bench/llama_sweep.ts \
//     [--types Q8_0,Q4_0,Q4_K_M] [--widths 576,1024,2048] [--tokens 128] \
//     [--decode 32] [--rounds 5] [--threads 1] [--settle MS] [--json FILE]
//     [--state gemmGrab=false,...]
//
// `--state` sets benchmark knobs of kernels/fast/_dispatch.ts (`state`),
// values read as JSON, for A/B runs of a change against llama.cpp.
//
// `--json FILE` also writes the rows as JSON (bench/_json.ts) for
// tools/perf_table.ts.
//
// Widths: 576 is SmolLM-135M's shape (30 layers); 1024 has 12 layers and
// FFN 2816; 2048 has 4 layers (of a 1B model's 22) and FFN 5632, enough
// to measure per-layer speed without writing gigabytes. Without
// node-llama-cpp only our side runs. Models are cached in $TMPDIR.

import process from "node:process";
import { memorySource } from "../core/sources.ts";
import { readGguf, writeGgufBytes } from "../formats/gguf/mod.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import { state } from "../kernels/fast/_dispatch.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../kernels/fast/runtime.ts";
import { argmax, type Shape, SMOLLM_135M, smolLmShapeGguf } from "./_decode.ts";
import { cpuLine, NlcPeer, summarize } from "./_peer.ts";
import { type BenchRow, writeBenchJson } from "./_json.ts";

const args: Record<string, string> = {
  types: "Q8_0,Q4_0",
  widths: "576",
  tokens: "128",
  decode: "32",
  rounds: "5",
  threads: "1",
  settle: "0",
};
for (let i = 0; i < Deno.args.length; i += 2) {
  args[Deno.args[i].replace(/^--/, "")] = Deno.args[i + 1];
}
const T = Number(args.tokens), D = Number(args.decode);
const rounds = Number(args.rounds), threads = Number(args.threads);

/** The model shape of a width (see the header). */
function shape(width: number): Shape {
  if (width === 576) return SMOLLM_135M;
  const heads = width / 64;
  const table: Record<number, [number, number]> = {
    1024: [12, 2816],
    2048: [4, 5632],
    3072: [2, 8192],
    4096: [2, 14336],
  };
  const [layers, intermediate] = table[width] ??
    [4, Math.round(width * 8 / 3 / 256) * 256];
  return {
    ...SMOLLM_135M,
    vocab: 32000,
    hidden: width,
    layers,
    heads,
    kvHeads: Math.max(1, heads / 4),
    intermediate,
  };
}

const selfCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

await configureKernels({ threads });
for (const kv of (args.state ?? "").split(",").filter((t) => t)) {
  const [k, v] = kv.split("=");
  if (!(k in state)) throw new RangeError(`--state: no knob ${k}`);
  Object.assign(state, { [k]: JSON.parse(v) });
}
console.log(cpuLine());
console.log(`kernels: ${JSON.stringify(kernelInfo())}`);
const peer = await NlcPeer.start();
console.log(
  peer
    ? `peer: llama.cpp via node-llama-cpp (prebuilt, its CPU variant chosen at start), ${threads} thread(s)`
    : "peer: none",
);
const rows: string[] = [];
const jsonRows: BenchRow[] = [];
let peerName = "llama.cpp (node-llama-cpp)";
for (const width of args.widths.split(",").map(Number)) {
  const s = shape(width);
  const prompt = Array.from(
    { length: T },
    (_, i) => 3 + 256 + ((i * 7919) % (s.vocab - 260)),
  );
  for (
    const type of args.types.split(",") as (
      | "Q8_0"
      | "Q4_0"
      | "Q4_K"
      | "Q4_K_M"
    )[]
  ) {
    const path = `${
      Deno.env.get("TMPDIR") ?? "/tmp"
    }/modelhost-llama-${width}x${s.layers}-${type}.gguf`;
    let bytes: Uint8Array;
    try {
      bytes = await Deno.readFile(path);
    } catch {
      bytes = await smolLmShapeGguf(type, 1, s);
      await Deno.writeFile(`${path}.tmp`, bytes);
      await Deno.rename(`${path}.tmp`, path);
    }
    const model = await transformerFromGguf(
      await readGguf(memorySource(bytes)),
    );
    const pa: number[] = [],
      pb: number[] = [],
      pac: number[] = [],
      pbc: number[] = [];
    const da: number[] = [],
      db: number[] = [],
      dac: number[] = [],
      dbc: number[] = [];
    const ourPrefill = () => {
      const c0 = selfCpu(), t0 = performance.now();
      model.forward(prompt, model.createState());
      pa.push(performance.now() - t0);
      pac.push(selfCpu() - c0);
    };
    // greedy ids after the prompt; times the D steps after the first
    const ourDecode = (n: number, time: boolean): number[] => {
      const st = model.createState();
      let logits = model.forward(prompt.slice(0, 4), st);
      const ids: number[] = [];
      const c0 = selfCpu(), t0 = performance.now();
      for (let i = 0; i < n; i++) {
        const tok = argmax(logits);
        ids.push(tok);
        logits = model.forward([tok], st);
      }
      if (time) {
        da.push(performance.now() - t0);
        dac.push(selfCpu() - c0);
      }
      return ids;
    };
    const theirPrefill = async () => {
      const c0 = peer!.cpuMs();
      pb.push(await peer!.prefill(prompt));
      pbc.push(peer!.cpuMs() - c0);
    };
    const theirDecode = async () => {
      const c0 = peer!.cpuMs();
      const r = await peer!.decode(prompt.slice(0, 4), D);
      db.push(r.ms);
      dbc.push(peer!.cpuMs() - c0);
    };
    ourPrefill();
    ourDecode(4, false); // warm: compiled kernels, resident weights
    if (peer) {
      await peer.load(path, threads, 1024, 512);
      await theirPrefill();
      await theirDecode();
      if (rows.length === 0) {
        console.log(`llama.cpp CPU variant: ${peer.cpuVariant() || "?"}`);
        peerName = `llama.cpp (node-llama-cpp, ${peer.cpuVariant() || "?"})`;
      }
    }
    for (const a of [pa, pb, pac, pbc, da, db, dac, dbc]) a.length = 0;
    // `--settle MS`: a pause before each side's run, longer than our
    // kernels' idle timer (1 s) to measure a start from stopped workers
    const settle = () => new Promise((r) => setTimeout(r, Number(args.settle)));
    for (let r = 0; r < rounds; r++) {
      const first = r % 2 === 0;
      if (first) await settle(), ourPrefill();
      if (peer) await settle(), await theirPrefill();
      if (!first) await settle(), ourPrefill();
      if (first) await settle(), ourDecode(D, true);
      if (peer) await settle(), await theirDecode();
      if (!first) await settle(), ourDecode(D, true);
    }
    // the greedy check: 16 ids after the whole prompt, both sides
    let check = "-";
    if (peer) {
      const st = model.createState();
      let logits = model.forward(prompt, st);
      const ours: number[] = [];
      for (let i = 0; i < 16; i++) {
        ours.push(argmax(logits));
        logits = model.forward([ours[i]], st);
      }
      const theirs = (await peer.decode(prompt, 16)).ids;
      let same = 0;
      while (same < 16 && ours[same] === theirs[same]) same++;
      check = `${same}/16 same${
        same < 16
          ? ` (ours ${ours.join(" ")}; llama.cpp ${theirs.join(" ")})`
          : ""
      }, ${new Set(ours).size} distinct`;
    }
    const rate = (n: number) => (ms: number) => (n * 1000) / ms;
    const p = summarize(pa, pb, rate(T)), pc = summarize(pac, pbc, rate(T));
    const d = summarize(da, db, rate(D)), dc = summarize(dac, dbc, rate(D));
    const row = `| ${width}×${s.layers} ${type} | ${p.ours} / ${p.peer} | ${
      p.ratio.split(" ")[0]
    } | ${pc.ratio.split(" ")[0]} | ${d.ours} / ${d.peer} | ${
      d.ratio.split(" ")[0]
    } | ${dc.ratio.split(" ")[0]} | ${
      [p.stalled, d.stalled].filter((x) => x).length
        ? [p.stalled, d.stalled].filter((x) => x).join("; ")
        : "none"
    } | ${check} |`;
    console.log(row);
    rows.push(row);
    const label = `${width}×${s.layers} ${type}`;
    const note = [p.stalled, d.stalled].filter((x) => x).join("; ");
    for (
      const [kind, w, c, what] of [
        ["prefill", p, pc, `prefill ${T} tokens`],
        ["decode", d, dc, `decode ${D} tokens`],
      ] as const
    ) {
      jsonRows.push({
        id: `${kind}:${width}:${type}`,
        what: `${what}, ${label}`,
        unit: "tok/s",
        ours: w.values.ours,
        peer: w.values.peer,
        peerName: peer ? peerName : "llama.cpp (node-llama-cpp not found)",
        ratio: w.values.ratio,
        ratioLo: w.values.lo,
        ratioHi: w.values.hi,
        ratioCpu: c.values.ratio,
        note: [note, kind === "decode" && peer ? `greedy ${check}` : ""]
          .filter((x) => x).join("; ") || undefined,
      });
    }
  }
}
// The model check on a trained model: stories260K (the shared fixture) as
// stored (F32) and re-written by our writer as Q8_0 / Q4_0 / Q4_K_M (whose
// rows of 64 make it Q5_0 and Q8_0, as llama-quantize does), 32 greedy ids
// after "Once upon a time" on both sides.
const fixture = "../shared/fixtures/gguf/stories260K.gguf";
const checks: string[] = [];
if (peer) {
  try {
    const raw = await Deno.readFile(fixture);
    for (const type of ["F32", "Q8_0", "Q4_0", "Q4_K_M"] as const) {
      const bytes = type === "F32" ? raw : await writeGgufBytes(
        await readGguf(memorySource(raw)),
        type === "Q4_K_M" ? { preset: type } : { quantize: type },
      );
      const path = `${
        Deno.env.get("TMPDIR") ?? "/tmp"
      }/modelhost-stories260K-${type}.gguf`;
      await Deno.writeFile(path, bytes);
      const model = await transformerFromGguf(
        await readGguf(memorySource(bytes)),
      );
      const ids = model.tokenizer!.encode("Once upon a time"); // BOS first
      const st = model.createState();
      let logits = model.forward(ids, st);
      const ours: number[] = [];
      for (let i = 0; i < 32; i++) {
        ours.push(argmax(logits));
        logits = model.forward([ours[i]], st);
      }
      await peer.load(path, threads, 256, 256);
      const theirs = (await peer.decode(ids, 32)).ids;
      let same = 0;
      while (same < 32 && ours[same] === theirs[same]) same++;
      const text = model.tokenizer!.decode(ours.slice(0, 24));
      checks.push(
        `stories260K ${type}: ${same}/32 greedy ids the same, ${
          new Set(ours).size
        } distinct ("${text.replace(/\s+/g, " ").trim()}")`,
      );
    }
  } catch (e) {
    checks.push(`stories260K check skipped: ${(e as Error).message}`);
  }
}

console.log(
  `\n${threads} thread(s); prefill ${T} tokens, decode ${D} tokens after 4; tok/s ours / llama.cpp (medians); ratios ours ÷ llama.cpp (median of rounds)\n`,
);
console.log(
  "| model | prefill tok/s | ratio | per CPU s | decode tok/s | ratio | per CPU s | stalled rounds | greedy check |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
for (const r of rows) console.log(r);
for (const c of checks) console.log(`\n${c}`);
if (args.json) {
  await writeBenchJson(args.json, {
    bench: "llama_sweep",
    threads,
    rounds,
    rows: jsonRows,
    notes: peer ? checks : [
      "llama.cpp peer not available (node-llama-cpp not found under NODE_PATH)",
    ],
  });
}
await peer?.close();
await shutdownKernels();
