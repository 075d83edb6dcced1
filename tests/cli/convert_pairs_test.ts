// `convert` across every readable → writable pair of built-in formats: the
// converted network's forward pass agrees with the original (exactly for
// lossless storage, within the dtype's bound otherwise; ONNX through ONNX
// Runtime).

import { assertEquals } from "@std/assert";
import { join } from "@std/path";
import {
  buildNetwork,
  defaultRegistry,
  floatTensor,
  initNetwork,
  memoryTensorIndex,
  type ModelFile,
} from "../../mod.ts";
import { writeModel } from "../../io/open.ts";
import { assertAllClose } from "../_helpers/close.ts";
import { openOrt } from "../formats/_ort.ts";
import { runCli } from "./_cli.ts";

const CONFIG = {
  input_size: 48,
  layers: [
    { type: "dense", output_size: 64, activation: "silu" },
    { type: "layer_norm" },
    { type: "swiglu", intermediate_size: 96 },
    { type: "dense", output_size: 7, activation: "softmax" },
  ],
};
const EXT: Record<string, string> = {
  bundle: ".bundle.json",
  safetensors: ".safetensors",
  gguf: ".gguf",
  onnx: ".onnx",
};
const READABLE = ["bundle", "safetensors", "gguf"];
const WRITABLE = ["bundle", "safetensors", "gguf", "onnx"];

const reg = defaultRegistry();
const tensors = initNetwork(reg, CONFIG, 11);
const x = Float32Array.from(
  { length: 3 * 48 },
  (_, i) => Math.cos(i * 0.61) * 1.5,
);
const rows = [0, 1, 2].map((r) => Array.from(x.subarray(r * 48, (r + 1) * 48)));
const expected = buildNetwork(reg, CONFIG, tensors).forward(
  floatTensor(x, [3, 48]),
);

async function forwardOf(path: string, format: string): Promise<Float32Array> {
  if (format === "onnx") {
    const s = await openOrt(path);
    try {
      return (await s.run("input", x, [3, 48])).data;
    } finally {
      await s.close();
    }
  }
  const r = await runCli(["run", path, "--input", JSON.stringify(rows)]);
  assertEquals(r.code, 0, r.err);
  const y = JSON.parse(r.out);
  assertEquals(y.shape, [3, 7]);
  return Float32Array.from(y.data);
}

Deno.test("cli convert: every readable → writable pair keeps the network's forward pass", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    const file: ModelFile = {
      models: [{
        id: "net",
        config: CONFIG,
        metadata: {},
        tensors: memoryTensorIndex(tensors.values()),
      }],
    };
    for (const src of READABLE) {
      const srcPath = join(dir, `src${EXT[src]}`);
      await writeModel(reg.format(src), file, srcPath);
      assertAllClose(
        await forwardOf(srcPath, src),
        expected.data,
        `${src} as written`,
        0,
        0,
      );
      for (const dst of WRITABLE) {
        await t.step(`${src} → ${dst}`, async () => {
          const out = join(dir, `${src}-to-${dst}${EXT[dst]}`);
          const c = await runCli(["convert", srcPath, "--to", dst, "-o", out]);
          assertEquals(c.code, 0, c.err);
          // F32 storage is lossless: equal outputs; ONNX Runtime sums in its own order.
          const [rtol, atol] = dst === "onnx" ? [1e-4, 1e-6] : [0, 0];
          assertAllClose(
            await forwardOf(out, dst),
            expected.data,
            `${src} → ${dst}`,
            rtol,
            atol,
          );
        });
      }
    }
    // Lossy storage stays within the dtype's bound.
    const srcPath = join(dir, `src.safetensors`);
    for (
      const [dst, dtype, rtol] of [["gguf", "q8_0", 3e-2], [
        "safetensors",
        "f16",
        5e-3,
      ], ["bundle", "bf16", 3e-2]] as const
    ) {
      await t.step(`safetensors → ${dst} --dtype ${dtype}`, async () => {
        const out = join(dir, `lossy-${dtype}${EXT[dst]}`);
        const c = await runCli([
          "convert",
          srcPath,
          "--to",
          dst,
          "-o",
          out,
          "--dtype",
          dtype,
        ]);
        assertEquals(c.code, 0, c.err);
        assertAllClose(
          await forwardOf(out, dst),
          expected.data,
          `${dst} ${dtype}`,
          rtol,
          1e-3,
        );
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
