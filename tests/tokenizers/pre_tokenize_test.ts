import { assertEquals, assertThrows } from "@std/assert";
import {
  GGUF_PRE_NAMES,
  ggufPreTokenizer,
  GPT2_PATTERN,
  patternSteps,
  runSteps,
  splitStep,
  toJsPattern,
  toJsRegExp,
} from "../../tokenizers/pre_tokenize.ts";

const WS =
  "\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

Deno.test("toJsPattern: Oniguruma constructs become JavaScript u-mode source", () => {
  assertEquals(toJsPattern("(?i:'s|'t)"), "(?:'[sS]|'[tT])");
  assertEquals(toJsPattern("'(?i:[sd]|ll)"), "'(?:[sSdD]|[lL][lL])");
  assertEquals(toJsPattern("\\s+(?!\\S)"), `[${WS}]+(?![^${WS}])`);
  assertEquals(toJsPattern("[^\\s\\p{L}]"), `[^${WS}\\p{L}]`);
  assertEquals(toJsPattern("a++b*+c?+"), "a+b*c?");
  assertEquals(toJsPattern("a+?"), "a+?");
  assertEquals(toJsPattern("(?>ab)"), "(?:ab)");
  assertEquals(toJsPattern("\\x{2581}\\'"), "\\u{2581}\\u{27}");
  assertEquals(toJsPattern("a{2,3}{x}"), "a{2,3}\\{x\\}");
  assertEquals(toJsPattern("\\d\\p{Han}"), "\\p{Nd}\\p{Script=Han}");
  assertEquals(toJsPattern("[]a]"), "[\\]a]");
  assertThrows(() => toJsPattern("[abc"), SyntaxError, "Unclosed [");
  assertThrows(
    () => toJsRegExp("(ab"),
    SyntaxError,
    'Cannot compile pre-tokenizer pattern "(ab"',
  );
});

Deno.test("GPT-2 pattern: words with their leading space, contractions, trailing white space", () => {
  const split = (s: string) => runSteps(patternSteps([GPT2_PATTERN]), s, true);
  assertEquals(split("Hello world's  end\n"), [
    "Hello",
    " world",
    "'s",
    " ",
    " end",
    "\n",
  ]);
  assertEquals(split("a 123 ?!x"), ["a", " 123", " ?!", "x"]);
});

Deno.test("Llama 3 pattern: digits in threes, case-insensitive contractions, newline runs", () => {
  const { patterns, ignoreMerges, addBos } = ggufPreTokenizer("llama-bpe");
  const split = (s: string) => runSteps(patternSteps(patterns), s, true);
  assertEquals(split("12345"), ["123", "45"]);
  assertEquals(split("DON'T\n\n go"), ["DON", "'T", "\n\n", " go"]);
  assertEquals([ignoreMerges, addBos], [true, true]);
});

Deno.test("pattern lists split in sequence, each isolating its matches", () => {
  // falcon: punctuation runs first, then GPT-2 words, then digit triples
  const split = (s: string) =>
    runSteps(patternSteps(ggufPreTokenizer("falcon").patterns), s, true);
  assertEquals(split("a,b 12345"), ["a", ",", "b", " ", "123", "45"]);
});

Deno.test("split behaviors follow the Hugging Face definitions", () => {
  const re = toJsRegExp("-");
  const run = (b: Parameters<typeof splitStep>[1], invert = false) =>
    splitStep(re, b, invert)(["a-b--c"], true);
  assertEquals(run("Isolated"), ["a", "-", "b", "-", "-", "c"]);
  assertEquals(run("Removed"), ["a", "b", "c"]);
  assertEquals(run("MergedWithPrevious"), ["a-", "b-", "-", "c"]);
  assertEquals(run("MergedWithNext"), ["a", "-b", "--c"]);
  assertEquals(run("Contiguous"), ["a", "-", "b", "--", "c"]);
  // inverted: the matches ("-", "-", "-": one per match) are what is kept
  assertEquals(run("Removed", true), ["-", "-", "-"]);
});

