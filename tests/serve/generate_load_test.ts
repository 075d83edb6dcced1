// A quick version of bench/generate_load.ts: 8 greedy streams of
// stories260K through /v1/completions, one after another and then all at
// once (continuous batching); every stream's text in the batch equals the
// same prompt alone, and the batch ran them together. The speed ratios
// live in the benchmark (a shared test machine is too noisy to assert them).

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { phase, prompts } from "../../bench/generate_load.ts";
import { startServer } from "../../serve/mod.ts";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";

conformanceTest(
  "serve load: 8 streams at once give each the text it gets alone",
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "modelhost-genload-" });
    await Deno.symlink(fixture("gguf/stories260K.gguf"), join(dir, "s.gguf"));
    const server = await startServer({ dir, port: 0, log: false });
    try {
      const ps = prompts(8, 6, 512);
      const one = await phase(server.url, "s", ps, 24, 2, false);
      const many = await phase(server.url, "s", ps, 24, 2, true);
      assertEquals(
        many.streams.map((s) => s.text),
        one.streams.map((s) => s.text),
      );
      assert(one.streams.every((s) => s.tokens === 24 && s.ttftMs > 0));
      assert(many.streams.every((s) => s.tokens === 24));
      const sizes = server.metrics().match(
        /^modelhost_generate_batch_sequences_bucket\{le="4"\} (\d+)$/m,
      );
      const count = server.metrics().match(
        /^modelhost_generate_batch_sequences_count (\d+)$/m,
      );
      // Some steps carried more than four sequences at once.
      assert(Number(count![1]) > Number(sizes![1]), server.metrics());
    } finally {
      await server.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
