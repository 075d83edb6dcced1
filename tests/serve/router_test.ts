// What happens around every request (serve/_router.ts), seen by a real
// HTTP client: which time limit a route runs under, how paths are matched
// (percent-decoding, empty segments), and the request id.

import { assert, assertEquals, assertMatch } from "@std/assert";
import {
  bundleBytes,
  call,
  listing,
  predictVectors,
  safetensorsBytes,
  upload,
  withServer,
} from "./_helpers.ts";

const V = await predictVectors();

/** A body that sends `bytes` in `parts` pieces, `delayMs` apart. */
function slowBody(
  bytes: Uint8Array,
  parts: number,
  delayMs: number,
): ReadableStream<Uint8Array> {
  const step = Math.ceil(bytes.length / parts);
  let at = 0;
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      if (at >= bytes.length) {
        c.close();
        return;
      }
      await new Promise((r) => setTimeout(r, delayMs));
      c.enqueue(bytes.subarray(at, at + step));
      at += step;
    },
  });
}

Deno.test("serve router: an upload runs under uploadTimeoutMs, not the shorter timeoutMs", async () => {
  const st = await safetensorsBytes(V);
  // 4 pieces 200 ms apart: about 800 ms, well past the 150 ms request limit.
  await withServer(
    { timeoutMs: 150, uploadTimeoutMs: 30_000 },
    async ({ url, dir }) => {
      const up = await upload(url, "slow", slowBody(st, 4, 200));
      assertEquals(up.status, 201, JSON.stringify(up.body));
      assertEquals(await listing(dir), [`slow@1.safetensors ${st.length}`]);
    },
  );
});

Deno.test("serve router: an upload past uploadTimeoutMs is cut off with 504 and leaves nothing behind", async () => {
  const st = await safetensorsBytes(V);
  await withServer(
    { timeoutMs: 30_000, uploadTimeoutMs: 150 },
    async ({ url, dir, logs }) => {
      try {
        const res = await fetch(`${url}/v1/models/slow`, {
          method: "POST",
          body: slowBody(st, 4, 200),
        });
        assertEquals(res.status, 504);
        assertEquals(
          (await res.json()).error,
          "The request timed out after 150 ms",
        );
      } catch {
        // The server may answer and close before the client has sent the
        // whole body; the log line below still says what happened.
      }
      for (let i = 0; i < 200 && !logs.some((l) => l.msg === "request"); i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      const line = logs.find((l) => l.msg === "request")!;
      assertEquals([line.route, line.status], ["/v1/models/{name}", 504]);
      for (let i = 0; i < 200 && (await listing(dir)).length > 0; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      assertEquals(await listing(dir), []);
    },
  );
});

Deno.test("serve router: segments are percent-decoded and empty ones dropped; undecodable paths get 400", async () => {
  await withServer({}, async ({ url }) => {
    const bytes = await bundleBytes(V);
    assertEquals((await upload(url, "mlp", bytes)).status, 201);
    const plain = await call(`${url}/v1/models/mlp`);
    assertEquals(plain.status, 200);
    for (const path of ["/v1/mod%65ls/ml%70", "//v1//models///mlp/"]) {
      const r = await call(url + path);
      assertEquals([r.status, r.body], [200, plain.body], path);
    }
    const bad = await call(`${url}/v1/models/%E0%A4%A`);
    assertEquals(bad.status, 400);
    assertEquals(bad.body.error, "Malformed path /v1/models/%E0%A4%A");
    const none = await call(`${url}/v1/models/mlp/versions`);
    assertEquals(none.status, 404);
    assertEquals(
      none.body.error,
      "No route for GET /v1/models/mlp/versions",
    );
  });
});

Deno.test("serve router: a sane x-request-id is echoed, any other is replaced", async () => {
  await withServer({}, async ({ url, logs }) => {
    const mine = await call(`${url}/healthz`, {
      headers: { "x-request-id": "client-42.a:b" },
    });
    assertEquals(mine.res.headers.get("x-request-id"), "client-42.a:b");
    const odd = await call(`${url}/healthz`, {
      headers: { "x-request-id": "has space" },
    });
    const id = odd.res.headers.get("x-request-id")!;
    assertMatch(id, /^[0-9a-z]+-[0-9a-z]+$/);
    const ids = logs.filter((l) => l.msg === "request").map((l) => l.id);
    assertEquals(ids, ["client-42.a:b", id]);
    assert(!ids.includes("has space"));
  });
});

Deno.test("serve router: methods named like Object.prototype members get 405 with Allow", async () => {
  await withServer({}, async ({ url }) => {
    for (const method of ["toString", "constructor", "hasOwnProperty"]) {
      const r = await call(`${url}/healthz`, { method });
      assertEquals(r.status, 405, method);
      assertEquals(r.res.headers.get("allow"), "GET");
      assertEquals(
        r.body.error,
        `${method} is not allowed on /healthz; allowed: GET`,
      );
    }
  });
});
