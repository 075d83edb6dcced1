/**
 * The CLI reads every IQ / TQ / FP4 / Q1_0 / Q2_0 tensor: `inspect` lists
 * them, `convert` to SafeTensors F32 gives ggml's own dequantized values
 * (SHA-256 from `tests/vectors/gen/iq_quants.py`) and F16 their rounding.
 */

import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { encodeHex } from "@std/encoding";
import { join } from "@std/path";
import { defaultRegistry } from "../../mod.ts";
import { openModel } from "../../io/open.ts";
import { toFloat32 } from "../../core/tensor.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import { runCli } from "./_cli.ts";

const GGUF = join(REPO_ROOT, "tests/vectors/iq_quants.gguf");
const info = JSON.parse(
  await Deno.readTextFile(join(REPO_ROOT, "tests/vectors/iq_quants.json")),
) as { types: Record<string, { deq_sha256: string }> };

async function sha256(a: Uint8Array): Promise<string> {
  const b = new Uint8Array(a.byteLength);
  b.set(a);
  return encodeHex(new Uint8Array(await crypto.subtle.digest("SHA-256", b)));
}

Deno.test("cli: inspect and convert read every ggml block type as ggml does", async () => {
  const ins = await runCli(["inspect", GGUF]);
  assertEquals(ins.code, 0, ins.err);
  for (const t of Object.keys(info.types)) assertStringIncludes(ins.out, t);
  const dir = await Deno.makeTempDir();
  const reg = defaultRegistry();
  const src = await openModel(reg, GGUF);
  try {
    for (const dtype of ["f32", "f16"]) {
      const out = join(dir, `${dtype}.safetensors`);
      const c = await runCli(["convert", GGUF, "-o", out, "--dtype", dtype]);
      assertEquals(c.code, 0, c.err);
      const m = await openModel(reg, out);
      try {
        const idx = m.file.models[0].tensors;
        for (const [type, exp] of Object.entries(info.types)) {
          const t = await idx.load(type);
          assertEquals(t.dtype, dtype.toUpperCase(), type);
          if (dtype === "f32") {
            assertEquals(await sha256(t.bytes), exp.deq_sha256, type);
          } else {
            const ref = toFloat32(await src.file.models[0].tensors.load(type));
            const got = toFloat32(t);
            for (let i = 0; i < ref.length; i++) {
              assert(
                Object.is(got[i], Math.fround(new Float16Array([ref[i]])[0])),
                `${type}[${i}]`,
              );
            }
          }
        }
      } finally {
        m.close();
      }
    }
  } finally {
    src.close();
    await Deno.remove(dir, { recursive: true });
  }
});
