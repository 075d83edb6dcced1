// Load test of `modelhost serve` over loopback: 2,000 predict requests from
// 32 concurrent clients against a dense 256 → 1024 → 256 network, once with
// batching off (--max-batch 1) and once with batching on, in the same run.
// Every answer is checked against the library's forward pass; the run fails
// on any error. Prints p50/p90/p99 latency, throughput and the ratio.
//
//   deno run -A bench/serve_load.ts [--requests 2000] [--clients 32]
//     [--max-batch 32] [--max-wait-ms 2] [--rounds 1] [--time-limit-s 120]
//     [--in-process] [--gguf PATH]
//
// With a GGUF Llama (default: ../shared/fixtures/gguf/stories260K.gguf when
// present) it also times 256 greedy tokens through the library and through
// a streaming /api/generate, to show what serving costs per token.
//
// By default each server runs in its own process (`deno run -A cli.ts
// serve`), as it would be deployed; --in-process starts it in this process
// instead.

import { parseArgs } from "@std/cli";
import { fromFileUrl, join } from "@std/path";
import { startServer } from "../serve/mod.ts";
import { loadTransformer } from "../io/transformer.ts";
import { generateText } from "../models/generate.ts";
import {
  type LoadModel,
  loadModel,
  type LoadResult,
  runLoad,
} from "./_serve_load_driver.ts";

const args = parseArgs(Deno.args, {
  string: [
    "requests",
    "clients",
    "max-batch",
    "max-wait-ms",
    "rounds",
    "time-limit-s",
    "gguf",
  ],
  boolean: ["in-process"],
  default: {
    requests: "2000",
    clients: "32",
    "max-batch": "32",
    "max-wait-ms": "2",
    rounds: "1",
    "time-limit-s": "120",
  },
});
const REQUESTS = Number(args.requests);
const CLIENTS = Number(args.clients);
const MAX_BATCH = Number(args["max-batch"]);
const MAX_WAIT = Number(args["max-wait-ms"]);
const ROUNDS = Number(args.rounds);
const LIMIT_MS = Number(args["time-limit-s"]) * 1000;
const CLI = fromFileUrl(new URL("../cli.ts", import.meta.url));

interface Running {
  url: string;
  stop(): Promise<void>;
}

async function startSubprocess(
  dir: string,
  maxBatch: number,
  maxWait: number,
): Promise<Running> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      CLI,
      "serve",
      dir,
      "--port",
      "0",
      "--quiet",
      "--max-batch",
      String(maxBatch),
      "--max-wait-ms",
      String(maxWait),
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
    async stop() {
      child.kill("SIGTERM");
      await reader.cancel();
      const status = await child.status;
      if (!status.success) throw new Error(`serve exited with ${status.code}`);
    },
  };
}

async function startInProcess(
  dir: string,
  maxBatch: number,
  maxWait: number,
): Promise<Running> {
  const s = await startServer({
    dir,
    port: 0,
    log: false,
    maxBatch,
    maxWaitMs: maxWait,
  });
  return { url: s.url, stop: () => s.close() };
}

