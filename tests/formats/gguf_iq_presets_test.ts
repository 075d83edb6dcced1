/**
 * The IQ2/IQ3 presets against llama-quantize: with and without
 * llama-imatrix's matrices, whole files byte-identical to llama-quantize's
 * (tests/vectors/imatrix/iq_presets.json, made by
 * tests/vectors/gen/iq_presets.sh) where every type the preset chooses has
 * an encoder here; refused by the missing type's name where one has none;
 * refused, as llama-quantize refuses, where the preset needs a matrix and
 * none is given.
 */

import { assertRejects } from "@std/assert";
import type { DTypeName } from "../../core/dtypes.ts";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import { QUANTIZE_TYPES } from "../../core/quants/mod.ts";
import { memorySource } from "../../core/sources.ts";
import { readGguf, writeGgufBytes } from "../../formats/gguf/mod.ts";
import { imatrixWriterOptions } from "../../cli/_quant.ts";
import {
  syntheticLlama,
  type SyntheticVariant,
} from "../vectors/gen/synthetic_llama.ts";
import {
  assertWritesLikeLlamaQuantize,
  quantizeCases,
  readImatrixVector,
} from "../_helpers/llama_quantize.ts";

const REF = { cases: await quantizeCases("iq_presets.json") };

const writable = (ty: string) =>
  ["F32", "F16", "BF16"].includes(ty) ||
  QUANTIZE_TYPES.includes(ty as DTypeName);

for (const variant of ["gqa4", "mha"] as const) {
  const cases = REF.cases.filter((c) => c.model === `syn-${variant}`);
  Deno.test(`gguf IQ presets on syn-${variant}: ${cases.length} llama-quantize runs reproduced`, async (t) => {
    const file = await readGguf(
      memorySource(await syntheticLlama(variant as SyntheticVariant)),
    );
    for (const c of cases) {
      await t.step(`${c.type} ${c.imatrix || "without a matrix"}`, async () => {
        const opts = c.imatrix
          ? imatrixWriterOptions(await readImatrixVector(c.imatrix), c.imatrix)
          : {};
        if (c.failed) {
          await assertRejects(
            () => writeGgufBytes(file, { preset: c.type, ...opts }),
            TypeError,
            "requires an importance matrix",
          );
          return;
        }
        const missing = c.tensors!.find(([, ty]) => !writable(ty));
        if (missing) {
          await assertRejects(
            () => writeGgufBytes(file, { preset: c.type, ...opts }),
            UnsupportedDTypeError,
            missing[1],
          );
          return;
        }
        await assertWritesLikeLlamaQuantize(file, c, opts);
      });
    }
  });
}
