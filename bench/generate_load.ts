// Continuous batching under load: a SmolLM-135M-shaped Q8_0 model (random
// weights, bench/_decode.ts) served by `modelhost serve`, and by
// llama.cpp's llama-server on the same GGUF when one is given, each with 8
// parallel slots. Per round, alternating: the prompts run one at a time
// (one stream), then all of them at once (N streams). Every stream is
// greedy through /v1/completions (token-id prompts, SSE, the end-of-text
// token banned by logit_bias so each makes exactly --tokens tokens), and
// every stream's text in the batch must equal the same prompt run alone.
// Prints aggregate tokens/s and p50 time to first token, their ratios
// (N streams / one), medians over the rounds, the CPU flags and the load.
//
//   deno run -A bench/generate_load.ts [--streams 8] [--tokens 48]
//     [--prompt 8] [--rounds 3] [--threads 1] [--gguf PATH]
//     [--llama-server PATH | LLAMA_SERVER_BIN=PATH]
//
// tests/serve/generate_load_test.ts runs a small version of it (stories260K,
// equality of every stream's text only: a shared test machine is too noisy
// to assert speed).

import { parseArgs } from "@std/cli";
import { fromFileUrl, join } from "@std/path";
import { createRng } from "../core/rng.ts";
import { memorySource } from "../core/sources.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { smolLmShapeGguf } from "./_decode.ts";
import { cpuInfo } from "./_peer.ts";

/** What one stream measured. */
export interface StreamResult {
  /** The generated text. */
  text: string;
  /** Tokens generated (from the usage the server reports, or chunks). */
  tokens: number;
  /** Milliseconds from sending the request to the first text. */
  ttftMs: number;
  /** Milliseconds from sending the request to the end of the stream. */
  totalMs: number;
}

/**
 * Runs one greedy completion of `prompt` (token ids) through
 * `/v1/completions`, streamed, and times it.
 */
export async function streamCompletion(
  url: string,
  model: string,
  prompt: number[],
  tokens: number,
  eos: number,
): Promise<StreamResult> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model,
      prompt,
      max_tokens: tokens,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
      logit_bias: { [eos]: -100 },
    }),
  });
  if (!res.ok || !res.body) {
    throw new Error(`${url}: ${res.status} ${await res.text()}`);
  }
  let text = "", ttft = -1, chunks = 0, usage = -1, buf = "";
  const decoder = new TextDecoder();
  for await (const bytes of res.body) {
    buf += decoder.decode(bytes, { stream: true });
    let at: number;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, at);
      buf = buf.slice(at + 2);
      const data = event.split("\n").find((l) => l.startsWith("data: "))
        ?.slice(6);
      if (!data || data === "[DONE]") continue;
      const obj = JSON.parse(data);
      if (obj.error) throw new Error(`${url}: ${JSON.stringify(obj.error)}`);
      const piece = obj.choices?.[0]?.text ?? "";
      if (piece !== "") {
        if (ttft < 0) ttft = performance.now() - t0;
        text += piece;
        chunks++;
      }
      if (obj.usage?.completion_tokens !== undefined) {
        usage = obj.usage.completion_tokens;
      }
    }
  }
  return {
    text,
    tokens: usage >= 0 ? usage : chunks,
    ttftMs: ttft,
    totalMs: performance.now() - t0,
  };
}

/** What one phase (one stream after another, or all at once) measured. */
export interface PhaseResult {
  /** Every stream, by prompt. */
  streams: StreamResult[];
  /** Generated tokens over the phase's wall time. */
  tokensPerSecond: number;
  /** Median time to first token, ms. */
  p50TtftMs: number;
  /** Generated tokens per second of the server's CPU time (when its process is known). */
  tokensPerCpuSecond?: number;
}

/** User + system CPU seconds of a process so far (Linux /proc), or undefined. */
export function cpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields 14 and 15 (utime, stime) are the 12th and 13th after the name
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return undefined;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2
    ? s[s.length >> 1]
    : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** Runs the prompts one after another (`together` false) or all at once. */
