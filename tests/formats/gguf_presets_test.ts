/**
 * llama-quantize's presets: whole files byte-identical to llama-quantize's
 * outputs (sha256 and per-tensor types in tests/vectors/gguf_presets.json,
 * made by tests/vectors/gen/gguf_presets.sh) on the synthetic Llamas of
 * tests/vectors/gen/synthetic_llama.ts and on the fixtures' models.
 */

import { assert, assertEquals, assertRejects } from "@std/assert";
import { encodeHex } from "@std/encoding";
import { UnsupportedDTypeError } from "../../core/errors.ts";
import type { DTypeName } from "../../core/dtypes.ts";
import { memorySource } from "../../core/sources.ts";
import {
  type GgufPresetOptions,
  type GgufTensorPlan,
  QUANTIZE_TYPES,
  readGguf,
  writeGgufBytes,
} from "../../formats/gguf/mod.ts";
import { fixture, FIXTURES } from "../_helpers/fixtures.ts";
import {
  syntheticLlama,
  type SyntheticVariant,
} from "../vectors/gen/synthetic_llama.ts";

interface Case {
  model: string;
  id: string;
  flags: string[];
  type: string;
  failed?: boolean;
  sha256?: string;
  tensors?: [string, string][];
}
const REF: { inputs: Record<string, string>; cases: Case[] } = JSON.parse(
  await Deno.readTextFile(
    new URL("../vectors/gguf_presets.json", import.meta.url),
  ),
);

async function sha(bytes: Uint8Array): Promise<string> {
  return encodeHex(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
}

/** llama-quantize's flags as writer options. */
function options(flags: string[]): GgufPresetOptions {
  const o: GgufPresetOptions = {};
  for (let i = 0; i < flags.length; i++) {
    const f = flags[i];
    if (f === "--pure") o.pure = true;
    else if (f === "--leave-output-tensor") o.leaveOutputTensor = true;
    else if (f === "--output-tensor-type") {
      o.outputTensorType = flags[++i].toUpperCase() as DTypeName;
    } else if (f === "--token-embedding-type") {
      o.tokenEmbeddingType = flags[++i].toUpperCase() as DTypeName;
    } else throw new Error(`unknown flag ${f} in the vectors`);
  }
  return o;
}

async function input(model: string): Promise<Uint8Array | undefined> {
  if (model.startsWith("syn-")) {
    return await syntheticLlama(model.slice(4) as SyntheticVariant);
  }
  if (!FIXTURES) return undefined;
  return await Deno.readFile(fixture("gguf", `${model}.gguf`));
}

for (const model of Object.keys(REF.inputs)) {
  const cases = REF.cases.filter((c) => c.model === model && !c.failed);
  Deno.test({
    name:
      `gguf presets on ${model}: ${cases.length} files byte-identical to llama-quantize's`,
    ignore: !model.startsWith("syn-") && !FIXTURES,
    async fn(t) {
      const bytes = (await input(model))!;
      assertEquals(
        await sha(bytes),
        REF.inputs[model],
        "the input llama.cpp saw",
      );
      const file = await readGguf(memorySource(bytes));
      for (const c of cases) {
        await t.step(`${c.id} ${c.flags.join(" ")}`.trim(), async () => {
          const encoders = c.tensors!.every(([, ty]) =>
            ["F32", "F16", "BF16"].includes(ty) ||
            QUANTIZE_TYPES.includes(ty as DTypeName)
          );
          const opts = {
            preset: c.type,
            presetOptions: options(c.flags),
          };
          if (!encoders) {
            // IQ types are written by the other half of issue 24: until
            // their encoders exist the writer must refuse by name
            const missing = c.tensors!.find(([, ty]) =>
              !["F32", "F16", "BF16"].includes(ty) &&
              !QUANTIZE_TYPES.includes(ty as DTypeName)
            )![1];
            await assertRejects(
              () =>
                writeGgufBytes(file, opts),
              UnsupportedDTypeError,
              `has no ${missing} encoder`,
            );
            return;
          }
          let plan: GgufTensorPlan[] = [];
          const out = await writeGgufBytes(file, {
            ...opts,
            onPlan: (p) => (plan = p),
          });
          assertEquals(plan.map((p) => [p.name, p.to]), c.tensors);
          assertEquals(await sha(out), c.sha256, "whole file");
        });
      }
    },
  });
}

Deno.test("gguf presets: Q2_K_S without an importance matrix is refused, as llama-quantize does", async () => {
  const file = await readGguf(memorySource(await syntheticLlama("mha")));
  await assertRejects(
    () => writeGgufBytes(file, { preset: "Q2_K_S" }),
    TypeError,
    "requires an importance matrix",
  );
});

Deno.test("gguf presets: an unknown preset names the presets", async () => {
  const file = await readGguf(memorySource(await syntheticLlama("mha")));
  const e = await assertRejects(
    () => writeGgufBytes(file, { preset: "Q4_K_X" }),
    TypeError,
  );
  assert(e.message.includes("Q4_K_M"), e.message);
});

Deno.test({
  name:
    "gguf presets: --output-tensor-type / --token-embedding-type whose block does not fit the rows are refused (llama-quantize fails on them too)",
  ignore: !FIXTURES,
  async fn() {
    const failed = REF.cases.find((c) =>
      c.model === "llama-2-tiny-random" && c.id === "Q4_K_M-types"
    )!;
    assert(failed?.failed, "llama-quantize failed on this case");
    const file = await readGguf(memorySource((await input(failed.model))!));
    await assertRejects(
      () =>
        writeGgufBytes(file, {
          preset: failed.type,
          presetOptions: options(failed.flags),
        }),
      RangeError,
      "its rows of 8 do not divide",
    );
  },
});
