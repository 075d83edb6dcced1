// Ollama's embedding and model-management API through the npm `ollama`
// client: embed and embeddings (equal to the library's embed()), copy,
// create (from a Modelfile and from JSON fields: FROM, PARAMETER,
// TEMPLATE, SYSTEM, honoured by later generations), delete, and pull from
// a loopback file server (a GGUF file, resumed after a cut connection and
// checked against the SHA-256 the server names; a Hugging Face-style
// folder). Each changes the registry folder as it says and nothing else.

import { assert, assertEquals, assertMatch, assertRejects } from "@std/assert";
import { encodeHex } from "@std/encoding";
import { join } from "@std/path";
import { Ollama } from "ollama";
import { memorySource } from "../../core/sources.ts";
import { readGguf } from "../../formats/gguf/mod.ts";
import { writeModel } from "../../io/mod.ts";
import { loadTransformer } from "../../io/transformer.ts";
import { defaultRegistry } from "../../mod.ts";
import { ggufToHf } from "../../models/convert.ts";
import { embed } from "../../models/embed.ts";
import { generateText, promptIds } from "../../models/generate.ts";
import { renderOllamaTemplate } from "../../tokenizers/go_template.ts";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";
import { call, listing, upload, withServer } from "./_helpers.ts";

const GREEDY = { temperature: 0, repeat_last_n: 0 };

conformanceTest(
  "serve: ollama embed and embeddings give the library's vectors",
  async () => {
    await withServer({}, async ({ url }) => {
      const gguf = await Deno.readFile(fixture("gguf/stories260K.gguf"));
      assertEquals((await upload(url, "stories", gguf)).status, 201);
      const model = await loadTransformer(fixture("gguf/stories260K.gguf"));
      const ollama = new Ollama({ host: url });
      const texts = ["Once upon a time", "The cat sat."];
      const e = await ollama.embed({ model: "stories", input: texts });
      const lib = embed(model, texts);
      assertEquals(e.embeddings, lib.embeddings.map((v) => Array.from(v)));
      assertEquals(e.prompt_eval_count, lib.promptTokens);
      const short = await ollama.embed({
        model: "stories",
        input: texts[0],
        dimensions: 16,
      });
      assertEquals(short.embeddings[0].length, 16);
      // The older endpoint: one vector, not normalized.
      const old = await ollama.embeddings({
        model: "stories",
        prompt: texts[0],
      });
      const raw = embed(model, texts[0], { normalize: false }).embeddings[0];
      assertEquals(old.embedding, Array.from(raw));
    });
  },
);

