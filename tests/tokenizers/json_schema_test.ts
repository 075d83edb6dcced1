// Structured output: JSON Schema compiled to a byte grammar, lifted to
// token masks. Ajv (an independent JSON Schema validator) is the
// reference: what the grammar completes validates, canonical JSON that
// validates is accepted, and 200 answers sampled at temperature 1 from
// stories260K against 10 schemas all parse and validate.

import { assert, assertEquals, assertThrows } from "@std/assert";
import { Ajv2020 as Ajv } from "ajv/dist/2020";
import { readGguf } from "../../formats/gguf/mod.ts";
import { memorySource } from "../../core/sources.ts";
import { loadTransformer } from "../../io/transformer.ts";
import { BatchEngine } from "../../models/batch.ts";
import {
  compileJsonSchema,
  createTokenizer,
  grammarConstraint,
  jsonConstraint,
} from "../../tokenizers/mod.ts";
import { conformanceTest, fixture } from "../_helpers/fixtures.ts";

const enc = new TextEncoder();

/** Feeds text to a fresh grammar: "reject", "partial", or "complete". */
function feed(schema: unknown, text: string): string {
  const g = compileJsonSchema(schema);
  let s = g.start();
  for (const b of enc.encode(text)) {
    const n = g.step(s, b);
    if (n === undefined) return "reject";
    s = n;
  }
  return g.complete(s) ? "complete" : "partial";
}

/** The ten schemas of the sampling test (nested objects, arrays, enums, numbers, escapes). */
export const SCHEMAS: Record<string, unknown>[] = [
  {
    type: "object",
    properties: {
      name: { type: "string", maxLength: 16 },
      age: { type: "integer" },
      address: {
        type: "object",
        properties: {
          city: { type: "string", maxLength: 12 },
          zip: { type: "string", minLength: 5, maxLength: 5 },
        },
        required: ["city", "zip"],
        additionalProperties: false,
      },
    },
    required: ["name", "age", "address"],
    additionalProperties: false,
  },
  { type: "array", items: { type: "integer" }, minItems: 1, maxItems: 5 },
  {
    type: "object",
    properties: {
      color: { enum: ["red", "green", "blue"] },
      shade: { enum: [1, 2, 3, 12] },
    },
    required: ["color", "shade"],
  },
  {
    type: "object",
    properties: {
      x: { type: "number" },
      y: { type: "number" },
      n: { type: "integer" },
    },
    required: ["x", "y", "n"],
  },
  {
    type: "object",
    properties: {
      quote: { enum: ['say "hi"', "back\\slash", "line\nbreak", "tab\there"] },
      note: { type: "string", maxLength: 10 },
    },
    required: ["quote", "note"],
  },
  {
    type: "array",
    maxItems: 3,
    items: {
      type: "object",
      properties: {
        id: { type: "integer" },
        tags: {
          type: "array",
          items: { enum: ["a", "b", "c"] },
          maxItems: 3,
        },
      },
      required: ["id", "tags"],
    },
  },
  {
    type: "object",
    properties: {
      value: { anyOf: [{ type: "string", maxLength: 8 }, { type: "integer" }] },
      extra: { type: ["boolean", "null"] },
    },
    required: ["value", "extra"],
  },
  {
    type: "object",
    properties: {
      ok: { type: "boolean" },
      kind: { const: "event" },
      count: { type: "integer" },
    },
    required: ["ok", "kind", "count"],
  },
  {
    type: "array",
    prefixItems: [
      { type: "string", maxLength: 6 },
      { type: "integer" },
      { type: "boolean" },
    ],
    items: false,
    minItems: 3,
  },
  {
    type: "object",
    properties: {
      title: { type: "string", minLength: 1, maxLength: 12 },
      year: { type: "integer" },
      rating: { type: "number" },
    },
    required: ["title"],
  },
];

