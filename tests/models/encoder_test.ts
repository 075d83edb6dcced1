// Encoders against sentence-transformers and transformers: the vectors in
// tests/vectors/encoders/ come from tests/vectors/gen/encoders.py.
import {
  assert,
  assertAlmostEquals,
  assertEquals,
  assertRejects,
  assertThrows,
} from "@std/assert";
import {
  convertEncoderToGguf,
  type EncoderModel,
  loadEncoderModel,
  readSentencePipelineDir,
} from "../../io/encoder.ts";
import { loadTransformer } from "../../io/transformer.ts";
import {
  cosineSimilarity,
  embedSentences,
  rerankScores,
} from "../../models/sentence.ts";
import { embed } from "../../models/embed.ts";
import { encoderConfigFromHf } from "../../models/encoder_config.ts";
import {
  ENCODER_CASES,
  ENCODERS_DIR,
  type ExpectedEmbeddings,
  readExpected,
} from "../_helpers/encoder_vectors.ts";

function check(m: EncoderModel, exp: ExpectedEmbeddings, tol: number): void {
  const tok = m.encoder.tokenizer!;
  const prefix = exp.prompt_name ? m.pipeline.prompts[exp.prompt_name] : "";
  for (const [i, t] of exp.texts.entries()) {
    assertEquals(tok.encode(prefix + t), exp.ids[i], `ids of text ${i}`);
  }
  const r = embedSentences(m.encoder, m.pipeline, exp.texts, {
    promptName: exp.prompt_name ?? undefined,
  });
  for (const [i, v] of r.embeddings.entries()) {
    const want = exp.embeddings[i];
    let worst = 0;
    for (let j = 0; j < v.length; j++) {
      worst = Math.max(worst, Math.abs(v[j] - want[j]));
    }
    assert(worst <= tol, `text ${i}: max |diff| ${worst} > ${tol}`);
    assert(cosineSimilarity(v, want) >= 0.99999, `text ${i}: cosine`);
  }
}

for (const name of ENCODER_CASES) {
  const exp = await readExpected(name);
  Deno.test(`encoder ${name}: HF folder equals sentence-transformers (padded batch)`, async () => {
    check(await loadEncoderModel(`${ENCODERS_DIR}${name}`), exp, 1e-4);
  });
  Deno.test(`encoder ${name}: our GGUF of it equals sentence-transformers`, async () => {
    const out = await Deno.makeTempFile({ suffix: ".gguf" });
    try {
      await convertEncoderToGguf(`${ENCODERS_DIR}${name}`, out);
      check(await loadEncoderModel(out), exp, 1e-4);
    } finally {
      await Deno.remove(out);
    }
  });
}

Deno.test("encoder: batch size does not change vectors (packed rows)", async () => {
  const m = await loadEncoderModel(`${ENCODERS_DIR}bert-mean`);
  const exp = await readExpected("bert-mean");
  const all = embedSentences(m.encoder, m.pipeline, exp.texts).embeddings;
  const one = embedSentences(m.encoder, m.pipeline, exp.texts, { batchSize: 1 })
    .embeddings;
  for (const [i, v] of all.entries()) {
    for (let j = 0; j < v.length; j++) {
      assertAlmostEquals(v[j], one[i][j], 1e-6);
    }
  }
});

for (const name of ["bert-reranker", "roberta-reranker"]) {
  Deno.test(`cross-encoder ${name}: scores equal transformers' (folder and our GGUF; one pair and a packed batch)`, async () => {
    const exp = JSON.parse(
      await Deno.readTextFile(`${ENCODERS_DIR}${name}/expected.json`),
    ) as { pairs: [string, string][]; ids: number[][]; scores: number[] };
    const m = await loadEncoderModel(`${ENCODERS_DIR}${name}`);
    const gguf = await Deno.makeTempFile({ suffix: ".gguf" });
    try {
      await convertEncoderToGguf(`${ENCODERS_DIR}${name}`, gguf);
      const g = await loadEncoderModel(gguf);
      for (const [i, [q, d]] of exp.pairs.entries()) {
        const [s] = rerankScores(m.encoder, q, [d]);
        assertAlmostEquals(s, exp.scores[i], 1e-4, `pair ${i}`);
        const [sg] = rerankScores(g.encoder, q, [d]);
        assertAlmostEquals(sg, exp.scores[i], 1e-4, `GGUF pair ${i}`);
      }
    } finally {
      await Deno.remove(gguf);
    }
    // all documents of one query in one packed batch
    const q = exp.pairs[0][0];
    const idx = exp.pairs.flatMap((p, i) => p[0] === q ? [i] : []);
    const many = rerankScores(m.encoder, q, idx.map((i) => exp.pairs[i][1]));
    for (const [k, i] of idx.entries()) {
      assertAlmostEquals(many[k], exp.scores[i], 1e-4, `batched pair ${i}`);
    }
  });
}

