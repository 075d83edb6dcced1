// The one family registry (models/families/mod.ts): every family checkpoint
// written by transformers (tests/vectors/gen/model_families.py and
// decoder_families.py) is found in it once, under its own kind, and runs
// through that kind's layer: trunk-option families as transformer_block,
// decoder_block families as decoder_block.

import { assert, assertEquals } from "@std/assert";
import { join } from "@std/path";
import {
  configFromHf,
  FAMILIES,
  transformerNetwork,
} from "../../models/config.ts";
import { ALL_FAMILY_SPECS } from "../../models/families/mod.ts";
import { GGUF_ARCHITECTURES } from "../../models/gguf_config.ts";
import { REPO_ROOT } from "../_helpers/fixtures.ts";

const V = join(REPO_ROOT, "tests/vectors");
const trunkCases = (JSON.parse(
  await Deno.readTextFile(join(V, "model_families.json")),
) as { cases: { name: string }[] }).cases.map((c) =>
  join(V, "families", c.name)
);
const decoderCases = (JSON.parse(
  await Deno.readTextFile(join(V, "decoder_families.json")),
) as { cases: { folder: string }[] }).cases.map((c) =>
  join(REPO_ROOT, c.folder)
);

Deno.test("family registry: each model_type once, listed in FAMILIES and GGUF_ARCHITECTURES", () => {
  const types = ALL_FAMILY_SPECS.map((s) => s.info.modelType);
  assertEquals(new Set(types).size, types.length);
  for (const s of ALL_FAMILY_SPECS) {
    assert(FAMILIES.some((f) => f.modelType === s.info.modelType));
    assert(GGUF_ARCHITECTURES.includes(s.info.ggufArchitecture));
  }
});

Deno.test("family registry: every family checkpoint runs through its kind's layer", async () => {
  const seen = new Set<string>();
  for (
    const [folders, kind, layer] of [
      [trunkCases, "trunk", "transformer_block"],
      [decoderCases, "decoder_block", "decoder_block"],
    ] as const
  ) {
    assert(folders.length > 0);
    for (const dir of folders) {
      const json = JSON.parse(
        await Deno.readTextFile(join(dir, "config.json")),
      );
      const cfg = configFromHf(json, dir);
      const spec = ALL_FAMILY_SPECS.find((s) =>
        s.info.modelType === cfg.family
      );
      assert(spec, `${dir}: ${cfg.family} is not in ALL_FAMILY_SPECS`);
      assertEquals(spec!.kind, kind, dir);
      assertEquals(transformerNetwork(cfg).layers[1].type, layer, dir);
      seen.add(cfg.family);
    }
  }
  // every registered family has at least one checkpoint
  assertEquals(
    [...seen].sort(),
    ALL_FAMILY_SPECS.map((s) => s.info.modelType).sort(),
  );
});
