// The OpenAI-compatible API, through the npm `openai` client: models.list
// and retrieve, chat.completions.create streamed and not (with
// response_format json_schema, n, logprobs, stream_options.include_usage),
// completions.create, embeddings.create; content equal to the library's
// own generation with the same seed; errors in OpenAI's shape; the old
// registry paths under /v1/models answering 308.

import { assert, assertEquals, assertMatch, assertRejects } from "@std/assert";
import OpenAI from "openai";
import { Ajv2020 } from "ajv/dist/2020";
import { loadTransformer } from "../../io/transformer.ts";
import { embed } from "../../models/embed.ts";
import {
  type GenerateOptions,
  generateText,
  promptIds,
} from "../../models/generate.ts";
import type { Transformer } from "../../models/transformer.ts";
import { pickChatTemplate } from "../../tokenizers/chat.ts";
import { jsonConstraint } from "../../tokenizers/constraint.ts";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";
import {
  bundleBytes,
  call,
  predictVectors,
  upload,
  withServer,
} from "./_helpers.ts";

const MESSAGES = [
  { role: "system" as const, content: "You tell stories." },
  { role: "user" as const, content: "Tell me about a cat." },
];

/** OpenAI's sampling defaults, as the server applies them. */
function openaiOptions(
  seed: number,
  more: GenerateOptions = {},
): GenerateOptions {
  return {
    temperature: 1,
    topP: 1,
    topK: 0,
    repetitionPenalty: 1,
    seed,
    ...more,
  };
}

function chatIds(model: Transformer): number[] {
  return promptIds(model, MESSAGES, {
    chatTemplate: pickChatTemplate({
      tokenizer: model.tokenizer,
      family: model.name,
    }),
  });
}

const SCHEMA = {
  type: "object",
  properties: {
    hero: { type: "string", maxLength: 12 },
    age: { type: "integer" },
    friends: {
      type: "array",
      items: { type: "string", maxLength: 8 },
      maxItems: 3,
    },
  },
  required: ["hero", "age", "friends"],
  additionalProperties: false,
};

