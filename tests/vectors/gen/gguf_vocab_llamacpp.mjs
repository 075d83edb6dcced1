// llama.cpp's own tokenization of the shared corpus for the vocab-only GGUF
// files in tests/vectors/gguf_vocab/ (written by gguf_vocab_t5.py), through
// node-llama-cpp's prebuilt CPU binaries. Run from the repository root with
// node-llama-cpp installed where Node can resolve it (NODE_PATH):
//
//   NODE_PATH=/tmp/nlc/node_modules node tests/vectors/gen/gguf_vocab_llamacpp.mjs
//
// Writes tests/vectors/gguf_vocab/<name>.llamacpp.json: ids without BOS/EOS
// (special tokens not parsed) and the detokenized text of those ids. With
// arguments DIR TEXTS.json it reads the GGUF files of DIR and the texts of
// TEXTS.json instead (gguf_vocab_pre.py uses that) and writes beside them.
import { createRequire } from "node:module";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";

const require = createRequire(import.meta.url);
const { getLlama } = await import(require.resolve("node-llama-cpp"));
const [argDir, argTexts] = process.argv.slice(2);
const dir = argDir
  ? new URL(`file://${argDir.replace(/\/?$/, "/")}`)
  : new URL("../gguf_vocab/", import.meta.url);
const texts = argTexts ? JSON.parse(readFileSync(argTexts, "utf8")) : JSON.parse(
  execFileSync("python3", ["-c", "import sys,json; sys.path.insert(0, 'tests/vectors/gen'); from _tokenizers_corpus import TEST_TEXTS; print(json.dumps(TEST_TEXTS))"]).toString(),
);
const llama = await getLlama({ gpu: false, build: "never" });
const main = require.resolve("node-llama-cpp");
const pkg = JSON.parse(readFileSync(main.replace(/dist\/.*$/, "package.json"), "utf8"));
for (const file of readdirSync(dir).filter((f) => f.endsWith(".gguf"))) {
  const model = await llama.loadModel({ modelPath: new URL(file, dir).pathname, vocabOnly: true });
  const encode = texts.map((t) => [...model.tokenize(t, false)]);
  const decode = encode.map((ids) => model.detokenize(ids));
  writeFileSync(
    new URL(file.replace(/\.gguf$/, ".llamacpp.json"), dir),
    JSON.stringify({ generator: `tests/vectors/gen/gguf_vocab_llamacpp.mjs (node-llama-cpp ${pkg.version}, llama.cpp ${llama.llamaCppRelease?.release ?? "?"})`, encode, decode }),
  );
  console.log(file, encode.length);
  await model.dispose();
}
