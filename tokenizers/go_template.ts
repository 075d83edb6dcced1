/**
 * Ollama prompt templates: the subset of Go's `text/template` that
 * Modelfile `TEMPLATE`s use, and Ollama's way of rendering a conversation
 * with one. Understood: text, `{{ .Field }}` and `{{ $.Field }}` (fields
 * of the current value and of the root), variables from `range`
 * (`{{ range $i, $m := .Messages }}`) and `{{ $x := … }}`, `{{ if … }}`, `{{ else if … }}`,
 * `{{ else }}`, `{{ end }}`, `{{ range … }}` (with `{{ else }}`), the
 * trim markers `{{-` and `-}}`, comments `{{/* … *\/}}`, string and number
 * literals, and the functions `eq`, `ne`, `and`, `or`, `not`, `len`,
 * `index`, `slice`. Anything else is a `SyntaxError` naming it.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { renderGoTemplate } from "@modelhost/modelhost/tokenizers";
 * const out = renderGoTemplate(
 *   "{{- range .Messages }}<|{{ .Role }}|>{{ .Content }}\n{{ end }}<|assistant|>",
 *   { Messages: [{ Role: "user", Content: "Hi" }] },
 * );
 * assert(out === "<|user|>Hi\n<|assistant|>");
 * ```
 *
 * @module
 */

import type { ChatMessage } from "./chat.ts";

type Value = unknown;

type Expr =
  | { k: "field"; root: boolean; path: string[]; v?: string }
  | { k: "lit"; value: Value }
  | { k: "call"; fn: string; args: Expr[] };

type TNode =
  | { k: "text"; text: string }
  | { k: "set"; name: string; expr: Expr }
  | { k: "out"; expr: Expr }
  | { k: "if"; branches: { cond: Expr; body: TNode[] }[]; other: TNode[] }
  | {
    k: "range";
    over: Expr;
    index?: string;
    item?: string;
    body: TNode[];
    other: TNode[];
  };

interface Action {
  text: string;
  /** Where the action starts in the template (for messages). */
  at: number;
}

/** Splits into text and actions, applying the trim markers. */
function lex(src: string): (string | Action)[] {
  const out: (string | Action)[] = [];
  let at = 0;
  while (at < src.length) {
    const open = src.indexOf("{{", at);
    if (open < 0) {
      out.push(src.slice(at));
      break;
    }
    let text = src.slice(at, open);
    let inner = open + 2;
    if (src[inner] === "-" && /\s/.test(src[inner + 1] ?? "")) {
      text = text.replace(/\s+$/, "");
      inner++;
    }
    const close = src.indexOf("}}", inner);
    if (close < 0) {
      throw new SyntaxError(`Template: "{{" at ${open} is never closed`);
    }
    let body = src.slice(inner, close);
    let next = close + 2;
    if (/\s-$/.test(body)) {
      body = body.slice(0, -1);
      const m = src.slice(next).match(/^\s*/)!;
      next += m[0].length;
    }
    if (text) out.push(text);
    out.push({ text: body.trim(), at: open });
    at = next;
  }
  return out;
}

/** Splits an action's words, keeping "quoted strings" and (groups) whole. */
function words(s: string, at: number): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < s.length) {
    if (/\s/.test(s[i])) {
      i++;
      continue;
    }
    if (s[i] === '"' || s[i] === "`") {
      const q = s[i];
      let j = i + 1;
      while (j < s.length && s[j] !== q) {
        j += s[j] === "\\" && q === '"' ? 2 : 1;
      }
      if (j >= s.length) {
        throw new SyntaxError(`Template: unclosed string at ${at}`);
      }
      out.push(s.slice(i, j + 1));
      i = j + 1;
    } else if (s[i] === "(") {
      let depth = 0, j = i;
      for (; j < s.length; j++) {
        if (s[j] === "(") depth++;
        else if (s[j] === ")" && --depth === 0) break;
      }
      if (j >= s.length) {
        throw new SyntaxError(`Template: unclosed "(" at ${at}`);
      }
      out.push(s.slice(i, j + 1));
      i = j + 1;
    } else {
      let j = i;
      while (j < s.length && !/\s/.test(s[j]) && s[j] !== "(") j++;
      out.push(s.slice(i, j));
      i = j;
    }
  }
  return out;
}

const FUNCS = new Set([
  "eq",
  "ne",
  "and",
  "or",
  "not",
  "len",
  "index",
  "slice",
]);

