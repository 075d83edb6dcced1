/**
 * A bundle saved in Deno loads and runs in headless Chromium from the same
 * core modules (bundled for the browser with `deno bundle`), and the page's
 * forward outputs equal Deno's bit for bit. Skipped, with a message, where no
 * Chromium is installed (set CHROMIUM to its path to use another one).
 */

import { kernelInfo } from "../../kernels/fast/mod.ts";
import { assert, assertEquals } from "@std/assert";
import { fromFileUrl } from "@std/path";
import { loadAllTensors } from "../../core/model.ts";
import { buildNetwork, initNetwork } from "../../core/network.ts";
import { floatTensor } from "../../core/tensor.ts";
import { loadBundle, saveBundle } from "../../formats/bundle/mod.ts";
import { defaultRegistry } from "../../mod.ts";

function findChromium(): string | undefined {
  const candidates = [
    Deno.env.get("CHROMIUM"),
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
  ];
  for (const c of candidates) {
    if (!c) continue;
    try {
      if (Deno.statSync(c).isFile) return c;
    } catch { /* absent */ }
  }
  return undefined;
}

const CHROMIUM = findChromium();
if (!CHROMIUM) {
  console.error(
    "bundle_browser_test: skipped, no Chromium found (install the Debian package chromium or set CHROMIUM)",
  );
}

const reg = defaultRegistry();

async function makeBundle(): Promise<{ text: string; tampered: string }> {
  const encoder = {
    input_size: 6,
    layers: [
      { type: "dense", output_size: 16, activation: "gelu" },
      { type: "layer_norm" },
      { type: "swiglu", intermediate_size: 24 },
      { type: "dense", output_size: 4, activation: "softmax" },
    ],
  };
  const experts = {
    input_size: 6,
    layers: [{
      type: "parallel",
      combine_mode: "filter",
      filter_gate: { type: "dense", output_size: 2 },
      filter_softmax: "entmax",
      branches: [
        { type: "dense", output_size: 5, activation: "tanh" },
        {
          type: "kmeans",
          num_clusters: 5,
          kmeans_output_mode: "probabilities",
        },
      ],
    }],
  };
  const text = await saveBundle([
    { id: "encoder", config: encoder, tensors: initNetwork(reg, encoder, 7) },
    { id: "experts", config: experts, tensors: initNetwork(reg, experts, 8) },
  ], {
    // Mixed storage: the browser decodes F16, I8 (scale + zero point) and F32.
    dtype: (t) =>
      t.name === "layers.0.weight"
        ? "F16"
        : t.name === "layers.3.weight"
        ? "I8"
        : undefined,
  });
  const doc = JSON.parse(text);
  const entry = doc.models[0].weights.tensors["layers.0.bias"];
  const b = Uint8Array.fromBase64(entry.data);
  b[0] ^= 0x40;
  entry.data = b.toBase64();
  return { text, tampered: JSON.stringify(doc) };
}

Deno.test({
  name:
    "browser: a bundle saved in Deno runs in headless Chromium with the same outputs",
  ignore: !CHROMIUM,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const { text, tampered } = await makeBundle();
    const input = {
      data: Array.from({ length: 18 }, (_, i) => Math.sin(i * 0.7) * 2),
      shape: [3, 6],
    };
    // Deno's outputs.
    const expected: Record<string, { shape: number[]; bits: number[] }> = {};
    for (const m of (await loadBundle(text)).models) {
      const net = buildNetwork(reg, m.config, await loadAllTensors(m.tensors));
      const y = net.forward(
        floatTensor(new Float32Array(input.data), input.shape),
      );
      expected[m.id] = {
        shape: y.shape,
        bits: [...new Uint32Array(y.data.buffer)],
      };
    }

    const dir = await Deno.makeTempDir({ prefix: "modelhost-browser-" });
    const entry = fromFileUrl(new URL("./_browser_page.ts", import.meta.url));
    const built = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform",
        "browser",
        "-o",
        `${dir}/page.js`,
        entry,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert(built.success, new TextDecoder().decode(built.stderr));
    const script = await Deno.readTextFile(`${dir}/page.js`);

    let deliver!: (v: Record<string, unknown>) => void;
    const result = new Promise<Record<string, unknown>>((r) => deliver = r);
    const html =
      '<!doctype html><meta charset="utf-8"><script type="module" src="/page.js"></script>';
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      async (req) => {
        const path = new URL(req.url).pathname;
        const reply = (body: string, type: string) =>
          new Response(body, { headers: { "content-type": type } });
        if (path === "/") return reply(html, "text/html");
        if (path === "/page.js") return reply(script, "text/javascript");
        if (path === "/model.bundle.json") {
          return reply(text, "application/json");
        }
        if (path === "/tampered.bundle.json") {
          return reply(tampered, "application/json");
        }
        if (path === "/input.json") {
          return reply(JSON.stringify(input), "application/json");
        }
        if (path === "/result" && req.method === "POST") {
          deliver(await req.json());
          return new Response("ok");
        }
        return new Response("not found", { status: 404 });
      },
    );
    const url = `http://127.0.0.1:${server.addr.port}/`;
    const chrome = new Deno.Command(CHROMIUM!, {
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        `--user-data-dir=${dir}/profile`,
        url,
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error("Chromium sent no result within 60 s")),
          60_000,
        );
      });
      const got = await Promise.race([result, timeout]);
      assert(got.ok, `page failed: ${got.error}`);
      // The page runs the same WebAssembly kernels (not the JS fallback).
      const kernels = got.kernels as { backend: string; note?: string };
      assertEquals(kernels.backend, kernelInfo().backend, kernels.note);
      assertEquals(got.results, expected);
      assert(
        String(got.tampered).startsWith(
          'ChecksumError: Checksum mismatch in tensor "layers.0.bias" of model "encoder"',
        ),
        String(got.tampered),
      );
      assert(String(got.agent).includes("Chrome"), String(got.agent));
    } finally {
      clearTimeout(timer);
      try {
        chrome.kill("SIGKILL");
      } catch { /* already gone */ }
      await chrome.status;
      await server.shutdown();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
