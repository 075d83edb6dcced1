import {
  assert,
  assertAlmostEquals,
  assertEquals,
  assertRejects,
} from "@std/assert";
import { initNetwork } from "../../core/network.ts";
import { LAYER_PLUGINS } from "../../layers/mod.ts";
import {
  buildTransformer,
  configFromHf,
  generate,
  type GeneratedToken,
  type GenerateOptions,
  generateText,
  promptIds,
  type Transformer,
  transformerNetwork,
  type TransformerState,
} from "../../models/mod.ts";
import { createRegistry } from "../../registry.ts";
import { chatml } from "../../tokenizers/chat.ts";
import { createTokenizer } from "../../tokenizers/mod.ts";
import type { Tokenizer } from "../../tokenizers/tokenizer.ts";

/** A stand-in model whose logits come from a function of the step. */
function fakeModel(
  vocab: number,
  logitsAt: (step: number, history: number[]) => number[],
  tokenizer?: Tokenizer,
): Transformer {
  let step = -1;
  return {
    config: { eosTokenIds: [2], vocabSize: vocab },
    tokenizer,
    generationDefaults: {},
    name: "fake",
    createState: (): TransformerState => ({ layers: [], tokens: [] }),
    forward(ids: ArrayLike<number>, state?: TransformerState) {
      state?.tokens.push(...Array.from(ids));
      step++;
      return Float32Array.from(logitsAt(step, state?.tokens ?? []));
    },
  } as unknown as Transformer;
}

/** Logits that make `id` the clear winner. */
function onehot(id: number, vocab: number): number[] {
  return Array.from({ length: vocab }, (_, i) => (i === id ? 10 : 0));
}

const SPM = createTokenizer({
  "tokenizer.ggml.model": "llama",
  "tokenizer.ggml.tokens": [
    "<unk>",
    "<s>",
    "</s>",
    "▁a",
    "b",
    "c",
    "d",
    "▁",
    "<0xC3>",
    "<0xA9>",
  ],
  "tokenizer.ggml.scores": [0, 0, 0, -1, -2, -3, -4, -5, 0, 0],
  "tokenizer.ggml.token_type": [2, 3, 3, 1, 1, 1, 1, 1, 6, 6],
});

function scripted(ids: number[]): Transformer {
  return fakeModel(
    10,
    (s) => onehot(ids[Math.min(s, ids.length - 1)], 10),
    SPM,
  );
}

async function run(
  model: Transformer,
  prompt: number[],
  opts: GenerateOptions,
) {
  const toks: GeneratedToken[] = [];
  const it = generate(model, prompt, opts);
  while (true) {
    const r = await it.next();
    if (r.done) return { toks, result: r.value };
    toks.push(r.value);
  }
}

Deno.test("generate: stop strings are held back across tokens and cut", async () => {
  const m = scripted([3, 4, 5, 6]);
  const a = await run(m, [1], { greedy: true, stop: ["bc"] });
  assertEquals(a.toks.map((t) => [t.id, t.text]), [[3, "a"], [4, ""], [5, ""]]);
  assertEquals([a.result.text, a.result.finishReason], ["a", "stop"]);

  const b = await run(scripted([3, 4, 5, 6]), [1], {
    greedy: true,
    stop: ["bx"],
    maxTokens: 4,
  });
  assertEquals(b.toks.map((t) => t.text), ["a", "", "bc", "d"]);
  assertEquals([b.result.text, b.result.finishReason], ["abcd", "length"]);
});

Deno.test("generate: a character split over byte tokens is released whole", async () => {
  const { toks, result } = await run(scripted([3, 8, 9]), [1], {
    greedy: true,
    maxTokens: 3,
  });
  assertEquals(toks.map((t) => t.text), ["a", "", "é"]);
  assertEquals(result.text, "aé");
});

