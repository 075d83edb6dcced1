// Regenerates the performance table of README.md (`deno task bench:table`):
// runs the side-by-side benches in a short configuration, each writing its
// rows as JSON (`--json`, bench/_json.ts), and rewrites the block between
// `<!-- perf-table:begin -->` and `<!-- perf-table:end -->` with the date,
// commit, CPU model and flags, load, Deno version and one table (ours,
// peer, ratio, target, met). The block goes through `deno fmt` before it
// is written (a temporary file renamed into place).
//
//   NODE_PATH=/work/nlc/node_modules [LLAMA_CPP_BIN=/path/to/bin] \
//     deno task bench:table [--only sweep,mlp,quantize,embed,wllama] \
//     [--dry-run] [--threads 2] [--rounds N] [--embed-model DIR] \
//     [--python BIN] [--readme README.md] [--smoke]
//
// Sections: sweep (bench/llama_sweep.ts, widths 576/1024/2048, Q8_0, Q4_0,
// Q4_K_M, vs llama.cpp through node-llama-cpp), mlp (bench/compare.ts
// --only mlp, vs ONNX Runtime; WebAssembly and native BLAS rows), quantize
// (bench/quantize_compare.ts, Q4_K_M vs llama-quantize when LLAMA_CPP_BIN
// is set), embed (bench/embed_compare.ts --blas vs transformers.js on a
// MiniLM-shaped folder: --embed-model, else one made once by
// bench/encoder_model.py with --python / $MODELHOST_PYTHON), wllama
// (bench/wllama_compare.ts in headless Chromium). A missing peer makes its
// rows say "peer not available"; a bench that fails is a row saying so.
// `--dry-run` prints the block instead of writing it; `--smoke` shrinks
// every size to check that the whole chain works (implies --dry-run: its
// numbers are not measurements).

import { parseArgs } from "@std/cli";
import { dirname, fromFileUrl, join, resolve } from "@std/path";
import type { BenchResult } from "../bench/_json.ts";
import {
  type MachineInfo,
  renderBlock,
  replaceBlock,
  type SectionResult,
} from "./_perf_table.ts";
import { cpuInfo } from "../bench/_peer.ts";

const ROOT = resolve(fromFileUrl(new URL("..", import.meta.url)));
const SECTIONS = ["sweep", "mlp", "quantize", "embed", "wllama"];

const args = parseArgs(Deno.args, {
  string: ["only", "threads", "rounds", "embed-model", "python", "readme"],
  boolean: ["dry-run", "smoke"],
  default: {
    only: SECTIONS.join(","),
    threads: "2",
    readme: join(ROOT, "README.md"),
  },
});
const only = String(args.only).split(",").filter((s: string) => s);
for (const s of only) {
  if (!SECTIONS.includes(s)) {
    throw new RangeError(
      `--only: unknown section "${s}"; the sections are ${SECTIONS.join(", ")}`,
    );
  }
}
const threads = Number(args.threads);
if (!Number.isInteger(threads) || threads < 1) {
  throw new RangeError(
    `--threads: expected a positive integer, got ${args.threads}`,
  );
}
const smoke = args.smoke;
const dryRun = args["dry-run"] || smoke;
const rounds = (n: number) => String(args.rounds ?? (smoke ? 1 : n));
const tmp = await Deno.makeTempDir({ prefix: "modelhost-perf-table-" });

function machineCpu(): { cpu: string; flags: Record<string, boolean> } {
  const { model: cpu = "unknown CPU", flags: have } = cpuInfo();
  const flags: Record<string, boolean> = {};
  for (const f of ["avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni"]) {
    flags[f] = have.has(f);
  }
  return { cpu, flags };
}

const load = () => Deno.loadavg().map((x) => x.toFixed(1)).join(" ");

async function git(...a: string[]): Promise<string> {
  const r = await new Deno.Command("git", {
    args: a,
    cwd: ROOT,
    stderr: "null",
  })
    .output().catch(() => undefined);
  return r?.success ? new TextDecoder().decode(r.stdout).trim() : "";
}

/** A MiniLM-shaped folder for the embed section, or why there is none. */
async function embedModel(): Promise<{ dir?: string; why?: string }> {
  if (args["embed-model"]) return { dir: resolve(args["embed-model"]) };
  const dir = join(Deno.env.get("TMPDIR") ?? "/tmp", "modelhost-minilm-bench");
  const ok = async () =>
    (await Deno.stat(join(dir, "onnx", "model.onnx")).catch(() => undefined))
      ?.isFile;
  if (await ok()) return { dir };
  const python = args.python ?? Deno.env.get("MODELHOST_PYTHON") ?? "python3";
  console.error(`making ${dir} with ${python} bench/encoder_model.py`);
  let made = false;
  try {
    made = (await new Deno.Command(python, {
      args: [join(ROOT, "bench", "encoder_model.py"), dir],
      stdout: "inherit",
      stderr: "inherit",
    }).output()).success;
  } catch (e) {
    console.error(`${python}: ${(e as Error).message}`);
  }
  if (made && await ok()) return { dir };
  return {
    why:
      `no MiniLM folder (pass --embed-model DIR made by bench/encoder_model.py, or --python with torch, transformers and sentence-transformers)`,
  };
}

