import { assertEquals, assertRejects } from "@std/assert";
import { join } from "@std/path";
import { loadTransformer, openHfCheckpoint } from "../../io/transformer.ts";

Deno.test("loadTransformer: clear errors for folders and files that are no checkpoint", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await assertRejects(
      () => loadTransformer(dir),
      TypeError,
      "no config.json (a Hugging Face folder) and no .gguf files",
    );
    await Deno.writeTextFile(join(dir, "notes.txt"), "hello");
    await assertRejects(
      () => loadTransformer(join(dir, "notes.txt")),
      TypeError,
      "not a GGUF file",
    );
    await Deno.writeTextFile(
      join(dir, "config.json"),
      JSON.stringify({ model_type: "mamba", hidden_size: 8 }),
    );
    await Deno.writeFile(
      join(dir, "model.safetensors"),
      new Uint8Array([2, 0, 0, 0, 0, 0, 0, 0, 0x7b, 0x7d]),
    );
    await assertRejects(
      () => loadTransformer(dir),
      TypeError,
      'config.json: model_type "mamba" is not supported; supported: llama',
    );
    await Deno.writeTextFile(join(dir, "tokenizer_config.json"), "{oops");
    await assertRejects(
      () => openHfCheckpoint(dir),
      SyntaxError,
      "Cannot parse",
    );
    await Deno.remove(join(dir, "tokenizer_config.json"));
    const ck = await openHfCheckpoint(dir);
    assertEquals([ck.tokenizer, ck.config.model_type], [undefined, "mamba"]);
    ck.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
