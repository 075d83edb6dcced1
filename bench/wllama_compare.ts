// Prefill and decode against the WebAssembly peer: llama.cpp compiled to
// WebAssembly (npm @wllama/wllama) on the same GGUF, in headless Chromium
// (Playwright driving Debian's chromium, cross-origin isolated so that it
// may use threads), beside our kernels in Deno (the same V8). Rounds
// alternate between the two sides; each round is one completion on the
// wllama side (its own timings: prompt_ms and predicted_ms) and one prefill
// plus one decode on ours, of the same token counts.
//
//   deno run -A bench/wllama_compare.ts [--types Q8_0,Q4_0] [--rounds 5] \
//     [--threads 1] [--wllama /work/nlc/node_modules/@wllama/wllama] \
//     [--json FILE]
//
// The prompt is 128 ASCII characters, which our synthetic vocabulary
// spells one byte token each (wllama reports how many it evaluated; ours
// uses that many tokens). `--json FILE` also writes the rows as JSON
// (bench/_json.ts) for tools/perf_table.ts; without Chromium or the wllama
// package its rows have no peer.

import { join } from "@std/path";
import { memorySource } from "../core/sources.ts";
import { readGguf } from "../formats/gguf/mod.ts";
import { transformerFromGguf } from "../models/transformer.ts";
import {
  configureKernels,
  kernelInfo,
  shutdownKernels,
} from "../kernels/fast/runtime.ts";
import { SMOLLM_135M, smolLmShapeGguf } from "./_decode.ts";
import { cpuLine, median } from "./_peer.ts";
import { type BenchRow, writeBenchJson } from "./_json.ts";

const args: Record<string, string> = {
  types: "Q8_0,Q4_0",
  rounds: "5",
  threads: "1",
  decode: "32",
  wllama: "/work/nlc/node_modules/@wllama/wllama",
};
for (let i = 0; i < Deno.args.length; i += 2) {
  args[Deno.args[i].replace(/^--/, "")] = Deno.args[i + 1];
}
const rounds = Number(args.rounds), threads = Number(args.threads);
const D = Number(args.decode);
const chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find(
  (p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  },
);
let wllamaMissing = true;
try {
  wllamaMissing = !Deno.statSync(args.wllama).isDirectory;
} catch { /* missing */ }
if (!chromium || wllamaMissing) {
  const why = !chromium ? "no Chromium" : `no @wllama/wllama at ${args.wllama}`;
  console.log(`${why}: skipped`);
  if (args.json) {
    await writeBenchJson(args.json, {
      bench: "wllama_compare",
      threads,
      rounds,
      rows: args.types.split(",").flatMap((type) =>
        ["prefill", "decode"].map((kind) => ({
          id: `wllama-${kind}:576:${type}`,
          what: `${kind}, 576×30 ${type}`,
          unit: "tok/s",
          ours: null,
          peer: null,
          peerName: "@wllama/wllama",
          ratio: null,
          note: `wllama peer not available (${why})`,
        }))
      ),
      notes: [],
    });
  }
  Deno.exit(0);
}

const PAGE = `<!doctype html><meta charset="utf-8"><script type="module">
import { Wllama } from "./wllama/esm/index.js";
window.wl = async (threads, ctx) => {
  const w = new Wllama({ default: "./wllama/esm/wasm/wllama.wasm" }, {
    logger: { debug() {}, log() {}, warn() {}, error: console.error },
  });
  await w.loadModelFromUrl(new URL("./model.gguf", location.href).href, {
    n_threads: threads, n_ctx: ctx, n_batch: 512,
  });
  window.w = w;
  return true;
};
window.run = async (prompt, n) => {
  const r = await window.w.createCompletion({
    prompt, max_tokens: n, temperature: 0, cache_prompt: false,
    timings_per_token: false, ignore_eos: true,
  });
  return r.timings ?? r;
};
window.ready = true;
</script>`;

let model = "";
const server = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: () => {} },
  async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    const headers: Record<string, string> = {
      "cross-origin-opener-policy": "same-origin",
      "cross-origin-embedder-policy": "require-corp",
    };
    if (path === "/") {
      return new Response(PAGE, {
        headers: { ...headers, "content-type": "text/html" },
      });
    }
    let file = "";
    if (path === "/model.gguf") file = model;
    else if (path.startsWith("/wllama/") && !path.includes("..")) {
      file = join(args.wllama, path.slice(8));
    }
    const body = file ? await Deno.readFile(file).catch(() => null) : null;
    if (!body) {
      console.error(`wllama page asked for ${path}: not found`);
      return new Response("not found", { status: 404, headers });
    }
    const type = file.endsWith(".js")
      ? "text/javascript"
      : file.endsWith(".wasm")
      ? "application/wasm"
      : "application/octet-stream";
    return new Response(body, {
      headers: { ...headers, "content-type": type },
    });
  },
);
const url = `http://127.0.0.1:${server.addr.port}/`;

