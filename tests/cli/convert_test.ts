// `modelhost convert` (cli/convert.ts): --quant/--dtype mapped to each
// format's option, sharded output, and a Hugging Face folder converted to
// llama.cpp-ready GGUF with an Ollama Modelfile. Every readable → writable
// pair is in convert_pairs_test.ts.

import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { join } from "@std/path";
import { defaultRegistry } from "../../mod.ts";
import { memorySource } from "../../core/sources.ts";
import { readGguf } from "../../formats/gguf/mod.ts";
import { openModel } from "../../io/open.ts";
import { saveSafetensors } from "../../io/safetensors.ts";
import { ggufToHf } from "../../models/mod.ts";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";
import { runCli, savedNetwork } from "./_cli.ts";

const run = runCli;

interface Reference {
  token_ids: number[];
  expected_text: string;
}

Deno.test("cli convert: --quant/--dtype map to each format's option; choices are checked", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { path } = await savedNetwork(dir);
    const gg = join(dir, "net.gguf");
    const c = await run(["convert", path, "-o", gg, "--quant", "q8_0"]);
    assertEquals(c.code, 0, c.err);
    const reg = defaultRegistry();
    const back = await openModel(reg, gg);
    const types = Object.fromEntries(
      back.file.models[0].tensors.names().map((
        n,
      ) => [n, back.file.models[0].tensors.info(n).dtype]),
    );
    back.close();
    // 2-D weights quantized, 1-D (biases, norm) kept, as llama.cpp does
    assertEquals(types["layers.0.weight"], "Q8_0");
    assertEquals(types["layers.1.weight"], "F32");
    assertEquals(types["layers.0.bias"], "F32");
    const st = join(dir, "half.safetensors");
    assertEquals(
      (await run(["convert", gg, "-o", st, "--dtype", "f16"])).code,
      0,
    );
    const half = await openModel(reg, st);
    assertEquals(
      half.file.models[0].tensors.info("layers.1.weight").dtype,
      "F16",
    );
    half.close();
    const bad = await run([
      "convert",
      path,
      "-o",
      join(dir, "x.safetensors"),
      "--dtype",
      "q4_0",
    ]);
    assertEquals(bad.code, 2);
    assertStringIncludes(
      bad.err,
      'format "safetensors" cannot store q4_0; choices: f32, f16, bf16',
    );
    const typo = await run([
      "convert",
      path,
      "-o",
      join(dir, "x.gguf"),
      "--quant",
      "q8_O",
    ]);
    assertEquals(typo.code, 2);
    assertStringIncludes(typo.err, "did you mean q8_0?");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli convert: --max-shard-size writes shards and an index that open as one model", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { path } = await savedNetwork(dir);
    const outDir = join(dir, "sharded");
    await Deno.mkdir(outDir);
    const c = await run([
      "convert",
      path,
      "-o",
      join(outDir, "model.safetensors"),
      "--max-shard-size",
      "4096",
    ]);
    assertEquals(c.code, 0, c.err);
    const names = [...Deno.readDirSync(outDir)].map((e) => e.name).sort();
    assert(names.includes("model.safetensors.index.json"), names.join(","));
    assert(
      names.filter((n) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(n))
        .length >= 2,
      names.join(","),
    );
    const a = JSON.parse((await run(["inspect", path, "--json"])).out);
    const b = JSON.parse((await run(["inspect", outDir, "--json"])).out);
    assertEquals(b.models[0].tensorCount, a.models[0].tensorCount);
    assertEquals(b.models[0].params, a.models[0].params);
    assertEquals((await run(["validate", outDir])).code, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

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

Deno.test("cli convert: read-only format options are neither listed nor taken as write flags", async () => {
  const reg = defaultRegistry();
  const readOnly = reg.formats().flatMap((f) =>
    (f.options ?? []).filter((o) => o.use === "read").map((o) => [f.name, o])
  );
  // the SafeTensors and bundle readers' --verify are read-only options
  assert(readOnly.length >= 2, `read-only options: ${readOnly.length}`);
  const help = await run(["convert", "--help"]);
  assertEquals(help.code, 0, help.err);
  assert(!help.out.includes("--verify"), help.out);
  const dir = await Deno.makeTempDir();
  try {
    const { path } = await savedNetwork(dir);
    const out = join(dir, "net.safetensors");
    const c = await run([
      "convert",
      path,
      "--to",
      "safetensors",
      "-o",
      out,
      "--verify",
    ]);
    assert(c.code !== 0, "a read-only option given to convert is refused");
    assertStringIncludes(c.err, "verify");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