export async function phase(
  url: string,
  model: string,
  prompts: number[][],
  tokens: number,
  eos: number,
  together: boolean,
  pid?: number,
): Promise<PhaseResult> {
  const c0 = cpuSeconds(pid);
  const t0 = performance.now();
  let streams: StreamResult[];
  if (together) {
    streams = await Promise.all(
      prompts.map((p) => streamCompletion(url, model, p, tokens, eos)),
    );
  } else {
    streams = [];
    for (const p of prompts) {
      streams.push(await streamCompletion(url, model, p, tokens, eos));
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const c1 = cpuSeconds(pid);
  const total = streams.reduce((a, s) => a + s.tokens, 0);
  return {
    streams,
    tokensPerSecond: total / seconds,
    p50TtftMs: median(streams.map((s) => s.ttftMs)),
    ...(c0 !== undefined && c1 !== undefined && c1 > c0
      ? { tokensPerCpuSecond: total / (c1 - c0) }
      : {}),
  };
}

/** ` | per CPU second a → b tok (×r)` when the server's CPU time is known. */
function cpuNote(one: PhaseResult, many: PhaseResult): string {
  if (!one.tokensPerCpuSecond || !many.tokensPerCpuSecond) return "";
  return ` | per CPU second ${one.tokensPerCpuSecond.toFixed(1)} → ${
    many.tokensPerCpuSecond.toFixed(1)
  } tok (×${(many.tokensPerCpuSecond / one.tokensPerCpuSecond).toFixed(2)})`;
}

/** Seeded prompts of `length` token ids, away from the special and byte tokens. */
export function prompts(
  count: number,
  length: number,
  vocab: number,
  seed = 7,
): number[][] {
  const rng = createRng(seed);
  return Array.from({ length: count }, () => [
    1,
    ...Array.from({ length: length - 1 }, () => 300 + rng.int(vocab - 300)),
  ]);
}

interface Running {
  url: string;
  pid?: number;
  stop(): Promise<void>;
}

/** `modelhost serve` in its own process. */
async function startModelhost(
  dir: string,
  threads: number,
  slots: number,
): Promise<Running> {
  const cli = fromFileUrl(new URL("../cli.ts", import.meta.url));
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      cli,
      "serve",
      dir,
      "--port",
      "0",
      "--quiet",
      "--max-concurrent-generations",
      String(slots),
      "--threads",
      String(threads),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`serve exited before listening: ${text}`);
    text += value;
  }
  const url = text.match(/listening on (\S+)/)?.[1];
  if (!url) throw new Error(`unexpected serve output: ${text}`);
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await reader.cancel();
      await child.status;
    },
  };
}

