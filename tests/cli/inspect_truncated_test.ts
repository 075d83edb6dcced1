/**
 * Issue 18, defect 11 (CLI part): `inspect` of a truncated GGUF shows its
 * intact header and says what data is missing (it used to fail outright),
 * and `convert --quantize`, listed in the help, is accepted (it used to be
 * an unknown flag).
 */

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { memoryTensorIndex } from "../../core/model.ts";
import { tensorFromF32 } from "../../core/tensor.ts";
import { writeGgufBytes } from "../../formats/gguf/mod.ts";
import { runCli } from "./_cli.ts";

async function gguf(): Promise<Uint8Array> {
  const t = (name: string, k: number) =>
    tensorFromF32(
      name,
      Float32Array.from({ length: 512 }, (_, i) => Math.sin(i * k)),
      [2, 256],
    );
  return await writeGgufBytes({
    models: [{
      id: "m",
      metadata: { "general.name": "cut", "test.answer": 42 },
      tensors: memoryTensorIndex([t("a.weight", 1), t("b.weight", 2)]),
    }],
  });
}

Deno.test("inspect: a truncated GGUF shows its header and names the missing data", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const whole = await gguf();
    const path = join(dir, "cut.gguf");
    await Deno.writeFile(path, whole.subarray(0, whole.length - 1000));
    const r = await runCli(["inspect", path]);
    assertEquals(r.code, 1);
    assert(r.out.includes("test.answer: 42"), r.out);
    assert(r.out.includes("a.weight") && r.out.includes("b.weight"), r.out);
    assert(
      r.err.includes('tensor "b.weight" needs 2048 bytes') &&
        r.err.includes("the file is truncated"),
      r.err,
    );
    const j = JSON.parse((await runCli(["inspect", path, "--json"])).out);
    assertEquals(j.models[0].tensorCount, 2);
    assert(j.error.includes("truncated"));
    // a file cut inside its header is still an error without a report
    await Deno.writeFile(path, whole.subarray(0, 40));
    const h = await runCli(["inspect", path]);
    assertEquals(h.code, 1);
    assertEquals(h.out, "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("convert --quantize Q8_0 (the GGUF option the help lists) writes what --dtype q8_0 writes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const src = join(dir, "in.gguf");
    await Deno.writeFile(src, await gguf());
    const a = join(dir, "a.gguf"), b = join(dir, "b.gguf");
    const r = await runCli(["convert", src, "-o", a, "--quantize", "Q8_0"]);
    assertEquals(r.code, 0, r.err);
    assertEquals(
      (await runCli(["convert", src, "-o", b, "--dtype", "q8_0"])).code,
      0,
    );
    assertEquals(await Deno.readFile(a), await Deno.readFile(b));
    const j = JSON.parse((await runCli(["inspect", a, "--json"])).out);
    assertEquals(
      j.models[0].tensors.map((t: { dtype: string }) => t.dtype),
      ["Q8_0", "Q8_0"],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
