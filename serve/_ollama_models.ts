// Ollama's model management: /api/delete, /api/copy, /api/create (from a
// Modelfile or its JSON fields) and /api/pull (an http(s) URL of a model
// file, or a Hugging Face-style folder URL). Each needs the bearer token
// when one is set, as uploads and deletions on the registry routes do.
//
// Created and copied models are version folders (`name/version/`) whose
// weights are hard links to the source's (copies where the file system
// has no links), with the Modelfile beside them. Pulls stream to a hidden
// file in the registry folder (kept when interrupted, so the next pull of
// the same URL resumes with a Range request), are checked (length, and
// SHA-256 when the server names one), read back by the format plugins,
// and only then linked into place.

import { basename, join, relative, resolve } from "@std/path";
import { encodeHex } from "@std/encoding";
import { renderOllamaTemplate } from "../tokenizers/go_template.ts";
import type { RequestContext, ServerParts } from "./_context.ts";
import { errorText } from "./_generate.ts";
import {
  HttpError,
  jsonResponse,
  readJsonObject,
  requireToken,
} from "./_http.ts";
import type { ModelVersion } from "./_model_info.ts";
import {
  addParameter,
  formatModelfile,
  type Modelfile,
  parseModelfile,
} from "./_modelfile.ts";
import { parseOllamaName, resolveModel } from "./_ollama.ts";
import type { Route } from "./_router.ts";

const encoder = new TextEncoder();

/** Hard-links (or copies) a file or a folder's files from `src` to `dst`. */
async function linkTree(src: string, dst: string): Promise<void> {
  const st = await Deno.stat(src);
  if (st.isDirectory) {
    await Deno.mkdir(dst, { recursive: true });
    for await (const e of Deno.readDir(src)) {
      if (e.name.startsWith(".")) continue;
      await linkTree(join(src, e.name), join(dst, e.name));
    }
    return;
  }
  try {
    await Deno.link(src, dst);
  } catch {
    await Deno.copyFile(src, dst);
  }
}

/** The file name a single-file version keeps in a version folder (`model.gguf`). */
function modelFileName(parts: ServerParts, v: ModelVersion): string {
  const name = basename(v.path);
  if (name.startsWith("model.")) return name;
  let ext = "";
  try {
    ext = parts.registry.format(v.format).extensions[0] ?? "";
  } catch { /* unknown format: keep the name's extension */ }
  return `model${ext || name.slice(name.indexOf("."))}`;
}

/** Writes a version's files (not its Modelfile) into `dir`. */
async function linkVersion(
  parts: ServerParts,
  v: ModelVersion,
  dir: string,
): Promise<void> {
  const st = await Deno.stat(v.path);
  if (st.isDirectory) {
    for await (const e of Deno.readDir(v.path)) {
      if (e.name.startsWith(".") || e.name === "Modelfile") continue;
      await linkTree(join(v.path, e.name), join(dir, e.name));
    }
  } else await linkTree(v.path, join(dir, modelFileName(parts, v)));
}

/** `name[:tag]` of a new model: the name, and the version (none: the next number). */
function newName(
  raw: unknown,
  field: string,
): { name: string; version?: string } {
  if (typeof raw !== "string" || raw === "") {
    throw new HttpError(400, `"${field}" must be a model name`);
  }
  return parseOllamaName(raw);
}

/** `DELETE /api/delete`: one tag (`name:latest` or `name` is the newest version). */
async function handleDelete(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  requireToken(req, parts.token);
  const body = await readJsonObject(req, parts.maxBodyBytes);
  const model = body.model ?? body.name;
  const v = await resolveModel(parts, model);
  ctx.log.model = v.name;
  ctx.log.version = v.version;
  const removed = await parts.folder.remove(v.name, v.version);
  for (const r of removed) parts.cache.evictPath(r.path);
  parts.log("info", "model deleted", {
    model: v.name,
    versions: removed.map((r) => r.version),
  });
  return jsonResponse({ status: "success" });
}

