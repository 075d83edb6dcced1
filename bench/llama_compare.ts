/**
 * Llama-family inference speed beside llama.cpp, on the same weights:
 * prefill and decode tokens/s for stories260K (F32, F16, Q8_0, Q4_0: the
 * fixture files) and for a generated model of SmolLM-135M's shape (random
 * weights; F32 and Q8_0, exported by our GGUF writer so llama.cpp runs the
 * very same bytes). Our numbers are always printed; with `LLAMA_CPP_BIN`
 * (a llama-bench or llama-cli binary, or a folder holding them, e.g.
 * `llama.cpp/build/bin`) llama.cpp's numbers and the ratios are printed
 * beside them. Both sides run one thread unless `LLAMA_CPP_THREADS` says
 * otherwise for llama.cpp; `MODELHOST_THREADS` sets ours (and llama.cpp's,
 * unless `LLAMA_CPP_THREADS` is given).
 *
 * `--check` also runs llama.cpp's `llama-simple` (greedy) on small models
 * of every family exported by our converter (with stories260K's tokenizer)
 * and compares its text with ours.
 *
 * The two sides alternate round by round (`--rounds N`, default 3; which
 * side goes first alternates too); the printed rates are medians and the
 * ratios medians of the per-round ratios.
 *
 *   deno run -A bench/llama_compare.ts [--quick] [--rounds N] [--check | --only-check]
 *   LLAMA_CPP_BIN=~/llama.cpp/build/bin deno run -A bench/llama_compare.ts
 */

import { basename, join } from "@std/path";
import { memoryTensorIndex } from "../core/model.ts";
import { memorySource } from "../core/sources.ts";
import { tensorFromF32 } from "../core/tensor.ts";
import { readGguf, writeGgufBytes } from "../formats/gguf/mod.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../kernels/fast/mod.ts";
import {
  generateText,
  ggufToHf,
  hfToGguf,
  type Transformer,
  transformerFromGguf,
} from "../models/mod.ts";
import {
  decodeRate,
  fixturesDir,
  modelFromGguf,
  prefillRate,
  promptOf,
  smolLmGguf,
  STORIES,
} from "./_llama_inputs.ts";
import { cpuInfo } from "./_peer.ts";

const quick = Deno.args.includes("--quick");
const onlyCheck = Deno.args.includes("--only-check");
const check = onlyCheck || Deno.args.includes("--check");
const roundsAt = Deno.args.indexOf("--rounds");
const ROUNDS = roundsAt >= 0 ? Number(Deno.args[roundsAt + 1]) : 3;
const med = (xs: number[]): number => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};
const ourThreads = Number(Deno.env.get("MODELHOST_THREADS") ?? "1");
const threads = Number(
  Deno.env.get("LLAMA_CPP_THREADS") ?? String(ourThreads),
);
if (ourThreads > 1) await configureKernels({ threads: ourThreads });

function cpuModel(): string {
  return cpuInfo().model ?? "unknown CPU";
}

/** The llama.cpp binary of a kind, from LLAMA_CPP_BIN (a binary or a folder). */
function llamaCpp(kind: string): string | undefined {
  const bin = Deno.env.get("LLAMA_CPP_BIN");
  if (!bin) return undefined;
  const candidates = [
    bin,
    join(bin, kind),
    join(bin, "bin", kind),
    join(bin, "build", "bin", kind),
  ];
  for (const c of candidates) {
    try {
      if (Deno.statSync(c).isFile && basename(c).startsWith(kind)) return c;
    } catch { /* next */ }
  }
  // LLAMA_CPP_BIN names another binary: look beside it
  try {
    const beside = join(bin, "..", kind);
    if (Deno.statSync(beside).isFile) return beside;
  } catch { /* none */ }
  return undefined;
}

interface Rates {
  prefill: number;
  decode: number;
}

