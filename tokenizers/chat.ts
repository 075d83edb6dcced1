/**
 * Chat templates as plain functions: messages in, prompt text out, for the
 * families modelhost runs (ChatML for Qwen and SmolLM, Llama 2, Llama 3,
 * Zephyr for TinyLlama chat, Mistral). Each one writes what the family's
 * own Jinja template writes; {@link pickChatTemplate} chooses one from a
 * model's `chat_template` string, its family name or its vocabulary, and
 * {@link encodeChat} renders and tokenizes in one step.
 *
 * @module
 */

import type { Tokenizer } from "./tokenizer.ts";

/** One chat message. */
export interface ChatMessage {
  /** `"system"`, `"user"` or `"assistant"` (ChatML and Llama 3 accept any role name). */
  role: string;
  /** The text. */
  content: string;
}

/** Options of a {@link ChatTemplate}. */
export interface ChatTemplateOptions {
  /** End with the header that makes the model answer as the assistant. @default {true} */
  addGenerationPrompt?: boolean;
  /** BOS text, for templates that write it (`<s>`, `<|begin_of_text|>`). */
  bosToken?: string;
  /** EOS text, for templates that write it after assistant turns (`</s>`). */
  eosToken?: string;
  /** System prompt used when the messages have none (ChatML). */
  defaultSystem?: string;
}

/** A chat template: renders messages into the prompt text. */
export type ChatTemplate = (
  messages: readonly ChatMessage[],
  options?: ChatTemplateOptions,
) => string;

/** The template families {@link pickChatTemplate} knows. */
export type ChatFamily = "chatml" | "llama2" | "llama3" | "zephyr" | "mistral";

function splitSystem(
  messages: readonly ChatMessage[],
): [string | undefined, readonly ChatMessage[]] {
  return messages.length > 0 && messages[0].role === "system"
    ? [messages[0].content, messages.slice(1)]
    : [undefined, messages];
}

/**
 * ChatML (Qwen, SmolLM): `<|im_start|>role\ncontent<|im_end|>\n` per message.
 *
 * @param messages The conversation.
 * @param options Generation prompt and default system prompt.
 * @returns The prompt text.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { chatml } from "@modelhost/modelhost/tokenizers";
 * const p = chatml([{ role: "user", content: "Hi" }]);
 * assert(p === "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
 * ```
 */
export function chatml(
  messages: readonly ChatMessage[],
  options: ChatTemplateOptions = {},
): string {
  let out = "";
  if (options.defaultSystem !== undefined && messages[0]?.role !== "system") {
    out += `<|im_start|>system\n${options.defaultSystem}<|im_end|>\n`;
  }
  for (const m of messages) {
    out += `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`;
  }
  if (options.addGenerationPrompt ?? true) out += "<|im_start|>assistant\n";
  return out;
}

/**
 * Llama 2 chat: `<s>[INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] answer </s>`
 * per exchange; the system prompt joins the first user turn. Contents are
 * trimmed, as Meta's template does.
 *
 * @param messages The conversation (user and assistant turns alternate).
 * @param options BOS / EOS text (`<s>` / `</s>` by default).
 * @returns The prompt text.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { llama2Chat } from "@modelhost/modelhost/tokenizers";
 * const p = llama2Chat([{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }]);
 * assert(p === "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]");
 * ```
 */
export function llama2Chat(
  messages: readonly ChatMessage[],
  options: ChatTemplateOptions = {},
): string {
  const bos = options.bosToken ?? "<s>";
  const eos = options.eosToken ?? "</s>";
  const [system, rest] = splitSystem(messages);
  let out = "";
  rest.forEach((m, i) => {
    const content = i === 0 && system !== undefined
      ? `<<SYS>>\n${system}\n<</SYS>>\n\n${m.content}`
      : m.content;
    if (m.role === "user") out += `${bos}[INST] ${content.trim()} [/INST]`;
    else if (m.role === "assistant") out += ` ${content.trim()} ${eos}`;
    else {throw new TypeError(
        `Llama 2 chat has no role "${m.role}" (use system, user, assistant)`,
      );}
  });
  return out;
}

/**
 * Llama 3 chat: `<|begin_of_text|>` then
 * `<|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>` per message
 * (contents trimmed).
 *
 * @param messages The conversation.
 * @param options Generation prompt and BOS text.
 * @returns The prompt text.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { llama3Chat } from "@modelhost/modelhost/tokenizers";
 * const p = llama3Chat([{ role: "user", content: "Hi" }]);
 * assert(p === "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>" +
 *   "<|start_header_id|>assistant<|end_header_id|>\n\n");
 * ```
 */
