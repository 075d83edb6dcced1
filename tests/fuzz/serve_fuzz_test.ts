// The server fuzz target's short run (issue 18): seeded HTTP requests
// against a live server in a child process; no crash, no untyped 500, no
// hang over 2 s, RSS under 1 GiB. `deno task fuzz:serve` runs the long one
// (MODELHOST_FUZZ_REQUESTS, default 20,000; MODELHOST_FUZZ_SEED).

import { assertEquals } from "@std/assert";
import { fuzzServer } from "./_serve_target.ts";

const COUNT = Number(Deno.env.get("MODELHOST_FUZZ_REQUESTS") ?? 300);
const SEED = Number(Deno.env.get("MODELHOST_FUZZ_SEED") ?? 1);

Deno.test({
  name:
    `fuzz serve: ${COUNT} seeded requests (seed ${SEED}): no crash, untyped error, hang or 1 GiB`,
  ignore: Deno.build.os === "windows",
  fn: async () => {
    const r = await fuzzServer(SEED, COUNT);
    console.log(
      `fuzz serve: ${COUNT} requests in ${
        (r.ms / 1000).toFixed(1)
      } s, statuses ${JSON.stringify(r.statuses)}, max RSS ${
        (r.maxRss / 2 ** 20).toFixed(0)
      } MiB, ${r.failures.length} failures`,
    );
    for (const f of r.failures.slice(0, 10)) {
      console.log(
        `  seed ${f.seed}: ${f.outcome.ok ? "" : f.outcome.kind} ${
          JSON.stringify(f.c)
        } ${f.outcome.ok ? "" : f.outcome.detail}`,
      );
    }
    assertEquals(r.failures.map((f) => f.seed), []);
  },
});
