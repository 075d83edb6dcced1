/**
 * GGUF → SafeTensors → GGUF keeps every metadata type (issue 18, defect
 * 10): values used to come back as strings (`llama.embedding_length: "64"`,
 * the token list as one JSON string), the result no longer generated, and
 * `convert` reported success. The reference is llama2.c's greedy output for
 * stories260K.
 */

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { memorySource } from "../../core/sources.ts";
import { readGguf } from "../../formats/gguf/mod.ts";
import {
  readSafetensors,
  serializeSafetensors,
} from "../../formats/safetensors/mod.ts";
import { generate, transformerFromGguf } from "../../models/mod.ts";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";
import { runCli } from "./_cli.ts";

conformanceTest(
  "GGUF → SafeTensors → GGUF: same metadata types and values, and it generates llama2.c's tokens",
  async () => {
    const ref = JSON.parse(
      await Deno.readTextFile(fixture("llama/stories260K-reference.json")),
    ) as { token_ids: number[] };
    const src = fixture("gguf/stories260K.gguf");
    const dir = await Deno.makeTempDir();
    try {
      const st = join(dir, "s.safetensors");
      const back = join(dir, "back.gguf");
      const a = await runCli(["convert", src, "-o", st]);
      assertEquals(a.code, 0, a.err);
      const b = await runCli(["convert", st, "-o", back]);
      assertEquals(b.code, 0, b.err);
      const orig = await readGguf(memorySource(await Deno.readFile(src)));
      const again = await readGguf(memorySource(await Deno.readFile(back)));
      const t0 = orig.models[0].metadata["gguf.types"] as Record<
        string,
        string
      >;
      const t1 = again.models[0].metadata["gguf.types"] as Record<
        string,
        string
      >;
      for (const [k, t] of Object.entries(t0)) {
        assertEquals(t1[k], t, `type of ${k}`);
        assertEquals(
          again.models[0].metadata[k],
          orig.models[0].metadata[k],
          `value of ${k}`,
        );
      }
      const model = await transformerFromGguf(again);
      const ids: number[] = [];
      for await (
        const s of generate(model, [1], { maxTokens: 40, greedy: true })
      ) ids.push(s.id);
      assertEquals(ids, ref.token_ids.slice(0, 40));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

conformanceTest(
  "convert reports failure when the result loses a metadata type",
  async () => {
    const src = fixture("gguf/stories260K.gguf");
    const dir = await Deno.makeTempDir();
    try {
      const st = join(dir, "s.safetensors");
      assertEquals((await runCli(["convert", src, "-o", st])).code, 0);
      // a value that no longer reads as its recorded type (UINT32)
      const f = await readSafetensors(memorySource(await Deno.readFile(st)));
      f.models[0].metadata["llama.embedding_length"] = "sixty-four";
      const edited = join(dir, "e.safetensors");
      await Deno.writeFile(edited, await serializeSafetensors(f));
      const r = await runCli(["convert", edited, "-o", join(dir, "e.gguf")]);
      assertEquals(r.code, 1, r.err);
      assert(
        r.err.includes("llama.embedding_length: UINT32 became STRING"),
        r.err,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
