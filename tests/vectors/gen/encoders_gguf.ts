// Writes our GGUF export (convertEncoderToGguf) of the tiny test encoders
// into a folder, for tests/vectors/gen/encoders_llama_cpp.mjs.
//   deno run -A tests/vectors/gen/encoders_gguf.ts /tmp/enc-gguf
import { convertEncoderToGguf } from "../../../io/encoder.ts";

const out = Deno.args[0] ?? "/tmp/enc-gguf";
await Deno.mkdir(out, { recursive: true });
for (
  const f of [
    "bert-mean",
    "bert-cls",
    "nomic-bert-mean",
    "modernbert-mean",
    "roberta-mean",
    "xlm-roberta-unigram",
  ]
) {
  const dir = new URL(`../encoders/${f}`, import.meta.url).pathname;
  await convertEncoderToGguf(dir, `${out}/${f}.gguf`);
}
console.log(`wrote 6 files to ${out}`);
