// `modelhost serve` as a user runs it: a child process on port 0 prints its
// URL, answers, writes one JSON log line per request to stderr, and exits
// cleanly on SIGTERM.

import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { join } from "@std/path";
import { main } from "../../cli.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import { bundleBytes, call, predictVectors } from "../serve/_helpers.ts";

Deno.test(
  "cli serve: listens on the port it prints, logs JSON lines, stops on SIGTERM",
  {
    ignore: Deno.build.os === "windows",
  },
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "modelhost-cli-serve-" });
    try {
      const v = await predictVectors();
      await Deno.writeFile(join(dir, "mlp.bundle.json"), await bundleBytes(v));
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          join(REPO_ROOT, "cli.ts"),
          "serve",
          dir,
          "--port",
          "0",
          "--token",
          "t0k",
          "--max-batch",
          "4",
        ],
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const out = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let first = "";
      while (!first.includes("\n")) {
        const { done, value } = await out.read();
        if (done) break;
        first += value;
      }
      const url = first.match(/^listening on (http:\/\/127\.0\.0\.1:\d+)\n/)
        ?.[1];
      assert(url, `unexpected stdout: ${first}`);
      const health = await call(`${url}/healthz`);
      assertEquals(health.body, { status: "ok", models: 1, loaded: 0 });
      const p = await call(`${url}/v1/models/mlp/predict`, {
        json: { inputs: v.inputs },
      });
      assertEquals(p.status, 200);
      const del = await call(`${url}/v1/models/mlp`, { method: "DELETE" });
      assertEquals(del.status, 401);
      child.kill("SIGTERM");
      await out.cancel();
      const [status, err] = await Promise.all([
        child.status,
        new Response(child.stderr).text(),
      ]);
      assertEquals(status.code, 0);
      const logs = err.trim().split("\n").map((l) => JSON.parse(l));
      assertEquals(logs[0].msg, "listening");
      assertEquals(logs[0].token, true);
      const requests = logs.filter((l) => l.msg === "request");
      assertEquals(requests.map((l) => [l.route, l.status]), [
        ["/healthz", 200],
        ["/v1/models/{name}/predict", 200],
        ["/v1/models/{name}", 401],
      ]);
      assert(logs.some((l) => l.msg === "model loaded" && l.model === "mlp@1"));
      assertEquals(logs[logs.length - 1].msg, "closed");
      assertEquals(
        (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name),
        ["mlp.bundle.json"],
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test("cli serve: usage errors", async () => {
  const err: string[] = [];
  const io = { out: () => {}, err: (t: string) => err.push(t) };
  assertEquals(await main(["serve"], io), 2);
  assertStringIncludes(err[0], "serve takes one registry folder");
  err.length = 0;
  assertEquals(await main(["serve", ".", "--max-bach", "3"], io), 2);
  assertStringIncludes(err[0], "did you mean --max-batch?");
});
