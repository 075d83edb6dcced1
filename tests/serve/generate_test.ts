// Ollama-compatible generation with the real stories260K checkpoint
// (uploaded as GGUF): greedy output checked against llama.cpp's reference
// continuation (../shared/fixtures/reference/llama-logits), streaming and
// not, context continuation, stop strings, chat, limits (queue, timeout,
// client leaving), and the npm `ollama` client talking to the server.

import { assert, assertEquals, assertMatch } from "@std/assert";
import { Ollama } from "ollama";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";
import { loadTransformer } from "../../io/transformer.ts";
import { generateText, promptIds } from "../../models/generate.ts";
import { pickChatTemplate } from "../../tokenizers/chat.ts";
import {
  bundleBytes,
  call,
  predictVectors,
  type TestServer,
  upload,
  withServer,
} from "./_helpers.ts";
import type { ServeOptions } from "../../serve/mod.ts";

interface LlamaCppReference {
  prompt_text: string;
  prompt_ids: number[];
  greedy_ids: number[];
  greedy_text: string;
}

async function reference(): Promise<LlamaCppReference> {
  return JSON.parse(
    await Deno.readTextFile(
      fixture("reference/llama-logits/stories260K.logits.json"),
    ),
  );
}

/** A server with stories260K uploaded as `stories` and the reference network as `mlp`. */
async function withStories(
  options: Partial<ServeOptions>,
  fn: (s: TestServer) => Promise<void>,
): Promise<void> {
  await withServer(options, async (s) => {
    const gguf = await Deno.readFile(fixture("gguf/stories260K.gguf"));
    const up = await upload(s.url, "stories", gguf);
    assertEquals(up.status, 201, JSON.stringify(up.body));
    assertEquals(up.body.format, "gguf");
    assertEquals(up.body.kind, "llm");
    assertEquals(
      (await upload(s.url, "mlp", await bundleBytes(await predictVectors())))
        .status,
      201,
    );
    await fn(s);
  });
}

/** Greedy, no repetition penalty: what llama.cpp's reference did. */
const GREEDY = { temperature: 0, repeat_last_n: 0 };

/** Reads an NDJSON body into objects. */
async function ndjson(res: Response): Promise<Record<string, unknown>[]> {
  const text = await res.text();
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
}

conformanceTest(
  "serve: /api/generate gives llama.cpp's greedy continuation, streamed and not",
  async () => {
    const ref = await reference();
    await withStories({}, async ({ url }) => {
      const request = {
        model: "stories",
        prompt: ref.prompt_text,
        options: { ...GREEDY, num_predict: 64 },
      };
      const one = await call(`${url}/api/generate`, {
        json: { ...request, stream: false },
      });
      assertEquals(one.status, 200, JSON.stringify(one.body));
      assertEquals(one.body.response, ref.greedy_text);
      assertEquals(one.body.context, [...ref.prompt_ids, ...ref.greedy_ids]);
      assertEquals(one.body.model, "stories");
      assertEquals(one.body.done, true);
      assertEquals(one.body.done_reason, "length");
      assertEquals(one.body.prompt_eval_count, 5);
      assertEquals(one.body.eval_count, 64);
      for (
        const k of ["total_duration", "prompt_eval_duration", "eval_duration"]
      ) {
        assert(
          Number.isSafeInteger(one.body[k]) && (one.body[k] as number) > 0,
          k,
        );
      }
      assert(
        (one.body.total_duration as number) >=
          (one.body.eval_duration as number),
      );
      assertMatch(
        String(one.body.created_at),
        /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/,
      );

      const res = await fetch(`${url}/api/generate`, {
        method: "POST",
        body: JSON.stringify(request),
      });
      assertEquals(res.headers.get("content-type"), "application/x-ndjson");
      const lines = await ndjson(res);
      assert(lines.length > 10, `${lines.length} lines`);
      const last = lines[lines.length - 1];
      assertEquals(lines.slice(0, -1).every((l) => l.done === false), true);
      assertEquals(last.done, true);
      assertEquals(last.response, "");
      assertEquals(last.eval_count, 64);
      assertEquals(last.context, [...ref.prompt_ids, ...ref.greedy_ids]);
      assertEquals(lines.map((l) => l.response).join(""), ref.greedy_text);
    });
  },
);

