/**
 * Chat templates from Jinja source, run with `@huggingface/jinja` as
 * transformers runs them (its variables, Python printing, `strftime_now`).
 * The public face is `chat.ts`, which re-exports what users call.
 *
 * @module
 */

import { Environment, Interpreter, parse, tokenize } from "@huggingface/jinja";
import { asText } from "./_text.ts";
import type { ChatMessage, ChatTemplate, ChatTemplateOptions } from "./chat.ts";

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
