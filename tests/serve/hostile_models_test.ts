// Issue 18, defects 1 and 2 from the server's side (the refusals are the
// library's build check, models/check.ts): an upload is linked into
// the registry only if the model it holds builds, and models already in the
// folder that cannot build are listed with their error and answered with a
// typed error, never loaded (a block count of 2^31-1 used to grow the heap
// until V8 died, on every restart).

import { assert, assertEquals, assertMatch } from "@std/assert";
import { join } from "@std/path";
import { call, listing, upload, withServer } from "./_helpers.ts";
import { TINY, tinyLlamaGguf } from "./_tiny_llama.ts";

const BIG = 2 ** 31 - 1;

/** Hyperparameters that contradict the tensors, and what the refusal names. */
const HOSTILE: [string, Record<string, unknown>, RegExp][] = [
  [
    "block_count 2^31-1",
    { "llama.block_count": BIG },
    /llama\.block_count is 2147483647, above the limit 1024/,
  ],
  [
    "block_count 1 on 2 blocks",
    { "llama.block_count": 1 },
    /llama\.block_count says 1 blocks, the tensors have 2 blocks/,
  ],
  [
    "block_count 3 on 2 blocks",
    { "llama.block_count": 3 },
    /llama\.block_count says 3 blocks, the tensors have 2 blocks/,
  ],
  [
    "head_count 0",
    { "llama.attention.head_count": 0 },
    /head_count must be a positive integer, got 0/,
  ],
  [
    "head_count 2^31-1",
    { "llama.attention.head_count": BIG },
    /head_count|head size|heads/,
  ],
  [
    "embedding_length 2^31-1",
    { "llama.embedding_length": BIG },
    /hidden size is 2147483647|embedding_length/,
  ],
  [
    "rope.dimension_count 2^31-1",
    { "llama.rope.dimension_count": BIG },
    /rope\.dimension_count 2147483647 differs from the head size 4/,
  ],
  // Found by the server fuzzer: this one was stored (201), then listed as
  // invalid, and loading it failed.
  [
    "no vocabulary",
    { "tokenizer.ggml.tokens": undefined },
    /tokenizer\.ggml\.tokens must be an array of strings, found nothing/,
  ],
  [
    "feed_forward_length wrong",
    { "llama.feed_forward_length": 17 },
    /gate_proj\.weight has shape \[16, 8\], expected \[17, 8\]/,
  ],
];

Deno.test("serve: an upload whose hyperparameters contradict its tensors is refused with the reason, nothing stored", async () => {
  await withServer({}, async ({ url, dir }) => {
    for (const [label, md, why] of HOSTILE) {
      const r = await upload(url, "bad", await tinyLlamaGguf(md));
      assertEquals(r.status, 400, `${label}: ${JSON.stringify(r.body)}`);
      assertMatch(String(r.body.error), /^Upload of "bad" refused: /, label);
      assertMatch(String(r.body.error), why, label);
      assertEquals(await listing(dir), [], label);
    }
    // The same file with its own hyperparameters builds and is stored.
    const ok = await upload(url, "tiny", await tinyLlamaGguf());
    assertEquals(ok.status, 201, JSON.stringify(ok.body));
    assertEquals(ok.body.kind, "llm");
    assertEquals(
      (ok.body.llm as Record<string, unknown>).block_count,
      TINY.blocks,
    );
    const gen = await call(`${url}/api/generate`, {
      json: {
        model: "tiny",
        prompt: "ab",
        stream: false,
        options: { num_predict: 3, temperature: 0 },
      },
    });
    assertEquals(gen.status, 200, JSON.stringify(gen.body));
  });
});

Deno.test("serve: models in the folder that cannot build list with an error and answer typed errors; the server stays up", async () => {
  await withServer({}, async ({ url }) => {
    const list = await call(`${url}/registry/models`);
    assertEquals(list.status, 200);
    const models = list.body.models as {
      name: string;
      versions: Record<string, unknown>[];
    }[];
    assertEquals(models.map((m) => m.name), ["blocks", "heads", "rope"]);
    for (const m of models) {
      assertEquals(m.versions[0].kind, "invalid", m.name);
      assertMatch(String(m.versions[0].error), /blocks|head|rope/, m.name);
    }
    for (const m of ["blocks", "heads", "rope"]) {
      const g = await call(`${url}/api/generate`, {
        json: { model: m, prompt: "a", stream: false },
      });
      assertEquals(g.status, 500, JSON.stringify(g.body));
      assertMatch(
        String(g.body.error),
        new RegExp(`^model "${m}" cannot be loaded: `),
      );
      const o = await call(`${url}/v1/chat/completions`, {
        json: { model: m, messages: [{ role: "user", content: "a" }] },
      });
      assert(o.status >= 400, JSON.stringify(o.body));
      assertMatch(JSON.stringify(o.body), /cannot be loaded/);
    }
    // Not an Ollama tag: a model that cannot run is not offered.
    const tags = await call(`${url}/api/tags`);
    assertEquals(tags.body.models, []);
    assertEquals((await call(`${url}/healthz`)).status, 200);
  }, async (dir) => {
    await Deno.writeFile(
      join(dir, "blocks.gguf"),
      await tinyLlamaGguf({ "llama.block_count": BIG }),
    );
    await Deno.writeFile(
      join(dir, "heads.gguf"),
      await tinyLlamaGguf({ "llama.attention.head_count": 0 }),
    );
    await Deno.writeFile(
      join(dir, "rope.gguf"),
      await tinyLlamaGguf({ "llama.rope.dimension_count": BIG }),
    );
  });
});
