// embed(): a decoder model's embedding is the mean of its last hidden
// states (after the final norm), L2-normalized; checked against llama.cpp's
// hidden states of stories260K (node-llama-cpp, tests/vectors/gen/
// embed_llama_cpp.mjs): the last token's state for `pooling: "last"`, the
// mean over every prefix's last state for the mean.

import {
  assert,
  assertAlmostEquals,
  assertEquals,
  assertThrows,
} from "@std/assert";
import { join } from "@std/path";
import { loadTransformer } from "../../io/transformer.ts";
import { embed } from "../../models/embed.ts";
import { conformanceTest, fixture, REPO_ROOT } from "../_helpers/fixtures.ts";

interface Vectors {
  inputs: { text: string; ids: number[]; prefixLast: number[][] }[];
}

/** Cosine similarity and the largest difference relative to the largest magnitude. */
function compare(a: ArrayLike<number>, b: ArrayLike<number>) {
  let ab = 0, aa = 0, bb = 0, diff = 0, scale = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return { cos: ab / Math.sqrt(aa * bb), rel: diff / scale };
}

conformanceTest(
  "embed: last and mean pooling of stories260K match llama.cpp's hidden states",
  async () => {
    const v: Vectors = JSON.parse(
      await Deno.readTextFile(
        join(REPO_ROOT, "tests/vectors/embed_llama_cpp.json"),
      ),
    );
    const model = await loadTransformer(fixture("gguf/stories260K.gguf"));
    for (const input of v.inputs) {
      assertEquals(model.tokenizer!.encode(input.text), input.ids);
      const last =
        embed(model, input.text, { pooling: "last", normalize: false })
          .embeddings[0];
      const ref = input.prefixLast[input.prefixLast.length - 1];
      let c = compare(last, ref);
      // llama.cpp keeps its KV cache in F16: a few 1e-4 apart.
      assert(
        c.cos > 0.99999 && c.rel < 2e-3,
        `${input.text}: ${JSON.stringify(c)}`,
      );
      const d = ref.length;
      const mean = new Float64Array(d);
      for (const p of input.prefixLast) {
        for (let i = 0; i < d; i++) mean[i] += p[i] / input.prefixLast.length;
      }
      const norm = Math.hypot(...mean);
      const { embeddings, promptTokens } = embed(model, [input.text]);
      assertEquals(promptTokens, input.ids.length);
      c = compare(embeddings[0], Array.from(mean, (x) => x / norm));
      assert(
        c.cos > 0.99999 && c.rel < 2e-3,
        `${input.text} (mean): ${JSON.stringify(c)}`,
      );
      assertAlmostEquals(Math.hypot(...embeddings[0]), 1, 1e-6);
    }
  },
);

conformanceTest(
  "embed: ids and texts, several at once, truncation and refusals",
  async () => {
    const model = await loadTransformer(fixture("gguf/stories260K.gguf"));
    const ids = model.tokenizer!.encode("Once upon a time");
    const a = embed(model, ["Once upon a time", ids]);
    assertEquals(a.tokenCounts, [ids.length, ids.length]);
    assertEquals(Array.from(a.embeddings[0]), Array.from(a.embeddings[1]));
    assertThrows(() => embed(model, [[]]), RangeError, "no tokens");
    const long = Array.from({ length: 2100 }, () => 300);
    assertThrows(
      () => embed(model, [long]),
      RangeError,
      "the context holds 2048",
    );
    assertEquals(embed(model, [long], { truncate: true }).tokenCounts, [2048]);
  },
);
