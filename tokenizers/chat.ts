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

import { asText } from "./_text.ts";
import { Environment, Interpreter, parse, tokenize } from "@huggingface/jinja";
import type { Tokenizer } from "./tokenizer.ts";

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

// ------------------------------------------------------------------ Jinja

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];
const DAYS = [
  "Sunday",
  "Monday",
  "Tuesday",
  "Wednesday",
  "Thursday",
  "Friday",
  "Saturday",
];

/**
 * Formats a date the way Python's `strftime` does in the C locale (the
 * directives chat templates use: `%Y %y %m %d %e %B %b %A %a %H %I %M %S %p
 * %j %%`), in local time.
 *
 * @param date The date.
 * @param format The format.
 * @returns The text.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { strftime } from "@modelhost/modelhost/tokenizers";
 * assert(strftime(new Date(2025, 2, 7), "%d %b %Y") === "07 Mar 2025");
 * ```
 */
export function strftime(date: Date, format: string): string {
  const p2 = (n: number) => String(n).padStart(2, "0");
  return format.replace(/%([a-zA-Z%])/g, (all, d: string) => {
    switch (d) {
      case "Y":
        return String(date.getFullYear());
      case "y":
        return p2(date.getFullYear() % 100);
      case "m":
        return p2(date.getMonth() + 1);
      case "d":
        return p2(date.getDate());
      case "e":
        return String(date.getDate()).padStart(2, " ");
      case "B":
        return MONTHS[date.getMonth()];
      case "b":
      case "h":
        return MONTHS[date.getMonth()].slice(0, 3);
      case "A":
        return DAYS[date.getDay()];
      case "a":
        return DAYS[date.getDay()].slice(0, 3);
      case "H":
        return p2(date.getHours());
      case "I":
        return p2(date.getHours() % 12 || 12);
      case "M":
        return p2(date.getMinutes());
      case "S":
        return p2(date.getSeconds());
      case "p":
        return date.getHours() < 12 ? "AM" : "PM";
      case "j": {
        const start = new Date(date.getFullYear(), 0, 1);
        const day = Math.round((date.getTime() - start.getTime()) / 864e5) + 1;
        return String(day).padStart(3, "0");
      }
      case "%":
        return "%";
      default:
        return all;
    }
  });
}

/** Python's `range` for templates. */
function range(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) [start, stop] = [0, start];
  if (step === 0) throw new TypeError("range() step must not be zero");
  const out: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}

/** Thrown by a template's `raise_exception`, to be told apart from engine errors. */
class TemplateRaised extends Error {}

type Parsed = ReturnType<typeof parse>;

// `@huggingface/jinja` prints dicts and lists as JSON and booleans as
// `true`; Jinja prints Python's repr (`{'a': 1}`, `True`, `None`), for
// `{{ x }}` and for `x | string`. This interpreter prints as Jinja does.
type Value = { type: string; value: unknown; toString(): string };
type Node = { type: string; value?: unknown };
type Fn = (this: unknown, a: unknown, b: unknown) => Value;

function pyQuote(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = q;
  for (const ch of s) {
    if (ch === "\\") out += "\\\\";
    else if (ch === q) out += "\\" + q;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch < " " || ch === "\x7f") {
      out += "\\x" + ch.charCodeAt(0).toString(16).padStart(2, "0");
    } else out += ch;
  }
  return out + q;
}

/** Python's `repr` of a runtime value (`str` at the top for strings). */
function pyStr(v: Value, top = true): string {
  switch (v.type) {
    case "StringValue":
      return top ? String(v.value) : pyQuote(String(v.value));
    case "BooleanValue":
      return v.value ? "True" : "False";
    case "NullValue":
      return "None";
    case "UndefinedValue":
      return "";
    case "TupleValue": {
      const items = (v.value as Value[]).map((x) => pyStr(x, false));
      return items.length === 1 ? `(${items[0]},)` : `(${items.join(", ")})`;
    }
    case "ArrayValue":
      return `[${(v.value as Value[]).map((x) => pyStr(x, false)).join(", ")}]`;
    case "ObjectValue":
    case "KeywordArgumentsValue":
    case "NamespaceValue": {
      const entries = [...(v.value as Map<string, Value>).entries()];
      return `{${
        entries.map(([k, x]) => `${pyQuote(k)}: ${pyStr(x, false)}`).join(", ")
      }}`;
    }
    default:
      return v.toString();
  }
}