export function llama3Chat(
  messages: readonly ChatMessage[],
  options: ChatTemplateOptions = {},
): string {
  let out = options.bosToken ?? "<|begin_of_text|>";
  for (const m of messages) {
    out +=
      `<|start_header_id|>${m.role}<|end_header_id|>\n\n${m.content.trim()}<|eot_id|>`;
  }
  if (options.addGenerationPrompt ?? true) {
    out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  }
  return out;
}

/**
 * Zephyr (TinyLlama chat): `<|role|>\ncontent</s>\n` per message.
 *
 * @param messages The conversation.
 * @param options Generation prompt and EOS text (`</s>`).
 * @returns The prompt text.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { zephyrChat } from "@modelhost/modelhost/tokenizers";
 * const p = zephyrChat([{ role: "user", content: "Hi" }]);
 * assert(p === "<|user|>\nHi</s>\n<|assistant|>\n");
 * ```
 */
export function zephyrChat(
  messages: readonly ChatMessage[],
  options: ChatTemplateOptions = {},
): string {
  const eos = options.eosToken ?? "</s>";
  let out = "";
  for (const m of messages) out += `<|${m.role}|>\n${m.content}${eos}\n`;
  if (options.addGenerationPrompt ?? true) out += "<|assistant|>\n";
  return out;
}

/**
 * Mistral instruct: `<s>[INST] user [/INST]answer</s>`; a system prompt is
 * put in front of the first user turn, separated by a blank line.
 *
 * @param messages The conversation.
 * @param options BOS / EOS text.
 * @returns The prompt text.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { mistralChat } from "@modelhost/modelhost/tokenizers";
 * const p = mistralChat([{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }]);
 * assert(p === "<s>[INST] Hi [/INST]Hello</s>");
 * ```
 */
export function mistralChat(
  messages: readonly ChatMessage[],
  options: ChatTemplateOptions = {},
): string {
  const eos = options.eosToken ?? "</s>";
  const [system, rest] = splitSystem(messages);
  let out = options.bosToken ?? "<s>";
  rest.forEach((m, i) => {
    if (m.role === "user") {
      const content = i === 0 && system !== undefined
        ? `${system}\n\n${m.content}`
        : m.content;
      out += `[INST] ${content} [/INST]`;
    } else if (m.role === "assistant") out += `${m.content}${eos}`;
    else {throw new TypeError(
        `Mistral chat has no role "${m.role}" (use system, user, assistant)`,
      );}
  });
  return out;
}

/**
 * The template of each family.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { CHAT_TEMPLATES } from "@modelhost/modelhost/tokenizers";
 * const text = CHAT_TEMPLATES.chatml([{ role: "user", content: "hi" }]);
 * assert(text.includes("<|im_start|>user\nhi<|im_end|>"));
 * ```
 */
export const CHAT_TEMPLATES: Readonly<Record<ChatFamily, ChatTemplate>> = {
  chatml,
  llama2: llama2Chat,
  llama3: llama3Chat,
  zephyr: zephyrChat,
  mistral: mistralChat,
};

/** What {@link pickChatTemplate} may look at; the first that decides wins. */
export interface ChatTemplateHint {
  /** A Jinja `chat_template` (from `tokenizer_config.json` or GGUF `tokenizer.chat_template`). */
  chatTemplate?: string;
  /** A family or model name: `"qwen2"`, `"SmolLM2-135M"`, `"llama3"`, `"TinyLlama"` ... */
  family?: string;
  /** A tokenizer: its chat template, then marker tokens in its vocabulary. */
  tokenizer?: Tokenizer;
}

function fromTemplate(t: string): ChatFamily | undefined {
  if (t.includes("<|im_start|>")) return "chatml";
  if (t.includes("<|start_header_id|>")) return "llama3";
  if (t.includes("<<SYS>>")) return "llama2";
  if (t.includes("[INST]")) return "mistral";
  if (t.includes("<|user|>")) return "zephyr";
  return undefined;
}

function fromFamily(f: string): ChatFamily | undefined {
  const s = f.toLowerCase().replace(/[\s_]/g, "-");
  if (s in CHAT_TEMPLATES) return s as ChatFamily;
  if (/qwen|smollm|chatml/.test(s)) return "chatml";
  if (/llama-?3/.test(s)) return "llama3";
  if (/tinyllama|zephyr/.test(s)) return "zephyr";
  if (/mistral|mixtral/.test(s)) return "mistral";
  if (/llama/.test(s)) return "llama2";
  return undefined;
}

