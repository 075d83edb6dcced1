// The package as others use it: imported by URL from a project of its own
// (with a third-party plugin that names the package by its bare name),
// the README's `deno task demo` from a fresh clone, and the example
// plugins' own `deno publish --dry-run`.

import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { join, toFileUrl } from "@std/path";
import { REPO_ROOT } from "./_helpers/fixtures.ts";

const dec = new TextDecoder();

async function run(
  args: string[],
  cwd: string,
): Promise<{ code: number; out: string; err: string }> {
  const res = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: res.code,
    out: dec.decode(res.stdout),
    err: dec.decode(res.stderr),
  };
}

const url = (path: string) => toFileUrl(join(REPO_ROOT, path)).href;

const MAIN = `
import {
  buildNetwork,
  createRegistry,
  defaultRegistry,
  floatTensor,
  initNetwork,
  memorySource,
  memoryTensorIndex,
  tensorFromF32,
  toFloat32,
} from "@modelhost/modelhost";
import { collectBytes } from "@modelhost/modelhost/testing";
import npyPlugins from "npy-plugin";

const reg = defaultRegistry().use(npyPlugins);
const w = tensorFromF32("w", Float32Array.from([1.5, -2, 0.25]), [3]);
const file = { models: [{ id: "m", metadata: {}, tensors: memoryTensorIndex([w]) }] };
const out: Record<string, unknown> = {};
for (const name of ["safetensors", "npz"]) {
  const f = reg.format(name);
  const bytes = await collectBytes(f.write!(file));
  const back = await f.read!(memorySource(bytes, "m" + f.extensions[0]));
  out[name] = Array.from(toFloat32(await back.models[0].tensors.load("w")));
}
const cfg = { input_size: 2, layers: [{ type: "dense", output_size: 3, bias: false }] };
const empty = createRegistry();
const net = buildNetwork(reg, cfg, initNetwork(reg, cfg, 1));
out.shape = net.forward(floatTensor(new Float32Array(4), [2, 2])).shape;
out.formats = reg.formats().map((f) => f.name).filter((n) =>
  ["safetensors", "npy", "npz"].includes(n)
);
out.empty = empty.formats().length;
console.log(JSON.stringify(out));
`;

Deno.test("package: a project of its own imports mod.ts by URL, with a third-party plugin", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelhost-user-" });
  try {
    const rootConfig = JSON.parse(
      await Deno.readTextFile(join(REPO_ROOT, "deno.json")),
    );
    await Deno.writeTextFile(
      join(dir, "deno.json"),
      JSON.stringify({
        imports: {
          "@modelhost/modelhost": url("mod.ts"),
          "@modelhost/modelhost/testing": url("testing/mod.ts"),
          // What JSR resolves for the package's own dependencies.
          "@std/assert": rootConfig.imports["@std/assert"],
          "npy-plugin": url("examples/plugins/npy/mod.ts"),
        },
      }),
    );
    await Deno.writeTextFile(join(dir, "main.ts"), MAIN);
    const check = await run(["check", "main.ts"], dir);
    assertEquals(check.code, 0, check.err);
    const res = await run(["run", "-A", "main.ts"], dir);
    assertEquals(res.code, 0, res.err);
    assertEquals(JSON.parse(res.out), {
      safetensors: [1.5, -2, 0.25],
      npz: [1.5, -2, 0.25],
      shape: [2, 3],
      formats: ["safetensors", "npy", "npz"],
      empty: 0,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

async function isGitCheckout(): Promise<boolean> {
  try {
    const res = await new Deno.Command("git", {
      args: ["rev-parse", "--is-inside-work-tree"],
      cwd: REPO_ROOT,
      stdout: "null",
      stderr: "null",
    }).output();
    return res.code === 0;
  } catch {
    return false;
  }
}

Deno.test({
  name: "package: `deno task demo` runs in a fresh clone",
  ignore: !(await isGitCheckout()),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "modelhost-clone-" });
    try {
      const clone = await new Deno.Command("git", {
        args: [
          "clone",
          "--quiet",
          "--depth",
          "1",
          toFileUrl(REPO_ROOT).href,
          "repo",
        ],
        cwd: dir,
        stdout: "piped",
        stderr: "piped",
      }).output();
      assertEquals(clone.code, 0, dec.decode(clone.stderr));
      const res = await run(["task", "demo"], join(dir, "repo"));
      assertEquals(res.code, 0, res.err);
      // A table: a header naming the cosine column, then one row per dtype.
      const rows = res.out.split("\n").filter((l) => /^\|?\s*[A-Z]/.test(l));
      assert(/cosine/.test(res.out), res.out);
      for (const d of ["F16", "BF16", "F32"]) {
        assert(
          rows.some((l) => new RegExp(`^\\|?\\s*${d}\\s`).test(l)),
          `no ${d} row in:\n${res.out}`,
        );
      }
      // Then the network saved in every format and reopened gives the same
      // outputs (Δ exactly 0), and the Q8_0 copy stays close.
      for (const f of ["net.bundle.json", "net.safetensors", "net.gguf"]) {
        assert(
          new RegExp(`${f.replace(/\./g, "\\.")}\\s.*\\s0\\.00e\\+0$`, "m")
            .test(res.out),
          `${f} in:\n${res.out}`,
        );
      }
      const q8 = res.out.match(/net-q8_0\.gguf\s.*\s(\S+)$/m);
      assert(q8 && Number(q8[1]) < 1e-2, `Q8_0 row in:\n${res.out}`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("package: the example plugins pass their own `deno publish --dry-run`", async () => {
  const results = await Promise.all(
    ["npy", "conv1d"].map((p) =>
      run(
        ["publish", "--dry-run", "--allow-dirty"],
        join(REPO_ROOT, "examples/plugins", p),
      )
    ),
  );
  for (const [i, r] of results.entries()) {
    assertEquals(r.code, 0, r.err);
    assertStringIncludes(r.err + r.out, "Success");
    const name = ["@example/modelhost-npy", "@example/modelhost-conv1d"][i];
    assertStringIncludes(r.err + r.out, name);
    // Tests and fixtures stay out of the published package.
    assert(!(r.err + r.out).includes("testdata"), r.err);
  }
});
