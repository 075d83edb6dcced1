// The server's front door: `Deno.serve` has no header, body or idle
// timeouts, so a client that opens a connection and sends half a request
// holds it for ever (800 such connections were held 40 s and more). The
// front accepts TCP connections itself, reads each request head under a
// deadline and a size cap, answers the cheap refusals (408, 431, 400, 413
// from Content-Length, 503 when full) without touching the HTTP server, and
// relays the rest to `Deno.serve` listening on a private Unix socket (or a
// loopback port where there are none), one request per connection
// (`Connection: close`), with fixed buffers and backpressure both ways.
// The client's address travels in `x-modelhost-peer`.

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
 * Tells when an HTTP/1.1 response is complete, from its bytes: the head,
 * then `Content-Length` bytes, or chunks up to the last one (trailers are
 * not used by the server), or no body (1xx are skipped, 204, 304).
 */
export class ResponseEnd {
  #head = "";
  #state: "head" | "length" | "chunked" | "toEnd" = "head";
  #remaining = 0;
  // Chunked bodies: the size line being read, or bytes of data (+ CRLF) left.
  #line = "";
  #skip = 0;
  #last = false;

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
        return all.length > MAX_HEADER_BYTES;
      }
      const head = all.slice(0, at);
      rest = rest.subarray(at + 4 - this.#head.length);
      this.#head = "";
      const status = Number(head.slice(9, 12));
      if (status >= 100 && status < 200) continue;
      if (status === 204 || status === 304) return true;
      const cl = head.match(/\r\ncontent-length:\s*(\d+)/i);
      if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
        this.#state = "chunked";
      } else if (cl) {
        this.#state = "length";
        this.#remaining = Number(cl[1]);
      } else this.#state = "toEnd";
    }
    if (this.#state === "toEnd") return false;
    if (this.#state === "length") {
      this.#remaining -= rest.length;
      return this.#remaining <= 0;
    }
    let i = 0;
    while (i < rest.length) {
      if (this.#skip > 0) {
        const n = Math.min(this.#skip, rest.length - i);
        this.#skip -= n;
        i += n;
        continue;
      }
      const c = rest[i++];
      if (c !== 10) {
        if (this.#line.length > 1024) return true;
        this.#line += String.fromCharCode(c);
        continue;
      }
      const line = this.#line.replace(/\r$/, "");
      this.#line = "";
      if (this.#last) {
        if (line === "") return true; // the blank line after the last chunk
        continue; // a trailer
      }
      const size = parseInt(line.split(";")[0], 16);
      if (!Number.isFinite(size)) return true;
      if (size === 0) this.#last = true;
      else this.#skip = size + 2;
    }
    return false;
  }
}

/** Starts the front door; the HTTP server must already listen on `backend`. */
export function startFront(o: FrontOptions): Front {
  const listener = Deno.listen({ hostname: o.hostname, port: o.port });
  const open = new Set<Deno.Conn>();
  const backs = new Set<Deno.Conn>();
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
    let timer = setTimeout(() => {
      timedOut = true;
      try {
        conn.close();
      } catch { /* already closed */ }
    }, o.headerTimeoutMs);
    let backend: Deno.Conn | undefined;
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
      // The head, under the deadline and the size cap.
      const buf = new Uint8Array(o.maxHeaderBytes);
      let len = 0, end = -1;
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
        const n = await conn.read(buf.subarray(len));
        if (n === null) return;
        const from = len;
        len += n;
        end = headEnd(buf, len, from);
      }
      clearTimeout(timer);
      const head = new TextDecoder().decode(buf.subarray(0, end));
      const lines = head.split("\r\n");
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+ \S+ HTTP\/1\.[01]$/.test(lines[0])) {
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
      const kept: string[] = [lines[0]];
      for (const l of lines.slice(1)) {
        const i = l.indexOf(":");
        const name = (i < 0 ? l : l.slice(0, i)).trim().toLowerCase();
        const value = i < 0 ? "" : l.slice(i + 1).trim();
        if (
          name === "connection" || name === "keep-alive" ||
          name === PEER_HEADER || name === "proxy-connection"
        ) continue;
        if (name === "content-length") declared = Number(value);
        if (name === "transfer-encoding") chunked = /chunked/i.test(value);
        kept.push(l);
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
      kept.push(`${PEER_HEADER}: ${peer}`, "connection: close");
      backend = await Deno.connect(o.backend as Deno.ConnectOptions);
      backs.add(backend);
      await writeAll(backend, encoder.encode(kept.join("\r\n") + "\r\n\r\n"));
      const early = buf.subarray(end + 4, len);
      await writeAll(backend, early);
      let remaining = declared !== undefined ? declared - early.length : 0;
      let bodyOpen = chunked || remaining > 0;
      const back = backend;
      // The body: a pause longer than the idle limit while it is still
      // coming in ends the connection.
      const armIdle = () => {
        clearTimeout(timer);
        if (!bodyOpen) return;
        timer = setTimeout(() => {
          timedOut = true;
          try {
            conn.close();
          } catch { /* closed */ }
          try {
            back.close();
          } catch { /* closed */ }
        }, o.bodyIdleTimeoutMs);
      };
      armIdle();
      const up = (async () => {
        const chunk = new Uint8Array(RELAY_CHUNK);
        try {
          while (true) {
            const n = await conn.read(chunk);
            if (n === null) break;
            if (declared !== undefined) {
              remaining -= n;
              bodyOpen = remaining > 0;
            } else if (chunked) {
              // The last chunk ends with "0\r\n\r\n" (no trailers).
              const tail = new TextDecoder().decode(
                chunk.subarray(Math.max(0, n - 7), n),
              );
              if (tail.endsWith("0\r\n\r\n")) bodyOpen = false;
            }
            // The deadline is the client's: it does not run while the
            // server is slow to take what was sent.
            clearTimeout(timer);
            await writeAll(back, chunk.subarray(0, n));
            armIdle();
          }
          await back.closeWrite().catch(() => {});
        } catch { /* either side went away */ }
      })();
      // The answer, relayed until it is complete (by its Content-Length or
      // its last chunk): the HTTP server may keep the connection open to
      // drain a body it refused, so its end is not waited for.
      const down = (async () => {
        const chunk = new Uint8Array(RELAY_CHUNK);
        const response = new ResponseEnd();
        try {
          while (true) {
            const n = await back.read(chunk);
            if (n === null) break;
            await writeAll(conn, chunk.subarray(0, n));
            if (response.feed(chunk.subarray(0, n))) break;
          }
        } catch { /* either side went away */ }
      })();
      await down;
      bodyOpen = false;
      clearTimeout(timer);
      try {
        conn.close();
      } catch { /* closed */ }
      await up;
    } catch {
      /* the client or the server went away */
    } finally {
      clearTimeout(timer);
      if (timedOut) o.onRefuse?.(408, "timed out", peer);
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
      const cut = setTimeout(() => {
        for (const c of [...open, ...backs]) {
          try {
            c.close();
          } catch { /* closed */ }
        }
      }, graceMs);
      await Promise.all(running);
      clearTimeout(cut);
    },
  };
}