conformanceTest(
  "serve: ollama copy, create (Modelfile and JSON fields) and delete",
  async () => {
    await withServer({}, async ({ url, dir }) => {
      const gguf = await Deno.readFile(fixture("gguf/stories260K.gguf"));
      assertEquals((await upload(url, "stories", gguf)).status, 201);
      const model = await loadTransformer(fixture("gguf/stories260K.gguf"));
      const ollama = new Ollama({ host: url });

      await ollama.copy({ source: "stories", destination: "tale:v1" });
      assertEquals(
        (await ollama.list()).models.map((m) => m.name).sort(),
        ["stories:latest", "tale:latest"],
      );
      const st = await Deno.stat(join(dir, "tale/v1/model.gguf"));
      const src = await Deno.stat(join(dir, "stories@1.gguf"));
      assertEquals(st.size, src.size);
      assertEquals(st.ino, src.ino); // a hard link, not a copy

      // A Modelfile: FROM, PARAMETER, SYSTEM, TEMPLATE (Go syntax).
      const template =
        "{{ if .System }}{{ .System }}\n{{ end }}Q: {{ .Prompt }}\nA:";
      const modelfile = [
        "FROM stories",
        "PARAMETER temperature 0",
        "PARAMETER repeat_last_n 0",
        "PARAMETER num_predict 12",
        'PARAMETER stop "Lily"',
        'SYSTEM """You tell short stories."""',
        `TEMPLATE """${template}"""`,
      ].join("\n");
      const made = await call(`${url}/api/create`, {
        json: { model: "teller", modelfile, stream: false },
      });
      assertEquals(made.status, 200, JSON.stringify(made.body));
      assertEquals(made.body.status, "success");
      const show = await ollama.show({ model: "teller" });
      assertEquals(show.system, "You tell short stories.");
      assertEquals(show.template, template);
      assertMatch(show.parameters, /temperature\s+0/);
      assertMatch(show.parameters, /stop\s+"Lily"/);
      // Its defaults apply: the prompt through the template, greedy, 12 tokens.
      const g = await ollama.generate({ model: "teller", prompt: "A cat" });
      const text = renderOllamaTemplate(template, [
        { role: "system", content: "You tell short stories." },
        { role: "user", content: "A cat" },
      ]);
      const lib = await generateText(model, promptIds(model, text), {
        greedy: true,
        repetitionPenalty: 1,
        maxTokens: 12,
        stop: ["Lily"],
      });
      assertEquals(g.response, lib.text);
      assertEquals(g.eval_count, lib.ids.length);

      // JSON fields through the client, streamed progress; FROM a created
      // model inherits its settings.
      const progress: string[] = [];
      for await (
        const p of await ollama.create({
          model: "teller2",
          from: "teller",
          system: "You tell long stories.",
          parameters: { num_predict: 5 },
          stream: true,
        })
      ) progress.push(p.status);
      assertEquals(progress[progress.length - 1], "success");
      const show2 = await ollama.show({ model: "teller2" });
      assertEquals(show2.system, "You tell long stories.");
      assertEquals(show2.template, template);
      assertMatch(show2.parameters, /num_predict\s+5/);
      assertEquals(
        (await ollama.generate({ model: "teller2", prompt: "A dog" }))
          .eval_count,
        5,
      );

      // Refusals: no base, an unknown base, a bad template, a bad Modelfile.
      for (
        const [body, status, text] of [
          [{ model: "x" }, 400, "needs a base"],
          [{ model: "x", from: "nope" }, 404, 'model "nope" not found'],
          [
            { model: "x", from: "stories", template: "{{ .Prompt " },
            400,
            "template",
          ],
          [
            { model: "x", modelfile: "FROM stories\nADAPTER a.bin" },
            400,
            "ADAPTER",
          ],
          [
            { model: "x", from: "../etc/passwd" },
            400,
            "inside the registry folder",
          ],
          [{ model: "x", from: "stories", quantize: "q4_0" }, 400, "quantize"],
        ] as [Record<string, unknown>, number, string][]
      ) {
        const before = await listing(dir);
        const r = await call(`${url}/api/create`, {
          json: { stream: false, ...body },
        });
        assertEquals(r.status, status, JSON.stringify(r.body));
        assertMatch(
          String(r.body.error),
          new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")),
        );
        assertEquals(await listing(dir), before);
      }

      await ollama.delete({ model: "teller2" });
      await ollama.delete({ model: "tale:latest" });
      assertEquals(
        (await ollama.list()).models.map((m) => m.name).sort(),
        ["stories:latest", "teller:latest"],
      );
      const gone = await assertRejects(() => ollama.delete({ model: "tale" }));
      assertEquals((gone as { status_code: number }).status_code, 404);
      // The source of the links is intact.
      assertEquals(
        (await Deno.stat(join(dir, "stories@1.gguf"))).size,
        gguf.length,
      );
    });
  },
);

/** A loopback file server with Range requests, a SHA-256 ETag and a first response cut short. */
function fileServer(root: string) {
  const log: { path: string; range: string | null; status: number }[] = [];
  let cutNext = true;
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (req) => {
      const path = decodeURIComponent(new URL(req.url).pathname);
      const range = req.headers.get("range");
      let bytes: Uint8Array<ArrayBuffer>;
      try {
        bytes = await Deno.readFile(join(root, path));
      } catch {
        log.push({ path, range, status: 404 });
        return new Response("not found", { status: 404 });
      }
      const etag = `"${
        encodeHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)))
      }"`;
      const m = range?.match(/^bytes=(\d+)-$/);
      const from = m ? Number(m[1]) : 0;
      const part = bytes.subarray(from);
      const status = m ? 206 : 200;
      log.push({ path, range, status });
      const headers = {
        etag,
        "content-length": String(part.length),
        "accept-ranges": "bytes",
      };
      if (path.endsWith(".gguf") && cutNext) {
        // The first download of a GGUF breaks off after a third of its bytes.
        cutNext = false;
        const body = new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(part.slice(0, Math.floor(part.length / 3)));
            setTimeout(() => c.error(new Error("cut")), 50);
          },
        });
        return new Response(body, { status, headers });
      }
      return new Response(part.slice(), { status, headers });
    },
  );
  const addr = server.addr as Deno.NetAddr;
  return {
    url: `http://127.0.0.1:${addr.port}`,
    log,
    close: () => server.shutdown(),
  };
}