Deno.test("generate: the leading space is kept after a text prompt, dropped after BOS alone", async () => {
  assertEquals(
    (await generateText(scripted([3, 3]), [1], { greedy: true, maxTokens: 2 }))
      .text,
    "a a",
  );
  assertEquals(
    (await generateText(scripted([3, 3]), [1, 4], {
      greedy: true,
      maxTokens: 2,
    })).text,
    " a a",
  );
});

Deno.test("generate: EOS ends generation unless told otherwise; maxTokens 0 generates nothing", async () => {
  const a = await run(scripted([3, 2, 4]), [1], { greedy: true });
  assertEquals(a.toks.map((t) => t.id), [3]);
  assertEquals(a.result.finishReason, "eos");
  const b = await run(scripted([3, 2, 4]), [1], {
    greedy: true,
    stopAtEos: false,
    maxTokens: 3,
  });
  assertEquals(b.toks.map((t) => t.id), [3, 2, 4]);
  const c = await run(scripted([3]), [1], { maxTokens: 0 });
  assertEquals([c.toks.length, c.result.finishReason], [0, "length"]);
});

Deno.test("generate: options are checked; an empty prompt is refused", async () => {
  const m = scripted([3]);
  await assertRejects(
    () => generateText(m, [1], { topP: 0 }),
    RangeError,
    "topP must be in (0, 1], got 0",
  );
  await assertRejects(
    () => generateText(m, [1], { maxTokens: -1 }),
    RangeError,
    "maxTokens must be an integer ≥ 0",
  );
  await assertRejects(
    () => generateText(m, [], {}),
    RangeError,
    "the prompt is empty",
  );
  const noTok = fakeModel(4, () => [0, 0, 0, 0]);
  await assertRejects(
    () => generateText(noTok, "hi", {}),
    TypeError,
    "fake has no tokenizer",
  );
});

const P = [0.5, 0.3, 0.15, 0.05];
const LOGP = P.map(Math.log);

async function frequencies(opts: GenerateOptions, n = 4000): Promise<number[]> {
  const m = fakeModel(4, () => LOGP);
  const r = await generateText(m, [0], {
    maxTokens: n,
    stopAtEos: false,
    seed: 11,
    ...opts,
  });
  const c = [0, 0, 0, 0];
  for (const id of r.ids) c[id]++;
  return c.map((x) => x / n);
}

Deno.test("generate: sampling follows temperature, top-k and top-p", async () => {
  const plain = await frequencies({ temperature: 1 });
  P.forEach((p, i) => assertAlmostEquals(plain[i], p, 0.03));
  // temperature 0.5 squares the probabilities: [0.25, 0.09, 0.0225, 0.0025] / 0.365
  const cold = await frequencies({ temperature: 0.5 });
  [0.6849, 0.2466, 0.0616, 0.0068].forEach((p, i) =>
    assertAlmostEquals(cold[i], p, 0.03)
  );
  const k2 = await frequencies({ topK: 2 });
  assertEquals([k2[2], k2[3]], [0, 0]);
  assertAlmostEquals(k2[0], 0.625, 0.03);
  // top-p 0.75: 0.5 + 0.3 reaches it, so ids 0 and 1 renormalized
  const p75 = await frequencies({ topP: 0.75 });
  assertEquals([p75[2], p75[3]], [0, 0]);
  assertAlmostEquals(p75[1], 0.375, 0.03);
  assertEquals(await frequencies({ topK: 1, temperature: 3 }, 50), [
    1,
    0,
    0,
    0,
  ]);
});

Deno.test("generate: same seed, same tokens; logprob is the model's log-probability", async () => {
  const a = await frequencies({ seed: 5 }, 200);
  const b = await frequencies({ seed: 5 }, 200);
  assertEquals(a, b);
  const r = await run(fakeModel(4, () => LOGP), [0], {
    greedy: true,
    maxTokens: 1,
  });
  assertAlmostEquals(r.toks[0].logprob, Math.log(0.5), 1e-6);
});

