// The server's front door: `Deno.serve` has no header, body or idle
// timeouts, so a client that opens a connection and sends half a request
// holds it for ever (800 such connections were held 40 s and more). The
// front accepts TCP connections itself, reads each request head under a
// deadline and a size cap, answers the cheap refusals (408, 431, 400, 413
// from Content-Length, 503 when full) without touching the HTTP server, and
// relays the rest to `Deno.serve` listening on a private Unix socket (or a
// loopback port where there are none), with fixed buffers and backpressure
// both ways. Connections are kept alive: after each answer the next head
// is read under the same deadline (requests are not pipelined: the next
// head is read once the answer is complete). The client's address travels
// in `x-modelhost-peer`.

/** How long a client has to send a whole request head, ms. */
export const HEADER_TIMEOUT_MS = 10_000;
/** Longest pause while a request body is still coming in, ms. */
export const BODY_IDLE_TIMEOUT_MS = 30_000;
/** Largest request head (request line and headers), bytes. */
export const MAX_HEADER_BYTES = 64 * 1024;
/** Most client connections held at once (503 above). */
export const MAX_CONNECTIONS = 1024;
/** The header that carries the client's address to the HTTP server. */
export const PEER_HEADER = "x-modelhost-peer";

const RELAY_CHUNK = 64 * 1024;
const encoder = new TextEncoder();

/** Options of {@link startFront}. */
export interface FrontOptions {
  hostname: string;
  port: number;
  /** Where the HTTP server listens. */
  backend: Deno.ConnectOptions | Deno.UnixConnectOptions;
  headerTimeoutMs: number;
  bodyIdleTimeoutMs: number;
  maxHeaderBytes: number;
  maxConnections: number;
  /** Largest body any route takes (413 from Content-Length above it). */
  maxBodyBytes: number;
  /** Told about each refusal the front answers itself. */
  onRefuse?: (status: number, reason: string, peer: string) => void;
}

