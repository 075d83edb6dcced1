/**
 * Chat templates: messages in, prompt text out.
 *
 * A model's own template is Jinja source (`tokenizer_config.json`
 * `chat_template`, a string or a list of named templates; a
 * `chat_template.jinja` file; GGUF `tokenizer.chat_template`).
 * {@link renderChatTemplate} runs it with `@huggingface/jinja` and the
 * variables transformers' `apply_chat_template` passes: `messages`,
 * `add_generation_prompt`, `tools`, `documents`, the special-token strings
 * (`bos_token`, `eos_token` ...), any extra variables (`enable_thinking`,
 * `reasoning_effort` ...), and the functions `raise_exception` and
 * `strftime_now`; blocks are trimmed as transformers sets Jinja up
 * (`trim_blocks`, `lstrip_blocks`).
 *
 * For a model that ships no template, hand-written functions for the
 * common formats (ChatML, Llama 2, Llama 3, Zephyr, Mistral) stand in,
 * picked by the model's name or vocabulary; {@link chatTemplateFor} says
 * which one was used. {@link encodeChat} renders and tokenizes in one step.
 *
 * @module
 */

import type { Tokenizer } from "./tokenizer.ts";
import { jinjaChatTemplate, selectChatTemplate } from "./_chat_jinja.ts";
export {
  jinjaChatTemplate,
  renderChatTemplate,
  selectChatTemplate,
  type SelectChatTemplateOptions,
  strftime,
} from "./_chat_jinja.ts";

/**
 * One chat message: a role, its content and the other fields templates
 * read. Every field of the object is passed to the template as it is, so a
 * message may carry more (cast it) than the ones named here.
 */
export interface ChatMessage {
  /** `"system"`, `"user"`, `"assistant"`, `"tool"` ... */
  role: string;
  /** The text, or content parts (`[{ type: "text", text }]`), or null (a tool call). */
  content?: string | readonly Record<string, unknown>[] | null;
  /** An assistant's tool calls (`[{ id, type: "function", function: { name, arguments } }]`). */
  tool_calls?: readonly Record<string, unknown>[];
  /** A tool message's call id. */
  tool_call_id?: string;
  /** A tool message's tool name. */
  name?: string;
  /** An assistant's reasoning (Qwen3, DeepSeek style). */
  reasoning_content?: string | null;
  /** An assistant's reasoning (gpt-oss style). */
  thinking?: string | null;
}

/** Options of a {@link ChatTemplate}. */
export interface ChatTemplateOptions {
  /** End with the header that makes the model answer as the assistant. @default {true} */
  addGenerationPrompt?: boolean;
  /**
   * Leave the last message open so the model continues it (transformers'
   * `continue_final_message`); excludes `addGenerationPrompt`. @default {false}
   */
  continueFinalMessage?: boolean;
  /** Tool (function) JSON schemas, as `tools`. @default {none} */
  tools?: readonly Record<string, unknown>[];
  /** Documents (`{ title, text }`) for retrieval-style templates, as `documents`. @default {none} */
  documents?: readonly Record<string, unknown>[];
  /** BOS text, as `bos_token`. @default {the tokenizer's, in encodeChat} */
  bosToken?: string;
  /** EOS text, as `eos_token`. @default {the tokenizer's, in encodeChat} */
  eosToken?: string;
  /** Other special-token strings by variable name (`unk_token`, `pad_token` ...). @default {{}} */
  specialTokens?: Readonly<Record<string, string>>;
  /** Extra template variables (`enable_thinking`, `reasoning_effort`, `date_string` ...). @default {{}} */
  variables?: Readonly<Record<string, unknown>>;
  /** The clock `strftime_now` reads (local time, as Python's `datetime.now()`). @default {the current time} */
  now?: Date;
  /** System prompt used when the messages have none (the ChatML fallback only). */
  defaultSystem?: string;
}

/** A chat template: renders messages into the prompt text. */
export type ChatTemplate = (
  messages: readonly ChatMessage[],
  options?: ChatTemplateOptions,
) => string;

/** The hand-written fallbacks. */
export type ChatFamily = "chatml" | "llama2" | "llama3" | "zephyr" | "mistral";

function text(m: ChatMessage): string {
  const c = m.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) {
    return c.map((p) => (typeof p.text === "string" ? p.text : "")).join("");
  }
  return "";
}

function splitSystem(
  messages: readonly ChatMessage[],
): [string | undefined, readonly ChatMessage[]] {
  return messages.length > 0 && messages[0].role === "system"
    ? [text(messages[0]), messages.slice(1)]
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
    out += `<|im_start|>${m.role}\n${text(m)}<|im_end|>\n`;
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
      ? `<<SYS>>\n${system}\n<</SYS>>\n\n${text(m)}`
      : text(m);
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
    out += `<|start_header_id|>${m.role}<|end_header_id|>\n\n${
      text(m).trim()
    }<|eot_id|>`;
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
  for (const m of messages) out += `<|${m.role}|>\n${text(m)}${eos}\n`;
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
        ? `${system}\n\n${text(m)}`
        : text(m);
      out += `[INST] ${content} [/INST]`;
    } else if (m.role === "assistant") out += `${text(m)}${eos}`;
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

// ------------------------------------------------------------ choosing one

/** What {@link chatTemplateFor} may look at. */
export interface ChatTemplateHint {
  /** A Jinja `chat_template` (from `tokenizer_config.json`, `chat_template.jinja` or GGUF `tokenizer.chat_template`). */
  chatTemplate?: string;
  /** A family or model name, for the fallback: `"qwen2"`, `"SmolLM2-135M"`, `"llama3"`, `"TinyLlama"` ... */
  family?: string;
  /** A tokenizer: its chat templates, then (for the fallback) marker tokens in its vocabulary. */
  tokenizer?: Tokenizer;
  /** The named template to use, when the model has several. */
  templateName?: string;
  /** Tools will be passed (prefer a `tool_use` template). */
  tools?: boolean;
}

