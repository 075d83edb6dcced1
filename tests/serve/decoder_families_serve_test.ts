// The families beyond Llama served from both sources: for each family's
// first tiny checkpoint (tests/vectors/families, written by transformers),
// the Hugging Face folder and our GGUF export of it sit in the served
// folder; Ollama's /api/generate with a text prompt, greedy, returns in
// `context` the prompt's ids and the 8 tokens transformers generates from
// the same text (tests/vectors/gen/decoder_families.py; repeat_penalty 1, as
// Ollama's default 1.1 would change them), and /api/tags names
// the family. The CLI's `generate` runs the same way on both sources.

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { convertHfToGguf } from "../../io/transformer.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import { call, withServer } from "./_helpers.ts";

interface Case {
  name: string;
  model_type: string;
  folder: string;
  text: string;
  text_ids: number[];
  text_greedy: number[];
}

const all = (JSON.parse(
  await Deno.readTextFile(
    join(REPO_ROOT, "tests/vectors/decoder_families.json"),
  ),
) as { cases: Case[] }).cases;
const firsts = all.filter((c, i) =>
  all.findIndex((d) => d.model_type === c.model_type) === i
);

async function copyDir(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isFile) await Deno.copyFile(join(from, e.name), join(to, e.name));
  }
}

Deno.test("serve: every family from its HF folder and from our GGUF generates transformers' greedy tokens", async () => {
  await withServer(
    {},
    async ({ url }) => {
      const tags = await call(`${url}/api/tags`);
      const models = tags.body.models as {
        name: string;
        details: { family: string };
      }[];
      for (const c of firsts) {
        for (const source of ["hf", "gguf"]) {
          const name = `${c.model_type.replace("_", "-")}-${source}`;
          const tag = models.find((m) => m.name === `${name}:latest`);
          assert(tag, `${name} is not listed`);
          if (source === "hf") {
            // a multimodal gemma3 checkpoint runs (and is listed) as its language model
            assertEquals(
              tag!.details.family,
              c.model_type === "gemma3" ? "gemma3_text" : c.model_type,
            );
          }
          const r = await call(`${url}/api/generate`, {
            json: {
              model: name,
              prompt: c.text,
              stream: false,
              options: { temperature: 0, repeat_penalty: 1, num_predict: 8 },
            },
          });
          assertEquals(r.status, 200, `${name}: ${JSON.stringify(r.body)}`);
          assertEquals(
            r.body.context,
            [...c.text_ids, ...c.text_greedy],
            `${name} (${c.name})`,
          );
        }
      }
    },
    async (dir) => {
      for (const c of firsts) {
        const name = c.model_type.replace("_", "-");
        await copyDir(join(REPO_ROOT, c.folder), join(dir, `${name}-hf`));
        await convertHfToGguf(
          join(REPO_ROOT, c.folder),
          join(dir, `${name}-gguf.gguf`),
          { name: "tiny" },
        );
      }
    },
  );
});

Deno.test("cli generate: every family from its HF folder and from our GGUF", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelhost-families-" });
  try {
    for (const c of firsts) {
      const gguf = join(dir, `${c.name}.gguf`);
      await convertHfToGguf(join(REPO_ROOT, c.folder), gguf, { name: "tiny" });
      const outs: string[] = [];
      for (const src of [join(REPO_ROOT, c.folder), gguf]) {
        const p = await new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "-A",
            join(REPO_ROOT, "cli.ts"),
            "generate",
            src,
            "-p",
            c.text,
            "-n",
            "8",
            "--greedy",
          ],
          stdout: "piped",
          stderr: "piped",
        }).output();
        assertEquals(
          p.code,
          0,
          `${c.name}: ${new TextDecoder().decode(p.stderr)}`,
        );
        outs.push(new TextDecoder().decode(p.stdout));
      }
      assertEquals(outs[0], outs[1], `${c.name}: HF and GGUF texts`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
