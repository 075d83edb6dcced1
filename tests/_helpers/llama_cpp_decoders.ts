/**
 * llama.cpp's greedy tokens and top probabilities on the decoder-family
 * checkpoints (tests/vectors/gen/decoder_families_llama_cpp.mjs), and the
 * check of one of our models against them, shared by the F32 and Q8_0
 * GGUF tests.
 */

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import type { Transformer } from "../../models/mod.ts";
import { REPO_ROOT } from "./fixtures.ts";

/** One checkpoint as llama.cpp ran it, or why it could not. */
export interface LlamaCppCase {
  name: string;
  greedy?: number[];
  top?: [number, number][][];
  error?: string;
}

/** Cases where llama.cpp computes another model, and why. */
export const LLAMA_CPP_DIFFERS: Record<string, string> = {
  "starcoder2-mha-untied-window":
    "llama.cpp's starcoder2 graph has no sliding window (the checkpoint's window is 5 tokens)",
};

/** A JSON vector file under the repository root, parsed. */
export async function readVectors<T>(path: string): Promise<T> {
  return JSON.parse(await Deno.readTextFile(join(REPO_ROOT, path))) as T;
}

/** The `n` greedy tokens `m` generates after `prompt`. */
export function greedy(m: Transformer, prompt: number[], n: number): number[] {
  const st = m.createState();
  let l = m.forward(prompt, st);
  const out: number[] = [];
  for (let k = 0; k < n; k++) {
    let b = 0;
    for (let i = 1; i < l.length; i++) if (l[i] > l[b]) b = i;
    out.push(b);
    if (k < n - 1) l = m.forward([b], st);
  }
  return out;
}

/** llama.cpp's vector for `name`; throws when it has none. */
export function llamaCppRef(
  cases: LlamaCppCase[],
  name: string,
): { greedy: number[]; top: [number, number][][] } {
  const ref = cases.find((x) => x.name === name);
  if (!ref?.greedy || !ref.top) {
    throw new Error(`no llama.cpp vector for ${name}: ${ref?.error}`);
  }
  return { greedy: ref.greedy, top: ref.top };
}

/**
 * `model`'s 32 greedy tokens after `prompt` equal llama.cpp's up to a step
 * where llama.cpp's two most likely tokens are within 2% of each other
 * (there ours must be one of the two); and, fed llama.cpp's tokens, our
 * next-token probabilities equal its top ones within `probTolerance`.
 * For a case in LLAMA_CPP_DIFFERS only that the tokens differ is checked.
 */
export async function assertMatchesLlamaCpp(
  t: Deno.TestContext,
  name: string,
  model: Transformer,
  prompt: number[],
  ref: { greedy: number[]; top: [number, number][][] },
  probTolerance: number,
): Promise<void> {
  const llamaIds = ref.greedy, top = ref.top;
  const ours = greedy(model, prompt, 32);
  if (LLAMA_CPP_DIFFERS[name]) {
    // still a real check: llama.cpp's tokens are not ours
    assert(ours.join() !== llamaIds.join());
    await t.step(`skipped: ${LLAMA_CPP_DIFFERS[name]}`, () => {});
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
    assertEquals(
      ours[k],
      llamaIds[k],
      `step ${k} (llama.cpp ${llamaIds.join()})`,
    );
  }
  // Fed llama.cpp's own tokens, our next-token probabilities equal its
  // three most likely ones (it keeps the KV cache in float16).
  const st = model.createState();
  let l = model.forward(prompt, st);
  for (let k = 0; k < 32; k++) {
    const mx = l.reduce((a, b) => Math.max(a, b), -Infinity);
    let sum = 0;
    for (const x of l) sum += Math.exp(x - mx);
    for (const [id, p] of top[k]) {
      const q = Math.exp(l[id] - mx) / sum;
      assert(
        Math.abs(q - p) < probTolerance,
        `step ${k}: p(${id}) is ${q}, llama.cpp ${p}`,
      );
    }
    if (k < 31) l = model.forward([llamaIds[k]], st);
  }
}