async function phase(
  dir: string,
  model: LoadModel,
  label: string,
  maxBatch: number,
): Promise<LoadResult> {
  const server = args["in-process"]
    ? await startInProcess(dir, maxBatch, MAX_WAIT)
    : await startSubprocess(dir, maxBatch, MAX_WAIT);
  try {
    const predict = `${server.url}/registry/models/dense/predict`;
    // Load, warm up (JIT, kernels, connections), then measure.
    await runLoad(server.url, predict, model, 10 * CLIENTS, CLIENTS, LIMIT_MS);
    const r = await runLoad(
      server.url,
      predict,
      model,
      REQUESTS,
      CLIENTS,
      LIMIT_MS,
    );
    console.log(
      `${label.padEnd(22)} ${String(r.ok).padStart(5)} ok ${
        String(r.errors).padStart(3)
      } errors  ${r.throughput.toFixed(0).padStart(6)} req/s  p50 ${
        r.p50.toFixed(2).padStart(6)
      } ms  p90 ${r.p90.toFixed(2).padStart(6)} ms  p99 ${
        r.p99.toFixed(2).padStart(6)
      } ms  max ${r.max.toFixed(1).padStart(6)} ms  mean batch ${
        r.meanBatch.toFixed(1)
      }`,
    );
    for (const e of r.errorSamples) console.log(`  error: ${e}`);
    return r;
  } finally {
    await server.stop();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const model = await loadModel();
const dir = await Deno.makeTempDir({ prefix: "modelhost-load-" });
await Deno.writeTextFile(join(dir, "dense@1.bundle.json"), model.bundle);
console.log(
  `modelhost serve load test: ${REQUESTS} requests, ${CLIENTS} concurrent clients, dense 256→1024→256, ${
    args["in-process"] ? "server in this process" : "server in its own process"
  }, loopback`,
);
const off: LoadResult[] = [], on: LoadResult[] = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    off.push(await phase(dir, model, "batching off (max 1)", 1));
    on.push(
      await phase(
        dir,
        model,
        `batching on (max ${MAX_BATCH}, ${MAX_WAIT} ms)`,
        MAX_BATCH,
      ),
    );
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
const gguf = args.gguf ??
  fromFileUrl(
    new URL("../../shared/fixtures/gguf/stories260K.gguf", import.meta.url),
  );
if (await Deno.stat(gguf).then(() => true, () => false)) {
  await generation(gguf);
}

/** Tokens/s of greedy decoding: the library directly, then a streaming /api/generate. */
async function generation(path: string): Promise<void> {
  const TOKENS = 256;
  const model = await loadTransformer(path);
  let lib = 0;
  for (let i = 0; i < 3; i++) {
    const r = await generateText(model, "Once upon a time", {
      greedy: true,
      maxTokens: TOKENS,
      stopAtEos: false,
    });
    lib = Math.max(lib, r.ids.length / (r.decodeMs / 1000));
  }
  const gdir = await Deno.makeTempDir({ prefix: "modelhost-gen-" });
  await Deno.symlink(path, join(gdir, "llm.gguf"));
  const server = await startServer({ dir: gdir, port: 0, log: false });
  let served = 0, wall = 0;
  try {
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const res = await fetch(`${server.url}/api/generate`, {
        method: "POST",
        body: JSON.stringify({
          model: "llm",
          prompt: "Once upon a time",
          options: { temperature: 0, repeat_last_n: 0, num_predict: TOKENS },
        }),
      });
      const lines = (await res.text()).trim().split("\n");
      const last = JSON.parse(lines[lines.length - 1]);
      const ms = performance.now() - t0;
      served = Math.max(served, last.eval_count / (last.eval_duration / 1e9));
      wall = Math.max(wall, last.eval_count / (ms / 1000));
    }
  } finally {
    await server.close();
    await Deno.remove(gdir, { recursive: true });
  }
  console.log(
    `generation (${path.split("/").pop()}, ${TOKENS} greedy tokens): library ${
      lib.toFixed(0)
    } tok/s, /api/generate streamed ${served.toFixed(0)} tok/s decode (${
      (served / lib).toFixed(2)
    }×), ${wall.toFixed(0)} tok/s wall incl. prefill and HTTP`,
  );
}

const errors = [...off, ...on].reduce((a, r) => a + r.errors, 0);
const ratio = median(on.map((r) => r.throughput)) /
  median(off.map((r) => r.throughput));
console.log(
  `throughput, batching on / off: ${
    ratio.toFixed(2)
  }× (median of ${ROUNDS} round${ROUNDS > 1 ? "s" : ""}); p99 on / off: ${
    (median(on.map((r) => r.p99)) / median(off.map((r) => r.p99))).toFixed(2)
  }×`,
);
if (errors > 0) {
  console.error(`FAILED: ${errors} errors`);
  Deno.exit(1);
}