function term(w: string, at: number): Expr {
  if (w.startsWith("(")) return expr(w.slice(1, -1), at);
  if (w.startsWith('"')) return { k: "lit", value: JSON.parse(w) };
  if (w.startsWith("`")) return { k: "lit", value: w.slice(1, -1) };
  if (/^-?\d+(\.\d+)?$/.test(w)) return { k: "lit", value: Number(w) };
  if (w === "true" || w === "false") return { k: "lit", value: w === "true" };
  if (w === "nil") return { k: "lit", value: undefined };
  if (w === ".") return { k: "field", root: false, path: [] };
  if (w === "$") return { k: "field", root: true, path: [] };
  const m = w.match(/^(\$[A-Za-z_]\w*|\$)?((?:\.[A-Za-z_]\w*)+)$/);
  if (m) {
    const path = m[2].slice(1).split(".");
    if (m[1] === "$") return { k: "field", root: true, path };
    if (m[1]) return { k: "field", root: false, path, v: m[1] };
    return { k: "field", root: false, path };
  }
  if (/^\$[A-Za-z_]\w*$/.test(w)) {
    return { k: "field", root: false, path: [], v: w };
  }
  throw new SyntaxError(`Template: cannot read "${w}" at ${at}`);
}

function expr(s: string, at: number): Expr {
  const ws = words(s, at);
  if (ws.length === 0) throw new SyntaxError(`Template: empty action at ${at}`);
  if (FUNCS.has(ws[0])) {
    return { k: "call", fn: ws[0], args: ws.slice(1).map((w) => term(w, at)) };
  }
  if (ws.length > 1) {
    throw new SyntaxError(
      `Template: "${ws[0]}" at ${at} is not a supported function (supported: ${
        [...FUNCS].join(", ")
      })`,
    );
  }
  return term(ws[0], at);
}

function parse(src: string): TNode[] {
  const items = lex(src);
  let i = 0;
  const block = (ends: string[]): { nodes: TNode[]; end: Action | null } => {
    const nodes: TNode[] = [];
    while (i < items.length) {
      const it = items[i++];
      if (typeof it === "string") {
        nodes.push({ k: "text", text: it });
        continue;
      }
      const t = it.text;
      if (t.startsWith("/*")) continue;
      const head = t.split(/\s+/)[0];
      if (ends.includes(head)) return { nodes, end: it };
      if (head === "if") {
        const branches = [{
          cond: expr(t.slice(2), it.at),
          body: [] as TNode[],
        }];
        let other: TNode[] = [];
        while (true) {
          const b = block(["else", "end"]);
          branches[branches.length - 1].body = b.nodes;
          if (!b.end) {
            throw new SyntaxError(`Template: "if" at ${it.at} has no end`);
          }
          if (b.end.text === "end") break;
          const rest = b.end.text.slice(4).trim();
          if (rest.startsWith("if ")) {
            branches.push({ cond: expr(rest.slice(3), b.end.at), body: [] });
            continue;
          }
          const e = block(["end"]);
          if (!e.end) {
            throw new SyntaxError(`Template: "if" at ${it.at} has no end`);
          }
          other = e.nodes;
          break;
        }
        nodes.push({ k: "if", branches, other });
      } else if (head === "range") {
        let spec = t.slice(5).trim();
        let index: string | undefined, item: string | undefined;
        const m = spec.match(/^(\$\w+)\s*(?:,\s*(\$\w+)\s*)?:=\s*(.*)$/);
        if (m) {
          if (m[2]) [index, item] = [m[1], m[2]];
          else item = m[1];
          spec = m[3];
        }
        const b = block(["else", "end"]);
        if (!b.end) {
          throw new SyntaxError(`Template: "range" at ${it.at} has no end`);
        }
        let other: TNode[] = [];
        if (b.end.text === "else") {
          const e = block(["end"]);
          if (!e.end) {
            throw new SyntaxError(`Template: "range" at ${it.at} has no end`);
          }
          other = e.nodes;
        }
        nodes.push({
          k: "range",
          over: expr(spec, it.at),
          index,
          item,
          body: b.nodes,
          other,
        });
      } else if (
        ["else", "end", "with", "define", "template", "block"].includes(head)
      ) {
        throw new SyntaxError(`Template: unexpected "${head}" at ${it.at}`);
      } else if (/^\$\w+\s*:?=/.test(t)) {
        const m = t.match(/^(\$\w+)\s*:?=\s*(.*)$/)!;
        nodes.push({ k: "set", name: m[1], expr: expr(m[2], it.at) });
      } else nodes.push({ k: "out", expr: expr(t, it.at) });
    }
    return { nodes, end: null };
  };
  const r = block([]);
  return r.nodes;
}

function truthy(v: Value): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === "") {
    return false;
  }
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v as object).length > 0;
  return true;
}

interface Scope {
  dot: Value;
  root: Value;
  vars: Map<string, Value>;
}

function evalExpr(e: Expr, s: Scope): Value {
  if (e.k === "lit") return e.value;
  if (e.k === "field") {
    let v: Value = e.v ? s.vars.get(e.v) : e.root ? s.root : s.dot;
    for (const p of e.path) {
      v = v !== null && typeof v === "object"
        ? (v as Record<string, Value>)[p]
        : undefined;
    }
    return v;
  }
  const a = e.args.map((x) => evalExpr(x, s));
  switch (e.fn) {
    case "eq":
      return a.slice(1).some((x) => x === a[0]);
    case "ne":
      return a[0] !== a[1];
    case "and":
      return a.find((x) => !truthy(x)) ?? a[a.length - 1];
    case "or":
      return a.find((x) => truthy(x)) ?? a[a.length - 1];
    case "not":
      return !truthy(a[0]);
    case "len":
      return Array.isArray(a[0]) || typeof a[0] === "string"
        ? (a[0] as unknown[]).length
        : 0;
    case "index":
      return (a[0] as Record<string, Value>)?.[a[1] as string];
    default: // slice
      return (a[0] as unknown[] | string)?.slice(
        a[1] as number,
        a[2] as number | undefined,
      );
  }
}

