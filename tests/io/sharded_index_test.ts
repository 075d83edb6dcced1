/**
 * A sharded checkpoint over 100 MB opens (issue 18, defect 9): its
 * `model.safetensors.index.json` has a 9-digit `total_size`, which pushed
 * `"weight_map"` past the 64 bytes `openModel` looked at, so the index was
 * read as a bundle by its `.json` extension ("Cannot read bundle: ...").
 */

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import { memoryTensorIndex } from "../../core/model.ts";
import { tensorFromF32, toFloat32 } from "../../core/tensor.ts";
import { defaultRegistry } from "../../mod.ts";
import { openModel } from "../../io/open.ts";
import { saveSafetensors } from "../../io/safetensors.ts";
import { runCli } from "../cli/_cli.ts";

Deno.test("an index with a 9-digit total_size (or a long metadata) opens as SafeTensors", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const tensors = ["a", "b", "c"].map((n, i) =>
      tensorFromF32(n, Float32Array.from({ length: 64 }, (_, k) => k + i), [64])
    );
    const saved = await saveSafetensors(
      join(dir, "model.safetensors"),
      {
        models: [{
          id: "m",
          metadata: {},
          tensors: memoryTensorIndex(tensors),
        }],
      },
      { maxShardSize: 300 },
    );
    const index = saved.paths.find((p) => p.endsWith(".index.json"))!;
    assert(index, `an index among ${saved.paths}`);
    const doc = JSON.parse(await Deno.readTextFile(index));
    for (
      const metadata of [
        { total_size: 123456789 },
        { total_size: 123456789, note: "x".repeat(6000) }, // weight_map past any head
      ]
    ) {
      await Deno.writeTextFile(
        index,
        JSON.stringify({ metadata, weight_map: doc.weight_map }),
      );
      const opened = await openModel(defaultRegistry(), index);
      try {
        assertEquals(opened.format.name, "safetensors");
        assertEquals(opened.file.models[0].tensors.names(), ["a", "b", "c"]);
        const b = await opened.file.models[0].tensors.load("b");
        assertEquals(toFloat32(b)[3], 4);
      } finally {
        opened.close();
      }
      const ins = await runCli(["inspect", index]);
      assertEquals(ins.code, 0, ins.err);
      assert(ins.out.includes("safetensors"), ins.out);
      // the folder too
      const viaDir = await openModel(defaultRegistry(), dir);
      assertEquals(viaDir.format.name, "safetensors");
      viaDir.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
