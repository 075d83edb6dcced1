// `modelhost quantize` (cli/quantize.ts) against llama.cpp's
// llama-quantize: the same bytes, and each tensor's reported error
// recomputed from llama.cpp's file.

import { assert, assertAlmostEquals, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { encodeHex } from "@std/encoding";
import { defaultRegistry, toFloat32 } from "../../mod.ts";
import { openModel } from "../../io/open.ts";
import { fixture, FIXTURES, REPO_ROOT } from "../_helpers/fixtures.ts";
import { runCli } from "./_cli.ts";

const run = runCli;

Deno.test({
  name:
    "conformance: cli quantize gives llama-quantize's bytes and reports per-tensor error",
  ignore: !FIXTURES,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const out = join(dir, "q8.gguf");
      const r = await run([
        "quantize",
        fixture("reference/quant/synthetic-llama-f32.gguf"),
        out,
        "q8_0",
        "--json",
      ]);
      assertEquals(r.code, 0, r.err);
      const rep = JSON.parse(r.out);
      assertEquals(rep.type, "Q8_0");
      const reg = defaultRegistry();
      const ours = await openModel(reg, out),
        ref = await openModel(
          reg,
          fixture("reference/quant/synthetic-llama-Q8_0.gguf"),
        );
      try {
        const mo = ours.file.models[0].tensors, mr = ref.file.models[0].tensors;
        assertEquals(mo.names().sort(), mr.names().sort());
        for (const n of mr.names()) {
          assertEquals(mo.info(n).dtype, mr.info(n).dtype, n);
          assertEquals((await mo.load(n)).bytes, (await mr.load(n)).bytes, n);
        }
        // the report's error of each tensor, recomputed here from llama.cpp's file
        for (const row of rep.tensors) {
          const src = toFloat32(
            await (await openModel(
              reg,
              fixture("reference/quant/synthetic-llama-f32.gguf"),
            )).file.models[0].tensors.load(row.name),
          );
          const q = toFloat32(await mr.load(row.name));
          let se = 0;
          for (let i = 0; i < src.length; i++) se += (src[i] - q[i]) ** 2;
          assertAlmostEquals(row.rmse, Math.sqrt(se / src.length), 1e-7);
          assert(row.cosine > 0.9999, `${row.name} cosine ${row.cosine}`);
        }
      } finally {
        ours.close();
        ref.close();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** llama-quantize's sha256 of a preset case in tests/vectors/gguf_presets.json. */
async function presetRef(model: string, id: string): Promise<{
  sha256: string;
  tensors: [string, string][];
}> {
  const ref = JSON.parse(
    await Deno.readTextFile(
      join(REPO_ROOT, "tests/vectors/gguf_presets.json"),
    ),
  );
  return ref.cases.find((c: { model: string; id: string }) =>
    c.model === model && c.id === id
  );
}

async function sha256(path: string): Promise<string> {
  return encodeHex(
    await crypto.subtle.digest("SHA-256", await Deno.readFile(path)),
  );
}

Deno.test({
  name:
    "conformance: cli quantize q4_k_m and convert --quantize give llama-quantize's file and warn about the fallbacks",
  ignore: !FIXTURES,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const src = fixture("gguf/stories260K.gguf");
      const ref = await presetRef("stories260K", "Q4_K_M");
      const out = join(dir, "q.gguf");
      const r = await run(["quantize", src, out, "q4_k_m", "--json"]);
      assertEquals(r.code, 0, r.err);
      assertEquals(await sha256(out), ref.sha256);
      // stories260K's rows of 64 and 172 fit no 256-block: said on stderr
      assert(
        r.err.includes(
          "rows of 172 do not divide the Q4_K block size 256; F16 instead",
        ),
        r.err,
      );
      assert(r.err.includes("no tensor was written as Q4_K"), r.err);
      const rep = JSON.parse(r.out);
      assertEquals(rep.type, "Q4_K_M");
      assertEquals(
        rep.plan.map((p: { name: string; to: string }) => [p.name, p.to]),
        ref.tensors,
      );
      const conv = join(dir, "c.gguf");
      const c = await run(["convert", src, "-o", conv, "--quantize", "q4_k"]);
      assertEquals(c.code, 0, c.err);
      assertEquals(await sha256(conv), ref.sha256, "q4_k is llama's Q4_K_M");
      const pure = await presetRef("stories260K", "Q4_K-pure");
      const p = join(dir, "p.gguf");
      const pr = await run(["quantize", src, p, "q4_k", "--pure"]);
      assertEquals(pr.code, 0, pr.err);
      assertEquals(await sha256(p), pure.sha256);
      const bad = await run(["quantize", src, join(dir, "x.gguf"), "q4_km"]);
      assertEquals(bad.code, 2);
      assert(bad.err.includes("did you mean Q4_K_M"), bad.err);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "conformance: cli quantize and convert read - from stdin and write - to stdout",
  ignore: !FIXTURES,
  async fn() {
    const ref = await presetRef("stories260K", "Q8_0");
    for (
      const args of [
        ["quantize", "-", "-", "q8_0"],
        ["convert", "-", "--to", "gguf", "-o", "-", "--quantize", "q8_0"],
      ]
    ) {
      const cmd = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", join(REPO_ROOT, "cli.ts"), ...args],
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      });
      const child = cmd.spawn();
      const input = await Deno.open(fixture("gguf/stories260K.gguf"));
      await input.readable.pipeTo(child.stdin);
      const out = await child.output();
      assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
      assertEquals(
        encodeHex(await crypto.subtle.digest("SHA-256", out.stdout)),
        ref.sha256,
        args.join(" "),
      );
    }
  },
});
