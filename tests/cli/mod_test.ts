// The command line's dispatch (cli/mod.ts): version, help and usage errors
// with their exit codes, --plugin loading a third-party format that every
// command then uses, the CLI as a subprocess, and help snapshots.

import {
  assert,
  assertEquals,
  assertMatch,
  assertStringIncludes,
} from "@std/assert";
import { join } from "@std/path";
import { toFloat32 } from "../../mod.ts";
import denoJson from "../../deno.json" with { type: "json" };
import { REPO_ROOT } from "../_helpers/fixtures.ts";
import { makeTiny, PLUGIN, runCli } from "./_cli.ts";
import tiny from "./_tiny_format.ts";

const run = runCli;

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

Deno.test("cli: every command's help matches its snapshot, and `help NAME` says the same", async () => {
  const names = [
    "inspect",
    "validate",
    "convert",
    "quantize",
    "perplexity",
    "imatrix",
    "run",
    "generate",
    "embed",
    "rerank",
    "serve",
    "formats",
    "layers",
  ];
  const listed = (await run(["--help"])).out.split("\n").filter((l) =>
    /^ {2}[a-z]+ {2,}/.test(l)
  ).map((l) => l.trim().split(" ")[0]);
  assertEquals(listed, names);
  for (const name of names) {
    const snap = join(REPO_ROOT, `tests/cli/snapshots/help_${name}.txt`);
    const r = await run([name, "--help"]);
    assertEquals(r.code, 0, name);
    const help = r.out + "\n";
    if (Deno.env.get("UPDATE_SNAPSHOTS") === "1") {
      await Deno.writeTextFile(snap, help);
    }
    assertEquals(help, await Deno.readTextFile(snap), name);
    assertEquals((await run(["help", name])).out + "\n", help, name);
  }
});

Deno.test("cli: names of Object.prototype members are unknown commands, not crashes", async () => {
  for (const name of ["constructor", "toString", "__proto__"]) {
    const r = await run([name]);
    assertEquals(r.code, 2, name);
    assertStringIncludes(r.err, `error: Unknown command "${name}"`);
    const help = await run(["help", name]);
    assertEquals(help.code, 0, name);
    assertStringIncludes(help.out, "Commands:");
  }
});

Deno.test("cli: loadPlugin calls a zero-argument factory exported as default, and refuses other functions", async () => {
  const { loadPlugin } = await import("../../cli/mod.ts");
  const { createRegistry } = await import("../../registry.ts");
  const dir = await Deno.makeTempDir();
  try {
    const factory = join(dir, "factory.js");
    await Deno.writeTextFile(
      factory,
      'export default () => ({ kind: "format", name: "tmpfmt", extensions: [".tmpfmt"] });\n',
    );
    const reg = createRegistry();
    const got = await loadPlugin(reg, factory);
    assertEquals(got.map((p) => p.kind === "format" ? p.name : p.type), [
      "tmpfmt",
    ]);
    assertEquals(reg.formatForPath("x.tmpfmt").name, "tmpfmt");
    const needsArgs = join(dir, "args.js");
    await Deno.writeTextFile(
      needsArgs,
      'export default (o) => ({ kind: "format", name: "x" + o.n, extensions: [] });\n',
    );
    let msg = "";
    try {
      await loadPlugin(createRegistry(), needsArgs);
    } catch (e) {
      msg = e instanceof TypeError ? e.message : String(e);
    }
    assertStringIncludes(msg, "zero-argument factory");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
