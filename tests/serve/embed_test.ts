// Encoder models behind the server's embedding routes: /v1/embeddings
// through the npm `openai` client and Ollama's /api/embed answer
// sentence-transformers' vectors (tests/vectors/encoders/, from
// tests/vectors/gen/encoders.py), from a Hugging Face folder and from our GGUF.

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import OpenAI from "openai";
import { convertEncoderToGguf } from "../../io/encoder.ts";
import { writeModel } from "../../io/open.ts";
import { openSafetensors } from "../../io/safetensors.ts";
import { memoryTensorIndex } from "../../core/model.ts";
import { safetensorsFormat } from "../../formats/safetensors/mod.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import { call, withServer } from "./_helpers.ts";
import { countingBackend } from "../_helpers/counting_blas.ts";
import { openSystemBlas } from "../../io/blas.ts";
import {
  currentF32GemmBackend,
  type F32GemmBackend,
  setF32GemmBackend,
} from "../../kernels/fast/backend.ts";

const DIR = join(REPO_ROOT, "tests/vectors/encoders");

interface Expected {
  texts: string[];
  embeddings: number[][];
}

async function expected(name: string): Promise<Expected> {
  return JSON.parse(await Deno.readTextFile(join(DIR, name, "expected.json")));
}

function close(a: number[], b: number[]): void {
  assertEquals(a.length, b.length);
  for (let i = 0; i < a.length; i++) {
    assert(Math.abs(a[i] - b[i]) <= 1e-4, `value ${i}: ${a[i]} vs ${b[i]}`);
  }
}

async function copyDir(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isDirectory) await copyDir(join(from, e.name), join(to, e.name));
    else if (e.name !== "expected.json") {
      await Deno.copyFile(join(from, e.name), join(to, e.name));
    }
  }
}

Deno.test("serve: encoders answer /v1/embeddings (openai client) and /api/embed with sentence-transformers' vectors", async () => {
  const bert = await expected("bert-mean");
  const rob = await expected("roberta-mean");
  await withServer({}, async ({ url }) => {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused" });
    const e = await client.embeddings.create({
      model: "minilm",
      input: bert.texts,
    });
    assertEquals(e.data.map((d) => d.index), bert.texts.map((_, i) => i));
    for (const [i, d] of e.data.entries()) {
      close(d.embedding, bert.embeddings[i]);
    }
    assert(e.usage.prompt_tokens > bert.texts.length);
    const f = await client.embeddings.create({
      model: "minilm",
      input: bert.texts[1],
      encoding_format: "float",
    });
    close(f.data[0].embedding, bert.embeddings[1]);

    const r = await call(`${url}/api/embed`, {
      json: { model: "rob", input: rob.texts },
    });
    assertEquals(r.status, 200, JSON.stringify(r.body));
    const got = r.body.embeddings as number[][];
    assertEquals(got.length, rob.texts.length);
    for (const [i, v] of got.entries()) close(v, rob.embeddings[i]);
    const g = await client.embeddings.create({
      model: "rob",
      input: rob.texts[2],
    });
    close(g.data[0].embedding, rob.embeddings[2]);

    // a decoder embedding model (sentence-transformers' last-token pooling)
    const qwen = await expected("qwen2-last");
    const q = await client.embeddings.create({
      model: "qwen",
      // the server applies no prompt of its own: send it with the text
      input: qwen.texts.slice(1, 3).map((t) =>
        "Instruct: find the passage\nQuery: " + t
      ),
    });
    for (const [i, d] of q.data.entries()) {
      close(d.embedding, qwen.embeddings[i + 1]);
    }

    // the registry lists encoders as such
    const list = await call(`${url}/registry/models`);
    const kinds = Object.fromEntries(
      (list.body.models as { name: string; versions: { kind: string }[] }[])
        .map((m) => [m.name, m.versions[0].kind]),
    );
    assertEquals(kinds, { minilm: "encoder", qwen: "llm", rob: "encoder" });

    // an encoder generates nothing
    const gen = await call(`${url}/api/generate`, {
      json: { model: "minilm", prompt: "x", stream: false },
    });
    assertEquals(gen.status, 400);
  }, async (dir) => {
    await copyDir(join(DIR, "bert-mean"), join(dir, "minilm"));
    // the decoder as a …ForCausalLM checkpoint stores it (`model.` names)
    await copyDir(join(DIR, "qwen2-last"), join(dir, "qwen"));
    const st = await openSafetensors(join(DIR, "qwen2-last"));
    try {
      const index = st.models[0].tensors;
      const renamed = [];
      for (const n of index.names()) {
        renamed.push({ ...(await index.load(n)), name: `model.${n}` });
      }
      await writeModel(safetensorsFormat(), {
        models: [{
          id: "qwen",
          metadata: {},
          tensors: memoryTensorIndex(renamed),
        }],
      }, join(dir, "qwen", "model.safetensors"));
    } finally {
      st.close();
    }
    await convertEncoderToGguf(
      join(DIR, "roberta-mean"),
      join(dir, "rob.gguf"),
    );
  });
});

Deno.test("serve: with blas, /api/embed and /v1/embeddings run on the system OpenBLAS and still answer sentence-transformers' vectors", async () => {
  const probe = openSystemBlas();
  probe.close();
  if (!probe.backend) {
    console.log(`skipped: ${probe.note}`);
    return;
  }
  const bert = await expected("bert-mean");
  const rob = await expected("roberta-mean");
  await withServer({ blas: true, threads: 2 }, async ({ url, logs }) => {
    const installed = currentF32GemmBackend();
    if (!installed?.sgemm) throw new Error("the server installed no BLAS");
    const real: F32GemmBackend = installed;
    assert(logs.some((l) => l.msg === "listening" && l.f32 === real.name));
    // these tiny models' products are under the backend's size thresholds:
    // count every product on the library, thresholds off
    const { backend: counting, counts } = countingBackend(real);
    setF32GemmBackend(counting);
    try {
      const r = await call(`${url}/api/embed`, {
        json: { model: "minilm", input: bert.texts },
      });
      assertEquals(r.status, 200, JSON.stringify(r.body));
      for (const [i, v] of (r.body.embeddings as number[][]).entries()) {
        close(v, bert.embeddings[i]);
      }
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused" });
      const e = await client.embeddings.create({
        model: "rob",
        input: rob.texts,
      });
      for (const [i, d] of e.data.entries()) {
        close(d.embedding, rob.embeddings[i]);
      }
      // BERT-style stacks run every product through sgemm (the per-head
      // ones as sgemmMany lists), in kernel memory
      const { sgemms, lists } = counts;
      assert(sgemms > 0 && lists > 0, `sgemm ${sgemms}, lists ${lists}`);
    } finally {
      setF32GemmBackend(real);
    }
  }, async (dir) => {
    await copyDir(join(DIR, "bert-mean"), join(dir, "minilm"));
    await copyDir(join(DIR, "roberta-mean"), join(dir, "rob"));
  });
  // closing the server removed the backend
  assertEquals(currentF32GemmBackend(), null);
});