/** `POST /api/copy`: `source` to `destination` as a new version (links, not copies). */
async function handleCopy(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  requireToken(req, parts.token);
  const body = await readJsonObject(req, parts.maxBodyBytes);
  const src = await resolveModel(parts, body.source);
  const dst = newName(body.destination, "destination");
  ctx.log.model = dst.name;
  const made = await parts.folder.addFolder(
    dst.name,
    dst.version,
    async (dir) => {
      await linkVersion(parts, src, dir);
      if (src.modelfile) {
        await Deno.writeTextFile(
          join(dir, "Modelfile"),
          formatModelfile(src.modelfile),
        );
      }
    },
  );
  ctx.log.version = made.version;
  parts.log("info", "model copied", {
    from: `${src.name}@${src.version}`,
    model: made.name,
    version: made.version,
  });
  return jsonResponse({ status: "success" });
}

/** Streams progress objects as NDJSON (or answers the last one) while `work` runs. */
function progress(
  ctx: RequestContext,
  stream: boolean,
  work: (send: (status: Record<string, unknown>) => void) => Promise<void>,
): Promise<Response> | Response {
  if (!stream) {
    return work(() => {}).then(() => jsonResponse({ status: "success" }));
  }
  let finish!: () => void;
  ctx.finished = new Promise((r) => finish = r);
  const body = new ReadableStream<Uint8Array>({
    start: async (controller) => {
      const send = (obj: unknown) => {
        try {
          controller.enqueue(encoder.encode(JSON.stringify(obj) + "\n"));
        } catch { /* the client went away */ }
      };
      try {
        await work(send);
        send({ status: "success" });
      } catch (e) {
        ctx.log.error = errorText(e);
        send({ error: errorText(e) });
      } finally {
        try {
          controller.close();
        } catch { /* cancelled */ }
        finish();
      }
    },
    cancel: () => {
      ctx.abort(new HttpError(499, "The client closed the connection"));
    },
  });
  return new Response(body, {
    headers: { "content-type": "application/x-ndjson" },
  });
}

const CREATE_REFUSED: Record<string, string> = {
  quantize:
    '"quantize" is not supported by /api/create; run `modelhost quantize` on the file and create from the result',
  adapters: "adapters (LoRA) are not supported by this server",
  files:
    '"files" (uploaded blobs) are not supported; FROM a registry model or a file in the registry folder',
};

/** The Modelfile of a create request: its `modelfile` text, then the JSON fields over it. */
function createModelfile(body: Record<string, unknown>): Modelfile {
  for (const [k, why] of Object.entries(CREATE_REFUSED)) {
    const v = body[k];
    if (
      v !== undefined && v !== null && v !== "" &&
      !(typeof v === "object" && Object.keys(v).length === 0)
    ) throw new HttpError(400, why);
  }
  if (body.modelfile !== undefined && typeof body.modelfile !== "string") {
    throw new HttpError(400, '"modelfile" must be a string');
  }
  const mf = body.modelfile
    ? parseModelfile(body.modelfile as string)
    : { parameters: {}, license: [], messages: [] } as Modelfile;
  const str = (k: string) => {
    const v = body[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") {
      throw new HttpError(400, `"${k}" must be a string`);
    }
    return v;
  };
  mf.from = str("from") ?? mf.from;
  mf.template = str("template") ?? mf.template;
  mf.system = str("system") ?? mf.system;
  const lic = body.license;
  if (typeof lic === "string") mf.license = [lic];
  else if (Array.isArray(lic) && lic.every((l) => typeof l === "string")) {
    mf.license = lic;
  } else if (lic !== undefined && lic !== null) {
    throw new HttpError(400, '"license" must be a string or a list of strings');
  }
  const params = body.parameters;
  if (params !== undefined && params !== null) {
    if (typeof params !== "object" || Array.isArray(params)) {
      throw new HttpError(400, '"parameters" must be an object');
    }
    for (const [k, v] of Object.entries(params)) {
      if (k === "stop") delete mf.parameters.stop;
      addParameter(mf.parameters, k, v);
    }
  }
  const msgs = body.messages;
  if (msgs !== undefined && msgs !== null) {
    if (
      !Array.isArray(msgs) ||
      !msgs.every((m) =>
        m && typeof m.role === "string" && typeof m.content === "string"
      )
    ) {
      throw new HttpError(400, '"messages" must be a list of {role, content}');
    }
    mf.messages = msgs.map((m) => ({ role: m.role, content: m.content }));
  }
  if (!mf.from) {
    throw new HttpError(
      400,
      'A model needs a base: "from" (or FROM in the Modelfile) naming a registry model or a file in the registry folder',
    );
  }
  if (mf.template !== undefined) {
    try {
      renderOllamaTemplate(mf.template, [{ role: "user", content: "x" }]);
    } catch (e) {
      throw new HttpError(400, `template: ${errorText(e)}`);
    }
  }
  return mf;
}

