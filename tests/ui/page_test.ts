/// <reference lib="dom" />
/**
 * The web page (ui/dist) in headless Chromium, driven by Playwright, served
 * by a plain static server as any static host would: open models from disk
 * and by URL and check what the page shows against the library and NumPy,
 * the quantization preview against llama-quantize/NumPy numbers and the
 * library's converted bytes, greedy generation against llama2.c's text,
 * hostile metadata shown as text, the 512 MiB range-read budget, keyboard
 * use at 360 px. Screenshots of every view go to `.ui-screenshots/`
 * (ignored by git). Skipped with a message without Chromium or fixtures.
 */

import { assert, assertAlmostEquals, assertEquals } from "@std/assert";
import { join } from "@std/path";
import type { Page } from "playwright-core";
import {
  initNetwork,
  memorySource,
  memoryTensorIndex,
  type ModelFile,
  tensorFromF32,
} from "@modelhost/modelhost/core";
import { defaultRegistry } from "@modelhost/modelhost";
import { loadBundle, saveBundle } from "@modelhost/modelhost/formats/bundle";
import { readGguf } from "@modelhost/modelhost/formats/gguf";
import { ggufToHf } from "@modelhost/modelhost/models";
import {
  readSafetensors,
  serializeSafetensors,
} from "@modelhost/modelhost/formats/safetensors";
import { fileSource } from "@modelhost/modelhost/io";
import { convertModel, previewQuantization } from "../../ui/_quant.ts";
import { FIXTURES, REPO_ROOT } from "../_helpers/fixtures.ts";
import { CHROMIUM, launch, SHOTS, staticServer, warnSkip } from "./_browser.ts";

warnSkip();
if (CHROMIUM && !FIXTURES) {
  console.error("ui page tests: skipped, no fixtures (../shared/fixtures)");
}

const fx = (rel: string) => join(FIXTURES ?? "", rel);

interface StatsRef {
  count: number;
  min: number;
  max: number;
  mean: number;
  std: number;
  zeros: number;
  histogram: number[];
}
const VECTORS = JSON.parse(
  Deno.readTextFileSync(join(REPO_ROOT, "tests/vectors/ui.json")),
) as {
  stats: Record<string, Record<string, StatsRef>>;
  quant: {
    types: Record<
      string,
      { tensors: Record<string, { rmse: number; cosine: number; max: number }> }
    >;
  };
};

async function libraryFile(path: string): Promise<ModelFile> {
  const src = await fileSource(path);
  return path.endsWith(".gguf") ? readGguf(src) : readSafetensors(src);
}

