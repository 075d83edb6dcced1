// `modelhost generate` (cli/generate.ts) on the real stories260K model:
// greedy tokens equal the reference, seeds repeat, usage errors.

import { assertEquals } from "@std/assert";
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
          "-t",
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
