import {
  assert,
  assertEquals,
  assertMatch,
  assertStringIncludes,
} from "@std/assert";
import { join } from "@std/path";
import { runCli } from "./_cli.ts";
import { memoryTensorIndex, tensorFromF32, toFloat32 } from "../../mod.ts";
import tiny from "./_tiny_format.ts";
import denoJson from "../../deno.json" with { type: "json" };
import { REPO_ROOT } from "../_helpers/fixtures.ts";

const PLUGIN = join(REPO_ROOT, "tests/cli/_tiny_format.ts");

const run = runCli;

async function makeTiny(
  dir: string,
): Promise<{ path: string; w: Float32Array }> {
  const w = Float32Array.from({ length: 12 }, (_, i) => 0.1 + 2 * Math.cos(i));
  const b = Float32Array.from([0.5, -0.25, 3]);
  const file = {
    models: [{
      id: "m",
      metadata: { author: "test" },
      tensors: memoryTensorIndex([
        tensorFromF32("l.weight", w, [3, 4]),
        tensorFromF32("l.bias", b, [3]),
      ]),
    }],
  };
  const bytes = await (tiny.write!(file) as Promise<Uint8Array>);
  const path = join(dir, "a.tiny");
  await Deno.writeFile(path, bytes);
  return { path, w };
}

Deno.test("cli: version, help and usage errors with exit codes", async () => {
  const v = await run(["--version"]);
  assertEquals([v.code, v.out], [0, `modelhost ${denoJson.version}`]);
  const none = await run([]);
  assertEquals(none.code, 2);
  assertStringIncludes(none.out, "Commands:");
  const typo = await run(["inspekt", "x"]);
  assertEquals(typo.code, 2);
  assertStringIncludes(typo.err, 'did you mean "inspect"');
  const flag = await run(["inspect", "--jsn", "x"]);
  assertEquals(flag.code, 2);
  assertStringIncludes(flag.err, "Unknown flag --jsn; did you mean --json?");
  const missing = await run(["inspect"]);
  assertEquals([missing.code, missing.err.split("\n")[0]], [
    2,
    "error: missing FILE to inspect",
  ]);
});