/** A chat template chosen for a model, and where it came from. */
export interface ResolvedChatTemplate {
  /** Renders messages. */
  render: ChatTemplate;
  /** `"model"`: the model's own Jinja template; `"fallback"`: a hand-written one. */
  source: "model" | "fallback";
  /** The template's name (`"default"`, `"tool_use"` ...) or the fallback's family (`"chatml"` ...). */
  name: string;
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
  if (Object.hasOwn(CHAT_TEMPLATES, s)) return s as ChatFamily;
  if (/qwen|smollm|chatml/.test(s)) return "chatml";
  if (/llama-?3/.test(s)) return "llama3";
  if (/tinyllama|zephyr/.test(s)) return "zephyr";
  if (/mistral|mixtral/.test(s)) return "mistral";
  if (/llama/.test(s)) return "llama2";
  return undefined;
}

/**
 * The hand-written format closest to a model (by its template's markers,
 * its name, then its vocabulary). Used for the fallback, and by writers of
 * other template languages (the Ollama Modelfile).
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
 * The chat template for a model: its own Jinja template when it has one
 * (`hint.chatTemplate`, else the tokenizer's, choosing among named ones
 * with {@link selectChatTemplate}); otherwise a hand-written fallback
 * chosen by {@link chatFamily}. The result says which.
 *
 * @param hint The template source, the model's name and/or its tokenizer.
 * @returns The template and its origin.
 * @throws {TypeError} When the model has no template and no fallback fits.
 * @throws {SyntaxError} When the model's template does not parse.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { chatTemplateFor } from "@modelhost/modelhost/tokenizers";
 * const own = chatTemplateFor({ chatTemplate: "{% for m in messages %}{{ m.content }}{% endfor %}" });
 * assert(own.source === "model" && own.render([{ role: "user", content: "x" }]) === "x");
 * const fallback = chatTemplateFor({ family: "qwen2" });
 * assert(fallback.source === "fallback" && fallback.name === "chatml");
 * ```
 */
export function chatTemplateFor(hint: ChatTemplateHint): ResolvedChatTemplate {
  let chosen: { name: string; source: string } | undefined;
  if (hint.chatTemplate !== undefined) {
    chosen = { name: "default", source: hint.chatTemplate };
  } else if (hint.tokenizer) {
    chosen = selectChatTemplate(hint.tokenizer.chatTemplates, {
      name: hint.templateName,
      tools: hint.tools,
    });
  }
  if (chosen) {
    return {
      render: jinjaChatTemplate(chosen.source),
      source: "model",
      name: chosen.name,
    };
  }
  const f = chatFamily(hint);
  if (!f) {
    throw new TypeError(
      `${
        hint.family ?? "The model"
      } has no chat template and no built-in format fits it (built-in: ${
        Object.keys(CHAT_TEMPLATES).join(", ")
      }); pass a template`,
    );
  }
  return { render: CHAT_TEMPLATES[f], source: "fallback", name: f };
}

/**
 * The chat template that fits a model: {@link chatTemplateFor}'s template.
 *
 * @param hint A chat template string, a family name and/or a tokenizer.
 * @returns The template function.
 * @throws {TypeError} When the model has no template and no fallback fits.
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
  return chatTemplateFor(hint).render;
}

/** Options of {@link encodeChat}. */
export interface EncodeChatOptions extends ChatTemplateOptions {
  /** The template. @default {chatTemplateFor({ tokenizer, tools })} */
  template?: ChatTemplate;
}

/**
 * Renders a conversation with a chat template and tokenizes it: special
 * tokens the template wrote are parsed (the text is the template's), and
 * BOS is added only when the tokenizer adds BOS and the rendered text does
 * not already start with it (transformers adds none; llama.cpp adds it, and
 * templates that need it write it). The tokenizer's special-token strings
 * are passed to the template.
 *
 * @param tokenizer The model's tokenizer.
 * @param messages The conversation.
 * @param options Template and template options.
 * @returns Token ids ready for the model.
 * @throws {TypeError} When no template is given and none can be chosen.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { chatml, encodeChat, tokenizerFromGguf } from "@modelhost/modelhost/tokenizers";
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
  const template = options.template ??
    chatTemplateFor({ tokenizer, tools: options.tools !== undefined }).render;
  const bosText = tokenizer.bos !== undefined
    ? tokenizer.tokenText(tokenizer.bos)
    : undefined;
  const eosText = tokenizer.eos !== undefined
    ? tokenizer.tokenText(tokenizer.eos)
    : undefined;
  const specials: Record<string, string> = {};
  if (tokenizer.unk !== undefined) {
    specials.unk_token = tokenizer.tokenText(tokenizer.unk);
  }
  if (tokenizer.pad !== undefined) {
    specials.pad_token = tokenizer.tokenText(tokenizer.pad);
  }
  if (tokenizer.sep !== undefined) {
    specials.sep_token = tokenizer.tokenText(tokenizer.sep);
  }
  const text = template(messages, {
    ...options,
    bosToken: options.bosToken ?? bosText,
    eosToken: options.eosToken ?? eosText,
    specialTokens: { ...specials, ...options.specialTokens },
  });
  const addBos = tokenizer.addBos && tokenizer.bos !== undefined &&
    !(bosText !== undefined && text.startsWith(bosText));
  return tokenizer.encode(text, {
    addSpecial: false,
    addBos,
    parseSpecial: true,
  });
}
