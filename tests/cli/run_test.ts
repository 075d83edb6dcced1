// `modelhost run` (cli/run.ts): a stored network's forward pass from
// inline JSON, a JSON file and a .npy file.

import { assertAlmostEquals, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { buildNetwork, defaultRegistry, floatTensor } from "../../mod.ts";
import { NET_CONFIG as CONFIG, runCli, savedNetwork } from "./_cli.ts";

const run = runCli;

Deno.test("cli run: forward pass of a stored network from JSON, stdin-free inline and .npy input", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { path, file } = await savedNetwork(dir);
    const reg = defaultRegistry();
    const tensors = new Map();
    for (const n of file.models[0].tensors.names()) {
      tensors.set(n, await file.models[0].tensors.load(n));
    }
    const net = buildNetwork(reg, CONFIG, tensors);
    const x = Float32Array.from(
      { length: 2 * 64 },
      (_, i) => Math.sin(i * 0.37),
    );
    const want = net.forward(floatTensor(x, [2, 64]));
    const rows = [Array.from(x.subarray(0, 64)), Array.from(x.subarray(64))];
    const inline = await run(["run", path, "--input", JSON.stringify(rows)]);
    assertEquals(inline.code, 0, inline.err);
    const got = JSON.parse(inline.out);
    assertEquals(got.shape, [2, 5]);
    got.data.forEach((v: number, i: number) =>
      assertAlmostEquals(v, want.data[i], 1e-6)
    );
    // the same input as a .npy file (float32, C order), built by hand from the format spec
    const header =
      `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 64), }`;
    const pad = 64 - ((10 + header.length + 1) % 64);
    const h = new TextEncoder().encode(header + " ".repeat(pad) + "\n");
    const npy = new Uint8Array(10 + h.length + x.byteLength);
    npy.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
    new DataView(npy.buffer).setUint16(8, h.length, true);
    npy.set(h, 10);
    npy.set(new Uint8Array(x.buffer), 10 + h.length);
    const npyPath = join(dir, "x.npy");
    await Deno.writeFile(npyPath, npy);
    const fromNpy = JSON.parse(
      (await run(["run", path, "--input", npyPath])).out,
    );
    assertEquals(fromNpy, got);
    const noCfg = join(dir, "plain.gguf");
    assertEquals((await run(["convert", path, "-o", noCfg])).code, 0);
    const viaGguf = await run(["run", noCfg, "--input", JSON.stringify(rows)]);
    assertEquals(
      JSON.parse(viaGguf.out),
      got,
      "GGUF keeps the network config too",
    );
    const missing = await run(["run", path]);
    assertEquals([missing.code, missing.err.split("\n")[0]], [
      2,
      "error: missing --input",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
