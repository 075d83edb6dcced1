// The server as a fuzz target: a seeded HTTP request mutator (methods,
// paths, headers, bodies: the JSON of every route, Modelfiles, model
// uploads with flipped bytes and hostile hyperparameters) run against a
// live server in a child process. A case fails when the server dies, answers
// an untyped error (a 500 whose log line carries a stack: an error no code
// path expected), takes over 2 s, grows past 1 GiB of RSS, or stores an
// upload that then lists as invalid (a wrong acceptance).
//
// The interface is the small one every fuzz target has: `name`,
// `generate(seed)` → case, `run(case)` → outcome, so this target can join
// a harness that runs several.

import { join } from "@std/path";
import { bundleBytes, predictVectors } from "../serve/_helpers.ts";
import { rssOf, spawnServer } from "../serve/_child.ts";
import { tinyLlamaGguf } from "../serve/_tiny_llama.ts";

/** What one case ended as. */
export type FuzzOutcome =
  | { ok: true; status: number }
  | {
    ok: false;
    kind: "crash" | "untyped" | "hang" | "memory" | "accepted";
    detail: string;
  };

/** A fuzz target: cases from seeds, and how to run one. */
export interface FuzzTarget<C> {
  /** Short name (`serve`). */
  name: string;
  /** The case for a seed (the same seed gives the same case). */
  generate(seed: number): C;
  /** Runs a case. */
  run(c: C): Promise<FuzzOutcome>;
}

/** One HTTP request. */
export interface HttpCase {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array;
}

/** Longest a request may take before it counts as a hang, ms. */
export const HANG_MS = 2_000;
/** Most resident memory the server may reach, bytes. */
export const MAX_RSS = 2 ** 30;

/** xorshift32, values in [0, 1). */
function rng(seed: number): () => number {
  let s = (seed * 2654435761) >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** Names requests use: the stored models, names uploads create, odd ones. */
const MODELS = [
  "tiny",
  "mlp",
  "up",
  "nope",
  "tiny:latest",
  "up:2",
  "",
  "a/b",
  "../x",
];
const PATHS = [
  "/",
  "/healthz",
  "/metrics",
  "/registry/models",
  "/registry/models/{m}",
  "/registry/models/{m}/predict",
  "/registry/models/{m}/versions/{v}",
  "/registry/models/{m}/versions/{v}/predict",
  "/v1/models",
  "/v1/models/{m}",
  "/v1/models/{m}/predict",
  "/v1/chat/completions",
  "/v1/completions",
  "/v1/embeddings",
  "/api/generate",
  "/api/chat",
  "/api/embed",
  "/api/embeddings",
  "/api/show",
  "/api/tags",
  "/api/ps",
  "/api/version",
  "/api/delete",
  "/api/copy",
  "/api/create",
  "/api/pull",
  "/ui/",
  "/ui/{m}",
];
const METHODS = [
  "GET",
  "POST",
  "POST",
  "POST",
  "DELETE",
  "PUT",
  "PATCH",
  "OPTIONS",
  "HEAD",
  "toString",
  "FOO",
];

/** Values a mutation puts in place of a field. */
const ODD: unknown[] = [
  null,
  true,
  -1,
  0,
  1e308,
  -1e308,
  2 ** 31 - 1,
  2 ** 53,
  0.5,
  "",
  "x".repeat(5000),
  "\u0000\ud800",
  [],
  {},
  [[[[[]]]]],
  { __proto__: 1, constructor: 2 },
  "NaN",
  ["a", 1, null],
];

/** A valid-looking body per route, which mutations then break. */
function baseBody(path: string, r: () => number): unknown {
  const model = MODELS[Math.floor(r() * 6)];
  const msgs = [
    { role: "system", content: "be brief" },
    { role: "user", content: "ab" },
  ];
  const opts = { num_predict: 4, temperature: r(), seed: 1, top_k: 3 };
  switch (path) {
    case "/api/generate":
      return { model, prompt: "abc", stream: r() < 0.5, options: opts };
    case "/api/chat":
      return { model, messages: msgs, stream: r() < 0.5, options: opts };
    case "/api/embed":
    case "/api/embeddings":
      return { model, input: ["ab", "cd"], prompt: "ab" };
    case "/api/show":
    case "/api/delete":
      return { model: "nope" };
    case "/api/copy":
      return { source: "tiny", destination: `copy${Math.floor(r() * 4)}` };
    case "/api/create":
      return {
        model: `made${Math.floor(r() * 4)}`,
        modelfile: [
          "FROM tiny",
          "PARAMETER temperature 0.3",
          'PARAMETER stop "x"',
          'SYSTEM """be brief"""',
          "TEMPLATE {{ .Prompt }}",
        ].filter(() => r() < 0.8).join("\n"),
        stream: false,
      };
    case "/api/pull":
      return { model: "http://127.0.0.1:9/x.gguf", stream: false };
    case "/v1/chat/completions":
      return {
        model,
        messages: msgs,
        max_tokens: 4,
        stream: r() < 0.3,
        n: 1 + Math.floor(r() * 2),
        logprobs: r() < 0.3,
        top_logprobs: 2,
        response_format: r() < 0.2 ? { type: "json_object" } : undefined,
      };
    case "/v1/completions":
      return { model, prompt: ["ab", "cd"], max_tokens: 3, stream: r() < 0.3 };
    case "/v1/embeddings":
      return { model, input: "abc" };
    default:
      return path.includes("predict")
        ? { inputs: [[0.1, 0.2, 0.3, 0.4]] }
        : { model };
  }
}

/** Breaks a JSON value: drops, swaps or nests fields. */
function mutateJson(v: unknown, r: () => number, depth = 0): unknown {
  if (depth > 4 || r() < 0.5) {
    return r() < 0.3 ? ODD[Math.floor(r() * ODD.length)] : v;
  }
  if (Array.isArray(v)) return v.map((x) => mutateJson(x, r, depth + 1));
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (r() < 0.1) continue;
      out[r() < 0.05 ? "__proto__" : k] = mutateJson(x, r, depth + 1);
    }
    return out;
  }
  return v;
}

