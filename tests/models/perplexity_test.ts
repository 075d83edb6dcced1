/**
 * Perplexity and KL divergence against llama-perplexity's numbers
 * (tests/vectors/perplexity/llama_perplexity.json, made by
 * tests/vectors/gen/perplexity.sh) on stories260K and the synthetic gqa4
 * Llama, text tests/vectors/perplexity/stories.txt, context 128, 20 chunks.
 *
 * Tolerances: perplexity within 0.1 % (what the issue asks). KL divergence
 * within 0.1 % of llama-perplexity `--no-repack` (ggml's `vec_dot` path) on
 * the synthetic Q4_K_M, and within 0.5 % of llama-perplexity's default: on
 * AVX2 machines llama.cpp multiplies Q4_K weights with repacked 8×8 kernels
 * whose float rounding differs from `vec_dot`'s, and the Q8_K rounding of the
 * next layer's activations turns those last-bit differences into ~2e-2 RMS
 * per-token log-probability differences; its own KL divergence moves by
 * 0.33 % between the two paths (0.011169 vs 0.011206). Reading llama.cpp's
 * base file or ours gives the same value to 1e-4 relative.
 */

import {
  assert,
  assertAlmostEquals,
  assertEquals,
  assertThrows,
} from "@std/assert";
import { encodeHex } from "@std/encoding";
import { memorySource } from "../../core/sources.ts";
import { readGguf, writeGgufBytes } from "../../formats/gguf/mod.ts";
import { transformerFromGguf } from "../../models/transformer.ts";
import {
  klDivergence,
  perplexity,
  readLogitsFile,
} from "../../models/perplexity.ts";
import { fixture, FIXTURES } from "../_helpers/fixtures.ts";
import { syntheticLlama } from "../vectors/gen/synthetic_llama.ts";

const REF = JSON.parse(
  await Deno.readTextFile(
    new URL("../vectors/perplexity/llama_perplexity.json", import.meta.url),
  ),
);
const TEXT = await Deno.readTextFile(
  new URL("../vectors/perplexity/stories.txt", import.meta.url),
);

async function model(bytes: Uint8Array) {
  return await transformerFromGguf(await readGguf(memorySource(bytes)));
}

function rel(a: number, b: number): number {
  return Math.abs(a / b - 1);
}

async function checkPerplexity(name: string, bytes: Uint8Array) {
  const ref = REF.perplexity[name];
  const m = await model(bytes);
  const tokens = m.tokenizer!.encode(TEXT);
  const r = perplexity(m, tokens, { ctx: 128, chunks: 20, saveLogits: true });
  // the tokens llama.cpp evaluated, from its base file
  const base = readLogitsFile(r.logitsFile!, "ours");
  assertEquals(
    encodeHex(
      await crypto.subtle.digest(
        "SHA-256",
        new Uint8Array(
          base.tokens.buffer as ArrayBuffer,
          base.tokens.byteOffset,
          base.tokens.byteLength,
        ),
      ),
    ),
    ref.tokens_sha256,
    "same tokens as llama.cpp",
  );
  assertEquals([r.chunks, base.vocab], [ref.chunks, ref.vocab]);
  const want = Math.exp(ref.mean_nll);
  assert(rel(r.ppl, want) < 1e-3, `${name}: PPL ${r.ppl} vs ${want}`);
  assertAlmostEquals(r.uncertainty, ref.uncertainty, ref.uncertainty * 0.01);
  for (let i = 0; i < r.perChunk.length; i++) {
    assert(
      rel(r.perChunk[i], ref.per_chunk_ppl[i]) < 1e-3,
      `${name} chunk ${i + 1}: ${r.perChunk[i]} vs ${ref.per_chunk_ppl[i]}`,
    );
  }
  return { m, base };
}

async function checkKl(
  name: string,
  base: ReturnType<typeof readLogitsFile>,
  q: Uint8Array,
) {
  const ref = REF.kl_divergence[name];
  const r = klDivergence(await model(q), base);
  const exact = REF.kl_divergence[`${name}-no-repack`];
  if (exact) {
    assert(
      rel(r.kld, exact.kld) < 1e-3,
      `${name}: KLD ${r.kld} vs llama.cpp --no-repack ${exact.kld}`,
    );
    // the bound, 0.1 %: the Q6_K kernel's float order (llama.cpp's
    // AVX2 arrangement) moves PPL(Q) by 1.6e-4 against the AVX-512 build
    // that wrote the reference, as a 1-ulp nudge of the norms would
    assert(
      rel(r.ppl, exact.ppl) < 1e-3,
      `${name}: PPL(Q) ${r.ppl} vs ${exact.ppl}; KLD ${r.kld} vs ${exact.kld}`,
    );
  }
  assert(rel(r.ppl, ref.ppl) < 1e-3, `${name}: PPL(Q) ${r.ppl} vs ${ref.ppl}`);
  assert(
    rel(r.pplBase, ref.ppl_base) < 1e-3,
    `${name}: PPL(base) ${r.pplBase} vs ${ref.ppl_base}`,
  );
  assert(rel(r.kld, ref.kld) < 5e-3, `${name}: KLD ${r.kld} vs ${ref.kld}`);
  assertAlmostEquals(100 * r.sameTop, ref.same_top_percent, 1);
  assertAlmostEquals(100 * r.deltaPRms, ref.rms_delta_p_percent, 0.05);
}

Deno.test("perplexity of the synthetic Llama equals llama-perplexity's; KL divergence of its Q4_K_M too", async () => {
  const f16 = await syntheticLlama("gqa4");
  const { base } = await checkPerplexity("syn-gqa4", f16);
  // Q4_K_M as llama-quantize writes it (tests/formats/gguf_presets_test.ts
  // checks the bytes are its)
  const q = await writeGgufBytes(await readGguf(memorySource(f16)), {
    preset: "Q4_K_M",
  });
  await checkKl("syn-gqa4-Q4_K_M", base, q);
});

Deno.test({
  name:
    "conformance: perplexity of stories260K equals llama-perplexity's; KL divergence of its Q4_0 too",
  ignore: !FIXTURES,
  async fn() {
    const { base } = await checkPerplexity(
      "stories260K",
      await Deno.readFile(fixture("gguf/stories260K.gguf")),
    );
    await checkKl(
      "stories260K-Q4_0",
      base,
      await Deno.readFile(
        fixture("reference/llama-logits/stories260K-Q4_0.gguf"),
      ),
    );
  },
});

Deno.test("perplexity: short texts and bad base files are refused with the numbers", () => {
  assertThrows(
    () => readLogitsFile(new TextEncoder().encode("_notlog_xxxxxxxxxxxx"), "b"),
    SyntaxError,
    "b is not a llama-perplexity log-probability file",
  );
  const head = new Uint8Array(20);
  head.set(new TextEncoder().encode("_logits_"));
  new DataView(head.buffer).setInt32(8, 128, true);
  new DataView(head.buffer).setInt32(12, 512, true);
  new DataView(head.buffer).setInt32(16, 2, true);
  assertThrows(
    () => readLogitsFile(head, "b"),
    RangeError,
    "b: 2 chunks of 128 tokens over 512 tokens need",
  );
});
