// `modelhost embed` and `modelhost rerank` (cli/embed.ts): the vectors and
// scores are sentence-transformers' and transformers' (tests/vectors/encoders/,
// from tests/vectors/gen/encoders.py).

import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { join } from "@std/path";
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import { runCli } from "./_cli.ts";

const DIR = join(REPO_ROOT, "tests/vectors/encoders");

function close(a: number[], b: number[], tol: number): void {
  assertEquals(a.length, b.length);
  for (let i = 0; i < a.length; i++) {
    assert(Math.abs(a[i] - b[i]) <= tol, `value ${i}: ${a[i]} vs ${b[i]}`);
  }
}

Deno.test("cli embed: --input TEXT and FILE print sentence-transformers' vectors, one JSON line each", async () => {
  const exp = JSON.parse(
    await Deno.readTextFile(join(DIR, "bert-mean/expected.json")),
  );
  const tmp = await Deno.makeTempDir();
  try {
    const file = join(tmp, "texts.txt");
    await Deno.writeTextFile(file, exp.texts.slice(1).join("\n") + "\n");
    const r = await runCli([
      "embed",
      join(DIR, "bert-mean"),
      "--input",
      exp.texts[0],
      "--input",
      file,
    ]);
    assertEquals(r.code, 0, r.err);
    const lines = r.out.split("\n").map((l) => JSON.parse(l));
    assertEquals(lines.length, exp.texts.length);
    for (const [i, l] of lines.entries()) {
      assertEquals(l.index, i);
      close(l.embedding, exp.embeddings[i], 1e-4);
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("cli embed: --prompt-name and stdin (child process)", async () => {
  const exp = JSON.parse(
    await Deno.readTextFile(join(DIR, "bert-cls/expected.json")),
  );
  const p = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      join(REPO_ROOT, "cli.ts"),
      "embed",
      join(DIR, "bert-cls"),
      "--prompt-name",
      exp.prompt_name,
      "--input",
      "-",
    ],
    cwd: REPO_ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = p.stdin.getWriter();
  await w.write(new TextEncoder().encode(exp.texts.join("\n")));
  await w.close();
  const o = await p.output();
  assertEquals(o.code, 0, new TextDecoder().decode(o.stderr));
  const lines = new TextDecoder().decode(o.stdout).trim().split("\n");
  assertEquals(lines.length, exp.texts.length);
  for (const [i, l] of lines.entries()) {
    close(JSON.parse(l).embedding, exp.embeddings[i], 1e-4);
  }
});

Deno.test("cli rerank: scores equal transformers' cross-encoder logits", async () => {
  const exp = JSON.parse(
    await Deno.readTextFile(join(DIR, "bert-reranker/expected.json")),
  );
  const [q] = exp.pairs[0];
  const idx = exp.pairs.map((p: string[], i: number) => p[0] === q ? i : -1)
    .filter((i: number) => i >= 0);
  const r = await runCli([
    "rerank",
    join(DIR, "bert-reranker"),
    "--query",
    q,
    ...idx.flatMap((i: number) => ["--input", exp.pairs[i][1]]),
  ]);
  assertEquals(r.code, 0, r.err);
  const lines = r.out.split("\n").map((l) => JSON.parse(l));
  assertEquals(lines.length, idx.length);
  for (const [k, l] of lines.entries()) {
    assert(Math.abs(l.score - exp.scores[idx[k]]) <= 1e-4);
  }
});

Deno.test("cli embed: usage errors", async () => {
  const r = await runCli(["embed", join(DIR, "bert-mean")]);
  assertEquals(r.code, 2);
  assertStringIncludes(r.err, "--input");
  const q = await runCli(["rerank", join(DIR, "bert-reranker"), "-i", "x"]);
  assertEquals(q.code, 2);
  assertStringIncludes(q.err, "--query");
});

Deno.test("cli embed: a decoder embedding model pools its last token as sentence-transformers says", async () => {
  const exp = JSON.parse(
    await Deno.readTextFile(join(DIR, "qwen2-last/expected.json")),
  );
  const r = await runCli([
    "embed",
    join(DIR, "qwen2-last"),
    "--prompt-name",
    exp.prompt_name,
    ...exp.texts.flatMap((t: string) => ["--input", t]),
  ]);
  assertEquals(r.code, 0, r.err);
  const lines = r.out.split("\n").map((l) => JSON.parse(l));
  for (const [i, l] of lines.entries()) {
    close(l.embedding, exp.embeddings[i], 1e-4);
  }
});

Deno.test("cli embed: --threads 2 with and without --no-blas give the references' values", async () => {
  const exp = JSON.parse(
    await Deno.readTextFile(join(DIR, "roberta-mean/expected.json")),
  );
  for (const extra of [[], ["--no-blas"]]) {
    const args = exp.texts.flatMap((t: string) => ["--input", t]);
    const r = await runCli([
      "embed",
      join(DIR, "roberta-mean"),
      ...args,
      "--threads",
      "2",
      ...extra,
    ]);
    assertEquals(r.code, 0, r.err);
    const lines = r.out.split("\n").map((l) => JSON.parse(l));
    assertEquals(lines.length, exp.texts.length);
    for (const [i, l] of lines.entries()) {
      close(l.embedding, exp.embeddings[i], 1e-4);
    }
  }
  const bad = await runCli([
    "embed",
    join(DIR, "roberta-mean"),
    "--input",
    "x",
    "--threads",
    "0",
  ]);
  assert(bad.code !== 0);
  assertStringIncludes(bad.err, "--threads expects a positive integer");
});
