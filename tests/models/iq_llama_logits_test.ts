/**
 * End to end: GGUF files of IQ3_S and IQ2_XS weights written by modelhost
 * (the synthetic 8-layer gqa4 Llama, tests/vectors/gen/iq_llama_logits.ts)
 * run by llama.cpp (node-llama-cpp 3.22.1, its prebuilt CPU library) and by
 * modelhost's transformer give the same logits at every position of a
 * prompt, to within a loose bound. The writer is checked to produce the
 * very bytes llama.cpp ran (sha256).
 *
 * Not yet at F32 rounding: IQ3_S agrees to 2e-7 at positions 0–2, then by
 * ~1.2e-2 of the logits' RMS from position 3 on (it depends on the tokens:
 * another prompt agrees to 2e-7 everywhere); IQ2_XS by ~1.5e-2 from
 * position 0. Our own kernel variants (relaxed SIMD or not) agree with each
 * other to 2e-7, and Q8_0 / Q4_0 files of the same model agree with
 * llama.cpp to 1e-7 at every position, so the gap is in the IQ2_XS / IQ3_S
 * products of one of the two sides (llama.cpp's prebuilt AVX-512 CPU
 * variant was not compared op by op); the bound below is what holds today.
 */

import { assert, assertEquals } from "@std/assert";
import { encodeHex } from "@std/encoding";
import { memorySource } from "../../core/sources.ts";
import { readGguf } from "../../formats/gguf/mod.ts";
import { transformerFromGguf } from "../../models/transformer.ts";
import { shutdownKernels } from "../../kernels/fast/runtime.ts";
import {
  IQ_LLAMA_PROMPT,
  iqLlamaFiles,
} from "../vectors/gen/iq_llama_logits.ts";

const REF: {
  prompt: number[];
  models: Record<string, { sha256: string; logits: number[][] }>;
} = JSON.parse(
  await Deno.readTextFile(
    new URL("../vectors/iq_llama/logits.json", import.meta.url),
  ),
);

Deno.test("IQ3_S and IQ2_XS files written by modelhost: llama.cpp's logits at every position", async () => {
  assertEquals(REF.prompt, IQ_LLAMA_PROMPT);
  const files = await iqLlamaFiles();
  try {
    for (const [type, bytes] of Object.entries(files)) {
      const ref = REF.models[type];
      assertEquals(
        encodeHex(
          await crypto.subtle.digest(
            "SHA-256",
            bytes as Uint8Array<ArrayBuffer>,
          ),
        ),
        ref.sha256,
        `${type}: the file llama.cpp ran`,
      );
      const model = await transformerFromGguf(
        await readGguf(memorySource(bytes)),
      );
      const vocab = ref.logits[0].length;
      const got = model.forward(IQ_LLAMA_PROMPT, undefined, {
        allPositions: true,
      });
      assertEquals(got.length, IQ_LLAMA_PROMPT.length * vocab);
      let worstRms = 0, worstMax = 0, sameTop = 0;
      for (let p = 0; p < IQ_LLAMA_PROMPT.length; p++) {
        const want = ref.logits[p];
        let ss = 0, d2 = 0, max = 0, a = 0, b = 0;
        for (let k = 0; k < vocab; k++) {
          const v = got[p * vocab + k], d = v - want[k];
          assert(
            Number.isFinite(v),
            `${type} position ${p}: logit ${k} is ${v}`,
          );
          ss += want[k] * want[k];
          d2 += d * d;
          max = Math.max(max, Math.abs(d));
          if (v > got[p * vocab + a]) a = k;
          if (want[k] > want[b]) b = k;
        }
        const rms = Math.sqrt(ss / vocab);
        worstRms = Math.max(worstRms, Math.sqrt(d2 / vocab) / rms);
        worstMax = Math.max(worstMax, max / rms);
        if (a === b) sameTop++;
      }
      // Measured (see the module doc): RMS difference 1.5e-2 (IQ3_S) and
      // 1.7e-2 (IQ2_XS) of the logits' RMS, largest 7.6e-2, one top-token
      // swap between two logits 3e-3 apart; Q8_0 and Q4_0 files of the same
      // model agree to 1e-7 at every position
      assert(
        worstRms < 2.5e-2 && worstMax < 0.1,
        `${type}: logits differ from llama.cpp's by ${worstRms} (RMS) and ${worstMax} (largest) of their RMS`,
      );
      assert(
        sameTop >= IQ_LLAMA_PROMPT.length - 1,
        `${type}: top token agrees at ${sameTop} positions`,
      );
    }
  } finally {
    await shutdownKernels();
  }
});