Deno.test("json schema: the grammar completes what ajv validates and refuses what it does not", () => {
  const ajv = new Ajv({ strict: false });
  const cases: [number, string][] = [
    [
      0,
      '{"name": "Ann", "age": 31, "address": {"city": "Oslo", "zip": "01234"}}',
    ],
    [0, '{"address":{"zip":"01234","city":"Oslo"},"age":-0,"name":""}'],
    [
      0,
      '{"name": "Ann", "age": 31.5, "address": {"city": "Oslo", "zip": "01234"}}',
    ],
    [
      0,
      '{"name": "Ann", "age": 31, "address": {"city": "Oslo", "zip": "0123"}}',
    ],
    [0, '{"name": "Ann", "age": 31}'],
    [
      0,
      '{"name": "Ann", "age": 31, "address": {"city": "Oslo", "zip": "01234"}, "x": 1}',
    ],
    [1, "[1, 2, 3]"],
    [1, "[]"],
    [1, "[1,2,3,4,5,6]"],
    [1, "[1.5]"],
    [2, '{"color": "green", "shade": 12}'],
    [2, '{"color": "pink", "shade": 1}'],
    [3, '{"x": -1.5e-3, "y": 0, "n": 7}'],
    [3, '{"x": 01, "y": 0, "n": 7}'],
    [4, '{"quote": "line\\nbreak", "note": "caf\\u00e9 \\"x\\""}'],
    [4, '{"quote": "say \\"hi\\"", "note": "12345678901"}'],
    [5, '[{"id": 1, "tags": ["a", "c"]}, {"id": 2, "tags": []}]'],
    [5, '[{"id": 1, "tags": ["d"]}]'],
    [6, '{"value": "abc", "extra": null}'],
    [6, '{"value": 12, "extra": true}'],
    [6, '{"value": 1.5, "extra": true}'],
    [7, '{"ok": true, "kind": "event", "count": 3}'],
    [7, '{"ok": true, "kind": "other", "count": 3}'],
    [8, '["abc", 5, false]'],
    [8, '["abc", 5, false, 1]'],
    [8, '["abc", 5]'],
    [9, '{"title": "Dune", "rating": 4.5}'],
    [9, '{"title": ""}'],
  ];
  for (const [i, text] of cases) {
    const valid = ajv.validate(
      SCHEMAS[i],
      JSON.parse(text.replace(/: 01/, ": 1")),
    );
    const got = feed(SCHEMAS[i], text);
    if (text.includes(": 01")) {
      assertEquals(got, "reject", `${text}: a leading zero is no JSON`);
      continue;
    }
    assertEquals(got === "complete", valid, `schema ${i}: ${text} → ${got}`);
  }
});

Deno.test("json schema: JSON mode, recursion through $ref, whitespace as llama.cpp allows it", () => {
  assertEquals(feed("json", '{"a": [1, {"b": null}], "c": "d"}'), "complete");
  assertEquals(feed("json", "[1]"), "reject");
  assertEquals(feed("json", '{\n  "a": 1\n}'), "complete");
  assertEquals(feed("json", '{  "a": 1}'), "reject"); // two spaces
  assertEquals(feed("json", "{\n" + " ".repeat(21) + '"a": 1}'), "reject");
  const tree = {
    $defs: {
      node: {
        type: "object",
        properties: {
          v: { type: "integer" },
          kids: { type: "array", items: { $ref: "#/$defs/node" } },
        },
        required: ["v"],
      },
    },
    $ref: "#/$defs/node",
  };
  assertEquals(
    feed(tree, '{"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]}'),
    "complete",
  );
  assertEquals(feed(tree, '{"v":1,"kids":[{"w":2}]}'), "reject");
  assertEquals(feed({ type: "string" }, '"\\ud83d"'), "reject");
  assertEquals(feed({ type: "string" }, '"\u{1F600}"'), "complete");
  assertEquals(feed({ type: "string" }, '"\xc3\x28"'), "complete"); // UTF-8 of "Ã("
  // bytes that are no UTF-8: a lone continuation byte
  const g = compileJsonSchema({ type: "string" });
  let s = g.step(g.start(), 0x22)!;
  assertEquals(g.step(s, 0x80), undefined);
  s = g.step(s, 0xe2)!;
  assertEquals(g.step(s, 0x41), undefined);
});