Deno.test("cli: --plugin registers a third-party format that formats/inspect/convert use", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const f = await run(["formats", "--json", "--plugin", PLUGIN]);
    assertEquals(f.code, 0);
    const row = JSON.parse(f.out).find((r: { name: string }) =>
      r.name === "tiny"
    );
    assertEquals(row, {
      name: "tiny",
      extensions: [".tiny"],
      read: true,
      write: true,
      detect: true,
      options: ["storeDtype"],
      description: "test format",
    });

    const { path, w } = await makeTiny(dir);
    const ins = await run(["inspect", path, "--json", "--plugin", PLUGIN]);
    assertEquals(ins.code, 0, ins.err);
    const rep = JSON.parse(ins.out);
    assertEquals(rep.format, "tiny");
    assertEquals(rep.size, (await Deno.stat(path)).size);
    const m = rep.models[0];
    assertEquals([m.id, m.tensorCount, m.params, m.bytes], ["m", 2, 15, 60]);
    assertEquals(m.metadata, { author: "test" });
    assertEquals(
      m.tensors.map((
        t: { name: string; shape: number[]; bytes: number },
      ) => [t.name, t.shape, t.bytes]),
      [
        ["l.weight", [3, 4], 48],
        ["l.bias", [3], 12],
      ],
    );
    assertEquals(m.totals, { F32: { tensors: 2, params: 15, bytes: 60 } });

    const filtered = JSON.parse(
      (await run([
        "inspect",
        path,
        "--json",
        "--tensors",
        "*.bias",
        "--plugin",
        PLUGIN,
      ])).out,
    );
    assertEquals(
      filtered.models[0].tensors.map((t: { name: string }) => t.name),
      ["l.bias"],
    );
    const human = await run(["inspect", path, "--plugin", PLUGIN]);
    assertMatch(human.out, /l\.weight\s+F32\s+\[3, 4\]\s+12\s+48/);

    // convert with a plugin option and provenance; values come back within F16's bound
    const out = join(dir, "b.tiny");
    const c = await run([
      "convert",
      path,
      "--to",
      "tiny",
      "-o",
      out,
      "--store-dtype",
      "F16",
      "--provenance",
      "seed=7",
      "--plugin",
      PLUGIN,
    ]);
    assertEquals(c.code, 0, c.err);
    const back = await tiny.read!(
      (await import("../../core/sources.ts")).memorySource(
        await Deno.readFile(out),
      ),
    );
    const t = await back.models[0].tensors.load("l.weight");
    assertEquals(t.dtype, "F16");
    const v = toFloat32(t);
    for (let i = 0; i < w.length; i++) {
      assert(
        Math.abs(v[i] - w[i]) <= Math.abs(w[i]) * 2 ** -11,
        `element ${i}`,
      );
    }
    assertEquals(back.models[0].metadata.provenance, { seed: "7" });

    // no overwrite without --force; the file is untouched
    const before = await Deno.readFile(out);
    const again = await run(["convert", path, "-o", out, "--plugin", PLUGIN]);
    assertEquals(again.code, 1);
    assertStringIncludes(again.err, "exists; pass --force");
    assertEquals(await Deno.readFile(out), before);
    assertEquals(
      (await run(["convert", path, "-o", out, "--force", "--plugin", PLUGIN]))
        .code,
      0,
    );

    // the target's options show up in convert --help
    const help = await run([
      "convert",
      "--to",
      "tiny",
      "--help",
      "--plugin",
      PLUGIN,
    ]);
    assertStringIncludes(help.out, "--store-dtype F32|F16");
    const badChoice = await run([
      "convert",
      path,
      "-o",
      out,
      "--store-dtype",
      "F61",
      "--plugin",
      PLUGIN,
    ]);
    assertEquals(badChoice.code, 2);
    assertStringIncludes(
      badChoice.err,
      '--store-dtype must be one of F32, F16; got "F61" (did you mean F16?)',
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli: validate lists every problem and exits 1; missing files and bad plugins are clear", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { path } = await makeTiny(dir);
    const ok = await run(["validate", path, "--plugin", PLUGIN]);
    assertEquals([ok.code, ok.out], [0, `${path}: valid`]);
    const bytes = await Deno.readFile(path);
    const cut = join(dir, "cut.tiny");
    await Deno.writeFile(cut, bytes.subarray(0, bytes.length - 20));
    const bad = await run([
      "validate",
      cut,
      path,
      "--json",
      "--plugin",
      PLUGIN,
    ]);
    assertEquals(bad.code, 1);
    const res = JSON.parse(bad.out);
    assertEquals(res.map((r: { valid: boolean }) => r.valid), [false, true]);
    assertEquals(
      res[0].problems.length,
      2,
      "both tensors past the cut are reported",
    );
    assertStringIncludes(res[0].problems[0], 'tensor "l.weight"');
    const gone = await run([
      "validate",
      join(dir, "nope.tiny"),
      "--plugin",
      PLUGIN,
    ]);
    assertEquals(gone.code, 1);
    assertStringIncludes(gone.out, "file not found");
    const nf = await run(["inspect", join(dir, "nope.tiny")]);
    assertEquals(nf.code, 1);
    assertStringIncludes(nf.err, "error: file not found:");
    const badPlugin = await run([
      "formats",
      "--plugin",
      join(dir, "missing_plugin.ts"),
    ]);
    assertEquals(badPlugin.code, 1);
    assertStringIncludes(badPlugin.err, "Cannot load plugin");
    const unknownFmt = await run(["inspect", join(dir, "a.tiny")]);
    assertEquals(unknownFmt.code, 1);
    assertStringIncludes(unknownFmt.err, "No format for");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli: runs as a subprocess (exit codes and stdout)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { path } = await makeTiny(dir);
    const cmd = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        join(REPO_ROOT, "cli.ts"),
        "inspect",
        path,
        "--json",
        "--plugin",
        PLUGIN,
      ],
      stdout: "piped",
      stderr: "piped",
    });
    const r = await cmd.output();
    assertEquals(r.code, 0, new TextDecoder().decode(r.stderr));
    assertEquals(
      JSON.parse(new TextDecoder().decode(r.stdout)).models[0].tensorCount,
      2,
    );
    const bad = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", join(REPO_ROOT, "cli.ts"), "convert"],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(bad.code, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli: main help matches its snapshot (UPDATE_SNAPSHOTS=1 rewrites it)", async () => {
  const snap = join(REPO_ROOT, "tests/cli/snapshots/help.txt");
  const help = (await run(["--help"])).out + "\n";
  if (Deno.env.get("UPDATE_SNAPSHOTS") === "1") {
    await Deno.writeTextFile(snap, help);
  }
  assertEquals(help, await Deno.readTextFile(snap));
});

Deno.test("cli: inspect and validate open a sharded SafeTensors folder as one model", async () => {
  const { FIXTURES, fixture } = await import("../_helpers/fixtures.ts");
  if (!FIXTURES) return;
  const dir = fixture("safetensors/julia/sharded");
  const ins = await run(["inspect", dir, "--json"]);
  assertEquals(ins.code, 0, ins.err);
  const rep = JSON.parse(ins.out);
  assertEquals(rep.format, "safetensors");
  const index = JSON.parse(
    await Deno.readTextFile(join(dir, "model.safetensors.index.json")),
  );
  assertEquals(
    rep.models[0].tensors.map((t: { name: string }) => t.name).sort(),
    Object.keys(index.weight_map).sort(),
  );
  const val = await run(["validate", dir]);
  assertEquals([val.code, val.out], [
    0,
    `${join(dir, "model.safetensors.index.json")}: valid`.replace(
      /^.*: valid$/,
      `${dir}: valid`,
    ),
  ]);
});