/** The base of a create: a registry model, or a file in the registry folder. */
async function createBase(
  parts: ServerParts,
  from: string,
): Promise<{ version?: ModelVersion; path?: string }> {
  const inside = resolve(parts.folder.dir, from);
  const rel = relative(resolve(parts.folder.dir), inside);
  const looksLikePath = from.includes("/") || from.startsWith(".");
  if (looksLikePath) {
    if (rel.startsWith("..") || rel === "") {
      throw new HttpError(
        400,
        `FROM ${from}: files must lie inside the registry folder`,
      );
    }
    if (!(await Deno.stat(inside).then((s) => s.isFile, () => false))) {
      throw new HttpError(
        404,
        `FROM ${from}: no such file in the registry folder`,
      );
    }
    return { path: inside };
  }
  return { version: await resolveModel(parts, from) };
}

/** `POST /api/create`. */
async function handleCreate(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  requireToken(req, parts.token);
  const body = await readJsonObject(req, parts.maxBodyBytes);
  const target = newName(body.model ?? body.name, "model");
  ctx.log.model = target.name;
  const mf = createModelfile(body);
  const base = await createBase(parts, mf.from!);
  if (base.version && base.version.kind !== "llm") {
    throw new HttpError(
      400,
      `FROM ${mf.from}: a ${base.version.kind} model; /api/create makes language models`,
    );
  }
  return progress(ctx, body.stream !== false, async (send) => {
    send({ status: "reading model metadata" });
    // A base made by /api/create lends its settings; this request's win.
    const inherited = base.version?.modelfile;
    const merged: Modelfile = {
      from: mf.from,
      parameters: { ...inherited?.parameters, ...mf.parameters },
      template: mf.template ?? inherited?.template,
      system: mf.system ?? inherited?.system,
      license: mf.license.length ? mf.license : inherited?.license ?? [],
      messages: mf.messages.length ? mf.messages : inherited?.messages ?? [],
    };
    send({ status: "creating model layer" });
    const fileName = base.path ? basename(base.path) : "";
    const inFolder = fileName.startsWith("model.")
      ? fileName
      : `model${fileName.slice(Math.max(0, fileName.indexOf(".")))}`;
    const made = await parts.folder.addFolder(
      target.name,
      target.version,
      async (dir) => {
        if (base.version) await linkVersion(parts, base.version, dir);
        else await linkTree(base.path!, join(dir, inFolder));
        await Deno.writeTextFile(
          join(dir, "Modelfile"),
          formatModelfile(merged),
        );
      },
      base.path
        ? (dir) => parts.folder.check(join(dir, inFolder), target.name)
        : undefined,
    );
    if (made.kind !== "llm") {
      await parts.folder.remove(made.name, made.version);
      throw new HttpError(
        400,
        `FROM ${mf.from}: ${
          made.error ?? `a ${made.kind} model, not a language model`
        }`,
      );
    }
    ctx.log.version = made.version;
    send({ status: "writing manifest" });
    parts.log("info", "model created", {
      model: made.name,
      version: made.version,
      from: mf.from,
    });
  });
}

// ------------------------------------------------------------------ pull

/** The registry name a pulled URL gets: its file's stem, or the repository's name. */
export function pullName(url: URL): string {
  const seg = url.pathname.split("/").filter((s) => s !== "").map(
    decodeURIComponent,
  );
  const at = seg.indexOf("resolve");
  let name = at > 0 ? seg[at - 1] : seg[seg.length - 1] ?? url.hostname;
  if (!url.pathname.endsWith("/") && at < 0) {
    name = name.replace(/\.[^.]*$/, "").replace(/\.(safetensors|bundle)$/, "");
  } else if (!url.pathname.endsWith("/") && at > 0) {
    name = seg[seg.length - 1].replace(/\.[^.]*$/, "");
  }
  return name.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, 128) || "model";
}