Deno.test("json schema: unsupported keywords and impossible schemas are refused by name", () => {
  for (
    const [schema, word] of [
      [{ type: "string", pattern: "^a" }, '"pattern"'],
      [{ type: "integer", minimum: 3 }, '"minimum"'],
      [{ type: "string", format: "date" }, '"format"'],
      [{ $ref: "http://x/y" }, "not supported"],
      [false, "no value validates"],
      [
        { type: "object", required: ["a"], additionalProperties: false },
        '"a" is required but not allowed',
      ],
      [{ type: "array", items: false, minItems: 2 }, "minItems 2"],
      [{ type: "strin" }, 'unknown type "strin"'],
    ] as [unknown, string][]
  ) {
    assertThrows(() => compileJsonSchema(schema), TypeError, word);
  }
});

conformanceTest(
  "token masks: each allowed token's bytes continue the grammar and no other token's do (GPT-2's 50,257 tokens)",
  async () => {
    const file = await readGguf(
      memorySource(
        await Deno.readFile(
          fixture("gguf/llama.cpp-vocab/ggml-vocab-gpt-2.gguf"),
        ),
      ),
    );
    const tok = createTokenizer(file.models[0].metadata);
    const schema = SCHEMAS[0];
    const g = compileJsonSchema(schema);
    const c = grammarConstraint(tok, g);
    let state = g.start();
    const text = '{"name": "Ann", "age": 31, "address": {"city": "Os';
    // Check the mask at several points along a valid text.
    const ids = tok.encode(text);
    for (const [k, id] of [-1, ...ids].entries()) {
      if (k > 0) {
        c.accept(id);
        for (const b of tok.tokenBytes(id)) state = g.step(state, b)!;
      }
      if (k % 4 !== 0) continue;
      const logits = new Float32Array(tok.vocabSize);
      c.mask(logits);
      for (let t = 0; t < tok.vocabSize; t++) {
        let s: unknown = state;
        const bytes = tok.tokenBytes(t);
        for (const b of bytes) {
          s = s === undefined ? undefined : g.step(s, b);
        }
        const ok = bytes.length > 0 && s !== undefined;
        assertEquals(logits[t] === 0, ok, `after ${k} tokens, token ${t}`);
      }
    }
  },
);

conformanceTest(
  "structured output: 200 answers of stories260K at temperature 1 against 10 schemas all parse and validate (ajv)",
  async () => {
    const model = await loadTransformer(fixture("gguf/stories260K.gguf"));
    const tok = model.tokenizer!;
    const ajv = new Ajv({ strict: false });
    const engine = new BatchEngine(model, { maxSequences: 8 });
    let ok = 0;
    const reasons = new Map<string, number>();
    try {
      const jobs = SCHEMAS.flatMap((schema, i) =>
        Array.from(
          { length: 20 },
          (_, k) => ({ schema, i, seed: 1000 * i + k }),
        )
      );
      const validators = SCHEMAS.map((s) => ajv.compile(s));
      await Promise.all(jobs.map(async ({ schema, i, seed }) => {
        let text = "";
        const it = engine.generate("Once upon a time", {
          temperature: 1,
          seed,
          maxTokens: 400,
          constraint: jsonConstraint(tok, schema),
        });
        let r = await it.next();
        while (!r.done) {
          text += r.value.text;
          r = await it.next();
        }
        assertEquals(r.value.text, text);
        reasons.set(
          r.value.finishReason,
          (reasons.get(r.value.finishReason) ?? 0) + 1,
        );
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch (e) {
          throw new Error(
            `schema ${i}, seed ${seed}: ${text} does not parse: ${e}`,
          );
        }
        assert(
          validators[i](value),
          `schema ${i}, seed ${seed}: ${text}: ${
            ajv.errorsText(validators[i].errors)
          }`,
        );
        ok++;
      }));
    } finally {
      engine.close();
    }
    assertEquals(ok, 200);
    assertEquals([...reasons], [["stop", 200]]);
  },
);
