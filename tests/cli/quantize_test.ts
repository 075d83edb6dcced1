// `modelhost quantize` (cli/quantize.ts) against llama.cpp's
// llama-quantize: the same bytes, and each tensor's reported error
// recomputed from llama.cpp's file.

import { assert, assertAlmostEquals, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { defaultRegistry, toFloat32 } from "../../mod.ts";
import { openModel } from "../../io/open.ts";
import { fixture, FIXTURES } from "../_helpers/fixtures.ts";
import { runCli } from "./_cli.ts";

const run = runCli;

Deno.test({
  name:
    "conformance: cli quantize gives llama-quantize's bytes and reports per-tensor error",
  ignore: !FIXTURES,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const out = join(dir, "q8.gguf");
      const r = await run([
        "quantize",
        fixture("reference/quant/synthetic-llama-f32.gguf"),
        out,
        "q8_0",
        "--json",
      ]);
      assertEquals(r.code, 0, r.err);
      const rep = JSON.parse(r.out);
      assertEquals(rep.type, "Q8_0");
      const reg = defaultRegistry();
      const ours = await openModel(reg, out),
        ref = await openModel(
          reg,
          fixture("reference/quant/synthetic-llama-Q8_0.gguf"),
        );
      try {
        const mo = ours.file.models[0].tensors, mr = ref.file.models[0].tensors;
        assertEquals(mo.names().sort(), mr.names().sort());
        for (const n of mr.names()) {
          assertEquals(mo.info(n).dtype, mr.info(n).dtype, n);
          assertEquals((await mo.load(n)).bytes, (await mr.load(n)).bytes, n);
        }
        // the report's error of each tensor, recomputed here from llama.cpp's file
        for (const row of rep.tensors) {
          const src = toFloat32(
            await (await openModel(
              reg,
              fixture("reference/quant/synthetic-llama-f32.gguf"),
            )).file.models[0].tensors.load(row.name),
          );
          const q = toFloat32(await mr.load(row.name));
          let se = 0;
          for (let i = 0; i < src.length; i++) se += (src[i] - q[i]) ** 2;
          assertAlmostEquals(row.rmse, Math.sqrt(se / src.length), 1e-7);
          assert(row.cosine > 0.9999, `${row.name} cosine ${row.cosine}`);
        }
      } finally {
        ours.close();
        ref.close();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
