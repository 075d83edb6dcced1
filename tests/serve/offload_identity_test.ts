// Long texts that the server tokenizes in a worker (serve/_offload_encode.ts)
// get exactly the ids of one-shot encoding on the event loop: checked on
// long varied texts (the tokenizer test corpus, tests/vectors/tokenizers/
// corpus.json, joined and shuffled with a seed) with the tiny GGUF model and
// with Hugging Face folders carrying real tokenizer.json files (byte-level
// BPE, SentencePiece-style BPE, Unigram, WordPiece), and the worker must be
// the one that encoded them.

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { loadTransformer } from "../../io/transformer.ts";
import {
  OFFLOAD_MIN_CHARS,
  offloadEncode,
  registerTokenizerSource,
} from "../../serve/_offload_encode.ts";
import type { Tokenizer } from "../../tokenizers/tokenizer.ts";
import { tinyLlamaGguf } from "./_tiny_llama.ts";

const VECTORS = new URL("../vectors/", import.meta.url);
const CORPUS: string[] = JSON.parse(
  await Deno.readTextFile(new URL("tokenizers/corpus.json", VECTORS)),
).texts;

/** Seeded long texts: the corpus joined three ways, and shuffled pieces. */
function longTexts(seed: number): string[] {
  let s = seed >>> 0 || 1;
  const rand = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
  const out: string[] = [];
  for (const sep of ["", "\n", " "]) {
    let t = "";
    while (t.length < 3 * OFFLOAD_MIN_CHARS) t += CORPUS.join(sep) + sep;
    out.push(t);
  }
  let mixed = "";
  while (mixed.length < 4 * OFFLOAD_MIN_CHARS) {
    const piece = CORPUS[Math.floor(rand() * CORPUS.length)];
    const cut = Math.floor(rand() * (piece.length + 1));
    mixed += rand() < 0.5 ? piece : piece.slice(cut) + piece.slice(0, cut);
    mixed += ["", " ", "\n", "\n\n", "\t", "  "][Math.floor(rand() * 6)];
  }
  out.push(mixed);
  return out;
}

/** Encodes through offloadEncode, counting long encodes done in place. */
async function viaWorker(
  tok: Tokenizer,
  text: string,
  options: Parameters<Tokenizer["encode"]>[1],
): Promise<{ ids: number[]; inPlace: number }> {
  const own = tok.encode;
  let inPlace = 0;
  tok.encode = (t, o) => {
    if (t.length >= OFFLOAD_MIN_CHARS) inPlace++;
    return own.call(tok, t, o);
  };
  try {
    const ids = await offloadEncode(tok, () => tok.encode(text, options));
    return { ids, inPlace };
  } finally {
    tok.encode = own;
  }
}

async function checkIdentity(path: string, label: string): Promise<void> {
  const model = await loadTransformer(path);
  const tok = model.tokenizer!;
  registerTokenizerSource(tok, path);
  for (const [i, text] of longTexts(18).entries()) {
    for (const options of [undefined, { addBos: false, addSpecial: false }]) {
      const oneShot = tok.encode(text, options);
      const { ids, inPlace } = await viaWorker(tok, text, options);
      assertEquals(inPlace, 0, `${label}: text ${i} was encoded in place`);
      assertEquals(ids.length, oneShot.length, `${label}: text ${i}`);
      assert(
        ids.every((x, j) => x === oneShot[j]),
        `${label}: text ${i} differs at token ${
          ids.findIndex((x, j) => x !== oneShot[j])
        }`,
      );
    }
  }
}

Deno.test("offloaded encoding: the tiny GGUF's ids equal one-shot encoding", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelhost-offload-id-" });
  try {
    const path = join(dir, "tiny.gguf");
    await Deno.writeFile(path, await tinyLlamaGguf());
    await checkIdentity(path, "tiny.gguf");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

for (
  const name of [
    "bpe_llama3",
    "bpe_gpt2",
    "bpe_gemma",
    "bpe_spm_metaspace",
    "unigram_t5",
    "wordpiece_bert",
  ]
) {
  Deno.test(`offloaded encoding: ${name} tokenizer.json ids equal one-shot encoding`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "modelhost-offload-id-" });
    try {
      const family = new URL("families/qwen3_gqa/", VECTORS);
      for (const f of ["config.json", "model.safetensors"]) {
        await Deno.copyFile(new URL(f, family), join(dir, f));
      }
      const vec = JSON.parse(
        await Deno.readTextFile(new URL(`tokenizers/${name}.json`, VECTORS)),
      );
      await Deno.writeTextFile(
        join(dir, "tokenizer.json"),
        JSON.stringify(vec.tokenizer),
      );
      await checkIdentity(dir, name);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
