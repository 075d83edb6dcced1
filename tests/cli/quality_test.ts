// `modelhost perplexity` and `modelhost imatrix` (cli/perplexity.ts,
// cli/imatrix.ts) against llama.cpp's numbers: llama-perplexity's
// (tests/vectors/perplexity/llama_perplexity.json) and llama-imatrix's
// (tests/vectors/imatrix/); tolerances as in tests/models/perplexity_test.ts
// and tests/formats/gguf_imatrix_test.ts.

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { readImatrix } from "../../models/imatrix.ts";
import { fixture, FIXTURES, REPO_ROOT } from "../_helpers/fixtures.ts";
import { syntheticLlama } from "../vectors/gen/synthetic_llama.ts";
import { runCli } from "./_cli.ts";

const TEXT = join(REPO_ROOT, "tests/vectors/perplexity/stories.txt");

Deno.test({
  name:
    "conformance: cli perplexity and --kl-divergence-base / --kl-divergence give llama-perplexity's numbers",
  ignore: !FIXTURES,
  async fn() {
    const ref = JSON.parse(
      await Deno.readTextFile(
        join(REPO_ROOT, "tests/vectors/perplexity/llama_perplexity.json"),
      ),
    );
    const dir = await Deno.makeTempDir();
    try {
      const base = join(dir, "base.kld");
      const r = await runCli([
        "perplexity",
        "-m",
        fixture("gguf/stories260K.gguf"),
        "-f",
        TEXT,
        "-c",
        "128",
        "--chunks",
        "20",
        "--kl-divergence-base",
        base,
        "--json",
      ]);
      assertEquals(r.code, 0, r.err);
      const out = JSON.parse(r.out);
      const want = Math.exp(ref.perplexity.stories260K.mean_nll);
      assert(Math.abs(out.ppl / want - 1) < 1e-3, `${out.ppl} vs ${want}`);
      const k = await runCli([
        "perplexity",
        fixture("reference/llama-logits/stories260K-Q4_0.gguf"),
        "--kl-divergence",
        base,
        "--json",
      ]);
      assertEquals(k.code, 0, k.err);
      const kl = JSON.parse(k.out);
      const kref = ref.kl_divergence["stories260K-Q4_0"];
      assert(
        Math.abs(kl.kld / kref.kld - 1) < 5e-3,
        `${kl.kld} vs ${kref.kld}`,
      );
      assert(
        Math.abs(kl.ppl / kref.ppl - 1) < 1e-3,
        `${kl.ppl} vs ${kref.ppl}`,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("cli imatrix writes llama.cpp's formats with llama-imatrix's entries and counts", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const model = join(dir, "syn-mha.gguf");
    await Deno.writeFile(model, await syntheticLlama("mha"));
    const ref = await readImatrix(
      await Deno.readFile(
        join(REPO_ROOT, "tests/vectors/imatrix/syn-mha.imatrix.gguf"),
      ),
      "ref",
    );
    for (const out of ["im.gguf", "im.dat"]) {
      const r = await runCli([
        "imatrix",
        model,
        "-f",
        TEXT,
        "-c",
        "128",
        "--chunks",
        "8",
        "-o",
        join(dir, out),
      ]);
      assertEquals(r.code, 0, r.err);
      const im = await readImatrix(await Deno.readFile(join(dir, out)), out);
      assertEquals(
        [...im.entries.keys()].sort(),
        [...ref.entries.keys()].sort(),
      );
      assertEquals(im.chunkCount, ref.chunkCount);
      if (out.endsWith(".gguf")) {
        for (const [n, e] of ref.entries) {
          assertEquals(im.entries.get(n)!.counts, e.counts, n);
        }
      } else assert(im.legacy);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