Deno.test("ggufPreTokenizer: aliases, default and unknown names", () => {
  assertEquals(
    ggufPreTokenizer("smollm").patterns,
    ggufPreTokenizer("refact").patterns,
  );
  assertEquals(ggufPreTokenizer(undefined).patterns.length, 4);
  assertEquals(ggufPreTokenizer("mpt").patterns, [GPT2_PATTERN]);
  const err = assertThrows(
    () => ggufPreTokenizer("nope"),
    TypeError,
    'Unknown GGUF pre-tokenizer "nope"',
  );
  assertEquals(err.message.includes("qwen2"), true);
  // every name compiles
  for (const name of GGUF_PRE_NAMES) {
    patternSteps(ggufPreTokenizer(name).patterns);
  }
});

Deno.test("every tokenizer.ggml.pre name llama.cpp knows is supported or refused by name", () => {
  // the names llama.cpp's llama_vocab::impl::load accepts for BPE vocabularies
  const llamaCpp = [
    "default",
    "minicpm5",
    "llama3",
    "llama-v3",
    "llama-bpe",
    "falcon3",
    "falcon-h1",
    "pixtral",
    "midm-2.0",
    "lfm2",
    "jina-v5-nano",
    "deepseek-llm",
    "deepseek-coder",
    "deepseek-v3",
    "spark2_5",
    "youtu",
    "falcon",
    "mpt",
    "starcoder",
    "gpt-2",
    "phi-2",
    "jina-es",
    "jina-de",
    "gigachat",
    "jina-v2-es",
    "jina-v2-de",
    "a.x-4.0",
    "mellum",
    "modern-bert",
    "jais-2",
    "gemma4",
    "granite-embed-multi-311m",
    "sarvam-moe",
    "jina-v1-en",
    "jina-v2-code",
    "roberta-bpe",
    "whitespace",
    "refact",
    "command-r",
    "qwen2",
    "deepseek-r1-qwen",
    "kormo",
    "f2llmv2",
    "qwen35",
    "stablelm2",
    "olmo",
    "dbrx",
    "smaug-bpe",
    "poro-chat",
    "glm4",
    "chatglm-bpe",
    "viking",
    "jais",
    "tekken",
    "smollm",
    "codeshell",
    "bloom",
    "gpt3-finnish",
    "exaone",
    "exaone4",
    "exaone-moe",
    "chameleon",
    "minerva-7b",
    "megrez",
    "gpt-4o",
    "llama4",
    "kanana2",
    "talkie",
    "granite-embed-multi-97m",
    "tiny_aya",
    "cohere2moe",
    "superbpe",
    "trillion",
    "granite-docling",
    "bailingmoe",
    "bailingmoe2",
    "llada-moe",
    "seed-coder",
    "hunyuan",
    "hunyuan-dense",
    "hy_v4",
    "joyai-llm",
    "kimi-k2",
    "ufakzeka",
    "grok-2",
    "afmoe",
    "laguna",
    "minimax-m2",
    "solar-open",
    "mellum2",
  ];
  const refused: string[] = [];
  for (const name of llamaCpp) {
    try {
      const pre = ggufPreTokenizer(name);
      for (const p of pre.patterns) toJsRegExp(p, { lineAnchors: false });
    } catch (e) {
      assertEquals(e instanceof TypeError, true, name);
      assertEquals((e as Error).message.includes(`"${name}"`), true, name);
      assertEquals(
        (e as Error).message.includes("is not supported"),
        true,
        name,
      );
      refused.push(name);
    }
  }
  assertEquals(refused.sort(), [
    "afmoe",
    "gemma4",
    "granite-embed-multi-311m",
    "kimi-k2",
    "sarvam-moe",
    "superbpe",
    "whitespace",
  ]);
  assertThrows(
    () => ggufPreTokenizer("no-such-pre"),
    TypeError,
    'Unknown GGUF pre-tokenizer "no-such-pre"',
  );
});