Deno.test("embed(): an encoder model pools as sentence-transformers does", async () => {
  const exp = await readExpected("roberta-mean");
  const m = await loadEncoderModel(`${ENCODERS_DIR}roberta-mean`);
  const r = embed(m, exp.texts);
  assertEquals(r.embeddings.length, exp.texts.length);
  for (const [i, v] of r.embeddings.entries()) {
    assert(cosineSimilarity(v, exp.embeddings[i]) >= 0.99999);
  }
  assertEquals(r.promptTokens, exp.ids.reduce((a, b) => a + b.length, 0));
});

for (const [quantize, minCos] of [["F16", 0.99999], ["Q8_0", 0.999]] as const) {
  Deno.test(`encoder: a ${quantize} GGUF runs on the fast kernels close to sentence-transformers`, async () => {
    const exp = await readExpected("bert-mean");
    const out = await Deno.makeTempFile({ suffix: ".gguf" });
    try {
      await convertEncoderToGguf(`${ENCODERS_DIR}bert-mean`, out, { quantize });
      const m = await loadEncoderModel(out);
      const r = embedSentences(m.encoder, m.pipeline, exp.texts);
      for (const [i, v] of r.embeddings.entries()) {
        const c = cosineSimilarity(v, exp.embeddings[i]);
        assert(c >= minCos, `${quantize} text ${i}: cosine ${c}`);
      }
    } finally {
      await Deno.remove(out);
    }
  });
}

Deno.test("decoder embedding model (qwen2, last-token pooling, prompt): equals sentence-transformers on a padded batch", async () => {
  const exp = await readExpected("qwen2-last");
  const dir = `${ENCODERS_DIR}qwen2-last`;
  const model = await loadTransformer(dir);
  const pipeline = await readSentencePipelineDir(dir);
  if (!pipeline) throw new Error("qwen2-last has no modules.json");
  assert(pipeline.pooling === "lasttoken" && pipeline.normalize);
  const prefix = pipeline.prompts[exp.prompt_name!];
  for (const [i, t] of exp.texts.entries()) {
    assertEquals(model.tokenizer!.encode(prefix + t), exp.ids[i], `text ${i}`);
  }
  const r = embedSentences(model, pipeline, exp.texts, {
    promptName: exp.prompt_name!,
  });
  for (const [i, v] of r.embeddings.entries()) {
    for (let j = 0; j < v.length; j++) {
      assertAlmostEquals(v[j], exp.embeddings[i][j], 1e-4, `text ${i}`);
    }
  }
});

Deno.test("encoder: bad configs and files are refused with typed errors naming the problem", async () => {
  assertThrows(
    () =>
      encoderConfigFromHf({
        model_type: "bert",
        vocab_size: 10,
        hidden_size: 30,
        num_hidden_layers: 1,
        num_attention_heads: 4,
        intermediate_size: 8,
      }),
    RangeError,
    "hidden_size 30 does not split into 4 heads",
  );
  assertThrows(
    () => encoderConfigFromHf({ model_type: "gpt2" }),
    TypeError,
    'model_type "gpt2" is not supported',
  );
  const tmp = await Deno.makeTempDir();
  try {
    // a folder whose modules.json lists a module that cannot run here
    for await (const e of Deno.readDir(`${ENCODERS_DIR}bert-mean`)) {
      if (e.isFile) {
        await Deno.copyFile(
          `${ENCODERS_DIR}bert-mean/${e.name}`,
          `${tmp}/${e.name}`,
        );
      }
    }
    await Deno.writeTextFile(
      `${tmp}/modules.json`,
      JSON.stringify([{ idx: 0, path: "", type: "x.Transformer" }, {
        idx: 1,
        path: "2_Dense",
        type: "sentence_transformers.models.Dense",
      }]),
    );
    await assertRejects(
      () => loadEncoderModel(tmp),
      TypeError,
      '"sentence_transformers.models.Dense" is not supported',
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
