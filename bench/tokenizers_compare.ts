/**
 * Tokenizer throughput side by side, in one run (`deno task bench:tokenizers`):
 * modelhost's `tokenizerFromJson`, the pure-JS `@huggingface/tokenizers`
 * and transformers.js's tokenizer (`@huggingface/transformers`, tokenizer
 * only), each given the same `tokenizer.json` object:
 *
 * - GPT-2 (byte-level BPE, 50k merges), DeepSeek LLM (byte-level BPE with
 *   six split patterns), Llama 2 (SentencePiece BPE with byte fallback) and
 *   BGE (BERT WordPiece): the llama.cpp vocabulary fixtures written as the
 *   models' `tokenizer.json` by `tokenizerJsonFromGguf`;
 * - T5-style Unigram with a Precompiled charsmap: the small vocabulary of
 *   `tests/vectors/tokenizers/unigram_t5.json`.
 *
 * Text: the repository's Markdown docs and the multilingual test corpus
 * (code, CJK, RTL, emoji, full-width forms), as one long text and as many
 * short texts (its lines). Each side encodes with special tokens parsed
 * and none added (the Hugging Face defaults but for the added ones), and
 * decodes its ids; the ids of the three are compared first (mismatches are
 * printed). Sides alternate within each round; the table gives each side's
 * best round in MB/s of UTF-8 input and the median of the per-round ratios.
 *
 * Options: `--rounds N` (default 7), `--only gpt2,deepseek,llama2,bert,t5`.
 * The fixtures (`../shared/fixtures`) are needed for all but T5.
 */

import { parseArgs } from "@std/cli";
import { Tokenizer as HfTokenizer } from "@huggingface/tokenizers";
import { PreTrainedTokenizer } from "@huggingface/transformers";
import { ggufMetadataRecord, readGgufHeader } from "../formats/gguf/mod.ts";
import { fileSource } from "../io/file.ts";
import { tokenizerJsonFromGguf } from "../models/mod.ts";
import { tokenizerFromJson, type TokenizerJson } from "../tokenizers/mod.ts";
import { FIXTURES } from "../tests/_helpers/fixtures.ts";
import { cpuInfo } from "./_peer.ts";

const args = parseArgs(Deno.args, {
  string: ["rounds", "only"],
  default: { rounds: "7", only: "gpt2,deepseek,llama2,bert,t5" },
});
const ROUNDS = Number(args.rounds);
const ONLY = new Set(args.only.split(","));

function cpu(): string {
  const { model, flags } = cpuInfo();
  if (model === undefined) return "unknown CPU";
  const simd = [
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
  ]
    .filter((f) => flags.has(f));
  return `${model}; flags ${simd.join(" ")}`;
}

async function fromFixture(name: string): Promise<TokenizerJson | undefined> {
  if (!FIXTURES) return undefined;
  const src = await fileSource(
    `${FIXTURES}/gguf/llama.cpp-vocab/ggml-vocab-${name}.gguf`,
  );
  try {
    const md = ggufMetadataRecord(await readGgufHeader(src));
    return md["tokenizer.ggml.model"] === "bert"
      ? bertJson(md)
      : tokenizerJsonFromGguf(md).tokenizer;
  } finally {
    src.close();
  }
}

/**
 * BERT's `tokenizer.json` from a GGUF WordPiece vocabulary: GGUF marks word
 * starts with `▁` and leaves continuations bare; the JSON marks
 * continuations with `##`.
 */