async function run(
  cmd: string,
  args: string[],
): Promise<{ out: string; err: string; code: number }> {
  const r = await new Deno.Command(cmd, {
    args,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { out: dec.decode(r.stdout), err: dec.decode(r.stderr), code: r.code };
}

/** llama.cpp's prefill / decode tokens/s for a file (llama-bench, else llama-cli). */
async function llamaCppRates(
  file: string,
  p: number,
  n: number,
): Promise<Rates | string> {
  const bench = llamaCpp("llama-bench");
  if (bench) {
    const r = await run(bench, [
      "-m",
      file,
      "-p",
      String(p),
      "-n",
      String(n),
      "-t",
      String(threads),
      "-r",
      quick ? "1" : "3",
      "-o",
      "json",
    ]);
    if (r.code !== 0) {
      return `llama-bench failed: ${r.err.trim().split("\n").pop()}`;
    }
    const rows = JSON.parse(r.out) as {
      n_prompt: number;
      n_gen: number;
      avg_ts: number;
    }[];
    const pp = rows.find((x) => x.n_prompt > 0 && x.n_gen === 0);
    const tg = rows.find((x) => x.n_gen > 0 && x.n_prompt === 0);
    return { prefill: pp?.avg_ts ?? NaN, decode: tg?.avg_ts ?? NaN };
  }
  const cli = llamaCpp("llama-cli");
  if (cli) {
    const r = await run(cli, [
      "-m",
      file,
      "-p",
      "Once upon a time ".repeat(Math.ceil(p / 4)),
      "-n",
      String(n),
      "-t",
      String(threads),
      "--temp",
      "0",
      "-no-cnv",
      "--ignore-eos",
    ]);
    const rate = (label: string) =>
      Number(
        r.err.match(new RegExp(`${label} time =.*?([\\d.]+) tokens per second`))
          ?.[1] ?? NaN,
      );
    return { prefill: rate("prompt eval"), decode: rate("\\seval") };
  }
  return "LLAMA_CPP_BIN has no llama-bench or llama-cli";
}

interface Row {
  name: string;
  prompt: number;
  steps: number;
  model: () => Promise<Transformer>;
  /** The GGUF file llama.cpp runs. */
  file: () => Promise<string>;
}

const fixtures = fixturesDir();
const rows: Row[] = [];
const tmp = await Deno.makeTempDir({ prefix: "llama-compare-" });
if (fixtures) {
  for (const [q, rel] of Object.entries(STORIES)) {
    const path = join(fixtures, rel);
    rows.push({
      name: `stories260K ${q}`,
      prompt: 64,
      steps: 64,
      model: async () => modelFromGguf(await Deno.readFile(path)),
      file: () => Promise.resolve(path),
    });
  }
} else {
  console.log("fixtures not found: stories260K rows skipped");
}
for (const q of [undefined, "Q8_0"] as const) {
  let bytes: Uint8Array | undefined;
  const get = async () => bytes ??= await smolLmGguf(q);
  rows.push({
    name: `SmolLM-135M shape ${q ?? "F32"}`,
    prompt: quick ? 8 : 32,
    steps: quick ? 2 : q ? 4 : 8,
    model: async () => modelFromGguf(await get()),
    file: async () => {
      const path = join(tmp, `smollm-135m-shape-${q ?? "F32"}.gguf`);
      await Deno.writeFile(path, await get());
      return path;
    },
  });
}

console.log(
  `machine: ${cpuModel()}, ${navigator.hardwareConcurrency} logical CPUs, ${Deno.build.os}/${Deno.build.arch}, Deno ${Deno.version.deno}`,
);
console.log(
  `ours: ${ourThreads} thread(s), ${kernelInfo().backend} kernels; llama.cpp: ${
    Deno.env.get("LLAMA_CPP_BIN")
      ? `${threads} thread(s)`
      : "not given (set LLAMA_CPP_BIN)"
  }\n`,
);
const header = [
  "model".padEnd(24),
  "prompt".padStart(6),
  "ours prefill".padStart(13),
  "ours decode".padStart(12),
  "weights".padStart(10),
  "llama.cpp pp".padStart(13),
  "llama.cpp tg".padStart(13),
  "pp ratio".padStart(9),
  "tg ratio".padStart(9),
].join(" ");
if (!onlyCheck) console.log(header);
const fmt = (x: number) => Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 0) : "—";
for (const r of onlyCheck ? [] : rows) {
  const model = await r.model();
  const ids = promptOf(r.prompt, model.config.vocabSize);
  const mine: Rates[] = [], peer: Rates[] = [];
  let theirs: Rates | string = "—";
  for (let round = 0; round < ROUNDS; round++) {
    const oursNow = () =>
      mine.push({
        prefill: prefillRate(model, ids, quick ? 300 : 1500),
        decode: decodeRate(model, ids, r.steps),
      });
    if (round % 2 === 0) oursNow();
    if (Deno.env.get("LLAMA_CPP_BIN")) {
      theirs = await llamaCppRates(await r.file(), r.prompt, r.steps * 4);
      if (typeof theirs !== "string") peer.push(theirs);
    }
    if (round % 2 === 1) oursNow();
  }
  const ours: Rates = {
    prefill: med(mine.map((x) => x.prefill)),
    decode: med(mine.map((x) => x.decode)),
  };
  const mem = model.memory();
  const t = peer.length
    ? {
      prefill: med(peer.map((x) => x.prefill)),
      decode: med(peer.map((x) => x.decode)),
    }
    : { prefill: NaN, decode: NaN };
  // per-round ratios (ours ÷ theirs), their median
  const pr = med(peer.map((x, i) => mine[i].prefill / x.prefill));
  const dr = med(peer.map((x, i) => mine[i].decode / x.decode));
  console.log([
    r.name.padEnd(24),
    String(r.prompt).padStart(6),
    `${fmt(ours.prefill)} t/s`.padStart(13),
    `${fmt(ours.decode)} t/s`.padStart(12),
    `${(mem.weightBytes / 2 ** 20).toFixed(1)} MiB`.padStart(10),
    `${fmt(t.prefill)} t/s`.padStart(13),
    `${fmt(t.decode)} t/s`.padStart(13),
    (Number.isFinite(pr) ? `${pr.toFixed(3)}×` : "—").padStart(9),
    (Number.isFinite(dr) ? `${dr.toFixed(3)}×` : "—").padStart(9),
  ].join(" "));
  if (typeof theirs === "string" && theirs !== "—") {
    console.log(`  (${theirs})`);
  }
}
if (!onlyCheck) {
  console.log("\nratio = ours / llama.cpp (above 1: we are faster)");
  // Memory of a Q4_0 model: the stored blocks we hold, and any copies the
  // fast kernels keep in their own memory (none: the loader put the blocks
  // in kernel memory and the kernels read them in place).
  const before = kernelInfo().residentBytes;
  const q4 = await modelFromGguf(await smolLmGguf("Q4_0"));
  q4.forward(promptOf(4, q4.config.vocabSize), q4.createState());
  const mem = q4.memory();
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  console.log(
    `SmolLM-135M shape Q4_0: ${
      (mem.parameters / 1e6).toFixed(1)
    } M weights in ${mib(mem.weightBytes)} (${
      mem.bitsPerWeight.toFixed(2)
    } bits/weight); kernel copies ${
      mib(kernelInfo().residentBytes - before)
    }; ${mem.totalBitsPerWeight.toFixed(2)} bits/weight in all`,
  );
}

// ------------------------------------------------------------------ --check

/** A small model of one family with stories260K's vocabulary and random weights. */
async function familyModel(
  config: Record<string, unknown>,
  seed: number,
): Promise<Uint8Array> {
  const hfFromStories = await ggufToHf(
    await readGguf(
      memorySource(await Deno.readFile(join(fixtures!, STORIES.F32))),
    ),
  );
  const cfg = {
    vocab_size: 512,
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 3,
    max_position_embeddings: 512,
    hidden_act: "silu",
    ...config,
  } as Record<string, number | string | boolean | object>;
  const heads = cfg.num_attention_heads as number;
  const kvh = cfg.num_key_value_heads as number;
  const hd = (cfg.head_dim as number | undefined) ?? 64 / heads;
  let s = seed;
  const rnd = (n: number, scale: number) =>
    Float32Array.from({ length: n }, () => {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      return (s / 2 ** 32 * 2 - 1) * scale;
    });
  const t = (name: string, shape: number[], scale = 0.6) =>
    tensorFromF32(name, rnd(shape.reduce((a, b) => a * b), scale), shape);
  const list = [t("model.embed_tokens.weight", [512, 64], 1)];
  const bias = cfg.model_type === "qwen2";
  for (let n = 0; n < 3; n++) {
    const p = `model.layers.${n}.`;
    list.push(
      tensorFromF32(
        p + "input_layernorm.weight",
        new Float32Array(64).fill(1),
        [64],
      ),
    );
    list.push(
      tensorFromF32(
        p + "post_attention_layernorm.weight",
        new Float32Array(64).fill(1),
        [64],
      ),
    );
    list.push(t(p + "self_attn.q_proj.weight", [heads * hd, 64]));
    list.push(t(p + "self_attn.k_proj.weight", [kvh * hd, 64]));
    list.push(t(p + "self_attn.v_proj.weight", [kvh * hd, 64]));
    list.push(t(p + "self_attn.o_proj.weight", [64, heads * hd]));
    if (bias) {
      list.push(t(p + "self_attn.q_proj.bias", [heads * hd], 0.5));
      list.push(t(p + "self_attn.k_proj.bias", [kvh * hd], 0.5));
      list.push(t(p + "self_attn.v_proj.bias", [kvh * hd], 0.5));
    }
    list.push(t(p + "mlp.gate_proj.weight", [128, 64]));
    list.push(t(p + "mlp.up_proj.weight", [128, 64]));
    list.push(t(p + "mlp.down_proj.weight", [64, 128]));
  }
  list.push(
    tensorFromF32("model.norm.weight", new Float32Array(64).fill(1), [64]),
  );
  if (!cfg.tie_word_embeddings) list.push(t("lm_head.weight", [512, 64], 0.5));
  const file = hfToGguf({
    config: cfg,
    model: {
      models: [{ id: "check", metadata: {}, tensors: memoryTensorIndex(list) }],
    },
    tokenizer: hfFromStories.tokenizer,
    tokenizerConfig: hfFromStories.tokenizerConfig,
  });
  return await writeGgufBytes(file);
}

if (check) {
  const simple = llamaCpp("llama-simple");
  if (!simple || !fixtures) {
    console.log(
      "\n--check needs LLAMA_CPP_BIN with llama-simple, and the fixtures",
    );
  } else {
    console.log(
      '\nllama.cpp (llama-simple, greedy) on our GGUF exports, 40 tokens after "Once upon a time":',
    );
    const families: [string, Record<string, unknown>][] = [
      ["llama GQA 4/2", {
        model_type: "llama",
        num_attention_heads: 4,
        num_key_value_heads: 2,
        rms_norm_eps: 1e-5,
      }],
      ["llama3 scaling, tied, head_dim 32", {
        model_type: "llama",
        num_attention_heads: 4,
        num_key_value_heads: 1,
        head_dim: 32,
        rms_norm_eps: 1e-5,
        rope_theta: 500000,
        tie_word_embeddings: true,
        rope_scaling: {
          rope_type: "llama3",
          factor: 8,
          low_freq_factor: 1,
          high_freq_factor: 4,
          original_max_position_embeddings: 32,
        },
      }],
      ["mistral (window 4096)", {
        model_type: "mistral",
        num_attention_heads: 8,
        num_key_value_heads: 2,
        sliding_window: 4096,
      }],
      ["qwen2 q/k/v biases, tied", {
        model_type: "qwen2",
        num_attention_heads: 4,
        num_key_value_heads: 2,
        rope_theta: 1e6,
        tie_word_embeddings: true,
      }],
    ];
    let seed = 7;
    for (const [name, cfg] of families) {
      const bytes = await familyModel(cfg, seed++);
      const path = join(tmp, `check-${seed}.gguf`);
      await Deno.writeFile(path, bytes);
      const model = await transformerFromGguf(
        await readGguf(memorySource(bytes)),
      );
      const r = await generateText(model, "Once upon a time", {
        greedy: true,
        maxTokens: 40,
      });
      const tok = model.tokenizer!;
      const text = (ids: number[]) =>
        tok.decode(ids, { special: true, stripLeadingSpace: false });
      // The first near-tie (top-2 logits within 0.01): llama-simple keeps an
      // F16 KV cache, so from there on its greedy path may fork.
      const state = model.createState();
      let logits = model.forward(r.promptIds, state);
      let tie = r.ids.length;
      for (let i = 0; i < r.ids.length; i++) {
        const top = [...logits].sort((a, b) => b - a);
        if (top[0] - top[1] < 0.01) {
          tie = i;
          break;
        }
        logits = model.forward([r.ids[i]], state);
      }
      const ours = text(r.promptIds) + text(r.ids);
      const sure = text(r.promptIds) + text(r.ids.slice(0, tie));
      const theirs = await run(simple, [
        "-m",
        path,
        "-n",
        "40",
        "Once upon a time",
      ]);
      const out = theirs.out.replace(/\n$/, "");
      const same = tie === r.ids.length ? out === ours : out.startsWith(sure);
      console.log(
        `  ${name.padEnd(36)} ${
          same
            ? tie === r.ids.length
              ? "same 40 tokens"
              : `same up to a near-tie at token ${tie}${
                out === ours ? " (and after)" : ""
              }`
            : "DIFFERENT"
        }`,
      );
      if (!same) {
        console.log(
          `    ours:      ${JSON.stringify(ours)}\n    llama.cpp: ${
            JSON.stringify(theirs.out)
          }`,
        );
      }
    }
  }
}
await Deno.remove(tmp, { recursive: true });
await shutdownKernels();
