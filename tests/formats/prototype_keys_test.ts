/**
 * Names from files never reach `Object.prototype` (issue 18, defect 6): a
 * Loom activation `__proto__` used to throw "Cannot read properties of
 * undefined", and `constructor`, `toString`, `valueOf`, `hasOwnProperty`
 * were accepted as a dense layer with no activation.
 */

import { assert, assertEquals, assertThrows } from "@std/assert";
import { memorySource } from "../../core/sources.ts";
import { readGguf, writeGgufBytes } from "../../formats/gguf/mod.ts";
import { convertLoomConfig } from "../../formats/loom/mod.ts";
import { ggufPreTokenizer } from "../../tokenizers/pre_tokenize.ts";
import { tensorFromF32 } from "../../core/tensor.ts";
import { memoryTensorIndex } from "../../core/model.ts";
import { loadBundle, saveBundle } from "../../formats/bundle/mod.ts";

const NAMES = [
  "__proto__",
  "constructor",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "__defineGetter__",
  "isPrototypeOf",
];

function loomCfg(activation: string): unknown {
  return {
    grid_rows: 1,
    grid_cols: 1,
    layers_per_cell: 1,
    layers: [{
      type: "dense",
      activation,
      input_height: 2,
      output_height: 2,
    }],
  };
}

for (const name of NAMES) {
  Deno.test(`Loom activation "${name}" is a TypeError naming it`, () => {
    // JSON.parse makes "__proto__" an own key, as a file would.
    const cfg = JSON.parse(JSON.stringify(loomCfg(name)));
    assertThrows(
      () => convertLoomConfig(cfg),
      TypeError,
      `${JSON.stringify(name)} has no exact equivalent`,
    );
  });
  Deno.test(`GGUF pre-tokenizer "${name}" is unknown`, () => {
    assertThrows(
      () => ggufPreTokenizer(name),
      TypeError,
      `Unknown GGUF pre-tokenizer "${name}"`,
    );
  });
}

Deno.test("a GGUF metadata key __proto__ is an own key, the record keeps its prototype", async () => {
  const file = {
    models: [{
      id: "m",
      metadata: JSON.parse(
        '{"general.architecture":"x","__proto__":"evil","constructor":7}',
      ),
      tensors: memoryTensorIndex([
        tensorFromF32("t", new Float32Array([1, 2]), [2]),
      ]),
    }],
  };
  const back = await readGguf(memorySource(await writeGgufBytes(file)));
  const md = back.models[0].metadata;
  assert(Object.hasOwn(md, "__proto__"));
  assertEquals(Object.getOwnPropertyDescriptor(md, "__proto__")?.value, "evil");
  assertEquals(Object.getPrototypeOf(md), Object.prototype);
  assertEquals(md.constructor, 7);
});

Deno.test("a bundle tensor named __proto__ survives a save and load", async () => {
  const t = tensorFromF32("__proto__", new Float32Array([3, 4]), [2]);
  const text = await saveBundle([{ id: "m", tensors: [t] }]);
  assert(text.includes('"__proto__"'));
  const b = await loadBundle(text);
  assertEquals(b.models[0].tensors.names(), ["__proto__"]);
});
