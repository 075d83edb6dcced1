// `deno compile` builds a single binary of the CLI that runs `inspect`.
// Compiling needs Deno's `denort` runtime, which Deno downloads from
// dl.deno.land; where that host is unreachable, point DENORT_BIN at a local
// denort binary (or set MODELHOST_TRY_COMPILE=1 to let Deno download it).

import { assertEquals } from "@std/assert";
import { join } from "@std/path";
import { REPO_ROOT } from "../_helpers/fixtures.ts";

const enabled = Boolean(
  Deno.env.get("DENORT_BIN") || Deno.env.get("MODELHOST_TRY_COMPILE"),
);
if (!enabled) {
  console.error(
    "compile: skipped (deno compile needs the denort runtime: set DENORT_BIN to a local denort, or MODELHOST_TRY_COMPILE=1 to download it)",
  );
}

Deno.test({
  name: "cli: deno compile builds one binary that runs inspect",
  ignore: !enabled,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const bin = join(dir, "modelhost");
      const c = await new Deno.Command(Deno.execPath(), {
        args: [
          "compile",
          "-A",
          "--no-check",
          "-o",
          bin,
          join(REPO_ROOT, "cli.ts"),
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assertEquals(c.code, 0, new TextDecoder().decode(c.stderr));
      const bytes = new Uint8Array(8 + 64);
      const header = new TextEncoder().encode(
        JSON.stringify({
          w: { dtype: "F32", shape: [2], data_offsets: [0, 8] },
        }).padEnd(64),
      );
      new DataView(bytes.buffer).setBigUint64(0, 64n, true);
      bytes.set(header, 8);
      const model = join(dir, "m.safetensors");
      await Deno.writeFile(
        model,
        new Uint8Array([
          ...bytes,
          ...new Uint8Array(new Float32Array([1, 2]).buffer),
        ]),
      );
      const r = await new Deno.Command(bin, {
        args: ["inspect", model, "--json"],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assertEquals(r.code, 0, new TextDecoder().decode(r.stderr));
      const rep = JSON.parse(new TextDecoder().decode(r.stdout));
      assertEquals([rep.format, rep.models[0].tensors[0].shape], [
        "safetensors",
        [2],
      ]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
