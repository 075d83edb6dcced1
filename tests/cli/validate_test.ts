// `modelhost validate` (cli/validate.ts): every problem listed with exit 1,
// and clear answers for missing files, bad plugins and unknown formats.

import { assertEquals, assertStringIncludes } from "@std/assert";
import { join } from "@std/path";
import { makeTiny, PLUGIN, runCli } from "./_cli.ts";

const run = runCli;

Deno.test("cli: validate lists every problem and exits 1; missing files and bad plugins are clear", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { path } = await makeTiny(dir);
    const ok = await run(["validate", path, "--plugin", PLUGIN]);
    assertEquals([ok.code, ok.out], [0, `${path}: valid`]);
    const bytes = await Deno.readFile(path);
    const cut = join(dir, "cut.tiny");
    await Deno.writeFile(cut, bytes.subarray(0, bytes.length - 20));
    const bad = await run([
      "validate",
      cut,
      path,
      "--json",
      "--plugin",
      PLUGIN,
    ]);
    assertEquals(bad.code, 1);
    const res = JSON.parse(bad.out);
    assertEquals(res.map((r: { valid: boolean }) => r.valid), [false, true]);
    assertEquals(
      res[0].problems.length,
      2,
      "both tensors past the cut are reported",
    );
    assertStringIncludes(res[0].problems[0], 'tensor "l.weight"');
    const gone = await run([
      "validate",
      join(dir, "nope.tiny"),
      "--plugin",
      PLUGIN,
    ]);
    assertEquals(gone.code, 1);
    assertStringIncludes(gone.out, "file not found");
    const nf = await run(["inspect", join(dir, "nope.tiny")]);
    assertEquals(nf.code, 1);
    assertStringIncludes(nf.err, "error: file not found:");
    const badPlugin = await run([
      "formats",
      "--plugin",
      join(dir, "missing_plugin.ts"),
    ]);
    assertEquals(badPlugin.code, 1);
    assertStringIncludes(badPlugin.err, "Cannot load plugin");
    const unknownFmt = await run(["inspect", join(dir, "a.tiny")]);
    assertEquals(unknownFmt.code, 1);
    assertStringIncludes(unknownFmt.err, "No format for");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