conformanceTest(
  "serve: /api/generate continues a context, stops at stop strings, loads on an empty prompt",
  async () => {
    const ref = await reference();
    await withStories({}, async ({ url }) => {
      // The context of a first answer, fed back with no new text: the greedy
      // continuation goes on where the reference does.
      const context = [...ref.prompt_ids, ...ref.greedy_ids.slice(0, 27)];
      const more = await call(`${url}/api/generate`, {
        json: {
          model: "stories:latest",
          prompt: "",
          context,
          stream: false,
          options: { ...GREEDY, num_predict: 10 },
        },
      });
      assertEquals(more.status, 200, JSON.stringify(more.body));
      assertEquals(
        (more.body.context as number[]).slice(context.length),
        ref.greedy_ids.slice(27, 37),
      );
      const stop = await call(`${url}/api/generate`, {
        json: {
          model: "stories:1",
          prompt: ref.prompt_text,
          stream: false,
          options: { ...GREEDY, num_predict: 64, stop: ["Lily"] },
        },
      });
      assertEquals(stop.body.response, ", there was a little girl named ");
      assertEquals(stop.body.done_reason, "stop");
      const load = await call(`${url}/api/generate`, {
        json: { model: "stories", prompt: "" },
      });
      assertEquals(load.body.done, true);
      assertEquals(load.body.done_reason, "load");
    });
  },
);

conformanceTest(
  "serve: /api/chat renders the conversation with the model's chat template and generates what the library does",
  async () => {
    await withStories({}, async ({ url }) => {
      const messages = [
        { role: "system", content: "You tell stories." },
        { role: "user", content: "Tell me about a cat." },
      ];
      const r = await call(`${url}/api/chat`, {
        json: {
          model: "stories",
          messages,
          stream: false,
          options: { ...GREEDY, num_predict: 24 },
        },
      });
      assertEquals(r.status, 200, JSON.stringify(r.body));
      const model = await loadTransformer(fixture("gguf/stories260K.gguf"));
      const chatTemplate = pickChatTemplate({
        tokenizer: model.tokenizer,
        family: model.name,
      });
      const ids = promptIds(model, messages, { chatTemplate });
      const lib = await generateText(model, ids, {
        greedy: true,
        maxTokens: 24,
        repetitionPenalty: 1,
      });
      assertEquals(r.body.message, { role: "assistant", content: lib.text });
      assertEquals(r.body.prompt_eval_count, ids.length);
      assertEquals(r.body.eval_count, lib.ids.length);
      const res = await fetch(`${url}/api/chat`, {
        method: "POST",
        body: JSON.stringify({
          model: "stories",
          messages,
          options: { ...GREEDY, num_predict: 24 },
        }),
      });
      const lines = await ndjson(res);
      assertEquals(
        lines.map((l) => (l.message as { content: string }).content).join(""),
        lib.text,
      );
      assertEquals(lines[lines.length - 1].done_reason, "length");
    });
  },
);

