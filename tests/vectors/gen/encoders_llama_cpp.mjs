// Embeddings of the tiny test encoders from llama.cpp (node-llama-cpp's
// prebuilt CPU binaries), run on our GGUF export of each folder
// (convertEncoderToGguf, written by tests/vectors/gen/encoders_gguf.ts):
// for every text of the folder's expected.json (after its prompt), the token ids llama.cpp
// makes and the pooled vector it returns (not normalized).
// tests/models/encoder_llama_cpp_test.ts compares.
//
// Run from the repository root:
//   deno run -A tests/vectors/gen/encoders_gguf.ts /tmp/enc-gguf
//   NODE_PATH=/work/nlc/node_modules node tests/vectors/gen/encoders_llama_cpp.mjs /tmp/enc-gguf
// Writes tests/vectors/encoders_llama_cpp.json.

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { getLlama } = await import(require.resolve("node-llama-cpp"));
const dir = process.argv[2] ?? "/tmp/enc-gguf";
const FOLDERS = [
  "bert-mean",
  "bert-cls",
  "nomic-bert-mean",
  "modernbert-mean",
  "roberta-mean",
  "xlm-roberta-unigram",
];
// llama.cpp's converter's own file of a folder (encoders_llama_convert.py):
// its token ids too, to show where its vocabulary keys differ from ours
const CONVERTED = ["xlm-roberta-unigram"];

const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const models = {};
for (const f of FOLDERS) {
  const { texts, prompt_name } = JSON.parse(
    readFileSync(`tests/vectors/encoders/${f}/expected.json`, "utf8"),
  );
  // sentence-transformers' prompt, put before the text as it does
  const prompt = prompt_name
    ? JSON.parse(
      readFileSync(
        `tests/vectors/encoders/${f}/config_sentence_transformers.json`,
        "utf8",
      ),
    ).prompts[prompt_name]
    : "";
  const model = await llama.loadModel({ modelPath: join(dir, `${f}.gguf`) });
  const ctx = await model.createEmbeddingContext({
    contextSize: 64,
    threads: 1,
  });
  const converted = CONVERTED.includes(f)
    ? await llama.loadModel({
      modelPath: `tests/vectors/encoders_llama_convert/${f}.gguf`,
      vocabOnly: true,
    })
    : undefined;
  const rows = [];
  for (const text of texts) {
    const ids = Array.from(model.tokenize(prompt + text));
    // llama.cpp's tokenizer with add_special (llama-embedding, llama-server)
    // puts <s> before a SentencePiece (UGM) text and </s> after it, as the
    // file's add_bos_token / add_eos_token say (llama-vocab.cpp); the
    // embedding helper of node-llama-cpp adds only the end token for UGM
    // vocabularies (T5's rule), so those get the full list here
    const input = model.vocabularyType === "ugm"
      ? [model.tokens.bos, ...ids, model.tokens.eos]
      : prompt + text;
    const e = await ctx.getEmbeddingFor(input);
    rows.push({
      text: prompt + text,
      ids,
      embedding: Array.from(e.vector),
      ...(converted
        ? { converter_ids: Array.from(converted.tokenize(prompt + text)) }
        : {}),
    });
  }
  await converted?.dispose();
  models[f] = rows;
  await ctx.dispose();
  await model.dispose();
}
const version = JSON.parse(
  readFileSync(
    join(dirname(require.resolve("node-llama-cpp")), "..", "package.json"),
    "utf8",
  ),
).version;
writeFileSync(
  "tests/vectors/encoders_llama_cpp.json",
  JSON.stringify({
    generator: "tests/vectors/gen/encoders_llama_cpp.mjs",
    library: `node-llama-cpp ${version}`,
    models,
  }) + "\n",
);
console.log(`wrote ${Object.keys(models).length} models`);