/** SHA-256 of a file, hex. */
async function sha256File(path: string): Promise<string> {
  const data = await Deno.readFile(path);
  return encodeHex(new Uint8Array(await crypto.subtle.digest("SHA-256", data)));
}

/** The SHA-256 a response names for its body (`X-Linked-Etag` / `ETag` of 64 hex, `Digest: sha-256=`). */
function namedSha256(res: Response): string | undefined {
  for (const h of ["x-linked-etag", "etag"]) {
    const v = res.headers.get(h)?.replace(/^W\//, "").replaceAll('"', "");
    if (v && /^[0-9a-f]{64}$/i.test(v)) return v.toLowerCase();
  }
  const d = res.headers.get("digest")?.match(/sha-256=([A-Za-z0-9+/=]+)/i);
  if (d) {
    const bin = atob(d[1]);
    return Array.from(bin, (c) => c.charCodeAt(0).toString(16).padStart(2, "0"))
      .join("");
  }
  return undefined;
}

interface Download {
  bytes: number;
  sha256?: string;
}

/**
 * Downloads `url` to `path`, resuming from what `path` holds (a Range
 * request; a server that ignores it starts over), reporting progress.
 */
async function download(
  url: string,
  path: string,
  signal: AbortSignal,
  report: (completed: number, total: number) => void,
  maxBytes: number,
): Promise<Download> {
  let have = await Deno.stat(path).then((s) => s.size, () => 0);
  const res = await fetch(url, {
    headers: have > 0 ? { range: `bytes=${have}-` } : {},
    signal,
  });
  if (res.status === 416 && have > 0) {
    // Already complete: what the server has is what we have.
    await res.body?.cancel();
    const head = await fetch(url, { method: "HEAD", signal });
    const total = Number(head.headers.get("content-length") ?? have);
    if (total !== have) {
      await Deno.remove(path).catch(() => {});
      throw new HttpError(
        502,
        `pull ${url}: the file changed on the server; pull again`,
      );
    }
    return { bytes: have, sha256: namedSha256(head) };
  }
  if (res.status !== 200 && res.status !== 206) {
    await res.body?.cancel();
    throw new HttpError(
      res.status === 404 ? 404 : 502,
      `pull ${url}: the server answered ${res.status} ${res.statusText}`,
    );
  }
  if (res.status === 200) have = 0;
  const length = res.headers.get("content-length");
  const total = length !== null ? have + Number(length) : 0;
  if (total > maxBytes) {
    await res.body?.cancel();
    throw new HttpError(
      413,
      `pull ${url}: ${total} bytes, the limit is ${maxBytes}`,
    );
  }
  const file = await Deno.open(path, {
    write: true,
    create: true,
    append: have > 0,
    truncate: have === 0,
  });
  let done = have, last = 0;
  try {
    if (res.body) {
      for await (const chunk of res.body) {
        let off = 0;
        while (off < chunk.byteLength) {
          off += await file.write(chunk.subarray(off));
        }
        done += chunk.byteLength;
        if (done > maxBytes) {
          throw new HttpError(413, `pull ${url}: over ${maxBytes} bytes`);
        }
        const now = performance.now();
        if (now - last > 200) {
          last = now;
          report(done, total);
        }
      }
    }
    await file.sync();
  } finally {
    file.close();
  }
  report(done, total);
  if (total > 0 && done !== total) {
    throw new HttpError(
      502,
      `pull ${url}: got ${done} of ${total} bytes; pull again to resume`,
    );
  }
  return { bytes: done, sha256: namedSha256(res) };
}

/** Files of a Hugging Face checkpoint folder, beside the weights. */
const HF_FILES = [
  "tokenizer.json",
  "tokenizer_config.json",
  "generation_config.json",
  "special_tokens_map.json",
];

/** `POST /api/pull`: `model` (or `name`) is an http(s) URL. */
async function handlePull(
  req: Request,
  parts: ServerParts,
  ctx: RequestContext,
): Promise<Response> {
  requireToken(req, parts.token);
  const body = await readJsonObject(req, parts.maxBodyBytes);
  const raw = [body.model, body.name].find((x) =>
    typeof x === "string" && /^https?:\/\//i.test(x)
  ) as string | undefined;
  if (!raw) {
    throw new HttpError(
      400,
      `pull takes an http(s) URL of a model file or of a Hugging Face-style folder (ending in "/"); there is no model library to pull ${
        JSON.stringify(body.model ?? body.name)
      } from`,
    );
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new HttpError(400, `pull: ${raw} is not a URL`);
  }
  const name = pullName(url);
  ctx.log.model = name;
  const folder = url.pathname.endsWith("/");
  return progress(ctx, body.stream !== false, async (send) => {
    send({ status: "pulling manifest" });
    const key = encodeHex(
      new Uint8Array(
        await crypto.subtle.digest("SHA-256", encoder.encode(url.href)),
      ),
    ).slice(0, 16);
    const digest = `sha256:${key}`;
    const report = (file: string) => (completed: number, total: number) =>
      send({
        status: `pulling ${file}`,
        digest,
        total,
        completed,
      });
    let made: ModelVersion;
    if (!folder) {
      const tmp = join(parts.folder.dir, `.pull-${key}.partial`);
      const got = await download(
        url.href,
        tmp,
        ctx.signal,
        report(basename(url.pathname)),
        parts.maxUploadBytes,
      );
      send({ status: "verifying sha256 digest" });
      if (got.sha256) {
        const sum = await sha256File(tmp);
        if (sum !== got.sha256) {
          await Deno.remove(tmp).catch(() => {});
          throw new HttpError(
            502,
            `pull ${url.href}: SHA-256 ${sum} differs from the server's ${got.sha256}`,
          );
        }
      }
      send({ status: "writing manifest" });
      made = await parts.folder.adoptFile(name, tmp);
    } else {
      made = await parts.folder.addFolder(
        name,
        undefined,
        async (dir) => {
          const get = (file: string, optional: boolean) =>
            download(
              new URL(file, url).href,
              join(dir, file),
              ctx.signal,
              report(file),
              parts.maxUploadBytes,
            ).catch(async (e) => {
              await Deno.remove(join(dir, file)).catch(() => {});
              if (optional && e instanceof HttpError && e.status === 404) {
                return;
              }
              throw e;
            });
          await get("config.json", false);
          const index = await get("model.safetensors.index.json", true);
          if (index) {
            const text = await Deno.readTextFile(
              join(dir, "model.safetensors.index.json"),
            );
            let shards: string[];
            try {
              const map = JSON.parse(text).weight_map as Record<string, string>;
              shards = [...new Set(Object.values(map))];
            } catch {
              throw new HttpError(
                400,
                `pull ${url.href}: model.safetensors.index.json has no weight_map`,
              );
            }
            for (const s of shards) {
              if (s.includes("/") || s.startsWith(".")) {
                throw new HttpError(400, `pull: a shard named ${s}`);
              }
              await get(s, false);
            }
          } else await get("model.safetensors", false);
          for (const f of HF_FILES) await get(f, true);
          send({ status: "verifying sha256 digest" });
        },
        (dir) => parts.folder.check(dir, name),
      );
      send({ status: "writing manifest" });
    }
    ctx.log.version = made.version;
    parts.log("info", "model pulled", {
      model: made.name,
      version: made.version,
      url: url.href,
      bytes: made.bytes,
    });
  });
}

/** The model-management routes of the Ollama API. */
export function ollamaModelRoutes(parts: ServerParts): Route[] {
  return [
    {
      pattern: "/api/delete",
      methods: { DELETE: ({ req, ctx }) => handleDelete(req, parts, ctx) },
    },
    {
      pattern: "/api/copy",
      methods: { POST: ({ req, ctx }) => handleCopy(req, parts, ctx) },
    },
    {
      pattern: "/api/create",
      methods: { POST: ({ req, ctx }) => handleCreate(req, parts, ctx) },
      uploads: ["POST"],
    },
    {
      pattern: "/api/pull",
      methods: { POST: ({ req, ctx }) => handlePull(req, parts, ctx) },
      uploads: ["POST"],
    },
  ];
}
