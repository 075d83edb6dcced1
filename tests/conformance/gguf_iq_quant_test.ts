/**
 * GGUF quantize-on-write to IQ4_NL, IQ4_XS and MXFP4 against
 * `llama-quantize --pure` (IQ4_NL, IQ4_XS, MXFP4_MOE) of the synthetic F32
 * Llama in `reference/quant`: every tensor has llama.cpp's type and bytes
 * (SHA-256 from `tests/vectors/gen/iq_llama_quantize.py`), with the same
 * metadata keys and types and `general.file_type`. llama-quantize writes the
 * tensors in another order, so the whole files differ only in layout. Our
 * file, loaded as a Llama, greedy-decodes llama.cpp's ids from its file
 * (node-llama-cpp, two prompts × 32 tokens).
 */

import { assertEquals } from "@std/assert";
import { encodeHex } from "@std/encoding";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";
import {
  GgufType,
  readGguf,
  readGgufHeader,
  writeGgufBytes,
} from "../../formats/gguf/mod.ts";
import { fileSource } from "../../io/file.ts";
import { memorySource } from "../../core/sources.ts";
import { loadTransformer } from "../../io/transformer.ts";
import { generate } from "../../models/mod.ts";
import { shutdownKernels } from "../../kernels/fast/runtime.ts";

const exp = JSON.parse(
  await Deno.readTextFile(
    new URL("../vectors/iq_llama_quantize.json", import.meta.url),
  ),
) as {
  files: Record<string, {
    file_type: number;
    greedy: { prompt: number[]; greedy: number[] }[];
    keys: Record<string, string>;
    tensors: Record<string, { type: string; sha256: string }>;
  }>;
};

const TYPE_NAME = Object.fromEntries(
  Object.entries(GgufType).map(([k, v]) => [v, k]),
);

async function sha256(b: Uint8Array): Promise<string> {
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return encodeHex(new Uint8Array(await crypto.subtle.digest("SHA-256", copy)));
}

for (
  const [type, ftype] of [
    ["IQ4_NL", "IQ4_NL"],
    ["IQ4_XS", "IQ4_XS"],
    ["MXFP4", "MXFP4_MOE"],
  ] as const
) {
  conformanceTest(
    `gguf quantize ${type}: every tensor byte-identical to llama-quantize --pure ${ftype}`,
    async () => {
      const ref = exp.files[ftype];
      const src = await fileSource(
        fixture("reference", "quant", "synthetic-llama-f32.gguf"),
      );
      try {
        const out = await writeGgufBytes(await readGguf(src), {
          quantize: type,
        });
        const tensors = (await readGguf(memorySource(out))).models[0].tensors;
        assertEquals(
          tensors.names().slice().sort(),
          Object.keys(ref.tensors).sort(),
        );
        let quantized = 0;
        for (const [name, want] of Object.entries(ref.tensors)) {
          const t = await tensors.load(name);
          assertEquals(t.dtype, want.type, name);
          assertEquals(await sha256(t.bytes), want.sha256, `${type} ${name}`);
          if (t.dtype === type) quantized++;
        }
        assertEquals(quantized, 16);
        const h = await readGgufHeader(memorySource(out));
        assertEquals(
          Object.fromEntries(h.metadata.map((e) => [e.key, TYPE_NAME[e.type]])),
          ref.keys,
        );
        assertEquals(
          h.metadata.find((e) => e.key === "general.file_type")?.value,
          ref.file_type,
        );
        const path = await Deno.makeTempFile({ suffix: ".gguf" });
        try {
          await Deno.writeFile(path, out);
          const model = await loadTransformer(path);
          for (const c of ref.greedy) {
            const ids: number[] = [];
            for await (
              const t of generate(model, c.prompt, {
                greedy: true,
                maxTokens: c.greedy.length,
                stopAtEos: false,
              })
            ) ids.push(t.id);
            assertEquals(ids, c.greedy, `${type} prompt ${c.prompt}`);
          }
        } finally {
          await Deno.remove(path);
        }
      } finally {
        src.close();
        await shutdownKernels();
      }
    },
  );
}