let StringValue: (new (s: string) => Value) | undefined;
function stringValue(s: string): Value {
  StringValue ??= new Interpreter(new Environment()).run(
    parse(tokenize("", {})),
  ).constructor as new (s: string) => Value;
  return new StringValue(s);
}

const STATEMENTS = new Set([
  "If",
  "For",
  "Break",
  "Continue",
  "Set",
  "Macro",
  "Comment",
  "FilterStatement",
  "CallStatement",
]);

class PyInterpreter extends Interpreter {}
{
  const base = Interpreter.prototype as unknown as Record<string, Fn>;
  const proto = PyInterpreter.prototype as unknown as Record<string, unknown>;
  const applyFilter = base.applyFilter;
  proto.applyFilter = function (
    this: unknown,
    operand: Value,
    node: Node,
    env: unknown,
  ): Value {
    if (
      node.type === "Identifier" && node.value === "string" &&
      operand.type !== "StringValue"
    ) {
      return stringValue(pyStr(operand));
    }
    return (applyFilter as unknown as (a: Value, b: Node, c: unknown) => Value)
      .call(this, operand, node, env);
  };
  proto.evaluateBlock = function (
    this: { evaluate(s: unknown, e: unknown): Value },
    statements: unknown[],
    env: unknown,
  ): Value {
    let out = "";
    for (const st of statements) {
      const v = this.evaluate(st, env);
      if (v.type === "UndefinedValue") continue;
      // statements give none; an expression that is None prints "None"
      if (v.type === "NullValue" && STATEMENTS.has((st as Node).type)) continue;
      out += pyStr(v);
    }
    return stringValue(out);
  };
}

const compiled = new Map<string, Parsed>();

function compile(source: string): Parsed {
  let p = compiled.get(source);
  if (p) return p;
  // transformers' `{% generation %}` block marks assistant text for masks
  // and renders its body unchanged
  const src = source
    .replace(/\{%(-?)\s*generation\s*(-?)%\}/g, "{%$1 if true $2%}")
    .replace(/\{%(-?)\s*endgeneration\s*(-?)%\}/g, "{%$1 endif $2%}");
  try {
    p = parse(tokenize(src, { lstrip_blocks: true, trim_blocks: true }));
  } catch (e) {
    throw new SyntaxError(
      `Cannot parse the chat template: ${(e as Error).message}`,
    );
  }
  if (compiled.size >= 64) compiled.clear();
  compiled.set(source, p);
  return p;
}

/**
 * Renders a Jinja chat template as transformers' `apply_chat_template`
 * does (`tokenize=False`): the variables it passes, its
 * `continue_final_message` handling, `{% generation %}` blocks rendered as
 * their content.
 *
 * @param source The template's Jinja source.
 * @param messages The conversation.
 * @param options Generation prompt, tools, documents, special tokens, extra variables.
 * @returns The prompt text.
 * @throws {SyntaxError} When the template does not parse.
 * @throws {TypeError} When the template calls `raise_exception` (its
 * message is kept), fails while rendering, or the last message cannot be
 * continued.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { renderChatTemplate } from "@modelhost/modelhost/tokenizers";
 * const tpl = "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}\n{% endfor %}" +
 *   "{% if add_generation_prompt %}<|assistant|>{% endif %}";
 * const text = renderChatTemplate(tpl, [{ role: "user", content: " Hi " }], { bosToken: "<s>" });
 * assert(text === "<s><|user|>Hi\n<|assistant|>");
 * ```
 */
