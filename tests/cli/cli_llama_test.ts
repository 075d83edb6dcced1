// The Llama-family side of the CLI on the real stories260K model: generate,
// a Hugging Face folder converted to GGUF with an Ollama Modelfile, and the
// architecture inspect detects.

import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { join } from "@std/path";
import { memorySource } from "../../core/sources.ts";
import { readGguf } from "../../formats/gguf/mod.ts";
import { saveSafetensors } from "../../io/safetensors.ts";
import { ggufToHf } from "../../models/mod.ts";
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

conformanceTest(
  "cli inspect: detects stories260K's architecture and every tensor's role",
  async () => {
    const r = await runCli([
      "inspect",
      fixture("gguf/stories260K.gguf"),
      "--json",
    ]);
    assertEquals(r.code, 0, r.err);
    const m = JSON.parse(r.out).models[0];
    // dim 64, 5 layers, 8 heads / 4 KV heads, vocab 512 (the fixture MANIFEST)
    assertEquals([m.architecture.family, m.architecture.naming], [
      "llama",
      "gguf",
    ]);
    const c = m.architecture.config;
    assertEquals([
      c.hiddenSize,
      c.numLayers,
      c.numHeads,
      c.numKvHeads,
      c.vocabSize,
    ], [64, 5, 8, 4, 512]);
    assertEquals(
      m.tensors.find((t: { name: string }) =>
        t.name === "blk.3.ffn_down.weight"
      ).role,
      "mlp_down",
    );
    assertEquals(m.architecture.roles.unknown ?? 0, 0);
    const text =
      (await runCli(["inspect", fixture("gguf/stories260K.gguf")])).out;
    assertStringIncludes(
      text,
      "architecture: llama (gguf names): 5 layers, hidden 64, 8 heads (4 KV)",
    );
  },
);

conformanceTest(
  "cli convert: a Hugging Face folder to llama.cpp-ready GGUF with a Modelfile; same tokens",
  async () => {
    const ref: Reference = JSON.parse(
      await Deno.readTextFile(fixture("llama/stories260K-reference.json")),
    );
    const dir = await Deno.makeTempDir();
    try {
      // Build the folder from the GGUF with the library (inverse rotary permutation).
      const hf = await ggufToHf(
        await readGguf(
          memorySource(await Deno.readFile(fixture("gguf/stories260K.gguf"))),
        ),
      );
      const folder = join(dir, "stories-hf");
      await Deno.mkdir(folder);
      await saveSafetensors(join(folder, "model.safetensors"), hf.model);
      await Deno.writeTextFile(
        join(folder, "config.json"),
        JSON.stringify(hf.config),
      );
      if (hf.tokenizer) {
        await Deno.writeTextFile(
          join(folder, "tokenizer.json"),
          JSON.stringify(hf.tokenizer),
        );
      }
      if (hf.tokenizerConfig) {
        await Deno.writeTextFile(
          join(folder, "tokenizer_config.json"),
          JSON.stringify(hf.tokenizerConfig),
        );
      }
      const arch =
        JSON.parse((await runCli(["inspect", folder, "--json"])).out).models[0]
          .architecture;
      assertEquals([arch.family, arch.naming], ["llama", "hf"]);

      const out = join(dir, "stories.gguf");
      const c = await runCli([
        "convert",
        folder,
        "--to",
        "gguf",
        "-o",
        out,
        "--modelfile",
      ]);
      assertEquals(c.code, 0, c.err);
      const meta =
        JSON.parse((await runCli(["inspect", out, "--json"])).out).models[0]
          .metadata;
      assertEquals(meta["general.architecture"], "llama");
      assertEquals(meta["tokenizer.ggml.model"], "llama");
      const modelfile = await Deno.readTextFile(join(dir, "Modelfile"));
      assert(modelfile.split("\n").includes("FROM ./stories.gguf"), modelfile);
      for (const model of [folder, out]) {
        const g = JSON.parse(
          (await runCli([
            "generate",
            model,
            "-p",
            "",
            "--greedy",
            "-n",
            "200",
            "--json",
          ])).out,
        );
        assertEquals(g.ids, ref.token_ids, model);
      }
      const again = await runCli([
        "convert",
        folder,
        "--to",
        "gguf",
        "-o",
        join(dir, "other.gguf"),
        "--modelfile",
      ]);
      assertEquals(
        again.code,
        1,
        "the Modelfile is not overwritten without --force",
      );
      assertStringIncludes(again.err, "Modelfile exists; pass --force");
      const wrong = await runCli([
        "convert",
        folder,
        "--to",
        "bundle",
        "-o",
        join(dir, "x.bundle.json"),
        "--modelfile",
      ]);
      assertEquals(wrong.code, 2);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