conformanceTest(
  "serve: generation refusals (unknown model, wrong kind, unsupported fields, bad options)",
  async () => {
    await withStories({}, async ({ url, dir }) => {
      const cases: [string, unknown, number, string][] = [
        [
          "/api/generate",
          { model: "nope", prompt: "x" },
          404,
          'model "nope" not found',
        ],
        [
          "/api/generate",
          { model: "stories:9", prompt: "x" },
          404,
          'model "stories:9" not found',
        ],
        [
          "/api/generate",
          { model: "mlp", prompt: "x" },
          400,
          "not a Llama-family",
        ],
        [
          "/api/generate",
          { model: "stories", prompt: "x", format: "yaml" },
          400,
          '"format" must be "json" or a JSON schema object',
        ],
        [
          "/api/generate",
          { model: "stories", prompt: "x", format: { pattern: "a+" } },
          400,
          'the keyword "pattern" is not supported',
        ],
        [
          "/api/generate",
          { model: "stories", prompt: 3 },
          400,
          '"prompt" must be a string',
        ],
        [
          "/api/generate",
          { model: "stories", prompt: "x", options: { temperature: "hot" } },
          400,
          "options.temperature must be a number",
        ],
        [
          "/api/chat",
          { model: "stories", messages: [{ role: "user", content: 5 }] },
          400,
          "messages[0]",
        ],
        [
          "/api/chat",
          {
            model: "stories",
            messages: [{ role: "user", content: "x" }],
            tools: [{ type: "function" }],
          },
          400,
          "tools",
        ],
        ["/api/show", { model: "mlp" }, 400, "not a Llama-family"],
        [
          "/registry/models/stories/predict",
          { inputs: [[1]] },
          400,
          "is a language model",
        ],
      ];
      for (const [path, body, status, text] of cases) {
        const r = await call(url + path, { json: body });
        assertEquals(
          r.status,
          status,
          `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`,
        );
        assert(
          String(r.body.error).includes(text),
          `${r.body.error} lacks ${text}`,
        );
      }
      const bad = await call(`${url}/api/generate`, {
        method: "POST",
        body: "{",
      });
      assertEquals(bad.status, 400);
      assert(dir.length > 0);
    });
  },
);

conformanceTest(
  "serve: one generation at a time, a bounded queue (503), a time limit (504 or an error line)",
  async () => {
    await withStories({
      maxConcurrentGenerations: 1,
      maxQueuedGenerations: 1,
      timeoutMs: 400,
    }, async ({ url, server }) => {
      // Load the model first so the time limit measures generation only.
      await call(`${url}/api/generate`, {
        json: { model: "stories", prompt: "" },
      });
      const long = {
        model: "stories",
        prompt: "Once",
        stream: false,
        options: { num_predict: 2000 },
      };
      const a = call(`${url}/api/generate`, { json: long });
      await new Promise((r) => setTimeout(r, 50));
      const b = call(`${url}/api/generate`, { json: long });
      await new Promise((r) => setTimeout(r, 50));
      const c = await call(`${url}/api/generate`, { json: long });
      assertEquals(c.status, 503);
      assertMatch(String(c.body.error), /1 running and 1 queued/);
      assertEquals(c.res.headers.get("retry-after"), "1");
      const [ra, rb] = await Promise.all([a, b]);
      assertEquals(ra.status, 504);
      assertEquals(ra.body.error, "The request timed out after 400 ms");
      assertEquals(rb.status, 504);
      // A stream that runs out of time ends with an error line.
      const res = await fetch(`${url}/api/generate`, {
        method: "POST",
        body: JSON.stringify({ ...long, stream: true }),
      });
      assertEquals(res.status, 200);
      const lines = await ndjson(res);
      assertEquals(lines[lines.length - 1], {
        error: "The request timed out after 400 ms",
      });
      assert(lines.length > 2);
      const m = server.metrics();
      assertMatch(m, /^modelhost_generations_active 0$/m);
      assertMatch(m, /^modelhost_generations_queued 0$/m);
    });
  },
);