conformanceTest(
  "serve: the npm openai client lists models, chats (streamed and not, JSON schema), completes and embeds, as the library does",
  async () => {
    await withServer({}, async ({ url }) => {
      const gguf = await Deno.readFile(fixture("gguf/stories260K.gguf"));
      assertEquals((await upload(url, "stories", gguf)).status, 201);
      assertEquals(
        (await upload(url, "mlp", await bundleBytes(await predictVectors())))
          .status,
        201,
      );
      const model = await loadTransformer(fixture("gguf/stories260K.gguf"));
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused" });

      const list = await client.models.list();
      assertEquals(list.data.map((m) => [m.id, m.object, m.owned_by]), [[
        "stories:latest",
        "model",
        "modelhost",
      ]]);
      assertEquals((await client.models.retrieve("stories")).id, "stories");

      // Chat, not streamed: the library's text with the same seed.
      const ids = chatIds(model);
      const lib = await generateText(
        model,
        ids,
        openaiOptions(42, { maxTokens: 40 }),
      );
      const chat = await client.chat.completions.create({
        model: "stories",
        messages: MESSAGES,
        seed: 42,
        max_tokens: 40,
      });
      assertEquals(chat.object, "chat.completion");
      assertMatch(chat.id, /^chatcmpl-/);
      assertEquals(chat.choices[0].message, {
        role: "assistant",
        content: lib.text,
        refusal: null,
      });
      assertEquals(
        chat.choices[0].finish_reason,
        lib.finishReason === "length" ? "length" : "stop",
      );
      assertEquals(chat.usage, {
        prompt_tokens: ids.length,
        completion_tokens: lib.ids.length,
        total_tokens: ids.length + lib.ids.length,
      });

      // Streamed, with usage at the end.
      const stream = await client.chat.completions.create({
        model: "stories",
        messages: MESSAGES,
        seed: 42,
        max_completion_tokens: 40,
        stream: true,
        stream_options: { include_usage: true },
      });
      let streamed = "", finish: string | null = null;
      let usage: unknown;
      for await (const part of stream) {
        streamed += part.choices[0]?.delta?.content ?? "";
        finish = part.choices[0]?.finish_reason ?? finish;
        if (part.usage) usage = part.usage;
      }
      assertEquals(streamed, lib.text);
      assertEquals(finish, chat.choices[0].finish_reason);
      assertEquals(usage, chat.usage);

      // response_format json_schema: the library with the same constraint,
      // and the answer validates (Ajv).
      const libJson = await generateText(
        model,
        ids,
        openaiOptions(7, {
          maxTokens: 200,
          constraint: jsonConstraint(model.tokenizer!, SCHEMA),
        }),
      );
      const format = {
        type: "json_schema" as const,
        json_schema: { name: "hero", schema: SCHEMA, strict: true },
      };
      const structured = await client.chat.completions.create({
        model: "stories",
        messages: MESSAGES,
        seed: 7,
        max_tokens: 200,
        response_format: format,
      });
      const content = structured.choices[0].message.content!;
      assertEquals(content, libJson.text);
      assertEquals(structured.choices[0].finish_reason, "stop");
      assert(new Ajv2020().validate(SCHEMA, JSON.parse(content)), content);
      let streamedJson = "";
      for await (
        const part of await client.chat.completions.create({
          model: "stories",
          messages: MESSAGES,
          seed: 7,
          max_tokens: 200,
          response_format: format,
          stream: true,
        })
      ) streamedJson += part.choices[0]?.delta?.content ?? "";
      assertEquals(streamedJson, content);

      // n choices take seeds seed, seed + 1; logprobs are the library's.
      const two = await client.chat.completions.create({
        model: "stories",
        messages: MESSAGES,
        seed: 42,
        max_tokens: 12,
        n: 2,
        logprobs: true,
        top_logprobs: 2,
      });
      const second = await generateText(
        model,
        ids,
        openaiOptions(43, { maxTokens: 12 }),
      );
      assertEquals(two.choices.map((c) => c.index), [0, 1]);
      assertEquals(two.choices[1].message.content, second.text);
      const lp = two.choices[0].logprobs!.content!;
      assertEquals(lp.length, 12);
      assert(lp.every((t) => t.logprob <= 0 && t.top_logprobs.length === 2));
      assert(
        lp.every((t) => t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob),
      );

      // Completions: raw text, OpenAI's 16-token default, stop strings.
      const text = "Once upon a time";
      const libText = await generateText(
        model,
        text,
        openaiOptions(5, { maxTokens: 16 }),
      );
      const done = await client.completions.create({
        model: "stories",
        prompt: text,
        seed: 5,
      });
      assertEquals(done.object, "text_completion");
      assertEquals(done.choices[0].text, libText.text);
      assertEquals(done.usage?.completion_tokens, libText.ids.length);
      const greedy = await generateText(
        model,
        text,
        openaiOptions(0, { temperature: 0, maxTokens: 64, stop: ["Lily"] }),
      );
      let parts = "";
      for await (
        const part of await client.completions.create({
          model: "stories",
          prompt: text,
          temperature: 0,
          max_tokens: 64,
          stop: "Lily",
          stream: true,
        })
      ) parts += part.choices[0].text;
      assertEquals(parts, greedy.text);
      assertEquals(greedy.finishReason, "stop");

      // Embeddings: the client asks for base64 and decodes it; floats too.
      const lib2 = embed(model, ["Once upon a time", "The cat sat."]);
      const e = await client.embeddings.create({
        model: "stories",
        input: ["Once upon a time", "The cat sat."],
      });
      assertEquals(e.data.map((d) => d.index), [0, 1]);
      for (const [i, d] of e.data.entries()) {
        assertEquals(d.embedding, Array.from(lib2.embeddings[i]));
      }
      assertEquals(e.usage.prompt_tokens, lib2.promptTokens);
      const f = await client.embeddings.create({
        model: "stories",
        input: "Once upon a time",
        encoding_format: "float",
        dimensions: 8,
      });
      assertEquals(f.data[0].embedding.length, 8);
      assertEquals(Math.round(Math.hypot(...f.data[0].embedding) * 1e5), 1e5);

      // Errors in OpenAI's shape, through the client's own error types.
      const missing = await assertRejects(() =>
        client.chat.completions.create({
          model: "nope",
          messages: [{ role: "user", content: "x" }],
        }), OpenAI.NotFoundError);
      assertEquals(missing.error, {
        message: 'model "nope" not found',
        type: "not_found_error",
        param: null,
        code: "model_not_found",
      });
      const bad = await assertRejects(() =>
        client.chat.completions.create({
          model: "stories",
          messages: MESSAGES,
          temperature: 3,
        }), OpenAI.BadRequestError);
      assertEquals((bad.error as { param: string }).param, "temperature");
      const schemaError = await assertRejects(
        () =>
          client.chat.completions.create({
            model: "stories",
            messages: MESSAGES,
            response_format: {
              type: "json_schema",
              json_schema: {
                name: "x",
                schema: { type: "string", pattern: "a+" },
              },
            },
          }),
        OpenAI.BadRequestError,
      );
      assertMatch(schemaError.message, /"pattern" is not supported/);
      const network = await assertRejects(
        () => client.embeddings.create({ model: "mlp", input: "x" }),
        OpenAI.BadRequestError,
      );
      assertMatch(network.message, /not a Llama-family language model/);
    });
  },
);

conformanceTest(
  "serve: the registry's old /v1/models paths answer 308 to /registry/models",
  async () => {
    await withServer({}, async ({ url }) => {
      assertEquals(
        (await upload(url, "mlp", await bundleBytes(await predictVectors())))
          .status,
        201,
      );
      for (
        const [method, path] of [
          ["POST", "/v1/models/mlp/predict"],
          ["GET", "/v1/models/mlp/versions/1"],
          ["DELETE", "/v1/models/mlp"],
          ["POST", "/v1/models/mlp?version=2"],
        ]
      ) {
        const r = await call(`${url}${path}`, { method, redirect: "manual" });
        assertEquals(r.status, 308, `${method} ${path}`);
        const to = path.replace("/v1/models", "/registry/models");
        assertEquals(r.res.headers.get("location"), to);
        assertMatch(String(r.body.error), /moved to \/registry\/models/);
      }
      // A client that follows it gets the registry's answer.
      const v = await predictVectors();
      const p = await call(`${url}/v1/models/mlp/predict`, {
        json: { inputs: v.inputs },
      });
      assertEquals(p.status, 200);
      assertEquals((p.body.outputs as number[][]).length, v.inputs.length);
    });
  },
);
