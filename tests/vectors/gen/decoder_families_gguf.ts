/**
 * Writes modelhost's GGUF export (F32) of every tiny family checkpoint in
 * tests/vectors/families/ into a folder, for
 * decoder_families_llama_cpp.mjs to run with llama.cpp.
 *
 * Run: deno run -A tests/vectors/gen/decoder_families_gguf.ts /tmp/families-gguf
 *
 * @module
 */

import { convertHfToGguf } from "../../../io/mod.ts";

const dir = Deno.args[0];
if (!dir) throw new Error("usage: decoder_families_gguf.ts OUT_DIR");
await Deno.mkdir(dir, { recursive: true });
const vec = JSON.parse(
  await Deno.readTextFile("tests/vectors/decoder_families.json"),
);
for (const c of vec.cases as { name: string; folder: string }[]) {
  // general.name "phi3" makes llama.cpp look for Phi-3's special tokens,
  // which the tiny vocabulary lacks: a neutral name
  const n = await convertHfToGguf(c.folder, `${dir}/${c.name}.gguf`, {
    name: "tiny",
  });
  console.log(c.name, n);
}