/** A running front door. */
export interface Front {
  /** The address it listens on. */
  addr: Deno.NetAddr;
  /** Connections open now. */
  connections(): number;
  /** Stops accepting; resolves when every connection has ended (or is cut after `graceMs`). */
  close(graceMs?: number): Promise<void>;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

function plainAnswer(
  status: number,
  text: string,
  message: string,
): Uint8Array {
  const body = JSON.stringify({ error: message });
  return encoder.encode(
    `HTTP/1.1 ${status} ${text}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${
      encoder.encode(body).length
    }\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** Index of the blank line ending a request head, or -1. */
function headEnd(buf: Uint8Array, len: number, from: number): number {
  for (let i = Math.max(0, from - 3); i + 3 < len; i++) {
    if (
      buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 &&
      buf[i + 3] === 10
    ) return i;
  }
  return -1;
}

/**
 * Finds the end of a chunked body (`Transfer-Encoding: chunked`): chunk
 * size lines, data, the last (zero) chunk, trailers, the blank line.
 */
export class ChunkedEnd {
  #line = "";
  #skip = 0;
  #last = false;
  /** Whether the framing was broken (the connection cannot go on). */
  broken = false;

  /** Feeds bytes; the index just past the body's end in them, or -1. */
  feed(bytes: Uint8Array): number {
    let i = 0;
    while (i < bytes.length) {
      if (this.#skip > 0) {
        const n = Math.min(this.#skip, bytes.length - i);
        this.#skip -= n;
        i += n;
        continue;
      }
      const c = bytes[i++];
      if (c !== 10) {
        if (this.#line.length > 1024) {
          this.broken = true;
          return i;
        }
        this.#line += String.fromCharCode(c);
        continue;
      }
      const line = this.#line.replace(/\r$/, "");
      this.#line = "";
      if (this.#last) {
        if (line === "") return i; // the blank line after the last chunk
        continue; // a trailer
      }
      const size = parseInt(line.split(";")[0], 16);
      if (!Number.isSafeInteger(size) || size < 0) {
        this.broken = true;
        return i;
      }
      if (size === 0) this.#last = true;
      else this.#skip = size + 2;
    }
    return -1;
  }
}

/**
 * Tells when an HTTP/1.1 response is complete, from its bytes: the head,
 * then `Content-Length` bytes, or chunks up to the last one, or no body
 * (1xx are skipped; 204, 304 and answers to HEAD have none).
 */
export class ResponseEnd {
  #head = "";
  #state: "head" | "length" | "chunked" | "toEnd" = "head";
  #remaining = 0;
  #chunks = new ChunkedEnd();
  #noBody: boolean;
  /** Whether the response asked to close the connection. */
  close = false;

  constructor(requestMethod = "GET") {
    this.#noBody = requestMethod === "HEAD";
  }

  /** Feeds relayed bytes; true once the response has ended. */
  feed(bytes: Uint8Array): boolean {
    let rest = bytes;
    while (this.#state === "head") {
      // Latin-1 keeps byte offsets.
      let text = "";
      for (const b of rest) text += String.fromCharCode(b);
      const all = this.#head + text;
      const at = all.indexOf("\r\n\r\n");
      if (at < 0) {
        this.#head = all;
        this.close = all.length > MAX_HEADER_BYTES;
        return this.close;
      }
      const head = all.slice(0, at);
      rest = rest.subarray(at + 4 - this.#head.length);
      this.#head = "";
      const status = Number(head.slice(9, 12));
      if (status >= 100 && status < 200) continue;
      this.close = /\r\nconnection:[^\r]*close/i.test(head);
      if (status === 204 || status === 304 || this.#noBody) return true;
      const cl = head.match(/\r\ncontent-length:\s*(\d+)/i);
      if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
        this.#state = "chunked";
      } else if (cl) {
        this.#state = "length";
        this.#remaining = Number(cl[1]);
      } else {
        this.#state = "toEnd";
        this.close = true;
      }
    }
    if (this.#state === "toEnd") return false;
    if (this.#state === "length") {
      this.#remaining -= rest.length;
      return this.#remaining <= 0;
    }
    const end = this.#chunks.feed(rest);
    if (this.#chunks.broken) this.close = true;
    return end >= 0;
  }
}

/** Starts the front door; the HTTP server must already listen on `backend`. */
export function startFront(o: FrontOptions): Front {
  const listener = Deno.listen({ hostname: o.hostname, port: o.port });
  const open = new Set<Deno.Conn>();
  const backs = new Set<Deno.Conn>();
  // Connections waiting for a request to start (cut at once on close).
  const idle = new Set<Deno.Conn>();
  const running = new Set<Promise<void>>();
  let closing = false;

  const refuse = async (
    conn: Deno.Conn,
    peer: string,
    status: number,
    text: string,
    message: string,
  ) => {
    o.onRefuse?.(status, message, peer);
    await writeAll(conn, plainAnswer(status, text, message)).catch(() => {});
  };

  const serveConn = async (conn: Deno.Conn) => {
    const peer = (conn.remoteAddr as Deno.NetAddr).hostname;
    let timedOut = false;
    let backend: Deno.Conn | undefined;
    const cut = () => {
      timedOut = true;
      for (const c of [conn, backend]) {
        try {
          c?.close();
        } catch { /* closed */ }
      }
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    let served = 0;
    let len = 0;
    let quiet = false; // waiting for the next request, nothing of it read yet
    try {
      if (open.size > o.maxConnections) {
        await refuse(
          conn,
          peer,
          503,
          "Service Unavailable",
          `Too many connections (${o.maxConnections}); try again`,
        );
        return;
      }
      // Bytes read past the end of one request (the start of the next).
      const buf = new Uint8Array(o.maxHeaderBytes);
      while (!closing) {
        // The head, under the deadline and the size cap.
        timer = setTimeout(cut, o.headerTimeoutMs);
        let end = headEnd(buf, len, 0);
        while (end < 0) {
          if (len === buf.length) {
            await refuse(
              conn,
              peer,
              431,
              "Request Header Fields Too Large",
              `The request head is over ${o.maxHeaderBytes} bytes`,
            );
            return;
          }
          if (len === 0) idle.add(conn);
          quiet = len === 0;
          const n = await conn.read(buf.subarray(len)).finally(() =>
            idle.delete(conn)
          );
          quiet = false;
          if (n === null) return;
          const from = len;
          len += n;
          end = headEnd(buf, len, from);
        }
        clearTimeout(timer);
        const head = new TextDecoder().decode(buf.subarray(0, end));
        const lines = head.split("\r\n");
        const requestLine = lines[0].match(
          /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) \S+ HTTP\/1\.([01])$/,
        );
        if (!requestLine) {
          await refuse(
            conn,
            peer,
            400,
            "Bad Request",
            "Malformed request line (HTTP/1.x expected)",
          );
          return;
        }
        let declared: number | undefined;
        let chunked = false;
        let clientClose = requestLine[2] === "0";
        const kept: string[] = [lines[0]];
        for (const l of lines.slice(1)) {
          const i = l.indexOf(":");
          const name = (i < 0 ? l : l.slice(0, i)).trim().toLowerCase();
          const value = i < 0 ? "" : l.slice(i + 1).trim();
          if (name === "connection") {
            if (/close/i.test(value)) clientClose = true;
            if (/keep-alive/i.test(value)) clientClose = false;
            continue;
          }
          if (
            name === "keep-alive" || name === PEER_HEADER ||
            name === "proxy-connection" || name === "upgrade"
          ) continue;
          if (name === "content-length") declared = Number(value);
          if (name === "transfer-encoding") chunked = /chunked/i.test(value);
          kept.push(l);
        }
        if (
          declared !== undefined &&
          !(Number.isSafeInteger(declared) && declared >= 0)
        ) {
          await refuse(
            conn,
            peer,
            400,
            "Bad Request",
            "Malformed Content-Length",
          );
          return;
        }
        if (declared !== undefined && declared > o.maxBodyBytes) {
          await refuse(
            conn,
            peer,
            413,
            "Content Too Large",
            `Request body too large: ${declared} bytes declared, the limit is ${o.maxBodyBytes}`,
          );
          return;
        }
        kept.push(`${PEER_HEADER}: ${peer}`);
        if (clientClose) kept.push("connection: close");
        if (!backend) {
          backend = await Deno.connect(o.backend as Deno.ConnectOptions);
          backs.add(backend);
        }
        const back = backend;
        await writeAll(back, encoder.encode(kept.join("\r\n") + "\r\n\r\n"));

        // The body: Content-Length bytes, or chunks; what follows it in the
        // same read is the next request's start.
        const chunks = chunked ? new ChunkedEnd() : undefined;
        let remaining = chunked ? 0 : declared ?? 0;
        let bodyDone = !chunked && remaining === 0;
        let leftover = new Uint8Array(0);
        const take = async (bytes: Uint8Array) => {
          let cut = bytes.length;
          if (chunks) {
            const e = chunks.feed(bytes);
            if (e >= 0) {
              cut = e;
              bodyDone = true;
            }
          } else {
            cut = Math.min(bytes.length, remaining);
            remaining -= cut;
            bodyDone = remaining === 0;
          }
          if (cut > 0) await writeAll(back, bytes.subarray(0, cut));
          if (cut < bytes.length) leftover = bytes.slice(cut);
        };
        await take(buf.slice(end + 4, len));
        len = 0;
        // A pause longer than the idle limit while the body is still coming
        // in ends the connection.
        const armIdle = () => {
          clearTimeout(timer);
          if (!bodyDone) timer = setTimeout(cut, o.bodyIdleTimeoutMs);
        };
        armIdle();
        let answered = false;
        const up = (async () => {
          const chunk = new Uint8Array(RELAY_CHUNK);
          try {
            while (!bodyDone && !answered) {
              const n = await conn.read(chunk);
              if (n === null) {
                await back.closeWrite().catch(() => {});
                return;
              }
              // The deadline is the client's: it does not run while the
              // server is slow to take what was sent.
              clearTimeout(timer);
              await take(chunk.subarray(0, n));
              armIdle();
            }
          } catch { /* either side went away */ }
        })();
        // The answer, relayed until it is complete.
        const response = new ResponseEnd(requestLine[1]);
        let complete = false;
        const chunk = new Uint8Array(RELAY_CHUNK);
        try {
          while (true) {
            const n = await back.read(chunk);
            if (n === null) break;
            await writeAll(conn, chunk.subarray(0, n));
            if (response.feed(chunk.subarray(0, n))) {
              complete = true;
              break;
            }
          }
        } catch { /* either side went away */ }
        answered = true;
        clearTimeout(timer);
        // Answered before the body was all read (a refusal), the answer
        // asked to close, or the client did: the connection ends here.
        if (!complete || !bodyDone || response.close || clientClose) {
          try {
            conn.close();
          } catch { /* closed */ }
          await up;
          return;
        }
        await up;
        if (leftover.length > buf.length) {
          await refuse(
            conn,
            peer,
            431,
            "Request Header Fields Too Large",
            `The request head is over ${o.maxHeaderBytes} bytes`,
          );
          return;
        }
        buf.set(leftover, 0);
        len = leftover.length;
        served++;
      }
    } catch {
      /* the client or the server went away */
    } finally {
      clearTimeout(timer);
      // A kept-alive connection that goes quiet between requests is no refusal.
      if (timedOut && !(served > 0 && quiet)) {
        o.onRefuse?.(408, "timed out", peer);
      }
      for (const c of [conn, backend]) {
        if (!c) continue;
        open.delete(c);
        backs.delete(c);
        try {
          c.close();
        } catch { /* closed */ }
      }
    }
  };

  const accepting = (async () => {
    while (!closing) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch {
        if (closing) break;
        continue;
      }
      open.add(conn);
      const p = serveConn(conn).finally(() => running.delete(p));
      running.add(p);
    }
  })();

  return {
    addr: listener.addr as Deno.NetAddr,
    connections: () => open.size,
    async close(graceMs = 5_000) {
      closing = true;
      try {
        listener.close();
      } catch { /* closed */ }
      await accepting;
      for (const c of idle) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      const cutAll = setTimeout(() => {
        for (const c of [...open, ...backs]) {
          try {
            c.close();
          } catch { /* closed */ }
        }
      }, graceMs);
      await Promise.all(running);
      clearTimeout(cutAll);
    },
  };
}
