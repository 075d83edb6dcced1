// Our encoder GGUF files as llama.cpp runs them: the vectors in
// tests/vectors/encoders_llama_cpp.json are llama.cpp's (node-llama-cpp)
// embeddings of our GGUF export of the tiny test encoders, written by
// tests/vectors/gen/encoders_llama_cpp.mjs. The same export loaded here
// must give llama.cpp's tokens and vectors.
import { assert, assertEquals } from "@std/assert";
import { fromFileUrl } from "@std/path";
import { convertEncoderToGguf, loadEncoderModel } from "../../io/encoder.ts";
import { openModel } from "../../io/open.ts";
import { defaultRegistry } from "../../mod.ts";
import { cosineSimilarity, embedSentences } from "../../models/sentence.ts";
import { createTokenizer } from "../../tokenizers/mod.ts";

const DIR = fromFileUrl(new URL("../vectors/", import.meta.url));

interface Row {
  text: string;
  ids: number[];
  embedding: number[];
  /** llama.cpp's ids on the converter's own file of the folder. */
  converter_ids?: number[];
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

// GGUF files written by llama.cpp's own converter (convert_hf_to_gguf.py,
// F16 weights) from the same folders, by
// tests/vectors/gen/encoders_llama_convert.py: their tokens equal the
// Hugging Face tokenizer's, their vectors sentence-transformers' (within
// F16's rounding) and those of our own F16 export of the folder.
const CONVERTED = ["bert-mean", "nomic-bert-mean", "modernbert-mean"];
for (const name of CONVERTED) {
  Deno.test(`encoder ${name}: llama.cpp's converter's GGUF loads and equals sentence-transformers`, async () => {
    const exp = JSON.parse(
      await Deno.readTextFile(`${DIR}encoders/${name}/expected.json`),
    ) as { texts: string[]; ids: number[][]; embeddings: number[][] };
    const m = await loadEncoderModel(
      `${DIR}encoders_llama_convert/${name}.gguf`,
    );
    assertEquals(m.pipeline.pooling, "mean");
    const tok = m.encoder.tokenizer!;
    for (const [i, t] of exp.texts.entries()) {
      assertEquals(tok.encode(t), exp.ids[i], `${name} text ${i}: ids`);
    }
    const got = embedSentences(m.encoder, m.pipeline, exp.texts).embeddings;
    const out = await Deno.makeTempFile({ suffix: ".gguf" });
    let ours: Float32Array[];
    try {
      await convertEncoderToGguf(`${DIR}encoders/${name}`, out, {
        quantize: "F16",
      });
      const o = await loadEncoderModel(out);
      ours = embedSentences(o.encoder, o.pipeline, exp.texts).embeddings;
    } finally {
      await Deno.remove(out);
    }
    for (const [i, v] of got.entries()) {
      let worst = 0;
      let same = 0;
      for (let j = 0; j < v.length; j++) {
        worst = Math.max(worst, Math.abs(v[j] - exp.embeddings[i][j]));
        same = Math.max(same, Math.abs(v[j] - ours[i][j]));
      }
      // F16 weights: 1e-3 against F32 sentence-transformers
      assert(worst <= 1e-3, `${name} text ${i}: max |diff| ${worst}`);
      assert(cosineSimilarity(v, exp.embeddings[i]) >= 0.99999);
      assert(same <= 1e-6, `${name} text ${i}: vs our F16 export ${same}`);
    }
  });
}

// XLM-R's SentencePiece (Unigram) vocabulary: our GGUF export writes the
// `tokenizer.ggml.*` keys llama.cpp's converter writes for the folder
// (tests/vectors/encoders_llama_convert/xlm-roberta-unigram.gguf), value
// for value, but for remove_extra_whitespaces: the converter takes it from
// a decoding flag (false here), we from the pre-tokenizer that collapses
// whitespace (true). llama.cpp's ids on the converter's file therefore
// differ from the Hugging Face tokenizer's exactly on texts with runs of
// whitespace or tabs, where ours (above) equal them.
Deno.test("encoder xlm-roberta-unigram: our t5 vocabulary keys equal llama.cpp's converter's", async () => {
  const name = "xlm-roberta-unigram";
  const theirs = await openModel(
    defaultRegistry(),
    `${DIR}encoders_llama_convert/${name}.gguf`,
  );
  const out = await Deno.makeTempFile({ suffix: ".gguf" });
  try {
    await convertEncoderToGguf(`${DIR}encoders/${name}`, out);
    const ours = await openModel(defaultRegistry(), out);
    try {
      const a = theirs.file.models[0].metadata as Record<string, unknown>;
      const b = ours.file.models[0].metadata as Record<string, unknown>;
      const keys = Object.keys(a).filter((k) => k.startsWith("tokenizer."));
      assertEquals(a["tokenizer.ggml.model"], "t5");
      assert(keys.length >= 18, `${keys.length} tokenizer keys`);
      const plain = (v: unknown) =>
        ArrayBuffer.isView(v)
          ? Array.from(v as unknown as ArrayLike<number>)
          : typeof v === "bigint"
          ? Number(v)
          : v;
      for (const k of keys) {
        if (k === "tokenizer.ggml.remove_extra_whitespaces") continue;
        assertEquals(plain(b[k]), plain(a[k]), k);
      }
      assertEquals(a["tokenizer.ggml.remove_extra_whitespaces"], false);
      assertEquals(b["tokenizer.ggml.remove_extra_whitespaces"], true);
      // our own t5 reader of those keys gives the Hugging Face ids too
      const exp = JSON.parse(
        await Deno.readTextFile(`${DIR}encoders/${name}/expected.json`),
      ) as { texts: string[]; ids: number[][] };
      const t5 = createTokenizer(b, { name: "GGUF metadata" });
      for (const [i, t] of exp.texts.entries()) {
        assertEquals(t5.encode(t), exp.ids[i], `text ${i}: our t5 reader`);
      }
      // llama.cpp on the converter's file: equal but for whitespace runs
      for (const [i, row] of ref.models[name].entries()) {
        const same = JSON.stringify(row.converter_ids) ===
          JSON.stringify(exp.ids[i].slice(1, -1));
        assertEquals(same, !/\s\s|\t/.test(row.text), `text ${i}`);
      }
    } finally {
      ours.close();
    }
  } finally {
    theirs.close();
    await Deno.remove(out);
  }
});
