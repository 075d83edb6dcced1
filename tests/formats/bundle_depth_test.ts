/**
 * A bundle nested 10,000 deep (issue 18, defect 5) used to throw the engine's
 * "Maximum call stack size exceeded" from `restoreLongStrings`; it is now a
 * RangeError naming the limit, and the long-string restore is iterative.
 */

import { assertEquals, assertRejects, assertThrows } from "@std/assert";
import { loadBundle, saveBundle } from "../../formats/bundle/mod.ts";
import {
  checkJsonDepth,
  MAX_JSON_DEPTH,
  parseJsonWithLongStrings,
} from "../../formats/bundle/_json.ts";

const deep = (n: number) => "[".repeat(n) + "]".repeat(n);
const long = "x".repeat(5000); // past the 4096-character cut: blobs in play

for (const n of [10_000, 100_000]) {
  Deno.test(`a bundle nested ${n} deep is a RangeError naming the limit`, async () => {
    const text =
      `{"type":"modelhost/bundle","version":1,"models":[{"id":"m","metadata":{"a":"${long}","d":${
        deep(n)
      }},"weights":{"encoding":"base64","tensors":{}}}]}`;
    await assertRejects(
      () => loadBundle(text),
      RangeError,
      `JSON nested more than ${MAX_JSON_DEPTH} deep`,
    );
  });
}

Deno.test("nesting at the limit still reads, long strings restored", async () => {
  const d = deep(MAX_JSON_DEPTH - 5);
  const text =
    `{"type":"modelhost/bundle","version":1,"models":[{"id":"m","metadata":{"a":"${long}","d":${d}},"weights":{"encoding":"base64","tensors":{}}}]}`;
  const b = await loadBundle(text);
  assertEquals(b.models[0].metadata.a, long);
  const v = parseJsonWithLongStrings(`{"a":"${long}","b":[["${long}"]]}`) as {
    b: string[][];
  };
  assertEquals(v.b[0][0], long);
});

Deno.test("checkJsonDepth walks a 1,000,000-deep value without recursion", () => {
  let v: unknown[] = [];
  const root = v;
  for (let i = 0; i < 1_000_000; i++) {
    const next: unknown[] = [];
    v.push(next);
    v = next;
  }
  assertThrows(() => checkJsonDepth(root, "x"), RangeError, "MAX_JSON_DEPTH");
});

Deno.test("saving metadata nested past the limit is a RangeError, not a stack overflow", async () => {
  let v: unknown = 1;
  for (let i = 0; i < 20_000; i++) v = [v];
  await assertRejects(
    () => saveBundle([{ id: "m", metadata: { d: v }, tensors: [] }]),
    RangeError,
    "MAX_JSON_DEPTH",
  );
});

Deno.test("a tokenizer.json whose normalizer nests 10,000 Sequences is a RangeError", async () => {
  const { createTokenizer } = await import("../../tokenizers/mod.ts");
  let n: unknown = { type: "Lowercase" };
  for (let i = 0; i < 10_000; i++) n = { type: "Sequence", normalizers: [n] };
  assertThrows(
    () =>
      createTokenizer({
        model: { type: "WordLevel", vocab: { a: 0 }, unk_token: "a" },
        normalizer: n,
      } as never),
    RangeError,
    "MAX_JSON_DEPTH",
  );
});
