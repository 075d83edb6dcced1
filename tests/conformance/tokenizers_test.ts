/**
 * Tokenizer conformance against llama.cpp's test vectors
 * (`gguf/llama.cpp-vocab/*.gguf.inp|out`: inputs separated by a line
 * `__ggml_vocab_test__`, expected ids one line each, no BOS, made by the
 * Hugging Face tokenizers of the original models) and against the
 * stories260K reference text.
 *
 * Each vocabulary is checked twice: read from its GGUF file, and rebuilt as
 * the `tokenizer.json` the original model ships (same vocabulary and merges,
 * the model's Hugging Face pipeline written out below), so both loaders are
 * held to the same expected ids. The pass count per vocabulary is printed
 * and asserted, so a regression fails.
 */

import { assertEquals } from "@std/assert";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";
import { ggufMetadataRecord, readGgufHeader } from "../../formats/gguf/mod.ts";
import { fileSource } from "../../io/file.ts";
import {
  createTokenizer,
  type Tokenizer,
  type TokenizerJson,
} from "../../tokenizers/mod.ts";
import { ggufPreTokenizer } from "../../tokenizers/pre_tokenize.ts";
import { SpmModel } from "../../tokenizers/spm.ts";

/** Vectors that pass, per vocabulary (all of them: 46 inputs each). */
const EXPECTED_PASS: Record<string, number> = {
  "gpt-2": 46,
  "llama-spm": 46,
  "falcon": 46,
  "mpt": 46,
  "refact": 46,
  "deepseek-llm": 46,
  "bert-bge": 46,
};

async function ggufMetadata(path: string): Promise<Record<string, unknown>> {
  const src = await fileSource(path);
  try {
    return ggufMetadataRecord(await readGgufHeader(src));
  } finally {
    src.close();
  }
}

function readVectors(name: string): { text: string; ids: number[] }[] {
  const base = fixture("gguf", "llama.cpp-vocab", `ggml-vocab-${name}.gguf`);
  const raw = Deno.readTextFileSync(base + ".inp");
  const lines = Deno.readTextFileSync(base + ".out").split("\n");
  // the separator follows every input, the last one included
  const texts = raw.split("\n__ggml_vocab_test__\n");
  if (texts[texts.length - 1] === "") texts.pop();
  assertEquals(
    lines.length >= texts.length,
    true,
    `${name}: fewer outputs than inputs`,
  );
  return texts.map((text, i) => ({
    text,
    ids: lines[i].trim() === "" ? [] : lines[i].trim().split(" ").map(Number),
  }));
}

function countPasses(
  tok: Tokenizer,
  vectors: { text: string; ids: number[] }[],
): number {
  let pass = 0;
  for (const v of vectors) {
    const got = tok.encode(v.text, { addSpecial: false });
    if (got.length === v.ids.length && got.every((x, i) => x === v.ids[i])) {
      pass++;
    }
  }
  return pass;
}

/**
 * The `tokenizer.json` of the original model, rebuilt around the GGUF
 * vocabulary: control tokens (type 3) are special added tokens,
 * user-defined ones (type 4) non-special added tokens.
 */
