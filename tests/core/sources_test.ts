import { assertEquals, assertRejects } from "@std/assert";
import { httpSource, memorySource } from "../../core/sources.ts";
import { fileSource, writeFileAtomic } from "../../io/file.ts";

const DATA: Uint8Array<ArrayBuffer> = Uint8Array.from(
  { length: 1000 },
  (_, i) => (i * 7) & 255,
);

Deno.test("memory source: ranges, zero-length reads and past-the-end RangeError", async () => {
  const src = memorySource(DATA, "mem");
  assertEquals(src.size, 1000);
  assertEquals(await src.read(10, 3), DATA.slice(10, 13));
  assertEquals((await src.read(1000, 0)).length, 0);
  await assertRejects(
    () => src.read(998, 3),
    RangeError,
    "needs 3 bytes at offset 998, the source has 2 left",
  );
  await assertRejects(
    () => src.read(-1, 1),
    RangeError,
    "non-negative integers",
  );
});

Deno.test("file source: reads only requested ranges, concurrent reads stay correct", async () => {
  const path = await Deno.makeTempFile();
  try {
    await Deno.writeFile(path, DATA);
    const src = await fileSource(path);
    assertEquals(src.size, 1000);
    const parts = await Promise.all([
      src.read(0, 5),
      src.read(500, 5),
      src.read(995, 5),
    ]);
    assertEquals(parts, [
      DATA.slice(0, 5),
      DATA.slice(500, 505),
      DATA.slice(995, 1000),
    ]);
    await assertRejects(
      () => src.read(999, 2),
      RangeError,
      "needs 2 bytes at offset 999",
    );
    await src.close?.();
  } finally {
    await Deno.remove(path);
  }
});

async function* chunks() {
  yield DATA.subarray(0, 400);
  yield DATA.subarray(400);
}

async function* failing() {
  yield new Uint8Array([1, 2, 3]);
  throw new Error("producer failed");
}

Deno.test("writeFileAtomic: streams chunks, leaves nothing behind on failure", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/out.bin`;
    assertEquals(await writeFileAtomic(path, chunks()), 1000);
    assertEquals(await Deno.readFile(path), DATA);
    await assertRejects(
      () => writeFileAtomic(path, failing()),
      Error,
      "producer failed",
    );
    assertEquals(await Deno.readFile(path), DATA, "the old file is untouched");
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["out.bin"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A loopback server that answers HEAD and single Range GETs, counting bytes sent. */
function serveRanges(
  data: Uint8Array<ArrayBuffer>,
  opts: { head?: boolean } = {},
) {
  const ac = new AbortController();
  let sent = 0;
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen() {},
  }, (req) => {
    if (req.method === "HEAD") {
      if (opts.head === false) return new Response(null, { status: 405 });
      return new Response(null, {
        headers: {
          "content-length": String(data.length),
          "accept-ranges": "bytes",
        },
      });
    }
    const m = req.headers.get("range")?.match(/^bytes=(\d+)-(\d+)$/);
    if (!m) return new Response(data);
    const start = Number(m[1]), end = Math.min(Number(m[2]), data.length - 1);
    const body = data.slice(start, end + 1);
    sent += body.length;
    return new Response(body, {
      status: 206,
      headers: { "content-range": `bytes ${start}-${end}/${data.length}` },
    });
  });
  const url = `http://127.0.0.1:${server.addr.port}/model.bin`;
  return {
    url,
    sent: () => sent,
    close: async () => (ac.abort(), await server.finished),
  };
}

Deno.test("http source: HEAD for size, Range GETs for data, bytes counted", async () => {
  const srv = serveRanges(DATA);
  try {
    const src = await httpSource(srv.url);
    assertEquals(src.size, 1000);
    assertEquals(await src.read(100, 16), DATA.slice(100, 116));
    assertEquals(src.bytesTransferred, 16);
    assertEquals(srv.sent(), 16);
    await assertRejects(
      () => src.read(990, 20),
      RangeError,
      "needs 20 bytes at offset 990",
    );
  } finally {
    await srv.close();
  }
});

Deno.test("http source: falls back to a one-byte Range probe when HEAD is refused", async () => {
  const srv = serveRanges(DATA, { head: false });
  try {
    const src = await httpSource(srv.url);
    assertEquals(src.size, 1000);
    assertEquals(src.requests, 2);
    assertEquals(await src.read(999, 1), DATA.slice(999));
  } finally {
    await srv.close();
  }
});
