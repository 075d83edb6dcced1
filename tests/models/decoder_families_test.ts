/**
 * The families beyond Llama (gemma, gemma2, gemma3_text, phi3, phi, gpt2,
 * stablelm, starcoder2) on tiny checkpoints written by transformers' own
 * `save_pretrained` (tests/vectors/gen/decoder_families.py, two or more
 * shapes per family: GQA and MHA, tied and untied, head_dim ≠ hidden /
 * heads, odd sizes, partial rotary, windows, perturbed norms and biases):
 *
 * - from the Hugging Face folder: logits at every prompt position equal
 *   transformers' (float32, eager attention) within 1e-4 relative, and 32
 *   greedy tokens equal transformers';
 * - from our GGUF export of the folder (and from the Hugging Face files
 *   converted back from that GGUF): the same logits and greedy tokens;
 * - llama.cpp running our GGUF export (node-llama-cpp,
 *   tests/vectors/gen/decoder_families_llama_cpp.mjs): the same greedy
 *   tokens, up to a step where llama.cpp's two most likely tokens are
 *   within 2% of each other (its KV cache is float16 and its GELU runs
 *   through a float16 table, so a near tie may fall either way), where our token must be one of the two;
 *   and, fed llama.cpp's tokens, our next-token probabilities equal its
 *   three most likely ones within 5e-3;
 * - `detectArchitecture` names the family from the tensor names alone.
 */

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { memorySource } from "../../core/sources.ts";
import { readGguf, writeGguf } from "../../formats/gguf/mod.ts";
import { loadTransformer, openHfCheckpoint } from "../../io/transformer.ts";
import {
  detectArchitecture,
  ggufToHf,
  hfToGguf,
  transformerFromFiles,
  transformerFromGguf,
} from "../../models/mod.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import {
  assertMatchesLlamaCpp,
  greedy,
  type LlamaCppCase,
  llamaCppRef,
  readVectors,
} from "../_helpers/llama_cpp_decoders.ts";

interface Case {
  name: string;
  model_type: string;
  folder: string;
  prompt: number[];
  vocab: number;
  logits: number[];
  greedy: number[];
  text_ids: number[];
  text_greedy: number[];
}

const vectors = await readVectors<{ cases: Case[] }>(
  "tests/vectors/decoder_families.json",
);
const llamaCpp = await readVectors<{ cases: LlamaCppCase[] }>(
  "tests/vectors/decoder_families_llama_cpp.json",
);

const GGUF_ARCH: Record<string, string> = {
  gemma: "gemma",
  gemma2: "gemma2",
  gemma3_text: "gemma3",
  gemma3: "gemma3",
  phi3: "phi3",
  phi: "phi2",
  gpt2: "gpt2",
  stablelm: "stablelm",
  starcoder2: "starcoder2",
};

function assertLogits(got: Float32Array, c: Case, what: string): void {
  assertEquals(got.length, c.prompt.length * c.vocab, `${what}: length`);
  let worst = 0, at = 0;
  for (let i = 0; i < got.length; i++) {
    const e = Math.abs(got[i] - c.logits[i]) /
      Math.max(1, Math.abs(c.logits[i]));
    if (e > worst) [worst, at] = [e, i];
  }
  assert(
    worst <= 1e-4,
    `${c.name} ${what}: logit ${at} is ${got[at]}, transformers ${
      c.logits[at]
    } (relative error ${worst})`,
  );
}

async function ggufOf(folder: string, name?: string) {
  const ckpt = await openHfCheckpoint(folder);
  try {
    const bytes = await collect(
      writeGguf(hfToGguf(ckpt, name ? { name } : {})),
    );
    return await readGguf(memorySource(bytes, "export.gguf"));
  } finally {
    ckpt.close();
  }
}

async function collect(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

for (const c of vectors.cases) {
  Deno.test(`${c.name}: HF folder equals transformers`, async () => {
    const m = await loadTransformer(join(REPO_ROOT, c.folder));
    assertEquals(
      m.config.family,
      c.model_type === "gemma3" ? "gemma3_text" : c.model_type,
    );
    assertLogits(
      m.forward(c.prompt, undefined, { allPositions: true }),
      c,
      "HF",
    );
    assertEquals(greedy(m, c.prompt, 32), c.greedy, "greedy tokens");
  });

  Deno.test(`${c.name}: our GGUF and back equal transformers`, async () => {
    const file = await ggufOf(join(REPO_ROOT, c.folder));
    const md = file.models[0].metadata;
    assertEquals(md["general.architecture"], GGUF_ARCH[c.model_type]);
    const g = await transformerFromGguf(file);
    assertLogits(
      g.forward(c.prompt, undefined, { allPositions: true }),
      c,
      "GGUF",
    );
    assertEquals(greedy(g, c.prompt, 32), c.greedy, "GGUF greedy tokens");
    const back = await transformerFromFiles(await ggufToHf(file));
    assertLogits(
      back.forward(c.prompt, undefined, { allPositions: true }),
      c,
      "GGUF → HF",
    );
  });

  Deno.test(`${c.name}: greedy from a short prompt equals transformers`, async () => {
    // phi3-longrope-long: 6 prompt tokens + 8 generated cross the original
    // context (8), where transformers runs the whole sequence again with the
    // long factors; the cached path must do the same
    const m = await loadTransformer(join(REPO_ROOT, c.folder));
    assertEquals(greedy(m, c.text_ids, 8), c.text_greedy);
    // the same through forwardBatch (the server's continuous batching),
    // beside another sequence
    const a = m.createState(), b = m.createState();
    let [la] = m.forwardBatch([
      { ids: c.text_ids, state: a },
      { ids: c.prompt, state: b },
    ]);
    const out: number[] = [];
    for (let k = 0; k < 8; k++) {
      let best = 0;
      for (let i = 1; i < la.length; i++) if (la[i] > la[best]) best = i;
      out.push(best);
      [la] = m.forwardBatch([{ ids: [best], state: a }, {
        ids: [3],
        state: b,
      }]);
    }
    assertEquals(out, c.text_greedy, "forwardBatch");
  });

  Deno.test(`${c.name}: llama.cpp on our GGUF`, async (t) => {
    const ref = llamaCppRef(llamaCpp.cases, c.name);
    const model = await transformerFromGguf(
      await ggufOf(join(REPO_ROOT, c.folder)),
    );
    await assertMatchesLlamaCpp(t, c.name, model, c.prompt, ref, 5e-3);
  });

  Deno.test(`${c.name}: detectArchitecture from tensor names`, async () => {
    const file = await ggufOf(join(REPO_ROOT, c.folder));
    const idx = file.models[0].tensors;
    const list = idx.names().map((name) => ({
      name,
      shape: idx.info(name).shape,
    }));
    const want = c.model_type === "gemma3" ? "gemma3_text" : c.model_type;
    // Gemma 1 has Llama's tensor names (in both schemes): only a config tells it apart
    const byNames = want === "gemma" ? "llama" : want;
    assertEquals(detectArchitecture(list).family, byNames, "GGUF names");
    assertEquals(
      detectArchitecture(list, file.models[0].metadata).family,
      want,
      "GGUF names and metadata",
    );
    const hf = await openHfCheckpoint(join(REPO_ROOT, c.folder));
    try {
      const t = hf.model.models[0].tensors;
      const d = detectArchitecture(
        t.names().map((name) => ({ name, shape: t.info(name).shape })),
      );
      assertEquals(d.family, byNames, "HF names");
    } finally {
      hf.close();
    }
  });
}
