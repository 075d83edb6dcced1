// `modelhost convert`, `inspect`, `generate` and `serve` on the family
// checkpoints of tests/vectors/families/ (written by transformers'
// save_pretrained, see tests/vectors/gen/model_families.py): the Hugging
// Face folder and its GGUF conversion both generate transformers' greedy
// tokens for a text prompt, with the text the tokenizers library decodes;
// inspect names the family.

import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { join } from "@std/path";
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import { call, withServer } from "../serve/_helpers.ts";
import { runCli } from "./_cli.ts";

interface Case {
  name: string;
  family: string;
  text_ids: number[];
  text_greedy: number[];
  text_greedy_text: string;
}

const V = JSON.parse(
  await Deno.readTextFile(join(REPO_ROOT, "tests/vectors/model_families.json")),
) as { text_prompt: string; cases: Case[] };
const folder = (c: Case) => join(REPO_ROOT, "tests/vectors/families", c.name);

/** The first checkpoint of each family. */
const ONE_PER_FAMILY = V.cases.filter((c, i) =>
  V.cases.findIndex((x) => x.family === c.family) === i
);

Deno.test("cli: convert, inspect and generate each family from its HF folder and its GGUF", async () => {
  const dir = await Deno.makeTempDir({ prefix: "cli-families-" });
  try {
    for (const c of V.cases) {
      const gguf = join(dir, `${c.name}.gguf`);
      const conv = await runCli([
        "convert",
        folder(c),
        "--to",
        "gguf",
        "-o",
        gguf,
      ]);
      assertEquals(conv.code, 0, conv.err);
      for (const src of [folder(c), gguf]) {
        const r = await runCli([
          "generate",
          src,
          "-p",
          V.text_prompt,
          "--greedy",
          "-n",
          String(c.text_greedy.length),
          "--json",
        ]);
        assertEquals(r.code, 0, r.err);
        const out = JSON.parse(r.out);
        const what = `${c.name} from ${src === gguf ? "GGUF" : "HF"}`;
        assertEquals(out.promptIds, c.text_ids, what);
        assertEquals(out.ids, c.text_greedy, what);
        assertEquals(out.text, c.text_greedy_text, what);
      }
      if (ONE_PER_FAMILY.includes(c)) {
        for (const src of [folder(c), gguf]) {
          const r = await runCli(["inspect", src]);
          assertEquals(r.code, 0, r.err);
          assertStringIncludes(r.out, `architecture: ${c.family} (`);
        }
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("serve: each family answers /v1/completions from its HF folder and its GGUF", async () => {
  await withServer({}, async ({ url }) => {
    for (const c of ONE_PER_FAMILY) {
      for (const model of [`${c.name}-hf`, `${c.name}-gguf`]) {
        const r = await call(`${url}/v1/completions`, {
          json: {
            model,
            prompt: V.text_prompt,
            max_tokens: c.text_greedy.length,
            temperature: 0,
          },
        });
        assertEquals(r.status, 200, `${model}: ${JSON.stringify(r.body)}`);
        const body = r.body as {
          choices: { text: string }[];
          usage: { prompt_tokens: number; completion_tokens: number };
        };
        assertEquals(body.choices[0].text, c.text_greedy_text, model);
        assertEquals(body.usage.prompt_tokens, c.text_ids.length, model);
        assertEquals(body.usage.completion_tokens, c.text_greedy.length, model);
      }
    }
  }, async (dir) => {
    for (const c of ONE_PER_FAMILY) {
      const to = join(dir, `${c.name}-hf`);
      await Deno.mkdir(to);
      for await (const e of Deno.readDir(folder(c))) {
        await Deno.copyFile(join(folder(c), e.name), join(to, e.name));
      }
      const r = await runCli([
        "convert",
        folder(c),
        "--to",
        "gguf",
        "-o",
        join(dir, `${c.name}-gguf.gguf`),
      ]);
      assert(r.code === 0, r.err);
    }
  });
});

Deno.test("serve: padded vocabulary ids generate and have logprobs with empty text", async () => {
  const c = V.cases.find((x) => x.name === "qwen3_mha_padded")!;
  await withServer({}, async ({ url }) => {
    const r = await call(`${url}/v1/completions`, {
      json: {
        model: "padded",
        prompt: V.text_prompt,
        max_tokens: 3,
        temperature: 0,
        logprobs: 3,
        logit_bias: { "310": 100 },
      },
    });
    assertEquals(r.status, 200, JSON.stringify(r.body));
    const choice = (r.body.choices as {
      text: string;
      logprobs: { tokens: string[] };
    }[])[0];
    assertEquals(choice.text, "");
    assertEquals(choice.logprobs.tokens, ["", "", ""]);
  }, async (dir) => {
    const to = join(dir, "padded");
    await Deno.mkdir(to);
    for await (const e of Deno.readDir(folder(c))) {
      await Deno.copyFile(join(folder(c), e.name), join(to, e.name));
    }
  });
});