/** The bench command line of a section (under tiny sizes with --smoke). */
async function benchArgs(
  name: string,
  json: string,
): Promise<string[] | { skip: string }> {
  const t = String(threads);
  switch (name) {
    case "sweep":
      return [
        "bench/llama_sweep.ts",
        ...(smoke
          ? ["--widths", "576", "--types", "Q4_0", "--tokens", "16"]
          : ["--widths", "576,1024,2048", "--types", "Q8_0,Q4_0,Q4_K_M"]),
        ...["--decode", smoke ? "4" : "32", "--threads", t],
        ...["--rounds", rounds(3), "--json", json],
      ];
    case "mlp":
      return [
        "bench/compare.ts",
        ...["--only", "mlp", "--threads", t, "--rounds", rounds(9)],
        ...["--json", json],
      ];
    case "quantize":
      return [
        "bench/quantize_compare.ts",
        ...(smoke ? [] : [
          // the size: 1 GiB of F16 (9 blocks of a 1B-shaped model)
          ...["--embd", "2048", "--ff", "5632", "--layers", "9"],
          ...["--vocab", "32000"],
        ]),
        ...["--threads", String(threads)],
        ...["--rounds", rounds(3), "--json", json],
      ];
    case "embed": {
      const m = await embedModel();
      if (!m.dir) return { skip: m.why! };
      return [
        "bench/embed_compare.ts",
        ...["--model", m.dir, "--threads", t, "--rounds", rounds(3)],
        ...(smoke
          ? ["--batch", "2", "--tokens", "16", "--dtypes", "Q8_0"]
          : ["--blas"]),
        ...["--json", json],
      ];
    }
    case "wllama":
      return [
        "bench/wllama_compare.ts",
        ...["--types", smoke ? "Q4_0" : "Q8_0,Q4_0", "--threads", t],
        ...["--decode", smoke ? "4" : "16", "--rounds", rounds(3)],
        ...["--json", json],
      ];
  }
  throw new RangeError(`unknown section ${name}`);
}

/** Runs one section's bench (its output goes to stderr) and reads its JSON. */
async function runSection(name: string): Promise<SectionResult> {
  const json = join(tmp, `${name}.json`);
  const a = await benchArgs(name, json);
  if ("skip" in a) return { name, skipped: a.skip };
  console.error(`\n== ${name}: deno run -A ${a.join(" ")}`);
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...a],
    cwd: ROOT,
    env: { ONNXRUNTIME_NODE_INSTALL: "skip" },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  await child.stdout.pipeTo(Deno.stderr.writable, { preventClose: true });
  const status = await child.status;
  console.error(
    `== ${name}: ${((performance.now() - t0) / 1000).toFixed(0)} s`,
  );
  if (!status.success) {
    return { name, error: `exit code ${status.code} (its output is above)` };
  }
  try {
    return {
      name,
      result: JSON.parse(await Deno.readTextFile(json)) as BenchResult,
    };
  } catch (e) {
    return { name, error: `no JSON result: ${(e as Error).message}` };
  }
}

/** The markdown as `deno fmt` writes it (README.md is kept fmt-clean). */
async function fmt(md: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=md", "-"],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(md));
  await w.close();
  const r = await child.output();
  if (!r.success) throw new Error("deno fmt failed on the generated block");
  return new TextDecoder().decode(r.stdout);
}

const start = performance.now();
const loadStart = load();
const sections: SectionResult[] = [];
try {
  for (const name of only) {
    sections.push(
      await runSection(name).catch((e) => ({
        name,
        error: (e as Error).message,
      })),
    );
  }
} finally {
  await Deno.remove(tmp, { recursive: true });
}
const head = await git("rev-parse", "--short", "HEAD");
const dirty = (await git("status", "--porcelain", "--untracked-files=no")) !==
  "";
const { cpu, flags } = machineCpu();
const machine: MachineInfo = {
  date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
  commit: `${head || "unknown"}${dirty ? "+changes" : ""}`,
  cpu,
  logicalCpus: navigator.hardwareConcurrency,
  flags,
  loadStart,
  loadEnd: load(),
  deno: Deno.version.deno,
  threads,
  minutes: (performance.now() - start) / 60000,
};
let block = await fmt(renderBlock(machine, sections));
if (smoke) {
  block = `_Smoke run (--smoke): sizes shrunk, not a measurement._\n\n${block}`;
}
if (dryRun) {
  console.log(block);
} else {
  const path = resolve(args.readme);
  const next = replaceBlock(await Deno.readTextFile(path), block, path);
  const tmpFile = join(dirname(path), `.${Date.now()}-${Deno.pid}.perf-table`);
  await Deno.writeTextFile(tmpFile, next);
  await Deno.rename(tmpFile, path);
  console.error(`\nwrote the table into ${path}`);
}
console.error(
  `total ${((performance.now() - start) / 1000).toFixed(0)} s`,
);
