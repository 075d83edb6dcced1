/**
 * Writes our GGUF export of every checkpoint in tests/vectors/families/
 * (F32, and Q8_0 and Q4_0 for the mixture-of-experts ones) into a folder, for
 * model_families_llamacpp.mjs to run in llama.cpp:
 *
 *   deno run -A tests/vectors/gen/model_families_gguf.ts /tmp/families-gguf
 *
 * @module
 */

import { join } from "@std/path";
import { convertHfToGguf } from "../../../io/transformer.ts";

const out = Deno.args[0];
if (!out) throw new TypeError("usage: model_families_gguf.ts OUT_DIR");
await Deno.mkdir(out, { recursive: true });
const root = "tests/vectors/families";
for await (const e of Deno.readDir(root)) {
  if (!e.isDirectory) continue;
  const dir = join(root, e.name);
  await convertHfToGguf(dir, join(out, `${e.name}.f32.gguf`));
  const cfg = JSON.parse(await Deno.readTextFile(join(dir, "config.json")));
  if (cfg.model_type === "mixtral" || cfg.model_type === "qwen3_moe") {
    for (const q of ["Q8_0", "Q4_0"] as const) {
      await convertHfToGguf(dir, join(out, `${e.name}.${q.toLowerCase()}.gguf`), {
        quantize: q,
      });
    }
  }
  console.log(e.name);
}