async function shot(page: Page, name: string): Promise<void> {
  await Deno.mkdir(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

async function ready(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector("body[data-ready]");
}

/** Opens a model and waits for the tensor table; returns the count shown. */
async function openAndCount(
  page: Page,
  how: { file: string } | { folder: string } | { url: string },
): Promise<number> {
  const opens = Number(await page.getAttribute("body", "data-opens") ?? 0);
  if ("file" in how) {
    await page.setInputFiles("#file-input", how.file);
  } else if ("folder" in how) {
    await page.setInputFiles("#folder-input", how.folder);
  } else {
    await page.goto(page.url().replace(/#.*$/, "") + "#open");
    await page.fill("#url-input", how.url);
    await page.click("#url-form button");
  }
  await page.waitForFunction(
    (n) => Number(document.body.dataset.opens ?? 0) > n,
    opens,
  );
  return Number((await page.textContent("#tensor-count"))!.replace(/,/g, ""));
}

/** Shows a tensor in the Tensor view and reads its statistics and histogram. */
async function tensorStatsShown(page: Page, name: string) {
  await page.goto(page.url().replace(/#.*$/, "") + "#tensor");
  await page.fill("#tensor-pick", name);
  await page.click("#tensor-form button");
  await page.waitForFunction(
    (n) =>
      document.getElementById("tensor-title")?.textContent === n &&
      !document.getElementById("tensor-body")!.hasAttribute("aria-busy"),
    name,
  );
  const value = async (stat: string) =>
    Number(
      await page.getAttribute(
        `#tensor-stats dd[data-stat="${stat}"] span`,
        "data-value",
      ),
    );
  const int = async (stat: string) =>
    Number(
      (await page.textContent(`#tensor-stats dd[data-stat="${stat}"]`))!
        .replace(/,/g, ""),
    );
  const bins = await page.$$eval(
    "#histogram rect title",
    (ts) => ts.map((t) => t.textContent!),
  );
  return {
    min: await value("min"),
    max: await value("max"),
    mean: await value("mean"),
    std: await value("std"),
    zeros: await int("zeros"),
    elements: await int("elements"),
    bins,
  };
}

function assertStats(
  shown: Awaited<ReturnType<typeof tensorStatsShown>>,
  ref: StatsRef,
  what: string,
) {
  assertEquals(
    [shown.elements, shown.min, shown.max, shown.zeros],
    [ref.count, ref.min, ref.max, ref.zeros],
    what,
  );
  assertAlmostEquals(shown.mean, ref.mean, Math.abs(ref.mean) * 1e-9 + 1e-15);
  assertAlmostEquals(shown.std, ref.std, ref.std * 1e-9);
  // Every non-empty bin is drawn with its count in its title.
  const want = ref.histogram.flatMap((c, i) =>
    c === 0 ? [] : [`${c} values in bin ${i}`]
  );
  assertEquals(shown.bins, want, `${what} histogram`);
}

/** A SafeTensors file of 512 MiB, sparse on disk: 64 F32 tensors of 8 MiB. */
async function bigSafetensors(dir: string): Promise<string> {
  const header: Record<string, unknown> = {
    __metadata__: { format: "pt" },
  };
  const each = 8 << 20;
  for (let i = 0; i < 64; i++) {
    header[`model.layers.${i >> 1}.mlp.${i % 2 ? "up" : "down"}_proj.weight`] =
      {
        dtype: "F32",
        shape: [1024, 2048],
        data_offsets: [i * each, (i + 1) * each],
      };
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const head = new Uint8Array(8 + json.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.length), true);
  head.set(new TextEncoder().encode(json), 8);
  const path = join(dir, "big.safetensors");
  const f = await Deno.open(path, {
    write: true,
    create: true,
    truncate: true,
  });
  await f.write(head);
  await f.truncate(head.length + 64 * each);
  f.close();
  return path;
}

Deno.test({
  name: "ui page: explore, statistics, quantization preview, playground",
  ignore: !CHROMIUM || !FIXTURES,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    const server = staticServer();
    const browser = await launch();
    const tmp = await Deno.makeTempDir({ prefix: "modelhost-ui-test-" });
    const errors: string[] = [];
    try {
      const page = await browser.context.newPage();
      page.on("pageerror", (e) => errors.push(e.message));
      page.setDefaultTimeout(60_000);
      const stories = server.add(
        "stories260K.gguf",
        fx("gguf/stories260K.gguf"),
      );
      const julia = "safetensors/julia/non_sharded/model.safetensors";
      server.add("model.safetensors", fx(julia));
      server.add(
        "synthetic-llama-f32.gguf",
        fx("reference/quant/synthetic-llama-f32.gguf"),
      );

      await t.step("the page loads and its worker answers", async () => {
        const sizes = new Map<string, number>();
        page.on("response", async (r) => {
          if (!r.url().startsWith(server.url) || r.url().includes("/files/")) {
            return;
          }
          sizes.set(
            new URL(r.url()).pathname,
            (await r.body().catch(() => new Uint8Array())).length,
          );
        });
        await ready(page, server.url);
        const ms = Number(await page.getAttribute("body", "data-ready-ms"));
        const total = [...sizes.values()].reduce((a, b) => a + b, 0);
        console.log(
          `ui page: ${total} bytes uncompressed (${
            [...sizes].map(([p, n]) => `${p} ${n}`).join(", ")
          }), ready ${ms} ms after navigation start, kernels ${await page
            .getAttribute("body", "data-kernels")}`,
        );
        assert(ms > 0 && total > 0);
        await shot(page, "open");
      });

      await t.step("GGUF from disk: tensor count and statistics", async () => {
        const path = fx("gguf/stories260K.gguf");
        const n = await openAndCount(page, { file: path });
        assertEquals(
          n,
          (await libraryFile(path)).models[0].tensors.names().length,
        );
        await shot(page, "explore-gguf");
        // Sorting by bytes (largest first), then filtering by dtype and name.
        await page.click('#tensor-table th button[data-sort="bytes"]');
        const lib = (await libraryFile(path)).models[0].tensors;
        const sizes = lib.names().map((x) => lib.info(x).byteLength);
        const firstShown = await page.getAttribute(
          "#tensor-table tbody tr:first-child button",
          "data-name",
        );
        assertEquals(lib.info(firstShown!).byteLength, Math.max(...sizes));
        assertEquals(
          await page.getAttribute("#tensor-table th:nth-child(5)", "aria-sort"),
          "descending",
        );
        await page.fill("#tensor-filter", "ffn_down");
        assertEquals(await page.textContent("#tensor-count"), "5 of 48");
        await page.fill("#tensor-filter", "");
        const refs = VECTORS.stats["gguf/stories260K.gguf"];
        for (const name of ["blk.0.attn_q.weight", "token_embd.weight"]) {
          assertStats(await tensorStatsShown(page, name), refs[name], name);
        }
        await shot(page, "tensor");
      });

      await t.step(
        "GGUF by URL: count, statistics, only headers read until a tensor is shown",
        async () => {
          const before = stories.sent;
          const n = await openAndCount(page, {
            url: `${server.url}files/stories260K.gguf`,
          });
          assertEquals(n, 48);
          const headerBytes = stories.sent - before;
          // The page's own count of the bytes it received equals the server's.
          assertEquals(
            Number(await page.getAttribute("body", "data-transfer-bytes")),
            headerBytes,
          );
          assert(headerBytes < 80_000, `${headerBytes} bytes for the header`);
          const s = await tensorStatsShown(page, "blk.4.ffn_down.weight");
          assertStats(
            s,
            VECTORS.stats["gguf/stories260K.gguf"]["blk.4.ffn_down.weight"],
            "by URL",
          );
          // That tensor is 64×172 F32: its bytes, and no more, came on top.
          assertEquals(stories.sent - before - headerBytes, 64 * 172 * 4);
        },
      );

      await t.step(
        "SafeTensors from disk and by URL: count and statistics",
        async () => {
          const path = fx(julia);
          const lib =
            (await libraryFile(path)).models[0].tensors.names().length;
          assertEquals(await openAndCount(page, { file: path }), lib);
          await shot(page, "explore-safetensors");
          const refs = VECTORS.stats[julia];
          for (const name of ["bfloat16_357", "float8_e4m3fn_357"]) {
            assertStats(await tensorStatsShown(page, name), refs[name], name);
          }
          assertEquals(
            await openAndCount(page, {
              url: `${server.url}files/model.safetensors`,
            }),
            lib,
          );
          assertStats(
            await tensorStatsShown(page, "float32_357"),
            refs["float32_357"],
            "float32_357 by URL",
          );
        },
      );

      await t.step(
        "a sharded SafeTensors folder opens as one model",
        async () => {
          const dir = fx("safetensors/julia/sharded");
          const lib = await readSafetensors(
            await fileSource(join(dir, "model.safetensors.index.json")),
            { resolve: (rel) => fileSource(join(dir, rel)) },
          );
          assertEquals(
            await openAndCount(page, { folder: dir }),
            lib.models[0].tensors.names().length,
          );
          assertEquals(
            await page.textContent("#model-name"),
            "sharded · safetensors",
          );
        },
      );

      await t.step(
        "512 MiB SafeTensors by URL: under 64 KiB before the tensor table shows",
        async () => {
          const path = await bigSafetensors(tmp);
          const big = server.add("big.safetensors", path);
          const n = await openAndCount(page, {
            url: `${server.url}files/big.safetensors`,
          });
          assertEquals(n, 64);
          assert((await Deno.stat(path)).size > 512 * 1024 * 1024);
          console.log(
            `ui page: 512 MiB SafeTensors by URL: ${big.sent} body bytes in ${big.requests} requests before the tensor table`,
          );
          assert(big.sent < 64 * 1024, `${big.sent} bytes`);
          await shot(page, "explore-512mib-url");
        },
      );

      await t.step(
        "quantization preview: llama-quantize/NumPy errors, library size and bytes",
        async () => {
          const path = fx("reference/quant/synthetic-llama-f32.gguf");
          await openAndCount(page, {
            url: `${server.url}files/synthetic-llama-f32.gguf`,
          });
          const lib = await libraryFile(path);
          for (const type of ["Q4_0", "Q6_K", "I8"] as const) {
            await page.goto(server.url + "#quantize");
            await page.selectOption("#quant-type", type);
            await page.click("#quant-run");
            await page.waitForSelector(`body[data-preview-done="${type}"]`);
            const rows = await page.$$eval(
              "#quant-table tbody tr",
              (trs) =>
                trs.map((tr) => ({
                  name: tr.getAttribute("data-name")!,
                  rmse: Number(
                    tr.querySelector('[data-stat="rmse"]')!.getAttribute(
                      "title",
                    ),
                  ),
                  cosine: Number(
                    tr.querySelector('[data-stat="cosine"]')!.getAttribute(
                      "title",
                    ),
                  ),
                  max: Number(
                    tr.querySelector('[data-stat="max"]')!.getAttribute(
                      "title",
                    ),
                  ),
                })),
            );
            const ref = VECTORS.quant.types[type].tensors;
            const mine = await previewQuantization(lib, type);
            assertEquals(rows.length, mine.rows.length);
            for (const r of rows) {
              const e = ref[r.name];
              assertAlmostEquals(
                r.rmse,
                e.rmse,
                e.rmse * 1e-6 + 1e-12,
                `${type} ${r.name}`,
              );
              assertAlmostEquals(
                r.max,
                e.max,
                e.max * 1e-6 + 1e-12,
                `${type} ${r.name}`,
              );
              assertAlmostEquals(r.cosine, e.cosine, 1e-9, `${type} ${r.name}`);
              // The page's numbers are the library's, exactly.
              const l = mine.rows.find((x) => x.name === r.name)!;
              assertEquals([r.rmse, r.cosine, r.max], [
                l.rmse,
                l.cosine,
                l.maxError,
              ]);
            }
            const fileBytes = Number(
              (await page.getAttribute(
                '#quant-summary dd[data-stat="file-bytes"]',
                "title",
              ))!
                .split(" ")[0],
            );
            assertEquals(fileBytes, mine.fileBytes, type);
            await shot(page, `quantize-${type}`);
            if (type === "Q4_0") {
              const download = page.waitForEvent("download");
              await page.click("#quant-convert");
              const d = await download;
              const got = await Deno.readFile((await d.path())!);
              const want = await convertModel(lib, type, "synthetic-llama-f32");
              assertEquals(d.suggestedFilename(), want.fileName);
              assertEquals(got.length, fileBytes);
              assert(
                got.every((b, i) => b === want.bytes[i]),
                "converted bytes differ",
              );
              // llama-quantize --pure wrote a file of the same size.
              assertEquals(
                got.length,
                (await Deno.stat(
                  fx("reference/quant/synthetic-llama-Q4_0.gguf"),
                )).size,
              );
            }
          }
        },
      );

      await t.step(
        "playground: stories260K greedy from BOS gives llama2.c's text",
        async () => {
          const ref = JSON.parse(
            await Deno.readTextFile(fx("llama/stories260K-reference.json")),
          );
          await openAndCount(page, { file: fx("gguf/stories260K.gguf") });
          await page.goto(server.url + "#chat");
          await page.click("#chat-load");
          await page.waitForSelector("body[data-model-loaded]");
          await page.check('input[name="chat-mode"][value="complete"]');
          await page.evaluate(() =>
            (document.getElementById("chat-settings") as HTMLDetailsElement)
              .open = true
          );
          await page.check("#s-greedy");
          await page.uncheck("#s-eos");
          await page.fill("#s-max", String(ref.steps));
          await page.fill("#chat-input", "");
          await page.click("#chat-send");
          const done = await page.waitForSelector("#chat-log li[data-done]");
          assertEquals(
            await done.getAttribute("data-ids"),
            ref.token_ids.join(","),
          );
          assertEquals(
            await done.$eval(".text", (e) => e.textContent),
            ref.expected_text,
          );
          const stats = (await page.textContent("#chat-stats"))!;
          assert(/200 tokens · [\d.]+ tokens\/s/.test(stats), stats);
          console.log(`ui page: playground ${stats}`);
          await page.click("#chat-template summary");
          await shot(page, "playground");
        },
      );

      await t.step("Stop ends a generation in the page", async () => {
        await page.goto(server.url + "#chat");
        await page.fill("#s-max", "2000");
        await page.fill("#chat-input", "");
        await page.click("#chat-send");
        await page.waitForFunction(() =>
          /^\d+ tokens/.test(
            document.getElementById("chat-stats")!.textContent!,
          )
        );
        await page.click("#chat-stop");
        const done = await page.waitForSelector(
          "#chat-log li[data-done]:last-child",
        );
        assertEquals(await done.getAttribute("data-done"), "aborted");
        const n = (await done.getAttribute("data-ids"))!.split(",").length;
        assert(n < 2000, `${n} tokens`);
      });

      await t.step(
        "a Hugging Face folder: summary, and stories260K's text in the page",
        async () => {
          const ref = JSON.parse(
            await Deno.readTextFile(fx("llama/stories260K-reference.json")),
          );
          const hf = await ggufToHf(
            await libraryFile(fx("gguf/stories260K.gguf")),
          );
          const dir = join(tmp, "stories-hf");
          await Deno.mkdir(dir);
          const json: [string, unknown][] = [
            ["config.json", hf.config],
            ["tokenizer.json", hf.tokenizer],
            ["tokenizer_config.json", hf.tokenizerConfig],
            ["generation_config.json", hf.generationConfig],
          ];
          for (const [name, v] of json) {
            if (v) await Deno.writeTextFile(join(dir, name), JSON.stringify(v));
          }
          await Deno.writeFile(
            join(dir, "model.safetensors"),
            await serializeSafetensors(hf.model),
          );
          const count = await openAndCount(page, { folder: dir });
          assertEquals(count, hf.model.models[0].tensors.names().length);
          assertEquals(
            await page.textContent("#model-name"),
            "stories-hf · hf",
          );
          const summary = (await page.textContent("#summary"))!;
          assert(summary.includes("Familyllama"), summary);
          assert(summary.includes("Layers5"), summary);
          await page.goto(server.url + "#chat");
          await page.click("#chat-load");
          await page.waitForFunction(() =>
            /loaded in/.test(
              document.getElementById("chat-model")!.textContent!,
            )
          );
          await page.check('input[name="chat-mode"][value="complete"]');
          await page.evaluate(() =>
            (document.getElementById("chat-settings") as HTMLDetailsElement)
              .open = true
          );
          await page.check("#s-greedy");
          await page.uncheck("#s-eos");
          await page.fill("#s-max", String(ref.steps));
          await page.fill("#chat-input", "");
          await page.click("#chat-send");
          const done = await page.waitForSelector(
            '#chat-log li[data-done="length"]:last-child',
          );
          assertEquals(
            await done.$eval(".text", (e) => e.textContent),
            ref.expected_text,
          );
        },
      );

      await t.step("a bundle: its network's layers and tensors", async () => {
        const config = {
          input_size: 6,
          layers: [
            { type: "dense", output_size: 16, activation: "gelu" },
            { type: "layer_norm" },
            { type: "dense", output_size: 4, activation: "softmax" },
          ],
        };
        const reg = defaultRegistry();
        const text = await saveBundle([
          { id: "net", config, tensors: initNetwork(reg, config, 3) },
        ]);
        const lib = await loadBundle(text);
        const path = join(tmp, "net.bundle.json");
        await Deno.writeTextFile(path, text);
        assertEquals(
          await openAndCount(page, { file: path }),
          lib.models[0].tensors.names().length,
        );
        const blocks = await page.$$eval(
          "#diagram > li strong",
          (e) => e.map((x) => x.textContent),
        );
        assertEquals(blocks, ["0: dense", "1: layer_norm", "2: dense"]);
        await shot(page, "explore-bundle");
      });

      await t.step(
        "hostile metadata and names are shown as text, never run",
        async () => {
          const evil = '<img src=x onerror="window.__pwned=1">';
          const bytes = await serializeSafetensors({
            models: [{
              id: "evil",
              metadata: {},
              tensors: memoryTensorIndex([
                tensorFromF32(`<b>${evil}</b>`, new Float32Array(4), [2, 2]),
              ]),
            }],
          }, {
            metadata: { [evil]: `<script>window.__pwned=2</script>${evil}` },
          });
          // The library reads the file back (the page gets the same bytes).
          await readSafetensors(memorySource(bytes));
          const path = join(tmp, "evil.safetensors");
          await Deno.writeFile(path, bytes);
          await openAndCount(page, { file: path });
          await page.fill("#meta-filter", "pwned");
          const row = await page.waitForSelector("#meta-table tbody tr td.key");
          assertEquals(await row.textContent(), evil);
          assertEquals(
            await page.$eval(
              "#meta-table tbody tr td.value",
              (e) => e.textContent,
            ),
            `<script>window.__pwned=2</script>${evil}`,
          );
          assertEquals(
            await page.$$eval("main img, main script, main b", (x) => x.length),
            0,
          );
          assertEquals(
            await page.evaluate(() =>
              (globalThis as Record<string, unknown>).__pwned
            ),
            undefined,
          );
          await shot(page, "hostile");
        },
      );

      await t.step(
        "keyboard only at 360 px: every view is reachable and nothing overflows",
        async () => {
          await page.setViewportSize({ width: 360, height: 740 });
          // A fresh document: keyboard focus starts at the top.
          await page.goto("about:blank");
          await ready(page, server.url + "#open");
          await page.keyboard.press("Tab");
          assertEquals(
            await page.evaluate(() => document.activeElement?.textContent),
            "Skip to content",
          );
          // With a model open, so the tables and charts are there to overflow.
          await openAndCount(page, { file: fx("gguf/stories260K.gguf") });
          await page.focus("a.skip");
          const views = [
            "Explore",
            "Tensor",
            "Quantize",
            "Playground",
            "Registry",
            "Open",
          ];
          for (const label of views) {
            // Tab to the view's link in the navigation and press Enter.
            let found = false;
            for (let i = 0; i < 40 && !found; i++) {
              await page.keyboard.press("Tab");
              found = await page.evaluate(
                (l) =>
                  document.activeElement?.tagName === "A" &&
                  document.activeElement.textContent === l,
                label,
              );
            }
            assert(found, `no keyboard stop on ${label}`);
            await page.keyboard.press("Enter");
            // Focus moves to the view's heading (after the hash change).
            await page.waitForFunction(() =>
              document.activeElement?.tagName === "H1" &&
              !document.activeElement.closest("section")!.hidden
            );
            const width = await page.evaluate(() =>
              document.documentElement.scrollWidth
            );
            assert(
              width <= 360,
              `${label}: the page is ${width}px wide at 360`,
            );
            await shot(page, `narrow-${label.toLowerCase()}`);
            await page.focus("a.skip");
          }
          // Enter on the drop zone clicks the file input (the picker; the
          // test cancels the click so that no dialog opens).
          await page.goto(server.url + "#open");
          await page.evaluate(() => {
            const input = document.getElementById("file-input")!;
            input.addEventListener("click", (e) => {
              e.preventDefault();
              document.body.dataset.picker = "1";
            });
          });
          await page.focus("#drop");
          await page.keyboard.press("Enter");
          await page.waitForSelector("body[data-picker]");
          await page.setViewportSize({ width: 1280, height: 900 });
        },
      );

      assertEquals(errors, [], "errors thrown in the page");
    } finally {
      await browser.close();
      await server.close();
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    }
  },
});
