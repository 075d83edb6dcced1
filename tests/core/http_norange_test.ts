/**
 * An HTTP source whose server ignores Range is refused before the body is
 * pulled (issue 18, defect 11): `read` used to download the whole 200
 * response (605 MB RSS, 7 s for a 512 MB file) before saying it needs 206.
 */

import { assert, assertEquals, assertRejects } from "@std/assert";
import { httpSource } from "../../core/sources.ts";

const SIZE = 256 * 2 ** 20; // what the server would send in full

Deno.test("a server without Range support: refused after a bounded read, the rest never sent", async () => {
  let sent = 0;
  const chunk = new Uint8Array(64 * 1024);
  const server = Deno.serve({ port: 0, onListen: () => {} }, (req) => {
    if (req.method === "HEAD") {
      return new Response(null, {
        headers: { "content-length": String(SIZE) },
      });
    }
    // Range ignored: 200 with the whole file, produced as it is pulled
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= SIZE) return c.close();
        sent += chunk.length;
        c.enqueue(chunk);
      },
    });
    return new Response(body, {
      headers: { "content-length": String(SIZE) },
    });
  });
  try {
    const src = await httpSource(
      `http://localhost:${server.addr.port}/model.gguf`,
    );
    assertEquals(src.size, SIZE);
    const t0 = performance.now();
    await assertRejects(
      () => src.read(0, 64),
      TypeError,
      "HTTP 200, expected 206 Partial Content",
    );
    const ms = performance.now() - t0;
    assert(src.bytesTransferred <= 64, `${src.bytesTransferred} bytes kept`);
    // the server may have queued a few chunks before the cancel arrived
    assert(sent < 16 * 2 ** 20, `${sent} bytes produced by the server`);
    assert(ms < 1500, `${ms.toFixed(0)} ms`);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a server answering 206 with more bytes than asked: RangeError, bounded", async () => {
  const server = Deno.serve({ port: 0, onListen: () => {} }, (req) => {
    if (req.method === "HEAD") {
      return new Response(null, { headers: { "content-length": "1000" } });
    }
    return new Response(new Uint8Array(1000), {
      status: 206,
      headers: { "content-range": "bytes 0-999/1000" },
    });
  });
  try {
    const src = await httpSource(`http://localhost:${server.addr.port}/x`);
    await assertRejects(() => src.read(0, 10), RangeError, "sent more");
  } finally {
    await server.shutdown();
  }
});