export function renderChatTemplate(
  source: string,
  messages: readonly ChatMessage[],
  options: ChatTemplateOptions = {},
): string {
  const cont = options.continueFinalMessage ?? false;
  const gen = cont ? false : options.addGenerationPrompt ?? true;
  if (cont && options.addGenerationPrompt === true) {
    throw new TypeError(
      "continueFinalMessage and addGenerationPrompt cannot both be set",
    );
  }
  const parsed = compile(source);
  let chat = messages as readonly ChatMessage[];
  const TAG = "CONTINUE_FINAL_MESSAGE_TAG ";
  let finalText = "";
  if (cont) {
    const last = messages[messages.length - 1];
    if (!last || last.content === undefined || last.content === null) {
      throw new TypeError(
        'continueFinalMessage is set but the final message has no "content" to continue',
      );
    }
    const copy = structuredClone(messages) as ChatMessage[];
    const c = copy[copy.length - 1];
    if (Array.isArray(c.content)) {
      const parts = c.content as Record<string, unknown>[];
      const part = [...parts].reverse().find((p) => typeof p.text === "string");
      if (!part) {
        throw new TypeError(
          "continueFinalMessage is set but the final message has no text to continue",
        );
      }
      finalText = part.text as string;
      part.text = finalText + TAG;
    } else {
      finalText = asText(c.content, "");
      c.content = finalText + TAG;
    }
    chat = copy;
  }
  const globals = new Environment();
  globals.set("false", false);
  globals.set("true", true);
  globals.set("none", null);
  globals.set("False", false);
  globals.set("True", true);
  globals.set("None", null);
  globals.set("range", range);
  globals.set("raise_exception", (message: unknown) => {
    throw new TemplateRaised(String(message));
  });
  const now = options.now;
  globals.set(
    "strftime_now",
    (format: string) => strftime(now ?? new Date(), format),
  );
  const env = new Environment(globals);
  const vars: Record<string, unknown> = {
    ...(options.bosToken !== undefined ? { bos_token: options.bosToken } : {}),
    ...(options.eosToken !== undefined ? { eos_token: options.eosToken } : {}),
    ...options.specialTokens,
    ...options.variables,
    messages: chat,
    tools: options.tools ?? null,
    documents: options.documents ?? null,
    add_generation_prompt: gen,
  };
  for (const [k, v] of Object.entries(vars)) env.set(k, v);
  let out: string;
  try {
    out = new PyInterpreter(env).run(parsed).value as string;
  } catch (e) {
    if (e instanceof TemplateRaised) {
      throw new TypeError(
        `The chat template refused the conversation: ${e.message}`,
      );
    }
    throw new TypeError(
      `Cannot render the chat template: ${(e as Error).message}`,
    );
  }
  if (cont) {
    const tag = TAG.trim();
    if (!out.includes(finalText.trim()) || !out.includes(tag)) {
      throw new TypeError(
        "continueFinalMessage is set but the final message does not appear in the rendered chat (the template changes it)",
      );
    }
    const at = out.lastIndexOf(tag);
    out = out.slice(at, at + TAG.length) === TAG
      ? out.slice(0, at)
      : out.slice(0, at).trimEnd();
  }
  return out;
}

/**
 * Compiles a Jinja chat template once into a {@link ChatTemplate}.
 *
 * @param source The template's Jinja source.
 * @returns The template function.
 * @throws {SyntaxError} When the template does not parse.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { jinjaChatTemplate } from "@modelhost/modelhost/tokenizers";
 * const t = jinjaChatTemplate("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}");
 * assert(t([{ role: "user", content: "hi" }]) === "user: hi\n");
 * ```
 */
export function jinjaChatTemplate(source: string): ChatTemplate {
  compile(source);
  return (messages, options) => renderChatTemplate(source, messages, options);
}

/** Options of {@link selectChatTemplate}. */
export interface SelectChatTemplateOptions {
  /** A template name to use (`"tool_use"` ...). @default {chosen as below} */
  name?: string;
  /** Tools will be passed: prefer a template named `tool_use`. @default {false} */
  tools?: boolean;
}

/**
 * Chooses among a model's named templates as transformers does: the name
 * asked for, else `tool_use` when there are tools and it exists, else
 * `default`, else the only one.
 *
 * @param templates Templates by name (`Tokenizer.chatTemplates`).
 * @param options The name asked for, and whether tools are passed.
 * @returns The name and source, or undefined when there are none.
 * @throws {TypeError} When the name asked for is missing, or several
 * templates exist and none is `default`.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { selectChatTemplate } from "@modelhost/modelhost/tokenizers";
 * const t = { default: "A", tool_use: "B" };
 * assert(selectChatTemplate(t, { tools: true })?.source === "B");
 * assert(selectChatTemplate(t)?.name === "default");
 * ```
 */
export function selectChatTemplate(
  templates: Readonly<Record<string, string>>,
  options: SelectChatTemplateOptions = {},
): { name: string; source: string } | undefined {
  const names = Object.keys(templates);
  if (names.length === 0) return undefined;
  let name: string | undefined = options.name;
  if (name !== undefined && !(name in templates)) {
    throw new TypeError(
      `The model has no chat template named "${name}" (it has: ${
        names.join(", ")
      })`,
    );
  }
  if (name === undefined && options.tools && "tool_use" in templates) {
    name = "tool_use";
  }
  if (name === undefined && "default" in templates) name = "default";
  if (name === undefined && names.length === 1) name = names[0];
  if (name === undefined) {
    throw new TypeError(
      `The model has several chat templates and none is "default": ${
        names.join(", ")
      }`,
    );
  }
  return { name, source: templates[name] };
}

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
