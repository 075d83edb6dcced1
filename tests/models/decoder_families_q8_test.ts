/**
 * Q8_0 GGUF exports of the decoder_block families (gemma, gemma2,
 * gemma3_text, phi3, phi, gpt2, stablelm, starcoder2) against llama.cpp
 * running the same files (node-llama-cpp,
 * tests/vectors/gen/decoder_families_llama_cpp.mjs with `q8_0`, on
 * decoder_families_gguf.ts's `Q8_0` export): our greedy tokens from our
 * Q8_0 export equal llama.cpp's, up to a step where llama.cpp's two most
 * likely tokens are within 2% of each other, where ours must be one of the
 * two; fed llama.cpp's tokens, our next-token probabilities equal its three
 * most likely ones within 2.5e-2 (measured ≤ 2.2e-2; 2.3e-2 with the
 * weights widened to F32 instead of running llama.cpp's Q8_0 activation
 * rule: these tiny random models move that much from one Q8_0 activation
 * code landing the other way, and llama.cpp's KV cache is float16).
 * Checkpoints whose rows are not a multiple of 32 stay F16 in both
 * converters (llama.cpp's fallback), so they check the F16 path.
 * phi3-longrope-long's prompt (12) is longer than its original context (8)
 * and llama.cpp's context (64) too, so both run the long factors there.
 */

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { convertHfToGguf, loadTransformer } from "../../io/mod.ts";
import type { Transformer } from "../../models/mod.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";

interface Case {
  name: string;
  folder: string;
  prompt: number[];
}

interface LlamaCppCase {
  name: string;
  greedy?: number[];
  top?: [number, number][][];
  error?: string;
}

const vectors = JSON.parse(
  await Deno.readTextFile(
    join(REPO_ROOT, "tests/vectors/decoder_families.json"),
  ),
) as { cases: Case[] };
const llamaCpp = JSON.parse(
  await Deno.readTextFile(
    join(REPO_ROOT, "tests/vectors/decoder_families_llama_cpp_q8_0.json"),
  ),
) as { cases: LlamaCppCase[] };

/** Cases where llama.cpp computes another model, and why. */
const LLAMA_CPP_DIFFERS: Record<string, string> = {
  "starcoder2-mha-untied-window":
    "llama.cpp's starcoder2 graph has no sliding window (the checkpoint's window is 5 tokens)",
};

function argmax(l: Float32Array): number {
  let b = 0;
  for (let i = 1; i < l.length; i++) if (l[i] > l[b]) b = i;
  return b;
}

function greedy(m: Transformer, prompt: number[], n: number): number[] {
  const st = m.createState();
  let l = m.forward(prompt, st);
  const out: number[] = [];
  for (let k = 0; k < n; k++) {
    out.push(argmax(l));
    if (k < n - 1) l = m.forward([out[k]], st);
  }
  return out;
}

for (const c of vectors.cases) {
  Deno.test(`${c.name}: a Q8_0 GGUF generates llama.cpp's greedy tokens`, async (t) => {
    const ref = llamaCpp.cases.find((x) => x.name === c.name);
    if (!ref?.greedy || !ref.top) {
      throw new Error(`no llama.cpp vector for ${c.name}: ${ref?.error}`);
    }
    const dir = await Deno.makeTempDir({ prefix: `dec-q8-${c.name}-` });
    try {
      const out = join(dir, "m.gguf");
      await convertHfToGguf(join(REPO_ROOT, c.folder), out, {
        name: "tiny",
        quantize: "Q8_0",
      });
      const model = await loadTransformer(out);
      if (model.config.hiddenSize % 32 === 0) {
        assert(
          [...model.tensors.values()].some((x) => x.dtype === "Q8_0"),
          "weights kept as Q8_0",
        );
      }
      const ours = greedy(model, c.prompt, 32);
      const cpp = ref.greedy, top = ref.top;
      if (LLAMA_CPP_DIFFERS[c.name]) {
        assert(ours.join() !== cpp.join());
        await t.step(`skipped: ${LLAMA_CPP_DIFFERS[c.name]}`, () => {});
        return;
      }
      for (let k = 0; k < 32; k++) {
        const [[a, pa], [b, pb]] = top[k];
        if ((pa - pb) / pa < 0.02) {
          assert(
            ours[k] === a || ours[k] === b,
            `step ${k}: ours ${ours[k]}, llama.cpp's near tie ${a}/${b}`,
          );
          break;
        }
        assertEquals(ours[k], cpp[k], `step ${k} (llama.cpp ${cpp.join()})`);
      }
      const st = model.createState();
      let l = model.forward(c.prompt, st);
      for (let k = 0; k < 32; k++) {
        const mx = l.reduce((x, y) => Math.max(x, y), -Infinity);
        let sum = 0;
        for (const x of l) sum += Math.exp(x - mx);
        for (const [id, p] of top[k]) {
          const q = Math.exp(l[id] - mx) / sum;
          assert(
            Math.abs(q - p) < 2.5e-2,
            `step ${k}: p(${id}) is ${q}, llama.cpp ${p}`,
          );
        }
        if (k < 31) l = model.forward([cpp[k]], st);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
