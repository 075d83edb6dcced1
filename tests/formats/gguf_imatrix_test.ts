/**
 * Importance matrices against llama.cpp: quantize with llama-imatrix's
 * matrices gives llama-quantize's files byte for byte
 * (tests/vectors/imatrix/quantize.json, made by
 * tests/vectors/gen/imatrix.sh), both file formats read, and the matrix
 * modelhost collects equals llama-imatrix's within 0.5 % per value.
 *
 * That tolerance: llama.cpp rounds activations to F16 in its F16 matrix
 * products (and in the attention), so the inputs of later matrices differ
 * from ours by about 1e-3 relative; the counts and the entry names are
 * compared exactly.
 */

import { assert, assertEquals, assertThrows } from "@std/assert";
import { quantizeWithImatrix } from "../../core/quants/k_encode_imatrix.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { memorySource } from "../../core/sources.ts";
import { readGguf } from "../../formats/gguf/mod.ts";
import {
  computeImatrix,
  imatrixToDat,
  imatrixToGguf,
  readImatrix,
} from "../../models/imatrix.ts";
import { transformerFromGguf } from "../../models/transformer.ts";
import { imatrixWriterOptions } from "../../cli/_quant.ts";
import {
  syntheticLlama,
  type SyntheticVariant,
} from "../vectors/gen/synthetic_llama.ts";
import {
  assertWritesLikeLlamaQuantize,
  IMATRIX_DIR,
  quantizeCases,
  readImatrixVector,
} from "../_helpers/llama_quantize.ts";

const REF = { cases: await quantizeCases("quantize.json") };

for (const variant of ["gqa4", "mha"] as const) {
  const cases = REF.cases.filter((c) =>
    c.model === `syn-${variant}` && !c.failed
  );
  Deno.test(`gguf --imatrix on syn-${variant}: ${cases.length} files byte-identical to llama-quantize's`, async (t) => {
    const file = await readGguf(
      memorySource(await syntheticLlama(variant as SyntheticVariant)),
    );
    for (const c of cases) {
      await t.step(`${c.type} with ${c.imatrix}`, async () => {
        const im = await readImatrixVector(c.imatrix);
        await assertWritesLikeLlamaQuantize(
          file,
          c,
          imatrixWriterOptions(im, c.imatrix),
        );
      });
    }
  });
}

Deno.test("gguf --imatrix: a type without a weighted encoder is refused by name", () => {
  assertThrows(
    () =>
      quantizeWithImatrix(
        "NVFP4",
        new Float32Array(256),
        256,
        new Float32Array(256),
      ),
    UnsupportedDTypeError,
    "no importance-matrix encoder for NVFP4",
  );
});

Deno.test("imatrix: collected over the same text equals llama-imatrix's within 0.5 %; the GGUF and .dat forms round-trip", async () => {
  const ref = await readImatrix(
    await Deno.readFile(new URL("syn-mha.imatrix.gguf", IMATRIX_DIR)),
    "ref",
  );
  const dat = await readImatrix(
    await Deno.readFile(new URL("syn-mha.imatrix.dat", IMATRIX_DIR)),
    "ref.dat",
  );
  assert(dat.legacy);
  assertEquals([...dat.entries.keys()].sort(), [...ref.entries.keys()].sort());
  const model = await transformerFromGguf(
    await readGguf(memorySource(await syntheticLlama("mha"))),
  );
  const text = await Deno.readTextFile(
    new URL("../vectors/perplexity/stories.txt", import.meta.url),
  );
  const ours = computeImatrix(model, model.tokenizer!.encode(text), {
    ctx: 128,
    chunks: 8,
    dataset: "stories.txt",
  });
  assertEquals([...ours.entries.keys()].sort(), [...ref.entries.keys()].sort());
  assertEquals([ours.chunkCount, ours.chunkSize], [
    ref.chunkCount,
    ref.chunkSize,
  ]);
  let worst = 0;
  for (const [name, e] of ref.entries) {
    const o = ours.entries.get(name)!;
    assertEquals(o.counts, e.counts, name);
    for (let i = 0; i < e.sums.length; i++) {
      worst = Math.max(worst, Math.abs(o.sums[i] / e.sums[i] - 1));
    }
  }
  assert(worst < 5e-3, `worst relative difference ${worst}`);
  // the legacy file holds mean × calls: our writer gives llama's numbers
  const back = await readImatrix(imatrixToDat(ours), "ours.dat");
  for (const [name, e] of dat.entries) {
    const o = back.entries.get(name)!;
    assertEquals(o.counts, e.counts, name);
    for (let i = 0; i < e.sums.length; i++) {
      assert(Math.abs(o.sums[i] / e.sums[i] - 1) < 5e-3, `${name}[${i}]`);
    }
  }
  const g = await readImatrix(await imatrixToGguf(ours), "ours.gguf");
  assertEquals(g.datasets, ["stories.txt"]);
  assertEquals(
    g.entries.get("blk.0.ffn_down.weight")!.sums,
    ours.entries.get("blk.0.ffn_down.weight")!.sums,
  );
});
