/**
 * Tokenizers for Llama-family models, in pure TypeScript:
 *
 * - byte-level BPE (GPT-2, Llama 3, Qwen, SmolLM, DeepSeek, Falcon, MPT,
 *   StarCoder / Refact ...) from `tokenizer.json` or GGUF
 *   (`tokenizer.ggml.model = "gpt2"`, the pattern set named by
 *   `tokenizer.ggml.pre`);
 * - SentencePiece-style BPE with byte fallback (Llama 1/2, TinyLlama,
 *   Mistral) from `tokenizer.json` or GGUF (`"llama"`, merged by score);
 * - WordPiece (BERT) from `tokenizer.json` or GGUF (`"bert"`);
 * - Unigram (T5, XLM-R, ALBERT ...) and WordLevel from `tokenizer.json`,
 *   Unigram from GGUF (`"t5"`);
 * - chat templates: the model's own Jinja template rendered as
 *   transformers does, with hand-written ChatML, Llama 2, Llama 3, Zephyr
 *   and Mistral formats for models that ship none;
 * - structured output: JSON Schema (or plain JSON) compiled to a byte
 *   grammar ({@link compileJsonSchema}) and lifted to a token-level
 *   constraint for sampling ({@link jsonConstraint}).
 *
 * {@link createTokenizer} takes either a parsed `tokenizer.json` or GGUF
 * metadata and returns a {@link Tokenizer}: `encode`, `decode`, streaming
 * decoding, BOS / EOS / end-of-generation ids and special tokens.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createTokenizer } from "@modelhost/modelhost/tokenizers";
 * const tok = createTokenizer({
 *   "tokenizer.ggml.model": "llama",
 *   "tokenizer.ggml.tokens": ["<unk>", "<s>", "</s>", "▁", "h", "i", "▁h", "▁hi"],
 *   "tokenizer.ggml.scores": [0, 0, 0, -1, -2, -3, -4, -5],
 *   "tokenizer.ggml.token_type": [2, 3, 3, 1, 1, 1, 1, 1],
 * });
 * const ids = tok.encode("hi hi"); // BOS, "▁hi", "▁hi"
 * assert(ids.join() === "1,7,7" && tok.decode(ids) === "hi hi");
 * ```
 *
 * @module
 */

import { checkJsonDepth } from "../core/_json_depth.ts";
import {
  type GgufMetadata,
  type GgufTokenizerOptions,
  tokenizerFromGguf,
} from "./gguf.ts";
import {
  type HfTokenizerOptions,
  tokenizerFromJson,
  type TokenizerJson,
} from "./hf.ts";
import type { Tokenizer } from "./tokenizer.ts";

export {
  type DecodeOptions,
  type EncodeOptions,
  type SpecialToken,
  type StreamDecoder,
  TokenAttr,
  type Tokenizer,
  type TokenizerKind,
} from "./tokenizer.ts";
export {
  GGUF_TOKENIZER_MODELS,
  type GgufMetadata,
  type GgufTokenizerOptions,
  tokenizerFromGguf,
} from "./gguf.ts";
export {
  type GenerationConfigJson,
  type HfAddedToken,
  type HfTokenizerOptions,
  type HfTokenText,
  type TokenizerConfigJson,
  tokenizerFromJson,
  type TokenizerJson,
} from "./hf.ts";
export { UnigramModel, type UnigramSpec, UNK_PENALTY } from "./unigram.ts";
export {
  GGUF_PRE_NAMES,
  type GgufPreTokenizer,
  ggufPreTokenizer,
  toJsPattern,
  type ToJsPatternOptions,
  toJsRegExp,
} from "./pre_tokenize.ts";
export {
  CHAT_TEMPLATES,
  type ChatFamily,
  chatFamily,
  type ChatMessage,
  chatml,
  type ChatTemplate,
  chatTemplateFor,
  type ChatTemplateHint,
  type ChatTemplateOptions,
  encodeChat,
  type EncodeChatOptions,
  jinjaChatTemplate,
  llama2Chat,
  llama3Chat,
  mistralChat,
  pickChatTemplate,
  renderChatTemplate,
  type ResolvedChatTemplate,
  selectChatTemplate,
  type SelectChatTemplateOptions,
  strftime,
  zephyrChat,
} from "./chat.ts";

export {
  type ByteGrammar,
  compileJsonSchema,
  IGNORED_KEYWORDS,
  type JsonSchemaOptions,
} from "./json_schema.ts";
export {
  grammarConstraint,
  type GrammarConstraintOptions,
  jsonConstraint,
  type TokenConstraint,
} from "./constraint.ts";

export { renderGoTemplate, renderOllamaTemplate } from "./go_template.ts";

/** Options of {@link createTokenizer}: those of both loaders. */
export interface CreateTokenizerOptions
  extends HfTokenizerOptions, GgufTokenizerOptions {}

/** What {@link createTokenizer} accepts. */
export type TokenizerSource =
  | TokenizerJson
  | GgufMetadata
  | { metadata: Record<string, unknown> };

/**
 * Builds a tokenizer from whichever description a model comes with:
 *
 * - a parsed `tokenizer.json` (an object with `model.vocab`), with
 *   `tokenizer_config.json` / `generation_config.json` in `options`;
 * - GGUF metadata (an object or `Map` with `tokenizer.ggml.model`), or a
 *   model read from a GGUF file (an object whose `metadata` has it).
 *
 * @param source The description.
 * @param options Configs (tokenizer.json) and a name for messages.
 * @returns The tokenizer.
 * @throws {TypeError} When the source is neither, or a part is unsupported.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { createTokenizer } from "@modelhost/modelhost/tokenizers";
 * const tok = createTokenizer({
 *   model: { type: "BPE", vocab: { "a": 0, "b": 1, "ab": 2, "<|endoftext|>": 3 }, merges: [["a", "b"]] },
 *   added_tokens: [{ id: 3, content: "<|endoftext|>", special: true }],
 *   pre_tokenizer: { type: "ByteLevel", add_prefix_space: false },
 *   decoder: { type: "ByteLevel" },
 * });
 * assert(tok.encode("abab<|endoftext|>", { parseSpecial: true }).join() === "2,2,3");
 * assert(tok.eog.includes(3));
 * ```
 */
export function createTokenizer(
  source: TokenizerSource,
  options: CreateTokenizerOptions = {},
): Tokenizer {
  if (source instanceof Map) return tokenizerFromGguf(source, options);
  const o = source as Record<string, unknown>;
  if (o !== null && typeof o === "object") {
    if ("tokenizer.ggml.model" in o) return tokenizerFromGguf(o, options);
    const model = o.model as Record<string, unknown> | undefined;
    if (model !== null && typeof model === "object" && "vocab" in model) {
      checkJsonDepth(o, options.name ?? "tokenizer.json");
      return tokenizerFromJson(o as TokenizerJson, options);
    }
    const md = o.metadata as Record<string, unknown> | undefined;
    if (md !== null && typeof md === "object" && "tokenizer.ggml.model" in md) {
      return tokenizerFromGguf(md, options);
    }
  }
  throw new TypeError(
    `${
      options.name ?? "Tokenizer source"
    } is neither a tokenizer.json object (no model.vocab) nor GGUF metadata (no tokenizer.ggml.model)`,
  );
}
