// Ollama Modelfiles, as /api/create takes them and as a created model keeps
// them beside its weights (`name/version/Modelfile`): FROM, PARAMETER,
// TEMPLATE, SYSTEM, LICENSE and MESSAGE; values may be "quoted" or
// """triple quoted""" over several lines. ADAPTER is refused (no LoRA).

import { HttpError } from "./_http.ts";

/** What a Modelfile says. */
export interface Modelfile {
  /** The model it starts from (a registry name or a file path). */
  from?: string;
  /** Default options (`temperature`, `stop` (a list), …). */
  parameters: Record<string, unknown>;
  /** The prompt template (Go template syntax). */
  template?: string;
  /** The default system message. */
  system?: string;
  /** Licence texts. */
  license: string[];
  /** Conversation to start from. */
  messages: { role: string; content: string }[];
}

/** Parameters whose values are numbers, and those that repeat into a list. */
const NUMERIC = new Set([
  "num_ctx",
  "num_predict",
  "repeat_last_n",
  "repeat_penalty",
  "temperature",
  "seed",
  "top_k",
  "top_p",
  "min_p",
  "num_keep",
  "presence_penalty",
  "frequency_penalty",
  "typical_p",
  "mirostat",
  "mirostat_eta",
  "mirostat_tau",
  "num_batch",
  "num_gpu",
  "num_thread",
]);
const LISTS = new Set(["stop"]);

/** Reads one value: `"""…"""`, `"…"` (JSON escapes) or the rest of the line. */
function readValue(text: string, at: number): { value: string; end: number } {
  if (text.startsWith('"""', at)) {
    const close = text.indexOf('"""', at + 3);
    if (close < 0) {
      throw new HttpError(400, 'Modelfile: a """ value is never closed');
    }
    return { value: text.slice(at + 3, close), end: close + 3 };
  }
  const eol = text.indexOf("\n", at);
  const line = text.slice(at, eol < 0 ? text.length : eol).trimEnd();
  if (line.startsWith('"') && line.endsWith('"') && line.length >= 2) {
    try {
      return { value: JSON.parse(line), end: eol < 0 ? text.length : eol };
    } catch { /* not JSON: keep the text as it is */ }
  }
  return { value: line, end: eol < 0 ? text.length : eol };
}

/** Adds one parameter (numbers parsed, `stop` collected into a list). */
export function addParameter(
  out: Record<string, unknown>,
  name: string,
  value: unknown,
): void {
  if (LISTS.has(name)) {
    const list = (out[name] as unknown[] | undefined) ?? [];
    out[name] = [...list, ...(Array.isArray(value) ? value : [value])];
    return;
  }
  if (NUMERIC.has(name) && typeof value === "string") {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n)) {
      throw new HttpError(
        400,
        `Modelfile: PARAMETER ${name} must be a number, got ${
          JSON.stringify(value)
        }`,
      );
    }
    out[name] = n;
    return;
  }
  out[name] = value;
}

/** Parses a Modelfile; 400 on an unknown instruction or a malformed line. */
export function parseModelfile(text: string): Modelfile {
  const out: Modelfile = { parameters: {}, license: [], messages: [] };
  let at = 0;
  while (at < text.length) {
    const eol = text.indexOf("\n", at);
    const lineEnd = eol < 0 ? text.length : eol;
    const line = text.slice(at, lineEnd);
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) {
      at = lineEnd + 1;
      continue;
    }
    const m = line.match(/^\s*([A-Za-z]+)\s+/);
    if (!m) {
      throw new HttpError(
        400,
        `Modelfile: cannot read ${JSON.stringify(trimmed.slice(0, 60))}`,
      );
    }
    const instr = m[1].toUpperCase();
    const start = at + m[0].length;
    switch (instr) {
      case "FROM":
      case "TEMPLATE":
      case "SYSTEM":
      case "LICENSE": {
        const { value, end } = readValue(text, start);
        if (instr === "FROM") out.from = value.trim();
        else if (instr === "TEMPLATE") out.template = value;
        else if (instr === "SYSTEM") out.system = value;
        else out.license.push(value);
        at = end + 1;
        break;
      }
      case "PARAMETER": {
        const p = text.slice(start).match(/^(\S+)\s+/);
        if (!p) {
          throw new HttpError(
            400,
            "Modelfile: PARAMETER needs a name and a value",
          );
        }
        const { value, end } = readValue(text, start + p[0].length);
        addParameter(out.parameters, p[1].toLowerCase(), value);
        at = end + 1;
        break;
      }
      case "MESSAGE": {
        const p = text.slice(start).match(/^(system|user|assistant)\s+/i);
        if (!p) {
          throw new HttpError(
            400,
            "Modelfile: MESSAGE needs a role (system, user, assistant) and content",
          );
        }
        const { value, end } = readValue(text, start + p[0].length);
        out.messages.push({ role: p[1].toLowerCase(), content: value });
        at = end + 1;
        break;
      }
      case "ADAPTER":
        throw new HttpError(
          400,
          "Modelfile: ADAPTER (LoRA) is not supported by this server",
        );
      default:
        throw new HttpError(
          400,
          `Modelfile: unknown instruction ${instr} (known: FROM, PARAMETER, TEMPLATE, SYSTEM, LICENSE, MESSAGE)`,
        );
    }
  }
  return out;
}

/** Writes a Modelfile that {@link parseModelfile} reads back the same. */
export function formatModelfile(m: Modelfile): string {
  const q = (s: string) => s.includes('"""') ? JSON.stringify(s) : `"""${s}"""`;
  const lines: string[] = [];
  if (m.from) lines.push(`FROM ${m.from}`);
  for (const [k, v] of Object.entries(m.parameters)) {
    for (const x of Array.isArray(v) ? v : [v]) {
      lines.push(
        `PARAMETER ${k} ${typeof x === "string" ? JSON.stringify(x) : x}`,
      );
    }
  }
  if (m.template !== undefined) lines.push(`TEMPLATE ${q(m.template)}`);
  if (m.system !== undefined) lines.push(`SYSTEM ${q(m.system)}`);
  for (const l of m.license) lines.push(`LICENSE ${q(l)}`);
  for (const msg of m.messages) {
    lines.push(`MESSAGE ${msg.role} ${q(msg.content)}`);
  }
  return lines.join("\n") + "\n";
}
