// Our encoder GGUF files as llama.cpp runs them: the vectors in
// tests/vectors/encoders_llama_cpp.json are llama.cpp's (node-llama-cpp)
// embeddings of our GGUF export of the tiny test encoders, written by
// tests/vectors/gen/encoders_llama_cpp.mjs. The same export loaded here
// must give llama.cpp's tokens and vectors.
import { assert, assertEquals } from "@std/assert";
import { fromFileUrl } from "@std/path";
import { convertEncoderToGguf, loadEncoderModel } from "../../io/encoder.ts";
import { cosineSimilarity, embedSentences } from "../../models/sentence.ts";

const DIR = fromFileUrl(new URL("../vectors/", import.meta.url));

interface Row {
  text: string;
  ids: number[];
  embedding: number[];
}

const ref = JSON.parse(
  await Deno.readTextFile(`${DIR}encoders_llama_cpp.json`),
) as { library: string; models: Record<string, Row[]> };

for (const [name, rows] of Object.entries(ref.models)) {
  Deno.test(`encoder ${name}: our GGUF export equals llama.cpp's run of it (${ref.library})`, async () => {
    const exp = JSON.parse(
      await Deno.readTextFile(`${DIR}encoders/${name}/expected.json`),
    ) as { texts: string[]; prompt_name: string | null };
    const out = await Deno.makeTempFile({ suffix: ".gguf" });
    try {
      await convertEncoderToGguf(`${DIR}encoders/${name}`, out);
      const m = await loadEncoderModel(out);
      const tok = m.encoder.tokenizer!;
      const prompt = exp.prompt_name ? m.pipeline.prompts[exp.prompt_name] : "";
      assertEquals(rows.map((r) => r.text), exp.texts.map((t) => prompt + t));
      const r = embedSentences(m.encoder, m.pipeline, exp.texts, {
        promptName: exp.prompt_name ?? undefined,
      });
      for (const [i, row] of rows.entries()) {
        // llama.cpp's tokenize() adds no special tokens; ours adds [CLS]/[SEP]
        assertEquals(
          tok.encode(row.text).slice(1, -1),
          row.ids,
          `${name} text ${i}: ids`,
        );
        // llama.cpp returns the pooled vector unnormalized; the folders'
        // pipelines end with Normalize
        const v = r.embeddings[i];
        const norm = Math.hypot(...row.embedding);
        const want = row.embedding.map((x) => x / norm);
        let worst = 0;
        for (let j = 0; j < v.length; j++) {
          worst = Math.max(worst, Math.abs(v[j] - want[j]));
        }
        // llama.cpp computes in its own f32 kernels (tanh-free GELU tables,
        // other summation orders): 5e-4 on unit vectors of width 32
        assert(worst <= 5e-4, `${name} text ${i}: max |diff| ${worst}`);
        assert(
          cosineSimilarity(v, want) >= 0.99999,
          `${name} text ${i}: cosine ${cosineSimilarity(v, want)}`,
        );
      }
    } finally {
      await Deno.remove(out);
    }
  });
}