/** llama.cpp's server on the same file: `slots` parallel slots, `threads` threads. */
async function startLlamaServer(
  bin: string,
  file: string,
  threads: number,
  slots: number,
  context: number,
): Promise<Running> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = new Deno.Command(bin, {
    args: [
      "-m",
      file,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "-np",
      String(slots),
      "-c",
      String(context * slots),
      "-t",
      String(threads),
      "-tb",
      String(threads),
      "-cb",
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    try {
      const r = await fetch(`${url}/health`);
      await r.body?.cancel();
      if (r.ok) break;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

/** The CPU's model name and the SIMD flags that matter here. */
function cpuDescription(): string {
  const { model, flags } = cpuInfo();
  if (model === undefined) return `${navigator.hardwareConcurrency} cores`;
  const want = [
    "sse4_1",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512_vnni",
    "avx_vnni",
  ];
  return `${model}; ${navigator.hardwareConcurrency} cores; flags ${
    want.filter((f) => flags.has(f)).join(" ")
  }`;
}

async function load(): Promise<string> {
  try {
    return (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3)
      .join(" ");
  } catch {
    return "?";
  }
}

if (import.meta.main) {
  const args = parseArgs(Deno.args, {
    string: [
      "streams",
      "tokens",
      "prompt",
      "rounds",
      "threads",
      "gguf",
      "llama-server",
    ],
    default: {
      streams: "8",
      tokens: "48",
      prompt: "8",
      rounds: "3",
      threads: "1",
    },
  });
  const STREAMS = Number(args.streams), TOKENS = Number(args.tokens);
  const PROMPT = Number(args.prompt), ROUNDS = Number(args.rounds);
  const THREADS = Number(args.threads);
  const llamaBin = args["llama-server"] ?? Deno.env.get("LLAMA_SERVER_BIN");
  const dir = await Deno.makeTempDir({ prefix: "modelhost-genload-" });
  const file = join(dir, "smol.gguf");
  if (args.gguf) await Deno.symlink(args.gguf, file);
  else await Deno.writeFile(file, await smolLmShapeGguf("Q8_0"));
  const md = (await readGguf(memorySource(await Deno.readFile(file))))
    .models[0].metadata;
  const vocab = (md["tokenizer.ggml.tokens"] as unknown[]).length;
  const ps = prompts(STREAMS, PROMPT, vocab);
  const EOS = 2;
  console.log(
    `continuous batching: ${
      args.gguf ?? "SmolLM-135M-shaped Q8_0 (random weights)"
    }, ${STREAMS} streams × ${TOKENS} greedy tokens after ${PROMPT}-token prompts, ${THREADS} thread(s), ${ROUNDS} rounds`,
  );
  console.log(
    `cpu: ${cpuDescription()}; load average at start ${await load()}`,
  );
  const sides: { name: string; start: () => Promise<Running> }[] = [
    { name: "modelhost", start: () => startModelhost(dir, THREADS, STREAMS) },
  ];
  if (llamaBin) {
    sides.push({
      name: "llama-server",
      start: () =>
        startLlamaServer(
          llamaBin,
          file,
          THREADS,
          STREAMS,
          PROMPT + TOKENS + 16,
        ),
    });
  }
  const results = new Map<
    string,
    { one: PhaseResult[]; many: PhaseResult[] }
  >();
  const running = new Map<string, Running>();
  let failed = false;
  try {
    for (const s of sides) {
      running.set(s.name, await s.start());
      results.set(s.name, { one: [], many: [] });
      // warm up: load the model, JIT, connections
      await phase(
        running.get(s.name)!.url,
        "smol",
        ps.slice(0, 2),
        4,
        EOS,
        true,
      );
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (const s of sides) {
        const { url, pid } = running.get(s.name)!;
        const res = results.get(s.name)!;
        const one = await phase(url, "smol", ps, TOKENS, EOS, false, pid);
        const many = await phase(url, "smol", ps, TOKENS, EOS, true, pid);
        res.one.push(one);
        res.many.push(many);
        const same = many.streams.every((x, i) =>
          x.text === one.streams[i].text
        );
        // Only our side promises it (llama.cpp's batched kernels differ
        // from its single-sequence ones).
        if (!same && s.name === "modelhost") failed = true;
        console.log(
          `${s.name.padEnd(13)} round ${r + 1}: one stream ${
            one.tokensPerSecond.toFixed(1)
          } tok/s, p50 TTFT ${
            one.p50TtftMs.toFixed(0)
          } ms | ${STREAMS} streams ${
            many.tokensPerSecond.toFixed(1)
          } tok/s, p50 TTFT ${many.p50TtftMs.toFixed(0)} ms | ×${
            (many.tokensPerSecond / one.tokensPerSecond).toFixed(2)
          } tok/s, ×${(many.p50TtftMs / one.p50TtftMs).toFixed(2)} TTFT${
            cpuNote(one, many)
          } | every stream as alone: ${same ? "yes" : "NO"}`,
        );
      }
    }
  } finally {
    for (const r of running.values()) await r.stop();
    await Deno.remove(dir, { recursive: true });
  }
  for (const [name, r] of results) {
    const tps = median(
      r.many.map((m, i) => m.tokensPerSecond / r.one[i].tokensPerSecond),
    );
    const ttft = median(r.many.map((m, i) => m.p50TtftMs / r.one[i].p50TtftMs));
    const cpu = r.one.every((x) => x.tokensPerCpuSecond) &&
        r.many.every((x) => x.tokensPerCpuSecond)
      ? `; tokens per CPU second ×${
        median(
          r.many.map((m, i) =>
            m.tokensPerCpuSecond! / r.one[i].tokensPerCpuSecond!
          ),
        ).toFixed(2)
      }`
      : "";
    console.log(
      `${name}: median over ${r.one.length} rounds: one stream ${
        median(r.one.map((x) => x.tokensPerSecond)).toFixed(1)
      } tok/s, ${STREAMS} streams ${
        median(r.many.map((x) => x.tokensPerSecond)).toFixed(1)
      } tok/s (×${tps.toFixed(2)}); p50 TTFT ${
        median(r.one.map((x) => x.p50TtftMs)).toFixed(0)
      } → ${median(r.many.map((x) => x.p50TtftMs)).toFixed(0)} ms (×${
        ttft.toFixed(2)
      })${cpu}`,
    );
  }
  if (results.size === 2) {
    const a = results.get("modelhost")!, b = results.get("llama-server")!;
    const ratio = (
      f: (p: PhaseResult) => number,
      x: PhaseResult[],
      y: PhaseResult[],
    ) => median(x.map((p, i) => f(p) / f(y[i])));
    console.log(
      `modelhost / llama-server: one stream ×${
        ratio((p) => p.tokensPerSecond, a.one, b.one).toFixed(2)
      }, ${STREAMS} streams ×${
        ratio((p) => p.tokensPerSecond, a.many, b.many).toFixed(2)
      } tok/s`,
    );
  }
  console.log(`load average at end ${await load()}`);
  if (failed) {
    console.error(
      "FAILED: a stream's text in the batch differs from the same prompt alone",
    );
    Deno.exit(1);
  }
}