/**
 * The family of chat template that fits a model.
 *
 * @param hint A chat template string, a family name and/or a tokenizer.
 * @returns The family, or undefined when nothing decides.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { chatFamily } from "@modelhost/modelhost/tokenizers";
 * assert(chatFamily({ family: "SmolLM2-135M-Instruct" }) === "chatml");
 * assert(chatFamily({ chatTemplate: "{{ '<|start_header_id|>' }}" }) === "llama3");
 * ```
 */
export function chatFamily(hint: ChatTemplateHint): ChatFamily | undefined {
  const tpl = hint.chatTemplate ?? hint.tokenizer?.chatTemplate;
  const byTemplate = tpl !== undefined ? fromTemplate(tpl) : undefined;
  if (byTemplate) return byTemplate;
  const byFamily = hint.family !== undefined
    ? fromFamily(hint.family)
    : undefined;
  if (byFamily) return byFamily;
  const tok = hint.tokenizer;
  if (tok) {
    if (tok.tokenId("<|im_start|>") !== undefined) return "chatml";
    if (tok.tokenId("<|start_header_id|>") !== undefined) return "llama3";
  }
  return undefined;
}

/**
 * The chat template that fits a model (see {@link chatFamily}).
 *
 * @param hint A chat template string, a family name and/or a tokenizer.
 * @returns The template function.
 * @throws {TypeError} When nothing in the hint decides; the message lists
 * the families.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { pickChatTemplate } from "@modelhost/modelhost/tokenizers";
 * const t = pickChatTemplate({ family: "qwen2" });
 * assert(t([{ role: "user", content: "x" }]).startsWith("<|im_start|>user"));
 * ```
 */
export function pickChatTemplate(hint: ChatTemplateHint): ChatTemplate {
  const f = chatFamily(hint);
  if (!f) {
    throw new TypeError(
      `Cannot tell the chat template from ${
        JSON.stringify({
          family: hint.family,
          chatTemplate: hint.chatTemplate?.slice(0, 60),
        })
      }; known families: ${Object.keys(CHAT_TEMPLATES).join(", ")}`,
    );
  }
  return CHAT_TEMPLATES[f];
}

/** Options of {@link encodeChat}. */
export interface EncodeChatOptions extends ChatTemplateOptions {
  /** The template; picked from the tokenizer when absent. */
  template?: ChatTemplate;
}

/**
 * Renders a conversation with a chat template and tokenizes it: control
 * tokens written by the template are parsed, and BOS is added only when the
 * tokenizer adds BOS and the rendered text does not already start with it.
 *
 * @param tokenizer The model's tokenizer.
 * @param messages The conversation.
 * @param options Template and template options.
 * @returns Token ids ready for the model.
 * @throws {TypeError} When no template is given and none can be picked.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { encodeChat, chatml } from "@modelhost/modelhost/tokenizers";
 * import { tokenizerFromGguf } from "@modelhost/modelhost/tokenizers";
 * const tok = tokenizerFromGguf({
 *   "tokenizer.ggml.model": "gpt2",
 *   "tokenizer.ggml.pre": "gpt-2",
 *   "tokenizer.ggml.tokens": ["<|im_start|>", "<|im_end|>", "a", "Ċ", "u", "s", "e", "r", "i", "t", "n", "o", "ant"],
 *   "tokenizer.ggml.token_type": [3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
 *   "tokenizer.ggml.merges": ["a n", "an t"],
 * });
 * const ids = encodeChat(tok, [{ role: "user", content: "a" }], { template: chatml });
 * assert(ids[0] === 0 && ids.includes(1));
 * ```
 */
export function encodeChat(
  tokenizer: Tokenizer,
  messages: readonly ChatMessage[],
  options: EncodeChatOptions = {},
): number[] {
  const template = options.template ?? pickChatTemplate({ tokenizer });
  const bosText = tokenizer.bos !== undefined
    ? tokenizer.tokenText(tokenizer.bos)
    : undefined;
  const eosText = tokenizer.eos !== undefined
    ? tokenizer.tokenText(tokenizer.eos)
    : undefined;
  const text = template(messages, {
    ...options,
    bosToken: options.bosToken ?? bosText,
    eosToken: options.eosToken ?? eosText,
  });
  const addBos = tokenizer.addBos && tokenizer.bos !== undefined &&
    !(bosText !== undefined && text.startsWith(bosText));
  return tokenizer.encode(text, {
    addSpecial: false,
    addBos,
    parseSpecial: true,
  });
}
