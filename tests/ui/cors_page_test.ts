/// <reference lib="dom" />
/**
 * CORS and DNS rebinding as a browser sees them (issue 21's CORS item,
 * issue 18 defect 3), in headless Chromium: a page on another localhost
 * port lists and runs models through the server's API (JSON POSTs go
 * through a preflight); a page on an origin that is not allowed
 * (`evil.example`, resolved to 127.0.0.1 by Chromium's host rules) cannot
 * read answers, its preflight is refused and its simple text/plain POST
 * stores nothing; a page on the rebinding name itself cannot reach the API
 * (Host check). Skipped with a message without Chromium.
 */

import { assert, assertEquals, assertMatch } from "@std/assert";
import { startServer } from "@modelhost/modelhost/serve";
import { CHROMIUM, warnSkip } from "./_browser.ts";
import { tinyLlamaGguf } from "../serve/_tiny_llama.ts";

warnSkip();

/** Serves one small HTML page on 127.0.0.1 (any Host). */
function pageServer(): { port: number; close(): Promise<void> } {
  const s = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () =>
      new Response("<!doctype html><title>caller</title><p>caller</p>", {
        headers: { "content-type": "text/html; charset=utf-8" },
      }),
  );
  return { port: s.addr.port, close: () => s.shutdown() };
}

Deno.test({
  name:
    "serve CORS in Chromium: a page on another localhost port calls the API; a page on a foreign origin is refused",
  ignore: !CHROMIUM,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "modelhost-cors-" });
    await Deno.writeFile(`${dir}/tiny.gguf`, await tinyLlamaGguf());
    const server = await startServer({ dir, port: 0, log: false });
    const pages = pageServer();
    const { chromium } = await import("playwright-core");
    const profile = await Deno.makeTempDir({ prefix: "modelhost-chromium-" });
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--host-resolver-rules=MAP evil.example 127.0.0.1",
      ],
    });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(30_000);
      const api = server.url;

      // Allowed: http://localhost:<other port> (the default list).
      await page.goto(`http://localhost:${pages.port}/`);
      const good = await page.evaluate(async (api) => {
        const tags = await (await fetch(`${api}/api/tags`)).json();
        const gen = await fetch(`${api}/api/generate`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "tiny",
            prompt: "ab",
            stream: false,
            options: { num_predict: 2, temperature: 0 },
          }),
        });
        const chat = await fetch(`${api}/v1/chat/completions`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: "Bearer unused",
          },
          body: JSON.stringify({
            model: "tiny",
            messages: [{ role: "user", content: "ab" }],
            max_tokens: 2,
          }),
        });
        return {
          tags: tags.models.map((m: { name: string }) => m.name),
          gen: [gen.status, (await gen.json()).done],
          chat: [chat.status, (await chat.json()).object],
          id: gen.headers.get("x-request-id") !== null,
        };
      }, api);
      assertEquals(good.tags, ["tiny:latest"]);
      assertEquals(good.gen, [200, true]);
      assertEquals(good.chat, [200, "chat.completion"]);
      assert(good.id, "x-request-id is exposed to the page");

      // Refused: http://evil.example:<port>.
      await page.goto(`http://evil.example:${pages.port}/`);
      const bad = await page.evaluate(async (api) => {
        const out: string[] = [];
        const tryFetch = async (label: string, init?: RequestInit) => {
          try {
            const r = await fetch(`${api}/api/tags`, init);
            out.push(`${label}: read ${r.status}`);
          } catch (e) {
            out.push(`${label}: ${(e as Error).name}`);
          }
        };
        await tryFetch("get");
        try {
          await fetch(`${api}/api/generate`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: "{}",
          });
          out.push("json post: sent");
        } catch (e) {
          out.push(`json post: ${(e as Error).name}`);
        }
        // A simple request goes out without a preflight; the server must refuse it.
        await fetch(`${api}/registry/models/planted`, {
          method: "POST",
          mode: "no-cors",
          headers: { "content-type": "text/plain" },
          body: "not even a model",
        });
        out.push("simple post: sent");
        return out;
      }, api);
      assertEquals(bad, [
        "get: TypeError",
        "json post: TypeError",
        "simple post: sent",
      ]);
      const listed = await (await fetch(`${api}/registry/models`)).json();
      assertEquals(
        listed.models.map((m: { name: string }) => m.name),
        ["tiny"],
      );

      // DNS rebinding: the attacker's name pointing at the server itself.
      await page.goto(`http://evil.example:${server.port}/registry/models`);
      assertMatch(
        (await page.textContent("body"))!,
        /DNS-rebinding protection/,
      );
    } finally {
      await context.close().catch(() => {});
      await Deno.remove(profile, { recursive: true }).catch(() => {});
      await pages.close();
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
