// `modelhost inspect` (cli/inspect.ts): a sharded SafeTensors folder as one
// model, and the architecture and tensor roles of the real stories260K.

import { assertEquals, assertStringIncludes } from "@std/assert";
import { join } from "@std/path";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";
import { runCli } from "./_cli.ts";

const run = runCli;

Deno.test("cli: inspect and validate open a sharded SafeTensors folder as one model", async () => {
  const { FIXTURES, fixture } = await import("../_helpers/fixtures.ts");
  if (!FIXTURES) return;
  const dir = fixture("safetensors/julia/sharded");
  const ins = await run(["inspect", dir, "--json"]);
  assertEquals(ins.code, 0, ins.err);
  const rep = JSON.parse(ins.out);
  assertEquals(rep.format, "safetensors");
  const index = JSON.parse(
    await Deno.readTextFile(join(dir, "model.safetensors.index.json")),
  );
  assertEquals(
    rep.models[0].tensors.map((t: { name: string }) => t.name).sort(),
    Object.keys(index.weight_map).sort(),
  );
  const val = await run(["validate", dir]);
  assertEquals([val.code, val.out], [
    0,
    `${join(dir, "model.safetensors.index.json")}: valid`.replace(
      /^.*: valid$/,
      `${dir}: valid`,
    ),
  ]);
});

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
