// HTTP plumbing of the server: an error type that carries its status code,
// JSON responses, and request bodies read under a byte cap.

/** An error that answers with its own HTTP status (and headers). */
export class HttpError extends Error {
  /** The HTTP status code. */
  readonly status: number;
  /** Extra response headers (`WWW-Authenticate`, `Allow`, `Retry-After`). */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    message: string,
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "HttpError";
    this.status = status;
    this.headers = headers;
  }
}

/** A JSON response (`{"error": …}` bodies use the same shape as Ollama). */
export function jsonResponse(
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/** The status an error answers with: its own, 400 for bad input, else 500. */
export function statusOf(e: unknown): number {
  if (e instanceof HttpError) return e.status;
  if (
    e instanceof SyntaxError || e instanceof TypeError ||
    e instanceof RangeError
  ) return 400;
  return 500;
}

/** The JSON error response for an error. */
export function errorResponse(e: unknown): Response {
  const status = statusOf(e);
  const message = e instanceof Error ? e.message : String(e);
  return jsonResponse(
    { error: message },
    status,
    e instanceof HttpError ? e.headers : {},
  );
}

/** Refuses a request whose declared `Content-Length` is over the cap. */
export function checkDeclaredLength(req: Request, maxBytes: number): void {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) {
    throw tooLarge(Number(declared), maxBytes);
  }
}

/** The 413 error for a body over the cap. */
export function tooLarge(bytes: number, maxBytes: number): HttpError {
  return new HttpError(
    413,
    `Request body too large: ${bytes} bytes or more, the limit is ${maxBytes}`,
  );
}

/**
 * Reads a whole request body, refusing it with 413 as soon as it passes
 * `maxBytes` (by its `Content-Length`, or while it streams in).
 */
export async function readBody(
  req: Request,
  maxBytes: number,
): Promise<Uint8Array> {
  checkDeclaredLength(req, maxBytes);
  if (!req.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = req.body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) throw tooLarge(total, maxBytes);
      chunks.push(value);
    }
  } catch (e) {
    await reader.cancel().catch(() => {});
    throw e;
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

/** Reads a JSON object body (400 when it does not parse or is no object). */
export async function readJsonObject(
  req: Request,
  maxBytes: number,
): Promise<Record<string, unknown>> {
  const bytes = await readBody(req, maxBytes);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new HttpError(
      400,
      `Malformed JSON body: ${e instanceof Error ? e.message : e}`,
    );
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new HttpError(400, "The JSON body must be an object");
  }
  return value as Record<string, unknown>;
}

/** Compares two strings in time independent of where they differ. */
export function sameSecret(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a), y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  }
  return diff === 0;
}

/** Refuses (401) a request without the bearer token, when one is set. */
export function requireToken(req: Request, token: string | undefined): void {
  if (token === undefined) return;
  const auth = req.headers.get("authorization") ?? "";
  const m = auth.match(/^Bearer\s+(.+)$/i);
  if (!m || !sameSecret(m[1], token)) {
    throw new HttpError(
      401,
      m
        ? "Invalid bearer token"
        : "This endpoint needs an Authorization: Bearer token",
      { "www-authenticate": 'Bearer realm="modelhost"' },
    );
  }
}
