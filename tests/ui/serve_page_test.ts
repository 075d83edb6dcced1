/// <reference lib="dom" />
/**
 * The page as `serve --ui` serves it at /ui, in headless Chromium: the
 * registry view uploads a model with the token and deletes it (checked
 * through the server's API), refuses without the token, and the playground
 * streams a greedy completion from the server's model that equals the
 * library's. Prints the page's weight as sent (compressed) and its time to
 * interactive. Skipped with a message without Chromium or fixtures.
 */

import { assert, assertEquals, assertMatch } from "@std/assert";
import { join } from "@std/path";
import { readGguf } from "@modelhost/modelhost/formats/gguf";
import { fileSource } from "@modelhost/modelhost/io";
import { generateText, transformerFromGguf } from "@modelhost/modelhost/models";
import { startServer } from "@modelhost/modelhost/serve";
import { FIXTURES } from "../_helpers/fixtures.ts";
import { CHROMIUM, launch, SHOTS, warnSkip } from "./_browser.ts";

warnSkip();
if (CHROMIUM && !FIXTURES) {
  console.error(
    "ui serve page test: skipped, no fixtures (../shared/fixtures)",
  );
}

const TOKEN = "s3cret-token";

Deno.test("serve --ui: the page's files, redirect and headers", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelhost-ui-serve-" });
  const server = await startServer({ dir, port: 0, log: false, ui: true });
  try {
    const r = await fetch(`${server.url}/ui`, { redirect: "manual" });
    await r.body?.cancel();
    assertEquals([r.status, r.headers.get("location")], [308, "/ui/"]);
    const page = await fetch(`${server.url}/ui/`);
    assertEquals(page.headers.get("content-type"), "text/html; charset=utf-8");
    assertMatch(
      page.headers.get("content-security-policy")!,
      /frame-ancestors 'none'/,
    );
    assertEquals(
      await page.text(),
      await Deno.readTextFile(
        new URL("../../ui/dist/index.html", import.meta.url),
      ),
    );
    for (const f of ["app.js", "worker.js", "style.css"]) {
      const res = await fetch(`${server.url}/ui/${f}`);
      assertEquals(res.status, 200, f);
      assertEquals(
        (await res.bytes()).length,
        (await Deno.stat(new URL(`../../ui/dist/${f}`, import.meta.url))).size,
      );
    }
    const missing = await fetch(`${server.url}/ui/..%2Fdeno.json`);
    assertEquals(missing.status, 404);
    await missing.body?.cancel();
    // Without ui: true there is no page.
    const off = await startServer({ dir, port: 0, log: false });
    const none = await fetch(`${off.url}/ui/`);
    assertEquals(none.status, 404);
    await none.body?.cancel();
    await off.close();
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "serve --ui: registry view uploads and deletes; playground talks to the server",
  ignore: !CHROMIUM || !FIXTURES,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    const dir = await Deno.makeTempDir({ prefix: "modelhost-ui-serve-" });
    const server = await startServer({
      dir,
      port: 0,
      log: false,
      ui: true,
      token: TOKEN,
    });
    const browser = await launch();
    const model = join(FIXTURES!, "gguf/stories260K.gguf");
    const api = async () =>
      (await (await fetch(`${server.url}/v1/models`)).json()).models as {
        name: string;
        versions: { version: string; bytes: number }[];
      }[];
    try {
      const page = await browser.context.newPage();
      page.setDefaultTimeout(60_000);
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      page.on("dialog", (d) => d.accept());

      await t.step("weight as served and time to interactive", async () => {
        await page.goto(`${server.url}/ui`);
        await page.waitForSelector("body[data-ready]");
        assert(page.url().endsWith("/ui/"), page.url());
        const ms = Number(await page.getAttribute("body", "data-ready-ms"));
        const appMs = Number(await page.getAttribute("body", "data-app-ms"));
        // What travels: each file gzip-compressed (Content-Length as sent).
        const sizes: [string, number, number][] = [];
        for (
          const f of [
            "",
            "style.css",
            "app.js",
            "worker.js",
            "kernel_worker.js",
          ]
        ) {
          const res = await fetch(`${server.url}/ui/${f}`, {
            headers: { "accept-encoding": "gzip" },
          });
          const sent = Number(res.headers.get("content-length"));
          const plain = (await res.bytes()).length;
          assertEquals(res.headers.get("content-encoding"), "gzip");
          assert(sent > 0 && sent < plain, `${f}: ${sent} of ${plain}`);
          sizes.push([f || "index.html", sent, plain]);
        }
        const total = sizes.reduce((s, [, n]) => s + n, 0);
        const plain = sizes.reduce((s, [, , n]) => s + n, 0);
        console.log(
          `ui page via serve: ${total} bytes sent gzip-compressed, ${plain} uncompressed (${
            sizes.map(([f, n, p]) => `${f} ${n}/${p}`).join(", ")
          }); controls live ${appMs} ms, worker ready ${ms} ms after navigation start`,
        );
        assert(ms > 0);
        // Served cross-origin isolated, the kernels run on worker threads.
        const [isolated, cores] = await page.evaluate(() =>
          [crossOriginIsolated, navigator.hardwareConcurrency] as const
        );
        assert(isolated, "the page is not cross-origin isolated");
        const kernels = (await page.getAttribute("body", "data-kernels"))!;
        console.log(`ui page via serve: kernels ${kernels}`);
        if (cores > 1) {
          assertEquals(
            kernels,
            `wasm-relaxed-simd, ${Math.min(4, cores)} threads`,
          );
        }
      });

      await t.step("upload with the token", async () => {
        await page.goto(`${server.url}/ui/#registry`);
        await page.fill("#reg-token", TOKEN);
        await page.fill("#up-name", "stories");
        await page.setInputFiles("#up-file", model);
        await page.click("#up-submit");
        await page.waitForSelector('#reg-table tr[data-name="stories@1"]');
        assertMatch(
          (await page.textContent("#up-status"))!,
          /Uploaded stories@1/,
        );
        const listed = await api();
        assertEquals(listed.map((m) => m.name), ["stories"]);
        assertEquals(
          listed[0].versions[0].bytes,
          (await Deno.stat(model)).size,
        );
        await page.click("#reg-form button");
        await page.waitForFunction(() =>
          document.getElementById("reg-memory")!.textContent!.startsWith(
            "1 models",
          )
        );
        await Deno.mkdir(SHOTS, { recursive: true });
        await page.screenshot({
          path: join(SHOTS, "registry.png"),
          fullPage: true,
        });
      });

      await t.step(
        "playground: a greedy completion from the server's model",
        async () => {
          const lib = await transformerFromGguf(
            await readGguf(await fileSource(model)),
          );
          const prompt = "Once upon a time";
          const want = await generateText(lib, prompt, {
            greedy: true,
            maxTokens: 24,
          });
          await page.goto(`${server.url}/ui/#chat`);
          await page.click("#chat-refresh");
          await page.waitForSelector(
            '#chat-source option[value="server:stories:1"], #chat-source option[value="server:stories"]',
            { state: "attached" },
          );
          const value = await page.$eval(
            "#chat-source",
            (s) =>
              [...(s as HTMLSelectElement).options].find((o) =>
                o.value.startsWith("server:")
              )!.value,
          );
          await page.selectOption("#chat-source", value);
          await page.check('input[name="chat-mode"][value="complete"]');
          await page.evaluate(() =>
            (document.getElementById("chat-settings") as HTMLDetailsElement)
              .open = true
          );
          await page.check("#s-greedy");
          await page.fill("#s-max", "24");
          await page.fill("#chat-input", prompt);
          await page.click("#chat-send");
          await page.waitForFunction(() =>
            /tokens\/s · \w+ \(server\)/.test(
              document.getElementById("chat-stats")!.textContent!,
            )
          );
          const text = await page.$eval(
            '#chat-log li[data-role="assistant"] .text',
            (e) => e.textContent,
          );
          assertEquals(text, want.text);
          await page.screenshot({
            path: join(SHOTS, "playground-server.png"),
            fullPage: true,
          });
        },
      );

      await t.step(
        "playground in the page on kernel threads: the library's tokens",
        async () => {
          // Its 32,000-row output matrix is large enough to be split over the threads.
          const path = join(FIXTURES!, "gguf/llama-2-tiny-random.gguf");
          const lib = await transformerFromGguf(
            await readGguf(await fileSource(path)),
          );
          const prompt = "Once upon a time";
          const want = await generateText(lib, prompt, {
            greedy: true,
            maxTokens: 12,
            stopAtEos: false,
          });
          await page.goto(`${server.url}/ui/#open`);
          const opens = Number(
            await page.getAttribute("body", "data-opens") ?? 0,
          );
          await page.setInputFiles("#file-input", path);
          await page.waitForFunction(
            (n) => Number(document.body.dataset.opens ?? 0) > n,
            opens,
          );
          await page.goto(`${server.url}/ui/#chat`);
          await page.selectOption("#chat-source", "page");
          await page.click("#chat-load");
          await page.waitForSelector("body[data-model-loaded]");
          assertMatch((await page.textContent("#chat-model"))!, /\d threads/);
          await page.check('input[name="chat-mode"][value="complete"]');
          await page.evaluate(() =>
            (document.getElementById("chat-settings") as HTMLDetailsElement)
              .open = true
          );
          await page.check("#s-greedy");
          await page.uncheck("#s-eos");
          await page.fill("#s-max", "12");
          await page.fill("#chat-input", prompt);
          await page.click("#chat-send");
          const done = await page.waitForSelector("#chat-log li[data-done]");
          assertEquals(await done.getAttribute("data-ids"), want.ids.join(","));
          assertEquals(
            await done.$eval(".text", (e) => e.textContent),
            want.text,
          );
        },
      );

      await t.step(
        "delete needs the token, then removes the model",
        async () => {
          await page.goto(`${server.url}/ui/#registry`);
          await page.fill("#reg-token", "");
          await page.click("#reg-form button");
          await page.click('#reg-table tr[data-name="stories@1"] button');
          await page.waitForFunction(() =>
            /Delete failed: 401/.test(
              document.getElementById("status")!.textContent!,
            )
          );
          assertEquals((await api()).length, 1);
          await page.fill("#reg-token", TOKEN);
          await page.click('#reg-table tr[data-name="stories@1"] button');
          await page.waitForFunction(() =>
            document.getElementById("reg-memory")!.textContent!.startsWith(
              "0 models",
            )
          );
          assertEquals(await api(), []);
        },
      );
      assertEquals(errors, []);
    } finally {
      await browser.close();
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