function flipBytes(b: Uint8Array, r: () => number): Uint8Array {
  const out = b.slice(0, r() < 0.2 ? Math.floor(r() * b.length) : b.length);
  const flips = Math.floor(r() * 8);
  for (let i = 0; i < flips && out.length; i++) {
    out[Math.floor(r() * out.length)] ^= 1 << Math.floor(r() * 8);
  }
  return out;
}

/** The model files a case may upload (made once). */
interface Samples {
  gguf: Uint8Array;
  hostile: Uint8Array[];
  bundle: Uint8Array;
}

/** The server fuzz target, with its server (`start` before running). */
export interface ServeFuzz extends FuzzTarget<HttpCase> {
  /** Starts the server on a fresh folder with the sample models. */
  start(): Promise<void>;
  /** Stops it and removes the folder; returns the worst RSS seen. */
  stop(): Promise<{ maxRss: number; untypedLogs: string[] }>;
}

/** Builds the server target. */
export async function serveTarget(): Promise<ServeFuzz> {
  const BIG = 2 ** 31 - 1;
  const samples: Samples = {
    gguf: await tinyLlamaGguf(),
    hostile: [
      await tinyLlamaGguf({ "llama.block_count": BIG }),
      await tinyLlamaGguf({ "llama.attention.head_count": 0 }),
      await tinyLlamaGguf({ "llama.embedding_length": BIG }),
      await tinyLlamaGguf({ "llama.rope.dimension_count": BIG }),
      await tinyLlamaGguf({ "llama.context_length": BIG }),
      await tinyLlamaGguf({ "tokenizer.ggml.tokens": undefined }),
    ],
    bundle: await bundleBytes(await predictVectors()),
  };
  let dir = "";
  let child: Deno.ChildProcess | undefined;
  let url = "";
  let maxRss = 0;
  let exited = false;
  const untyped: string[] = [];
  let count = 0;

  const restore = async () => {
    await Deno.writeFile(join(dir, "tiny.gguf"), samples.gguf);
    await Deno.writeFile(join(dir, "mlp.bundle.json"), samples.bundle);
  };

  return {
    name: "serve",
    generate(seed) {
      const r = rng(seed);
      const pattern = PATHS[Math.floor(r() * PATHS.length)];
      const natural =
        /^\/(healthz|metrics|ui|$)|^\/registry\/models$|^\/v1\/models|^\/api\/(tags|ps|version)/
            .test(pattern)
          ? "GET"
          : pattern === "/registry/models/{m}" && r() < 0.3
          ? "DELETE"
          : "POST";
      const method = r() < 0.8
        ? natural
        : METHODS[Math.floor(r() * METHODS.length)];
      let path = pattern
        .replace(
          "{m}",
          () =>
            r() < 0.8
              ? encodeURIComponent(
                MODELS[Math.floor(r() * (r() < 0.7 ? 4 : MODELS.length))],
              )
              : [
                "%ZZ",
                "%2e%2e%2f",
                "a".repeat(300),
                "%00",
              ][Math.floor(r() * 4)],
        )
        .replace(
          "{v}",
          () => ["1", "latest", "2", "x y", "%ff"][Math.floor(r() * 5)],
        );
      if (r() < 0.1) {
        path += [
          "?version=2",
          "?format=gguf",
          "?format=nope",
          "?id=mlp",
          "#x",
        ][Math.floor(r() * 5)];
      }
      const headers: Record<string, string> = {};
      if (r() < 0.7) {
        headers["content-type"] = [
          "application/json",
          "text/plain",
          "application/octet-stream",
          "multipart/form-data; boundary=x",
        ][Math.floor(r() * 4)];
      }
      if (r() < 0.2) {
        headers.origin = [
          "http://localhost:3000",
          "http://evil.example",
          "null",
        ][Math.floor(r() * 3)];
      }
      if (r() < 0.1) {
        headers.authorization =
          ["Bearer t", "Bearer", "Basic eA=="][Math.floor(r() * 3)];
      }
      if (r() < 0.1) {
        headers["x-request-id"] =
          ["ok-1", "x".repeat(100), "a b"][Math.floor(r() * 3)];
      }
      if (r() < 0.05) headers["accept-encoding"] = "gzip";
      let body: Uint8Array | undefined;
      const kind = r();
      const bare = path.replace(/\?.*$/, "");
      if (method === "GET" || method === "HEAD") body = undefined;
      else if (/^\/registry\/models\/[^/]+$/.test(bare) && kind < 0.6) {
        const pick = r();
        body = pick < 0.3
          ? samples.hostile[Math.floor(r() * samples.hostile.length)]
          : pick < 0.8
          ? flipBytes(pick < 0.55 ? samples.gguf : samples.bundle, r)
          : samples.gguf;
      } else if (kind < 0.9) {
        const base = baseBody(bare, r);
        const json = r() < 0.7 ? mutateJson(base, r) : base;
        let text = JSON.stringify(json) ?? "null";
        if (r() < 0.1) text = text.slice(0, Math.floor(r() * text.length));
        if (r() < 0.03) text = "[".repeat(20000) + "]".repeat(20000);
        body = new TextEncoder().encode(text);
      } else {
        body = new Uint8Array(Math.floor(r() * 256)).map(() =>
          Math.floor(r() * 256)
        );
      }
      return { method, path, headers, body };
    },
    async start() {
      dir = await Deno.makeTempDir({ prefix: "modelhost-fuzz-" });
      await restore();
      const s = await spawnServer(dir, [
        "--max-tokens",
        "16",
        "--timeout-ms",
        "1500",
      ], true);
      child = s.child;
      url = s.url;
      exited = false;
      child.status.then(() => {
        exited = true;
      });
      // The log: every 500 with a stack is an error no code path expected.
      (async () => {
        const lines = child!.stderr.pipeThrough(new TextDecoderStream());
        let rest = "";
        for await (const chunk of lines) {
          rest += chunk;
          const parts = rest.split("\n");
          rest = parts.pop()!;
          for (const l of parts) {
            if (l.includes('"stack"') && l.includes('"status":500')) {
              untyped.push(l);
            }
          }
        }
      })().catch(() => {});
    },
    async run(c) {
      if (exited) {
        return { ok: false, kind: "crash", detail: "the server had exited" };
      }
      const before = untyped.length;
      const t0 = performance.now();
      let status = 0;
      const timer = AbortSignal.timeout(HANG_MS + 3_000);
      try {
        const res = await fetch(url + c.path, {
          method: c.method,
          headers: c.headers,
          body: c.body as BodyInit | undefined,
          signal: timer,
        });
        status = res.status;
        const answer = await res.arrayBuffer();
        // A stored model must be one the server can use.
        if (status === 201) {
          const kind = (() => {
            try {
              return JSON.parse(new TextDecoder().decode(answer)).kind;
            } catch {
              return undefined;
            }
          })();
          if (kind === "invalid") {
            return {
              ok: false,
              kind: "accepted",
              detail: `${c.method} ${c.path}: stored, but it lists as invalid`,
            };
          }
          // A stored language model must load and generate.
          const stored = JSON.parse(new TextDecoder().decode(answer));
          if (kind === "llm") {
            const g = await fetch(`${url}/api/generate`, {
              method: "POST",
              body: JSON.stringify({
                model: `${stored.name}:${stored.version}`,
                prompt: "a",
                raw: true,
                stream: false,
                options: { num_predict: 1 },
              }),
              signal: AbortSignal.timeout(HANG_MS + 3_000),
            });
            const text = await g.text();
            if (g.status !== 200) {
              return {
                ok: false,
                kind: "accepted",
                detail:
                  `${c.method} ${c.path}: stored, but generating with it answers ${g.status} ${
                    text.slice(0, 300)
                  }`,
              };
            }
          }
        }
      } catch (e) {
        if (exited) return { ok: false, kind: "crash", detail: String(e) };
        if ((e as Error).name === "TimeoutError") {
          const rss = (await rssOf(child!.pid)) ?? 0;
          maxRss = Math.max(maxRss, rss);
          if (rss > MAX_RSS) {
            return { ok: false, kind: "memory", detail: `${rss} bytes` };
          }
          return {
            ok: false,
            kind: "hang",
            detail: `${c.method} ${c.path}: no answer`,
          };
        }
        // A refused request may be cut by the server (413 before the body): not a failure.
      }
      const ms = performance.now() - t0;
      if (++count % 50 === 0 || status === 200) {
        const rss = (await rssOf(child!.pid)) ?? 0;
        maxRss = Math.max(maxRss, rss);
        if (rss > MAX_RSS) {
          return { ok: false, kind: "memory", detail: `${rss} bytes` };
        }
      }
      if (c.method === "DELETE" || c.path.startsWith("/api/delete")) {
        await restore();
      }
      // Give the log line a moment to arrive.
      if (status >= 500) await new Promise((r) => setTimeout(r, 20));
      if (untyped.length > before) {
        return {
          ok: false,
          kind: "untyped",
          detail: untyped[untyped.length - 1].slice(0, 500),
        };
      }
      if (exited) {
        return { ok: false, kind: "crash", detail: `${c.method} ${c.path}` };
      }
      if (ms > HANG_MS) {
        return {
          ok: false,
          kind: "hang",
          detail: `${c.method} ${c.path}: ${ms.toFixed(0)} ms`,
        };
      }
      return { ok: true, status };
    },
    async stop() {
      if (child && !exited) {
        child.kill("SIGTERM");
        await child.status;
      }
      if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
      return { maxRss, untypedLogs: untyped };
    },
  };
}

/** Runs `count` cases from `seed`; returns the failures and a status histogram. */
export async function fuzzServer(
  seed: number,
  count: number,
): Promise<{
  failures: { seed: number; c: HttpCase; outcome: FuzzOutcome }[];
  statuses: Record<string, number>;
  maxRss: number;
  ms: number;
}> {
  const t = await serveTarget();
  await t.start();
  const failures: { seed: number; c: HttpCase; outcome: FuzzOutcome }[] = [];
  const statuses: Record<string, number> = {};
  const t0 = performance.now();
  let maxRss = 0;
  try {
    for (let i = 0; i < count; i++) {
      const c = t.generate(seed + i);
      const o = await t.run(c);
      if (o.ok) statuses[o.status] = (statuses[o.status] ?? 0) + 1;
      else {
        failures.push({
          seed: seed + i,
          c: { ...c, body: undefined },
          outcome: o,
        });
        if (o.kind === "crash") {
          await t.stop();
          await t.start();
        }
      }
    }
  } finally {
    maxRss = (await t.stop()).maxRss;
  }
  return { failures, statuses, maxRss, ms: performance.now() - t0 };
}