function bertJson(md: Record<string, unknown>): TokenizerJson {
  const tokens = md["tokenizer.ggml.tokens"] as string[];
  const types = md["tokenizer.ggml.token_type"] as number[];
  const vocab: Record<string, number> = {};
  const added: TokenizerJson["added_tokens"] = [];
  tokens.forEach((t, id) => {
    const special = types[id] === 3;
    const text = special ? t : t.startsWith("\u2581") ? t.slice(1) : "##" + t;
    if (!Object.hasOwn(vocab, text)) vocab[text] = id;
    if (special) {
      added!.push({
        id,
        content: t,
        special: true,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
      });
    }
  });
  const id = (k: string) => Number(md[`tokenizer.ggml.${k}`]);
  return {
    model: {
      type: "WordPiece",
      vocab,
      unk_token: tokens[id("unknown_token_id")],
      continuing_subword_prefix: "##",
      max_input_chars_per_word: 100,
    },
    added_tokens: added,
    normalizer: {
      type: "BertNormalizer",
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: {
      type: "BertProcessing",
      sep: [tokens[id("seperator_token_id")], id("seperator_token_id")],
      cls: [tokens[id("cls_token_id")], id("cls_token_id")],
    },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
  };
}

function corpus(): string {
  const parts: string[] = [];
  const docs = new URL("../docs/", import.meta.url);
  for (
    const e of [...Deno.readDirSync(docs)].sort((a, b) =>
      a.name.localeCompare(b.name)
    )
  ) {
    if (e.isFile && e.name.endsWith(".md")) {
      parts.push(Deno.readTextFileSync(new URL(e.name, docs)));
    }
  }
  parts.push(Deno.readTextFileSync(new URL("../README.md", import.meta.url)));
  const texts: string[] = JSON.parse(
    Deno.readTextFileSync(
      new URL("../tests/vectors/tokenizers/corpus.json", import.meta.url),
    ),
  ).texts;
  parts.push(texts.join("\n"));
  return parts.join("\n\n");
}

interface Side {
  name: string;
  encode(text: string): number[];
  decode(ids: number[]): string;
}

function sides(json: TokenizerJson): Side[] {
  const ours = tokenizerFromJson(structuredClone(json), { name: "bench" });
  const hf = new HfTokenizer(structuredClone(json) as never, {});
  const tjs = new PreTrainedTokenizer(structuredClone(json) as never, {});
  return [
    {
      name: "modelhost",
      encode: (t) => ours.encode(t, { addSpecial: false, parseSpecial: true }),
      decode: (ids) => ours.decode(ids),
    },
    {
      name: "@huggingface/tokenizers",
      encode: (t) => hf.encode(t, { add_special_tokens: false }).ids,
      decode: (ids) => hf.decode(ids, { skip_special_tokens: true }),
    },
    {
      name: "transformers.js",
      encode: (t) => tjs.encode(t, { add_special_tokens: false }),
      decode: (ids) => tjs.decode(ids, { skip_special_tokens: true }),
    },
  ];
}

function time(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

const text = corpus();
const lines = text.split("\n").filter((l) => l.trim() !== "");
const enc = new TextEncoder();
const longBytes = enc.encode(text).length;
const shortBytes = lines.reduce((n, l) => n + enc.encode(l).length, 0);

console.log(`CPU: ${cpu()}`);
console.log(
  `Deno ${Deno.version.deno} (V8 ${Deno.version.v8}); ${ROUNDS} rounds, sides alternating`,
);
console.log(
  `text: ${
    (longBytes / 1e3).toFixed(0)
  } kB as one string; ${lines.length} lines (${
    (shortBytes / 1e3).toFixed(0)
  } kB) as short texts\n`,
);

const cases: [string, () => Promise<TokenizerJson | undefined>][] = [
  ["gpt2", () => fromFixture("gpt-2")],
  ["deepseek", () => fromFixture("deepseek-llm")],
  ["llama2", () => fromFixture("llama-spm")],
  ["bert", () => fromFixture("bert-bge")],
  ["t5", () =>
    Promise.resolve(
      JSON.parse(
        Deno.readTextFileSync(
          new URL(
            "../tests/vectors/tokenizers/unigram_t5.json",
            import.meta.url,
          ),
        ),
      ).tokenizer,
    )],
];

const rows: string[][] = [];
for (const [name, load] of cases) {
  if (!ONLY.has(name)) continue;
  const json = await load();
  if (!json) {
    console.log(`${name}: skipped (no fixtures)`);
    continue;
  }
  const s = sides(json);
  // the three must agree before their speed means anything
  const ref = lines.map((l) => s[0].encode(l));
  for (const side of s.slice(1)) {
    const bad = lines.filter((l, i) =>
      side.encode(l).join() !== ref[i].join()
    ).length;
    if (bad > 0) {
      console.log(
        `${name}: ${side.name} differs from modelhost on ${bad}/${lines.length} lines`,
      );
    }
  }
  const longIds = s.map((x) => x.encode(text));
  const work: [string, number, (x: Side, k: number) => void][] = [
    ["encode long", longBytes, (x) => x.encode(text)],
    ["encode short", shortBytes, (x) => {
      for (const l of lines) x.encode(l);
    }],
    ["decode long", longBytes, (x, k) => x.decode(longIds[k])],
  ];
  for (const [what, bytes, fn] of work) {
    const times: number[][] = s.map(() => []);
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? [0, 1, 2] : [2, 1, 0];
      for (const k of order) times[k].push(time(() => fn(s[k], k)));
    }
    const best = times.map((t) => Math.min(...t));
    const mbs = best.map((t) => bytes / 1e6 / (t / 1e3));
    const ratio = (k: number) =>
      median(times[k].map((t, r) => t / times[0][r]));
    rows.push([
      name,
      what,
      mbs[0].toFixed(2),
      mbs[1].toFixed(2),
      mbs[2].toFixed(2),
      `${ratio(1).toFixed(2)}x`,
      `${ratio(2).toFixed(2)}x`,
    ]);
    console.log(rows[rows.length - 1].join("  "));
  }
}

const head = [
  "tokenizer",
  "work",
  "modelhost MB/s",
  "@hf/tokenizers MB/s",
  "transformers.js MB/s",
  "speedup vs @hf/tokenizers",
  "speedup vs transformers.js",
];
console.log(`\n| ${head.join(" | ")} |`);
console.log(`| ${head.map(() => "---").join(" | ")} |`);
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