function asTokenizerJson(
  name: string,
  md: Record<string, unknown>,
): TokenizerJson {
  const tokens = md["tokenizer.ggml.tokens"] as string[];
  const types = md["tokenizer.ggml.token_type"] as number[];
  const vocab: Record<string, number> = {};
  const added: { id: number; content: string; special: boolean }[] = [];
  tokens.forEach((t, i) => {
    if (types[i] === 3 || types[i] === 4) {
      added.push({ id: i, content: t, special: types[i] === 3 });
    }
    if (!Object.hasOwn(vocab, t)) vocab[t] = i;
  });
  const merges = md["tokenizer.ggml.merges"] as string[];
  const byteLevel = {
    type: "ByteLevel",
    add_prefix_space: false,
    trim_offsets: true,
    use_regex: true,
  };
  const bpe = (
    pre: unknown,
    extra: Partial<TokenizerJson> = {},
  ): TokenizerJson => ({
    model: { type: "BPE", vocab, merges },
    added_tokens: added,
    pre_tokenizer: pre,
    decoder: { type: "ByteLevel" },
    ...extra,
  });
  switch (name) {
    case "gpt-2":
      return bpe(byteLevel);
    case "mpt": // GPT-NeoX tokenizer
      return bpe(byteLevel, { normalizer: { type: "NFC" } });
    case "refact": // StarCoder tokenizer
      return bpe({
        type: "Sequence",
        pretokenizers: [{ type: "Digits", individual_digits: true }, byteLevel],
      });
    case "falcon":
      return bpe({
        type: "Sequence",
        pretokenizers: [
          { type: "Punctuation", behavior: "Contiguous" },
          byteLevel,
          { type: "Digits", individual_digits: false },
          {
            type: "Split",
            pattern: { Regex: "[0-9][0-9][0-9]" },
            behavior: "Isolated",
            invert: false,
          },
        ],
      });
    case "deepseek-llm":
      return bpe({
        type: "Sequence",
        pretokenizers: [
          ...ggufPreTokenizer("deepseek-llm").patterns.map((p) => ({
            type: "Split",
            pattern: { Regex: p },
            behavior: "Isolated",
            invert: false,
          })),
          { ...byteLevel, use_regex: false },
        ],
      }, {
        // pair-form merges, as newer files write them
        model: { type: "BPE", vocab, merges: merges.map((m) => m.split(" ")) },
      });
    case "llama-spm": {
      // SentencePiece converted to BPE: a merge for every split of a piece
      // into two pieces, ordered by the piece's score
      const scores = md["tokenizer.ggml.scores"] as number[];
      const cand: [number, number, string][] = [];
      tokens.forEach((t, i) => {
        if (types[i] !== 1) return;
        for (let k = 1; k < t.length; k++) {
          const a = Object.hasOwn(vocab, t.slice(0, k))
            ? vocab[t.slice(0, k)]
            : undefined;
          const b = Object.hasOwn(vocab, t.slice(k))
            ? vocab[t.slice(k)]
            : undefined;
          if (
            a !== undefined && b !== undefined && types[a] === 1 &&
            types[b] === 1
          ) {
            cand.push([scores[i], i, `${t.slice(0, k)} ${t.slice(k)}`]);
          }
        }
      });
      cand.sort((x, y) => y[0] - x[0] || x[1] - y[1]);
      return {
        model: {
          type: "BPE",
          vocab,
          merges: cand.map((c) => c[2]),
          byte_fallback: true,
          unk_token: "<unk>",
          fuse_unk: true,
        },
        added_tokens: [{ id: 0, content: "<unk>", special: true }, ...added],
        normalizer: {
          type: "Sequence",
          normalizers: [
            { type: "Prepend", prepend: "▁" },
            { type: "Replace", pattern: { String: " " }, content: "▁" },
          ],
        },
        pre_tokenizer: null,
        decoder: {
          type: "Sequence",
          decoders: [
            { type: "Replace", pattern: { String: "▁" }, content: " " },
            { type: "ByteFallback" },
            { type: "Fuse" },
            { type: "Strip", content: " ", start: 1, stop: 0 },
          ],
        },
      };
    }
    case "bert-bge": {
      // GGUF marks word starts with ▁; tokenizer.json marks continuations with ##
      const wp: Record<string, number> = {};
      tokens.forEach((t, i) => {
        const s = t.startsWith("▁")
          ? t.slice(1)
          : types[i] === 1
          ? "##" + t
          : t;
        if (!(s in wp)) wp[s] = i;
      });
      return {
        model: {
          type: "WordPiece",
          vocab: wp,
          unk_token: "[UNK]",
          continuing_subword_prefix: "##",
        },
        added_tokens: added.map((a) => ({ ...a, special: true })),
        normalizer: {
          type: "BertNormalizer",
          lowercase: true,
          strip_accents: null,
        },
        pre_tokenizer: { type: "BertPreTokenizer" },
        post_processor: {
          type: "BertProcessing",
          sep: ["[SEP]", 102],
          cls: ["[CLS]", 101],
        },
        decoder: { type: "WordPiece", prefix: "##" },
      };
    }
  }
  throw new Error(`no tokenizer.json recipe for ${name}`);
}

