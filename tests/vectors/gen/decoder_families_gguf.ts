/**
 * Writes modelhost's GGUF export (F32) of every tiny family checkpoint in
 * tests/vectors/families/ into a folder, for
 * decoder_families_llama_cpp.mjs to run with llama.cpp.
 *
 * Run: deno run -A tests/vectors/gen/decoder_families_gguf.ts /tmp/families-gguf
 * (F32, `<case>.gguf`), or with a second argument `Q8_0` for the Q8_0
 * export (`<case>.q8_0.gguf`).
 *
 * @module
 */

import { convertHfToGguf } from "../../../io/mod.ts";

const dir = Deno.args[0];
if (!dir) throw new Error("usage: decoder_families_gguf.ts OUT_DIR [Q8_0]");
const quant = Deno.args[1] === "Q8_0" ? "Q8_0" : undefined;
await Deno.mkdir(dir, { recursive: true });
const vec = JSON.parse(
  await Deno.readTextFile("tests/vectors/decoder_families.json"),
);
for (const c of vec.cases as { name: string; folder: string }[]) {
  // general.name "phi3" makes llama.cpp look for Phi-3's special tokens,
  // which the tiny vocabulary lacks: a neutral name
  const file = `${dir}/${c.name}${quant ? ".q8_0" : ""}.gguf`;
  const n = await convertHfToGguf(c.folder, file, {
    name: "tiny",
    ...(quant ? { quantize: quant } : {}),
  });
  console.log(c.name, n);
}
