// The model and post-processor of a tokenizer.json, read into what the
// pipeline in hf.ts runs: BPE, WordPiece, Unigram or WordLevel with its
// vocabulary, and the special tokens a post-processor puts around a sequence.

import { HfBpe } from "./_hf_bpe.ts";
import { type Json, obj } from "./_hf_common.ts";
import { toByteAlphabet } from "./_hf_pre_tokenizers.ts";
import { asText } from "./_text.ts";
import { UnigramModel } from "./unigram.ts";
import { WordPieceModel } from "./wordpiece.ts";

/** Unused ids tolerated past twice the defined tokens (a hostile-size limit). */
export const MAX_ID_GAP = 4096;

export type Fail = (msg: string) => TypeError;

/** The model of a `tokenizer.json`, reduced to what the pipeline needs. */
export interface Model {
  type: "BPE" | "WordPiece" | "Unigram" | "WordLevel";
  /** Token text by id. */
  tokens: string[];
  unk: number | undefined;
  /** One word (model alphabet) to ids. */
  encodeWord(word: string, out: number[]): void;
  /** One plain-text word of a byte-level pipeline to ids. */
  encodeBytes(word: string, out: number[]): void;
}

export function readModel(
  model: Json,
  fail: Fail,
  cacheSize: number | undefined,
): Model {
  const type = typeof model.type === "string"
    ? model.type
    : Array.isArray(model.vocab)
    ? "Unigram"
    : "merges" in model
    ? "BPE"
    : "continuing_subword_prefix" in model
    ? "WordPiece"
    : "WordLevel";
  if (type === "Unigram") {
    if (!Array.isArray(model.vocab)) {
      throw fail("a Unigram model.vocab must be a list of [piece, score]");
    }
    const pieces: string[] = [];
    const scores: number[] = [];
    model.vocab.forEach((e, i) => {
      if (
        !Array.isArray(e) || typeof e[0] !== "string" ||
        typeof e[1] !== "number"
      ) {
        throw fail(
          `model.vocab[${i}] = ${JSON.stringify(e)} is not [piece, score]`,
        );
      }
      pieces.push(e[0]);
      scores.push(e[1]);
    });
    const unk = typeof model.unk_id === "number" ? model.unk_id : undefined;
    if (unk !== undefined && !(unk >= 0 && unk < pieces.length)) {
      throw fail(`model.unk_id ${unk} is outside the ${pieces.length} pieces`);
    }
    const m = new UnigramModel({
      pieces,
      scores,
      unk,
      byteFallback: model.byte_fallback === true,
      cacheSize,
    });
    const encodeWord = (w: string, out: number[]) => m.encodeWord(w, out);
    return {
      type,
      tokens: pieces,
      unk,
      encodeWord,
      encodeBytes: (w, out) => encodeWord(toByteAlphabet(w), out),
    };
  }
  const vocab = obj(model.vocab);
  if (!vocab) throw fail(`model.vocab must be an object of token -> id`);
  let size = 0;
  const entries = Object.entries(vocab);
  for (const [t, id] of entries) {
    if (!Number.isInteger(id) || (id as number) < 0) {
      throw fail(`model.vocab has a bad id ${JSON.stringify(id)} for "${t}"`);
    }
    size = Math.max(size, (id as number) + 1);
  }
  if (size > 2 * entries.length + MAX_ID_GAP) {
    throw new RangeError(
      `${fail("").message}model.vocab token id ${
        size - 1
      } is far beyond the ${entries.length} tokens it defines`,
    );
  }
  const tokens: string[] = new Array(size).fill("");
  for (const [t, id] of entries) tokens[id as number] = t;
  const ids = new Map<string, number>();
  for (const [t, id] of entries) ids.set(t, id as number);
  const str = (k: string) =>
    typeof model[k] === "string" && model[k] !== ""
      ? model[k] as string
      : undefined;
  if (type === "BPE") {
    const merges = (Array.isArray(model.merges) ? model.merges : []).map(
      (m, i): [string, string] => {
        if (Array.isArray(m) && m.length === 2) {
          return [String(m[0]), String(m[1])];
        }
        if (typeof m === "string") {
          const sp = m.indexOf(" ", 1);
          if (sp > 0) return [m.slice(0, sp), m.slice(sp + 1)];
        }
        throw fail(
          `model.merges[${i}] = ${
            JSON.stringify(m)
          } is neither "a b" nor ["a", "b"]`,
        );
      },
    );
    const bpe = new HfBpe({
      tokens,
      merges,
      prefix: str("continuing_subword_prefix"),
      suffix: str("end_of_word_suffix"),
      unkToken: typeof model.unk_token === "string"
        ? model.unk_token
        : undefined,
      fuseUnk: model.fuse_unk === true,
      byteFallback: model.byte_fallback === true,
      ignoreMerges: model.ignore_merges === true,
      cacheSize,
      fail,
    });
    return {
      type,
      tokens,
      unk: typeof model.unk_token === "string"
        ? ids.get(model.unk_token)
        : undefined,
      encodeWord: (w, out) => bpe.encodeWord(w, out),
      encodeBytes: (w, out) => bpe.encodeBytes(w, out),
    };
  }
  const unkText = typeof model.unk_token === "string"
    ? model.unk_token
    : "[UNK]";
  const unk = ids.get(unkText);
  if (type === "WordPiece") {
    const wp = new WordPieceModel({
      tokens,
      unk: unk ?? -1,
      wordPrefix: "",
      continuationPrefix: typeof model.continuing_subword_prefix === "string"
        ? model.continuing_subword_prefix
        : "##",
      maxInputChars: typeof model.max_input_chars_per_word === "number"
        ? model.max_input_chars_per_word
        : 100,
    });
    const cache = new Map<string, Int32Array>();
    const limit = cacheSize ?? 50_000;
    const encodeWord = (w: string, out: number[]) => {
      const hit = cache.get(w);
      if (hit) {
        for (let i = 0; i < hit.length; i++) out.push(hit[i]);
        return;
      }
      const before = out.length;
      wp.encodeWord(w, out);
      if (out[before] === -1) {
        throw fail(`WordPiece unk_token "${unkText}" is not in model.vocab`);
      }
      if (limit > 0 && w.length <= 256) {
        if (cache.size >= limit) cache.clear();
        cache.set(w, Int32Array.from(out.slice(before)));
      }
    };
    return {
      type,
      tokens,
      unk,
      encodeWord,
      encodeBytes: (w, out) => encodeWord(toByteAlphabet(w), out),
    };
  }
  if (type === "WordLevel") {
    const encodeWord = (w: string, out: number[]) => {
      const id = ids.get(w) ?? unk;
      if (id === undefined) {
        throw fail(
          `"${w}" is not in the WordLevel vocabulary and unk_token "${unkText}" is not either`,
        );
      }
      out.push(id);
    };
    return {
      type,
      tokens,
      unk,
      encodeWord,
      encodeBytes: (w, out) => encodeWord(toByteAlphabet(w), out),
    };
  }
  throw fail(
    `model type "${type}" is not supported (supported: BPE, WordPiece, Unigram, WordLevel)`,
  );
}

