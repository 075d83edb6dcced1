// Issue 18 defect 7 (the server's part): `kill -9` at random moments of an
// upload. Afterwards the registry holds the old model or the whole new one,
// never a part, and the next start removes every `.upload-*.partial` the
// killed server left (it used to keep them for ever). A few seeded runs
// here; `deno task test:serve-kill` runs 50 (MODELHOST_KILL_RUNS,
// MODELHOST_KILL_SEED).

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { call } from "./_helpers.ts";
import { spawnServer } from "./_child.ts";
import { tinyLlamaGguf } from "./_tiny_llama.ts";

const RUNS = Number(Deno.env.get("MODELHOST_KILL_RUNS") ?? 3);
const SEED = Number(Deno.env.get("MODELHOST_KILL_SEED") ?? 1);

/** A small seeded generator (xorshift32), values in [0, 1). */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** A body that trickles out in small pieces, so a kill can land mid-upload. */
function trickle(bytes: Uint8Array, piece: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    async pull(c) {
      if (at >= bytes.length) return c.close();
      await new Promise((r) => setTimeout(r, 1));
      c.enqueue(bytes.slice(at, at + piece));
      at += piece;
    },
  });
}

const same = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

Deno.test({
  name:
    `serve: kill -9 at random moments of an upload (${RUNS} runs, seed ${SEED}): old or whole new model, no partial survives a restart`,
  ignore: Deno.build.os === "windows",
  fn: async () => {
    const random = rng(SEED);
    const old = await tinyLlamaGguf({ "general.name": "old" });
    const outcomes = { old: 0, new: 0, sweptPartials: 0 };
    // How long one whole upload takes here, so the kills spread over it.
    const calibrate = await Deno.makeTempDir({ prefix: "modelhost-kill-" });
    let uploadMs: number;
    try {
      const { child, url } = await spawnServer(calibrate);
      const t0 = performance.now();
      const r = await fetch(`${url}/registry/models/m`, {
        method: "POST",
        body: trickle(await tinyLlamaGguf(), 64),
        // @ts-ignore: Deno's fetch takes a streamed body with duplex "half"
        duplex: "half",
      });
      assertEquals(r.status, 201, await r.text());
      uploadMs = performance.now() - t0;
      child.kill("SIGKILL");
      await child.status;
    } finally {
      await Deno.remove(calibrate, { recursive: true });
    }
    for (let run = 0; run < RUNS; run++) {
      const dir = await Deno.makeTempDir({ prefix: "modelhost-kill-" });
      try {
        await Deno.writeFile(join(dir, "m@1.gguf"), old);
        const fresh = await tinyLlamaGguf({ "general.name": `new-${run}` });
        const { child, url } = await spawnServer(dir);
        // Pieces of 64 bytes every ~1 ms: the upload takes some 100 ms.
        const uploading = fetch(`${url}/registry/models/m?version=2`, {
          method: "POST",
          body: trickle(fresh, 64),
          // @ts-ignore: Deno's fetch takes a streamed body with duplex "half"
          duplex: "half",
        }).then((r) => r.text()).catch(() => "");
        await new Promise((r) => setTimeout(r, random() * uploadMs * 1.3));
        child.kill("SIGKILL");
        await child.status;
        await uploading;

        const names = (await Array.fromAsync(Deno.readDir(dir))).map((e) =>
          e.name
        ).sort();
        const visible = names.filter((n) => !n.startsWith("."));
        assert(
          same(await Deno.readFile(join(dir, "m@1.gguf")), old),
          `run ${run}: the old model changed`,
        );
        if (visible.includes("m@2.gguf")) {
          assert(
            same(await Deno.readFile(join(dir, "m@2.gguf")), fresh),
            `run ${run}: m@2.gguf is not the whole new model`,
          );
          outcomes.new++;
        } else outcomes.old++;
        assertEquals(
          visible.filter((n) => n !== "m@1.gguf" && n !== "m@2.gguf"),
          [],
          `run ${run}`,
        );
        outcomes.sweptPartials += names.filter((n) =>
          n.startsWith(".upload-")
        ).length;

        // The next start removes the leftovers and lists only whole models.
        const again = await spawnServer(dir);
        try {
          const list = await call(`${again.url}/registry/models/m`);
          assertEquals(list.status, 200);
          const versions = list.body.versions as Record<string, unknown>[];
          assertEquals(
            versions.map((v) => [v.version, v.kind]),
            visible.includes("m@2.gguf")
              ? [["1", "llm"], ["2", "llm"]]
              : [["1", "llm"]],
          );
          const left = (await Array.fromAsync(Deno.readDir(dir))).map((e) =>
            e.name
          ).filter((n) => n.endsWith(".partial"));
          assertEquals(
            left,
            [],
            `run ${run}: partial files survived a restart`,
          );
        } finally {
          again.child.kill("SIGTERM");
          await again.child.status;
        }
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    }
    console.log(
      `kill -9 during upload (${
        uploadMs.toFixed(0)
      } ms each), ${RUNS} runs (seed ${SEED}): ${outcomes.old} left the old model, ${outcomes.new} the whole new one; ${outcomes.sweptPartials} .upload-*.partial files found after the kill, all removed by the next start`,
    );
  },
});