conformanceTest(
  "serve: ollama pull of a GGUF URL (resumed after a cut, SHA-256 checked) and of a Hugging Face-style folder",
  async () => {
    const files = await Deno.makeTempDir({ prefix: "modelhost-files-" });
    const fs = fileServer(files);
    try {
      const gguf = await Deno.readFile(fixture("gguf/stories260K.gguf"));
      await Deno.writeFile(join(files, "stories260K.gguf"), gguf);
      await Deno.writeTextFile(join(files, "bad.gguf"), "not a model");
      // The same model as a Hugging Face folder (config, safetensors, tokenizer).
      const hf = await ggufToHf(await readGguf(memorySource(gguf)));
      await Deno.mkdir(join(files, "org/tiny/resolve/main"), {
        recursive: true,
      });
      const hfDir = join(files, "org/tiny/resolve/main");
      await writeModel(
        defaultRegistry().format("safetensors"),
        hf.model,
        join(hfDir, "model.safetensors"),
      );
      await Deno.writeTextFile(
        join(hfDir, "config.json"),
        JSON.stringify(hf.config),
      );
      await Deno.writeTextFile(
        join(hfDir, "tokenizer.json"),
        JSON.stringify(hf.tokenizer),
      );

      await withServer({}, async ({ url, dir }) => {
        const ollama = new Ollama({ host: url });
        const source = `${fs.url}/stories260K.gguf`;
        // First try: the connection is cut; the error comes as a line and
        // the partial download stays for the next pull.
        const cut = await call(`${url}/api/pull`, { json: { model: source } });
        assertEquals(cut.status, 200);
        assertMatch(String(cut.body.text), /"error"/);
        const partial = (await listing(dir)).filter((l) =>
          l.startsWith(".pull-")
        );
        assertEquals(partial.length, 1);
        const have = Number(partial[0].split(" ")[1]);
        assert(have > 0 && have < gguf.length, partial[0]);

        const statuses: string[] = [];
        let completed = 0;
        for await (
          const p of await ollama.pull({ model: source, stream: true })
        ) {
          statuses.push(p.status);
          if (p.completed) completed = p.completed;
        }
        assertEquals(statuses[0], "pulling manifest");
        assertEquals(statuses[statuses.length - 1], "success");
        assert(statuses.includes("verifying sha256 digest"));
        assertEquals(completed, gguf.length);
        assertEquals(fs.log[fs.log.length - 1].range, `bytes=${have}-`);
        assertEquals(fs.log[fs.log.length - 1].status, 206);
        assertEquals(await listing(dir), [`stories260K@1.gguf ${gguf.length}`]);
        assertEquals(
          await Deno.readFile(join(dir, "stories260K@1.gguf")),
          gguf,
        );
        const g = await ollama.generate({
          model: "stories260K",
          prompt: "Once upon a time",
          options: { ...GREEDY, num_predict: 8 },
        });
        assertEquals(g.eval_count, 8);

        // Not a model: refused, and nothing stays behind.
        const bad = await call(`${url}/api/pull`, {
          json: { model: `${fs.url}/bad.gguf`, stream: false },
        });
        assertEquals(bad.status, 400, JSON.stringify(bad.body));
        const missing = await call(`${url}/api/pull`, {
          json: { model: `${fs.url}/none.gguf`, stream: false },
        });
        assertEquals(missing.status, 404);
        const library = await call(`${url}/api/pull`, {
          json: { model: "llama3" },
        });
        assertEquals(library.status, 400);
        assertEquals(await listing(dir), [`stories260K@1.gguf ${gguf.length}`]);

        // A Hugging Face-style folder: config, weights, tokenizer; optional
        // files it lacks are skipped.
        const r = await ollama.pull({
          model: `${fs.url}/org/tiny/resolve/main/`,
        });
        assertEquals(r.status, "success");
        const tags = (await ollama.list()).models.map((m) => m.name).sort();
        assertEquals(tags, ["stories260K:latest", "tiny:latest"]);
        assertEquals(
          (await listing(dir)).filter((l) => l.startsWith("tiny/")).map((l) =>
            l.split(" ")[0]
          ),
          [
            "tiny/",
            "tiny/1/",
            "tiny/1/config.json",
            "tiny/1/model.safetensors",
            "tiny/1/tokenizer.json",
          ],
        );
        const a = await ollama.generate({
          model: "tiny",
          prompt: "Once upon a time",
          options: { ...GREEDY, num_predict: 16 },
        });
        const b = await ollama.generate({
          model: "stories260K",
          prompt: "Once upon a time",
          options: { ...GREEDY, num_predict: 16 },
        });
        assertEquals(a.response, b.response);
      });
    } finally {
      await fs.close();
      await Deno.remove(files, { recursive: true });
    }
  },
);