/** Special tokens a post-processor puts around a single sequence. */
export interface Post {
  prefix: number[];
  suffix: number[];
  /** The separator of Bert / Roberta processing. */
  sep?: number;
}

export function readPostProcessor(cfg: unknown, fail: Fail): Post {
  const c = obj(cfg);
  if (!c) return { prefix: [], suffix: [] };
  switch (c.type) {
    case "TemplateProcessing": {
      const single = Array.isArray(c.single) ? c.single : [];
      const specials = obj(c.special_tokens) ?? {};
      const post: Post = { prefix: [], suffix: [] };
      let seen = false;
      for (const item of single) {
        const it = obj(item) ?? {};
        if (obj(it.Sequence)) {
          seen = true;
          continue;
        }
        const st = obj(it.SpecialToken);
        if (!st) {
          throw fail(
            `TemplateProcessing item ${JSON.stringify(item)} is not known`,
          );
        }
        const name = String(st.id);
        const spec = obj(specials[name]);
        const ids = spec && Array.isArray(spec.ids)
          ? spec.ids.map(Number)
          : undefined;
        if (!ids || ids.some((x) => !Number.isInteger(x) || x < 0)) {
          throw fail(`post_processor special token "${name}" has no ids`);
        }
        (seen ? post.suffix : post.prefix).push(...ids);
      }
      return post;
    }
    case "BertProcessing":
    case "RobertaProcessing": {
      const id = (v: unknown, what: string) => {
        const n = Array.isArray(v) ? Number(v[1]) : NaN;
        if (!Number.isInteger(n) || n < 0) {
          throw fail(
            `${asText(c.type, "")} ${what} must be [text, id], found ${
              JSON.stringify(v)
            }`,
          );
        }
        return n;
      };
      const cls = id(c.cls, "cls");
      const sep = id(c.sep, "sep");
      return { prefix: [cls], suffix: [sep], sep };
    }
    case "ByteLevel":
      return { prefix: [], suffix: [] };
    case "Sequence": {
      const list = Array.isArray(c.processors) ? c.processors : [];
      const post: Post = { prefix: [], suffix: [] };
      for (const p of list) {
        const q = readPostProcessor(p, fail);
        post.prefix = [...q.prefix, ...post.prefix];
        post.suffix = [...post.suffix, ...q.suffix];
        post.sep ??= q.sep;
      }
      return post;
    }
    default:
      throw fail(`post_processor "${asText(c.type, "")}" is not supported`);
  }
}
