/**
 * Byte sources: where a format reader gets its bytes. A reader asks only for
 * the ranges it needs, so a header can be inspected without reading the
 * tensors, from memory, a local file (see `io/file.ts`) or an HTTP server
 * that answers `Range` requests.
 *
 * @module
 */

/** Random access to the bytes of one file, wherever it lives. */
export interface ByteSource {
  /** A name for messages (a path or URL). */
  readonly name: string;
  /** Total size in bytes. */
  readonly size: number;
  /**
   * Reads `length` bytes at `offset`.
   * @throws {RangeError} When the range runs past `size`.
   */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Releases the underlying handle, when there is one. */
  close?(): void | Promise<void>;
}

/**
 * Checks a requested range against a source size.
 *
 * @param name Source name, for the message.
 * @param size Source size.
 * @param offset Requested start.
 * @param length Requested length.
 * @throws {RangeError} When the range is negative, fractional or past the end.
 *
 * @example
 * ```ts
 * import { checkRange } from "@modelhost/modelhost/core";
 * checkRange("x.bin", 10, 2, 8); // fine: ends exactly at the end
 * ```
 */
export function checkRange(
  name: string,
  size: number,
  offset: number,
  length: number,
): void {
  if (
    !Number.isSafeInteger(offset) || !Number.isSafeInteger(length) ||
    offset < 0 || length < 0
  ) {
    throw new RangeError(
      `Cannot read ${length} bytes at offset ${offset} of ${name}: offset and length must be non-negative integers`,
    );
  }
  if (offset + length > size) {
    const left = Math.max(0, size - offset);
    throw new RangeError(
      `Cannot read ${name}: needs ${length} bytes at offset ${offset}, the source has ${left} left (size ${size})`,
    );
  }
}

/**
 * A source over bytes already in memory; reads are zero-copy subarrays.
 *
 * @param bytes The file's bytes.
 * @param name A name for messages.
 * @returns The source.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { memorySource } from "@modelhost/modelhost/core";
 * const src = memorySource(new Uint8Array([1, 2, 3]));
 * const b = await src.read(1, 2);
 * assert(b[0] === 2 && src.size === 3);
 * ```
 */
export function memorySource(bytes: Uint8Array, name = "<memory>"): ByteSource {
  return {
    name,
    size: bytes.byteLength,
    read(offset, length) {
      try {
        checkRange(name, bytes.byteLength, offset, length);
      } catch (e) {
        return Promise.reject(e);
      }
      return Promise.resolve(bytes.subarray(offset, offset + length));
    },
  };
}

/**
 * A response body read up to `limit` bytes; past that the stream is
 * cancelled and a RangeError says how much more came than was asked for.
 */
async function boundedBody(
  res: Response,
  limit: number,
  name: string,
): Promise<Uint8Array> {
  if (!res.body) return new Uint8Array(0);
  const out = new Uint8Array(limit);
  let at = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (at + value.byteLength > limit) {
      await reader.cancel();
      throw new RangeError(
        `Cannot read ${name}: asked for ${limit} bytes, the server sent more (${
          at + value.byteLength
        } so far)`,
      );
    }
    out.set(value, at);
    at += value.byteLength;
  }
  return at === limit ? out : out.subarray(0, at);
}

/** Options of {@link httpSource}. */
export interface HttpSourceOptions {
  /** Extra request headers (for example `Authorization`). @default {{}} */
  headers?: Record<string, string>;
  /** The fetch function to use. @default {globalThis.fetch} */
  fetch?: typeof fetch;
}

/** A byte source over HTTP that also counts what it transferred. */
export interface HttpByteSource extends ByteSource {
  /** Body bytes received so far, for reports and benchmarks. */
  readonly bytesTransferred: number;
  /** Requests made so far (the size probe included). */
  readonly requests: number;
}

function parseTotal(contentRange: string | null): number | undefined {
  const m = contentRange?.match(/\/(\d+)\s*$/);
  return m ? Number(m[1]) : undefined;
}

/**
 * Opens a remote file for ranged reads. The size comes from a `HEAD`
 * request, or when the server does not answer it, from the `Content-Range`
 * of a one-byte ranged `GET`. Each {@link ByteSource.read} is one `GET`
 * with a `Range` header; a server that ignores `Range` is refused rather
 * than downloaded whole.
 *
 * @param url The file's URL.
 * @param options Headers and fetch override.
 * @returns The source.
 * @throws {TypeError} When the server refuses, gives no size or ignores `Range`.
 *
 * @example
 * ```ts ignore
 * import { httpSource } from "@modelhost/modelhost/core";
 * const src = await httpSource("https://example.com/model.safetensors");
 * const head = await src.read(0, 8);
 * ```
 */
export async function httpSource(
  url: string | URL,
  options: HttpSourceOptions = {},
): Promise<HttpByteSource> {
  const f = options.fetch ?? globalThis.fetch;
  const headers = options.headers ?? {};
  const name = String(url);
  let requests = 0;
  let transferred = 0;

  let size: number | undefined;
  requests++;
  const head = await f(url, { method: "HEAD", headers });
  await head.body?.cancel();
  if (head.ok) {
    const len = head.headers.get("content-length");
    if (len !== null && /^\d+$/.test(len)) size = Number(len);
  }
  if (size === undefined) {
    requests++;
    const probe = await f(url, { headers: { ...headers, Range: "bytes=0-0" } });
    if (probe.status !== 206) {
      // a server that ignores Range sends the whole file: do not pull it
      await probe.body?.cancel();
      throw new TypeError(
        `Cannot open ${name}: HTTP ${probe.status}; expected 206 Partial Content to a Range request`,
      );
    }
    transferred += (await boundedBody(probe, 1, name)).byteLength;
    size = parseTotal(probe.headers.get("content-range"));
    if (size === undefined) {
      throw new TypeError(
        `Cannot open ${name}: the server gave no total size in Content-Range`,
      );
    }
  }
  const total = size;

  return {
    name,
    size: total,
    get bytesTransferred() {
      return transferred;
    },
    get requests() {
      return requests;
    },
    async read(offset, length) {
      checkRange(name, total, offset, length);
      if (length === 0) return new Uint8Array(0);
      requests++;
      const res = await f(url, {
        headers: {
          ...headers,
          Range: `bytes=${offset}-${offset + length - 1}`,
        },
      });
      if (res.status !== 206) {
        // a 200 carries the whole file: refuse before reading any of it
        await res.body?.cancel();
        throw new TypeError(
          `Cannot read ${length} bytes at offset ${offset} of ${name}: HTTP ${res.status}, expected 206 Partial Content (the server does not serve byte ranges)`,
        );
      }
      const body = await boundedBody(res, length, name);
      transferred += body.byteLength;
      if (body.byteLength !== length) {
        throw new RangeError(
          `Cannot read ${name}: asked for ${length} bytes at offset ${offset}, the server sent ${body.byteLength}`,
        );
      }
      return body;
    },
  };
}
