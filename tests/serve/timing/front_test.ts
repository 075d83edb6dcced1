// Issue 18 defect 8 (the network part): header, body and idle deadlines and
// early refusals. Before the front door, 800 connections that sent half a
// request head were held for as long as the client liked, and nothing cut
// a body that stopped half way.

import { assert, assertEquals, assertMatch } from "@std/assert";
import { serveDefaults } from "../../../serve/mod.ts";
import { call, listing, withServer } from "../_helpers.ts";

const enc = new TextEncoder();

/** Reads what the server sends until it closes; undefined when still open after `ms`. */
async function readUntilClosed(
  conn: Deno.Conn,
  ms: number,
): Promise<string | undefined> {
  const chunks: string[] = [];
  const buf = new Uint8Array(65536);
  const dec = new TextDecoder();
  const deadline = setTimeout(() => {
    try {
      conn.close();
    } catch { /* closed */ }
  }, ms);
  let closedByServer = false;
  try {
    while (true) {
      const n = await conn.read(buf);
      if (n === null) {
        closedByServer = true;
        break;
      }
      chunks.push(dec.decode(buf.subarray(0, n)));
    }
  } catch (e) {
    // ECONNRESET from the server counts as closed; our own close does not.
    closedByServer = e instanceof Deno.errors.ConnectionReset;
  } finally {
    clearTimeout(deadline);
    try {
      conn.close();
    } catch { /* closed */ }
  }
  return closedByServer ? chunks.join("") : undefined;
}

Deno.test("serve: 800 half-open connections are cut at the header deadline while other requests are answered", async () => {
  assert(serveDefaults.headerTimeoutMs <= 10_000);
  await withServer({ headerTimeoutMs: 1_000 }, async ({ server, url }) => {
    const t0 = performance.now();
    const conns = await Promise.all(
      Array.from({ length: 800 }, async (_, i) => {
        const c = await Deno.connect({
          hostname: "127.0.0.1",
          port: server.port,
        });
        // Half the clients send part of a head, half send nothing at all.
        if (i % 2) {
          await c.write(
            enc.encode("GET /healthz HTTP/1.1\r\nHost: localhost\r\n"),
          );
        }
        return c;
      }),
    );
    const ok = await call(`${url}/healthz`);
    assertEquals(ok.status, 200);
    const ends = await Promise.all(conns.map((c) => readUntilClosed(c, 5_000)));
    const s = (performance.now() - t0) / 1000;
    const held = ends.filter((e) => e === undefined).length;
    console.log(
      `800 half-open connections: ${held} still open after 5 s; all done in ${
        s.toFixed(2)
      } s`,
    );
    assertEquals(held, 0);
    assert(s < 5, `${s} s`);
    assertMatch(
      server.metrics(),
      /modelhost_connections_refused_total\{status="408"\} 800/,
    );
  });
});

Deno.test("serve: a declared Content-Length over the limit answers 413 before the body is sent", async () => {
  await withServer(
    { maxBodyBytes: 1 << 20, maxUploadBytes: 4 << 20 },
    async ({ server, dir }) => {
      for (
        const [path, length, where] of [
          [
            "/api/generate",
            100_000_000,
            /100000000 bytes declared, the limit is 4194304/,
          ],
          ["/registry/models/x", 100_000_000, /100000000 bytes declared/],
          // Under the upload cap but over the JSON cap: the route says so at once.
          ["/api/generate", 2 << 20, /the limit is 1048576/],
        ] as const
      ) {
        const t0 = performance.now();
        const c = await Deno.connect({
          hostname: "127.0.0.1",
          port: server.port,
        });
        await c.write(
          enc.encode(
            `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{"model":`,
          ),
        );
        const answer = await readUntilClosed(c, 5_000);
        const ms = performance.now() - t0;
        assert(answer !== undefined, `${path}: still open`);
        assertMatch(answer, /^HTTP\/1\.1 413 /, answer);
        assertMatch(answer, where);
        assert(ms < 2_000, `${path}: ${ms} ms`);
      }
      assertEquals(await listing(dir), []);
    },
  );
});

Deno.test("serve: a body that stops half way is cut at the idle deadline; an oversized head gets 431", async () => {
  await withServer({ bodyIdleTimeoutMs: 500 }, async ({ server, dir }) => {
    const t0 = performance.now();
    const c = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
    await c.write(
      enc.encode(
        "POST /registry/models/slow HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\nGGUF",
      ),
    );
    const answer = await readUntilClosed(c, 5_000);
    const ms = performance.now() - t0;
    assert(answer !== undefined, "the stalled upload is still open after 5 s");
    assert(ms < 3_000, `${ms} ms`);
    // The partial upload is removed once the route notices.
    const names = async () =>
      (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name);
    for (let i = 0; i < 50 && (await names()).length; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assertEquals(await names(), []);

    const big = await Deno.connect({
      hostname: "127.0.0.1",
      port: server.port,
    });
    await big.write(
      enc.encode(
        `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Filler: ${
          "a".repeat(70_000)
        }\r\n\r\n`,
      ),
    ).catch(() => {});
    const refused = await readUntilClosed(big, 5_000);
    assertMatch(refused ?? "", /^HTTP\/1\.1 431 /);
  });
});

Deno.test("serve: one connection carries several requests (Content-Length, chunked and empty bodies, HEAD)", async () => {
  const { ResponseEnd } = await import("../../../serve/_front.ts");
  await withServer({}, async ({ server }) => {
    const c = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
    const dec = new TextDecoder();
    const ask = async (method: string, request: string) => {
      await c.write(enc.encode(request));
      const end = new ResponseEnd(method);
      const buf = new Uint8Array(65536);
      let text = "";
      while (true) {
        const n = await c.read(buf);
        if (n === null) throw new Error(`closed after: ${text}`);
        text += dec.decode(buf.subarray(0, n));
        if (end.feed(buf.subarray(0, n))) return text;
      }
    };
    const body = '{"model":"nope"}';
    const answers = [
      await ask("GET", "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"),
      await ask(
        "POST",
        `POST /api/show HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      ),
      await ask(
        "POST",
        `POST /api/show HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"mod\r\n${
          (body.length - 5).toString(16)
        }\r\n${body.slice(5)}\r\n0\r\n\r\n`,
      ),
      await ask("HEAD", "HEAD / HTTP/1.1\r\nHost: localhost\r\n\r\n"),
      await ask("GET", "GET /api/version HTTP/1.1\r\nHost: localhost\r\n\r\n"),
    ];
    assertEquals(
      answers.map((a) => a.slice(9, 12)),
      ["200", "404", "404", "200", "200"],
    );
    assertMatch(answers[1], /model \\?"nope\\?" not found/);
    assertMatch(answers[2], /model \\?"nope\\?" not found/);
    assertMatch(answers[4], /"version"/);
    // The client asks to close: the server does after the answer.
    await c.write(
      enc.encode(
        "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
      ),
    );
    const last = await readUntilClosed(c, 3_000);
    assertMatch(last ?? "", /^HTTP\/1\.1 200 /);
  });
});
