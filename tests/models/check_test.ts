/**
 * Hyperparameters are checked against the tensors before anything is
 * allocated (issue 18, defects 1 and 2): a `block_count` of 2^31−1 used to
 * grow the heap until V8 died, 1 or 3 on a 5-block model built a model that
 * generated garbage, and head/embedding/rope sizes of 2^31−1 or 0 were only
 * caught, if at all, after allocation.
 */

import { assert, assertEquals, assertThrows } from "@std/assert";
import { memorySource } from "../../core/sources.ts";
import { readGguf, writeGgufBytes } from "../../formats/gguf/mod.ts";
import {
  checkModelBuilds,
  checkTransformerFile,
  configFromHf,
  hfToGguf,
  MAX_BLOCKS,
  transformerFromFiles,
  transformerFromGguf,
} from "../../models/mod.ts";
import type { ModelFile } from "../../core/model.ts";
import { llamaModelFile, llamaTensors } from "../_helpers/llama.ts";

const CONFIG = {
  model_type: "llama",
  vocab_size: 16,
  hidden_size: 8,
  intermediate_size: 12,
  num_hidden_layers: 5,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  tie_word_embeddings: true,
};

function hfModel(): ModelFile {
  return llamaModelFile(
    llamaTensors(CONFIG, 4, (i, r) => Math.sin(i + r)),
  );
}

/** A 5-block GGUF, read back, with some metadata values replaced. */
async function gguf(edit: Record<string, unknown> = {}): Promise<ModelFile> {
  const file = hfToGguf({ config: CONFIG, model: hfModel() });
  Object.assign(file.models[0].metadata, edit);
  return await readGguf(memorySource(await writeGgufBytes(file)));
}

Deno.test("the unedited 5-block GGUF builds and its check agrees", async () => {
  const file = await gguf();
  assertEquals(checkTransformerFile(file, { name: "ok.gguf" }).numLayers, 5);
  const m = await transformerFromGguf(file);
  assertEquals(m.forward([1, 2]).length, 16);
});

const BAD: [string, Record<string, unknown>, ErrorConstructor, string][] = [
  [
    "block_count 2^31-1",
    { "llama.block_count": 2 ** 31 - 1 },
    RangeError,
    `llama.block_count is 2147483647, above the limit ${MAX_BLOCKS}`,
  ],
  [
    "block_count 3 on 5 blocks",
    { "llama.block_count": 3 },
    TypeError,
    "llama.block_count says 3 blocks, the tensors have 5 blocks",
  ],
  [
    "block_count 1 on 5 blocks",
    { "llama.block_count": 1 },
    TypeError,
    "llama.block_count says 1 blocks, the tensors have 5 blocks",
  ],
  [
    "block_count 7 on 5 blocks",
    { "llama.block_count": 7 },
    TypeError,
    "says 7 blocks, the tensors have 5 blocks",
  ],
  [
    "head_count 0",
    { "llama.attention.head_count": 0 },
    TypeError,
    "llama.attention.head_count must be a positive integer, got 0",
  ],
  [
    "head_count 2^31-1",
    { "llama.attention.head_count": 2 ** 31 - 1 },
    TypeError,
    "llama.embedding_length 8 is not a multiple of head_count 2147483647",
  ],
  [
    "embedding_length 2^31-1",
    {
      "llama.embedding_length": 2 ** 31 - 1,
      "llama.attention.head_count": 1,
      "llama.rope.dimension_count": 2 ** 31 - 1,
    },
    RangeError,
    "llama.embedding_length is 2147483647, above the limit",
  ],
  [
    "rope.dimension_count 2^31-1",
    { "llama.rope.dimension_count": 2 ** 31 - 1 },
    TypeError,
    "rope.dimension_count 2147483647 differs from the head size 4",
  ],
  [
    "head_count 4 with the tensors of 2 heads of 4",
    { "llama.attention.head_count": 4, "llama.rope.dimension_count": 2 },
    TypeError,
    "has shape [4, 8], expected [2, 8]",
  ],
  [
    "feed_forward_length 2^30",
    { "llama.feed_forward_length": 2 ** 30 },
    RangeError,
    "llama.feed_forward_length is 1073741824, above the limit",
  ],
];

for (const [what, edit, cls, msg] of BAD) {
  Deno.test(`GGUF with ${what}: refused by the check and the loader, before allocating`, async () => {
    const file = await gguf(edit);
    assertThrows(
      () => checkTransformerFile(file, { name: "bad.gguf" }),
      cls,
      msg,
    );
    let err: unknown;
    try {
      await transformerFromGguf(file, { name: "bad.gguf" });
    } catch (e) {
      err = e;
    }
    assert(err instanceof cls, `${what}: ${err}`);
    assert((err as Error).message.includes(msg), (err as Error).message);
  });
}

Deno.test("config.json with num_hidden_layers 3 on a 5-block checkpoint is refused", async () => {
  const config = { ...CONFIG, num_hidden_layers: 3 };
  assertThrows(
    () => checkTransformerFile(hfModel(), { config, name: "ckpt" }),
    TypeError,
    "num_hidden_layers says 3 blocks, the tensors have 5 blocks",
  );
  let err: unknown;
  try {
    await transformerFromFiles({ config, model: hfModel() });
  } catch (e) {
    err = e;
  }
  assert(err instanceof TypeError && err.message.includes("says 3 blocks"));
  const big = { ...CONFIG, num_hidden_layers: 2 ** 31 - 1 };
  assertThrows(
    () => checkTransformerFile(hfModel(), { config: big }),
    RangeError,
    "num_hidden_layers is 2147483647",
  );
  assertEquals(configFromHf(CONFIG).numLayers, 5);
});

Deno.test("checkModelBuilds: the check a server runs before linking an upload", async () => {
  checkModelBuilds(await gguf());
  const three = await gguf({ "llama.block_count": 3 });
  assertThrows(
    () => checkModelBuilds(three),
    TypeError,
    "says 3 blocks",
  );
  checkModelBuilds(hfModel(), { config: CONFIG });
  assertThrows(
    () =>
      checkModelBuilds(hfModel(), { config: { ...CONFIG, hidden_size: 16 } }),
    TypeError,
    "expected [16]",
  );
  // plain tensors, no config: nothing to build, nothing refused
  checkModelBuilds(hfModel());
});
