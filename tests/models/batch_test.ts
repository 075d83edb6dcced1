// Continuous batching: Transformer.forwardBatch gives every sequence the
// logits it gets alone, bit for bit (F32, F16, Q8_0, Q4_0 from llama.cpp's
// stories260K files; Q4_K, Q6_K, BF16 on a small random model; one thread
// and two), whatever the other sequences, the chunking of prompts, or the
// step at which a sequence joins; BatchEngine gives each generation the
// tokens generate() gives it alone, and llama.cpp's greedy continuation of
// its reference prompt while seven others run beside it.

import { assert, assertEquals, assertRejects } from "@std/assert";
import { initNetwork } from "../../core/network.ts";
import { encodeFromF32 } from "../../core/dtypes.ts";
import { toFloat32 } from "../../core/tensor.ts";
import { loadTransformer } from "../../io/transformer.ts";
import {
  configureKernels,
  shutdownKernels,
} from "../../kernels/fast/runtime.ts";
import { LAYER_PLUGINS } from "../../layers/mod.ts";
import {
  BatchEngine,
  type BatchStep,
  buildTransformer,
  configFromHf,
  generateText,
  type Transformer,
  transformerNetwork,
} from "../../models/mod.ts";
import { createRegistry } from "../../registry.ts";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";

const PROMPTS = [
  [1, 300, 301, 302],
  [1, 400],
  [1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
  [1],
  [1, 42, 43],
  [1, 77, 78, 79, 80, 81],
  [1, 99],
  [1, 200, 201, 202, 203, 204, 205, 206],
];

function argmax(v: Float32Array): number {
  let b = 0;
  for (let i = 1; i < v.length; i++) if (v[i] > v[b]) b = i;
  return b;
}

/** Greedy logits of each prompt run alone: one prefill, then a token per call. */
function alone(model: Transformer, prompt: number[], steps: number) {
  const s = model.createState();
  let l = model.forward(prompt, s).slice();
  const out = [l];
  for (let i = 1; i < steps; i++) {
    l = model.forward([argmax(l)], s).slice();
    out.push(l);
  }
  return out;
}

/**
 * The same prompts through forwardBatch: sequence k joins at step k, prompts
 * fed `chunk` tokens a step beside the others' single tokens.
 */
function batched(model: Transformer, steps: number, chunk: number) {
  const states = PROMPTS.map(() => model.createState());
  const pending = PROMPTS.map((p) => [...p]);
  const out: Float32Array[][] = PROMPTS.map(() => []);
  for (let step = 0; out.some((o) => o.length < steps); step++) {
    const items = [], who: number[] = [];
    for (let k = 0; k < PROMPTS.length; k++) {
      if (k > step || out[k].length >= steps) continue;
      items.push({ ids: pending[k].splice(0, chunk), state: states[k] });
      who.push(k);
    }
    const res = model.forwardBatch(items);
    res.forEach((l, j) => {
      const k = who[j];
      if (pending[k].length > 0) return;
      out[k].push(l.slice());
      pending[k].push(argmax(l));
    });
  }
  return out;
}

function assertSameLogits(model: Transformer, what: string): void {
  const steps = 6;
  const ref = PROMPTS.map((p) => alone(model, p, steps));
  for (const chunk of [1, 3, 64]) {
    const got = batched(model, steps, chunk);
    for (let k = 0; k < PROMPTS.length; k++) {
      for (let i = 0; i < steps; i++) {
        const a = ref[k][i], b = got[k][i];
        const same = a.length === b.length && a.every((x, j) => x === b[j]);
        assert(same, `${what}: sequence ${k}, step ${i}, chunk ${chunk}`);
      }
    }
  }
}

for (const file of ["", "-F16", "-Q8_0", "-Q4_0"]) {
  conformanceTest(
    `forwardBatch: stories260K${file} logits equal running alone, bit for bit`,
    async () => {
      const path = file === ""
        ? fixture("gguf/stories260K.gguf")
        : fixture(`reference/llama-logits/stories260K${file}.gguf`);
      assertSameLogits(await loadTransformer(path), `stories260K${file}`);
    },
  );
}

/** A small random Llama with every matrix stored as `dtype`. */
function randomModel(dtype: "Q4_K" | "Q6_K" | "BF16" | "F32"): Transformer {
  const cfg = configFromHf({
    model_type: "llama",
    vocab_size: 512,
    hidden_size: 256,
    intermediate_size: 512,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
  });
  const reg = createRegistry().use(LAYER_PLUGINS);
  const w = initNetwork(reg, transformerNetwork(cfg), 11);
  const tensors = new Map(
    [...w].map(([name, t]) => {
      if (t.shape.length !== 2 || dtype === "F32") return [name, t];
      const bytes = encodeFromF32(dtype, toFloat32(t));
      return [name, { ...t, dtype, bytes }];
    }),
  );
  return buildTransformer(cfg, tensors);
}

for (const dtype of ["Q4_K", "Q6_K", "BF16"] as const) {
  Deno.test(`forwardBatch: ${dtype} logits equal running alone, bit for bit`, () => {
    assertSameLogits(randomModel(dtype), dtype);
  });
}

conformanceTest(
  "forwardBatch: with two kernel threads, Q8_0 logits equal running alone",
  async () => {
    // Every kernel call split across both threads.
    await configureKernels({ threads: 2, minParallelWork: 1 });
    try {
      const m = await loadTransformer(
        fixture("reference/llama-logits/stories260K-Q8_0.gguf"),
      );
      assertSameLogits(m, "Q8_0, 2 threads");
    } finally {
      await shutdownKernels();
    }
  },
);

Deno.test("forwardBatch: refuses empty items, shared states and foreign states", () => {
  const m = randomModel("F32");
  const s = m.createState();
  let e: unknown;
  try {
    m.forwardBatch([{ ids: [1], state: s }, { ids: [2], state: s }]);
  } catch (x) {
    e = x;
  }
  assert(e instanceof TypeError && /repeats a state/.test(e.message));
  try {
    m.forwardBatch([{ ids: [], state: m.createState() }]);
  } catch (x) {
    e = x;
  }
  assert(e instanceof RangeError && /no tokens/.test(e.message));
  try {
    m.forwardBatch([{ ids: [1], state: { layers: [], tokens: [] } }]);
  } catch (x) {
    e = x;
  }
  assert(e instanceof TypeError && /layer states/.test(e.message));
  assertEquals(m.forwardBatch([]), []);
});

interface Reference {
  prompt_ids: number[];
  greedy_ids: number[];
}

conformanceTest(
  "BatchEngine: llama.cpp's greedy continuation while seven other sequences run, and every sequence as generate() alone",
  async () => {
    const ref: Reference = JSON.parse(
      await Deno.readTextFile(
        fixture("reference/llama-logits/stories260K.logits.json"),
      ),
    );
    const model = await loadTransformer(fixture("gguf/stories260K.gguf"));
    const steps: number[] = [];
    const engine = new BatchEngine(model, {
      maxSequences: 8,
      prefillChunk: 4,
      onStep: (s) => steps.push(s.sequences),
    });
    try {
      const jobs = [
        { prompt: ref.prompt_ids, options: { greedy: true, maxTokens: 64 } },
        ...PROMPTS.slice(1).map((p, i) => ({
          prompt: p,
          options: i % 2
            ? { greedy: true, maxTokens: 20 + 5 * i }
            : { temperature: 0.9, topK: 20, seed: 7 + i, maxTokens: 30 },
        })),
      ];
      // Staggered arrivals: each joins a few steps after the one before.
      const runs = jobs.map(async (j, i) => {
        await new Promise((r) => setTimeout(r, 3 * i));
        const ids: number[] = [];
        const it = engine.generate(j.prompt, {
          ...j.options,
          stopAtEos: false,
        });
        let r = await it.next();
        while (!r.done) {
          ids.push(r.value.id);
          r = await it.next();
        }
        assertEquals(r.value.ids, ids);
        return ids;
      });
      const got = await Promise.all(runs);
      assertEquals(got[0], ref.greedy_ids);
      for (const [i, j] of jobs.entries()) {
        const lib = await generateText(model, j.prompt, {
          ...j.options,
          stopAtEos: false,
        });
        assertEquals(got[i], lib.ids, `sequence ${i}`);
      }
      assert(Math.max(...steps) >= 6, `at most ${Math.max(...steps)} at once`);
    } finally {
      engine.close();
    }
  },
);

conformanceTest(
  "BatchEngine: a reader that leaves or aborts frees its place; a closed engine refuses",
  async () => {
    const model = await loadTransformer(fixture("gguf/stories260K.gguf"));
    const engine = new BatchEngine(model, { maxSequences: 1 });
    let n = 0;
    for await (
      const _ of engine.generate([1], { maxTokens: 500, greedy: true })
    ) {
      if (++n === 3) break;
    }
    const ctl = new AbortController();
    const aborted = engine.generate([1], {
      maxTokens: 500,
      greedy: true,
      signal: ctl.signal,
    });
    await aborted.next();
    ctl.abort();
    let r = await aborted.next();
    while (!r.done) r = await aborted.next();
    assertEquals(r.value.finishReason, "aborted");
    // The one place is free again: a new generation runs to its end.
    const full = await Array.fromAsync(
      engine.generate([1], { maxTokens: 5, greedy: true, stopAtEos: false }),
    );
    assertEquals(full.length, 5);
    engine.close();
    await assertRejects(
      () => engine.generate([1]).next(),
      Error,
      "closed",
    );
  },
);

Deno.test("BatchEngine: prompts arriving together are prefilled over steps, the median one first, each sequence with the tokens it gets alone", async () => {
  const model = randomModel("Q4_K");
  const jobs = PROMPTS.map((p, i) => ({
    prompt: p,
    options: i % 3 === 2
      ? { temperature: 0.8, topP: 0.9, seed: 3 + i, maxTokens: 5 }
      : { greedy: true, maxTokens: 5 },
  }));
  const alone = [];
  for (const j of jobs) {
    alone.push((await generateText(model, j.prompt, j.options)).ids);
  }
  for (const splitPrefill of [true, false]) {
    const steps: BatchStep[] = [];
    const engine = new BatchEngine(model, {
      splitPrefill,
      onStep: (s) => steps.push(s),
    });
    try {
      const got = await Promise.all(
        jobs.map((j) =>
          Array.fromAsync(engine.generate(j.prompt, j.options), (t) => t.id)
        ),
      );
      for (const [i, ids] of got.entries()) {
        assertEquals(
          ids,
          alone[i],
          `sequence ${i}, splitPrefill ${splitPrefill}`,
        );
      }
      const total = PROMPTS.reduce((a, p) => a + p.length, 0); // 39
      if (!splitPrefill) {
        assertEquals(steps[0], {
          ...steps[0],
          sequences: 8,
          promptRows: total,
        });
        continue;
      }
      // 8 prompts waiting: the first 5 (4 + 2 + 13 + 1 + 3 tokens); then
      // 2 of the 3 left (6 + 2) beside 5 decoding rows; then the last (8)
      // beside 7.
      assertEquals(
        steps.slice(0, 3).map((s) => [s.sequences, s.promptRows, s.rows]),
        [[5, 23, 23], [7, 8, 13], [8, 8, 15]],
      );
    } finally {
      engine.close();
    }
  }
});

Deno.test("BatchEngine: an idle engine gathers generations started within gatherMs into its first step", async () => {
  const model = randomModel("F32");
  const steps: BatchStep[] = [];
  const engine = new BatchEngine(model, {
    gatherMs: 200,
    onStep: (s) => steps.push(s),
  });
  try {
    const opts = { greedy: true, maxTokens: 3 };
    const first = Array.fromAsync(engine.generate([1, 2, 3], opts));
    // a later arrival, well inside the engine's wait
    await new Promise((r) => setTimeout(r, 10));
    const second = Array.fromAsync(engine.generate([4, 5], opts));
    await Promise.all([first, second]);
    assertEquals([steps[0].sequences, steps[0].promptRows], [2, 5]);
  } finally {
    engine.close();
  }
  let e: unknown;
  try {
    new BatchEngine(model, { gatherMs: -1 });
  } catch (x) {
    e = x;
  }
  assert(e instanceof RangeError && /gatherMs/.test(e.message));
});