conformanceTest(
  "serve: a client that leaves a stream stops its generation",
  async () => {
    await withStories({}, async ({ url, server, logs }) => {
      const res = await fetch(`${url}/api/generate`, {
        method: "POST",
        body: JSON.stringify({
          model: "stories",
          prompt: "Once",
          options: { num_predict: 1500 },
        }),
      });
      const reader = res.body!.getReader();
      await reader.read();
      await reader.cancel();
      for (
        let i = 0;
        i < 100 &&
        !logs.some((l) => l.msg === "request" && l.route === "/api/generate");
        i++
      ) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const line = logs.find((l) =>
        l.msg === "request" && l.route === "/api/generate"
      )!;
      assertEquals(line.error, "The client closed the connection");
      assert((line.tokens as number) < 1500, `${line.tokens} tokens`);
      assertMatch(server.metrics(), /^modelhost_generations_active 0$/m);
    });
  },
);

conformanceTest(
  "serve: the npm ollama client lists, shows, generates and chats",
  async () => {
    const ref = await reference();
    await withStories({}, async ({ url }) => {
      const ollama = new Ollama({ host: url });
      const list = await ollama.list();
      // One entry per stored version; a model's newest answers as :latest.
      assertEquals(list.models.map((m) => m.name), ["stories:latest"]);
      assertEquals(list.models[0].details.family, "llama");
      assertEquals(list.models[0].details.format, "gguf");
      assertEquals(list.models[0].details.parameter_size, "292.80K");
      assertEquals(list.models[0].details.quantization_level, "F32");
      assertEquals(list.models[0].size, 1185376);
      assertMatch(list.models[0].digest, /^[0-9a-f]{64}$/);

      const show = await ollama.show({ model: "stories" });
      const info = show.model_info as unknown as Record<string, unknown>;
      assertEquals(info["general.architecture"], "llama");
      assertEquals(info["llama.context_length"], 2048);
      assertEquals(info["llama.embedding_length"], 64);
      assertEquals(info["llama.block_count"], 5);
      assertEquals(info["general.parameter_count"], 292800);
      assertEquals(show.capabilities, ["completion"]);

      const g = await ollama.generate({
        model: "stories",
        prompt: ref.prompt_text,
        options: { ...GREEDY, num_predict: 64 },
      });
      assertEquals(g.response, ref.greedy_text);
      assertEquals(g.eval_count, 64);

      let streamed = "";
      let final;
      for await (
        const part of await ollama.generate({
          model: "stories",
          prompt: ref.prompt_text,
          stream: true,
          options: { ...GREEDY, num_predict: 64 },
        })
      ) {
        streamed += part.response;
        if (part.done) final = part;
      }
      assertEquals(streamed, ref.greedy_text);
      assertEquals(final?.done_reason, "length");

      let chatText = "";
      for await (
        const part of await ollama.chat({
          model: "stories",
          messages: [{ role: "user", content: "Hello" }],
          stream: true,
          options: { ...GREEDY, num_predict: 16 },
        })
      ) chatText += part.message.content;
      const chat = await ollama.chat({
        model: "stories",
        messages: [{ role: "user", content: "Hello" }],
        options: { ...GREEDY, num_predict: 16 },
      });
      assertEquals(chat.message.role, "assistant");
      assertEquals(chat.message.content, chatText);
      assert(chatText.length > 0);

      assertEquals((await ollama.version()).version.length > 0, true);
      const ps = await ollama.ps();
      assertEquals(ps.models.map((m) => m.name), ["stories:latest"]);
      // expires_at is a real RFC 3339 time (Python's fromisoformat takes it).
      assertEquals(
        (ps.models[0] as unknown as { expires_at: string }).expires_at,
        "9999-12-31T23:59:59Z",
      );
      // keep_alive 0 with no prompt unloads, as in Ollama.
      const un = await ollama.generate({
        model: "stories",
        prompt: "",
        keep_alive: 0,
      });
      assertEquals(un.done_reason, "unload");
      assertEquals((await ollama.ps()).models, []);

      let error: unknown;
      try {
        await ollama.generate({ model: "missing", prompt: "x" });
      } catch (e) {
        error = e;
      }
      assertEquals((error as { status_code?: number }).status_code, 404);
      assertEquals((error as Error).message, 'model "missing" not found');
    });
  },
);