Deno.test("generate: repetition penalty divides positive and multiplies negative logits of seen tokens", async () => {
  // 2.0 / 1.2 = 1.667 < 1.9, then 1.9 / 1.2 = 1.583 < 1.667
  const pos = fakeModel(4, () => [2.0, 1.9, -1, -1]);
  assertEquals(
    (await generateText(pos, [0], {
      greedy: true,
      maxTokens: 2,
      repetitionPenalty: 1.2,
    })).ids,
    [1, 0],
  );
  // -1.0 · 1.2 = -1.2 < -1.1
  const neg = fakeModel(4, () => [-1.0, -1.1, -5, -5]);
  assertEquals(
    (await generateText(neg, [0], {
      greedy: true,
      maxTokens: 1,
      repetitionPenalty: 1.2,
    })).ids,
    [1],
  );
  // a window of 1 only sees the last prompt token (3), so id 0 keeps 2.0
  const win = fakeModel(4, () => [2.0, 1.9, -1, -1]);
  assertEquals(
    (await generateText(win, [0, 3], {
      greedy: true,
      maxTokens: 1,
      repetitionPenalty: 1.2,
      repetitionWindow: 1,
    })).ids,
    [0],
  );
});

// ------------------------------------------------------------ a real network

const CFG = configFromHf({
  model_type: "llama",
  vocab_size: 40,
  hidden_size: 16,
  intermediate_size: 32,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
});
const MODEL = buildTransformer(
  CFG,
  initNetwork(createRegistry().use(LAYER_PLUGINS), transformerNetwork(CFG), 42),
);

function argmax(v: Float32Array): number {
  let b = 0;
  for (let i = 1; i < v.length; i++) if (v[i] > v[b]) b = i;
  return b;
}

Deno.test("generate: greedy tokens are the argmax of full recomputation at every step", async () => {
  const prompt = [1, 7, 9, 3];
  const r = await generateText(MODEL, prompt, { greedy: true, maxTokens: 8 });
  const seq = [...prompt];
  for (let i = 0; i < 8; i++) {
    const all = MODEL.forward(seq, undefined, { allPositions: true });
    seq.push(argmax(all.subarray(all.length - CFG.vocabSize)));
  }
  assertEquals(r.ids, seq.slice(prompt.length));
  assertEquals(r.state.tokens.length, prompt.length + 7); // the last token is not fed
});

Deno.test("generate: continuing a state equals one long prompt", async () => {
  const first = await generateText(MODEL, [1, 7], {
    greedy: true,
    maxTokens: 3,
  });
  const state = first.state;
  // feed the last generated token and two more prompt tokens, then continue
  const second = await generateText(MODEL, [first.ids[2], 4, 5], {
    greedy: true,
    maxTokens: 4,
    state,
  });
  const whole = await generateText(MODEL, [1, 7, ...first.ids, 4, 5], {
    greedy: true,
    maxTokens: 4,
  });
  assertEquals(second.ids, whole.ids);
});

Deno.test("generate: an aborted signal stops before the next token", async () => {
  const ctl = new AbortController();
  const got: number[] = [];
  const it = generate(MODEL, [1], {
    maxTokens: 10,
    greedy: true,
    signal: ctl.signal,
  });
  for await (const t of it) {
    got.push(t.id);
    if (got.length === 2) ctl.abort();
  }
  assertEquals(got.length, 2);
});

Deno.test("promptIds: text with BOS, chat messages through a template", () => {
  const m = { ...scripted([3]), tokenizer: SPM, name: "fake" } as Transformer;
  assertEquals(promptIds(m, "ab"), SPM.encode("ab"));
  assertEquals(promptIds(m, "ab")[0], 1);
  assertEquals(promptIds(m, "ab", { addBos: false })[0], 3);
  const chat = promptIds(m, [{ role: "user", content: "a" }], {
    chatTemplate: chatml,
  });
  assert(chat.length > 2 && chat[0] === 1);
});
