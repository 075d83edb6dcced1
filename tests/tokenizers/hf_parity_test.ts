/**
 * Every tokenizer.json pipeline part against the Python `tokenizers`
 * library: `tests/vectors/gen/tokenizers_hf.py` trains and converts
 * tokenizer.json files of every kind and records, for each text of a
 * corpus with code, whitespace runs, CJK, RTL scripts, emoji with joiners,
 * full-width forms, accents and long repeats, the ids of `encode(text)`,
 * the ids with special tokens left unparsed, and `decode` with and without
 * special tokens. Here each file is loaded and must give the same.
 */

import { assertEquals } from "@std/assert";
import { tokenizerFromJson, type TokenizerJson } from "../../tokenizers/hf.ts";

const DIR = new URL("../vectors/tokenizers/", import.meta.url);

interface Vector {
  name: string;
  tokenizer: TokenizerJson;
  encode: number[][];
  encode_split_special: (number[] | null)[];
  decode: string[];
  decode_skip_special: (string | null)[];
}

const texts: string[] =
  JSON.parse(Deno.readTextFileSync(new URL("corpus.json", DIR))).texts;
const names = [...Deno.readDirSync(DIR)]
  .map((e) => e.name)
  .filter((n) => n.endsWith(".json") && n !== "corpus.json")
  .sort();

/** The pipeline parts a tokenizer.json uses, as "kind:Type" strings. */
export function partsOf(json: TokenizerJson): string[] {
  const out = new Set<string>();
  const walk = (kind: string, v: unknown, key: string) => {
    if (v === null || typeof v !== "object") return;
    const o = v as Record<string, unknown>;
    if (typeof o.type === "string") out.add(`${kind}:${o.type}`);
    const list = o[key];
    if (Array.isArray(list)) { for (const x of list) walk(kind, x, key); }
  };
  walk("model", json.model, "");
  walk("normalizer", json.normalizer, "normalizers");
  walk("pre_tokenizer", json.pre_tokenizer, "pretokenizers");
  walk("post_processor", json.post_processor, "processors");
  walk("decoder", json.decoder, "decoders");
  return [...out];
}

for (const file of names) {
  const v: Vector = JSON.parse(
    Deno.readTextFileSync(new URL(file, DIR)),
  );
  Deno.test(`tokenizer.json ${v.name} (${partsOf(v.tokenizer).join(", ")}): ids and text equal the tokenizers library's`, () => {
    const tok = tokenizerFromJson(v.tokenizer, { name: v.name });
    texts.forEach((text, i) => {
      const what = `${v.name} text ${i} ${JSON.stringify(text.slice(0, 60))}`;
      assertEquals(
        tok.encode(text, { parseSpecial: true }),
        v.encode[i],
        `encode ${what}`,
      );
      assertEquals(
        tok.encode(text, { addSpecial: false }),
        v.encode_split_special[i] ??
          v.encode[i],
        `encode, special tokens not parsed, ${what}`,
      );
      assertEquals(
        tok.decode(v.encode[i], { special: true }),
        v.decode[i],
        `decode ${what}`,
      );
      assertEquals(
        tok.decode(v.encode[i]),
        v.decode_skip_special[i] ?? v.decode[i],
        `decode skipping special tokens ${what}`,
      );
    });
  });
}

Deno.test("Gemma-style runs of ▁ (user-defined pieces) decode to spaces, as the tokenizers library does", () => {
  const v: Vector = JSON.parse(
    Deno.readTextFileSync(new URL("bpe_gemma.json", DIR)),
  );
  const tok = tokenizerFromJson(v.tokenizer);
  const runs = ["▁▁", "▁▁▁", "▁▁▁▁"].map((t) => tok.tokenId(t)!);
  for (const id of runs) {
    assertEquals(
      tok.specialTokens.find((s) => s.id === id)?.type,
      "user-defined",
    );
  }
  const x = tok.tokenId("x")!;
  assertEquals(tok.decode([runs[2], runs[0], x]), "      x");
  const i = texts.findIndex((t) => t === " ".repeat(40) + "x");
  const ids = tok.encode(texts[i], { addSpecial: false });
  assertEquals(ids.some((id) => runs.includes(id)), true);
  assertEquals(tok.decode(ids), texts[i]);
});
