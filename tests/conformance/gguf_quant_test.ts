/**
 * GGUF quantizer conformance: quantize-on-write of the F32 sources gives
 * byte-identical tensors (and the same metadata) as llama.cpp's outputs:
 * `reference/quant` (llama-quantize --pure, every type) and
 * `reference/llama-logits/stories260K-{F16,Q8_0,Q4_0}` (ffn_down rows of
 * 172 fall back to F16).
 */

import { assertEquals } from "@std/assert";
import { encodeHex } from "@std/encoding";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";
import {
  type GgufQuantType,
  type GgufTensorPlan,
  readGguf,
  readGgufHeader,
  writeGgufBytes,
} from "../../formats/gguf/mod.ts";
import { fileSource } from "../../io/file.ts";
import { memorySource } from "../../core/sources.ts";

function entries(h: Awaited<ReturnType<typeof readGgufHeader>>): string[] {
  return h.metadata.map((e) =>
    JSON.stringify(
      [e.key, e.type, e.value],
      (_, v) => typeof v === "bigint" ? `${v}n` : v,
    )
  ).sort();
}

async function compare(
  source: string,
  reference: string,
  type: GgufQuantType,
): Promise<GgufTensorPlan[]> {
  const src = await fileSource(source);
  const refSrc = await fileSource(reference);
  try {
    let plan: GgufTensorPlan[] = [];
    const out = await writeGgufBytes(await readGguf(src), {
      quantize: type,
      onPlan: (p) => (plan = p),
    });
    const ours = (await readGguf(memorySource(out))).models[0].tensors;
    const ref = (await readGguf(refSrc)).models[0].tensors;
    assertEquals(ours.names().slice().sort(), ref.names().slice().sort());
    for (const name of ref.names()) {
      const a = await ours.load(name);
      const b = await ref.load(name);
      assertEquals(a.dtype, b.dtype, `${reference} ${name}`);
      if (encodeHex(a.bytes) !== encodeHex(b.bytes)) {
        let at = 0;
        while (a.bytes[at] === b.bytes[at]) at++;
        throw new Error(
          `${type} ${name}: bytes differ from ${reference} first at byte ${at}`,
        );
      }
    }
    // Same keys, types and values as llama.cpp wrote (it adds
    // general.quantization_version and sets general.file_type, as we do).
    assertEquals(
      entries(await readGgufHeader(memorySource(out))),
      entries(await readGgufHeader(refSrc)),
    );
    return plan;
  } finally {
    src.close();
    refSrc.close();
  }
}

const PAIRS: [GgufQuantType, string][] = [
  ["Q8_0", "Q8_0"],
  ["Q4_0", "Q4_0"],
  ["Q4_1", "Q4_1"],
  ["Q5_0", "Q5_0"],
  ["Q5_1", "Q5_1"],
  ["Q2_K", "Q2_K"],
  ["Q3_K", "Q3_K_M"],
  ["Q4_K", "Q4_K_M"],
  ["Q5_K", "Q5_K_M"],
  ["Q6_K", "Q6_K"],
];

for (const [type, ftype] of PAIRS) {
  conformanceTest(
    `gguf quantize ${type}: every tensor byte-identical to llama-quantize's ${ftype} file`,
    async () => {
      const dir = fixture("reference", "quant");
      const plan = await compare(
        `${dir}/synthetic-llama-f32.gguf`,
        `${dir}/synthetic-llama-${ftype}.gguf`,
        type,
      );
      assertEquals(plan.filter((p) => p.to === type).length, 16);
      assertEquals(
        plan.filter((p) => p.to === "F32").map((p) => p.reason),
        new Array(5).fill("1-D tensors stay as they are"),
      );
    },
  );
}

for (const type of ["F16", "Q8_0", "Q4_0"] as const) {
  conformanceTest(
    `gguf quantize stories260K to ${type}: identical to llama.cpp's file, ffn_down falls back to F16`,
    async () => {
      const plan = await compare(
        fixture("gguf", "stories260K.gguf"),
        fixture("reference", "llama-logits", `stories260K-${type}.gguf`),
        type,
      );
      const down = plan.filter((p) => p.name.endsWith("ffn_down.weight"));
      assertEquals(down.map((p) => p.to), new Array(5).fill("F16"));
      if (type !== "F16") {
        assertEquals(
          down[0].reason,
          `rows of 172 do not divide the ${type} block size 32; F16 instead`,
        );
      }
    },
  );
}