for (const name of Object.keys(EXPECTED_PASS)) {
  conformanceTest(
    `tokenizers: llama.cpp vectors for ${name} (GGUF and tokenizer.json)`,
    async () => {
      const md = await ggufMetadata(
        fixture("gguf", "llama.cpp-vocab", `ggml-vocab-${name}.gguf`),
      );
      const vectors = readVectors(name);
      const fromGguf = createTokenizer(md, { name });
      const fromJson = createTokenizer(asTokenizerJson(name, md), {
        name: `${name} tokenizer.json`,
      });
      const a = countPasses(fromGguf, vectors);
      const b = countPasses(fromJson, vectors);
      console.log(
        `  ${name}: GGUF ${a}/${vectors.length}, tokenizer.json ${b}/${vectors.length}`,
      );
      assertEquals(a, EXPECTED_PASS[name], `${name} (GGUF)`);
      assertEquals(b, EXPECTED_PASS[name], `${name} (tokenizer.json)`);
      if (fromGguf.kind !== "wordpiece") {
        // byte-level BPE and byte-fallback SentencePiece lose nothing
        for (const v of vectors) {
          assertEquals(
            fromGguf.decode(fromGguf.encode(v.text)),
            v.text,
            `${name} round trip`,
          );
          // DeepSeek's added tokens include Latin-1 letters ("ü") that the
          // ByteLevel decoder turns into single bytes, so the tokenizers
          // library itself decodes "Führer" as "F\ufffdhrer" (checked with
          // tokenizers 0.23.2); only the GGUF side, which copies
          // user-defined tokens as text like llama.cpp, round-trips.
          if (name !== "deepseek-llm") {
            assertEquals(
              fromJson.decode(fromJson.encode(v.text)),
              v.text,
              `${name} json round trip`,
            );
          }
        }
      }
    },
  );
}

conformanceTest(
  "tokenizers: vocabularies without vectors load and round-trip the gpt-2 inputs",
  async () => {
    const vectors = readVectors("gpt-2");
    for (const name of ["baichuan", "gpt-neox"]) {
      const tok = createTokenizer(
        await ggufMetadata(
          fixture("gguf", "llama.cpp-vocab", `ggml-vocab-${name}.gguf`),
        ),
      );
      for (const v of vectors) {
        assertEquals(tok.decode(tok.encode(v.text)), v.text, `${name}`);
      }
    }
    // llama-2-tiny-random carries the Llama 2 vocabulary: same ids as llama-spm
    const tiny = createTokenizer(
      await ggufMetadata(fixture("gguf", "llama-2-tiny-random.gguf")),
    );
    const spm = readVectors("llama-spm");
    assertEquals(countPasses(tiny, spm), spm.length);
  },
);

conformanceTest(
  "tokenizers: stories260K vocabulary encodes and decodes the reference text",
  async () => {
    const tok = createTokenizer(
      await ggufMetadata(fixture("gguf", "stories260K.gguf")),
    );
    const ref = JSON.parse(
      Deno.readTextFileSync(fixture("llama", "stories260K-reference.json")),
    );
    assertEquals(tok.vocabSize, 512);
    assertEquals([tok.bos, tok.eos, tok.kind], [1, 2, "spm"]);
    // the greedy ids are exactly the tokenization of the text
    assertEquals(tok.encode(ref.expected_text), [ref.bos, ...ref.token_ids]);
    const text = tok.decode([ref.bos, ...ref.token_ids]);
    assertEquals(text, ref.expected_text);
    assertEquals(
      new TextEncoder().encode(text).length,
      ref.expected_text_bytes,
    );
    const sd = tok.createStreamDecoder();
    let streamed = "";
    for (const id of [ref.bos, ...ref.token_ids]) {
      streamed += sd.decodeToken(id);
    }
    assertEquals(streamed + sd.flush(), ref.expected_text);
  },
);

conformanceTest(
  "tokenizers: long texts merge the same segment by segment as whole (llama-spm)",
  async () => {
    const md = await ggufMetadata(
      fixture("gguf", "llama.cpp-vocab", "ggml-vocab-llama-spm.gguf"),
    );
    const ref = JSON.parse(
      Deno.readTextFileSync(fixture("llama", "stories260K-reference.json")),
    );
    const text = [
      ...readVectors("llama-spm").map((v) => v.text),
      ref.expected_text,
    ].join("\n").repeat(3);
    const tokens = md["tokenizer.ggml.tokens"] as string[];
    const scores = md["tokenizer.ggml.scores"] as number[];
    const escaped = (" " + text).replaceAll(" ", "▁");
    const whole: number[] = [];
    new SpmModel({ tokens, scores, unk: 0, segment: false }).encode(
      escaped,
      whole,
    );
    const segmented: number[] = [];
    new SpmModel({ tokens, scores, unk: 0 }).encode(escaped, segmented);
    assertEquals(segmented, whole);
    // the tokenizer.json form (rank-ordered merges, also segmented) agrees on the long text
    const fromJson = createTokenizer(asTokenizerJson("llama-spm", md));
    assertEquals(fromJson.encode(text, { addSpecial: false }), whole);
  },
);
