/**
 * Writes tests/vectors/iq_llama/logits.json: llama.cpp's logits for GGUF
 * files modelhost wrote. The synthetic gqa4 Llama (synthetic_llama.ts: 8
 * layers, width 256) is written by modelhost's GGUF writer as IQ3_S (every
 * weight, `--pure`) and as IQ2_XS (every block weight IQ2_XS with the
 * committed llama-imatrix matrix, token embedding and output IQ3_S); each
 * file's sha256 is recorded, and node-llama-cpp (iq_llama_logits.mjs, its
 * prebuilt CPU llama.cpp, one thread, F32 KV cache) evaluates a prompt and
 * returns the raw logits at every position.
 *
 *   NODE_PATH=/path/to/node_modules deno run -A tests/vectors/gen/iq_llama_logits.ts
 *
 * The test (tests/models/iq_llama_logits_test.ts) writes the same files,
 * checks the sha256, and compares its logits with these.
 */
import { encodeHex } from "@std/encoding";
import { memorySource } from "../../../core/sources.ts";
import { readGguf, writeGgufBytes } from "../../../formats/gguf/mod.ts";
import { readImatrix } from "../../../models/imatrix.ts";
import { imatrixWriterOptions } from "../../../cli/_quant.ts";
import { syntheticLlama } from "./synthetic_llama.ts";

/** The prompt: BOS, then byte tokens. */
export const IQ_LLAMA_PROMPT: number[] = [
  1,
  ...new TextEncoder().encode("Once upon a time").map((b) => b + 3),
];

/** The two files, as the test writes them too. */
export async function iqLlamaFiles(): Promise<Record<string, Uint8Array>> {
  const file = await readGguf(memorySource(await syntheticLlama("gqa4")));
  const imPath = new URL("../imatrix/syn-gqa4.imatrix.gguf", import.meta.url);
  const im = imatrixWriterOptions(
    await readImatrix(await Deno.readFile(imPath), "syn-gqa4.imatrix.gguf"),
    "syn-gqa4.imatrix.gguf",
  );
  return {
    IQ3_S: await writeGgufBytes(file, {
      preset: "IQ3_S",
      presetOptions: { pure: true },
    }),
    IQ2_XS: await writeGgufBytes(file, {
      preset: "IQ2_XS",
      ...im,
      presetOptions: {
        pure: true,
        tokenEmbeddingType: "IQ3_S",
        outputTensorType: "IQ3_S",
      },
    }),
  };
}

if (import.meta.main) {
  const dir = await Deno.makeTempDir();
  const out: Record<string, unknown> = {};
  try {
    for (const [type, bytes] of Object.entries(await iqLlamaFiles())) {
      const path = `${dir}/syn-gqa4-${type}.gguf`;
      await Deno.writeFile(path, bytes);
      const r = await new Deno.Command("node", {
        args: [
          new URL("iq_llama_logits.mjs", import.meta.url).pathname,
          path,
          JSON.stringify(IQ_LLAMA_PROMPT),
        ],
        stderr: "inherit",
      }).output();
      if (!r.success) throw new Error(`node failed for ${type}`);
      const res = JSON.parse(new TextDecoder().decode(r.stdout));
      out[type] = {
        sha256: encodeHex(
          await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
        ),
        library: res.library,
        logits: res.logits,
      };
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  const path = new URL("../iq_llama/logits.json", import.meta.url);
  await Deno.writeTextFile(
    path,
    JSON.stringify(
      {
        generator: "tests/vectors/gen/iq_llama_logits.ts",
        prompt: IQ_LLAMA_PROMPT,
        models: out,
      },
    ) + "\n",
  );
  console.log(`wrote ${path.pathname}`);
}
