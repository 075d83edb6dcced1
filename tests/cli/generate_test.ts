// `modelhost generate` (cli/generate.ts) on the real stories260K model:
// greedy tokens equal the reference, seeds repeat, usage errors.

import { assert, assertEquals, assertMatch } from "@std/assert";
import { Ajv2020 } from "ajv/dist/2020";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";
import { runCli } from "./_cli.ts";

interface Reference {
  token_ids: number[];
  expected_text: string;
}

conformanceTest(
  "cli generate: 200 greedy tokens of stories260K equal the reference ids and text",
  async () => {
    const ref: Reference = JSON.parse(
      await Deno.readTextFile(fixture("llama/stories260K-reference.json")),
    );
    const r = await runCli([
      "generate",
      fixture("gguf/stories260K.gguf"),
      "--prompt",
      "",
      "--greedy",
      "-n",
      "200",
      "--json",
    ]);
    assertEquals(r.code, 0, r.err);
    const out = JSON.parse(r.out);
    assertEquals(out.promptIds, [1], "an empty prompt is BOS alone");
    assertEquals(out.ids, ref.token_ids);
    assertEquals(out.text, ref.expected_text);
    // Without --json the text is printed (collected here, streamed on a terminal).
    const plain = await runCli([
      "generate",
      fixture("gguf/stories260K.gguf"),
      "-p",
      "",
      "--greedy",
      "-n",
      "200",
    ]);
    assertEquals(plain.out, ref.expected_text);
    const seeded = async () =>
      JSON.parse(
        (await runCli([
          "generate",
          fixture("gguf/stories260K.gguf"),
          "-p",
          "Once",
          "--temp",
          "0.9",
          "--top-k",
          "20",
          "--seed",
          "5",
          "-n",
          "30",
          "--json",
        ])).out,
      ).ids;
    assertEquals(await seeded(), await seeded(), "same seed, same tokens");
    const missing = await runCli([
      "generate",
      fixture("gguf/stories260K.gguf"),
    ]);
    assertEquals([missing.code, missing.err.split("\n")[0]], [
      2,
      "error: missing --prompt",
    ]);
  },
);

conformanceTest(
  "cli generate --json-schema: the text validates (Ajv); bad schemas are usage errors",
  async () => {
    const dir = await Deno.makeTempDir();
    try {
      const schema = {
        type: "object",
        properties: {
          hero: { type: "string", maxLength: 12 },
          age: { type: "integer" },
          pets: { type: "array", items: { enum: ["cat", "dog"] }, maxItems: 3 },
        },
        required: ["hero", "age", "pets"],
      };
      await Deno.writeTextFile(`${dir}/s.json`, JSON.stringify(schema));
      for (const seed of ["1", "2", "3"]) {
        const r = await runCli([
          "generate",
          fixture("gguf/stories260K.gguf"),
          "-p",
          "Once upon a time",
          "--json-schema",
          `${dir}/s.json`,
          "--temp",
          "1",
          "--seed",
          seed,
          "-n",
          "300",
          "--json",
        ]);
        assertEquals(r.code, 0, r.err);
        const out = JSON.parse(r.out);
        assertEquals(out.finishReason, "stop");
        assert(new Ajv2020().validate(schema, JSON.parse(out.text)), out.text);
      }
      const json = await runCli([
        "generate",
        fixture("gguf/stories260K.gguf"),
        "-p",
        "Once",
        "--json-schema",
        "json",
        "-n",
        "400",
        "--greedy",
      ]);
      assertEquals(json.code, 0, json.err);
      await Deno.writeTextFile(
        `${dir}/bad.json`,
        '{"type": "string", "pattern": "a"}',
      );
      const bad = await runCli([
        "generate",
        fixture("gguf/stories260K.gguf"),
        "-p",
        "x",
        "--json-schema",
        `${dir}/bad.json`,
      ]);
      assertEquals(bad.code, 2);
      assertMatch(bad.err, /"pattern" is not supported/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

conformanceTest(
  "cli generate: llama.cpp's spellings -m, --temp, --n-predict, -t, -c give the reference tokens",
  async () => {
    const ref: Reference = JSON.parse(
      await Deno.readTextFile(fixture("llama/stories260K-reference.json")),
    );
    const r = await runCli([
      "generate",
      "-m",
      fixture("gguf/stories260K.gguf"),
      "-p",
      "",
      "--temp",
      "0",
      "--n-predict",
      "40",
      "-t",
      "2",
      "--json",
    ]);
    assertEquals(r.code, 0, r.err);
    assertEquals(JSON.parse(r.out).ids, ref.token_ids.slice(0, 40));
    // -c caps prompt + output: BOS and 24 generated tokens fill 25
    const c = await runCli([
      "generate",
      "-m",
      fixture("gguf/stories260K.gguf"),
      "-p",
      "",
      "--temp",
      "0",
      "-c",
      "25",
      "--json",
    ]);
    assertEquals(c.code, 0, c.err);
    assertEquals(JSON.parse(c.out).ids, ref.token_ids.slice(0, 24));
    const full = await runCli([
      "generate",
      "-m",
      fixture("gguf/stories260K.gguf"),
      "-p",
      "Once upon a time",
      "-c",
      "3",
    ]);
    assertEquals(full.code, 2);
    assertMatch(full.err, /the prompt is \d+ tokens, the context \(-c\) 3/);
  },
);
