// Issue 18 defect 8 (the tokenizer part): a 15 MB prompt was tokenized on
// the request path, blocking every other request for seconds and leaving
// RSS at 1.2 GB. Prompts over what the model's context could take are now
// refused with 413 before tokenization, on every route that takes text.

import { assert, assertEquals, assertMatch } from "@std/assert";
import { join } from "@std/path";
import {
  MAX_PROMPT_CHARS_PER_TOKEN,
  MIN_PROMPT_CHARS,
  promptCharLimit,
} from "../../../serve/_prompt_limit.ts";
import { call } from "../_helpers.ts";
import { rssOf, spawnServer } from "../_child.ts";
import { tinyLlamaGguf } from "../_tiny_llama.ts";

Deno.test("serve: a 15 MB prompt answers 413 on every text route without stalling other requests", async () => {
  assertEquals(promptCharLimit(64), MIN_PROMPT_CHARS);
  assertEquals(promptCharLimit(131_072), 131_072 * MAX_PROMPT_CHARS_PER_TOKEN);
  const dir = await Deno.makeTempDir({ prefix: "modelhost-prompt-" });
  await Deno.writeFile(join(dir, "tiny.gguf"), await tinyLlamaGguf());
  // The server runs in its own process: the client's work on 15 MB strings
  // does not count against its latency or memory.
  const { child, url } = await spawnServer(dir);
  try {
    // Load the model first, so the timing below is only about the prompt.
    const warm = await call(`${url}/api/generate`, {
      json: {
        model: "tiny",
        prompt: "ab",
        stream: false,
        options: { num_predict: 1 },
      },
    });
    assertEquals(warm.status, 200, JSON.stringify(warm.body));
    const huge = "abcdefgh ".repeat(15 * 1024 * 1024 / 9);
    // Bodies encoded up front: the pings below share this process.
    const requests = ([
      ["/api/generate", { model: "tiny", prompt: huge, stream: false }],
      ["/api/chat", {
        model: "tiny",
        messages: [{ role: "user", content: huge }],
        stream: false,
      }],
      ["/v1/completions", { model: "tiny", prompt: huge }],
      ["/v1/chat/completions", {
        model: "tiny",
        messages: [{ role: "user", content: huge }],
      }],
      ["/api/embed", { model: "tiny", input: huge }],
    ] as const).map(([path, json]) =>
      [path, new TextEncoder().encode(JSON.stringify(json))] as const
    );
    const rss0 = await rssOf(child.pid);
    let worst = 0;
    let pinging = true;
    const pings = (async () => {
      while (pinging) {
        const t0 = performance.now();
        await (await fetch(`${url}/healthz`)).text();
        worst = Math.max(worst, performance.now() - t0);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const t0 = performance.now();
    const answers = await Promise.all(
      requests.map(([path, body]) =>
        call(`${url}${path}`, { method: "POST", body })
      ),
    );
    const ms = performance.now() - t0;
    pinging = false;
    await pings;
    const rss1 = await rssOf(child.pid);
    const grew = rss0 && rss1 ? (rss1 - rss0) / 2 ** 20 : NaN;
    console.log(
      `five 15 MB prompts: answered in ${
        ms.toFixed(0)
      } ms, worst /healthz meanwhile ${worst.toFixed(0)} ms, RSS +${
        grew.toFixed(0)
      } MiB`,
    );
    for (const a of answers) {
      assertEquals(a.status, 413, JSON.stringify(a.body).slice(0, 300));
      assertMatch(
        JSON.stringify(a.body),
        /The prompt is \d+ characters; tiny@1 takes at most 65536/,
      );
    }
    assert(worst < 1_500, `a /healthz took ${worst} ms`);
    // Just over the limit is refused, at the limit goes on to the context check.
    const over = await call(`${url}/api/generate`, {
      json: {
        model: "tiny",
        prompt: "a".repeat(MIN_PROMPT_CHARS + 1),
        raw: true,
        stream: false,
      },
    });
    assertEquals(over.status, 413);
    const at = await call(`${url}/api/generate`, {
      json: {
        model: "tiny",
        prompt: "a".repeat(MIN_PROMPT_CHARS),
        raw: true,
        stream: false,
      },
    });
    assert(at.status !== 413, JSON.stringify(at.body));
    if (rss1 !== undefined) assert(rss1 < 2 ** 30, `server RSS ${rss1} bytes`);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await Deno.remove(dir, { recursive: true });
  }
});
