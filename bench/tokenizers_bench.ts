/**
 * Tokenizer throughput on ~300 KB of English-like text (words drawn from
 * the GPT-2 vocabulary with a Zipf-like skew, seeded, with punctuation,
 * numbers, accents, CJK and emoji sprinkled in):
 *
 * - byte-level BPE (the GPT-2 and DeepSeek LLM vocabularies, GGUF), with the
 *   word cache warm and with it off (every word merged from scratch);
 * - score-driven SentencePiece BPE (the Llama 2 vocabulary, GGUF), cache
 *   warm and off;
 * - decoding the ids back.
 *
 * Baselines: the pre-tokenizer pass alone (regex split) for BPE, the
 * space escaping alone for SentencePiece. MB/s = 0.3 / (time per run in s).
 *
 * Needs the fixtures (`../shared/fixtures`); without them the benches are
 * skipped. Run: `deno bench -A bench/tokenizers_bench.ts`.
 */

import { createRng } from "../core/rng.ts";
import { ggufMetadataRecord, readGgufHeader } from "../formats/gguf/mod.ts";
import { fileSource } from "../io/file.ts";
import { createTokenizer, type Tokenizer } from "../tokenizers/mod.ts";
import {
  ggufPreTokenizer,
  patternSteps,
  runSteps,
} from "../tokenizers/pre_tokenize.ts";
import { FIXTURES } from "../tests/_helpers/fixtures.ts";

const TEXT_BYTES = 300_000;

async function metadata(name: string): Promise<Record<string, unknown>> {
  const src = await fileSource(
    `${FIXTURES}/gguf/llama.cpp-vocab/ggml-vocab-${name}.gguf`,
  );
  try {
    return ggufMetadataRecord(await readGgufHeader(src));
  } finally {
    src.close();
  }
}

function makeText(words: string[], seed: number): string {
  const rng = createRng(seed);
  const extras = [
    ". ",
    ", ",
    "! ",
    "? ",
    ".\n\n",
    " (",
    ") ",
    "'s ",
    " 2024 ",
    " — ",
    " café ",
    " 東京 ",
    " 🦙 ",
  ];
  let s = "";
  while (s.length < TEXT_BYTES) {
    s += words[Math.floor(words.length * Math.pow(rng.next(), 3))];
    s += rng.next() < 0.15 ? extras[rng.int(extras.length)] : " ";
  }
  return s;
}

const ignore = FIXTURES === undefined;
let text = "";
let gpt2: Tokenizer | undefined;
let gpt2Cold: Tokenizer | undefined;
let deepseekCold: Tokenizer | undefined;
let llama: Tokenizer | undefined;
let llamaCold: Tokenizer | undefined;
let gpt2Ids: number[] = [];
let llamaIds: number[] = [];
if (!ignore) {
  const g = await metadata("gpt-2");
  const words = (g["tokenizer.ggml.tokens"] as string[])
    .filter((t) => /^Ġ[a-z]{2,}$/.test(t))
    .map((t) => t.slice(1));
  text = makeText(words, 7);
  gpt2 = createTokenizer(g);
  gpt2Cold = createTokenizer(g, { wordCache: 0 });
  deepseekCold = createTokenizer(await metadata("deepseek-llm"), {
    wordCache: 0,
  });
  const l = await metadata("llama-spm");
  llama = createTokenizer(l);
  llamaCold = createTokenizer(l, { wordCache: 0 });
  gpt2Ids = gpt2.encode(text);
  llamaIds = llama.encode(text);
  console.log(
    `text: ${
      new TextEncoder().encode(text).length
    } bytes; gpt-2 ${gpt2Ids.length} tokens, llama ${llamaIds.length} tokens`,
  );
}
const gpt2Steps = patternSteps(ggufPreTokenizer("gpt-2").patterns);

Deno.bench({
  name: "pre-tokenize only (GPT-2 regex)",
  group: "bpe encode 300 KB",
  baseline: true,
  ignore,
  fn: () => {
    runSteps(gpt2Steps, text, true);
  },
});
Deno.bench({
  name: "gpt-2 encode, word cache warm",
  group: "bpe encode 300 KB",
  ignore,
  fn: () => {
    gpt2!.encode(text);
  },
});
Deno.bench({
  name: "gpt-2 encode, word cache off",
  group: "bpe encode 300 KB",
  ignore,
  fn: () => {
    gpt2Cold!.encode(text);
  },
});
Deno.bench({
  name: "deepseek-llm encode (6 patterns), word cache off",
  group: "bpe encode 300 KB",
  ignore,
  fn: () => {
    deepseekCold!.encode(text);
  },
});

Deno.bench({
  name: "escape spaces only",
  group: "spm encode 300 KB",
  baseline: true,
  ignore,
  fn: () => {
    (" " + text).replaceAll(" ", "\u2581");
  },
});
Deno.bench({
  name: "llama-spm encode, segment cache warm",
  group: "spm encode 300 KB",
  ignore,
  fn: () => {
    llama!.encode(text);
  },
});
Deno.bench({
  name: "llama-spm encode, segment cache off",
  group: "spm encode 300 KB",
  ignore,
  fn: () => {
    llamaCold!.encode(text);
  },
});

Deno.bench({
  name: "gpt-2 decode",
  group: "decode 300 KB",
  baseline: true,
  ignore,
  fn: () => {
    gpt2!.decode(gpt2Ids);
  },
});
Deno.bench({
  name: "llama-spm decode",
  group: "decode 300 KB",
  ignore,
  fn: () => {
    llama!.decode(llamaIds);
  },
});
