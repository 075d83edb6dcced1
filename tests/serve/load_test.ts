// A quick version of bench/serve_load.ts: a few hundred predictions from 32
// concurrent clients over loopback, batching off and on, every answer
// checked against the library's forward pass. The throughput comparison
// lives in the benchmark (a shared test machine is too noisy to assert it).

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { loadModel, runLoad } from "../../bench/_serve_load_driver.ts";
import { startServer } from "../../serve/mod.ts";

Deno.test("serve load: 256 predictions from 32 clients, no errors, batches form only when batching is on", async () => {
  const model = await loadModel();
  const dir = await Deno.makeTempDir({ prefix: "modelhost-load-" });
  try {
    await Deno.writeTextFile(join(dir, "dense@1.bundle.json"), model.bundle);
    for (const maxBatch of [1, 32]) {
      const server = await startServer({
        dir,
        port: 0,
        log: false,
        maxBatch,
        maxWaitMs: 2,
      });
      try {
        const predict = `${server.url}/registry/models/dense/predict`;
        const r = await runLoad(server.url, predict, model, 256, 32, 60_000);
        assertEquals(r.errors, 0, r.errorSamples.join("; "));
        assertEquals(r.ok, 256);
        assert(r.p50 <= r.p99 && r.p99 <= r.max);
        if (maxBatch === 1) assertEquals(r.meanBatch, 1);
        else assert(r.meanBatch > 2, `mean batch ${r.meanBatch}`);
      } finally {
        await server.close();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