await configureKernels({ threads });
console.log(cpuLine());
console.log(`kernels: ${JSON.stringify(kernelInfo())}`);
const { chromium: pw } = await import("playwright-core");
const browser = await pw.launch({
  executablePath: chromium,
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    ...(Deno.env.get("WLLAMA_JS_FLAGS")
      ? [`--js-flags=${Deno.env.get("WLLAMA_JS_FLAGS")}`]
      : []),
  ],
});
const prompt = Array.from(
  { length: 127 },
  (_, i) => String.fromCharCode(97 + (i * 7) % 26),
).join("");
const rows: string[] = [];
const jsonRows: BenchRow[] = [];
try {
  for (const type of args.types.split(",") as ("Q8_0" | "Q4_0")[]) {
    model = `${
      Deno.env.get("TMPDIR") ?? "/tmp"
    }/modelhost-llama-576x30-${type}.gguf`;
    let bytes: Uint8Array;
    try {
      bytes = await Deno.readFile(model);
    } catch {
      bytes = await smolLmShapeGguf(type, 1, SMOLLM_135M);
      await Deno.writeFile(model, bytes);
    }
    const ours = await transformerFromGguf(
      await readGguf(memorySource(bytes)),
    );
    const page = await browser.newPage();
    page.on("console", (m) => {
      if (m.type() === "error") console.error("page:", m.text());
    });
    await page.goto(url);
    await page.waitForFunction("window.ready === true");
    const isolated = await page.evaluate("crossOriginIsolated");
    await page.evaluate(`wl(${threads}, 1024)`);
    const theirs = async () =>
      await page.evaluate(`run(${JSON.stringify(prompt)}, ${D})`) as {
        prompt_n: number;
        prompt_ms: number;
        predicted_n: number;
        predicted_ms: number;
      };
    const w0 = performance.now();
    const first = await theirs(); // warm, and the token counts
    console.log(
      `wllama first completion: ${first.prompt_n} + ${first.predicted_n} tokens, its timings ${
        first.prompt_ms.toFixed(0)
      } + ${first.predicted_ms.toFixed(0)} ms, wall ${
        (performance.now() - w0).toFixed(0)
      } ms`,
    );
    const T = first.prompt_n;
    const ids = Array.from({ length: T }, (_, i) => 3 + 97 + (i * 7) % 26);
    const mine = () => {
      const st = ours.createState();
      const t0 = performance.now();
      let logits = ours.forward(ids, st);
      const t1 = performance.now();
      for (let i = 0; i < D; i++) {
        let best = 0;
        for (let j = 1; j < logits.length; j++) {
          if (logits[j] > logits[best]) best = j;
        }
        logits = ours.forward([best], st);
      }
      return { prefill: t1 - t0, decode: performance.now() - t1 };
    };
    mine();
    const ap: number[] = [],
      ad: number[] = [],
      bp: number[] = [],
      bd: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const a = r % 2 === 0 ? mine() : undefined;
      const b = await theirs();
      const a2 = a ?? mine();
      ap.push(a2.prefill);
      ad.push(a2.decode);
      bp.push(b.prompt_ms / b.prompt_n * T);
      bd.push(b.predicted_ms / b.predicted_n * D);
    }
    const ratio = (x: number[], y: number[]) =>
      median(y.map((v, i) => v / x[i])).toFixed(2);
    const row = `| 576×30 ${type} | ${T} | ${
      (T * 1000 / median(ap)).toFixed(0)
    } / ${(T * 1000 / median(bp)).toFixed(0)} | ${ratio(ap, bp)}× | ${
      (D * 1000 / median(ad)).toFixed(1)
    } / ${(D * 1000 / median(bd)).toFixed(1)} | ${ratio(ad, bd)}× | ${
      isolated ? "yes" : "no"
    } |`;
    console.log(row);
    rows.push(row);
    const span = (x: number[], y: number[]) => {
      const r = y.map((v, i) => v / x[i]);
      return { ratioLo: Math.min(...r), ratioHi: Math.max(...r) };
    };
    for (
      const [kind, a, b, n] of [
        ["prefill", ap, bp, T],
        ["decode", ad, bd, D],
      ] as const
    ) {
      jsonRows.push({
        id: `wllama-${kind}:576:${type}`,
        what: `${kind} ${n} tokens, 576×30 ${type}`,
        unit: "tok/s",
        ours: n * 1000 / median(a),
        peer: n * 1000 / median(b),
        peerName: `@wllama/wllama in Chromium${
          isolated ? "" : " (not cross-origin isolated)"
        }`,
        ratio: median(b.map((v, i) => v / a[i])),
        ...span(a, b),
      });
    }
    await page.evaluate("w.exit()").catch(() => {});
    await page.close();
  }
} finally {
  await browser.close();
  await server.shutdown();
  await shutdownKernels();
}
console.log(
  `\n${threads} thread(s) each; tok/s ours / wllama (medians), ratio = median of per-round ours ÷ wllama\n`,
);
console.log(
  "| model | prompt tokens | prefill tok/s | ratio | decode tok/s | ratio | wllama isolated |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- |");
for (const r of rows) console.log(r);
if (args.json) {
  await writeBenchJson(args.json, {
    bench: "wllama_compare",
    threads,
    rounds,
    rows: jsonRows,
    notes: [],
  });
}
