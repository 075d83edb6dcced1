// Bounded prompts: a text longer than the model could ever take is refused
// with 413 before it is tokenized (a 15 MB prompt used to block every other
// request for seconds while it was tokenized, and left RSS at 1.2 GB).
// The limit scales with the model's context: no prompt over it fits.

import type { Transformer } from "../models/transformer.ts";
import type { Tokenizer } from "../tokenizers/tokenizer.ts";
import { HttpError } from "./_http.ts";

/** Characters allowed per token of the model's context (tokens seldom span more than a few). */
export const MAX_PROMPT_CHARS_PER_TOKEN = 16;
/** The prompt limit never goes below this many characters. */
export const MIN_PROMPT_CHARS = 65_536;

/** The longest text (characters) a model with this context length takes. */
export function promptCharLimit(contextLength: number): number {
  return Math.max(
    MIN_PROMPT_CHARS,
    contextLength * MAX_PROMPT_CHARS_PER_TOKEN,
  );
}

/**
 * Makes the model's tokenizer refuse (413) any text over
 * {@link promptCharLimit}, whichever route it comes from (prompts,
 * rendered chats, embedding inputs).
 */
export function limitPromptLength(model: Transformer, label: string): void {
  const tok = model.tokenizer;
  if (!tok) return;
  const context = model.config.maxPositionEmbeddings;
  const limit = promptCharLimit(context);
  const encode = tok.encode.bind(tok);
  const check = (text: string): void => {
    if (text.length > limit) {
      throw new HttpError(
        413,
        `The prompt is ${text.length} characters; ${label} takes at most ${limit} (${MAX_PROMPT_CHARS_PER_TOKEN} per token of its ${context}-token context)`,
      );
    }
  };
  checks.set(tok, check);
  tok.encode = (text, options) => {
    check(text);
    return encode(text, options);
  };
}

const checks = new WeakMap<Tokenizer, (text: string) => void>();

/** The 413 check of {@link limitPromptLength}, for text encoded elsewhere. */
export function checkPromptLength(tok: Tokenizer, text: string): void {
  checks.get(tok)?.(text);
}