function render(nodes: TNode[], s: Scope, out: string[]): void {
  for (const n of nodes) {
    if (n.k === "text") out.push(n.text);
    else if (n.k === "set") s.vars.set(n.name, evalExpr(n.expr, s));
    else if (n.k === "out") {
      const v = evalExpr(n.expr, s);
      if (v !== undefined && v !== null) out.push(String(v));
    } else if (n.k === "if") {
      const b = n.branches.find((x) => truthy(evalExpr(x.cond, s)));
      render(b ? b.body : n.other, s, out);
    } else {
      const list = evalExpr(n.over, s);
      const items = Array.isArray(list) ? list : [];
      if (items.length === 0) render(n.other, s, out);
      items.forEach((item, i) => {
        const vars = new Map(s.vars);
        if (n.index) vars.set(n.index, i);
        if (n.item) vars.set(n.item, item);
        render(n.body, { dot: item, root: s.root, vars }, out);
      });
    }
  }
}

/**
 * Renders a Go template (the subset in the module notes) with `data` as
 * its root value.
 *
 * @param template The template text.
 * @param data The root value (`.`).
 * @returns The rendered text.
 * @throws {SyntaxError} For syntax outside the subset.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { renderGoTemplate } from "@modelhost/modelhost/tokenizers";
 * const t = "{{ if .System }}[{{ .System }}] {{ end }}{{ .Prompt }}";
 * assert(renderGoTemplate(t, { Prompt: "hi" }) === "hi");
 * assert(renderGoTemplate(t, { System: "be brief", Prompt: "hi" }) === "[be brief] hi");
 * ```
 */
export function renderGoTemplate(template: string, data: unknown): string {
  const out: string[] = [];
  render(parse(template), { dot: data, root: data, vars: new Map() }, out);
  return out.join("");
}

/**
 * Renders a conversation with an Ollama `TEMPLATE` as Ollama does:
 * templates that read `.Messages` get the whole conversation (roles and
 * contents) with `.System` set to the system messages; older templates
 * (`.System`, `.Prompt`, `.Response`) are rendered once per user turn,
 * with the assistant's answer as `.Response`, and the last turn is cut
 * where `.Response` would go, so generation continues there.
 *
 * @param template The template.
 * @param messages The conversation.
 * @returns The prompt text.
 * @throws {SyntaxError} For syntax outside the subset.
 *
 * @example
 * ```ts
 * import { assert } from "@std/assert";
 * import { renderOllamaTemplate } from "@modelhost/modelhost/tokenizers";
 * const t = "{{ if .System }}<<{{ .System }}>>{{ end }}[INST] {{ .Prompt }} [/INST]{{ .Response }}</s>";
 * const out = renderOllamaTemplate(t, [
 *   { role: "system", content: "S" },
 *   { role: "user", content: "a" },
 *   { role: "assistant", content: "b" },
 *   { role: "user", content: "c" },
 * ]);
 * assert(out === "<<S>>[INST] a [/INST]b</s>[INST] c [/INST]");
 * ```
 */
export function renderOllamaTemplate(
  template: string,
  messages: readonly ChatMessage[],
): string {
  // text content, or the text of content parts
  const textOf = (m: ChatMessage): string =>
    typeof m.content === "string"
      ? m.content
      : Array.isArray(m.content)
      ? m.content.map((p) => typeof p.text === "string" ? p.text : "").join("")
      : "";
  const system = messages.filter((m) => m.role === "system").map((m) =>
    textOf(m)
  ).join("\n\n");
  if (/\.Messages\b/.test(template)) {
    return renderGoTemplate(template, {
      System: system,
      Messages: messages.map((m) => ({ Role: m.role, Content: textOf(m) })),
      Prompt: "",
      Response: "",
    });
  }
  const turns: { prompt: string; response?: string }[] = [];
  for (const m of messages) {
    if (m.role === "user") turns.push({ prompt: textOf(m) });
    else if (m.role === "assistant") {
      if (turns.length === 0) turns.push({ prompt: "" });
      const t = turns[turns.length - 1];
      t.response = (t.response ?? "") + textOf(m);
    }
  }
  if (turns.length === 0) turns.push({ prompt: "" });
  const cut = template.search(/\{\{-?\s*\.Response\s*-?\}\}/);
  const head = cut >= 0 ? template.slice(0, cut) : template;
  return turns.map((t, i) => {
    const last = i === turns.length - 1 && t.response === undefined;
    return renderGoTemplate(last ? head : template, {
      System: i === 0 ? system : "",
      Prompt: t.prompt,
      Response: t.response ?? "",
    });
  }).join("");
}
