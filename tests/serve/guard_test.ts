// Issue 18 defect 3 and issue 21's CORS item: Host and Origin checks. A
// cross-site simple POST (text/plain from http://evil.example) stored a
// model and any Host was accepted, so a DNS-rebinding page could list,
// upload, delete and run models. Requests go over raw TCP where the test
// sets Host itself, so the server sees exactly what a browser would send.

import { assert, assertEquals, assertMatch } from "@std/assert";
import {
  bundleBytes,
  call,
  listing,
  predictVectors,
  withServer,
} from "./_helpers.ts";

/** Sends one raw HTTP/1.1 request; returns the status line's code, headers and body. */
async function raw(
  port: number,
  head: string,
  body = "",
): Promise<{ status: number; headers: Headers; body: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const bytes = new TextEncoder().encode(body);
  await conn.write(
    new TextEncoder().encode(
      head.trimEnd().replaceAll("\n", "\r\n") +
        `\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`,
    ),
  );
  await conn.write(bytes);
  const chunks: Uint8Array[] = [];
  const buf = new Uint8Array(65536);
  while (true) {
    const n = await conn.read(buf);
    if (n === null) break;
    chunks.push(buf.slice(0, n));
  }
  conn.close();
  const text = new TextDecoder().decode(
    new Uint8Array(chunks.flatMap((c) => [...c])),
  );
  const [top, ...rest] = text.split("\r\n\r\n");
  const lines = top.split("\r\n");
  const headers = new Headers();
  for (const l of lines.slice(1)) {
    const i = l.indexOf(":");
    headers.append(l.slice(0, i).trim(), l.slice(i + 1).trim());
  }
  return {
    status: Number(lines[0].split(" ")[1]),
    headers,
    body: rest.join("\r\n\r\n"),
  };
}

Deno.test("serve: a cross-site text/plain POST stores nothing; the same upload without Origin, or with the token, is stored", async () => {
  const model = new TextDecoder().decode(
    await bundleBytes(await predictVectors()),
  );
  await withServer({}, async ({ server, dir }) => {
    const evil = await raw(
      server.port,
      `POST /registry/models/x HTTP/1.1
Host: 127.0.0.1:${server.port}
Origin: http://evil.example
Content-Type: text/plain`,
      model,
    );
    assertEquals(evil.status, 403, evil.body);
    assertMatch(evil.body, /origin http:\/\/evil\.example refused/);
    assertEquals(evil.headers.get("access-control-allow-origin"), null);
    // Also the routes that run models and delete them.
    for (
      const [method, path] of [
        ["POST", "/api/generate"],
        ["POST", "/v1/chat/completions"],
        ["DELETE", "/registry/models/x"],
        ["POST", "/api/delete"],
      ]
    ) {
      const r = await raw(
        server.port,
        `${method} ${path} HTTP/1.1\nHost: localhost\nOrigin: http://evil.example\nContent-Type: text/plain`,
        "{}",
      );
      assertEquals(r.status, 403, `${method} ${path}: ${r.body}`);
    }
    assertEquals(await listing(dir), []);
    // A command-line client sends no Origin.
    const cli = await raw(
      server.port,
      `POST /registry/models/x HTTP/1.1\nHost: 127.0.0.1:${server.port}`,
      model,
    );
    assertEquals(cli.status, 201, cli.body);
  });
  await withServer({ token: "t0k" }, async ({ server, dir }) => {
    const head = `POST /registry/models/x HTTP/1.1
Host: localhost:${server.port}
Origin: http://evil.example
Content-Type: text/plain`;
    assertEquals((await raw(server.port, head, model)).status, 403);
    assertEquals(await listing(dir), []);
    const withToken = await raw(
      server.port,
      head + "\nAuthorization: Bearer t0k",
      model,
    );
    assertEquals(withToken.status, 201, withToken.body);
  });
});

Deno.test("serve: Host names are checked (DNS rebinding); loopback names, IP literals, the bound name and --allowed-hosts pass", async () => {
  await withServer(
    { allowedHosts: ["models.lan", "*.corp.example"] },
    async ({ server }) => {
      const get = (host: string) =>
        raw(server.port, `GET /registry/models HTTP/1.1\nHost: ${host}`);
      const refused = await get(`rebind.evil.example:${server.port}`);
      assertEquals(refused.status, 403);
      assertMatch(refused.body, /DNS-rebinding protection/);
      for (
        const h of [
          "evil.example",
          "localhost.evil.example",
          "127.0.0.1.nip.io",
        ]
      ) {
        assertEquals((await get(h)).status, 403, h);
      }
      for (
        const h of [
          `localhost:${server.port}`,
          "LOCALHOST",
          "app.localhost",
          `127.0.0.1:${server.port}`,
          `[::1]:${server.port}`,
          "10.1.2.3",
          "models.lan",
          "a.corp.example:8080",
        ]
      ) {
        assertEquals((await get(h)).status, 200, h);
      }
    },
  );
  await withServer({ allowedHosts: ["*"] }, async ({ server }) => {
    const r = await raw(
      server.port,
      `GET /healthz HTTP/1.1\nHost: anything.example`,
    );
    assertEquals(r.status, 200);
  });
});

Deno.test("serve: CORS — preflight answered for allowed origins, refused for others; responses carry Access-Control-Allow-Origin only for allowed ones", async () => {
  await withServer({}, async ({ server, url }) => {
    const pre = (origin: string) =>
      raw(
        server.port,
        `OPTIONS /api/chat HTTP/1.1
Host: 127.0.0.1
Origin: ${origin}
Access-Control-Request-Method: POST
Access-Control-Request-Headers: content-type, authorization`,
      );
    const ok = await pre("http://localhost:5173");
    assertEquals(ok.status, 204);
    assertEquals(
      ok.headers.get("access-control-allow-origin"),
      "http://localhost:5173",
    );
    assertMatch(ok.headers.get("access-control-allow-methods")!, /POST/);
    assertMatch(
      ok.headers.get("access-control-allow-headers")!,
      /authorization/i,
    );
    const bad = await pre("http://evil.example");
    assertEquals(bad.status, 403);
    assertEquals(bad.headers.get("access-control-allow-origin"), null);
    // Ollama's app schemes are not in the plain default.
    assertEquals((await pre("app://desktop")).status, 403);

    const tags = await call(`${url}/api/tags`, {
      headers: { origin: "http://127.0.0.1:3000" },
    });
    assertEquals(
      tags.res.headers.get("access-control-allow-origin"),
      "http://127.0.0.1:3000",
    );
    assertMatch(tags.res.headers.get("vary")!, /Origin/);
    const other = await call(`${url}/api/tags`, {
      headers: { origin: "https://evil.example" },
    });
    assertEquals(other.status, 200);
    assertEquals(other.res.headers.get("access-control-allow-origin"), null);
  });
  await withServer(
    { allowedOrigins: ["https://*.myapp.example"] },
    async ({ server }) => {
      const r = await raw(
        server.port,
        `OPTIONS /api/chat HTTP/1.1\nHost: localhost\nOrigin: https://ui.myapp.example\nAccess-Control-Request-Method: POST`,
      );
      assertEquals(r.status, 204);
      const local = await raw(
        server.port,
        `OPTIONS /api/chat HTTP/1.1\nHost: localhost\nOrigin: http://localhost:3000\nAccess-Control-Request-Method: POST`,
      );
      assert(local.status === 403, "a given list replaces the default");
    },
  );
});
